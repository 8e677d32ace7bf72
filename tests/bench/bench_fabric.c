/* bench_fabric: wall time, memory and event rates of the bare fabric engine (no SimGrid), and the
 * same traffic through the sgfabric CLI to show the SimGrid integration overhead.
 *
 * Cases (docs/performance.md, "Foundation: fabric engine"):
 *   perm   a random permutation (a seeded derangement: every GPU sends one flow to one other
 *          GPU, all posted at t=0) of 1 MB or 16 MB flows on ft2-128 and rail-1024, at packet
 *          fidelity (goal: >= 10 M packet-hop events/s on one core) and at flow fidelity;
 *   build  platform_load() of the 10,240-GPU ft3-10240.xml plus fabric_new() (goals: <= 5 s,
 *          <= 1 GB max RSS);
 *   cli    the perm cases again through `sgfabric flows` (the whole binary: platform read,
 *          SimGrid start, actors, results), next to the bare engine's total (load + run).
 *
 * Every repetition runs in a forked child so that its max RSS (wait4's ru_maxrss) is its own;
 * each case is repeated --reps times (default 3) and the median is printed.
 *
 * usage: bench_fabric --platforms DIR [--big FT3_10240.XML] [--sgfabric BIN] [--reps N]
 *                     [--only SUBSTRING] [--no-cli] [--seed N]
 */
#define _DEFAULT_SOURCE /* wait4 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fabric.h"
#include "param.h"
#include "platform.h"
#include "rng.h"

#define GOAL_HOPS_PER_S 10e6
#define GOAL_BUILD_S 5.0
#define GOAL_BUILD_MB 1024.0
#define MAX_REPS 15

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What one repetition measured; a child writes it to a pipe. */
struct measure {
  int ok;
  char err[256];
  double setup_s; /* platform_load + fabric_new */
  double load_s;  /* platform_load alone */
  double run_s;   /* fabric_post of every flow + fabric_run */
  double sim_s;   /* simulated time at the end */
  double events, packets, hops, flows_done, rate_updates;
  double rss_mb; /* filled by the parent from wait4 */
  double wall_s; /* cli: the whole process, filled by the parent */
};

/* ---- the permutation ---- */

/* The seeded derangement every benchmark and test of random permutations uses (rng.h). */
static void derangement(int n, uint64_t seed, int *perm)
{
  struct fab_rng rng;
  fab_rng_seed(&rng, seed);
  fab_rng_derangement(&rng, n, perm);
}

/* ---- cases ---- */

enum case_kind { CASE_PERM, CASE_BUILD };

struct bench_case {
  enum case_kind kind;
  char name[64];
  char platform[512];
  double bytes;
  fab_fidelity fidelity;
  int cli; /* also time the CLI on it */
};

struct options {
  const char *platforms_dir;
  const char *big;
  const char *sgfabric;
  const char *only;
  int reps;
  int no_cli;
  uint64_t seed;
  char tmpdir[256];
};

static struct options g_opt;

static int setup_fabric(const char *path, fab_fidelity fid, struct platform **pl, struct param_set **ps,
                        struct fabric **fab, struct measure *m)
{
  fabric_register_params();
  *ps = fab_param_set_new();
  double t0 = now_s();
  *pl = platform_load(path, m->err, sizeof m->err);
  if (*pl == NULL)
    return -1;
  m->load_s = now_s() - t0;
  if (platform_apply_params(*pl, *ps, m->err, sizeof m->err) != 0)
    return -1;
  *fab = fabric_new((*pl)->topo, *ps, &fab_model_ideal, fid, g_opt.seed, m->err, sizeof m->err);
  if (*fab == NULL)
    return -1;
  m->setup_s = now_s() - t0;
  return 0;
}

