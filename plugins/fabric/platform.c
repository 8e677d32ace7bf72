/* Platform reader (libxml2) and its fat-tree consistency check. */
#include "platform.h"

#include <ctype.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fattree.h"
#include "text_input.h"
#include "units.h"
#include "check.h"

/* libxml2 reports through a global handler; the first error of a parse is kept here. */
/* libxml2's first error of one parse, kept through the parser context (not a global handler). */
struct xml_first_error {
  char text[512];
};

static void capture_xml_error(void *ctx, xmlErrorPtr error)
{
  struct xml_first_error *first = ((xmlParserCtxtPtr)ctx)->_private;
  if (first->text[0] != '\0' || error == NULL)
    return;
  char message[400];
  snprintf(message, sizeof message, "%s", error->message ? error->message : "malformed XML");
  size_t len = strlen(message);
  while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' '))
    message[--len] = '\0';
  snprintf(first->text, sizeof first->text, "%d: malformed XML: %s", error->line, message);
}

xmlDoc *platform_xml_read(const char *text, size_t len, const char *path, int options, char *err, size_t errlen)
{
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (ctxt == NULL) {
    snprintf(err, errlen, "%s: out of memory for the XML parser", path);
    return NULL;
  }
  struct xml_first_error first = { "" };
  ctxt->_private = &first;
  ctxt->sax->serror = capture_xml_error; /* called with ctxt->userData, the context itself */
  xmlDoc *doc = xmlCtxtReadMemory(ctxt, text, (int)len, path, NULL, options);
  xmlFreeParserCtxt(ctxt);
  if (doc == NULL)
    snprintf(err, errlen, "%s:%s", path, first.text[0] ? first.text : " malformed XML");
  return doc;
}

static char *xstrdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = sgf_xmalloc(n);
  memcpy(d, s, n);
  return d;
}

static int attr(xmlNode *node, const char *name, char *buf, size_t buflen)
{
  xmlChar *value = xmlGetProp(node, (const xmlChar *)name);
  if (value == NULL)
    return -1;
  snprintf(buf, buflen, "%s", (const char *)value);
  xmlFree(value);
  return 0;
}

static int is_element(xmlNode *node, const char *name)
{
  return node->type == XML_ELEMENT_NODE && strcmp((const char *)node->name, name) == 0;
}

/* "leaf12" -> level 1; returns the level or -1 for an unknown router name. */
static int router_level(const char *id, topo_node_kind *kind, int *index)
{
  static const struct {
    const char *prefix;
    int level;
    topo_node_kind kind;
  } kinds[] = { { "nvs", 0, TOPO_NVSWITCH },
                { "leaf", 1, TOPO_SWITCH },
                { "spine", 2, TOPO_SWITCH },
                { "agg", 2, TOPO_SWITCH },
                { "core", 3, TOPO_SWITCH } };
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    size_t len = strlen(kinds[k].prefix);
    if (strncmp(id, kinds[k].prefix, len) != 0 || !isdigit((unsigned char)id[len]))
      continue;
    char *end;
    long value = strtol(id + len, &end, 10);
    if (*end != '\0')
      continue;
    *kind = kinds[k].kind;
    *index = kinds[k].kind == TOPO_NVSWITCH ? (int)value : -1;
    return kinds[k].level;
  }
  return -1;
}

static int gpu_index(const char *id)
{
  if (strncmp(id, "gpu", 3) != 0 || !isdigit((unsigned char)id[3]))
    return -1;
  char *end;
  long value = strtol(id + 3, &end, 10);
  return *end == '\0' && value < 1 << 30 ? (int)value : -1;
}

/* Whether text is a host speed SimGrid 3.32 reads: one or more power states separated by commas,
 * each a positive number followed by a flops unit: f or flops, with an SI prefix (k, M, G, T, P,
 * E, Z, Y; kilo...yotta before flops). SimGrid refuses anything else by aborting. */
