/* sgfabric compare: the main job. One training job, run on InfiniBand and on RoCEv2 (each in its
 * own process: SimGrid runs one simulation per process, and the two use both cores), then a
 * side-by-side table, comparison.json and a chart.
 *
 * With no argument it runs the shipped default scenario (docs/compare.md says why this one):
 * GPT-3 175B, TP 8, PP 8, on the 1,024-GPU rail-optimized platform, flow fidelity. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "platform_cli.h"
#include "results.h"
#include "run_common.h"
#include "wl_gen.h"

#define MAX_ARGS 128

struct compare_options {
  const char *workload_args[MAX_ARGS]; /* passed to sgfabric workload */
  int n_workload;
  const char *run_args[MAX_ARGS];      /* passed to each sgfabric run */
  int n_run;
  const char *platform;
  const char *out;
  const char *fabrics[4];
  int n_fabrics;
  int gpus;
  char gpus_text[16];
  int has_model, has_tp, has_pp, has_gpus;
};

static const char *const workload_value_options[] = {"--model", "--model-file", "--gpu", "--gpus", "--tp", "--pp",
                                                     "--vpp", "--ep", "--cp", "--seq", "--micro-batch",
                                                     "--global-batch", "--bucket-params", NULL};
static const char *const workload_flag_options[] = {"--recompute", "--zero1", "--sequence-parallel", "--grad-bf16",
                                                    NULL};

static int in_list(const char *const *list, const char *arg)
{
  for (; *list; list++)
    if (!strcmp(*list, arg))
      return 1;
  return 0;
}

static void usage(FILE *out)
{
  fprintf(out,
          "usage: sgfabric compare [--model NAME] [--gpus N] [--tp T] [--pp P] [--vpp V] [--ep E] [--cp C]\n"
          "                        [--gpu TYPE] [--seq S] [--micro-batch M] [--global-batch B] [--recompute]\n"
          "                        [--platform FILE] [--fidelity packet|flow] [--fabrics ib,roce] [--seed N]\n"
          "                        [--cfg=area/name:value ...] [--out DIR]\n\n"
          "Runs one training iteration of the job on each fabric and prints MFU, iteration time, exposed\n"
          "communication per group and the fabrics' counters side by side. Defaults: GPT-3 175B, 1,024 H100,\n"
          "TP 8, PP 8 (DP 16), 1,024-GPU rail-optimized platform, flow fidelity, out results/compare.\n"
          "DIR gets platform.xml, workload.txt, one run directory per fabric, comparison.json and\n"
          "compare.png (analysis/plot_compare.py).\n");
}

/* Runs argv as a child process with stdout/stderr to log; returns its pid. */
static pid_t spawn(char *const argv[], const char *log)
{
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "w", stdout);
    if (f == NULL || dup2(fileno(stdout), 2) < 0)
      _exit(127);
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* The number after "key": in text, searched after the first occurrence of scope (if any). */
static double json_number(const char *text, const char *scope, const char *key)
{
  const char *p = text;
  char pattern[128];
  if (scope) {
    snprintf(pattern, sizeof pattern, "\"%s\":", scope);
    p = strstr(p, pattern);
    if (p == NULL)
      return NAN;
  }
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  p = strstr(p, pattern);
  if (p == NULL)
    return NAN;
  p += strlen(pattern);
  while (*p == ' ')
    p++;
  if (!strncmp(p, "true", 4))
    return 1;
  if (!strncmp(p, "false", 5))
    return 0;
  char *end;
  double v = strtod(p, &end);
  return end == p ? NAN : v;
}

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

struct row {
  const char *label;
  const char *scope;
  const char *key;
  double scale;
  const char *unit;
};