static void run_case_child(const struct bench_case *c, struct measure *m)
{
  struct platform *pl = NULL;
  struct param_set *ps = NULL;
  struct fabric *fab = NULL;
  if (setup_fabric(c->platform, c->fidelity, &pl, &ps, &fab, m) != 0)
    goto out;
  if (c->kind == CASE_PERM) {
    int n = pl->topo->n_gpus;
    int *perm = malloc((size_t)n * sizeof *perm);
    derangement(n, g_opt.seed, perm);
    double t0 = now_s();
    for (int i = 0; i < n; i++)
      fabric_post(fab, i, perm[i], c->bytes, 0.0, 0, NULL, NULL);
    fabric_run(fab);
    m->run_s = now_s() - t0;
    free(perm);
    if (fab->stats.flows_done != (uint64_t)n) {
      snprintf(m->err, sizeof m->err, "%llu of %d flows finished", (unsigned long long)fab->stats.flows_done, n);
      goto out;
    }
  }
  m->sim_s = fab->now;
  m->events = (double)fab->stats.events;
  m->packets = (double)fab->stats.packets;
  m->hops = (double)fab->stats.packet_hops;
  m->flows_done = (double)fab->stats.flows_done;
  m->rate_updates = (double)fab->stats.rate_updates;
  m->ok = 1;
out:
  /* Freed as a real caller would: the teardown is part of neither timing. */
  fabric_free(fab);
  platform_free(pl);
  fab_param_set_free(ps);
}

static double tv_rss_mb(const struct rusage *ru) { return (double)ru->ru_maxrss / 1024.0; } /* KB on Linux */

/* Runs one repetition of an engine case in a child; the child's own max RSS comes from wait4. */
static int measure_engine(const struct bench_case *c, struct measure *m)
{
  int fds[2];
  memset(m, 0, sizeof *m);
  if (pipe(fds) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    close(fds[0]);
    struct measure r;
    memset(&r, 0, sizeof r);
    run_case_child(c, &r);
    ssize_t w = write(fds[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
  }
  close(fds[1]);
  size_t got = 0;
  while (got < sizeof *m) {
    ssize_t r = read(fds[0], (char *)m + got, sizeof *m - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fds[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0)
    return -1;
  if (got != sizeof *m || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    m->ok = 0;
    snprintf(m->err, sizeof m->err, "child failed (status %d)", status);
  }
  m->rss_mb = tv_rss_mb(&ru);
  return m->ok ? 0 : -1;
}

/* ---- the CLI ---- */

static int write_perm_csv(const char *path, int n, double bytes)
{
  int *perm = malloc((size_t)n * sizeof *perm);
  derangement(n, g_opt.seed, perm);
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    free(perm);
    return -1;
  }
  fprintf(f, "src,dst,bytes,start_us\n");
  for (int i = 0; i < n; i++)
    fprintf(f, "%d,%d,%.0f,0\n", i, perm[i], bytes);
  free(perm);
  return fclose(f);
}

/* The value of "key": NUMBER in a JSON file, or -1. */
static double json_number(const char *path, const char *key)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  char line[4096], pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  double v = -1;
  while (fgets(line, sizeof line, f)) {
    char *p = strstr(line, pattern);
    if (p) {
      v = strtod(p + strlen(pattern), NULL);
      break;
    }
  }
  fclose(f);
  return v;
}

static int measure_cli(const struct bench_case *c, int n_gpus, int rep, struct measure *m)
{
  memset(m, 0, sizeof *m);
  char csv[512], out[512], log[512];
  snprintf(csv, sizeof csv, "%s/%s.csv", g_opt.tmpdir, c->name);
  snprintf(out, sizeof out, "%s/%s.out%d", g_opt.tmpdir, c->name, rep);
  snprintf(log, sizeof log, "%s/%s.log%d", g_opt.tmpdir, c->name, rep);
  if (access(csv, R_OK) != 0 && write_perm_csv(csv, n_gpus, c->bytes) != 0) {
    snprintf(m->err, sizeof m->err, "cannot write %.200s", csv);
    return -1;
  }
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)g_opt.seed);
  const char *fid = c->fidelity == FAB_FIDELITY_PACKET ? "packet" : "flow";
  fflush(NULL);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(g_opt.sgfabric, g_opt.sgfabric, "flows", "--platform", c->platform, "--flows", csv, "--fabric", "ideal",
          "--fidelity", fid, "--seed", seed, "--out", out, (char *)NULL);
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0)
    return -1;
  m->wall_s = now_s() - t0;
  m->rss_mb = tv_rss_mb(&ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(m->err, sizeof m->err, "sgfabric flows failed (status %d), see %.180s", status, log);
    return -1;
  }
  char summary[600];
  snprintf(summary, sizeof summary, "%s/summary.json", out);
  m->sim_s = json_number(summary, "sim_time_s");
  m->events = json_number(summary, "events");
  m->hops = json_number(summary, "packet_hops");
  m->ok = 1;
  return 0;
}

