/* Helpers of the RoCE scenario tests: leaf-spine topologies and runs of the RoCE model. */
#ifndef SGFABRIC_TEST_ROCE_SUPPORT_H
#define SGFABRIC_TEST_ROCE_SUPPORT_H

#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "dcqcn.h"
#include "roce.h"
#include "test_support.h"

/* leaves x gpus_per_leaf GPUs (one per node), every leaf linked once to every spine. */
static inline struct topo *leaf_spine(int leaves, int gpus_per_leaf, int spines, double rate_Bps, double lat_s)
{
  struct topo *t = fab_topo_new();
  char name[24];
  int leaf[64], spine[64];
  for (int s = 0; s < spines; s++) {
    snprintf(name, sizeof name, "spine%d", s);
    spine[s] = fab_topo_add_node(t, name, TOPO_SWITCH, 2, -1, 0);
  }
  for (int l = 0; l < leaves; l++) {
    snprintf(name, sizeof name, "leaf%d", l);
    leaf[l] = fab_topo_add_node(t, name, TOPO_SWITCH, 1, -1, 0);
    for (int s = 0; s < spines; s++)
      fab_topo_add_link(t, leaf[l], spine[s], rate_Bps, lat_s, NULL, 0);
  }
  for (int g = 0; g < leaves * gpus_per_leaf; g++) {
    snprintf(name, sizeof name, "gpu%d", g);
    int id = fab_topo_add_node(t, name, TOPO_GPU, 0, g, 0);
    fab_topo_add_link(t, id, leaf[g / gpus_per_leaf], rate_Bps, lat_s, NULL, 0);
  }
  t->gpus_per_node = 1;
  t->switch_latency_s = 300e-9;
  char err[128];
  if (fab_topo_finalize(t, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    abort();
  }
  return t;
}

struct flow_def {
  int src, dst;
  double bytes, start_s;
};

struct run_result {
  double fct[4096];
  double mean_fct, max_fct;
  int done;
  double delivered;
  uint64_t drops, pauses, marks, cnps, random_drops, buffer_drops;
  double paused_s, retrans_B, peak_buffer, sim_s;
  double timeouts;         /* go-back-N timeouts (flow fidelity: those its transfers waited) */
  double fluid_peak_queue; /* flow fidelity, fluid DCQCN: the largest fluid queue (sg_roce_get_fluid_peak_queue) */
  int estimated;           /* flow fidelity: the estimates below exist (sg_roce_get_flow_estimates) */
  double est_marks, est_cnps, est_cuts, est_paused_s;
  uint64_t pass_flows;                 /* flow fidelity: flows the cap passes visited (sg_roce_get_flow_pass_flows) */
  uint64_t held_measures, held_phases; /* flow fidelity: held-port measures, their phases run */
  uint64_t recomputations;             /* flow fidelity: the flow engine's max-min recomputations */
};

static inline void rr_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct run_result *r = ctx;
  r->fct[flow->id] = flow->finish_s - flow->post_s;
  r->done++;
  r->delivered += flow->bytes;
}

static inline struct param_set *roce_params_with(const char *const *cfg)
{
  sg_roce_plugin_init();
  struct param_set *ps = fab_param_set_new();
  char err[256];
  for (int i = 0; cfg && cfg[i]; i++)
    if (fab_param_set_cfg(ps, cfg[i], err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      abort();
    }
  return ps;
}

/* Runs flows over topo with the RoCE model; cfg is a NULL-terminated list of --cfg values. */
static inline void roce_run(struct topo *t, fab_fidelity fid, uint64_t seed, const char *const *cfg,
                            const struct flow_def *flows, int n, struct run_result *r)
{
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  memset(r, 0, sizeof *r);
  struct fabric *fab = fabric_new(t, ps, roce_model(), fid, seed, err, sizeof err);
  if (fab == NULL) {
    fprintf(stderr, "%s\n", err);
    abort();
  }
  for (int i = 0; i < n; i++)
    fabric_post(fab, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_s, 0, rr_done, r);
  fabric_run(fab);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    sum += r->fct[i];
    if (r->fct[i] > r->max_fct)
      r->max_fct = r->fct[i];
  }
  r->mean_fct = sum / n;
  r->drops = fab->stats.drops;
  r->pauses = sg_roce_get_pause_frames(fab);
  r->paused_s = sg_roce_get_paused_time(fab);
  r->marks = sg_roce_get_ecn_marks(fab);
  r->cnps = sg_roce_get_cnps(fab);
  r->random_drops = sg_roce_get_random_drops(fab);
  r->buffer_drops = sg_roce_get_buffer_drops(fab);
  r->retrans_B = sg_roce_get_retransmitted_bytes(fab);
  r->timeouts = sg_roce_get_timeouts(fab);
  r->peak_buffer = sg_roce_get_peak_buffer(fab);
  r->fluid_peak_queue = sg_roce_get_fluid_peak_queue(fab);
  r->sim_s = fab->now;
  r->recomputations = fab->stats.rate_updates;
  r->pass_flows = sg_roce_get_flow_pass_flows(fab);
  r->held_measures = sg_roce_get_held_measures(fab, &r->held_phases);
  r->estimated = sg_roce_get_flow_estimates(fab, &r->est_marks, &r->est_cnps, &r->est_cuts, &r->est_paused_s) == 0;
  fabric_free(fab);
  fab_param_set_free(ps);
}

#endif
