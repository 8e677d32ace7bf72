/* Fat-tree model: counts against the k-ary fat-tree formulas (Al-Fares et al., SIGCOMM 2008:
 * k^3/4 hosts, k^2/2 edge, k^2/2 aggregation, k^2/4 core switches), rail mapping, refusals,
 * the prop setter and the sizes of the shipped platforms. */
#include "fattree.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>
#include "cunit_main.h"

static struct fattree_spec spec_of(int gpus, int per_node, int tiers, int radix, int rail)
{
  struct fattree_spec s;
  fattree_spec_init(&s);
  s.gpus = gpus;
  s.gpus_per_node = per_node;
  s.tiers = tiers;
  s.radix = radix;
  s.rail_optimized = rail;
  return s;
}

/* ---- counting visitor ------------------------------------------------------------------ */

#define MAX_LEAVES 4096

struct tally {
  long gpus, routers[4], nvlinks, fabric_links, links_per_level[4];
  long leaf_gpus[MAX_LEAVES]; /* GPUs attached to each leaf */
  int leaf_rail[MAX_LEAVES];  /* rail of the first GPU seen on each leaf, -1 if none */
  int mixed_rails;            /* a leaf holds GPUs of two rails */
  int per_node;
  int bad_names; /* a link id is not "<lower>--<upper>" */
};

static void on_gpu(void *ctx, int gpu, int node, const char *name)
{
  struct tally *t = ctx;
  char expect[32];
  snprintf(expect, sizeof(expect), "gpu%d", gpu);
  if (strcmp(expect, name) != 0 || node != gpu / t->per_node)
    t->bad_names++;
  t->gpus++;
}

static void on_router(void *ctx, const char *name, int level)
{
  struct tally *t = ctx;
  (void)name;
  t->routers[level]++;
}

static int level_of(const char *name)
{
  if (strncmp(name, "leaf", 4) == 0)
    return 1;
  if (strncmp(name, "spine", 5) == 0 || strncmp(name, "agg", 3) == 0)
    return 2;
  if (strncmp(name, "core", 4) == 0)
    return 3;
  return 0;
}

static void on_link(void *ctx, const char *name, const char *lower, const char *upper, double rate, double latency,
                    int is_nvlink)
{
  struct tally *t = ctx;
  char expect[160];
  (void)rate;
  (void)latency;
  snprintf(expect, sizeof(expect), "%s--%s", lower, upper);
  if (strcmp(expect, name) != 0)
    t->bad_names++;
  if (is_nvlink) {
    t->nvlinks++;
    return;
  }
  t->fabric_links++;
  t->links_per_level[level_of(upper)]++;
  if (strncmp(lower, "gpu", 3) == 0) {
    int gpu = atoi(lower + 3), leaf = atoi(upper + 4), rail = gpu % t->per_node;
    if (leaf < MAX_LEAVES) {
      t->leaf_gpus[leaf]++;
      if (t->leaf_rail[leaf] < 0)
        t->leaf_rail[leaf] = rail;
      else if (t->leaf_rail[leaf] != rail)
        t->mixed_rails = 1;
    }
  }
}

static void tally_of(const struct fattree_spec *s, struct tally *t)
{
  static const struct fattree_visitor v = { .gpu = on_gpu, .router = on_router, .link = on_link };
  memset(t, 0, sizeof(*t));
  for (int i = 0; i < MAX_LEAVES; i++)
    t->leaf_rail[i] = -1;
  t->per_node = s->gpus_per_node;
  CU_ASSERT_EQUAL_FATAL(fattree_enumerate(s, &v, t), 0);
}

/* The enumeration and fattree_counts must agree on every number. */
static void assert_enumeration_matches_counts(const struct fattree_spec *s)
{
  struct fattree_counts c;
  struct tally t;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(s, &c), 0);
  tally_of(s, &t);
  CU_ASSERT_EQUAL(t.bad_names, 0);
  CU_ASSERT_EQUAL(t.gpus, s->gpus);
  CU_ASSERT_EQUAL(t.routers[0], c.nodes);
  CU_ASSERT_EQUAL(t.routers[1], c.leaves);
  CU_ASSERT_EQUAL(t.routers[2], c.spines + c.aggs);
  CU_ASSERT_EQUAL(t.routers[3], c.cores);
  CU_ASSERT_EQUAL(t.nvlinks, c.nvlinks);
  CU_ASSERT_EQUAL(t.fabric_links, c.fabric_links);
  CU_ASSERT_EQUAL(t.links_per_level[1], s->gpus);
  CU_ASSERT_EQUAL(t.links_per_level[2], (long)c.leaves * c.leaf_up);
  CU_ASSERT_EQUAL(t.links_per_level[3], (long)c.aggs * c.agg_up);
  for (int j = 0; j < c.leaves && j < MAX_LEAVES; j++)
    CU_ASSERT(t.leaf_gpus[j] >= 1 && t.leaf_gpus[j] <= c.leaf_down);
}

