/* sgfabric run: replay one training iteration of a workload trace on a platform and fabric, and
 * report MFU, the iteration's breakdown, the collectives and the fabric's counters. */
#include <math.h>
#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_params.h"
#include "commands.h"
#include "deployment.h"
#include "replay.h"
#include "results.h"
#include "run_common.h"
#include "wl_model.h"

static const enum wl_group reported_groups[] = {WL_GROUP_TP, WL_GROUP_PP, WL_GROUP_DP, WL_GROUP_EP, WL_GROUP_CP,
                                                WL_GROUP_DP_EP};

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric run --platform P.xml --workload W [--deployment D.xml] --fabric ideal|ib|roce\n"
               "                    [--fidelity packet|flow] [--seed N] [--cfg=area/name:value ...] --out DIR\n\n"
               "Replays one training iteration of workload W (a trace from sgfabric workload, or simai:FILE)\n"
               "and writes DIR/summary.json (MFU, iteration time and breakdown, collectives, fabric counters)\n"
               "and DIR/manifest.json.\n\n");
  run_print_common_usage(out);
  fprintf(out, "  --workload SPEC          trace file, or simai:FILE for a SimAI/AICB workload\n"
               "  --deployment FILE        rank placement (SimGrid deployment XML; default: rank r on gpu r)\n"
               "  --progress               progress on stderr (default: when stderr is a terminal)\n");
}

static void write_group_object(FILE *f, const char *name, const double *per_group, const char *indent)
{
  fprintf(f, "%s\"%s\": {", indent, name);
  for (size_t i = 0; i < sizeof reported_groups / sizeof reported_groups[0]; i++)
    fprintf(f, "%s\"%s\": %s", i ? ", " : "", wl_group_name(reported_groups[i]), JSON_NUMBER(per_group[reported_groups[i]]));
  fprintf(f, "}");
}

static void write_summary(FILE *f, const struct run_options *o, const struct run_setup *s, const struct wl_trace *t,
                          const struct gpu_type *gpu, const struct replay_results *res)
{
  double iteration = res->iteration_s;
  int gpus = t->layout.gpus;
  double mfu = iteration > 0 ? t->model_flops / (iteration * gpus * gpu->bf16_dense_flops) : 0;
  double hfu = iteration > 0 ? t->hardware_flops / (iteration * gpus * gpu->bf16_dense_flops) : 0;
  double tokens = (double)t->global_batch * t->model.seq;
  fprintf(f, "{\n");
  run_write_summary_head(f, o, s, iteration);
  fprintf(f, "  \"workload\": {\"model\": ");
  json_string(f, t->model.name);
  fprintf(f, ", \"gpus\": %d, \"tp\": %d, \"pp\": %d, \"vpp\": %d, \"dp\": %d, \"ep\": %d, \"cp\": %d, \"gpu\": ", gpus,
          t->layout.tp, t->layout.pp, t->layout.vpp, t->layout.dp, t->layout.ep, t->layout.cp);
  json_string(f, gpu->name);
  fprintf(f, ", \"seq\": %d, \"micro_batch\": %d, \"global_batch\": %ld, \"microbatches\": %d, \"recompute\": %s},\n",
          t->model.seq, t->micro_batch, t->global_batch, t->microbatches, t->recompute ? "true" : "false");
  fprintf(f, "  \"iteration_time_s\": %s,\n", JSON_NUMBER(iteration));
  fprintf(f, "  \"mfu\": %s,\n  \"hfu\": %s,\n", JSON_NUMBER(mfu), JSON_NUMBER(hfu));
  fprintf(f, "  \"tokens_per_s\": %s,\n", JSON_NUMBER(iteration > 0 ? tokens / iteration : 0));
  fprintf(f, "  \"model_flops\": %s,\n  \"hardware_flops\": %s,\n", JSON_NUMBER(t->model_flops), JSON_NUMBER(t->hardware_flops));
  fprintf(f, "  \"breakdown\": {\n    \"compute_s\": %s,\n", JSON_NUMBER(res->compute_s));
  write_group_object(f, "exposed_comm_s", res->exposed_s, "    ");
  fprintf(f, ",\n    \"bubble_s\": %s,\n    \"straggler_s\": %s,\n    \"other_s\": %s\n  },\n",
          JSON_NUMBER(res->bubble_s), JSON_NUMBER(res->straggler_s), JSON_NUMBER(res->other_s));
  fprintf(f, "  \"slowest_rank\": {\"rank\": %d, \"gpu\": %d, \"stage\": %d, \"end_s\": %s, "
             "\"typical_end_s\": %s,\n", res->slowest.rank, res->slowest.gpu, res->slowest.stage, JSON_NUMBER(iteration),
          JSON_NUMBER(res->typical_end_s));
  write_group_object(f, "exposed_comm_s", res->slowest.exposed_s, "    ");
  fprintf(f, "},\n");
  fprintf(f, "  \"collectives\": [");
  int first = 1;
  for (int k = 0; k < COLL_KIND_COUNT; k++)
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
      const struct replay_coll_stats *c = &res->coll[k][g];
      if (c->count == 0)
        continue;
      fprintf(f, "%s\n    {\"op\": \"%s\", \"group\": \"%s\", \"count\": %ld, \"bytes\": %s, \"time_s\": %s, ",
              first ? "" : ",", coll_kind_name((enum coll_kind)k), wl_group_name((enum wl_group)g), c->count, JSON_NUMBER(c->bytes),
              JSON_NUMBER(c->time_s));
      fprintf(f, "\"algbw_GBps\": %s, \"busbw_GBps\": %s, \"algorithm\": \"",
              JSON_NUMBER(c->time_s > 0 ? c->bytes / c->time_s / 1e9 : 0), JSON_NUMBER(c->busbw_sum / c->count / 1e9));
      for (int a = 0, sep = 0; a <= COLL_ALGO_HIERARCHICAL; a++)
        if (c->algo_mask & (1 << a))
          fprintf(f, "%s%s", sep++ ? "+" : "", coll_algo_name((enum coll_algo)a));
      fprintf(f, "\"}");
      first = 0;
    }
  for (int g = 0; g < WL_GROUP_COUNT; g++) {
    const struct replay_coll_stats *c = &res->p2p[g];
    if (c->count == 0)
      continue;
    fprintf(f, "%s\n    {\"op\": \"sendrecv\", \"group\": \"%s\", \"count\": %ld, \"bytes\": %s}", first ? "" : ",",
            wl_group_name((enum wl_group)g), c->count, JSON_NUMBER(c->bytes));
    first = 0;
  }
  fprintf(f, "\n  ],\n");
  double fabric_bytes[WL_GROUP_COUNT] = {0}, nvlink_bytes[WL_GROUP_COUNT] = {0};
  for (int g = 0; g < WL_GROUP_COUNT && g < FAB_MAX_TAGS; g++) {
    fabric_bytes[g] = s->fab->stats.fabric_bytes[g];
    nvlink_bytes[g] = s->fab->stats.nvlink_bytes[g];
  }
  write_group_object(f, "fabric_bytes_by_group", fabric_bytes, "  ");
  fprintf(f, ",\n");
  write_group_object(f, "nvlink_bytes_by_group", nvlink_bytes, "  ");
  fprintf(f, ",\n  \"counters\": {\n");
  fabric_write_counters(s->fab, f, "    ");
  fprintf(f, "  }\n}\n");
}