static int simgrid_speed_ok(const char *text)
{
  static const char *const units[] = { "f",         "kf",        "Mf",        "Gf",       "Tf",         "Pf",
                                       "Ef",        "Zf",        "Yf",        "flops",    "kiloflops",  "megaflops",
                                       "gigaflops", "teraflops", "petaflops", "exaflops", "zettaflops", "yottaflops" };
  char buf[128];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *state = strtok(buf, ","); state; state = strtok(NULL, ",")) {
    while (*state == ' ')
      state++;
    char *end;
    double v = strtod(state, &end);
    if (end == state || !(v > 0) || v > 1e300)
      return 0;
    size_t len = strlen(end);
    while (len > 0 && end[len - 1] == ' ')
      end[--len] = '\0';
    int known = 0;
    for (size_t u = 0; u < sizeof units / sizeof units[0] && !known; u++)
      known = strcmp(end, units[u]) == 0;
    if (!known)
      return 0;
  }
  return text[0] != '\0' && text[strlen(text) - 1] != ',';
}

/* SimGrid reads the platform file again with its own parser (FleXML), which is stricter than
 * libxml2: a UTF-8 byte order mark or an internal DTD subset (<!DOCTYPE platform [ ... ]>, where
 * entities would be declared) make it abort. They are refused here, with the line, before SimGrid runs. */
static int check_simgrid_syntax(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return 0; /* reported by the XML reader */
  unsigned char head[3] = { 0, 0, 0 };
  if (fread(head, 1, 3, f) == 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) {
    snprintf(err, errlen,
             "%s:1: the file starts with a UTF-8 byte order mark, which SimGrid's platform parser refuses: save it "
             "without one",
             path);
    fclose(f);
    return -1;
  }
  rewind(f);
  int c, line = 1, rc = 0;
  const char *doctype = "<!DOCTYPE";
  int in_doctype = 0, doctype_match = 0;
  char quote = 0;
  while (rc == 0 && (c = getc(f)) != EOF) {
    if (c == '\n')
      line++;
    if (!in_doctype) {
      doctype_match = c == doctype[doctype_match] ? doctype_match + 1 : c == '<' ? 1 : 0;
      if (doctype[doctype_match] == '\0')
        in_doctype = 1;
      continue;
    }
    if (in_doctype == 2)
      continue; /* the one DOCTYPE is over */
    if (quote) {
      if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = (char)c;
    } else if (c == '[') {
      snprintf(err, errlen,
               "%s:%d: internal DTD subset (<!DOCTYPE platform [ ... ]>): SimGrid's platform parser does not read "
               "one; declare <!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\"> only",
               path, line);
      rc = -1;
    } else if (c == '>') {
      in_doctype = 2;
    }
  }
  fclose(f);
  return rc;
}

struct expected_link {
  const char *name;
  double rate_Bps, latency_s;
};

struct check_ctx {
  struct platform *p;
  int *seen; /* per topo link: matched by an expected link */
  char *err;
  size_t errlen;
  int failed;
  long expected;
};

static void check_gpu(void *ctx, int gpu, int node, const char *name)
{
  (void)node;
  struct check_ctx *c = ctx;
  if (c->failed)
    return;
  int id = fab_topo_find_node(c->p->topo, name);
  if (id < 0 || c->p->topo->nodes[id].index != gpu) {
    snprintf(c->err, c->errlen, "%s: host '%s' is missing (the fat-tree parameters imply it)", c->p->path, name);
    c->failed = 1;
  }
}

static void check_router(void *ctx, const char *name, int level)
{
  struct check_ctx *c = ctx;
  if (c->failed)
    return;
  int id = fab_topo_find_node(c->p->topo, name);
  if (id < 0 || c->p->topo->nodes[id].level != level) {
    snprintf(c->err, c->errlen, "%s: router '%s' is missing (the fat-tree parameters imply it)", c->p->path, name);
    c->failed = 1;
  }
}

static int find_link(const struct topo *t, const char *name)
{
  /* Links carry their names; nodes' port lists make the search local to one node. */
  char lower[64];
  snprintf(lower, sizeof lower, "%s", name);
  char *dash = strstr(lower, "--");
  if (dash == NULL)
    return -1;
  *dash = '\0';
  int node = fab_topo_find_node(t, lower);
  if (node < 0)
    return -1;
  const struct topo_node *n = &t->nodes[node];
  for (int p = n->first_port; p < n->first_port + n->port_count; p++)
    if (strcmp(t->links[t->ports[p].link].name, name) == 0)
      return t->ports[p].link;
  return -1;
}

static int nearly(double a, double b) { return a == b || (a > 0 && b > 0 && a / b < 1 + 1e-9 && b / a < 1 + 1e-9); }

