/* sgfabric compare: the main job. One training job, run on InfiniBand and on RoCEv2 (each in its
 * own process: SimGrid runs one simulation per process, and the two use both cores), then a
 * side-by-side table, comparison.json and a chart.
 *
 * With no argument it runs the shipped default scenario (docs/compare.md says why this one):
 * GPT-3 175B, TP 8, PP 8, on the 1,024-GPU rail-optimized platform, flow fidelity. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"
#include "commands.h"
#include "gpu_types.h"
#include "platform_cli.h"
#include "replay.h"
#include "results.h"
#include "run_common.h"
#include "wl_cli.h"
#include "wl_gen.h"
#include "wl_model.h"

#define MAX_ARGS 512
#define MAX_FABRICS 4

struct compare_options {
  const char *workload_args[MAX_ARGS]; /* passed to sgfabric workload */
  int n_workload;
  const char *run_args[MAX_ARGS]; /* passed to each sgfabric run */
  int n_run;
  const char *platform_args[MAX_ARGS]; /* passed to sgfabric platform (no --platform) */
  int n_platform;
  const char *platform;
  const char *failures; /* --failures: a schedule every run takes (docs/failures.md) */
  const char *out;
  const char *fabrics[MAX_FABRICS];
  int n_fabrics;
  char fabric_list[256]; /* the --fabrics text the names point into */
  int gpus;
  char gpus_text[16];
  const char *gpu;                   /* --gpu, for the workload and the generated platform */
  const char *first_platform_option; /* for the message when --platform is given too */
  int has_model, has_tp, has_pp, has_fidelity, has_recompute, has_sequence_parallel;
  fab_fidelity fidelity;
  char spelled[MAX_ARGS][80]; /* the forwarded option names (the parser's buffer is reused) */
  int n_spelled;
  int help_cfg;
  int force; /* --force: replace DIR even if it is not a previous result */
};

/* compare's own options; the workload's and the platform generator's follow (wl_cli_options(),
 * platform_cli_options()), so that compare accepts every one of them and the lists never drift.
 * An option named in this table is compare's, whatever the other tables say. */
enum {
  CMP_OPT_OUT,
  CMP_OPT_PLATFORM,
  CMP_OPT_FABRICS,
  CMP_OPT_FIDELITY,
  CMP_OPT_SEED,
  CMP_OPT_CFG,
  CMP_OPT_HELP_CFG,
  CMP_OPT_FORCE,
  CMP_OPT_GPUS,
  CMP_OPT_GPU,
  CMP_OPT_TIMELINE,
  CMP_OPT_FAILURES,
};

static const struct cli_option compare_options_table[] = {
  { "gpus", 0, CLI_VALUE, CMP_OPT_GPUS, "N", "GPUs of the job and of the generated platform (1024)" },
  { "gpu", 0, CLI_VALUE, CMP_OPT_GPU, "TYPE",
    "GPU type: A100, H100, H200, B200 (H100); sets the platform's NVLink and NIC rates" },
  { "platform", 0, CLI_VALUE, CMP_OPT_PLATFORM, "FILE", "a platform XML instead of the generated fat-tree" },
  { "fabrics", 0, CLI_VALUE, CMP_OPT_FABRICS, "A,B", "fabric models to compare, distinct (ib,roce)" },
  { "fidelity", 0, CLI_VALUE, CMP_OPT_FIDELITY, "flow|packet", "flow-level (default) or packet-level" },
  { "seed", 0, CLI_VALUE, CMP_OPT_SEED, "N", "seed of the workload and of every run (1)" },
  { "cfg", 0, CLI_VALUE, CMP_OPT_CFG, "area/name:value", "set a model parameter (repeatable)" },
  { "help-cfg", 0, CLI_FLAG, CMP_OPT_HELP_CFG, NULL, "list the model parameters and exit" },
  { "force", 0, CLI_FLAG, CMP_OPT_FORCE, NULL, "replace DIR even if it is not a previous result" },
  { "timeline", 0, CLI_FLAG, CMP_OPT_TIMELINE, NULL,
    "each run also writes FABRIC/timeline.json (sgfabric run --timeline)" },
  { "failures", 0, CLI_VALUE, CMP_OPT_FAILURES, "FILE",
    "take links, switches and NICs down and up during every run (sgfabric run --failures, docs/failures.md)" },
  { "out", 'o', CLI_VALUE, CMP_OPT_OUT, "DIR", "results directory (results/compare)" },
  CLI_TABLE_END,
};
enum { TABLE_COMPARE, TABLE_WORKLOAD, TABLE_PLATFORM };

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric compare [job options] [platform options] [--fabrics ib,roce] [--fidelity flow|packet]\n"
               "                        [--seed N] [--cfg area/name:value ...] [-o DIR]\n\n"
               "Runs one training iteration of the job on each fabric and prints MFU, iteration time, exposed\n"
               "communication per group and the fabrics' counters side by side. Defaults: GPT-3 175B, 1,024 H100,\n"
               "TP 8, PP 8 (DP 16), 1,024-GPU rail-optimized platform of radix-64 switches (2 tiers up to 2,048\n"
               "GPUs, 3 above), flow fidelity, out results/compare.\n"
               "DIR gets manifest.json (this command, seed, inputs with SHA-256), every input the runs read\n"
               "(platform.xml: generated or a copy of --platform; workload.txt), one run directory per\n"
               "fabric, comparison.json (scenario, table, per-collective table, the \"why\": flows per link,\n"
               "collisions, busiest links, link heatmap), compare.png, why.png and report.html (one\n"
               "self-contained HTML file: analysis/plot_compare.py, plot_why.py, report_html.py);\n"
               "sgfabric replay DIR re-runs it and checks the summaries are identical. Fabrics: ib, roce,\n"
               "maxmin (ECMP hashing, FIFO queues, no flow or congestion control: a reference, not a best\n"
               "case; ideal is its former name).\n"
               "DIR is written atomically (docs/outputs.md): it must be new or a previous result of sgfabric,\n"
               "which is replaced only once the new one is complete; any other directory is refused (exit 2)\n"
               "unless --force (files that are not sgfabric's are then kept in DIR.old-*), the current one\n"
               "and one holding an input always. Ctrl-C or SIGTERM stops the runs; nothing is written and\n"
               "the previous result is kept.\n"
               "Options take their value as --name value or --name=value.\n\n");
  cli_print_options(out, compare_options_table, NULL);
  fprintf(out, "\njob options (as sgfabric workload; Megatron-LM names accepted):\n");
  cli_print_options(out, wl_cli_options(), compare_options_table);
  fprintf(out, "  " WL_CLI_DEFAULT_GLOBAL_BATCH_RULE "\n  models:");
  for (const char *const *n = wl_model_preset_names(); *n != NULL; n++)
    fprintf(out, " %s", *n);
  fprintf(out, "\n");
  fprintf(out, "\nplatform options (as sgfabric platform; not with --platform):\n");
  cli_print_options(out, platform_cli_options(), compare_options_table);
  fprintf(out, "  -h, --help                 this help\n"
               "Exit status: 0 ok, 1 error while running, 2 usage error or refused --out, 130/143 interrupted.\n");
}

/* Runs argv (no shell: the arguments reach the program as they are) as a child process with
 * stdout and stderr to log, in directory cwd (NULL: this one); returns its pid, -1 if it could not be started. The child is
 * registered to get SIGTERM when compare is interrupted, and gets it too if compare dies. */
static pid_t spawn(char *const argv[], const char *log, const char *cwd)
{
  pid_t parent = getpid();
  fflush(NULL); /* children must not inherit unwritten output */
  pid_t pid = fork();
  if (pid == 0) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(127);
#endif
    (void)parent;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || (cwd && chdir(cwd) != 0))
      _exit(127);
    execv(argv[0], argv);
    _exit(127);
  }
  if (pid > 0)
    results_add_child(pid);
  return pid;
}

/* Stops the children still running (pids[i] > 0): SIGTERM, then SIGKILL after 10 s; waits for
 * each, so that none is left behind. */
