/* The "why" accounting (why.h): collisions of one collective's transfers on switch links, flows
 * per link, the busiest links and their groups, on tiny-16 (4 GPUs per leaf, 4 spines). */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "why.h"
#include "cunit_main.h"

/* Eight concurrent transfers from leaf0's GPUs to leaf2's, distinct pairs, each posted `steps`
 * times (a ring's steps between the same two GPUs); call(i) is the collective instance of
 * transfer i, tag(i) its group. Returns why.json's text (to free). */
static char *run_why_steps(uint32_t (*call)(int i), int (*tag)(int i), int enable, int steps)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *params = default_params();
  char err[256];
  struct fabric *fab = fabric_new(p->topo, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  if (enable)
    CU_ASSERT_EQUAL_FATAL(fab_why_enable(fab), 0);
  for (int i = 0; i < 8; i++)
    for (int s = 0; s < steps; s++) {
      struct fab_flow *f = fabric_post(fab, i % 4, 8 + (i + i / 4) % 4, 1 << 20, s * 1e-3, tag(i), NULL, NULL);
      f->call = call(i);
    }
  fab_why_sample(fab, 0);
  fabric_run(fab);
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  const char *names[FAB_MAX_TAGS] = { "tp", "pp", "dp" };
  int rc = fab_why_write_json(fab, out, fab->now, names, FAB_MAX_TAGS);
  CU_ASSERT_EQUAL(rc, enable ? 0 : -1);
  fclose(out);
  fabric_free(fab);
  fab_param_set_free(params);
  platform_free(p);
  return text;
}

static char *run_why_tagged(uint32_t (*call)(int i), int (*tag)(int i), int enable)
{
  return run_why_steps(call, tag, enable, 1);
}

static int dp_tag(int i) { return (void)i, 2; }
/* half the transfers data-parallel, half pipeline */
static int two_tags(int i) { return 1 + i % 2; }

static char *run_why(uint32_t (*call)(int i), int enable) { return run_why_tagged(call, dp_tag, enable); }

static long key(const char *text, const char *name)
{
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\": ", name);
  const char *p = strstr(text, pattern);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  return strtol(p + strlen(pattern), NULL, 10);
}

static uint32_t one_call(int i) { return (void)i, 1; }
static uint32_t own_call(int i) { return (uint32_t)i + 1; }
static uint32_t no_call(int i) { return (void)i, 0; }

static void test_why_collisions(void)
{
  /* 8 transfers over leaf0's 4 uplinks: some share one (pigeonhole), each with a distinct pair */
  char *text = run_why(one_call, 1);
  CU_ASSERT_EQUAL(key(text, "collective_edges"), 8);
  long shared = key(text, "collective_edges_sharing_link");
  CU_ASSERT(shared >= 5 && shared <= 8);
  CU_ASSERT(key(text, "flows_per_switch_link_max") >= 2);
  CU_ASSERT_EQUAL(key(text, "collective_edges_sharing_link_in_group"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"groups\": {\"dp\": "));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"paths_known\": true"));
  free(text);
  /* the same links, but each transfer its own collective of one group (eight data-parallel
   * rings, say): no collision inside a collective, the same ones between collectives */
  text = run_why(own_call, 1);
  CU_ASSERT_EQUAL(key(text, "collective_edges"), 8);
  CU_ASSERT_EQUAL(key(text, "collective_edges_sharing_link"), 0);
  CU_ASSERT_EQUAL(key(text, "collective_edges_sharing_link_in_group"), shared);
  free(text);
  /* collectives of two groups: only a collision between two of one group counts */
  text = run_why_tagged(own_call, two_tags, 1);
  long in_group = key(text, "collective_edges_sharing_link_in_group");
  CU_ASSERT(in_group > 0 && in_group < shared);
  free(text);
  /* a ring's steps between the same two GPUs are one edge: three steps each, 1 ms apart (after
   * the one before has drained), are 8 edges, as the single transfers were, not 24; each step may
   * hash to another up-link, but an edge that collides counts once however many of its steps do */
  text = run_why_steps(one_call, dp_tag, 1, 3);
  CU_ASSERT_EQUAL(key(text, "collective_edges"), 8);
  long shared_steps = key(text, "collective_edges_sharing_link");
  CU_ASSERT(shared_steps >= 5 && shared_steps <= 8);
  free(text);
  /* transfers outside collectives are no edges */
  text = run_why(no_call, 1);
  CU_ASSERT_EQUAL(key(text, "collective_edges"), 0);
  free(text);
  /* off unless enabled */
  text = run_why(one_call, 0);
  free(text);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "why";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "why_collisions", test_why_collisions },
  { NULL, NULL },
};