int cmd_run(int argc, char **argv)
{
  struct run_options o;
  run_options_init(&o);
  const char *workload = NULL, *deployment = NULL;
  int progress = isatty(2);
  char err[1024];
  for (int i = 1; i < argc; i++) {
    int r = run_common_option(&o, argc, argv, &i, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "sgfabric run: %s\n", err);
      return 2;
    }
    if (r > 0)
      continue;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--workload") && i + 1 < argc)
      workload = argv[++i];
    else if (!strcmp(argv[i], "--deployment") && i + 1 < argc)
      deployment = argv[++i];
    else if (!strcmp(argv[i], "--progress"))
      progress = 1;
    else if (!strcmp(argv[i], "--no-progress"))
      progress = 0;
    else {
      fprintf(stderr, "sgfabric run: unknown option '%s' (see sgfabric run --help)\n", argv[i]);
      return 2;
    }
  }
  if (workload == NULL || o.out == NULL || o.platform == NULL) {
    fprintf(stderr, "sgfabric run: --platform, --workload and --out are required (see sgfabric run --help)\n");
    return 2;
  }
  struct wl_trace *trace = wl_trace_open(workload, err, sizeof err);
  if (trace == NULL) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    return 1;
  }
  struct run_setup s;
  int *rank_gpu = NULL;
  int rc = 1;
  if (run_setup_load(&o, &s, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  const struct gpu_type *gpu = gpu_type_find(trace->gpu[0] ? trace->gpu : s.platform->gpu_type);
  if (gpu == NULL) {
    fprintf(stderr, "sgfabric run: %s: unknown GPU type '%s'\n", workload, trace->gpu);
    goto out;
  }
  int n_gpus = s.platform->topo->n_gpus;
  if (trace->layout.gpus > n_gpus) {
    fprintf(stderr, "sgfabric run: %s: the workload has %d ranks but the platform %s has %d GPUs\n", workload,
            trace->layout.gpus, o.platform, n_gpus);
    goto out;
  }
  rank_gpu = deployment ? deployment_load(deployment, trace->layout.gpus, n_gpus, err, sizeof err)
                        : deployment_linear(trace->layout.gpus);
  if (rank_gpu == NULL) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }

  run_simgrid_start(&s, "sgfabric");
  struct replay_config cfg = {.trace = trace, .fab = s.fab, .rank_gpu = rank_gpu, .gpu = gpu, .progress = progress};
  wl_compute_params_init(&cfg.compute);
  coll_params_from(s.params, &cfg.coll);
  if (replay_start(&cfg, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  simgrid_run();
  struct replay_results res;
  if (replay_finish(&res, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s: %s\n", workload, err);
    goto out;
  }

  struct results r;
  if (results_begin(&r, o.out, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  FILE *f = results_open(&r, "summary.json");
  int failed = f == NULL;
  if (f) {
    write_summary(f, &o, &s, trace, gpu, &res);
    failed |= results_close(f) != 0;
  }
  const char *path = strncmp(workload, "simai:", 6) == 0 ? workload + 6 : workload;
  const char *inputs[3] = {o.platform, path, deployment};
  failed |= run_write_common_results(&r, &s, argc, argv, inputs, deployment ? 3 : 2, o.seed) != 0;
  if (failed) {
    fprintf(stderr, "sgfabric run: cannot write the results\n");
    results_abort(&r);
    goto out;
  }
  if (results_commit(&r, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  if (isatty(1) || getenv("SGF_PRINT_SUMMARY"))
    printf("%s on %s: iteration %.4f s, MFU %.2f%%\n", o.fabric, o.platform, res.iteration_s,
           100 * trace->model_flops / (res.iteration_s * trace->layout.gpus * gpu->bf16_dense_flops));
  rc = 0;
out:
  free(rank_gpu);
  run_setup_free(&s);
  wl_trace_free(trace);
  return rc;
}