static void stop_children(pid_t *pids, int n)
{
  for (int i = 0; i < n; i++)
    if (pids[i] > 0)
      kill(pids[i], SIGTERM);
  for (int tick = 0; tick <= 100; tick++) {
    int left = 0;
    for (int i = 0; i < n; i++) {
      if (pids[i] <= 0)
        continue;
      int status;
      pid_t w = waitpid(pids[i], &status, tick == 100 ? 0 : WNOHANG);
      if (w == pids[i] || (w < 0 && errno == ECHILD)) {
        results_remove_child(pids[i]);
        pids[i] = 0;
      } else if (tick == 99) {
        kill(pids[i], SIGKILL);
        left++;
      } else
        left++;
    }
    if (!left)
      break;
    struct timespec pause = { 0, 100000000 };
    nanosleep(&pause, NULL);
  }
}

/* Waits for one child; returns its status, or -1 if compare was interrupted meanwhile (the
 * child is then stopped). */
static int wait_child(pid_t pid)
{
  for (;;) {
    int status;
    pid_t w = waitpid(pid, &status, 0);
    if (w == pid) {
      results_remove_child(pid);
      return results_interrupted() ? -1 : status;
    }
    if (w < 0 && errno != EINTR)
      return -1;
    if (results_interrupted()) {
      stop_children(&pid, 1);
      return -1;
    }
  }
}

/* The runs' summary.json and why.json are read with jansson. */

/* The member at a dotted path ("breakdown.exposed_comm_s.tp"), or NULL. */
static const json_t *json_at(const json_t *root, const char *path)
{
  const json_t *v = root;
  char component[128];
  while (v != NULL && *path) {
    size_t len = strcspn(path, ".");
    if (len >= sizeof component || !json_is_object(v))
      return NULL;
    memcpy(component, path, len);
    component[len] = '\0';
    v = json_object_get(v, component);
    path += len;
    if (*path == '.')
      path++;
  }
  return v;
}

enum json_found { FOUND_ABSENT = -1, FOUND_NUMBER = 0, FOUND_NULL = 1 };

/* A number (true/false as 1/0) at path: FOUND_NUMBER, FOUND_NULL (the run does not model it), or
 * FOUND_ABSENT (the fabric has no such thing). */
static enum json_found json_value(const json_t *root, const char *path, double *v)
{
  const json_t *p = json_at(root, path);
  *v = NAN;
  if (p == NULL)
    return FOUND_ABSENT;
  if (json_is_null(p))
    return FOUND_NULL;
  if (json_is_boolean(p)) {
    *v = json_is_true(p);
    return FOUND_NUMBER;
  }
  if (!json_is_number(p))
    return FOUND_ABSENT;
  *v = json_number_value(p);
  return FOUND_NUMBER;
}

/* A string at path, or "?" */
static void json_text(const json_t *root, const char *path, char *buf, size_t len)
{
  const json_t *p = json_at(root, path);
  snprintf(buf, len, "%s", json_is_string(p) ? json_string_value(p) : "?");
}

static double json_number(const json_t *root, const char *path)
{
  double v;
  json_value(root, path, &v);
  return v;
}

/* A run's JSON output, or NULL when it is missing or not JSON (the table then says n/a). */
static json_t *load_json(const char *path) { return json_load_file(path, 0, NULL); }

static char *read_file(const char *path)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  fclose(f);
  return buf;
}

enum row_unit { ROW_PERCENT, ROW_SECONDS, ROW_GB, ROW_COUNT, ROW_TOKENS };
static const char *const unit_names[] = { "%", "s", "GB", "count", "tokens/s" };

struct row {
  const char *label;
  const char *key; /* its path in each run's summary.json */
  double scale;    /* comparison.json's value = summary value x scale */
  enum row_unit unit;
};

/* Rows whose value is only a lower bound in a run where LOWER_BOUND_IF_ABOVE_ZERO is above 0:
 * flow fidelity estimates no ECN marks, CNPs, rate cuts nor PFC pauses at the ports DCQCN held
 * that the packet model did not measure (docs/roce.md, "Flow fidelity: estimated counters"), so
 * a plain number would read as a count where part is missing. */
#define LOWER_BOUND_IF_ABOVE_ZERO "counters.dcqcn_held_unestimated_s_est"
static const char *const lower_bound_rows[] = { "counters.ecn_marks_est", "counters.cnps_est",
                                                "counters.dcqcn_rate_cuts_est", "counters.pfc_paused_s_est" };

/* The table's rows: what a user compares, and the counters that explain the difference. The
 * breakdown rows add up to the iteration time (replay.h says how each wait is attributed). */
static const struct row table_rows[] = {
  { "MFU", "mfu", 100, ROW_PERCENT },
  { "HFU", "hfu", 100, ROW_PERCENT },
  { "iteration time", "iteration_time_s", 1, ROW_SECONDS },
  { "throughput", "tokens_per_s", 1, ROW_TOKENS },
  { "compute", "breakdown.compute_s", 1, ROW_SECONDS },
  { "exposed comm: tp", "breakdown.exposed_comm_s.tp", 1, ROW_SECONDS },
  { "exposed comm: pp", "breakdown.exposed_comm_s.pp", 1, ROW_SECONDS },
  { "exposed comm: dp", "breakdown.exposed_comm_s.dp", 1, ROW_SECONDS },
  { "exposed comm: ep", "breakdown.exposed_comm_s.ep", 1, ROW_SECONDS },
  { "exposed comm: cp", "breakdown.exposed_comm_s.cp", 1, ROW_SECONDS },
  { "exposed comm: dp_ep", "breakdown.exposed_comm_s.dp_ep", 1, ROW_SECONDS },
  { "exposed comm: world", "breakdown.exposed_comm_s.world", 1, ROW_SECONDS },
  { "exposed comm: emb", "breakdown.exposed_comm_s.emb", 1, ROW_SECONDS },
  { "exposed comm: mp", "breakdown.exposed_comm_s.mp", 1, ROW_SECONDS },
  { "pipeline bubble", "breakdown.bubble_s", 1, ROW_SECONDS },
  { "waiting for stragglers", "breakdown.straggler_s", 1, ROW_SECONDS },
  { "other waiting", "breakdown.other_s", 1, ROW_SECONDS },
  { "fabric bytes (all NICs)", "counters.fabric_bytes", 1e-9, ROW_GB },
  { "mean link utilisation", "counters.link_utilisation_mean", 100, ROW_PERCENT },
  { "max link utilisation", "counters.link_utilisation_max", 100, ROW_PERCENT },
  { "credit stalls (IB, summed over ports)", "counters.credit_stall_s", 1, ROW_SECONDS },
  { "AR decisions (IB)", "counters.adaptive_routing_decisions", 1, ROW_COUNT },
  { "congestion-tree caps (IB)", "counters.flow_congestion_tree_caps", 1, ROW_COUNT },
  { "credit-window caps (IB)", "counters.flow_window_caps", 1, ROW_COUNT },
  { "PFC pause frames", "counters.pfc_pause_frames", 1, ROW_COUNT },
  { "PFC paused time (summed over ports)", "counters.pfc_paused_s", 1, ROW_SECONDS },
  { "ECN marks", "counters.ecn_marks", 1, ROW_COUNT },
  { "CNPs", "counters.cnps", 1, ROW_COUNT },
  { "DCQCN rate cuts", "counters.dcqcn_rate_cuts", 1, ROW_COUNT },
  { "PFC paused time (est.)", "counters.pfc_paused_s_est", 1, ROW_SECONDS },
  { "ECN marks (est.)", "counters.ecn_marks_est", 1, ROW_COUNT },
  { "DCQCN-held port time (est.)", "counters.dcqcn_held_s_est", 1, ROW_SECONDS },
  { "CNPs (est.)", "counters.cnps_est", 1, ROW_COUNT },
  { "DCQCN rate cuts (est.)", "counters.dcqcn_rate_cuts_est", 1, ROW_COUNT },
  { "drops", "counters.drops", 1, ROW_COUNT },
  { "retransmitted bytes", "counters.retransmitted_bytes", 1e-9, ROW_GB },
  { "retransmitted bytes (est.)", "counters.retransmitted_bytes_est", 1e-9, ROW_GB },
  { "go-back-N timeouts", "counters.gbn_timeouts", 1, ROW_COUNT },
  { "go-back-N timeouts (est.)", "counters.gbn_timeouts_est", 1, ROW_COUNT },
  { "failures: flows re-routed", "failures.flows_rerouted", 1, ROW_COUNT },
  { "failures: bytes retransmitted", "failures.bytes_retransmitted", 1, ROW_COUNT },
};
#define N_ROWS (sizeof table_rows / sizeof table_rows[0])
#define LABEL_WIDTH 38