/* ---- counts ---------------------------------------------------------------------------- */

static void test_fattree_kary_three_tier_counts_match_formulas(void)
{
  for (int k = 4; k <= 8; k += 4) {
    struct fattree_spec s = spec_of(k * k * k / 4, 1, 3, k, 0);
    struct fattree_counts c;
    CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
    CU_ASSERT_EQUAL(c.leaves, k * k / 2);
    CU_ASSERT_EQUAL(c.aggs, k * k / 2);
    CU_ASSERT_EQUAL(c.cores, k * k / 4);
    CU_ASSERT_EQUAL(c.pods, k);
    CU_ASSERT_EQUAL(c.fabric_links, 3L * k * k * k / 4);
    CU_ASSERT_EQUAL(c.nvlinks, k * k * k / 4);
    assert_enumeration_matches_counts(&s);
  }
}

static void test_fattree_two_tier_full_counts(void)
{
  /* Non-blocking 2-tier radix-64: 64 leaves x 32 GPUs = 2,048 GPUs, 32 spines. */
  struct fattree_spec s = spec_of(2048, 8, 2, 64, 0);
  struct fattree_counts c;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
  CU_ASSERT_EQUAL(c.nodes, 256);
  CU_ASSERT_EQUAL(c.leaves, 64);
  CU_ASSERT_EQUAL(c.spines, 32);
  CU_ASSERT_EQUAL(c.aggs + c.cores, 0);
  CU_ASSERT_EQUAL(c.leaf_down, 32);
  CU_ASSERT_EQUAL(c.leaf_up, 32);
  CU_ASSERT_EQUAL(c.fabric_links, 2048 + 64 * 32);
  assert_enumeration_matches_counts(&s);
}

static void test_fattree_partial_last_leaf(void)
{
  /* 40 GPUs on 32-port-down leaves: two leaves, the second holding 8 GPUs. */
  struct fattree_spec s = spec_of(40, 8, 2, 64, 0);
  struct fattree_counts c;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
  CU_ASSERT_EQUAL(c.leaves, 2);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 31), 0);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 32), 1);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 39), 1);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 40), -1);
  assert_enumeration_matches_counts(&s);
}

static void test_fattree_oversubscription_splits_ports(void)
{
  /* 3:1 on radix 64: d = floor(64*3/4) = 48, u = 16. */
  struct fattree_spec s = spec_of(1024, 8, 2, 64, 0);
  struct fattree_counts c;
  s.oversub[0] = 3;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
  CU_ASSERT_EQUAL(c.leaf_down, 48);
  CU_ASSERT_EQUAL(c.leaf_up, 16);
  CU_ASSERT_EQUAL(c.leaves, 22); /* ceil(1024/48) */
  CU_ASSERT_EQUAL(c.spines, 16);
  CU_ASSERT_EQUAL(c.fabric_links, 1024 + 22 * 16);
  assert_enumeration_matches_counts(&s);

  /* 2:1 on radix 64: d = floor(42.67) = 42, u = 21 (63 ports used, one left idle). */
  s.oversub[0] = 2;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
  CU_ASSERT_EQUAL(c.leaf_down, 42);
  CU_ASSERT_EQUAL(c.leaf_up, 21);

  /* 3-tier with 1:1 leaves and 3:1 aggregation: pods of 48 leaves, 16 cores per group. */
  s = spec_of(4096, 8, 3, 64, 0);
  s.oversub[1] = 3;
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&s, &c), 0);
  CU_ASSERT_EQUAL(c.leaves, 128);
  CU_ASSERT_EQUAL(c.agg_down, 48);
  CU_ASSERT_EQUAL(c.agg_up, 16);
  CU_ASSERT_EQUAL(c.pods, 3);
  CU_ASSERT_EQUAL(c.aggs, 3 * 32);
  CU_ASSERT_EQUAL(c.cores, 32 * 16);
  CU_ASSERT_EQUAL(c.fabric_links, 4096 + 128 * 32 + 96 * 16);
  assert_enumeration_matches_counts(&s);
}

/* ---- rails ----------------------------------------------------------------------------- */

