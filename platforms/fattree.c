/* The fat-tree model: port split, switch counts, GPU-to-leaf mapping and enumeration of
 * every router and link. docs/platforms.md explains the construction and its sources. */
#include "fattree.h"
#include "cli.h"

#include "gpu_types.h"
#include "units.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep every count and name inside an int; far above any real cluster. */
#define FATTREE_MAX_GPUS (1 << 24)
#define FATTREE_MAX_RADIX 4096

/* Everything the construction derives from a checked spec. */
struct fattree_shape {
  int nodes, leaves, level2, cores, pods;
  int d, u;   /* leaf down, up ports */
  int da, ua; /* aggregation down (= leaves per pod), up ports; 0 with 2 tiers */
};

/* Writes the message (which starts with the offending key) and returns -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  if (err == NULL || errlen == 0)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

void fattree_spec_init(struct fattree_spec *spec)
{
  memset(spec, 0, sizeof(*spec));
  spec->gpus_per_node = 8; /* DGX/HGX H100: 8 GPUs, 8 ConnectX-7 NICs per node */
  spec->tiers = 2;
  spec->radix = 64; /* QM9700 (NDR) and Tomahawk 4 at 400G: 64 ports */
  spec->oversub[0] = 1;
  spec->oversub[1] = 1;
  spec->link_rate_Bps = 400e9 / 8;
  spec->link_latency_s = 100e-9;
  spec->nvlink_rate_Bps = 0;
  spec->nvlink_latency_s = 25e-9; /* SimAI topology templates: NVLink latency 25 ns */
  spec->switch_latency_s = 130e-9;
  snprintf(spec->gpu, sizeof(spec->gpu), "H100");
}

double fattree_nvlink_rate(const struct fattree_spec *spec)
{
  if (spec->nvlink_rate_Bps > 0)
    return spec->nvlink_rate_Bps;
  const struct gpu_type *g = gpu_type_find(spec->gpu);
  return g != NULL ? g->nvlink_Bps : 0;
}

/* ---- setter ---------------------------------------------------------------------------- */

static int parse_int(const char *key, const char *value, int *out, char *err, size_t errlen)
{
  long v;
  /* Digits only: " 8", "+8", "8x" and values past INT_MAX are refused, not read as 8 or wrapped. */
  if (cli_parse_long(value, INT_MIN, INT_MAX, &v) != 0)
    return fail(err, errlen, "%s: \"%s\" is not an integer", key, value);
  *out = (int)v;
  return 0;
}

static int parse_bool(const char *key, const char *value, int *out, char *err, size_t errlen)
{
  if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0) {
    *out = 1;
    return 0;
  }
  if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "no") == 0) {
    *out = 0;
    return 0;
  }
  return fail(err, errlen, "%s: \"%s\" is not a boolean (1 or 0)", key, value);
}

/* Rates must be positive and carry a unit: a bare "400" could be bits or bytes. */
static int parse_rate(const char *key, const char *value, double *out, char *err, size_t errlen)
{
  double v = 0;
  if (fab_unit_parse_rate(value, &v) == 0 && v > 0) {
    *out = v;
    return 0;
  }
  if (strchr(value, '-') != NULL || fab_unit_parse_rate(value, &v) == 0)
    return fail(err, errlen, "%s: \"%s\" must be a positive rate", key, value);
  if (fab_unit_parse_number(value, &v) == 0)
    return fail(err, errlen, "%s: \"%s\" needs a unit (e.g. 400Gbps or 50GBps)", key, value);
  return fail(err, errlen, "%s: \"%s\" is not a rate (e.g. 400Gbps or 50GBps)", key, value);
}

static int parse_time(const char *key, const char *value, double *out, char *err, size_t errlen)
{
  double v = 0;
  if (fab_unit_parse_time(value, &v) == 0) {
    *out = v;
    return 0;
  }
  if (strchr(value, '-') != NULL)
    return fail(err, errlen, "%s: \"%s\" must not be negative", key, value);
  if (fab_unit_parse_number(value, &v) == 0)
    return fail(err, errlen, "%s: \"%s\" needs a unit (e.g. 100ns)", key, value);
  return fail(err, errlen, "%s: \"%s\" is not a duration (e.g. 100ns or 1.5us)", key, value);
}