/* Whether row r can be a lower bound (lower_bound_rows). */
static int row_may_be_bound(const struct row *r)
{
  for (size_t i = 0; i < sizeof lower_bound_rows / sizeof lower_bound_rows[0]; i++)
    if (strcmp(lower_bound_rows[i], r->key) == 0)
      return 1;
  return 0;
}

/* Whether row r's value in this run is only a lower bound. */
static int row_is_lower_bound(const json_t *summary, const struct row *r)
{
  double v;
  return row_may_be_bound(r) && json_value(summary, LOWER_BOUND_IF_ABOVE_ZERO, &v) == FOUND_NUMBER && v > 0;
}

/* n/a: the run does not model it at its fidelity (null); -: the fabric has no such mechanism;
 * ">= ": a lower bound. */
static void print_value(FILE *out, enum json_found found, double v, const struct row *r, int lower_bound)
{
  if (found != FOUND_NUMBER) {
    fprintf(out, " %16s", found == FOUND_NULL ? "n/a" : "-");
    return;
  }
  char text[48];
  double x = v * r->scale;
  switch (r->unit) {
  case ROW_PERCENT: snprintf(text, sizeof text, "%.2f %%", x); break;
  case ROW_SECONDS:
    /* no "-0.0000 s" from rounding */
    snprintf(text, sizeof text, "%s%.4f s", lower_bound ? ">= " : "", fabs(x) < 5e-5 ? 0.0 : x);
    break;
  case ROW_GB: snprintf(text, sizeof text, "%.2f GB", x); break;
  case ROW_TOKENS: snprintf(text, sizeof text, "%.0f tokens/s", x); break;
  case ROW_COUNT:
  default: snprintf(text, sizeof text, "%s%.0f", lower_bound ? ">= " : "", x); break;
  }
  fprintf(out, " %16s", text);
}

/* The one-line description of what was simulated, from a run's summary.json: the table's and the
 * chart's title, comparison.json's scenario.title. */
static void scenario_title(const json_t *summary, char *buf, size_t len)
{
  char model[64], gpu[32], over[32], rate[32];
  json_text(summary, "workload.model", model, sizeof model);
  json_text(summary, "workload.gpu", gpu, sizeof gpu);
  json_text(summary, "platform.oversubscription", over, sizeof over);
  json_text(summary, "platform.link_rate", rate, sizeof rate);
  for (char *c = over; *c; c++)
    if (*c == ',')
      *c = ':';
  char fidelity[16];
  json_text(summary, "fidelity", fidelity, sizeof fidelity);
  snprintf(buf, len,
           "%s on %.0f %s (TP %.0f, PP %.0f, VPP %.0f, DP %.0f, EP %.0f, CP %.0f; micro-batch %.0f, global batch %.0f, "
           "seq %.0f) | %.0f-tier %sfat-tree, radix %.0f, oversubscription %s, %s links | %s fidelity, seed %.0f",
           model, json_number(summary, "workload.gpus"), gpu, json_number(summary, "workload.tp"),
           json_number(summary, "workload.pp"), json_number(summary, "workload.vpp"),
           json_number(summary, "workload.dp"), json_number(summary, "workload.ep"),
           json_number(summary, "workload.cp"), json_number(summary, "workload.micro_batch"),
           json_number(summary, "workload.global_batch"), json_number(summary, "workload.seq"),
           json_number(summary, "platform.tiers"),
           json_number(summary, "platform.rail_optimized") == 1 ? "rail-optimized " : "",
           json_number(summary, "platform.radix"), over, rate, fidelity, json_number(summary, "seed"));
}

