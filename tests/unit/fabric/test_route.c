/* Fat-tree routing: every path the candidates allow is minimal and up-down. */
#include <CUnit/Basic.h>
#include <string.h>

#include "route.h"
#include "test_support.h"
#include "cunit_main.h"

/* Lowest level whose switches reach both leaves going down: the turning point of a minimal
 * up-down path. */
static int turning_level(const struct topo *t, int a, int b)
{
  int leaf_a = t->gpu_leaf[a], leaf_b = t->gpu_leaf[b];
  if (leaf_a == leaf_b)
    return 1;
  for (int level = 2; level <= t->max_level; level++)
    for (int n = 0; n < t->n_nodes; n++)
      if (t->nodes[n].kind == TOPO_SWITCH && t->nodes[n].level == level && topo_downset_has(t, n, leaf_a) &&
          topo_downset_has(t, n, leaf_b))
        return level;
  return -1;
}

struct walk {
  const struct topo *t;
  int dst;
  int expected_hops;
  long paths;
  int bad;
};

/* Depth-first over every candidate: checks length and that the levels go up then down. */
static void walk(struct walk *w, int node, int hops, int going_down, int prev_level)
{
  if (node == w->t->gpu_node[w->dst]) {
    w->paths++;
    if (hops != w->expected_hops)
      w->bad++;
    return;
  }
  if (hops > w->expected_hops) {
    w->bad++;
    return;
  }
  int cand[ROUTE_MAX_CANDIDATES];
  int n = fab_route_candidates(w->t, node, w->dst, cand, ROUTE_MAX_CANDIDATES);
  if (n == 0)
    w->bad++;
  for (int i = 0; i < n; i++) {
    int next = w->t->ports[cand[i]].peer_node;
    int level = w->t->nodes[next].level;
    int down = level < prev_level;
    if (going_down && !down)
      w->bad++; /* up after down: not an up-down path */
    walk(w, next, hops + 1, going_down || down, level);
  }
}

static void check_all_pairs(const struct platform *p, int stride)
{
  const struct topo *t = p->topo;
  long checked = 0;
  for (int a = 0; a < t->n_gpus; a += stride)
    for (int b = 0; b < t->n_gpus; b++) {
      if (a == b || a / t->gpus_per_node == b / t->gpus_per_node)
        continue;
      struct walk w = { t, b, 2 * turning_level(t, a, b), 0, 0 };
      walk(&w, t->gpu_node[a], 0, 0, 0);
      CU_ASSERT_EQUAL(w.bad, 0);
      CU_ASSERT(w.paths >= 1);
      checked++;
    }
  CU_ASSERT(checked > 0);
}

static void test_route_two_tier_minimal_up_down(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  check_all_pairs(p, 7);
  /* Across leaves, one path per spine. */
  const struct topo *t = p->topo;
  int a = 0, b = 8 * 8; /* node 8: another rail group, same rail */
  CU_ASSERT_NOT_EQUAL(t->gpu_leaf[a], t->gpu_leaf[b]);
  struct walk w = { t, b, 4, 0, 0 };
  walk(&w, t->gpu_node[a], 0, 0, 0);
  CU_ASSERT_EQUAL(w.paths, 8); /* ft2-128: 8 spines */
  platform_free(p);
}

static void test_route_three_tier_minimal_up_down(void)
{
  const char *opts[] = { "--gpus", "128", "--gpus-per-node", "4", "--tiers", "3", "--radix", "8" };
  struct platform *p = load_generated(opts, 8);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  CU_ASSERT_EQUAL(t->max_level, 3);
  check_all_pairs(p, 5);
  /* Across pods a k-ary fat-tree of radix k has (k/2)^2 minimal paths. */
  int a = 0, b = t->n_gpus - 1;
  CU_ASSERT_EQUAL(turning_level(t, a, b), 3);
  struct walk w = { t, b, 6, 0, 0 };
  walk(&w, t->gpu_node[a], 0, 0, 0);
  CU_ASSERT_EQUAL(w.bad, 0);
  CU_ASSERT_EQUAL(w.paths, 16);
  platform_free(p);
}

static void test_route_intra_node_uses_nvlink(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  int ports[ROUTE_MAX_HOPS];
  int hops = fab_route_hashed_path(t, 1, 6, 99, 1, ports, ROUTE_MAX_HOPS);
  CU_ASSERT_EQUAL(hops, 2);
  CU_ASSERT(t->ports[ports[0]].is_nvlink && t->ports[ports[1]].is_nvlink);
  hops = fab_route_hashed_path(t, 1, 9, 99, 1, ports, ROUTE_MAX_HOPS);
  CU_ASSERT_EQUAL(hops, 4);
  for (int h = 0; h < hops; h++)
    CU_ASSERT(!t->ports[ports[h]].is_nvlink);
  platform_free(p);
}

static void test_route_hash_spreads_flows(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  int used[64] = { 0 };
  int ports[ROUTE_MAX_HOPS];
  for (uint64_t key = 0; key < 800; key++) {
    int hops = fab_route_hashed_path(t, 0, 64, key, 5, ports, ROUTE_MAX_HOPS);
    CU_ASSERT_EQUAL_FATAL(hops, 4);
    int spine = t->ports[ports[1]].peer_node;
    used[spine % 64]++;
  }
  int distinct = 0;
  for (int i = 0; i < 64; i++)
    distinct += used[i] > 0;
  CU_ASSERT_EQUAL(distinct, 8);
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "route";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "route_two_tier_minimal_up_down", test_route_two_tier_minimal_up_down },
  { "route_three_tier_minimal_up_down", test_route_three_tier_minimal_up_down },
  { "route_intra_node_uses_nvlink", test_route_intra_node_uses_nvlink },
  { "route_hash_spreads_flows", test_route_hash_spreads_flows },
  { NULL, NULL },
};
