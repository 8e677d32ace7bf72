/* sgfabric run: replay one training iteration of a workload trace on a platform and fabric, and
 * report MFU, the iteration's breakdown, the collectives and the fabric's counters. */
#include <errno.h>
#include <math.h>
#include <simgrid/engine.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "coll_params.h"
#include "background.h"
#include "placement.h"
#include "commands.h"
#include "deployment.h"
#include "replay.h"
#include "straggler.h"
#include "compute_params.h"
#include "results.h"
#include "why.h"
#include "failure.h"
#include "run_common.h"
#include "wl_memory.h"
#include "wl_model.h"

/* Every group a workload can use: MICRO SimAI files run on world. */
static const enum wl_group reported_groups[] = { WL_GROUP_TP,    WL_GROUP_PP,    WL_GROUP_DP,  WL_GROUP_EP, WL_GROUP_CP,
                                                 WL_GROUP_DP_EP, WL_GROUP_WORLD, WL_GROUP_EMB, WL_GROUP_MP };

enum {
  RUN_OPT_WORKLOAD,
  RUN_OPT_DEPLOYMENT,
  RUN_OPT_PROGRESS,
  RUN_OPT_NO_PROGRESS,
  RUN_OPT_TIMELINE,
  RUN_OPT_TIMELINE_MAX,
  RUN_OPT_TIMELINE_LINKS,
  RUN_OPT_IGNORE_MEMORY,
  RUN_OPT_WHY,
  RUN_OPT_BACKGROUND,
  RUN_OPT_PLACEMENT,
  RUN_OPT_NO_ALONE
};

static const struct cli_option run_options[] = {
  { "workload", 0, CLI_VALUE, RUN_OPT_WORKLOAD, "SPEC",
    "trace file, simai:FILE (SimAI/AICB), or chakra:PREFIX (Chakra ET files PREFIX.N.et); given again, "
    "another job on the same fabric (at most 8; summary.json gains \"jobs\")" },
  { "placement", 0, CLI_VALUE, RUN_OPT_PLACEMENT, "POLICY",
    "where the jobs' ranks go: contiguous (default: GPU by GPU), rail-aligned (whole nodes), fragmented "
    "(whole nodes dealt round-robin), random (seeded)" },
  { "no-alone", 0, CLI_FLAG, RUN_OPT_NO_ALONE, NULL,
    "with several jobs, do not also simulate each one alone (no slowdown figures; one simulation instead of 1 + "
    "jobs)" },
  { "deployment", 0, CLI_VALUE, RUN_OPT_DEPLOYMENT, "FILE",
    "rank placement (SimGrid deployment XML; default: rank r on gpu r)" },
  { "progress", 0, CLI_FLAG, RUN_OPT_PROGRESS, NULL, "progress on stderr (default: when stderr is a terminal)" },
  { "no-progress", 0, CLI_FLAG, RUN_OPT_NO_PROGRESS, NULL, "no progress" },
  { "timeline", 0, CLI_FLAG, RUN_OPT_TIMELINE, NULL,
    "also write DIR/timeline.json, the iteration's spans (trace-event JSON for Perfetto, chrome://tracing)" },
  { "timeline-max-events", 0, CLI_VALUE, RUN_OPT_TIMELINE_MAX, "N",
    "spans the timeline keeps at most, later ones are dropped with a warning (default 5000000)" },
  { "timeline-links", 0, CLI_VALUE, RUN_OPT_TIMELINE_LINKS, "US",
    "with --timeline: sample every link direction's utilisation every US microseconds into it" },
  { "why", 0, CLI_FLAG, RUN_OPT_WHY, NULL,
    "also write DIR/why.json: flows per link, collisions of collectives' transfers, busiest links, heatmap" },
  { "ignore-memory", 0, CLI_FLAG, RUN_OPT_IGNORE_MEMORY, NULL,
    "run a job that does not fit in GPU memory (with a warning) instead of refusing it" },
  { "background", 0, CLI_VALUE, RUN_OPT_BACKGROUND, "FILE",
    "background traffic beside the job (storage, checkpoints, another tenant): a flow file as sgfabric flows "
    "takes (src,dst,bytes,start_us); summary.json gains \"background\"" },
  CLI_TABLE_END,
};

/* Above this many GPUs packet fidelity takes long (docs/compare.md, "Fidelity"). */
#define PACKET_FIDELITY_WARN_GPUS 256

static void usage(FILE *out)
{
  fprintf(out,
          "usage: sgfabric run --platform P.xml --workload W [--deployment D.xml] [--fabric maxmin|ib|roce]\n"
          "                    [--fidelity flow|packet] [--seed N] [--cfg area/name:value ...] [--timeline] -o DIR\n\n"
          "Replays one training iteration of workload W (a trace from sgfabric workload, simai:FILE or chakra:PREFIX)\n"
          "and writes DIR/summary.json (MFU, iteration time and breakdown, collectives, fabric counters)\n"
          "and DIR/manifest.json (with --timeline also DIR/timeline.json, with --why DIR/why.json); prints MFU, "
          "iteration time and DIR on one line. Default fidelity: flow.\n"
          "Options take their value as --name value or --name=value.\n\n");
  run_print_common_usage(out);
  cli_print_options(out, run_options, NULL);
  fprintf(out, "  -h, --help                 this help\n");
  run_print_exit_status(out);
}