static void test_fattree_rail_leaf_holds_one_rail(void)
{
  const struct fattree_spec specs[] = { spec_of(128, 8, 2, 16, 1), spec_of(1024, 8, 2, 64, 1),
                                        spec_of(10240, 8, 3, 64, 1), spec_of(24, 4, 2, 8, 1) };
  for (size_t n = 0; n < sizeof(specs) / sizeof(specs[0]); n++) {
    const struct fattree_spec *s = &specs[n];
    struct fattree_counts c;
    struct tally t;
    CU_ASSERT_EQUAL_FATAL(fattree_counts(s, &c), 0);
    for (int i = 0; i < s->gpus; i++)
      CU_ASSERT_EQUAL(fattree_leaf_of_gpu(s, i) % s->gpus_per_node, i % s->gpus_per_node);
    tally_of(s, &t);
    CU_ASSERT_FALSE(t.mixed_rails);
    for (int j = 0; j < c.leaves; j++)
      CU_ASSERT_EQUAL(t.leaf_rail[j], j % s->gpus_per_node);
    assert_enumeration_matches_counts(s);
  }
}

static void test_fattree_rail_mapping_formula(void)
{
  /* 128 GPUs, radix 16: groups of 8 nodes; GPU 8n+r on leaf (n/8)*8+r. */
  struct fattree_spec s = spec_of(128, 8, 2, 16, 1);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 0), 0);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 7), 7);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 8), 0);  /* node 1, rail 0 */
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 63), 7); /* node 7, rail 7 */
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 64), 8); /* node 8: second group */
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 127), 15);
  s.rail_optimized = 0;
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(&s, 8), 1); /* leaf = gpu / 8 */
}

static void test_fattree_three_tier_pods(void)
{
  struct fattree_spec s = spec_of(10240, 8, 3, 64, 1);
  CU_ASSERT_EQUAL(fattree_pod_of_leaf(&s, 0), 0);
  CU_ASSERT_EQUAL(fattree_pod_of_leaf(&s, 31), 0);
  CU_ASSERT_EQUAL(fattree_pod_of_leaf(&s, 32), 1);
  CU_ASSERT_EQUAL(fattree_pod_of_leaf(&s, 319), 9);
  CU_ASSERT_EQUAL(fattree_pod_of_leaf(&s, 320), -1);
}

/* ---- shipped sizes --------------------------------------------------------------------- */

static void test_fattree_shipped_sizes(void)
{
  struct fattree_counts c;
  struct fattree_spec tiny = spec_of(16, 8, 2, 8, 0);
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&tiny, &c), 0);
  CU_ASSERT_EQUAL(c.leaves, 4);
  CU_ASSERT_EQUAL(c.spines, 4);
  CU_ASSERT_EQUAL(c.fabric_links, 16 + 16);

  struct fattree_spec ft2 = spec_of(128, 8, 2, 16, 1);
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&ft2, &c), 0);
  CU_ASSERT_EQUAL(c.leaves, 16);
  CU_ASSERT_EQUAL(c.spines, 8);
  CU_ASSERT_EQUAL(c.fabric_links, 128 + 128);

  struct fattree_spec rail = spec_of(1024, 8, 2, 64, 1);
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&rail, &c), 0);
  CU_ASSERT_EQUAL(c.leaves, 32);
  CU_ASSERT_EQUAL(c.spines, 32);
  CU_ASSERT_EQUAL(c.fabric_links, 1024 + 1024);

  struct fattree_spec ft3 = spec_of(10240, 8, 3, 64, 1);
  CU_ASSERT_EQUAL_FATAL(fattree_counts(&ft3, &c), 0);
  CU_ASSERT_EQUAL(c.nodes, 1280);
  CU_ASSERT_EQUAL(c.leaves, 320);
  CU_ASSERT_EQUAL(c.pods, 10);
  CU_ASSERT_EQUAL(c.aggs, 320);
  CU_ASSERT_EQUAL(c.cores, 1024);
  CU_ASSERT_EQUAL(c.fabric_links, 30720);
  CU_ASSERT_EQUAL(c.nvlinks, 10240);
  assert_enumeration_matches_counts(&ft3);
}

static void test_fattree_pgft_string(void)
{
  char buf[64];
  struct fattree_spec s = spec_of(128, 8, 2, 16, 1);
  CU_ASSERT_EQUAL(fattree_pgft(&s, buf, sizeof(buf)), 0);
  CU_ASSERT_STRING_EQUAL(buf, "2;8,16;1,8;1,1");
  s = spec_of(10240, 8, 3, 64, 1);
  CU_ASSERT_EQUAL(fattree_pgft(&s, buf, sizeof(buf)), 0);
  CU_ASSERT_STRING_EQUAL(buf, "3;32,32,10;1,32,32;1,1,1");
}

/* ---- refusals -------------------------------------------------------------------------- */