static void check_link(void *ctx, const char *name, const char *lower, const char *upper, double rate_Bps,
                       double latency_s, int is_nvlink)
{
  (void)lower;
  (void)upper;
  (void)is_nvlink;
  struct check_ctx *c = ctx;
  if (c->failed)
    return;
  c->expected++;
  const struct topo *t = c->p->topo;
  int link = find_link(t, name);
  if (link < 0) {
    snprintf(c->err, c->errlen, "%s: link '%s' is missing: the platform's links contradict its fat-tree parameters",
             c->p->path, name);
    c->failed = 1;
    return;
  }
  const struct topo_port *port = &t->ports[t->links[link].port[0]];
  if (!nearly(port->rate_Bps, rate_Bps) || !nearly(port->latency_s, latency_s)) {
    char want_rate[32], got_rate[32], want_lat[32], got_lat[32];
    fab_unit_format(UNIT_BPS, rate_Bps, want_rate, sizeof want_rate);
    fab_unit_format(UNIT_BPS, port->rate_Bps, got_rate, sizeof got_rate);
    fab_unit_format(UNIT_SECONDS, latency_s, want_lat, sizeof want_lat);
    fab_unit_format(UNIT_SECONDS, port->latency_s, got_lat, sizeof got_lat);
    snprintf(c->err, c->errlen, "%s:%d: link '%s' has %s/%s but the fat-tree parameters give %s/%s", c->p->path,
             t->links[link].src_line, name, got_rate, got_lat, want_rate, want_lat);
    c->failed = 1;
    return;
  }
  c->seen[link]++;
}

static int check_fattree(struct platform *p, char *err, size_t errlen)
{
  struct fattree_spec spec;
  fattree_spec_init(&spec);
  char message[256];
  for (int i = 0; i < p->n_props; i++) {
    if (strncmp(p->props[i].name, "sgfabric/", 9) != 0)
      continue;
    if (fattree_spec_set(&spec, p->props[i].name + 9, p->props[i].value, message, sizeof message) != 0) {
      snprintf(err, errlen, "%s:%d: %s", p->path, p->props[i].line, message);
      return -1;
    }
  }
  if (platform_prop(p, "sgfabric/gpus") == NULL) {
    snprintf(err, errlen, "%s: the zone has no 'sgfabric/gpus' prop: not an sgfabric platform (docs/platforms.md)",
             p->path);
    return -1;
  }
  if (fattree_spec_check(&spec, message, sizeof message) != 0) {
    snprintf(err, errlen, "%s: impossible fat-tree: %s", p->path, message);
    return -1;
  }
  struct topo *t = p->topo;
  struct check_ctx c = { p, calloc((size_t)t->n_links + 1, sizeof(int)), err, errlen, 0, 0 };
  struct fattree_visitor v = { .gpu = check_gpu, .router = check_router, .link = check_link };
  fattree_enumerate(&spec, &v, &c);
  if (!c.failed && t->n_gpus != spec.gpus) {
    snprintf(err, errlen, "%s: %d hosts but sgfabric/gpus is %d", p->path, t->n_gpus, spec.gpus);
    c.failed = 1;
  }
  for (int l = 0; l < t->n_links && !c.failed; l++)
    if (c.seen[l] != 1) {
      snprintf(err, errlen, "%s:%d: link '%s' is not part of the fat-tree its parameters describe", p->path,
               t->links[l].src_line, t->links[l].name);
      c.failed = 1;
    }
  free(c.seen);
  if (c.failed)
    return -1;
  p->gpus_per_node = spec.gpus_per_node;
  snprintf(p->gpu_type, sizeof p->gpu_type, "%s", spec.gpu);
  t->gpus_per_node = spec.gpus_per_node;
  t->switch_latency_s = spec.switch_latency_s;
  t->nvswitch_latency_s = 0;
  return 0;
}