/* The table's rows: what a user compares, and the counters that explain the difference. */
static const struct row rows[] = {
    {"MFU", NULL, "mfu", 100, "%"},
    {"HFU", NULL, "hfu", 100, "%"},
    {"iteration time", NULL, "iteration_time_s", 1, "s"},
    {"tokens/s", NULL, "tokens_per_s", 1, ""},
    {"compute", "breakdown", "compute_s", 1, "s"},
    {"exposed comm: tp", "exposed_comm_s", "tp", 1, "s"},
    {"exposed comm: pp", "exposed_comm_s", "pp", 1, "s"},
    {"exposed comm: dp", "exposed_comm_s", "dp", 1, "s"},
    {"exposed comm: ep", "exposed_comm_s", "ep", 1, "s"},
    {"exposed comm: cp", "exposed_comm_s", "cp", 1, "s"},
    {"pipeline bubble", "breakdown", "bubble_s", 1, "s"},
    {"waiting for stragglers", "breakdown", "straggler_s", 1, "s"},
    {"fabric bytes", "counters", "fabric_bytes", 1e-9, "GB"},
    {"mean link utilisation", "counters", "link_utilisation_mean", 100, "%"},
    {"max link utilisation", "counters", "link_utilisation_max", 100, "%"},
    {"credit stalls (IB)", "counters", "credit_stall_s", 1, "s"},
    {"AR decisions (IB)", "counters", "adaptive_routing_decisions", 1, ""},
    {"congestion-tree caps (IB)", "counters", "flow_congestion_tree_caps", 1, ""},
    {"credit-window caps (IB)", "counters", "flow_window_caps", 1, ""},
    {"PFC pause frames", "counters", "pfc_pause_frames", 1, ""},
    {"PFC paused time", "counters", "pfc_paused_s", 1, "s"},
    {"ECN marks", "counters", "ecn_marks", 1, ""},
    {"CNPs", "counters", "cnps", 1, ""},
    {"DCQCN rate cuts", "counters", "dcqcn_rate_cuts", 1, ""},
    {"ECN marks (fluid est.)", "counters", "ecn_marks_est", 1, ""},
    {"CNPs (fluid est.)", "counters", "cnps_est", 1, ""},
    {"drops", "counters", "drops", 1, ""},
    {"retransmitted bytes", "counters", "retransmitted_bytes", 1e-9, "GB"},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static void print_value(FILE *out, double v, const struct row *r)
{
  if (isnan(v)) {
    fprintf(out, " %16s", "-");
    return;
  }
  char text[48];
  double x = v * r->scale;
  if (!strcmp(r->unit, "%"))
    snprintf(text, sizeof text, "%.2f %%", x);
  else if (!strcmp(r->unit, "s"))
    snprintf(text, sizeof text, "%.4f s", x);
  else if (!strcmp(r->unit, "GB"))
    snprintf(text, sizeof text, "%.2f GB", x);
  else
    snprintf(text, sizeof text, "%.6g", x);
  fprintf(out, " %16s", text);
}

static int parse_options(int argc, char **argv, struct compare_options *o, char *err, size_t errlen)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (in_list(workload_value_options, a)) {
      if (i + 1 >= argc) {
        snprintf(err, errlen, "%s needs a value", a);
        return -1;
      }
      if (!strcmp(a, "--model") || !strcmp(a, "--model-file"))
        o->has_model = 1;
      if (!strcmp(a, "--tp"))
        o->has_tp = 1;
      if (!strcmp(a, "--pp"))
        o->has_pp = 1;
      if (!strcmp(a, "--gpus")) {
        o->has_gpus = 1;
        o->gpus = atoi(argv[i + 1]);
      }
      o->workload_args[o->n_workload++] = a;
      o->workload_args[o->n_workload++] = argv[++i];
    } else if (in_list(workload_flag_options, a)) {
      o->workload_args[o->n_workload++] = a;
    } else if (!strcmp(a, "--seed") && i + 1 < argc) {
      o->workload_args[o->n_workload++] = a;
      o->workload_args[o->n_workload++] = argv[i + 1];
      o->run_args[o->n_run++] = a;
      o->run_args[o->n_run++] = argv[++i];
    } else if (!strcmp(a, "--fidelity") && i + 1 < argc) {
      if (strcmp(argv[i + 1], "packet") && strcmp(argv[i + 1], "flow")) {
        snprintf(err, errlen, "--fidelity: '%s' is not packet or flow", argv[i + 1]);
        return -1;
      }
      o->run_args[o->n_run++] = a;
      o->run_args[o->n_run++] = argv[++i];
    } else if (!strncmp(a, "--cfg=", 6)) {
      o->run_args[o->n_run++] = a;
    } else if (!strcmp(a, "--platform") && i + 1 < argc) {
      o->platform = argv[++i];
    } else if (!strcmp(a, "--out") && i + 1 < argc) {
      o->out = argv[++i];
    } else if (!strcmp(a, "--fabrics") && i + 1 < argc) {
      static char list[64];
      snprintf(list, sizeof list, "%s", argv[++i]);
      o->n_fabrics = 0;
      for (char *tok = strtok(list, ","); tok && o->n_fabrics < 4; tok = strtok(NULL, ","))
        o->fabrics[o->n_fabrics++] = tok;
    } else {
      snprintf(err, errlen, "unknown option '%s' (see sgfabric compare --help)", a);
      return -1;
    }
    if (o->n_workload > MAX_ARGS - 16 || o->n_run > MAX_ARGS - 16) {
      snprintf(err, errlen, "too many options");
      return -1;
    }
  }
  return 0;
}