/* The spec is refused and the message starts with the option's name. */
static void assert_refused(const struct fattree_spec *s, const char *option)
{
  char err[512] = "";
  struct fattree_counts c;
  CU_ASSERT_EQUAL(fattree_spec_check(s, err, sizeof(err)), -1);
  CU_ASSERT_EQUAL(strncmp(err, option, strlen(option)), 0);
  CU_ASSERT_EQUAL(err[strlen(option)], ':');
  CU_ASSERT_EQUAL(fattree_counts(s, &c), -1);
  CU_ASSERT_EQUAL(fattree_leaf_of_gpu(s, 0), -1);
}

static void test_fattree_refuses_impossible_specs(void)
{
  struct fattree_spec s = spec_of(100, 8, 2, 64, 0);
  assert_refused(&s, "gpus-per-node"); /* 100 is not a multiple of 8 */
  s = spec_of(0, 8, 2, 64, 0);
  assert_refused(&s, "gpus");
  s = spec_of(16, 8, 4, 64, 0);
  assert_refused(&s, "tiers");
  s = spec_of(16, 8, 2, 1, 0);
  assert_refused(&s, "radix");
  s = spec_of(4096, 8, 2, 64, 0); /* 128 leaves, a spine has 64 ports */
  assert_refused(&s, "tiers");
  s = spec_of(65536 + 2048, 8, 3, 64, 0); /* 66 pods, a core has 64 ports */
  assert_refused(&s, "tiers");
  s = spec_of(16, 8, 2, 4, 0);
  s.oversub[0] = 4; /* radix 4 at 4:1: d = 3, u = 0 */
  assert_refused(&s, "oversubscription");
  s = spec_of(16, 8, 2, 64, 0);
  s.oversub[0] = 0.5;
  assert_refused(&s, "oversubscription");
  s = spec_of(16, 8, 2, 64, 0);
  s.link_rate_Bps = 0;
  assert_refused(&s, "link-rate");
  s = spec_of(16, 8, 2, 64, 0);
  s.nvlink_rate_Bps = -1;
  assert_refused(&s, "nvlink-rate");
  s = spec_of(16, 8, 2, 64, 0);
  s.switch_latency_s = -1e-9;
  assert_refused(&s, "switch-latency");
  s = spec_of(16, 8, 2, 64, 0);
  strcpy(s.gpu, "TPUv5");
  assert_refused(&s, "gpu");

  /* Exactly at the 2-tier limit is fine: 64 leaves x 32 = 2,048 GPUs. */
  s = spec_of(2048, 8, 2, 64, 0);
  CU_ASSERT_EQUAL(fattree_spec_check(&s, NULL, 0), 0);
}

/* ---- prop setter ----------------------------------------------------------------------- */

static void assert_set_refused(const char *key, const char *value)
{
  struct fattree_spec s;
  char err[256] = "";
  fattree_spec_init(&s);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, key, value, err, sizeof(err)), -1);
  CU_ASSERT_EQUAL(strncmp(err, key, strlen(key)), 0);
}

static void test_fattree_setter_refuses_bad_values(void)
{
  assert_set_refused("link-rate", "400");
  assert_set_refused("link-rate", "-5Gbps");
  assert_set_refused("nvlink-rate", "0GBps");
  assert_set_refused("link-latency", "100");
  assert_set_refused("switch-latency", "-1ns");
  assert_set_refused("gpus", "12x");
  assert_set_refused("rail-optimized", "maybe");
  assert_set_refused("oversubscription", "3:1");
  assert_set_refused("gpu", "TPUv5");
  assert_set_refused("format", "2");
  assert_set_refused("topology", "dragonfly");

  struct fattree_spec s;
  char err[256] = "";
  fattree_spec_init(&s);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "ib/buffer-per-vl", "64KB", err, sizeof(err)), -2);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "pgft", "anything", err, sizeof(err)), 0);
}

static void test_fattree_setter_reads_units(void)
{
  struct fattree_spec s;
  char err[256];
  fattree_spec_init(&s);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "link-rate", "200Gbps", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(s.link_rate_Bps, 25e9, 1);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "nvlink-rate", "900GBps", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(s.nvlink_rate_Bps, 900e9, 1);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "link-latency", "1.5us", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(s.link_latency_s, 1.5e-6, 1e-15);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "oversubscription", "3", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(s.oversub[0], 3, 0);
  CU_ASSERT_DOUBLE_EQUAL(s.oversub[1], 1, 0);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "oversubscription", "1,7", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(s.oversub[0], 1, 0);
  CU_ASSERT_DOUBLE_EQUAL(s.oversub[1], 7, 0);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "gpu", "b200", err, sizeof(err)), 0);
  CU_ASSERT_STRING_EQUAL(s.gpu, "B200");
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "rail-optimized", "1", err, sizeof(err)), 0);
  CU_ASSERT_EQUAL(s.rail_optimized, 1);
}