static const char *const memory_keys[] = { "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                                           "other_bytes",   "total_bytes",     "capacity_bytes" };

/* The per-GPU memory of the worst stage (summary.json's "memory"; every run has the same), or n/a
 * for a workload without the model's dimensions. */
static void print_memory(FILE *out, const json_t *summary)
{
  double v[7];
  for (int i = 0; i < 7; i++) {
    char path[64];
    snprintf(path, sizeof path, "memory.%s", memory_keys[i]);
    if (json_value(summary, path, &v[i]) != FOUND_NUMBER) {
      fprintf(out, "memory per GPU: n/a (the workload does not give the model's dimensions)\n");
      return;
    }
  }
  fprintf(out,
          "memory per GPU (stage %.0f, the largest): weights %.2f GB, gradients %.2f GB, optimizer %.2f GB, "
          "activations %.2f GB (%.0f micro-batch%s in flight), embedding/output buffers %.2f GB; total %.2f GB of "
          "%.0f GB%s\n",
          json_number(summary, "memory.stage"), v[0] / 1e9, v[1] / 1e9, v[2] / 1e9, v[3] / 1e9,
          json_number(summary, "memory.inflight_microbatches"),
          json_number(summary, "memory.inflight_microbatches") == 1 ? "" : "es", v[4] / 1e9, v[5] / 1e9, v[6] / 1e9,
          v[5] > v[6] ? " (does not fit: --ignore-memory)" : "");
}

/* comparison.json's "scenario": the same facts as members. */
static void write_scenario(FILE *f, const json_t *summary, const char *title)
{
  static const char *const ints[] = { "workload.gpus", "workload.tp",          "workload.pp",
                                      "workload.vpp",  "workload.dp",          "workload.ep",
                                      "workload.cp",   "workload.micro_batch", "workload.global_batch",
                                      "workload.seq",  "workload.microbatches" };
  char text[64];
  fprintf(f, "  \"scenario\": {\n    \"title\": ");
  json_write_string(f, title);
  json_text(summary, "workload.model", text, sizeof text);
  fprintf(f, ",\n    \"model\": ");
  json_write_string(f, text);
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    fprintf(f, ", \"%s\": %.0f", ints[i] + 9, json_number(summary, ints[i]));
  json_text(summary, "workload.gpu", text, sizeof text);
  fprintf(f, ", \"gpu\": ");
  json_write_string(f, text);
  fprintf(f,
          ",\n    \"platform\": {\"gpus\": %.0f, \"gpus_per_node\": %.0f, \"tiers\": %.0f, \"radix\": %.0f, "
          "\"rail_optimized\": %s, \"oversubscription\": ",
          json_number(summary, "platform.gpus"), json_number(summary, "platform.gpus_per_node"),
          json_number(summary, "platform.tiers"), json_number(summary, "platform.radix"),
          json_number(summary, "platform.rail_optimized") == 1 ? "true" : "false");
  json_text(summary, "platform.oversubscription", text, sizeof text);
  json_write_string(f, text);
  fprintf(f, ", \"link_rate\": ");
  json_text(summary, "platform.link_rate", text, sizeof text);
  json_write_string(f, text);
  fprintf(f, ", \"nvlink_rate\": ");
  json_text(summary, "platform.nvlink_rate", text, sizeof text);
  json_write_string(f, text);
  fprintf(f, "},\n    \"recompute\": ");
  json_text(summary, "workload.recompute_granularity", text, sizeof text);
  json_write_string(f, text);
  /* The runs' "memory", or null (a workload without the model's dimensions). */
  fprintf(f, ",\n    \"memory\": ");
  double v;
  if (json_value(summary, "memory.total_bytes", &v) != FOUND_NUMBER) {
    fprintf(f, "null");
  } else {
    fprintf(f, "{\"stage\": %.0f", json_number(summary, "memory.stage"));
    for (size_t i = 0; i < sizeof memory_keys / sizeof memory_keys[0]; i++) {
      char path[64];
      snprintf(path, sizeof path, "memory.%s", memory_keys[i]);
      fprintf(f, ", \"%s\": %s", memory_keys[i], JSON_NUMBER(json_number(summary, path)));
    }
    fprintf(f, ", \"inflight_microbatches\": %.0f, \"fits\": %s}", json_number(summary, "memory.inflight_microbatches"),
            json_number(summary, "memory.fits") == 1 ? "true" : "false");
  }
  json_text(summary, "fidelity", text, sizeof text);
  fprintf(f, ",\n    \"fidelity\": ");
  json_write_string(f, text);
  fprintf(f, ", \"seed\": %.0f\n  },\n", json_number(summary, "seed"));
}

static int push(const char **args, int *n, const char *a, const char *b)
{
  if (*n > MAX_ARGS - 8)
    return -1;
  args[(*n)++] = a;
  if (b)
    args[(*n)++] = b;
  return 0;
}

/* A copy of the option name the parser just read, that lives as long as o. */
static const char *keep_name(struct compare_options *o, const struct cli *c)
{
  if (o->n_spelled == MAX_ARGS)
    return c->spelled; /* push() refuses before this happens */
  snprintf(o->spelled[o->n_spelled], sizeof o->spelled[0], "%s", c->spelled);
  return o->spelled[o->n_spelled++];
}

static int parse_fabrics(struct compare_options *o, const struct cli *c)
{
  return run_parse_fabrics(c, o->fabric_list, sizeof o->fabric_list, o->fabrics, MAX_FABRICS, &o->n_fabrics);
}

/* Reads the options; returns 0 or the exit status of a usage error (printed). */
static int parse_options(int argc, char **argv, struct compare_options *o, int *help)
{
  struct cli c;
  cli_init(&c, "sgfabric compare", argc, argv);
  cli_add_table(&c, compare_options_table);
  cli_add_table(&c, wl_cli_options());
  cli_add_table(&c, platform_cli_options());
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    if (id == CLI_ERROR)
      return CLI_USAGE;
    if (id == CLI_HELP) {
      *help = 1;
      return 0;
    }
    if (id == CLI_POSITIONAL)
      return cli_unexpected(&c);
    int full = 0;
    if (c.table == TABLE_WORKLOAD) {
      o->has_model |= id == WL_OPT_MODEL || id == WL_OPT_MODEL_FILE;
      o->has_tp |= id == WL_OPT_TP;
      o->has_pp |= id == WL_OPT_PP;
      o->has_recompute |=
          id == WL_OPT_RECOMPUTE || id == WL_OPT_RECOMPUTE_GRANULARITY || id == WL_OPT_RECOMPUTE_ACTIVATIONS;
      o->has_sequence_parallel |= id == WL_OPT_SEQUENCE_PARALLEL;
      /* The runs check the memory again: they must be told too. */
      if (id == WL_OPT_IGNORE_MEMORY && push(o->run_args, &o->n_run, "--ignore-memory", NULL))
        return cli_usage_error(&c, "too many options");
      full = push(o->workload_args, &o->n_workload, keep_name(o, &c), c.value);
    } else if (c.table == TABLE_PLATFORM) {
      if (!o->first_platform_option)
        o->first_platform_option = c.opt->name;
      full = push(o->platform_args, &o->n_platform, keep_name(o, &c), c.value);
    } else {
      long seed;
      switch (id) {
      case CMP_OPT_OUT: o->out = c.value; break;
      case CMP_OPT_PLATFORM: o->platform = c.value; break;
      case CMP_OPT_FABRICS:
        if (parse_fabrics(o, &c) != 0)
          return CLI_USAGE;
        break;
      case CMP_OPT_FIDELITY:
        if (run_parse_fidelity(&c, c.value, &o->fidelity) != 0)
          return CLI_USAGE;
        o->has_fidelity = 1;
        full = push(o->run_args, &o->n_run, "--fidelity", c.value);
        break;
      case CMP_OPT_SEED:
        /* The workload's seed is a long: the range both accept. */
        if (cli_long(&c, 0, LONG_MAX, &seed) != 0)
          return CLI_USAGE;
        full = push(o->run_args, &o->n_run, "--seed", c.value) ||
               push(o->workload_args, &o->n_workload, "--seed", c.value);
        break;
      case CMP_OPT_CFG:
        if (run_check_cfg(&c, c.value) != 0)
          return CLI_USAGE;
        full = push(o->run_args, &o->n_run, "--cfg", c.value);
        break;
      case CMP_OPT_HELP_CFG: o->help_cfg = 1; break;
      case CMP_OPT_TIMELINE: full = push(o->run_args, &o->n_run, "--timeline", NULL); break;
      case CMP_OPT_FAILURES:
        /* The runs read DIR's copy (write_inputs), as they read the platform. */
        o->failures = c.value;
        full = push(o->run_args, &o->n_run, "--failures", "failures.csv");
        break;
      case CMP_OPT_FORCE: o->force = 1; break;
      case CMP_OPT_GPUS:
        if (cli_int(&c, 1, 1 << 24, &o->gpus) != 0)
          return CLI_USAGE;
        break;
      case CMP_OPT_GPU:
        o->gpu = c.value;
        full = push(o->workload_args, &o->n_workload, "--gpu", c.value);
        break;
      }
    }
    if (full)
      return cli_usage_error(&c, "too many options");
  }
  if (o->platform && o->first_platform_option)
    return cli_usage_error(&c, "--%s builds a platform; it cannot be combined with --platform %s",
                           o->first_platform_option, o->platform);
  return 0;
}

/* A given platform whose size or GPU type differ from the job's is allowed (the job may use part
 * of it) but worth a warning: MFU is computed for the workload's GPUs. */
static void check_platform_matches(const struct compare_options *o)
{
  char err[1024];
  struct platform *p = platform_load(o->platform, err, sizeof err);
  if (p == NULL)
    return; /* each run reports the error */
  const struct gpu_type *job = gpu_type_find(o->gpu ? o->gpu : "H100");
  if (p->topo->n_gpus != o->gpus)
    fprintf(stderr, "sgfabric compare: warning: the job has %d GPUs, the platform %s has %d\n", o->gpus, o->platform,
            p->topo->n_gpus);
  if (job && p->gpu_type[0] && gpu_type_find(p->gpu_type) != job)
    fprintf(stderr, "sgfabric compare: warning: the job runs on %s GPUs, the platform %s has %s GPUs\n", job->name,
            o->platform, p->gpu_type);
  platform_free(p);
}

/* The per-collective table: one entry per (op, group) of any run's summary.json collectives[],
 * in the order the first run lists them (then those only later runs have). */
#define MAX_COLL_ROWS 64
struct coll_row {
  char op[32], group[32];
  long count[MAX_FABRICS]; /* -1: this run has no such collective */
  double time_s[MAX_FABRICS], busbw[MAX_FABRICS];
  char rings[MAX_FABRICS][24]; /* how its rings moved (summary.json's "rings"; "" for null) */
};

/* Fills rows from each summary's "collectives" array. */
static int collect_coll_rows(json_t *const *summary, int n_fabrics, struct coll_row *rows)
{
  int n = 0;
  for (int f = 0; f < n_fabrics; f++) {
    const json_t *list = json_at(summary[f], "collectives");
    size_t i;
    const json_t *entry;
    json_array_foreach(list, i, entry)
    {
      char op[32], group[32];
      json_text(entry, "op", op, sizeof op);
      json_text(entry, "group", group, sizeof group);
      if (!strcmp(op, "sendrecv"))
        continue; /* point-to-point: no bus bandwidth */
      int k = 0;
      while (k < n && (strcmp(rows[k].op, op) || strcmp(rows[k].group, group)))
        k++;
      if (k == n) {
        if (n == MAX_COLL_ROWS)
          continue;
        memset(&rows[n], 0, sizeof rows[n]);
        snprintf(rows[n].op, sizeof rows[n].op, "%s", op);
        snprintf(rows[n].group, sizeof rows[n].group, "%s", group);
        for (int g = 0; g < MAX_FABRICS; g++) {
          rows[n].count[g] = -1;
          rows[n].time_s[g] = rows[n].busbw[g] = NAN;
        }
        n++;
      }
      rows[k].count[f] = (long)json_number(entry, "count");
      rows[k].time_s[f] = json_number(entry, "time_s");
      rows[k].busbw[f] = json_number(entry, "busbw_GBps");
      const json_t *rings = json_at(entry, "rings");
      snprintf(rows[k].rings[f], sizeof rows[k].rings[f], "%s", json_is_string(rings) ? json_string_value(rings) : "");
    }
  }
  return n;
}