/* One job of the run: its workload, its trace and GPU, memory, placement and results. */
struct run_job {
  const char *spec;
  struct wl_trace *trace;
  const struct gpu_type *gpu;
  struct wl_memory mem_storage, *mem; /* mem: NULL when the workload has no model dimensions */
  int *rank_gpu;
  struct replay_results res;
  int index;                /* replay_start's */
  pid_t alone_pid;          /* the child simulating the job alone, 0 if none */
  int alone_fd;             /* where it writes its iteration time */
  double alone_iteration_s; /* -1 until known */
};

static void write_group_object(FILE *f, const char *name, const double *per_group, const char *indent)
{
  fprintf(f, "%s\"%s\": {", indent, name);
  for (size_t i = 0; i < sizeof reported_groups / sizeof reported_groups[0]; i++)
    fprintf(f, "%s\"%s\": %s", i ? ", " : "", wl_group_name(reported_groups[i]),
            JSON_NUMBER(per_group[reported_groups[i]]));
  fprintf(f, "}");
}

/* "memory": the per-GPU breakdown of the stage that needs the most (wl_memory.h), or null when the
 * workload does not carry the model's dimensions (SimAI, Chakra). */
static void write_memory(FILE *f, const struct wl_memory *mem)
{
  if (mem == NULL) {
    fprintf(f, "  \"memory\": null,\n");
    return;
  }
  fprintf(f, "  \"memory\": {\"stage\": %d, \"weights_bytes\": %s, \"gradients_bytes\": %s, ", mem->stage,
          JSON_NUMBER(mem->weights), JSON_NUMBER(mem->gradients));
  fprintf(f, "\"optimizer_bytes\": %s, \"activations_bytes\": %s, ", JSON_NUMBER(mem->optimizer),
          JSON_NUMBER(mem->activations));
  fprintf(f, "\"other_bytes\": %s, \"total_bytes\": %s, ", JSON_NUMBER(mem->other), JSON_NUMBER(mem->total));
  fprintf(f, "\"capacity_bytes\": %s, \"inflight_microbatches\": %d, \"fits\": %s},\n", JSON_NUMBER(mem->capacity),
          mem->inflight_microbatches, mem->total <= mem->capacity ? "true" : "false");
}

/* The compute stragglers the run had (straggler/... parameters) and the rank that computed
 * longest, so that a slow iteration can be traced to a slow GPU. */
static void write_stragglers(FILE *f, const struct replay_config *cfg, int n_platform_gpus,
                             const struct replay_results *res, int ranks)
{
  double max_factor;
  int slowed = straggler_count(cfg->gpu_slowdown, n_platform_gpus, &max_factor);
  fprintf(f, "  \"compute_stragglers\": {\"gpus_slowed\": %d, \"max_factor\": %s, \"jitter_sigma\": %s, ", slowed,
          JSON_NUMBER(max_factor), JSON_NUMBER(cfg->jitter_sigma));
  fprintf(f, "\"slowest_compute\": {\"rank\": %d, \"gpu\": %d, \"compute_s\": %s, \"over_mean\": %s}},\n",
          res->slowest_compute.rank, res->slowest_compute.gpu, JSON_NUMBER(res->slowest_compute.compute_s),
          res->compute_s > 0 && ranks > 0 ? JSON_NUMBER(res->slowest_compute.compute_s / res->compute_s) : "null");
}

/* "jobs": with several jobs on the fabric, each one's placement, iteration, MFU and breakdown, and
 * its slowdown against running alone (null without the alone runs). The top-level members
 * describe the first job; the counters, the whole fabric. */
static void write_jobs(FILE *f, const struct run_job *jobs, int n_jobs, const char *placement)
{
  fprintf(f, "  \"placement\": \"%s\",\n  \"jobs\": [", placement);
  for (int j = 0; j < n_jobs; j++) {
    const struct run_job *job = &jobs[j];
    const struct wl_trace *t = job->trace;
    double it = job->res.iteration_s;
    int lo = job->rank_gpu[0], hi = job->rank_gpu[0];
    for (int r = 1; r < t->layout.gpus; r++) {
      lo = job->rank_gpu[r] < lo ? job->rank_gpu[r] : lo;
      hi = job->rank_gpu[r] > hi ? job->rank_gpu[r] : hi;
    }
    fprintf(f, "%s\n    {\"workload\": ", j ? "," : "");
    json_write_string(f, job->spec);
    fprintf(f, ", \"model\": ");
    json_write_string(f, t->model.name);
    fprintf(f, ", \"gpus\": %d, \"first_gpu\": %d, \"last_gpu\": %d, \"iteration_time_s\": %s, ", t->layout.gpus, lo,
            hi, JSON_NUMBER(it));
    if (t->model_flops > 0 && it > 0)
      fprintf(f, "\"mfu\": %s, ", JSON_NUMBER(t->model_flops / (it * t->layout.gpus * job->gpu->bf16_dense_flops)));
    else
      fprintf(f, "\"mfu\": null, ");
    if (job->alone_iteration_s > 0)
      fprintf(f, "\"alone_iteration_time_s\": %s, \"slowdown\": %s, ", JSON_NUMBER(job->alone_iteration_s),
              JSON_NUMBER(it / job->alone_iteration_s));
    else
      fprintf(f, "\"alone_iteration_time_s\": null, \"slowdown\": null, ");
    fprintf(f, "\"compute_s\": %s, ", JSON_NUMBER(job->res.compute_s));
    write_group_object(f, "exposed_comm_s", job->res.exposed_s, "");
    fprintf(f, ", \"bubble_s\": %s}", JSON_NUMBER(job->res.bubble_s));
  }
  fprintf(f, "\n  ],\n");
}