/* ---- medians and printing ---- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median of one field over the repetitions. */
static double median_field(const struct measure *ms, int n, size_t offset)
{
  double tmp[MAX_REPS];
  for (int k = 0; k < n; k++)
    tmp[k] = *(const double *)((const char *)&ms[k] + offset);
  return median(tmp, n);
}
#define MED(ms, n, field) median_field((ms), (n), offsetof(struct measure, field))

static void print_header(void)
{
  printf("%-30s %9s %8s %12s %12s %14s %-24s %14s\n", "case", "wall_s", "rss_MB", "events", "events/s", "rate",
         "vs goal / reference", "sim_time_s");
}

static void fmt_rate(char *buf, size_t len, double v, const char *unit)
{
  if (v >= 1e6)
    snprintf(buf, len, "%.2fM %s", v / 1e6, unit);
  else if (v >= 1e3)
    snprintf(buf, len, "%.1fk %s", v / 1e3, unit);
  else
    snprintf(buf, len, "%.1f %s", v, unit);
}

static int matches(const char *name) { return g_opt.only == NULL || strstr(name, g_opt.only) != NULL; }

static int platform_gpus(const char *path)
{
  /* Cheap: the zone prop, without building the fabric. */
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  char line[1024];
  int n = -1;
  while (fgets(line, sizeof line, f)) {
    char *p = strstr(line, "\"sgfabric/gpus\" value=\"");
    if (p) {
      n = atoi(p + strlen("\"sgfabric/gpus\" value=\""));
      break;
    }
  }
  fclose(f);
  return n;
}

static void usage(FILE *out)
{
  fprintf(out, "usage: bench_fabric --platforms DIR [--big FT3_10240.XML] [--sgfabric BIN] [--reps N]\n"
               "                    [--only SUBSTRING] [--no-cli] [--seed N]\n");
}