static void write_coll_rows(FILE *cj, const struct coll_row *rows, int n, int n_fabrics)
{
  fprintf(cj, "  \"collectives\": [");
  for (int k = 0; k < n; k++) {
    fprintf(cj, "%s\n    {\"op\": \"%s\", \"group\": \"%s\", \"count\": [", k ? "," : "", rows[k].op, rows[k].group);
    for (int f = 0; f < n_fabrics; f++) {
      if (rows[k].count[f] < 0)
        fprintf(cj, "%snull", f ? ", " : "");
      else
        fprintf(cj, "%s%ld", f ? ", " : "", rows[k].count[f]);
    }
    fprintf(cj, "], \"time_s\": [");
    for (int f = 0; f < n_fabrics; f++)
      fprintf(cj, "%s%s", f ? ", " : "", JSON_NUMBER(rows[k].time_s[f]));
    fprintf(cj, "], \"busbw_GBps\": [");
    for (int f = 0; f < n_fabrics; f++)
      fprintf(cj, "%s%s", f ? ", " : "", JSON_NUMBER(rows[k].busbw[f]));
    /* slowdown of each fabric against the first: its total time over the first's */
    fprintf(cj, "], \"slowdown\": [");
    for (int f = 0; f < n_fabrics; f++) {
      double a = rows[k].time_s[0], b = rows[k].time_s[f];
      fprintf(cj, "%s%s", f ? ", " : "", JSON_NUMBER(a > 0 ? b / a : NAN));
    }
    fprintf(cj, "], \"rings\": [");
    for (int f = 0; f < n_fabrics; f++) {
      fprintf(cj, "%s", f ? ", " : "");
      json_write_string_or_null(cj, rows[k].rings[f][0] ? rows[k].rings[f] : NULL);
    }
    fprintf(cj, "]}");
  }
  fprintf(cj, "\n  ],\n");
}

static void print_coll_rows(FILE *out, const struct coll_row *rows, int n, const char *const *fabrics, int n_fabrics)
{
  if (n == 0)
    return;
  printf("\nper collective (count; total time; busbw)%s\n", n_fabrics > 1 ? "; slowdown against the first fabric" : "");
  for (int k = 0; k < n; k++) {
    char label[80];
    snprintf(label, sizeof label, "%.31s %.31s", rows[k].op, rows[k].group);
    fprintf(out, "  %-20s", label);
    for (int f = 0; f < n_fabrics; f++) {
      if (rows[k].count[f] < 0) {
        fprintf(out, "  %s: n/a", fabrics[f]);
        continue;
      }
      fprintf(out, "  %s: %ld, %.4f s, %.1f GB/s", fabrics[f], rows[k].count[f], rows[k].time_s[f], rows[k].busbw[f]);
      if (f > 0) {
        double a = rows[k].time_s[0], b = rows[k].time_s[f];
        if (a > 0 && !isnan(b))
          fprintf(out, " (x%.2f)", b / a);
        else
          fprintf(out, " (x n/a)");
      }
    }
    fprintf(out, "\n");
  }
  /* coll/ring:auto moves rings step by step or pipelined by fabric (docs/collectives.md) */
  for (int k = 0; k < n; k++)
    for (int f = 1; f < n_fabrics; f++)
      if (rows[k].count[0] >= 0 && rows[k].count[f] >= 0 && strcmp(rows[k].rings[0], rows[k].rings[f])) {
        fprintf(out, "  (rings:");
        for (int g = 0; g < n_fabrics; g++)
          fprintf(out, "%s %s %s", g ? "," : "", fabrics[g], rows[k].rings[g][0] ? rows[k].rings[g] : "none");
        fprintf(out, "; coll/ring:auto moves rings step by step where a fabric's model acts on the steps: "
                     "docs/collectives.md)\n");
        return;
      }
}

/* The "why" of each run (its why.json, written by run --why) in comparison.json, as it is, and a
 * few of its figures on stdout. */
static int write_why(FILE *cj, char *const *why, const char *const *fabrics, int n_fabrics)
{
  fprintf(cj, "  \"why\": {");
  for (int f = 0; f < n_fabrics; f++) {
    fprintf(cj, "%s\n    ", f ? "," : "");
    json_write_string(cj, fabrics[f]);
    fprintf(cj, ": ");
    if (why[f] == NULL) {
      fprintf(cj, "null");
      continue;
    }
    /* indented by four more spaces, without its final newline */
    size_t len = strlen(why[f]);
    while (len > 0 && why[f][len - 1] == '\n')
      len--;
    for (size_t i = 0; i < len; i++) {
      fputc(why[f][i], cj);
      if (why[f][i] == '\n')
        fputs("    ", cj);
    }
  }
  fprintf(cj, "\n  },\n");
  return 0;
}

static void print_why_number(FILE *out, const json_t *why, const char *key, const char *fmt)
{
  double v;
  enum json_found found = json_value(why, key, &v);
  if (found == FOUND_NUMBER)
    fprintf(out, fmt, v);
  else
    fprintf(out, " %16s", "n/a");
}

static void print_why(FILE *out, json_t *const *why, const char *const *fabrics, int n_fabrics)
{
  printf("\nwhy%*s", LABEL_WIDTH - 3, "");
  for (int f = 0; f < n_fabrics; f++)
    printf(" %16s", fabrics[f]);
  printf("\n");
  static const struct {
    const char *label, *key, *fmt;
  } lines[] = {
    { "flows per switch link, max", "flows_per_switch_link_max", " %16.0f" },
    { "flows per switch link, mean", "flows_per_switch_link_mean", " %16.2f" },
    { "flows per busiest link, max", "flows_per_busiest_link_max", " %16.0f" },
    { "flows per busiest link, mean", "flows_per_busiest_link_mean", " %16.2f" },
    { "collective edges on switch links", "collective_edges", " %16.0f" },
    { "  sharing a link with their own", "collective_edges_sharing_link", " %16.0f" },
    { "  with another of their group", "collective_edges_sharing_link_in_group", " %16.0f" },
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    fprintf(out, "%-*s", LABEL_WIDTH, lines[i].label);
    for (int f = 0; f < n_fabrics; f++)
      print_why_number(out, why[f], lines[i].key, lines[i].fmt);
    fprintf(out, "\n");
  }
  for (int f = 0; f < n_fabrics; f++) {
    const json_t *top = json_array_get(json_at(why[f], "top_links"), 0);
    if (top == NULL)
      continue;
    char from[64], to[64];
    json_text(top, "from", from, sizeof from);
    json_text(top, "to", to, sizeof to);
    fprintf(out, "busiest link, %s: %s>%s, %.1f %% utilised\n", fabrics[f], from, to,
            100 * json_number(top, "utilisation"));
  }
}

/* Runs an analysis script (python3, no shell: an argv) with its log to /dev/null; 0 if it ran and
 * exited 0, -1 otherwise, 1 if compare was interrupted meanwhile. */
static int run_script(char **argv_rest)
{
  char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
  static char found[4400];
  if (python == NULL) {
    const char *search = getenv("PATH");
    for (const char *p = search ? search : ""; *p;) {
      size_t n = strcspn(p, ":");
      snprintf(found, sizeof found, "%.*s/python3", (int)n, p);
      if (n && access(found, X_OK) == 0) {
        python = found;
        break;
      }
      p += n + (p[n] == ':');
    }
  }
  if (python == NULL)
    return -1;
  char *argv[16];
  int n = 0;
  argv[n++] = python;
  for (int i = 0; argv_rest[i] && n < 15; i++)
    argv[n++] = argv_rest[i];
  argv[n] = NULL;
  pid_t pid = spawn(argv, "/dev/null", NULL);
  int status = pid > 0 ? wait_child(pid) : -1;
  if (results_interrupted())
    return 1;
  return status == 0 ? 0 : -1;
}