/* "R" sets the leaf ratio (aggregation stays 1:1), "R1,R2" sets both. */
static int parse_oversub(const char *key, const char *value, double out[2], char *err, size_t errlen)
{
  char first[64];
  const char *comma = strchr(value, ',');
  size_t n = comma != NULL ? (size_t)(comma - value) : strlen(value);
  double r[2] = { 0, 1 };
  int ok = n < sizeof(first);
  if (ok) {
    memcpy(first, value, n);
    first[n] = '\0';
    ok = fab_unit_parse_number(first, &r[0]) == 0;
  }
  if (ok && comma != NULL)
    ok = fab_unit_parse_number(comma + 1, &r[1]) == 0;
  if (!ok)
    return fail(err, errlen, "%s: \"%s\" is not R or R1,R2 (down:up ratios, e.g. 1 or 3,1)", key, value);
  out[0] = r[0];
  out[1] = r[1];
  return 0;
}

/* Stores the table's canonical name, so that "h100-sxm" is written back as "H100". */
static int set_gpu(struct fattree_spec *spec, const char *key, const char *value, char *err, size_t errlen)
{
  const struct gpu_type *g = gpu_type_find(value);
  if (g == NULL) {
    char known[128] = "";
    for (const struct gpu_type *t = gpu_type_table(); t->name != NULL; t++)
      snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", known[0] ? ", " : "", t->name);
    const char *close = gpu_type_suggest(value);
    return fail(err, errlen, "%s: unknown GPU type \"%s\"%s%s%s (known: %s)", key, value,
                close ? " (did you mean " : "", close ? close : "", close ? "?)" : "", known);
  }
  snprintf(spec->gpu, sizeof(spec->gpu), "%s", g->name);
  return 0;
}

int fattree_spec_set(struct fattree_spec *spec, const char *key, const char *value, char *err, size_t errlen)
{
  if (value == NULL)
    value = "";
  if (strcmp(key, "gpus") == 0)
    return parse_int(key, value, &spec->gpus, err, errlen);
  if (strcmp(key, "gpus-per-node") == 0)
    return parse_int(key, value, &spec->gpus_per_node, err, errlen);
  if (strcmp(key, "tiers") == 0)
    return parse_int(key, value, &spec->tiers, err, errlen);
  if (strcmp(key, "radix") == 0)
    return parse_int(key, value, &spec->radix, err, errlen);
  if (strcmp(key, "rail-optimized") == 0)
    return parse_bool(key, value, &spec->rail_optimized, err, errlen);
  if (strcmp(key, "oversubscription") == 0)
    return parse_oversub(key, value, spec->oversub, err, errlen);
  if (strcmp(key, "link-rate") == 0)
    return parse_rate(key, value, &spec->link_rate_Bps, err, errlen);
  if (strcmp(key, "link-latency") == 0)
    return parse_time(key, value, &spec->link_latency_s, err, errlen);
  if (strcmp(key, "nvlink-rate") == 0)
    return parse_rate(key, value, &spec->nvlink_rate_Bps, err, errlen);
  if (strcmp(key, "nvlink-latency") == 0)
    return parse_time(key, value, &spec->nvlink_latency_s, err, errlen);
  if (strcmp(key, "switch-latency") == 0)
    return parse_time(key, value, &spec->switch_latency_s, err, errlen);
  if (strcmp(key, "gpu") == 0)
    return set_gpu(spec, key, value, err, errlen);
  if (strcmp(key, "format") == 0)
    return strcmp(value, "1") == 0
               ? 0
               : fail(err, errlen, "%s: \"%s\" is not supported (this sgfabric reads 1)", key, value);
  if (strcmp(key, "topology") == 0)
    return strcmp(value, "fat-tree") == 0
               ? 0
               : fail(err, errlen, "%s: \"%s\" is not supported (only fat-tree)", key, value);
  if (strcmp(key, "pgft") == 0 || strcmp(key, "command") == 0)
    return 0;
  fail(err, errlen, "%s: unknown fat-tree parameter", key);
  return -2;
}

