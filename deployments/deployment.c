/* Deployment files: write and read rank placements in SimGrid's deployment format. */
#include "deployment.h"

#include "atomic_file.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static char g_error[300];
static void capture(void *ctx, const xmlError *e)
{
  (void)ctx;
  if (g_error[0] == '\0' && e)
    snprintf(g_error, sizeof g_error, "%d: malformed XML: %s", e->line, e->message ? e->message : "");
  size_t len = strlen(g_error);
  while (len > 0 && (g_error[len - 1] == '\n' || g_error[len - 1] == ' '))
    g_error[--len] = '\0';
}

int *deployment_load(const char *path, int n_ranks, int n_gpus, char *err, size_t errlen)
{
  g_error[0] = '\0';
  xmlSetStructuredErrorFunc(NULL, (xmlStructuredErrorFunc)capture);
  xmlDoc *doc = xmlReadFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOWARNING);
  xmlSetStructuredErrorFunc(NULL, NULL);
  if (doc == NULL) {
    if (access(path, R_OK) != 0)
      snprintf(err, errlen, "%s: cannot open the deployment file", path);
    else
      snprintf(err, errlen, "%s:%s", path, g_error[0] ? g_error : " malformed XML");
    return NULL;
  }
  int *map = malloc(sizeof(int) * (size_t)(n_ranks > 0 ? n_ranks : 1));
  char *gpu_used = calloc((size_t)n_gpus + 1, 1);
  for (int r = 0; r < n_ranks; r++)
    map[r] = -1;
  int ok = 1;
  xmlNode *root = xmlDocGetRootElement(doc);
  for (xmlNode *a = root ? root->children : NULL; a && ok; a = a->next) {
    if (a->type != XML_ELEMENT_NODE)
      continue;
    int line = (int)xmlGetLineNo(a);
    if (strcmp((const char *)a->name, "actor") != 0) {
      snprintf(err, errlen, "%s:%d: expected <actor>, found <%s>", path, line, (const char *)a->name);
      ok = 0;
      break;
    }
    xmlChar *host = xmlGetProp(a, (const xmlChar *)"host");
    xmlChar *function = xmlGetProp(a, (const xmlChar *)"function");
    int gpu = -1, rank = -1;
    if (host && strncmp((const char *)host, "gpu", 3) == 0)
      gpu = atoi((const char *)host + 3);
    for (xmlNode *arg = a->children; arg; arg = arg->next)
      if (arg->type == XML_ELEMENT_NODE && strcmp((const char *)arg->name, "argument") == 0) {
        xmlChar *v = xmlGetProp(arg, (const xmlChar *)"value");
        char *end = NULL;
        if (v)
          rank = (int)strtol((const char *)v, &end, 10);
        if (v == NULL || *end != '\0')
          rank = -2;
        xmlFree(v);
        break;
      }
    if (function == NULL || strcmp((const char *)function, "rank") != 0)
      snprintf(err, errlen, "%s:%d: actor function must be \"rank\"", path, line), ok = 0;
    else if (gpu < 0 || gpu >= n_gpus)
      snprintf(err, errlen, "%s:%d: host '%s' is not a GPU of the platform (gpu0..gpu%d)", path, line,
               host ? (const char *)host : "", n_gpus - 1), ok = 0;
    else if (rank < 0 || rank >= n_ranks)
      snprintf(err, errlen, "%s:%d: the rank argument must be 0..%d", path, line, n_ranks - 1), ok = 0;
    else if (map[rank] >= 0)
      snprintf(err, errlen, "%s:%d: rank %d is placed twice", path, line, rank), ok = 0;
    else if (gpu_used[gpu])
      snprintf(err, errlen, "%s:%d: gpu%d runs two ranks", path, line, gpu), ok = 0;
    else {
      map[rank] = gpu;
      gpu_used[gpu] = 1;
    }
    xmlFree(host);
    xmlFree(function);
  }
  for (int r = 0; r < n_ranks && ok; r++)
    if (map[r] < 0) {
      snprintf(err, errlen, "%s: rank %d is not placed (the workload has %d ranks)", path, r, n_ranks);
      ok = 0;
    }
  xmlFreeDoc(doc);
  free(gpu_used);
  if (!ok) {
    free(map);
    return NULL;
  }
  return map;
}