/* Writes the runs' inputs into the results directory: the workload trace the generator makes
 * from compare's workload options, the platform (a copy of --platform, or generated), and a copy
 * of --model-file. The runs read them there (they run in DIR, so that their manifests name the
 * inputs by paths relative to DIR, which exist after the rename). 0; after saying what failed,
 * compare's exit status (2: the generators refused an option, 1: the rest); -1 when compare was
 * interrupted. */
static int write_inputs(const struct compare_options *o, struct results *r, const char *model_file)
{
  char platform[4300], workload[4300];
  snprintf(workload, sizeof workload, "%s/workload.txt", r->tmp);
  snprintf(platform, sizeof platform, "%s/platform.xml", r->tmp);
  const char *wargv[MAX_ARGS + 4];
  int wargc = 0;
  wargv[wargc++] = "workload";
  for (int i = 0; i < o->n_workload; i++)
    wargv[wargc++] = o->workload_args[i];
  wargv[wargc++] = "-o";
  wargv[wargc++] = workload;
  wargv[wargc] = NULL;
  /* The generators' one-line reports name the temporary directory: not for compare's output
   * (their errors, on stderr, still show). */
  int rc = run_quiet_main(workload_cli_main, wargc, (char **)wargv);
  if (results_interrupted())
    return -1;
  if (rc != 0) {
    /* 2: an option is refused; 1: the model file, the layout or writing the trace failed. */
    fprintf(stderr, "sgfabric compare: %s (the reason is above)\n",
            rc == 2 ? "the workload options are refused" : "cannot generate the workload");
    return rc;
  }
  results_register(r, "workload.txt");
  if (o->platform) {
    results_register(r, "platform.xml");
    if (results_copy_file(o->platform, platform) != 0) {
      fprintf(stderr, "sgfabric compare: --platform %s: cannot copy it into %s: %s\n", o->platform, o->out,
              strerror(errno));
      return 1;
    }
  } else {
    rc = run_generate_platform(o->gpus, o->gpu, o->platform_args, o->n_platform, platform);
    if (results_interrupted())
      return -1;
    if (rc != 0) {
      fprintf(stderr, "sgfabric compare: cannot build a platform for %d GPUs (above)\n", o->gpus);
      return rc;
    }
    results_register(r, "platform.xml");
  }
  if (o->failures) {
    char failures_copy[4400];
    snprintf(failures_copy, sizeof failures_copy, "%s/failures.csv", r->tmp);
    results_register(r, "failures.csv");
    if (results_copy_file(o->failures, failures_copy) != 0) {
      fprintf(stderr, "sgfabric compare: --failures %s: cannot copy it into %s: %s\n", o->failures, o->out,
              strerror(errno));
      return 1;
    }
  }
  char model_copy[4400];
  snprintf(model_copy, sizeof model_copy, "%s/model.txt", r->tmp);
  if (model_file) {
    results_register(r, "model.txt");
    if (results_copy_file(model_file, model_copy) != 0) {
      fprintf(stderr, "sgfabric compare: --model-file %s: cannot copy it into %s: %s\n", model_file, o->out,
              strerror(errno));
      return 1;
    }
  }
  return 0;
}

/* What the runs wrote, read back for the table and comparison.json. */
struct compare_runs {
  const char *const *fabrics;
  int n;
  json_t *summary[MAX_FABRICS], *why[MAX_FABRICS]; /* NULL where a run wrote none */
  char *why_text[MAX_FABRICS];                     /* copied into comparison.json as it is */
  struct coll_row coll[MAX_COLL_ROWS];
  int n_coll;
  char title[1024];
};

static void runs_load(struct compare_runs *runs, const char *const *fabrics, int n, char outs[][4400],
                      char logs[][4400])
{
  memset(runs, 0, sizeof *runs);
  runs->fabrics = fabrics;
  runs->n = n;
  char path[4500];
  for (int f = 0; f < n; f++) {
    snprintf(path, sizeof path, "%.4400s/summary.json", outs[f]);
    runs->summary[f] = load_json(path);
    snprintf(path, sizeof path, "%.4400s/why.json", outs[f]);
    runs->why[f] = load_json(path);
    runs->why_text[f] = runs->why[f] ? read_file(path) : NULL;
    unlink(logs[f]);
  }
  runs->n_coll = collect_coll_rows(runs->summary, n, runs->coll);
  scenario_title(runs->summary[0], runs->title, sizeof runs->title);
}

static void runs_free(struct compare_runs *runs)
{
  for (int f = 0; f < runs->n; f++) {
    json_decref(runs->summary[f]);
    json_decref(runs->why[f]);
    free(runs->why_text[f]);
  }
}

/* The table on stdout: scenario, memory, the rows each run has, collectives, why, the MFU ratio. */
static void print_comparison(FILE *out, const struct compare_runs *runs)
{
  json_t *const *summary = runs->summary;
  int n = runs->n;
  fprintf(out, "%s\n", runs->title);
  print_memory(out, summary[0]);
  fprintf(out, "\n");
  fprintf(out, "%-*s", LABEL_WIDTH, "");
  for (int f = 0; f < n; f++)
    fprintf(out, " %16s", runs->fabrics[f]);
  fprintf(out, "\n");
  int shown_na = 0, shown_absent = 0, shown_bound = 0;
  for (size_t k = 0; k < N_ROWS; k++) {
    enum json_found found[MAX_FABRICS];
    double v[MAX_FABRICS];
    int any = 0;
    for (int f = 0; f < n; f++) {
      found[f] = json_value(summary[f], table_rows[k].key, &v[f]);
      any |= found[f] != FOUND_ABSENT;
    }
    if (!any) /* none of these fabrics has it */
      continue;
    fprintf(out, "%-*s", LABEL_WIDTH, table_rows[k].label);
    for (int f = 0; f < n; f++) {
      int bound = found[f] == FOUND_NUMBER && row_is_lower_bound(summary[f], &table_rows[k]);
      print_value(out, found[f], v[f], &table_rows[k], bound);
      shown_bound |= bound;
      shown_na |= found[f] == FOUND_NULL;
      shown_absent |= found[f] == FOUND_ABSENT;
    }
    fprintf(out, "\n");
  }
  if (shown_na || shown_absent)
    fprintf(out, "%s%s%s\n", shown_na ? "(n/a: not modelled at this fidelity" : "(",
            shown_na && shown_absent ? "; " : "", shown_absent ? "-: not a mechanism of this fabric)" : ")");
  if (shown_bound)
    fprintf(out, "(>=: a lower bound; the ports DCQCN held lack some of their estimates: docs/roce.md)\n");
  print_coll_rows(out, runs->coll, runs->n_coll, runs->fabrics, n);
  print_why(out, runs->why, runs->fabrics, n);
  if (n == 2) {
    double a = json_number(summary[0], "mfu"), b = json_number(summary[1], "mfu");
    if (a > 0 && !isnan(b))
      fprintf(out, "\n%s reaches %.1f %% of %s's MFU.\n", runs->fabrics[1], 100 * b / a, runs->fabrics[0]);
    else
      fprintf(out, "\nno MFU to compare (the workload has no FLOPs); compare the iteration times.\n");
  }
}

/* comparison.json: the fabrics, the scenario, every row some run has (null where a run does not
 * model it), the collectives, each run's why and its timeline. */