static void write_summary(FILE *f, const struct run_options *o, const struct run_setup *s, const struct wl_trace *t,
                          const struct gpu_type *gpu, const struct replay_results *res, const struct wl_memory *mem,
                          const struct replay_config *cfg, const struct background *background,
                          const struct run_job *jobs, int n_jobs, const char *placement)
{
  double iteration = res->iteration_s;
  int gpus = t->layout.gpus;
  double mfu = iteration > 0 ? t->model_flops / (iteration * gpus * gpu->bf16_dense_flops) : 0;
  double hfu = iteration > 0 ? t->hardware_flops / (iteration * gpus * gpu->bf16_dense_flops) : 0;
  double tokens = (double)t->global_batch * t->model.seq;
  fprintf(f, "{\n");
  run_write_summary_head(f, o, s, iteration);
  fprintf(f, "  \"workload\": {\"model\": ");
  json_write_string(f, t->model.name);
  fprintf(f, ", \"gpus\": %d, \"tp\": %d, \"pp\": %d, \"vpp\": %d, \"dp\": %d, \"ep\": %d, \"cp\": %d, \"gpu\": ", gpus,
          t->layout.tp, t->layout.pp, t->layout.vpp, t->layout.dp, t->layout.ep, t->layout.cp);
  json_write_string(f, gpu->name);
  /* recompute: true when activations are recomputed at all (it was full or nothing before
   * selective recomputation existed); recompute_granularity says which. */
  const char *granularity = wl_recompute_name(t->recompute);
  fprintf(f,
          ", \"seq\": %d, \"micro_batch\": %d, \"global_batch\": %ld, \"microbatches\": %d, \"recompute\": %s, "
          "\"recompute_granularity\": \"%s\"},\n",
          t->model.seq, t->micro_batch, t->global_batch, t->microbatches, t->recompute ? "true" : "false",
          granularity ? granularity : "none");
  write_memory(f, mem);
  fprintf(f, "  \"iteration_time_s\": %s,\n", JSON_NUMBER(iteration));
  /* A workload without FLOPs (a SimAI import gives kernel times only) has no MFU: null, not 0. */
  if (t->model_flops > 0)
    fprintf(f, "  \"mfu\": %s,\n", JSON_NUMBER(mfu));
  else
    fprintf(f, "  \"mfu\": null,\n");
  if (t->hardware_flops > 0)
    fprintf(f, "  \"hfu\": %s,\n", JSON_NUMBER(hfu));
  else
    fprintf(f, "  \"hfu\": null,\n");
  fprintf(f, "  \"tokens_per_s\": %s,\n", JSON_NUMBER(iteration > 0 ? tokens / iteration : 0));
  if (t->model_flops > 0)
    fprintf(f, "  \"model_flops\": %s,\n  \"hardware_flops\": %s,\n", JSON_NUMBER(t->model_flops),
            JSON_NUMBER(t->hardware_flops));
  else
    fprintf(f, "  \"model_flops\": null,\n  \"hardware_flops\": null,\n");
  fprintf(f, "  \"breakdown\": {\n    \"compute_s\": %s,\n", JSON_NUMBER(res->compute_s));
  write_group_object(f, "exposed_comm_s", res->exposed_s, "    ");
  fprintf(f, ",\n    \"bubble_s\": %s,\n    \"straggler_s\": %s,\n    \"other_s\": %s\n  },\n",
          JSON_NUMBER(res->bubble_s), JSON_NUMBER(res->straggler_s), JSON_NUMBER(res->other_s));
  /* An imported trace (SimAI, Chakra) gives kernel times under nominal classes and no FLOPs: its
   * split by class would be a label, not a measurement (attention 0 where attention ran). */
  if (t->model_flops > 0) {
    fprintf(f, "  \"compute_by_class_s\": {");
    for (int c = 0; c < WL_CC_COUNT; c++)
      fprintf(f, "%s\"%s\": %s", c ? ", " : "", wl_cclass_name(c), JSON_NUMBER(res->compute_class_s[c]));
    fprintf(f, "},\n");
  } else {
    fprintf(f, "  \"compute_by_class_s\": null,\n");
  }
  fprintf(f,
          "  \"slowest_rank\": {\"rank\": %d, \"gpu\": %d, \"stage\": %d, \"end_s\": %s, "
          "\"typical_end_s\": %s,\n",
          res->slowest.rank, res->slowest.gpu, res->slowest.stage, JSON_NUMBER(iteration),
          JSON_NUMBER(res->typical_end_s));
  write_group_object(f, "exposed_comm_s", res->slowest.exposed_s, "    ");
  fprintf(f, "},\n");
  write_stragglers(f, cfg, s->platform->topo->n_gpus, res, t->layout.gpus);
  if (background)
    background_write_json(f, background, iteration);
  if (n_jobs > 1)
    write_jobs(f, jobs, n_jobs, placement);
  fprintf(f, "  \"collectives\": [");
  int first = 1;
  for (int k = 0; k < COLL_KIND_COUNT; k++)
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
      const struct replay_coll_stats *c = &res->coll[k][g];
      if (c->count == 0)
        continue;
      fprintf(f, "%s\n    {\"op\": \"%s\", \"group\": \"%s\", \"count\": %ld, \"bytes\": %s, \"time_s\": %s, ",
              first ? "" : ",", coll_kind_name((enum coll_kind)k), wl_group_name((enum wl_group)g), c->count,
              JSON_NUMBER(c->bytes), JSON_NUMBER(c->time_s));
      fprintf(f, "\"algbw_GBps\": %s, \"busbw_GBps\": %s, \"algorithm\": \"",
              JSON_NUMBER(c->time_s > 0 ? c->bytes / c->time_s / 1e9 : 0),
              JSON_NUMBER(c->time_s > 0 ? c->bus_bytes / c->time_s / 1e9 : 0));
      for (int a = 0, sep = 0; a < COLL_ALGO_COUNT; a++)
        if (c->algo_mask & (1 << a))
          fprintf(f, "%s%s", sep++ ? "+" : "", coll_algo_name((enum coll_algo)a));
      fprintf(f, "\", \"protocol\": \"");
      for (int q = 0, sep = 0; q < COLL_PROTO_COUNT; q++)
        if (c->proto_mask & (1 << q))
          fprintf(f, "%s%s", sep++ ? "+" : "", coll_proto_name((enum coll_proto)q));
      fprintf(f, "\", \"rings\": ");
      json_write_string_or_null(f, coll_ring_forms_name(c->ring_forms));
      fprintf(f, "}");
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
  double fabric_bytes[WL_GROUP_COUNT] = { 0 }, nvlink_bytes[WL_GROUP_COUNT] = { 0 };
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

/* The child: the job alone on a fresh copy of the fabric (nothing posted yet), the same GPUs,
 * seed and parameters; writes its iteration time and exits. */
static void alone_child(struct run_job *job, struct run_setup *s, const struct replay_config *cfg, int fd)
{
  char err[1024];
  double iteration = -1;
  struct replay_config c = *cfg;
  c.trace = job->trace;
  c.rank_gpu = job->rank_gpu;
  c.gpu = job->gpu;
  c.progress = 0;
  struct replay_results res;
  int index;
  if (run_simgrid_start(s, "sgfabric", err, sizeof err) == 0 && (index = replay_start(&c, err, sizeof err)) >= 0) {
    simgrid_run();
    if (replay_finish(index, &res, err, sizeof err) == 0 && !fabric_stalled(s->fab))
      iteration = res.iteration_s;
    else
      fprintf(stderr, "sgfabric run: %s alone: %s\n", job->spec,
              fabric_stalled(s->fab) ? fabric_stall_message(s->fab) : err);
  } else {
    fprintf(stderr, "sgfabric run: %s alone: %s\n", job->spec, err);
  }
  ssize_t w = write(fd, &iteration, sizeof iteration);
  _exit(w == (ssize_t)sizeof iteration && iteration >= 0 ? 0 : 1); /* no cleanup: the parent owns the results */
}

static int alone_start(struct run_job *job, struct run_setup *s, const struct replay_config *cfg)
{
  int fds[2];
  job->alone_iteration_s = -1;
  if (pipe(fds) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    alone_child(job, s, cfg, fds[1]);
  }
  close(fds[1]);
  job->alone_pid = pid;
  job->alone_fd = fds[0];
  return 0;
}

/* Waits for the child; 0 with alone_iteration_s set, or -1. */
static int alone_finish(struct run_job *job)
{
  double iteration = -1;
  ssize_t got = read(job->alone_fd, &iteration, sizeof iteration);
  close(job->alone_fd);
  int status = 0;
  waitpid(job->alone_pid, &status, 0);
  job->alone_pid = 0;
  if (got != (ssize_t)sizeof iteration || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || iteration < 0)
    return -1;
  job->alone_iteration_s = iteration;
  return 0;
}

/* Reads a job's workload and checks it against the platform: its GPU type and its memory per GPU,
 * refused (exit 2, as the generator refuses it) unless --ignore-memory. 0, or the exit status
 * after the message. */
static int job_load(struct run_job *j, const struct run_setup *s, const struct run_options *o, int ignore_memory)
{
  const char *workload = j->spec;
  char err[1024];
  /* After the platform: a SimAI file without all_gpus spans the platform's GPUs. */
  struct wl_trace *trace = j->trace = wl_trace_open_on(workload, s->platform->topo->n_gpus, err, sizeof err);
  if (trace == NULL) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    return 1;
  }
  /* Said before the simulation starts. */
  if (o->fidelity == FAB_FIDELITY_PACKET && trace->layout.gpus > PACKET_FIDELITY_WARN_GPUS)
    fprintf(stderr,
            "sgfabric run: warning: packet fidelity on %d GPUs simulates every packet of the iteration "
            "and can take hours; --fidelity flow (the default) takes minutes at most\n",
            trace->layout.gpus);
  const struct gpu_type *gpu = j->gpu = gpu_type_find(trace->gpu[0] ? trace->gpu : s->platform->gpu_type);
  if (gpu == NULL) {
    fprintf(stderr, "sgfabric run: %s: unknown GPU type '%s'\n", workload, trace->gpu);
    return 1;
  }
  /* Per-GPU memory against the GPU the job runs on. */
  char mem_text[400] = "";
  if (wl_memory_worst(trace, &j->mem_storage) == 0) {
    struct wl_memory *mem = j->mem = &j->mem_storage;
    mem->capacity = gpu->hbm_bytes;
    wl_memory_describe(mem, gpu->name, mem_text, sizeof mem_text);
    if (mem->total > mem->capacity && !ignore_memory) {
      fprintf(stderr, "sgfabric run: %s: the job does not fit in GPU memory: %s; --ignore-memory runs it anyway\n",
              workload, mem_text);
      return CLI_USAGE;
    }
    if (mem->total > mem->capacity)
      fprintf(stderr, "sgfabric run: warning: the job does not fit in GPU memory (--ignore-memory): %s\n", mem_text);
  }
  if (trace->gpu[0] && s->platform->gpu_type[0] && gpu_type_find(s->platform->gpu_type) != gpu)
    fprintf(stderr,
            "sgfabric run: warning: the workload is for %s GPUs, the platform %s has %s GPUs; compute "
            "follows the workload's %s\n",
            gpu->name, o->platform, s->platform->gpu_type, gpu->name);
  return 0;
}

