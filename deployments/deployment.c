/* Deployment files: write and read rank placements in SimGrid's deployment format. */
#include "deployment.h"

#include "atomic_file.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text_input.h"
#include "platform.h"

int *deployment_linear(int n)
{
  int *map = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; i++)
    map[i] = i;
  return map;
}

int deployment_write(const char *path, const int *rank_gpu, int n, const char *comment, char *err, size_t errlen)
{
  /* Atomic, and only a regular file is replaced (atomic_file.h). */
  struct atomic_file af;
  FILE *f = atomic_file_open(&af, path, err, errlen);
  if (f == NULL)
    return -1;
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
  if (comment)
    fprintf(f, "<!-- %s -->\n", comment);
  fprintf(f, "<platform version=\"4.1\">\n");
  for (int r = 0; r < n; r++)
    fprintf(f, "  <actor host=\"gpu%d\" function=\"rank\"><argument value=\"%d\"/></actor>\n", rank_gpu[r], r);
  fprintf(f, "</platform>\n");
  return atomic_file_commit(&af, err, errlen);
}

/* Host names are the platform's "gpuN": N in decimal, no sign, no leading zero, nothing after. */
static int parse_gpu_host(const char *host, int n_gpus)
{
  long long gpu;
  if (host == NULL || strncmp(host, "gpu", 3) != 0 || text_parse_index(host + 3, n_gpus - 1LL, &gpu) != 0)
    return -1;
  return (int)gpu;
}

static int *read_placement(xmlDoc *doc, const char *path, int n_ranks, int n_gpus, char *err, size_t errlen)
{
  int *map = malloc(sizeof(int) * (size_t)(n_ranks > 0 ? n_ranks : 1));
  char *gpu_used = calloc((size_t)(n_gpus > 0 ? n_gpus : 0) + 1, 1);
  if (map == NULL || gpu_used == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    free(map);
    free(gpu_used);
    return NULL;
  }
  for (int r = 0; r < n_ranks; r++)
    map[r] = -1;
  int ok = 1;
  xmlNode *root = xmlDocGetRootElement(doc);
  if (root == NULL || strcmp((const char *)root->name, "platform") != 0) {
    snprintf(err, errlen, "%s:%d: expected a <platform> root element (a SimGrid deployment file)", path,
             root ? (int)xmlGetLineNo(root) : 1);
    ok = 0;
  }
  for (xmlNode *a = ok ? root->children : NULL; a && ok; a = a->next) {
    if (a->type != XML_ELEMENT_NODE)
      continue;
    int line = (int)xmlGetLineNo(a);
    if (strcmp((const char *)a->name, "actor") != 0) {
      snprintf(err, errlen, "%s:%d: expected <actor>, found <%.40s>", path, line, (const char *)a->name);
      ok = 0;
      break;
    }
    xmlChar *host = xmlGetProp(a, (const xmlChar *)"host");
    xmlChar *function = xmlGetProp(a, (const xmlChar *)"function");
    xmlChar *value = NULL;
    int gpu = parse_gpu_host((const char *)host, n_gpus), arguments = 0;
    long long rank = -1;
    for (xmlNode *arg = a->children; arg; arg = arg->next)
      if (arg->type == XML_ELEMENT_NODE && strcmp((const char *)arg->name, "argument") == 0 && arguments++ == 0)
        value = xmlGetProp(arg, (const xmlChar *)"value");
    int rank_ok = value != NULL && text_parse_index((const char *)value, n_ranks - 1LL, &rank) == 0;
    if (function == NULL || strcmp((const char *)function, "rank") != 0)
      snprintf(err, errlen, "%s:%d: actor function must be \"rank\"", path, line), ok = 0;
    else if (gpu < 0)
      snprintf(err, errlen, "%s:%d: host '%.40s' is not a GPU of the platform (gpu0..gpu%d)", path, line,
               host ? (const char *)host : "", n_gpus - 1),
          ok = 0;
    else if (arguments != 1)
      snprintf(err, errlen, "%s:%d: an actor takes one <argument value=\"RANK\"/>, found %d", path, line, arguments),
          ok = 0;
    else if (!rank_ok)
      snprintf(err, errlen, "%s:%d: rank argument '%.40s' is not a rank of the workload (0..%d)", path, line,
               value ? (const char *)value : "", n_ranks - 1),
          ok = 0;
    else if (map[rank] >= 0)
      snprintf(err, errlen, "%s:%d: rank %lld is placed twice", path, line, rank), ok = 0;
    else if (gpu_used[gpu])
      snprintf(err, errlen, "%s:%d: gpu%d runs two ranks", path, line, gpu), ok = 0;
    else {
      map[rank] = gpu;
      gpu_used[gpu] = 1;
    }
    xmlFree(value);
    xmlFree(host);
    xmlFree(function);
  }
  for (int r = 0; r < n_ranks && ok; r++)
    if (map[r] < 0) {
      snprintf(err, errlen, "%s: rank %d is not placed (the workload has %d ranks)", path, r, n_ranks);
      ok = 0;
    }
  free(gpu_used);
  if (!ok) {
    free(map);
    return NULL;
  }
  return map;
}

/* No network, no entity substitution, no DTD loading: a deployment is plain elements. */
#define DEPLOYMENT_XML_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOWARNING)

int *deployment_parse(const char *text, size_t len, const char *path, int n_ranks, int n_gpus, char *err, size_t errlen)
{
  if (len > (size_t)INT32_MAX) {
    snprintf(err, errlen, "%s: too large", path);
    return NULL;
  }
  if (len == 0) { /* libxml2 refuses it without a message */
    snprintf(err, errlen, "%s: empty file (expected a deployment XML file)", path);
    return NULL;
  }
  xmlDoc *doc = platform_xml_read(text, len, path, DEPLOYMENT_XML_OPTIONS, err, errlen);
  if (doc == NULL)
    return NULL;
  int *map = read_placement(doc, path, n_ranks, n_gpus, err, errlen);
  xmlFreeDoc(doc);
  return map;
}

int *deployment_load(const char *path, int n_ranks, int n_gpus, char *err, size_t errlen)
{
  size_t len;
  char *text = text_input_slurp(path, "deployment file", (size_t)1 << 30, &len, err, errlen);
  if (text == NULL)
    return NULL;
  int *map = deployment_parse(text, len, path, n_ranks, n_gpus, err, errlen);
  free(text);
  return map;
}