/* ---- check and shape ------------------------------------------------------------------- */

/* Splits radix ports into down:up = ratio: d = floor(radix*R/(R+1)), u = floor(d/R). With
 * R = 1 this is d = u = radix/2. The epsilon keeps 64*3/4 from flooring to 47. */
static void split_ports(int radix, double ratio, int *down, int *up)
{
  *down = (int)floor(radix * ratio / (ratio + 1) + 1e-9);
  *up = (int)floor(*down / ratio + 1e-9);
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static int leaves_for(int gpus, int g, int d, int rail) { return rail ? ceil_div(gpus / g, d) * g : ceil_div(gpus, d); }

static int check_ranges(const struct fattree_spec *s, char *err, size_t errlen)
{
  if (s->gpus < 1 || s->gpus > FATTREE_MAX_GPUS)
    return fail(err, errlen, "gpus: %d is out of range (1 to %d)", s->gpus, FATTREE_MAX_GPUS);
  if (s->gpus_per_node < 1 || s->gpus_per_node > s->gpus)
    return fail(err, errlen, "gpus-per-node: %d is out of range (1 to gpus = %d)", s->gpus_per_node, s->gpus);
  if (s->gpus % s->gpus_per_node != 0)
    return fail(err, errlen, "gpus-per-node: %d does not divide gpus = %d (whole nodes only)", s->gpus_per_node,
                s->gpus);
  if (s->tiers != 2 && s->tiers != 3)
    return fail(err, errlen, "tiers: %d is not supported (2 or 3)", s->tiers);
  if (s->radix < 2 || s->radix > FATTREE_MAX_RADIX)
    return fail(err, errlen, "radix: %d is out of range (2 to %d ports)", s->radix, FATTREE_MAX_RADIX);
  for (int i = 0; i < 2; i++)
    if (!isfinite(s->oversub[i]) || s->oversub[i] < 1)
      return fail(err, errlen, "oversubscription: %s ratio %g must be >= 1 (down ports per up port)",
                  i == 0 ? "leaf" : "aggregation", s->oversub[i]);
  if (!(s->link_rate_Bps > 0) || !isfinite(s->link_rate_Bps))
    return fail(err, errlen, "link-rate: %g B/s must be positive", s->link_rate_Bps);
  if (!(s->nvlink_rate_Bps >= 0) || !isfinite(s->nvlink_rate_Bps))
    return fail(err, errlen, "nvlink-rate: %g B/s must be positive", s->nvlink_rate_Bps);
  if (!(s->link_latency_s >= 0) || !isfinite(s->link_latency_s))
    return fail(err, errlen, "link-latency: %g s must not be negative", s->link_latency_s);
  if (!(s->nvlink_latency_s >= 0) || !isfinite(s->nvlink_latency_s))
    return fail(err, errlen, "nvlink-latency: %g s must not be negative", s->nvlink_latency_s);
  if (!(s->switch_latency_s >= 0) || !isfinite(s->switch_latency_s))
    return fail(err, errlen, "switch-latency: %g s must not be negative", s->switch_latency_s);
  if (gpu_type_find(s->gpu) == NULL)
    return fail(err, errlen, "gpu: unknown GPU type \"%.31s\"", s->gpu);
  return 0;
}

/* Largest GPU count a tree of this radix, split and rail layout can hold given at most
 * max_leaves leaves; for the refusal message. */
static long max_gpus_for(const struct fattree_spec *s, int d, long max_leaves)
{
  if (!s->rail_optimized)
    return max_leaves * d;
  return (max_leaves / s->gpus_per_node) * (long)d * s->gpus_per_node;
}

static int shape_of(const struct fattree_spec *s, struct fattree_shape *sh, char *err, size_t errlen)
{
  if (check_ranges(s, err, errlen) != 0)
    return -1;
  memset(sh, 0, sizeof(*sh));
  split_ports(s->radix, s->oversub[0], &sh->d, &sh->u);
  if (sh->d < 1 || sh->u < 1)
    return fail(err, errlen, "oversubscription: leaf ratio %g leaves no %s port on a radix-%d switch", s->oversub[0],
                sh->d < 1 ? "down" : "up", s->radix);
  sh->nodes = s->gpus / s->gpus_per_node;
  sh->leaves = leaves_for(s->gpus, s->gpus_per_node, sh->d, s->rail_optimized);
  if (s->tiers == 2) {
    if (sh->leaves > s->radix)
      return fail(err, errlen,
                  "tiers: %d GPUs need %d leaves but a radix-%d spine reaches %d; 2 tiers "
                  "hold at most %ld GPUs here (use --tiers 3, a larger --radix or more "
                  "--oversubscription)",
                  s->gpus, sh->leaves, s->radix, s->radix, max_gpus_for(s, sh->d, s->radix));
    sh->level2 = sh->u;
    sh->pods = 1;
    return 0;
  }
  split_ports(s->radix, s->oversub[1], &sh->da, &sh->ua);
  if (sh->da < 1 || sh->ua < 1)
    return fail(err, errlen,
                "oversubscription: aggregation ratio %g leaves no %s port on a radix-%d "
                "switch",
                s->oversub[1], sh->da < 1 ? "down" : "up", s->radix);
  sh->pods = ceil_div(sh->leaves, sh->da);
  if (sh->pods > s->radix)
    return fail(err, errlen,
                "tiers: %d GPUs need %d pods of %d leaves but a radix-%d core reaches %d "
                "pods; 3 tiers hold at most %ld GPUs here (use a larger --radix or more "
                "--oversubscription)",
                s->gpus, sh->pods, sh->da, s->radix, s->radix, max_gpus_for(s, sh->d, (long)s->radix * sh->da));
  sh->level2 = sh->pods * sh->u;
  sh->cores = sh->u * sh->ua;
  return 0;
}

int fattree_spec_check(const struct fattree_spec *spec, char *err, size_t errlen)
{
  struct fattree_shape sh;
  return shape_of(spec, &sh, err, errlen);
}

int fattree_counts(const struct fattree_spec *spec, struct fattree_counts *c)
{
  struct fattree_shape sh;
  if (shape_of(spec, &sh, NULL, 0) != 0)
    return -1;
  memset(c, 0, sizeof(*c));
  c->nodes = sh.nodes;
  c->leaves = sh.leaves;
  c->pods = sh.pods;
  c->leaf_down = sh.d;
  c->leaf_up = sh.u;
  c->nvlinks = spec->gpus;
  c->fabric_links = spec->gpus + (long)sh.leaves * sh.u;
  if (spec->tiers == 2) {
    c->spines = sh.level2;
  } else {
    c->aggs = sh.level2;
    c->cores = sh.cores;
    c->agg_down = sh.da;
    c->agg_up = sh.ua;
    c->fabric_links += (long)sh.level2 * sh.ua;
  }
  return 0;
}

static int leaf_of(const struct fattree_spec *s, const struct fattree_shape *sh, int gpu)
{
  if (!s->rail_optimized)
    return gpu / sh->d;
  int node = gpu / s->gpus_per_node, rail = gpu % s->gpus_per_node;
  return (node / sh->d) * s->gpus_per_node + rail;
}

int fattree_leaf_of_gpu(const struct fattree_spec *spec, int gpu)
{
  struct fattree_shape sh;
  if (shape_of(spec, &sh, NULL, 0) != 0 || gpu < 0 || gpu >= spec->gpus)
    return -1;
  return leaf_of(spec, &sh, gpu);
}

int fattree_pod_of_leaf(const struct fattree_spec *spec, int leaf)
{
  struct fattree_shape sh;
  if (shape_of(spec, &sh, NULL, 0) != 0 || leaf < 0 || leaf >= sh.leaves)
    return -1;
  return spec->tiers == 2 ? 0 : leaf / sh.da;
}

/* ---- enumeration ----------------------------------------------------------------------- */

static void visit_link(const struct fattree_visitor *v, void *ctx, const char *lower, const char *upper, double rate,
                       double latency, int is_nvlink)
{
  char name[2 * FATTREE_NAME_MAX + 2];
  snprintf(name, sizeof(name), "%s--%s", lower, upper);
  v->link(ctx, name, lower, upper, rate, latency, is_nvlink);
}

static void visit_router_range(const struct fattree_visitor *v, void *ctx, const char *prefix, int count, int level)
{
  char name[FATTREE_NAME_MAX];
  for (int i = 0; i < count; i++) {
    snprintf(name, sizeof(name), "%s%d", prefix, i);
    v->router(ctx, name, level);
  }
}

static void visit_routers(const struct fattree_spec *s, const struct fattree_shape *sh, const struct fattree_visitor *v,
                          void *ctx)
{
  visit_router_range(v, ctx, "nvs", sh->nodes, FATTREE_LEVEL_NVSWITCH);
  visit_router_range(v, ctx, "leaf", sh->leaves, FATTREE_LEVEL_LEAF);
  visit_router_range(v, ctx, s->tiers == 2 ? "spine" : "agg", sh->level2, FATTREE_LEVEL_SPINE);
  visit_router_range(v, ctx, "core", sh->cores, FATTREE_LEVEL_CORE);
}

static void visit_links(const struct fattree_spec *s, const struct fattree_shape *sh, const struct fattree_visitor *v,
                        void *ctx)
{
  char lo[FATTREE_NAME_MAX], up[FATTREE_NAME_MAX];
  double nv_rate = fattree_nvlink_rate(s), rate = s->link_rate_Bps, lat = s->link_latency_s;
  for (int i = 0; i < s->gpus; i++) {
    snprintf(lo, sizeof(lo), "gpu%d", i);
    snprintf(up, sizeof(up), "nvs%d", i / s->gpus_per_node);
    visit_link(v, ctx, lo, up, nv_rate, s->nvlink_latency_s, 1);
  }
  for (int i = 0; i < s->gpus; i++) {
    snprintf(lo, sizeof(lo), "gpu%d", i);
    snprintf(up, sizeof(up), "leaf%d", leaf_of(s, sh, i));
    visit_link(v, ctx, lo, up, rate, lat, 0);
  }
  for (int j = 0; j < sh->leaves; j++) {
    snprintf(lo, sizeof(lo), "leaf%d", j);
    for (int a = 0; a < sh->u; a++) {
      if (s->tiers == 2)
        snprintf(up, sizeof(up), "spine%d", a);
      else
        snprintf(up, sizeof(up), "agg%d", (j / sh->da) * sh->u + a);
      visit_link(v, ctx, lo, up, rate, lat, 0);
    }
  }
  for (int k = 0; s->tiers == 3 && k < sh->level2; k++) {
    snprintf(lo, sizeof(lo), "agg%d", k);
    for (int c = 0; c < sh->ua; c++) {
      snprintf(up, sizeof(up), "core%d", (k % sh->u) * sh->ua + c);
      visit_link(v, ctx, lo, up, rate, lat, 0);
    }
  }
}

int fattree_enumerate(const struct fattree_spec *spec, const struct fattree_visitor *visitor, void *ctx)
{
  struct fattree_shape sh;
  if (shape_of(spec, &sh, NULL, 0) != 0)
    return -1;
  if (visitor->gpu != NULL) {
    char name[FATTREE_NAME_MAX];
    for (int i = 0; i < spec->gpus; i++) {
      snprintf(name, sizeof(name), "gpu%d", i);
      visitor->gpu(ctx, i, i / spec->gpus_per_node, name);
    }
  }
  if (visitor->router != NULL)
    visit_routers(spec, &sh, visitor, ctx);
  if (visitor->link != NULL)
    visit_links(spec, &sh, visitor, ctx);
  return 0;
}

/* ---- props, PGFT and formatting -------------------------------------------------------- */

int fattree_pgft(const struct fattree_spec *spec, char *buf, size_t buflen)
{
  struct fattree_shape sh;
  if (shape_of(spec, &sh, NULL, 0) != 0)
    return -1;
  if (spec->tiers == 2)
    snprintf(buf, buflen, "2;%d,%d;1,%d;1,1", sh.d, sh.leaves, sh.u);
  else
    snprintf(buf, buflen, "3;%d,%d,%d;1,%d,%d;1,1,1", sh.d, sh.da, sh.pods, sh.u, sh.ua);
  return 0;
}

struct scaled_unit {
  double scale;
  const char *suffix;
};

static void format_scaled(double value, const struct scaled_unit *units, char *buf, size_t buflen)
{
  const struct scaled_unit *u = units;
  while (u[1].suffix != NULL && value < u->scale)
    u++;
  snprintf(buf, buflen, "%.15g%s", value / u->scale, u->suffix);
}

void fattree_format_rate(double rate_Bps, int bytes_unit, char *buf, size_t buflen)
{
  static const struct scaled_unit bits[] = { { 1e12 / 8, "Tbps" }, { 1e9 / 8, "Gbps" }, { 1e6 / 8, "Mbps" },
                                             { 1e3 / 8, "kbps" },  { 1.0 / 8, "bps" },  { 0, NULL } };
  static const struct scaled_unit bytes[] = { { 1e12, "TBps" }, { 1e9, "GBps" }, { 1e6, "MBps" },
                                              { 1e3, "kBps" },  { 1, "Bps" },    { 0, NULL } };
  format_scaled(rate_Bps, bytes_unit ? bytes : bits, buf, buflen);
}

void fattree_format_time(double seconds, char *buf, size_t buflen)
{
  static const struct scaled_unit times[] = { { 1, "s" },     { 1e-3, "ms" },  { 1e-6, "us" },
                                              { 1e-9, "ns" }, { 1e-12, "ps" }, { 0, NULL } };
  if (seconds == 0)
    snprintf(buf, buflen, "0s");
  else
    format_scaled(seconds, times, buf, buflen);
}

int fattree_props(const struct fattree_spec *spec, void (*prop)(void *ctx, const char *key, const char *value),
                  void *ctx)
{
  char gpus[16], per_node[16], tiers[16], radix[16], oversub[64], pgft[128];
  char link_rate[32], link_lat[32], nv_rate[32], nv_lat[32], sw_lat[32];
  if (fattree_pgft(spec, pgft, sizeof(pgft)) != 0)
    return -1;
  snprintf(gpus, sizeof(gpus), "%d", spec->gpus);
  snprintf(per_node, sizeof(per_node), "%d", spec->gpus_per_node);
  snprintf(tiers, sizeof(tiers), "%d", spec->tiers);
  snprintf(radix, sizeof(radix), "%d", spec->radix);
  snprintf(oversub, sizeof(oversub), "%.15g,%.15g", spec->oversub[0], spec->oversub[1]);
  fattree_format_rate(spec->link_rate_Bps, 0, link_rate, sizeof(link_rate));
  fattree_format_time(spec->link_latency_s, link_lat, sizeof(link_lat));
  fattree_format_rate(fattree_nvlink_rate(spec), 1, nv_rate, sizeof(nv_rate));
  fattree_format_time(spec->nvlink_latency_s, nv_lat, sizeof(nv_lat));
  fattree_format_time(spec->switch_latency_s, sw_lat, sizeof(sw_lat));

  prop(ctx, "format", "1");
  prop(ctx, "topology", "fat-tree");
  prop(ctx, "gpus", gpus);
  prop(ctx, "gpus-per-node", per_node);
  prop(ctx, "tiers", tiers);
  prop(ctx, "radix", radix);
  prop(ctx, "rail-optimized", spec->rail_optimized ? "1" : "0");
  prop(ctx, "oversubscription", oversub);
  prop(ctx, "link-rate", link_rate);
  prop(ctx, "link-latency", link_lat);
  prop(ctx, "nvlink-rate", nv_rate);
  prop(ctx, "nvlink-latency", nv_lat);
  prop(ctx, "switch-latency", sw_lat);
  prop(ctx, "gpu", spec->gpu);
  prop(ctx, "pgft", pgft);
  return 0;
}