static int read_zone(struct platform *p, xmlNode *zone, char *err, size_t errlen)
{
  struct topo *t = p->topo;
  char id[128], text[128];
  int cap_props = 0;
  /* First pass: props, hosts and routers; links refer to them by name. */
  for (xmlNode *node = zone->children; node; node = node->next) {
    if (node->type != XML_ELEMENT_NODE)
      continue;
    int line = (int)xmlGetLineNo(node);
    if (is_element(node, "prop")) {
      char value[256];
      if (attr(node, "id", id, sizeof id) != 0 || attr(node, "value", value, sizeof value) != 0) {
        snprintf(err, errlen, "%s:%d: <prop> needs id and value", p->path, line);
        return -1;
      }
      if (p->n_props == cap_props) {
        cap_props = cap_props ? 2 * cap_props : 32;
        p->props = realloc(p->props, (size_t)cap_props * sizeof *p->props);
      }
      p->props[p->n_props++] = (struct platform_prop){ xstrdup(id), xstrdup(value), line };
    } else if (is_element(node, "host")) {
      if (attr(node, "id", id, sizeof id) != 0) {
        snprintf(err, errlen, "%s:%d: <host> without id", p->path, line);
        return -1;
      }
      int gpu = gpu_index(id);
      if (gpu < 0) {
        snprintf(err, errlen, "%s:%d: host '%s': GPU hosts are named gpu<index>", p->path, line, id);
        return -1;
      }
      if (attr(node, "speed", text, sizeof text) != 0) {
        snprintf(err, errlen, "%s:%d: host '%s' has no speed", p->path, line, id);
        return -1;
      }
      if (!simgrid_speed_ok(text)) {
        snprintf(err, errlen,
                 "%s:%d: host '%s': speed '%s' is not a SimGrid speed (a positive number and a flops "
                 "unit, e.g. 989.4Tf; power states separated by commas)",
                 p->path, line, id, text);
        return -1;
      }
      if (fab_topo_add_node(t, id, TOPO_GPU, 0, gpu, line) < 0) {
        snprintf(err, errlen, "%s:%d: host '%s' declared twice", p->path, line, id);
        return -1;
      }
    } else if (is_element(node, "router")) {
      if (attr(node, "id", id, sizeof id) != 0) {
        snprintf(err, errlen, "%s:%d: <router> without id", p->path, line);
        return -1;
      }
      topo_node_kind kind;
      int index;
      int level = router_level(id, &kind, &index);
      if (level < 0) {
        snprintf(err, errlen, "%s:%d: router '%s': expected nvs<n>, leaf<i>, spine<i>, agg<i> or core<i>", p->path,
                 line, id);
        return -1;
      }
      if (fab_topo_add_node(t, id, kind, level, index, line) < 0) {
        snprintf(err, errlen, "%s:%d: router '%s' declared twice", p->path, line, id);
        return -1;
      }
    } else if (!is_element(node, "link")) {
      snprintf(err, errlen, "%s:%d: unexpected <%s> in the sgfabric zone", p->path, line, (const char *)node->name);
      return -1;
    }
  }
  for (xmlNode *node = zone->children; node; node = node->next) {
    if (!is_element(node, "link"))
      continue;
    int line = (int)xmlGetLineNo(node);
    if (attr(node, "id", id, sizeof id) != 0) {
      snprintf(err, errlen, "%s:%d: <link> without id", p->path, line);
      return -1;
    }
    double rate, latency = 0;
    if (attr(node, "bandwidth", text, sizeof text) != 0 || fab_unit_parse_rate(text, &rate) != 0 || rate <= 0) {
      snprintf(err, errlen, "%s:%d: link '%s': bandwidth must be a positive rate with a unit (e.g. 400Gbps)", p->path,
               line, id);
      return -1;
    }
    if (attr(node, "latency", text, sizeof text) == 0 && fab_unit_parse_time(text, &latency) != 0) {
      snprintf(err, errlen, "%s:%d: link '%s': latency must be a non-negative time with a unit (e.g. 100ns)", p->path,
               line, id);
      return -1;
    }
    char ends[128];
    snprintf(ends, sizeof ends, "%s", id);
    char *hash = strchr(ends, '#');
    if (hash)
      *hash = '\0';
    char *dash = strstr(ends, "--");
    if (dash == NULL) {
      snprintf(err, errlen, "%s:%d: link '%s': the id must name its ends as lower--upper", p->path, line, id);
      return -1;
    }
    *dash = '\0';
    int lower = fab_topo_find_node(t, ends), upper = fab_topo_find_node(t, dash + 2);
    if (lower < 0 || upper < 0) {
      snprintf(err, errlen, "%s:%d: link '%s' names '%s', which is not declared", p->path, line, id,
               lower < 0 ? ends : dash + 2);
      return -1;
    }
    if (t->nodes[lower].level > t->nodes[upper].level ||
        (t->nodes[lower].level == t->nodes[upper].level && t->nodes[upper].kind != TOPO_NVSWITCH)) {
      snprintf(err, errlen, "%s:%d: link '%s' does not join a lower tier to a higher one", p->path, line, id);
      return -1;
    }
    if (fab_topo_add_link(t, lower, upper, rate, latency, id, line) < 0) {
      snprintf(err, errlen, "%s:%d: link '%s' is invalid", p->path, line, id);
      return -1;
    }
  }
  char message[256];
  if (fab_topo_finalize(t, message, sizeof message) != 0) {
    snprintf(err, errlen, "%s: %s", p->path, message);
    return -1;
  }
  return 0;
}