int main(int argc, char **argv)
{
  g_opt.reps = 3;
  g_opt.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--platforms") && v)
      g_opt.platforms_dir = argv[++i];
    else if (!strcmp(a, "--big") && v)
      g_opt.big = argv[++i];
    else if (!strcmp(a, "--sgfabric") && v)
      g_opt.sgfabric = argv[++i];
    else if (!strcmp(a, "--only") && v)
      g_opt.only = argv[++i];
    else if (!strcmp(a, "--reps") && v)
      g_opt.reps = atoi(argv[++i]);
    else if (!strcmp(a, "--seed") && v)
      g_opt.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--no-cli"))
      g_opt.no_cli = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (g_opt.platforms_dir == NULL || g_opt.reps < 1 || g_opt.reps > MAX_REPS) {
    usage(stderr);
    return 2;
  }
  if (g_opt.sgfabric == NULL || access(g_opt.sgfabric, X_OK) != 0)
    g_opt.no_cli = 1;
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_opt.tmpdir, sizeof g_opt.tmpdir, "%s/bench_fabric.XXXXXX", tmp);
  if (mkdtemp(g_opt.tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }

  struct bench_case cases[32];
  int n_cases = 0;
  static const char *platforms[] = { "ft2-128", "rail-1024" };
  static const double sizes[] = { 1e6, 16e6 };
  static const char *size_names[] = { "1MB", "16MB" };
  for (int f = 0; f < 2; f++)
    for (int p = 0; p < 2; p++)
      for (int s = 0; s < 2; s++) {
        struct bench_case *c = &cases[n_cases++];
        memset(c, 0, sizeof *c);
        c->kind = CASE_PERM;
        c->fidelity = f == 0 ? FAB_FIDELITY_PACKET : FAB_FIDELITY_FLOW;
        c->bytes = sizes[s];
        c->cli = 1;
        snprintf(c->name, sizeof c->name, "perm-%s-%s-%s", platforms[p], size_names[s], f == 0 ? "packet" : "flow");
        snprintf(c->platform, sizeof c->platform, "%s/%s.xml", g_opt.platforms_dir, platforms[p]);
      }
  /* The 10,240-GPU platform: 1 MB flows at both fidelities (packet: about 15 M hops). */
  for (int f = 0; f < 2 && g_opt.big; f++) {
    struct bench_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->kind = CASE_PERM;
    c->fidelity = f == 0 ? FAB_FIDELITY_PACKET : FAB_FIDELITY_FLOW;
    c->bytes = 1e6;
    c->cli = 1;
    snprintf(c->name, sizeof c->name, "perm-ft3-10240-1MB-%s", f == 0 ? "packet" : "flow");
    snprintf(c->platform, sizeof c->platform, "%s", g_opt.big);
  }
  if (g_opt.big) {
    struct bench_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->kind = CASE_BUILD;
    c->fidelity = FAB_FIDELITY_PACKET;
    snprintf(c->name, sizeof c->name, "build-ft3-10240");
    snprintf(c->platform, sizeof c->platform, "%s", g_opt.big);
  }

  printf("bench_fabric: median of %d runs, seed %llu, ideal fabric; rss = max RSS of the process\n", g_opt.reps,
         (unsigned long long)g_opt.seed);
  print_header();
  int failures = 0;
  struct measure ms[MAX_REPS], cli[MAX_REPS];
  char rate[40], ref[64], line_name[80];
  for (int ci = 0; ci < n_cases; ci++) {
    const struct bench_case *c = &cases[ci];
    int want_engine = matches(c->name);
    snprintf(line_name, sizeof line_name, "cli-%s", c->name);
    int want_cli = c->cli && !g_opt.no_cli && matches(line_name);
    if (!want_engine && !want_cli)
      continue;
    int ok = 1;
    for (int r = 0; r < g_opt.reps && ok; r++)
      if (measure_engine(c, &ms[r]) != 0) {
        fprintf(stderr, "%s: %s\n", c->name, ms[r].err);
        ok = 0;
      }
    if (!ok) {
      failures++;
      continue;
    }
    int n = g_opt.reps;
    double run = MED(ms, n, run_s), setup = MED(ms, n, setup_s), rss = MED(ms, n, rss_mb);
    if (want_engine) {
      if (c->kind == CASE_BUILD) {
        double load = MED(ms, n, load_s);
        snprintf(ref, sizeof ref, "%.2fx time %.2fx mem", setup / GOAL_BUILD_S, rss / GOAL_BUILD_MB);
        snprintf(rate, sizeof rate, "load %.2fs", load);
        printf("%-30s %9.4f %8.1f %12s %12s %14s %-24s %14s\n", c->name, setup, rss, "-", "-", rate, ref, "-");
      } else if (c->fidelity == FAB_FIDELITY_PACKET) {
        double hops_per_s = ms[0].hops / run;
        fmt_rate(rate, sizeof rate, hops_per_s, "hops/s");
        snprintf(ref, sizeof ref, "goal hops %.2fx ev %.2fx", hops_per_s / GOAL_HOPS_PER_S,
                 ms[0].events / run / GOAL_HOPS_PER_S);
        printf("%-30s %9.4f %8.1f %12.0f %12.3g %14s %-24s %14.9g\n", c->name, run, rss, ms[0].events,
               ms[0].events / run, rate, ref, ms[0].sim_s);
      } else {
        fmt_rate(rate, sizeof rate, ms[0].flows_done / run, "flows/s");
        snprintf(ref, sizeof ref, "%.0f rate updates", ms[0].rate_updates);
        printf("%-30s %9.4f %8.1f %12.0f %12.3g %14s %-24s %14.9g\n", c->name, run, rss, ms[0].events,
               ms[0].events / run, rate, ref, ms[0].sim_s);
      }
      fflush(stdout);
    }
    if (want_cli) {
      int n_gpus = platform_gpus(c->platform);
      for (int r = 0; r < g_opt.reps && ok; r++)
        if (measure_cli(c, n_gpus, r, &cli[r]) != 0) {
          fprintf(stderr, "%s: %s\n", line_name, cli[r].err);
          ok = 0;
        }
      if (!ok) {
        failures++;
        continue;
      }
      double wall = MED(cli, n, wall_s), crss = MED(cli, n, rss_mb);
      double engine_total = setup + run;
      snprintf(rate, sizeof rate, "engine %.3fs", engine_total);
      snprintf(ref, sizeof ref, "%.2fx engine (+%.3fs)", wall / engine_total, wall - engine_total);
      printf("%-30s %9.4f %8.1f %12.0f %12.3g %14s %-24s %14.9g\n", line_name, wall, crss, cli[0].events,
             cli[0].events / wall, rate, ref, cli[0].sim_s);
      fflush(stdout);
    }
  }
  /* rm with an argv, no shell: TMPDIR may hold any character. */
  int status = -1;
  pid_t rm = fork();
  if (rm == 0) {
    execlp("rm", "rm", "-rf", "--", g_opt.tmpdir, (char *)NULL);
    _exit(127);
  }
  if (rm < 0 || waitpid(rm, &status, 0) != rm || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "bench_fabric: could not remove %s\n", g_opt.tmpdir);
  return failures ? 1 : 0;
}