int cmd_compare(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
  static struct compare_options o;
  memset(&o, 0, sizeof o);
  o.fabrics[0] = "ib";
  o.fabrics[1] = "roce";
  o.n_fabrics = 2;
  o.gpus = 1024;
  char err[1024];
  if (parse_options(argc, argv, &o, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric compare: %s\n", err);
    return 2;
  }
  /* The default scenario fills in what the user did not say. */
  if (!o.has_model) {
    o.workload_args[o.n_workload++] = "--model";
    o.workload_args[o.n_workload++] = "gpt3-175b";
  }
  if (!o.has_gpus) {
    o.workload_args[o.n_workload++] = "--gpus";
    o.workload_args[o.n_workload++] = "1024";
  }
  if (!o.has_tp) {
    o.workload_args[o.n_workload++] = "--tp";
    o.workload_args[o.n_workload++] = "8";
  }
  if (!o.has_pp) {
    o.workload_args[o.n_workload++] = "--pp";
    o.workload_args[o.n_workload++] = "8";
  }
  int has_fidelity = 0;
  for (int i = 0; i < o.n_run; i++)
    has_fidelity |= !strcmp(o.run_args[i], "--fidelity");
  if (!has_fidelity) {
    o.run_args[o.n_run++] = "--fidelity";
    o.run_args[o.n_run++] = "flow";
  }
  if (o.out == NULL)
    o.out = "results/compare";
  run_register_params();
  for (int f = 0; f < o.n_fabrics; f++)
    if (run_find_model(o.fabrics[f], err, sizeof err) == NULL) {
      fprintf(stderr, "sgfabric compare: %s\n", err);
      return 2;
    }

  /* The results go to a temporary directory renamed into place at the end. */
  if (strchr(o.out, '/')) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", o.out);
    *strrchr(parent, '/') = '\0';
    if (parent[0] && mkdir(parent, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "sgfabric compare: --out %s: cannot create %s\n", o.out, parent);
      return 1;
    }
  }
  struct results r;
  if (results_begin(&r, o.out, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric compare: %s\n", err);
    return 1;
  }
  int rc = 1;
  char platform[4300], workload[4300];
  snprintf(workload, sizeof workload, "%s/workload.txt", r.tmp);
  const char *wargv[MAX_ARGS + 4];
  int wargc = 0;
  wargv[wargc++] = "workload";
  for (int i = 0; i < o.n_workload; i++)
    wargv[wargc++] = o.workload_args[i];
  wargv[wargc++] = "-o";
  wargv[wargc++] = workload;
  wargv[wargc] = NULL;
  int workload_rc = workload_cli_main(wargc, (char **)wargv);
  if (workload_rc != 0) {
    /* 2: an option is refused; 1: the model file, the layout or writing the trace failed. */
    fprintf(stderr, "sgfabric compare: %s (the reason is above)\n",
            workload_rc == 2 ? "the workload options are refused" : "cannot generate the workload");
    goto fail;
  }
  if (o.platform) {
    snprintf(platform, sizeof platform, "%s", o.platform);
  } else {
    /* The rail-optimized fat-tree of radix-64 switches that fits: 2 tiers up to 2,048 GPUs. */
    snprintf(platform, sizeof platform, "%s/platform.xml", r.tmp);
    snprintf(o.gpus_text, sizeof o.gpus_text, "%d", o.gpus);
    const char *pargv[] = {"platform", "--gpus", o.gpus_text, "--radix", "64", "--rail-optimized", "--tiers",
                           o.gpus > 2048 ? "3" : "2", "-o", platform, NULL};
    if (platform_cli_main(10, (char **)pargv) != 0) {
      fprintf(stderr, "sgfabric compare: cannot build a platform for %d GPUs (above)\n", o.gpus);
      goto fail;
    }
  }

  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, "sgfabric compare: cannot find the sgfabric executable\n");
    goto fail;
  }
  self[len] = '\0';
  pid_t pids[4];
  char outs[4][4400], logs[4][4400];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fflush(NULL); /* children must not inherit unwritten output */
  for (int f = 0; f < o.n_fabrics; f++) {
    snprintf(outs[f], sizeof outs[f], "%s/%s", r.tmp, o.fabrics[f]);
    snprintf(logs[f], sizeof logs[f], "%s/%s.log", r.tmp, o.fabrics[f]);
    char *cargv[MAX_ARGS + 16];
    int c = 0;
    cargv[c++] = self;
    cargv[c++] = "run";
    cargv[c++] = "--platform";
    cargv[c++] = platform;
    cargv[c++] = "--workload";
    cargv[c++] = workload;
    cargv[c++] = "--fabric";
    cargv[c++] = (char *)o.fabrics[f];
    cargv[c++] = "--no-progress";
    for (int i = 0; i < o.n_run; i++)
      cargv[c++] = (char *)o.run_args[i];
    cargv[c++] = "--out";
    cargv[c++] = outs[f];
    cargv[c] = NULL;
    pids[f] = spawn(cargv, logs[f]);
  }
  int tty = isatty(2), failed = 0;
  int running = o.n_fabrics;
  while (running > 0) {
    int status;
    pid_t done = tty ? waitpid(-1, &status, WNOHANG) : waitpid(-1, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (done == 0) {
      fprintf(stderr, "\r  simulating %d fabrics... %.0f s", o.n_fabrics, (double)(t1.tv_sec - t0.tv_sec));
      sleep(1);
      continue;
    }
    if (done < 0)
      break;
    for (int f = 0; f < o.n_fabrics; f++)
      if (pids[f] == done) {
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
  if (failed)
    goto fail;
  double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);

  char *summary[4] = {NULL};
  char path[4500];
  for (int f = 0; f < o.n_fabrics; f++) {
    snprintf(path, sizeof path, "%s/summary.json", outs[f]);
    summary[f] = read_file(path);
    unlink(logs[f]);
  }
  printf("%-24s", "");
  for (int f = 0; f < o.n_fabrics; f++)
    printf(" %16s", o.fabrics[f]);
  printf("\n");
  for (size_t k = 0; k < N_ROWS; k++) {
    int any = 0;
    for (int f = 0; f < o.n_fabrics; f++)
      any |= !isnan(json_number(summary[f], rows[k].scope, rows[k].key));
    if (!any)
      continue;
    printf("%-24s", rows[k].label);
    for (int f = 0; f < o.n_fabrics; f++)
      print_value(stdout, json_number(summary[f], rows[k].scope, rows[k].key), &rows[k]);
    printf("\n");
  }
  if (o.n_fabrics == 2) {
    double a = json_number(summary[0], NULL, "mfu"), b = json_number(summary[1], NULL, "mfu");
    printf("\n%s reaches %.1f %% of %s's MFU.\n", o.fabrics[1], 100 * b / a, o.fabrics[0]);
  }
  printf("(simulated in %.1f s; results in %s)\n", wall, o.out);

  FILE *cj = results_open(&r, "comparison.json");
  if (cj == NULL)
    goto fail;
  fprintf(cj, "{\n  \"fabrics\": [");
  for (int f = 0; f < o.n_fabrics; f++) {
    fprintf(cj, "%s", f ? ", " : "");
    json_write_string(cj, o.fabrics[f]);
  }
  fprintf(cj, "],\n  \"rows\": [");
  int first = 1;
  for (size_t k = 0; k < N_ROWS; k++) {
    fprintf(cj, "%s\n    {\"label\": \"%s\", \"key\": \"%s%s%s\", \"unit\": \"%s\", \"values\": [", first ? "" : ",",
            rows[k].label, rows[k].scope ? rows[k].scope : "", rows[k].scope ? "." : "", rows[k].key, rows[k].unit);
    for (int f = 0; f < o.n_fabrics; f++) {
      double v = json_number(summary[f], rows[k].scope, rows[k].key);
      if (isnan(v))
        fprintf(cj, "%snull", f ? ", " : "");
      else
        fprintf(cj, "%s%s", f ? ", " : "", JSON_NUMBER(v * rows[k].scale));
    }
    fprintf(cj, "]}");
    first = 0;
  }
  fprintf(cj, "\n  ]\n}\n");
  for (int f = 0; f < o.n_fabrics; f++)
    free(summary[f]);
  if (results_close(cj) != 0)
    goto fail;
  /* The chart: analysis/plot_compare.py, next to the executable's source tree or installed. */
  char script[4400], png[4400], json[4400], command[14000];
  snprintf(script, sizeof script, "%s/analysis/plot_compare.py", SGF_SOURCE_DIR);
  snprintf(png, sizeof png, "%s/compare.png", r.tmp);
  snprintf(json, sizeof json, "%s/comparison.json", r.tmp);
  /* Debian's interpreter first: python3-matplotlib installs there, whatever else is on PATH. */
  const char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  fflush(NULL);
  snprintf(command, sizeof command, "%s '%s' '%s' '%s' >/dev/null 2>&1", python, script, json, png);
  if (system(command) != 0)
    fprintf(stderr, "sgfabric compare: warning: no chart (python3 with matplotlib runs %s)\n", script);
  if (results_commit(&r, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric compare: %s\n", err);
    return 1;
  }
  return 0;
fail:
  results_abort(&r);
  return rc;
}