static void test_fattree_default_nvlink_follows_gpu(void)
{
  struct fattree_spec s;
  char err[256];
  fattree_spec_init(&s);
  CU_ASSERT_DOUBLE_EQUAL(fattree_nvlink_rate(&s), 450e9, 1);
  CU_ASSERT_EQUAL(fattree_spec_set(&s, "gpu", "B200", err, sizeof(err)), 0);
  CU_ASSERT_DOUBLE_EQUAL(fattree_nvlink_rate(&s), 900e9, 1);
}

struct prop_copy {
  struct fattree_spec spec;
  int failures;
};

static void copy_prop(void *ctx, const char *key, const char *value)
{
  struct prop_copy *p = ctx;
  char err[256];
  if (fattree_spec_set(&p->spec, key, value, err, sizeof(err)) != 0)
    p->failures++;
}

static void test_fattree_props_read_back(void)
{
  struct fattree_spec s = spec_of(10240, 8, 3, 64, 1);
  struct prop_copy p;
  char a[64], b[64];
  s.oversub[0] = 1.5;
  s.oversub[1] = 7;
  s.link_rate_Bps = 200e9 / 8;
  s.switch_latency_s = 1.5e-6;
  memset(&p, 0, sizeof(p));
  fattree_spec_init(&p.spec);
  CU_ASSERT_EQUAL(fattree_props(&s, copy_prop, &p), 0);
  CU_ASSERT_EQUAL(p.failures, 0);
  CU_ASSERT_EQUAL(p.spec.gpus, s.gpus);
  CU_ASSERT_EQUAL(p.spec.tiers, 3);
  CU_ASSERT_EQUAL(p.spec.rail_optimized, 1);
  CU_ASSERT_DOUBLE_EQUAL(p.spec.oversub[0], 1.5, 0);
  CU_ASSERT_DOUBLE_EQUAL(p.spec.oversub[1], 7, 0);
  CU_ASSERT_DOUBLE_EQUAL(p.spec.link_rate_Bps, s.link_rate_Bps, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(p.spec.switch_latency_s, s.switch_latency_s, 1e-18);
  CU_ASSERT_DOUBLE_EQUAL(p.spec.nvlink_rate_Bps, 450e9, 1e-3);
  CU_ASSERT_EQUAL(fattree_pgft(&s, a, sizeof(a)), 0);
  CU_ASSERT_EQUAL(fattree_pgft(&p.spec, b, sizeof(b)), 0);
  CU_ASSERT_STRING_EQUAL(a, b);
}

static void test_fattree_formats_units(void)
{
  char buf[32];
  fattree_format_rate(400e9 / 8, 0, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "400Gbps");
  fattree_format_rate(450e9, 1, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "450GBps");
  fattree_format_rate(1.6e12 / 8, 0, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "1.6Tbps");
  fattree_format_time(100e-9, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "100ns");
  fattree_format_time(1.5e-6, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "1.5us");
  fattree_format_time(0, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "0s");
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "fattree";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "test_fattree_kary_three_tier_counts_match_formulas", test_fattree_kary_three_tier_counts_match_formulas },
  { "test_fattree_two_tier_full_counts", test_fattree_two_tier_full_counts },
  { "test_fattree_partial_last_leaf", test_fattree_partial_last_leaf },
  { "test_fattree_oversubscription_splits_ports", test_fattree_oversubscription_splits_ports },
  { "test_fattree_rail_leaf_holds_one_rail", test_fattree_rail_leaf_holds_one_rail },
  { "test_fattree_rail_mapping_formula", test_fattree_rail_mapping_formula },
  { "test_fattree_three_tier_pods", test_fattree_three_tier_pods },
  { "test_fattree_shipped_sizes", test_fattree_shipped_sizes },
  { "test_fattree_pgft_string", test_fattree_pgft_string },
  { "test_fattree_refuses_impossible_specs", test_fattree_refuses_impossible_specs },
  { "test_fattree_setter_refuses_bad_values", test_fattree_setter_refuses_bad_values },
  { "test_fattree_setter_reads_units", test_fattree_setter_reads_units },
  { "test_fattree_default_nvlink_follows_gpu", test_fattree_default_nvlink_follows_gpu },
  { "test_fattree_props_read_back", test_fattree_props_read_back },
  { "test_fattree_formats_units", test_fattree_formats_units },
  { NULL, NULL },
};
