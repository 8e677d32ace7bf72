/* sgfabric flows: a flow file in, completion times out (the form of the ns-3 RDMA simulators).
 *
 * Each row of the CSV (src,dst,bytes,start_us) becomes a transfer posted at its start time by
 * an actor on its source GPU through the same fabric API the workloads use; flows.csv gives
 * each row's completion time, summary.json the totals and the fabric's counters. */
#include <errno.h>
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "commands.h"
#include "flows_csv.h"
#include "results.h"
#include "run_common.h"
#include "sg_fabric.h"
#include "failure.h"

static struct flow_table g_flows; /* read by the actors */
/* Each actor's posted transfers, at their by_source positions. Owned here, not by the actors: an
 * actor still waiting when a failed job stops the simulation never returns to free its own. */
static sgf_transfer_t **g_pending;

static const struct flow_table *g_sort_table;
static int by_start(const void *a, const void *b)
{
  const struct flow_row *ra = &g_sort_table->rows[*(const int *)a], *rb = &g_sort_table->rows[*(const int *)b];
  if (ra->src != rb->src)
    return ra->src - rb->src;
  if (ra->start_us != rb->start_us)
    return ra->start_us < rb->start_us ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

static void group_by_source(struct flow_table *t, int n_gpus)
{
  t->by_source = malloc(sizeof(int) * (size_t)t->n);
  t->source_first = calloc((size_t)n_gpus + 1, sizeof(int));
  for (int i = 0; i < t->n; i++)
    t->by_source[i] = i;
  g_sort_table = t;
  qsort(t->by_source, (size_t)t->n, sizeof(int), by_start);
  for (int i = 0; i < t->n; i++)
    t->source_first[t->rows[i].src + 1]++;
  for (int g = 0; g < n_gpus; g++)
    t->source_first[g + 1] += t->source_first[g];
}

/* One actor per source GPU: posts its flows at their start times, then waits for them. */
static void source_actor(int argc, char **argv)
{
  (void)argc;
  int gpu = atoi(argv[1]);
  int first = g_flows.source_first[gpu], last = g_flows.source_first[gpu + 1];
  sgf_transfer_t **pending = g_pending + first;
  for (int k = first; k < last; k++) {
    struct flow_row *row = &g_flows.rows[g_flows.by_source[k]];
    double start = row->start_us * 1e-6;
    if (start > simgrid_get_clock())
      sg_actor_sleep_until(start);
    pending[k - first] = sgf_isend_at(row->src, row->dst, row->bytes, 0, start);
  }
  for (int k = first; k < last; k++) {
    struct flow_row *row = &g_flows.rows[g_flows.by_source[k]];
    double finish = sgf_wait(pending[k - first]);
    row->fct_us = (finish - row->start_us * 1e-6) * 1e6;
  }
}

enum { FLOWS_OPT_FLOWS };

static const struct cli_option flows_options[] = {
  { "flows", 0, CLI_VALUE, FLOWS_OPT_FLOWS, "FILE", "the flow file" },
  CLI_TABLE_END,
};

static void usage(FILE *out)
{
  fprintf(out,
          "usage: sgfabric flows --platform P.xml --flows F.csv [--fabric maxmin|ib|roce] [--fidelity packet|flow]\n"
          "                      [--seed N] [--cfg area/name:value ...] -o DIR\n\n"
          "Simulates the transfers of a flow file (CSV header src,dst,bytes,start_us; GPU indices as\n"
          "numbered by the platform) and writes DIR/flows.csv, DIR/summary.json, DIR/manifest.json.\n"
          "Default fidelity: packet (a flow file is a micro-benchmark). Options take their value as\n"
          "--name value or --name=value.\n\n");
  run_print_common_usage(out);
  cli_print_options(out, flows_options, NULL);
  fprintf(out, "  -h, --help                 this help\n");
  run_print_exit_status(out);
}

int cmd_flows(int argc, char **argv)
{
  struct run_options o;
  run_options_init(&o);
  const char *flows_path = NULL;
  char err[1024];
  struct cli c;
  cli_init(&c, "sgfabric flows", argc, argv);
  cli_add_table(&c, run_common_options());
  cli_add_table(&c, flows_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP: usage(stdout); return 0;
    case CLI_POSITIONAL: return cli_unexpected(&c);
    case FLOWS_OPT_FLOWS: flows_path = c.value; break;
    default:
      if (run_common_apply(&o, &c, id) != 0)
        return CLI_USAGE;
      break;
    }
  }
  if (o.help_cfg) {
    run_print_params(stdout, NULL, 0);
    return 0;
  }
  if (flows_path == NULL || o.out == NULL || o.platform == NULL) {
    fprintf(stderr, "sgfabric flows: --platform, --flows and --out are required (see sgfabric flows --help)\n");
    return CLI_USAGE;
  }
  /* --out first: a refused or unwritable directory is reported before anything is loaded. */
  static struct results r;
  const char *inputs[] = { o.platform, flows_path, o.failures };
  int n_inputs = o.failures ? 3 : 2;
  results_catch_signals(RESULTS_SIGNALS_EXIT);
  int rc = results_begin(&r, "sgfabric flows", o.out, o.force, inputs, n_inputs, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "sgfabric flows: %s\n", err);
    return rc;
  }
  rc = 1;
  struct run_setup s;
  if (run_setup_load(&o, &s, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric flows: %s\n", err);
    goto done;
  }
  int n_gpus = s.platform->topo->n_gpus;
  if (flows_csv_load(flows_path, n_gpus, &g_flows, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric flows: %s\n", err);
    goto done;
  }
  group_by_source(&g_flows, n_gpus);
  g_pending = sgf_xcalloc((size_t)g_flows.n + 1, sizeof *g_pending);
  for (int i = 0; i < g_flows.n; i++)
    g_flows.rows[i].fct_us = -1; /* not finished (yet) */

  if (run_simgrid_start(&s, "sgfabric", err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric flows: %s\n", err);
    goto done;
  }
  results_catch_signals(RESULTS_SIGNALS_EXIT); /* SimGrid installed its own SIGINT handler */
  for (int g = 0; g < n_gpus; g++) {
    if (g_flows.source_first[g] == g_flows.source_first[g + 1])
      continue;
    char name[32], index[16];
    snprintf(name, sizeof name, "flows-gpu%d", g);
    snprintf(index, sizeof index, "%d", g);
    char *args[] = { name, index, NULL };
    sg_actor_create(name, sg_host_by_name(name + 6), source_actor, 2, args);
  }
  simgrid_run();
  double sim_time = fabric_active_time(s.fab); /* not a timer still pending after the last delivery */

  int job_failed = fabric_failures_job_failed(s.fab->failures) >= 0;
  if (fabric_stalled(s.fab)) {
    fprintf(stderr, "sgfabric flows: %s\n", fabric_stall_message(s.fab));
    if (!job_failed)
      goto done;
    sim_time = s.fab->now; /* the job failed then: its results are written (exit 3) */
  }
  if (fabric_ended_too_late(sim_time, err, sizeof err)) { /* the later completions were timed at that resolution */
    fprintf(stderr, "sgfabric flows: %s: the transfers %s\n", flows_path, err);
    goto done;
  }
  errno = 0; /* a write error below says why (ENOSPC, EROFS...) */
  FILE *f = results_open(&r, "flows.csv");
  int failed = f == NULL;
  if (f) {
    fprintf(f, "src,dst,bytes,start_us,fct_us\n");
    for (int i = 0; i < g_flows.n; i++) {
      const struct flow_row *row = &g_flows.rows[i];
      if (row->fct_us < 0) /* the job failed before it finished */
        fprintf(f, "%d,%d,%.17g,%.17g,\n", row->src, row->dst, row->bytes, row->start_us);
      else
        fprintf(f, "%d,%d,%.17g,%.17g,%.17g\n", row->src, row->dst, row->bytes, row->start_us, row->fct_us);
    }
    failed |= results_close(f) != 0;
  }
  f = results_open(&r, "summary.json");
  failed |= f == NULL;
  if (f) {
    double fct_sum = 0, fct_max = 0;
    int finished = 0;
    for (int i = 0; i < g_flows.n; i++) {
      if (g_flows.rows[i].fct_us < 0)
        continue;
      finished++;
      fct_sum += g_flows.rows[i].fct_us;
      if (g_flows.rows[i].fct_us > fct_max)
        fct_max = g_flows.rows[i].fct_us;
    }
    fprintf(f, "{\n");
    run_write_summary_head(f, &o, &s, sim_time);
    fprintf(f, "  \"flows\": %d,\n  \"bytes_delivered\": %s,\n", g_flows.n, JSON_NUMBER(s.fab->stats.bytes_delivered));
    fprintf(f, "  \"mean_fct_us\": %s,\n  \"max_fct_us\": %s,\n", JSON_NUMBER(finished ? fct_sum / finished : 0),
            JSON_NUMBER(fct_max));
    fprintf(f, "  \"counters\": {\n");
    fabric_write_counters(s.fab, f, "    ");
    fprintf(f, "  }\n}\n");
    failed |= results_close(f) != 0;
  }
  failed |= run_write_common_results(&r, &s, argc, argv, inputs, n_inputs, o.seed) != 0;
  if (failed || (!job_failed && s.fab->stats.flows_done != (uint64_t)g_flows.n)) {
    if (failed)
      fprintf(stderr, "sgfabric flows: --out %s: cannot write the results: %s\n", o.out,
              errno ? strerror(errno) : "write error");
    else
      fprintf(stderr, "sgfabric flows: internal error: some flows never completed\n");
    goto done;
  }
  if ((rc = results_commit(&r, err, sizeof err)) != 0) {
    fprintf(stderr, "sgfabric flows: %s\n", err);
    goto done;
  }
  rc = job_failed ? 3 : 0;
done:
  results_abort(&r); /* nothing once committed */
  flows_csv_free(&g_flows);
  free(g_pending);
  g_pending = NULL;
  run_setup_free(&s);
  return rc;
}