int cmd_run(int argc, char **argv)
{
  struct run_options o;
  run_options_init(&o);
  o.fidelity = FAB_FIDELITY_FLOW; /* as compare: packet fidelity is opt-in, it is slow on large jobs */
  const char *workload = NULL, *deployment = NULL, *background_path = NULL;
  const char *workloads[REPLAY_MAX_JOBS];
  int n_jobs = 0;
  enum placement_policy placement = PLACE_CONTIGUOUS;
  int placement_given = 0, alone = 1;
  struct background *background = NULL;
  int progress = isatty(2);
  int timeline = 0, ignore_memory = 0, why = 0;
  long timeline_max = TIMELINE_DEFAULT_MAX_EVENTS, timeline_links_us = 0;
  char err[1024];
  struct cli c;
  cli_init(&c, "sgfabric run", argc, argv);
  cli_add_table(&c, run_common_options());
  cli_add_table(&c, run_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP: usage(stdout); return 0;
    case CLI_POSITIONAL: return cli_unexpected(&c);
    case RUN_OPT_WORKLOAD:
      if (n_jobs == REPLAY_MAX_JOBS)
        return cli_usage_error(&c, "--workload: at most %d jobs in one run", REPLAY_MAX_JOBS);
      workloads[n_jobs++] = c.value;
      workload = workloads[0];
      break;
    case RUN_OPT_NO_ALONE: alone = 0; break;
    case RUN_OPT_PLACEMENT:
      if (placement_parse(c.value, &placement, err, sizeof err) != 0)
        return cli_usage_error(&c, "--placement: %s", err);
      placement_given = 1;
      break;
    case RUN_OPT_DEPLOYMENT: deployment = c.value; break;
    case RUN_OPT_TIMELINE: timeline = 1; break;
    case RUN_OPT_TIMELINE_MAX:
      if (cli_long(&c, 1, 1000000000L, &timeline_max) != 0)
        return CLI_USAGE;
      break;
    case RUN_OPT_TIMELINE_LINKS:
      if (cli_long(&c, 1, 1000000000L, &timeline_links_us) != 0)
        return CLI_USAGE;
      break;
    case RUN_OPT_WHY: why = 1; break;
    case RUN_OPT_IGNORE_MEMORY: ignore_memory = 1; break;
    case RUN_OPT_BACKGROUND: background_path = c.value; break;
    case RUN_OPT_PROGRESS:
    case RUN_OPT_NO_PROGRESS: progress = id == RUN_OPT_PROGRESS; break;
    default:
      if (run_common_apply(&o, &c, id) != 0)
        return CLI_USAGE;
      break;
    }
  }
  if (timeline_links_us > 0 && !timeline)
    return cli_usage_error(&c, "--timeline-links needs --timeline");
  if (n_jobs > 1) {
    for (int j = 0; j < n_jobs; j++)
      if (strncmp(workloads[j], "chakra:", 7) == 0)
        return cli_usage_error(&c, "--workload %s: a Chakra trace runs alone (one job per run)", workloads[j]);
    if (deployment)
      return cli_usage_error(&c, "--deployment places one job; several jobs take --placement");
    if (timeline || why)
      return cli_usage_error(&c, "--timeline and --why follow a single job");
  }
  if (deployment && placement_given)
    return cli_usage_error(&c, "--deployment and --placement both place the ranks: give one");
  if (o.help_cfg) {
    run_print_params(stdout, NULL, 0);
    return 0;
  }
  if (workload == NULL || o.out == NULL || o.platform == NULL) {
    fprintf(stderr, "sgfabric run: --platform, --workload and --out are required (see sgfabric run --help)\n");
    return CLI_USAGE;
  }
  /* --out first: a refused or unwritable directory is reported before anything is loaded. */
  static struct results r;
  const char *path = strncmp(workload, "simai:", 6) == 0 ? workload + 6 : workload;
  /* A Chakra trace is one file per rank: rank 0's stands for them until the trace is read. */
  int chakra = strncmp(workload, "chakra:", 7) == 0;
  char chakra_first[4200];
  if (chakra) {
    snprintf(chakra_first, sizeof chakra_first, "%s.0.et", workload + 7);
    path = chakra_first;
  }
  /* The inputs, in the order the manifest names them: platform, workload(s), then the optional ones. */
  const char *inputs[4 + REPLAY_MAX_JOBS] = { o.platform, path };
  int n_inputs = 2;
  for (int j = 1; j < n_jobs; j++)
    inputs[n_inputs++] = strncmp(workloads[j], "simai:", 6) == 0 ? workloads[j] + 6 : workloads[j];
  if (deployment)
    inputs[n_inputs++] = deployment;
  if (background_path)
    inputs[n_inputs++] = background_path;
  if (o.failures)
    inputs[n_inputs++] = o.failures;
  const char **all_inputs = NULL;
  char **rank_files = NULL;
  results_catch_signals(RESULTS_SIGNALS_EXIT);
  int rc = results_begin(&r, "sgfabric run", o.out, o.force, inputs, n_inputs, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    return rc;
  }
  rc = 1;
  struct run_setup s;
  memset(&s, 0, sizeof s);
  struct run_job jobs[REPLAY_MAX_JOBS];
  memset(jobs, 0, sizeof jobs);
  struct timeline *tl = NULL;
  double *slowdown = NULL; /* per platform GPU: its compute time multiplier */
  if (run_setup_load(&o, &s, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  for (int j = 0; j < n_jobs; j++) {
    jobs[j].spec = workloads[j];
    if ((rc = job_load(&jobs[j], &s, &o, ignore_memory)) != 0)
      goto out;
  }
  rc = 1;
  struct wl_trace *trace = jobs[0].trace;
  const struct gpu_type *gpu = jobs[0].gpu;
  const struct wl_memory *mem = jobs[0].mem;
  int n_gpus = s.platform->topo->n_gpus, ranks = 0;
  for (int j = 0; j < n_jobs; j++)
    ranks += jobs[j].trace->layout.gpus;
  if (ranks > n_gpus) {
    if (n_jobs == 1)
      fprintf(stderr, "sgfabric run: %s: the workload has %d ranks but the platform %s has %d GPUs\n", workload, ranks,
              o.platform, n_gpus);
    else
      fprintf(stderr, "sgfabric run: the %d jobs have %d ranks but the platform %s has %d GPUs\n", n_jobs, ranks,
              o.platform, n_gpus);
    goto out;
  }
  if (ranks < n_gpus && n_jobs == 1)
    fprintf(stderr, "sgfabric run: warning: the workload has %d ranks, the platform %s has %d GPUs: %d stay idle\n",
            ranks, o.platform, n_gpus, n_gpus - ranks);
  if (deployment || (n_jobs == 1 && placement == PLACE_CONTIGUOUS)) {
    /* One job, rank r on GPU r unless a deployment file says otherwise: as before --placement. */
    jobs[0].rank_gpu =
        deployment ? deployment_load(deployment, ranks, n_gpus, err, sizeof err) : deployment_linear(ranks);
    if (jobs[0].rank_gpu == NULL) {
      fprintf(stderr, "sgfabric run: %s\n", err);
      goto out;
    }
  } else {
    int sizes[REPLAY_MAX_JOBS], *placed[REPLAY_MAX_JOBS];
    for (int j = 0; j < n_jobs; j++)
      sizes[j] = jobs[j].trace->layout.gpus;
    if (placement_place(placement, sizes, n_jobs, n_gpus, s.platform->topo->gpus_per_node, o.seed, placed, err,
                        sizeof err) != 0) {
      for (int j = 0; j < n_jobs; j++)
        free(placed[j]);
      fprintf(stderr, "sgfabric run: --placement %s: %s\n", placement_name(placement), err);
      goto out;
    }
    for (int j = 0; j < n_jobs; j++)
      jobs[j].rank_gpu = placed[j];
  }
  int *rank_gpu = jobs[0].rank_gpu;

  if (background_path && (background = background_load(background_path, n_gpus, err, sizeof err)) == NULL) {
    fprintf(stderr, "sgfabric run: --background %s\n", err);
    goto out;
  }

  struct replay_config cfg = { .trace = trace, .fab = s.fab, .rank_gpu = rank_gpu, .gpu = gpu, .progress = progress };
  compute_params_from(s.params, &cfg.compute);
  cfg.event_engine = replay_event_engine_from(s.params);
  if (!cfg.event_engine)
    run_note_actor_engine("run", trace->layout.gpus);
  coll_params_from(s.params, &cfg.coll);
  if (coll_params_check(&cfg.coll, s.fab, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  struct straggler_params sp;
  straggler_params_from(s.params, &sp);
  if ((slowdown = straggler_gpu_factors(&sp, s.platform->topo->n_gpus, o.seed, err, sizeof err)) == NULL) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  cfg.gpu_slowdown = slowdown;
  cfg.jitter_sigma = sp.jitter_sigma;
  cfg.seed = o.seed;
  if (timeline && (cfg.timeline = tl = timeline_create(timeline_max)) == NULL) {
    fprintf(stderr, "sgfabric run: out of memory for the timeline\n");
    goto out;
  }
  cfg.link_sample_s = (double)timeline_links_us * 1e-6;
  if (why && fab_why_enable(s.fab) != 0) {
    fprintf(stderr, "sgfabric run: out of memory for --why\n");
    goto out;
  }
  /* Interference needs each job's iteration alone on the same GPUs: one child process per job
   * (SimGrid runs one simulation per process), forked before SimGrid starts in this one. */
  if (n_jobs > 1 && alone)
    for (int j = 0; j < n_jobs; j++)
      if (alone_start(&jobs[j], &s, &cfg) != 0) {
        fprintf(stderr, "sgfabric run: cannot start the run of %s alone: %s\n", jobs[j].spec, strerror(errno));
        goto out;
      }
  if (run_simgrid_start(&s, "sgfabric", err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  results_catch_signals(RESULTS_SIGNALS_EXIT); /* SimGrid installed its own SIGINT handler */
  /* Background traffic in its own traffic class, after the group classes. */
  if (background)
    background_post(background, s.fab, WL_GROUP_COUNT);
  for (int j = 0; j < n_jobs; j++) {
    struct replay_config job_cfg = cfg;
    job_cfg.trace = jobs[j].trace;
    job_cfg.rank_gpu = jobs[j].rank_gpu;
    job_cfg.gpu = jobs[j].gpu;
    job_cfg.progress = j == 0 && progress; /* one progress line: the first job's */
    if ((jobs[j].index = replay_start(&job_cfg, err, sizeof err)) < 0) {
      fprintf(stderr, "sgfabric run: %s\n", err);
      goto out;
    }
  }
  simgrid_run();
  int finish_rc = 0;
  char finish_err[2200] = "";
  for (int j = 0; j < n_jobs; j++)
    if (replay_finish(jobs[j].index, &jobs[j].res, err, sizeof err) != 0 && finish_rc == 0) {
      finish_rc = -1;
      snprintf(finish_err, sizeof finish_err, "%s: %s", jobs[j].spec, err);
    }
  struct replay_results res = jobs[0].res;
  for (int j = 0; j < n_jobs; j++)
    if (jobs[j].alone_pid > 0 && alone_finish(&jobs[j]) != 0 && finish_rc == 0) {
      finish_rc = -1;
      snprintf(finish_err, sizeof finish_err, "%s: its run alone failed (above)", jobs[j].spec);
    }
  if (fabric_stalled(s.fab)) { /* the ranks did not finish because the fabric stopped: say why */
    fprintf(stderr, "sgfabric run: %s\n", fabric_stall_message(s.fab));
    if (fabric_failures_job_failed(s.fab->failures) >= 0) { /* a simulated outcome: results, exit 3 */
      errno = 0;
      FILE *f = results_open(&r, "summary.json");
      int failed = f == NULL;
      if (f) {
        fprintf(f, "{\n");
        run_write_summary_head(f, &o, &s, s.fab->now);
        fprintf(f, "  \"workload\": {\"model\": ");
        json_write_string(f, trace->model.name);
        fprintf(f, ", \"gpus\": %d},\n  \"iteration_time_s\": null,\n  \"mfu\": null,\n  \"counters\": {\n",
                trace->layout.gpus);
        fabric_write_counters(s.fab, f, "    ");
        fprintf(f, "  }\n}\n");
        failed |= results_close(f) != 0;
      }
      failed |= run_write_common_results(&r, &s, argc, argv, inputs, n_inputs, o.seed) != 0;
      if (failed)
        fprintf(stderr, "sgfabric run: --out %s: cannot write the results: %s\n", o.out,
                errno ? strerror(errno) : "write error");
      else if ((rc = results_commit(&r, err, sizeof err)) != 0)
        fprintf(stderr, "sgfabric run: %s\n", err);
      else
        rc = 3;
    }
    goto out;
  }
  if (finish_rc != 0) {
    fprintf(stderr, "sgfabric run: %s\n", finish_err);
    goto out;
  }

  /* Link utilisation is over the iteration, not until a timer still pending after it. */
  s.fab->stats.active_end_s = res.iteration_s;
  errno = 0; /* a write error below says why (ENOSPC, EROFS...) */
  FILE *f = results_open(&r, "summary.json");
  int failed = f == NULL;
  if (f) {
    write_summary(f, &o, &s, trace, gpu, &res, mem, &cfg, background, jobs, n_jobs, placement_name(placement));
    failed |= results_close(f) != 0;
  }
  if (tl && !failed) {
    if (timeline_dropped(tl) > 0)
      fprintf(stderr,
              "sgfabric run: warning: the timeline keeps its first %ld spans (--timeline-max-events), "
              "%ld later ones are dropped\n",
              timeline_max_events(tl), timeline_dropped(tl));
    char other[160];
    snprintf(other, sizeof other, "\"iteration_time_s\": %s, \"ranks\": %d", JSON_NUMBER(res.iteration_s),
             trace->layout.gpus);
    FILE *tf = results_open(&r, "timeline.json");
    failed |= tf == NULL;
    if (tf) {
      if (timeline_write(tl, tf, other) != 0) {
        errno = ENOMEM;
        failed = 1;
      }
      failed |= results_close(tf) != 0;
    }
  }
  if (why && !failed) {
    const char *names[FAB_MAX_TAGS] = { NULL };
    for (int g = 0; g < WL_GROUP_COUNT && g < FAB_MAX_TAGS; g++)
      names[g] = wl_group_name((enum wl_group)g);
    FILE *wf = results_open(&r, "why.json");
    failed |= wf == NULL;
    if (wf) {
      failed |= fab_why_write_json(s.fab, wf, res.iteration_s, names, FAB_MAX_TAGS) != 0;
      failed |= results_close(wf) != 0;
    }
  }
  if (chakra) { /* the manifest names every rank file */
    int n = trace->layout.gpus;
    all_inputs = calloc((size_t)n + 4, sizeof *all_inputs);
    rank_files = calloc((size_t)n, sizeof *rank_files);
    failed |= all_inputs == NULL || rank_files == NULL;
    for (int i = 0; !failed && i < n; i++) {
      size_t len = strlen(workload) + 16;
      if ((rank_files[i] = malloc(len)) == NULL) {
        failed = 1;
        break;
      }
      snprintf(rank_files[i], len, "%s.%d.et", workload + 7, i);
      all_inputs[1 + i] = rank_files[i];
    }
    if (!failed) {
      int k = n + 1;
      all_inputs[0] = o.platform;
      if (deployment)
        all_inputs[k++] = deployment;
      if (background_path)
        all_inputs[k++] = background_path;
      if (o.failures)
        all_inputs[k++] = o.failures;
      failed |= run_write_common_results(&r, &s, argc, argv, all_inputs, k, o.seed) != 0;
    }
  } else {
    failed |= run_write_common_results(&r, &s, argc, argv, inputs, n_inputs, o.seed) != 0;
  }
  if (failed) {
    fprintf(stderr, "sgfabric run: --out %s: cannot write the results: %s\n", o.out,
            errno ? strerror(errno) : "write error");
    goto out;
  }
  if ((rc = results_commit(&r, err, sizeof err)) != 0) {
    fprintf(stderr, "sgfabric run: %s\n", err);
    goto out;
  }
  char mem_short[96] = "memory n/a";
  if (mem)
    snprintf(mem_short, sizeof mem_short, "memory %.1f of %.0f GB per GPU", mem->total / 1e9, mem->capacity / 1e9);
  for (int j = 0; j < n_jobs && n_jobs > 1; j++) { /* then the usual line: the first job's */
    const struct run_job *job = &jobs[j];
    char mfu_text[32] = "MFU n/a", slow_text[48] = "";
    if (job->trace->model_flops > 0)
      snprintf(mfu_text, sizeof mfu_text, "MFU %.2f %%",
               100 * job->trace->model_flops /
                   (job->res.iteration_s * job->trace->layout.gpus * job->gpu->bf16_dense_flops));
    if (job->alone_iteration_s > 0)
      snprintf(slow_text, sizeof slow_text, ", %.3fx its time alone", job->res.iteration_s / job->alone_iteration_s);
    printf("job %d (%s): iteration %.4f s, %s%s\n", j, job->spec, job->res.iteration_s, mfu_text, slow_text);
  }
  if (trace->model_flops > 0)
    printf("%s on %s: iteration %.4f s, MFU %.2f %%, %s; results in %s\n", o.fabric, o.platform, res.iteration_s,
           100 * trace->model_flops / (res.iteration_s * trace->layout.gpus * gpu->bf16_dense_flops), mem_short, o.out);
  else
    printf("%s on %s: iteration %.4f s, MFU n/a (the workload has no FLOPs), %s; results in %s\n", o.fabric, o.platform,
           res.iteration_s, mem_short, o.out);
  rc = 0;
out:
  results_abort(&r); /* nothing once committed */
  if (rank_files != NULL)
    for (int i = 0; i < trace->layout.gpus; i++)
      free(rank_files[i]);
  free(rank_files);
  free(all_inputs);
  for (int j = 0; j < n_jobs; j++) {
    if (jobs[j].alone_pid > 0) { /* a failure before its result was read */
      kill(jobs[j].alone_pid, SIGKILL);
      waitpid(jobs[j].alone_pid, NULL, 0);
      close(jobs[j].alone_fd);
    }
    free(jobs[j].rank_gpu);
    wl_trace_free(jobs[j].trace);
  }
  free(slowdown);
  timeline_free(tl);
  background_free(background);
  run_setup_free(&s);
  return rc;
}