struct platform *platform_load(const char *path, char *err, size_t errlen)
{
  /* Read first, so that a missing, unreadable or directory path is named with the system's
   * reason instead of passing for malformed XML. */
  size_t len;
  char *text = text_input_slurp(path, "platform file", (size_t)1 << 30, &len, err, errlen);
  if (text == NULL)
    return NULL;
  struct platform *p = platform_parse(text, len, path, err, errlen);
  free(text);
  return p;
}

struct platform *platform_parse(const char *text, size_t len, const char *path, char *err, size_t errlen)
{
  if (len > (size_t)INT32_MAX) {
    snprintf(err, errlen, "%s: too large", path);
    return NULL;
  }
  if (len == 0) { /* libxml2 refuses it without a message */
    snprintf(err, errlen, "%s: empty file (expected a platform XML file)", path);
    return NULL;
  }
  struct platform *p = calloc(1, sizeof *p);
  p->path = xstrdup(path);
  p->topo = fab_topo_new();
  if (check_simgrid_syntax(path, err, errlen) != 0) {
    platform_free(p);
    return NULL;
  }
  xmlDoc *doc = platform_xml_read(text, len, path, XML_PARSE_NONET | XML_PARSE_NOWARNING, err, errlen);
  if (doc == NULL) {
    platform_free(p);
    return NULL;
  }
  xmlNode *root = xmlDocGetRootElement(doc);
  int rc = -1;
  if (root == NULL || !is_element(root, "platform")) {
    snprintf(err, errlen, "%s: the root element is not <platform>", path);
  } else {
    /* One zone and nothing else: the fabric is the zone; SimGrid would make any other element a
     * second root or a sibling it cannot place, and abort. */
    xmlNode *zone = NULL, *extra = NULL;
    for (xmlNode *n = root->children; n && extra == NULL; n = n->next)
      if (n->type == XML_ELEMENT_NODE) {
        if (zone == NULL && is_element(n, "zone"))
          zone = n;
        else
          extra = n;
      }
    if (extra != NULL)
      snprintf(err, errlen,
               "%s:%d: <%s> beside the <zone>%s: an sgfabric platform holds exactly one zone and "
               "nothing else",
               path, (int)xmlGetLineNo(extra), (const char *)extra->name, zone ? "" : " (expected first)");
    else if (zone == NULL)
      snprintf(err, errlen, "%s:%d: <platform> has no <zone>", path, (int)xmlGetLineNo(root));
    else if (read_zone(p, zone, err, errlen) == 0 && check_fattree(p, err, errlen) == 0)
      rc = 0;
  }
  xmlFreeDoc(doc);
  if (rc != 0) {
    platform_free(p);
    return NULL;
  }
  return p;
}

void platform_free(struct platform *p)
{
  if (p == NULL)
    return;
  for (int i = 0; i < p->n_props; i++) {
    free(p->props[i].name);
    free(p->props[i].value);
  }
  free(p->props);
  fab_topo_free(p->topo);
  free(p->path);
  free(p);
}

const char *platform_prop(const struct platform *p, const char *name)
{
  for (int i = 0; i < p->n_props; i++)
    if (strcmp(p->props[i].name, name) == 0)
      return p->props[i].value;
  return NULL;
}

int platform_apply_params(const struct platform *p, struct param_set *set, char *err, size_t errlen)
{
  char message[256];
  for (int i = 0; i < p->n_props; i++) {
    const struct platform_prop *prop = &p->props[i];
    if (strncmp(prop->name, "sgfabric/", 9) == 0 || !fab_param_area_known(prop->name))
      continue;
    if (fab_param_set_text(set, prop->name, prop->value, "platform", message, sizeof message) != 0) {
      snprintf(err, errlen, "%s:%d: %s", p->path, prop->line, message);
      return -1;
    }
  }
  return 0;
}