static void write_comparison_json(FILE *cj, const struct compare_runs *runs, char outs[][4400])
{
  json_t *const *summary = runs->summary;
  int n = runs->n;
  fprintf(cj, "{\n  \"fabrics\": [");
  for (int f = 0; f < n; f++) {
    fprintf(cj, "%s", f ? ", " : "");
    json_write_string(cj, runs->fabrics[f]);
  }
  fprintf(cj, "],\n");
  write_scenario(cj, summary[0], runs->title);
  fprintf(cj, "  \"rows\": [");
  int first = 1;
  for (size_t k = 0; k < N_ROWS; k++) {
    int any = 0; /* only keys that resolve in some run's summary.json */
    for (int f = 0; f < n; f++) {
      double v;
      any |= json_value(summary[f], table_rows[k].key, &v) != FOUND_ABSENT;
    }
    if (!any)
      continue;
    fprintf(cj, "%s\n    {\"label\": \"%s\", \"key\": \"%s\", \"unit\": \"%s\", \"scale\": %g, \"values\": [",
            first ? "" : ",", table_rows[k].label, table_rows[k].key, unit_names[table_rows[k].unit],
            table_rows[k].scale);
    for (int f = 0; f < n; f++) {
      double v;
      enum json_found found = json_value(summary[f], table_rows[k].key, &v);
      double x = v * table_rows[k].scale;
      if (found != FOUND_NUMBER)
        fprintf(cj, "%snull", f ? ", " : "");
      else if (table_rows[k].unit == ROW_COUNT && x == floor(x) && fabs(x) < 9007199254740992.0)
        fprintf(cj, "%s%.0f", f ? ", " : "", x);
      else
        fprintf(cj, "%s%s", f ? ", " : "", JSON_NUMBER(x));
    }
    fprintf(cj, "]");
    if (row_may_be_bound(&table_rows[k])) {
      fprintf(cj, ", \"lower_bound\": [");
      for (int f = 0; f < n; f++)
        fprintf(cj, "%s%s", f ? ", " : "", row_is_lower_bound(summary[f], &table_rows[k]) ? "true" : "false");
      fprintf(cj, "]");
    }
    fprintf(cj, "}");
    first = 0;
  }
  fprintf(cj, "\n  ],\n");
  write_coll_rows(cj, runs->coll, runs->n_coll, n);
  write_why(cj, runs->why_text, runs->fabrics, n);
  fprintf(cj, "  \"timeline\": [");
  char path[4500];
  for (int f = 0; f < n; f++) {
    snprintf(path, sizeof path, "%.4400s/timeline.json", outs[f]);
    fprintf(cj, "%s", f ? ", " : "");
    if (access(path, F_OK) == 0) {
      char rel[300];
      snprintf(rel, sizeof rel, "%s/timeline.json", runs->fabrics[f]);
      json_write_string(cj, rel);
    } else
      fprintf(cj, "null");
  }
  fprintf(cj, "]\n}\n");
}

