/* The flow engine's cap-change recomputations: fabric_flow_caps_changed_for (only the components
 * of the flows whose cap changed) against fabric_flow_caps_changed (every active flow).
 *
 * A model caps one flow at half its max-min rate once every flow is active. Both calls must give
 * the same rates, bit for bit, and the same completion times; the targeted one must visit
 * exactly the capped flow's component (stats.flows_recomputed), the global one every flow. */
#include <CUnit/Basic.h>
#include <string.h>

#include "test_support.h"
#include "cunit_main.h"

#define N_FLOWS 8

/* Senders and receivers on distinct nodes of ft2-128 (8 GPUs per node): pairs 0 and 1 share a
 * receiver, so the capped flow (0) has a component of at least 2 flows; the others are spread
 * so that the fabric has several components. */
static const int SRC[N_FLOWS] = { 8, 16, 40, 56, 72, 88, 104, 120 };
static const int DST[N_FLOWS] = { 0, 0, 32, 48, 64, 80, 96, 112 };

struct capper {
  int targeted; /* 1: fabric_flow_caps_changed_for, 0: fabric_flow_caps_changed */
  int phase;    /* 0: waiting for every flow, 1: capped, 2: recomputed */
  struct fab_flow *flows[N_FLOWS];
  uint64_t recomputed_before;
  uint64_t recomputed_by_cap; /* flows visited by the recomputation the cap change caused */
  double rate_before[N_FLOWS], rate_after[N_FLOWS];
  double fct[N_FLOWS];
  int done;
};

static struct capper *the_capper;

static void capper_on_rates(struct fabric *fab)
{
  struct capper *c = the_capper;
  size_t n;
  fabric_active_flows(fab, &n);
  if (c->phase == 0 && n == N_FLOWS) {
    for (int i = 0; i < N_FLOWS; i++)
      c->rate_before[i] = c->flows[i]->rate_Bps;
    c->flows[0]->rate_cap_Bps = 0.5 * c->flows[0]->rate_Bps;
    c->recomputed_before = fab->stats.flows_recomputed;
    if (c->targeted)
      fabric_flow_caps_changed_for(fab, &c->flows[0], 1);
    else
      fabric_flow_caps_changed(fab);
    c->phase = 1;
  } else if (c->phase == 1) {
    c->recomputed_by_cap = fab->stats.flows_recomputed - c->recomputed_before;
    for (int i = 0; i < N_FLOWS; i++)
      c->rate_after[i] = c->flows[i]->rate_Bps;
    c->phase = 2;
  }
}

static void capper_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct capper *c = ctx;
  for (int i = 0; i < N_FLOWS; i++)
    if (c->flows[i] == flow)
      c->fct[i] = flow->finish_s - flow->post_s;
  c->done++;
}

/* Flows of the capped flow's component, from the paths (flows linked by shared ports). */
static int component_size(struct fab_flow *const *flows)
{
  int in[N_FLOWS] = { 1 };
  for (int grew = 1; grew;) {
    grew = 0;
    for (int i = 0; i < N_FLOWS; i++)
      for (int j = 0; j < N_FLOWS && !in[i]; j++)
        if (in[j])
          for (int a = 0; a < flows[i]->hops && !in[i]; a++)
            for (int b = 0; b < flows[j]->hops; b++)
              if (flows[i]->path[a] == flows[j]->path[b]) {
                in[i] = grew = 1;
                break;
              }
  }
  int size = 0;
  for (int i = 0; i < N_FLOWS; i++)
    size += in[i];
  return size;
}

static void run(struct platform *p, struct capper *c, int targeted, int *component)
{
  struct param_set *params = default_params();
  char err[256];
  struct fab_model model = fab_model_ideal;
  model.flow.on_rates = capper_on_rates;
  memset(c, 0, sizeof *c);
  c->targeted = targeted;
  the_capper = c;
  struct fabric *fab = fabric_new(p->topo, params, &model, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  for (int i = 0; i < N_FLOWS; i++)
    c->flows[i] = fabric_post(fab, SRC[i], DST[i], 4e6, 0, 0, capper_done, c);
  fabric_advance(fab, fab->nic_latency_s); /* every flow started (after the NIC latency), rates
                                            computed, the cap set and applied */
  CU_ASSERT_EQUAL_FATAL(c->phase, 2);
  *component = component_size(c->flows);
  fabric_run(fab);
  CU_ASSERT_EQUAL(c->done, N_FLOWS);
  fabric_free(fab);
  fab_param_set_free(params);
}

static void test_caps_changed_for_matches_full_recompute(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  static struct capper full, targeted;
  int component_full, component;
  run(p, &full, 0, &component_full);
  run(p, &targeted, 1, &component);
  CU_ASSERT_EQUAL(component, component_full);
  /* the case has what the test needs: a capped component of several flows, and others */
  CU_ASSERT_TRUE(component >= 2);
  CU_ASSERT_TRUE(component < N_FLOWS);
  /* the cap bites: flow 0 slows down, and some flow of its component speeds up */
  CU_ASSERT_TRUE(targeted.rate_after[0] < targeted.rate_before[0]);
  int faster = 0;
  for (int i = 1; i < N_FLOWS; i++)
    faster += targeted.rate_after[i] > targeted.rate_before[i];
  CU_ASSERT_TRUE(faster >= 1);
  /* same rates, bit for bit, and same completion times */
  for (int i = 0; i < N_FLOWS; i++) {
    CU_ASSERT_EQUAL(targeted.rate_after[i], full.rate_after[i]);
    CU_ASSERT_EQUAL(targeted.fct[i], full.fct[i]);
  }
  /* the full recomputation visits every flow, the targeted one the capped component only */
  CU_ASSERT_EQUAL(full.recomputed_by_cap, N_FLOWS);
  CU_ASSERT_EQUAL(targeted.recomputed_by_cap, (uint64_t)component);
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "flow_caps";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "caps_changed_for_matches_full_recompute", test_caps_changed_for_matches_full_recompute },
  { NULL, NULL },
};