int cmd_compare(int argc, char **argv)
{
  static struct compare_options o;
  memset(&o, 0, sizeof o);
  o.fabrics[0] = "ib";
  o.fabrics[1] = "roce";
  o.n_fabrics = 2;
  o.gpus = 1024;
  char err[1024];
  int help = 0, parse_status = parse_options(argc, argv, &o, &help);
  if (parse_status != 0)
    return parse_status;
  if (help) {
    usage(stdout);
    return 0;
  }
  if (o.help_cfg) {
    run_print_params(stdout, NULL, 0);
    return 0;
  }
  /* The default scenario fills in what the user did not say. */
  snprintf(o.gpus_text, sizeof o.gpus_text, "%d", o.gpus);
  o.workload_args[o.n_workload++] = "--gpus";
  o.workload_args[o.n_workload++] = o.gpus_text;
  if (!o.has_model) {
    o.workload_args[o.n_workload++] = "--model";
    o.workload_args[o.n_workload++] = "gpt3-175b";
  }
  if (!o.has_tp) {
    o.workload_args[o.n_workload++] = "--tp";
    o.workload_args[o.n_workload++] = "8";
  }
  /* GPT-3 175B on TP 8, PP 8 does not fit in 80 GB without recomputation (activations alone take
   * 56 GB on stage 0): the default runs it as Korthikanti et al. 2022 did (table 3, 175B: TP 8,
   * PP 8), with sequence parallelism and selective recomputation, unless told otherwise. */
  if (!o.has_model && !o.has_tp && !o.has_recompute && !o.has_sequence_parallel) {
    o.workload_args[o.n_workload++] = "--recompute";
    o.workload_args[o.n_workload++] = "selective";
    o.workload_args[o.n_workload++] = "--sequence-parallel";
  }
  if (!o.has_pp) {
    o.workload_args[o.n_workload++] = "--pp";
    o.workload_args[o.n_workload++] = "8";
  }
  if (!o.has_fidelity) {
    o.run_args[o.n_run++] = "--fidelity";
    o.run_args[o.n_run++] = "flow";
  }
  if (o.out == NULL)
    o.out = "results/compare";
  run_register_params();
  if (o.platform)
    check_platform_matches(&o);
  if (o.has_fidelity && o.fidelity == FAB_FIDELITY_PACKET && o.gpus > 256)
    fprintf(stderr,
            "sgfabric compare: warning: packet fidelity on %d GPUs simulates every packet of the iteration "
            "and can take hours; --fidelity flow (the default) takes minutes at most\n",
            o.gpus);

  /* A --model-file is an input too: a copy goes into DIR, as the platform's does. */
  const char *model_file = NULL;
  for (int i = 0; i + 1 < o.n_workload; i++)
    if (!strcmp(o.workload_args[i], "--model-file"))
      model_file = o.workload_args[i + 1];

  /* The results go to a temporary directory renamed into place at the end; it is created now,
   * so that a refused or unwritable --out is reported before anything runs. A missing parent
   * (results/ of the default results/compare) is created, and removed again on failure. */
  char parent[4096] = "";
  if (strchr(o.out, '/')) {
    snprintf(parent, sizeof parent, "%s", o.out);
    *strrchr(parent, '/') = '\0';
    struct stat st;
    if (parent[0] && stat(parent, &st) != 0 && errno == ENOENT && mkdir(parent, 0777) == 0)
      ; /* created: parent[] keeps its name */
    else
      parent[0] = '\0';
  }
  static struct results r;
  const char *user_inputs[] = { o.platform, model_file, o.failures };
  results_catch_signals(RESULTS_SIGNALS_FLAG);
  int rc = results_begin(&r, "sgfabric compare", o.out, o.force, user_inputs, 3, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "sgfabric compare: %s\n", err);
    if (parent[0])
      rmdir(parent);
    return rc;
  }
  rc = 1;
  pid_t pids[MAX_FABRICS] = { 0 };
  rc = write_inputs(&o, &r, model_file);
  if (rc < 0)
    goto interrupted;
  if (rc != 0)
    goto fail;
  rc = 1; /* the exit status of any later failure */

  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, "sgfabric compare: cannot find the sgfabric executable\n");
    goto fail;
  }
  self[len] = '\0';
  char outs[MAX_FABRICS][4400], logs[MAX_FABRICS][4400];
  /* The runs' own note (cmd_run.c) goes to their logs, shown only if they fail. The engine is
   * read as the runs will read it: from the --cfg settings passed on (checked already). */
  run_register_params();
  struct param_set *cfgs = fab_param_set_new();
  char cfg_err[256];
  for (int i = 0; i + 1 < o.n_run; i++)
    if (strcmp(o.run_args[i], "--cfg") == 0)
      fab_param_set_cfg(cfgs, o.run_args[i + 1], cfg_err, sizeof cfg_err);
  if (!replay_event_engine_from(cfgs))
    run_note_actor_engine("compare", o.gpus);
  fab_param_set_free(cfgs);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int f = 0; f < o.n_fabrics; f++) {
    snprintf(outs[f], sizeof outs[f], "%s/%s", r.tmp, o.fabrics[f]);
    snprintf(logs[f], sizeof logs[f], "%s/%s.log", r.tmp, o.fabrics[f]);
    char *cargv[MAX_ARGS + 16];
    int c = 0;
    cargv[c++] = self;
    cargv[c++] = "run";
    cargv[c++] = "--platform";
    cargv[c++] = "platform.xml";
    cargv[c++] = "--workload";
    cargv[c++] = "workload.txt";
    cargv[c++] = "--fabric";
    cargv[c++] = (char *)o.fabrics[f];
    cargv[c++] = "--no-progress";
    cargv[c++] = "--why"; /* why.json: the links and collisions behind comparison.json's "why" */
    for (int i = 0; i < o.n_run; i++)
      cargv[c++] = (char *)o.run_args[i];
    cargv[c++] = "--out";
    cargv[c++] = (char *)o.fabrics[f];
    cargv[c] = NULL;
    char entry[RESULTS_MAX_NAME];
    snprintf(entry, sizeof entry, "%s/", o.fabrics[f]);
    results_register(&r, entry);
    pids[f] = spawn(cargv, logs[f], r.tmp);
    if (pids[f] < 0) {
      fprintf(stderr, "sgfabric compare: cannot start the %s run: %s\n", o.fabrics[f], strerror(errno));
      pids[f] = 0;
      goto fail;
    }
  }
  int tty = isatty(2), failed = 0;
  int running = o.n_fabrics;
  while (running > 0 && !failed) {
    int status;
    if (results_interrupted())
      break;
    pid_t done = tty ? waitpid(-1, &status, WNOHANG) : waitpid(-1, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (done == 0) {
      fprintf(stderr, "\r  simulating %d fabrics... %.0f s", o.n_fabrics, (double)(t1.tv_sec - t0.tv_sec));
      sleep(1);
      continue;
    }
    if (done < 0 && errno == EINTR)
      continue;
    if (done < 0)
      break;
    for (int f = 0; f < o.n_fabrics; f++)
      if (pids[f] == done) {
        results_remove_child(done);
        pids[f] = 0;
        running--;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          char *log = read_file(logs[f]);
          fprintf(stderr, "%ssgfabric compare: the %s run failed:\n%s", tty ? "\n" : "", o.fabrics[f], log ? log : "");
          free(log);
          failed = 1;
        }
      }
  }
  if (tty)
    fprintf(stderr, "\r");
  if (results_interrupted())
    goto interrupted;
  if (failed)
    goto fail; /* the other runs are stopped there */
  double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);

  struct compare_runs runs;
  runs_load(&runs, o.fabrics, o.n_fabrics, outs, logs);
  print_comparison(stdout, &runs);
  FILE *cj = results_open(&r, "comparison.json");
  if (cj != NULL)
    write_comparison_json(cj, &runs, outs);
  double seed = json_number(runs.summary[0], "seed");
  runs_free(&runs);
  if (cj == NULL)
    goto fail;
  if (results_close(cj) != 0)
    goto fail;
  /* The chart: analysis/plot_compare.py, next to the executable's source tree or installed.
   * Run with an argv, never through a shell: DIR may hold any character. */
  char script[4400], png[4400], json[4400], analysis[4200];
  run_analysis_dir(analysis, sizeof analysis);
  snprintf(script, sizeof script, "%s/plot_compare.py", analysis);
  snprintf(png, sizeof png, "%s/compare.png", r.tmp);
  snprintf(json, sizeof json, "%s/comparison.json", r.tmp);
  /* Debian's interpreter first: python3-matplotlib installs there, whatever else is on PATH. */
  char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  char *plot_argv[] = { python, script, json, png, NULL };
  if (python[0] != '/') {
    /* execv needs a path: the first python3 on PATH */
    static char found[4400];
    const char *search = getenv("PATH");
    for (const char *p = search ? search : ""; *p;) {
      size_t n = strcspn(p, ":");
      snprintf(found, sizeof found, "%.*s/python3", (int)n, p);
      if (n && access(found, X_OK) == 0) {
        plot_argv[0] = found;
        break;
      }
      p += n + (p[n] == ':');
    }
  }
  pid_t plot = plot_argv[0][0] == '/' ? spawn(plot_argv, "/dev/null", NULL) : -1;
  int plot_status = plot > 0 ? wait_child(plot) : 1;
  if (results_interrupted())
    goto interrupted;
  if (plot_status != 0 || access(png, F_OK) != 0)
    fprintf(stderr, "sgfabric compare: warning: no chart (python3 with matplotlib runs %s)\n", script);
  else
    results_register(&r, "compare.png");
  /* The "why" figures, then the HTML report that holds everything (analysis/plot_why.py,
   * analysis/report_html.py); the report reads DIR's files, the manifest written below excepted:
   * it is given the command line and versions instead (report_html.py's --manifest-* options). */
  char why_script[4400], why_png[4400], report_script[4400], report[4400];
  snprintf(why_script, sizeof why_script, "%s/plot_why.py", analysis);
  snprintf(why_png, sizeof why_png, "%s/why.png", r.tmp);
  char *why_argv[] = { why_script, json, why_png, NULL };
  int why_rc = run_script(why_argv);
  if (why_rc == 1)
    goto interrupted;
  if (why_rc != 0 || access(why_png, F_OK) != 0)
    fprintf(stderr, "sgfabric compare: warning: no why.png (python3 with matplotlib runs %s)\n", why_script);
  else
    results_register(&r, "why.png");
  /* DIR's own manifest, last: it lists the entries a later compare replacing this one may
   * delete. This command line and the inputs every run read, in DIR. */
  char fabrics_json[256] = "\"fabrics\": [";
  for (int f = 0; f < o.n_fabrics; f++)
    snprintf(fabrics_json + strlen(fabrics_json), sizeof fabrics_json - strlen(fabrics_json), "%s\"%s\"", f ? ", " : "",
             o.fabrics[f]);
  snprintf(fabrics_json + strlen(fabrics_json), sizeof fabrics_json - strlen(fabrics_json), "]");
  const char *inputs[4] = { "platform.xml", "workload.txt" };
  const char *given_as[4] = { o.platform, NULL };
  int n_inputs = 2;
  if (model_file) {
    inputs[n_inputs] = "model.txt";
    given_as[n_inputs++] = model_file;
  }
  if (o.failures) {
    inputs[n_inputs] = "failures.csv";
    given_as[n_inputs++] = o.failures;
  }
  struct manifest_desc md = { .argc = argc,
                              .argv = argv,
                              .inputs = inputs,
                              .given_as = given_as,
                              .n_inputs = n_inputs,
                              .base = r.tmp,
                              .seed = isnan(seed) ? 1 : (uint64_t)seed,
                              .extra_json = fabrics_json };
  if (results_write_manifest_desc(&r, &md) != 0) {
    fprintf(stderr, "sgfabric compare: cannot write %s/manifest.json\n", o.out);
    goto fail;
  }
  /* The HTML report reads every file of DIR, the manifest included; once it is written the
   * manifest is written again to list it. */
  snprintf(report_script, sizeof report_script, "%s/report_html.py", analysis);
  snprintf(report, sizeof report, "%s/report.html", r.tmp);
  char *report_argv[] = { report_script, "compare", r.tmp, report, NULL };
  int report_rc = run_script(report_argv);
  if (report_rc == 1)
    goto interrupted;
  if (report_rc != 0 || access(report, F_OK) != 0) {
    unlink(report);
    fprintf(stderr, "sgfabric compare: warning: no report.html (python3 with matplotlib runs %s)\n", report_script);
  } else if (results_register(&r, "report.html") != 0 || results_write_manifest_desc(&r, &md) != 0) {
    fprintf(stderr, "sgfabric compare: cannot write %s/manifest.json\n", o.out);
    goto fail;
  }
  if ((rc = results_commit(&r, err, sizeof err)) != 0) {
    fprintf(stderr, "sgfabric compare: %s\n", err);
    if (parent[0])
      rmdir(parent);
    return rc;
  }
  printf("(simulated in %.1f s; results in %s)\n", wall, o.out);
  return 0;
interrupted:
  stop_children(pids, o.n_fabrics);
  if (parent[0]) {
    results_abort(&r);
    rmdir(parent);
  }
  return results_interrupted_exit(&r);
fail:
  stop_children(pids, o.n_fabrics);
  results_abort(&r);
  if (parent[0])
    rmdir(parent);
  return rc;
}
