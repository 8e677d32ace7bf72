/* sgfabric coll: a collective microbenchmark that prints nccl-tests' table (all_reduce_perf's
 * layout), one block per fabric, so that a user can hold the simulator against the nccl-tests
 * output of a cluster.
 *
 * The collectives are those of `sgfabric run` (workloads/collectives: the same graphs, the same
 * coll/... parameters). One SimGrid actor drives them: for each size it creates one instance per
 * group (all groups of the kind run at once, as nccl-tests runs the communicators of
 * NCCL_TESTS_SPLIT_MASK), makes every member join at the same date and blocks until the last
 * instance finished; the next size starts then (a barrier between sizes). A size's time is from
 * the first member's call to the last member's completion (coll_report), averaged over the
 * timed iterations. SimGrid runs one simulation per process: each fabric runs in a forked child
 * that sends its times back through a pipe; the children of the fabrics run in parallel. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"
#include "coll_params.h"
#include "commands.h"
#include "platform_cli.h"
#include "results.h"
#include "run_common.h"
#include "failure.h"
#include "sg_fabric.h"

#define COLL_MAX_SIZES 128
#define COLL_MAX_FABRICS 4
#define COLL_MAX_ARGS 256
/* Above this, one buffer is more than any GPU holds; the fabric's transfer limit is 2^50 B. */
#define COLL_MAX_BYTES (1024.0 * 1024 * 1024 * 1024)
#define COLL_TYPE_SIZE 4 /* nccl-tests' default data type, float */

enum coll_group { GROUP_WORLD, GROUP_TP, GROUP_DP };
static const char *const group_names[] = { "world", "tp", "dp", NULL };

struct coll_options {
  enum coll_kind kind;
  enum coll_group group;
  int gpus;         /* 0: the platform's (or 64 for a generated one) */
  int tp;           /* 0: the platform's GPUs per node */
  int single_group; /* only the group of rank 0 */
  double min_bytes, max_bytes, step_bytes;
  long factor; /* > 1: multiply; 1: add step_bytes (nccl-tests -f / -i) */
  int iters, warmup;
  const char *fabrics[COLL_MAX_FABRICS];
  int n_fabrics;
  char fabric_list[256];
  struct run_options run; /* platform, fidelity, seed, cfg */
  const char *out;
  const char *gpu;
  const char *platform_args[COLL_MAX_ARGS];
  int n_platform;
  char spelled[COLL_MAX_ARGS][80];
  int n_spelled;
  const char *first_platform_option;
};

/* What a child sends back per size. */
struct size_result {
  double time_s;
  int32_t algo_mask;
  int32_t proto_mask; /* NCCL protocols the groups used (bit: enum coll_proto) */
  int32_t ring_forms; /* how their rings moved (COLL_RINGS_*) */
};

enum {
  COLL_OPT_OP,
  COLL_OPT_GROUP,
  COLL_OPT_GPUS,
  COLL_OPT_TP,
  COLL_OPT_SINGLE,
  COLL_OPT_SIZES,
  COLL_OPT_MIN,
  COLL_OPT_MAX,
  COLL_OPT_FACTOR,
  COLL_OPT_STEP,
  COLL_OPT_ITERS,
  COLL_OPT_WARMUP,
  COLL_OPT_FABRICS,
  COLL_OPT_GPU,
};

static const struct cli_option coll_options_table[] = {
  { "op", 0, CLI_VALUE, COLL_OPT_OP, "OP", "allreduce, allgather, reducescatter, alltoall or broadcast (allreduce)" },
  { "group", 0, CLI_VALUE, COLL_OPT_GROUP, "G",
    "which ranks take part: world (every GPU), tp (--tp consecutive ranks, inside a node), dp (one rank per "
    "TP group: one group per rail) (world)" },
  { "gpus", 0, CLI_VALUE, COLL_OPT_GPUS, "N", "ranks (GPUs 0..N-1; default the platform's, 64 for a generated one)" },
  { "tp", 0, CLI_VALUE, COLL_OPT_TP, "T", "tensor-parallel degree that shapes tp and dp groups (GPUs per node)" },
  { "single-group", 0, CLI_FLAG, COLL_OPT_SINGLE, NULL,
    "run only rank 0's group (default: every group of the kind at once)" },
  { "sizes", 0, CLI_VALUE, COLL_OPT_SIZES, "MIN:MAX[:F]", "sizes MIN, MIN*F, ... up to MAX, as -b -e -f (8:8G:2)" },
  { "minbytes", 'b', CLI_VALUE, COLL_OPT_MIN, "SIZE", "smallest size, bytes with K/M/G (1024-based) as nccl-tests" },
  { "maxbytes", 'e', CLI_VALUE, COLL_OPT_MAX, "SIZE", "largest size" },
  { "stepfactor", 'f', CLI_VALUE, COLL_OPT_FACTOR, "F", "size multiplier (2); 1 steps by --stepbytes" },
  { "stepbytes", 'i', CLI_VALUE, COLL_OPT_STEP, "SIZE", "size increment when the factor is 1 (1M)" },
  { "iters", 'n', CLI_VALUE, COLL_OPT_ITERS, "N", "timed iterations per size, averaged (1)" },
  { "warmup_iters", 'w', CLI_VALUE, COLL_OPT_WARMUP, "N", "untimed iterations before each size (0)" },
  { "fabrics", 0, CLI_VALUE, COLL_OPT_FABRICS, "A,B", "fabric models, one block each (ib,roce)" },
  { "gpu", 0, CLI_VALUE, COLL_OPT_GPU, "TYPE", "GPU type of the generated platform (H100)" },
  CLI_TABLE_END,
};

/* The shared options coll takes (run_common_options() minus --fabric). */
static const struct cli_option coll_common_table[] = {
  { "platform", 0, CLI_VALUE, RUN_OPT_PLATFORM, "FILE", "a platform XML instead of the generated fat-tree" },
  { "fidelity", 0, CLI_VALUE, RUN_OPT_FIDELITY, "flow|packet", "flow-level (default) or packet-level" },
  { "seed", 0, CLI_VALUE, RUN_OPT_SEED, "N", "seed of every random choice (1)" },
  { "cfg", 0, CLI_VALUE, RUN_OPT_CFG, "area/name:value", "set a model parameter (repeatable)" },
  { "help-cfg", 0, CLI_FLAG, RUN_OPT_HELP_CFG, NULL, "list the model parameters and exit" },
  { "force", 0, CLI_FLAG, RUN_OPT_FORCE, NULL, "replace DIR even if it is not a previous result" },
  { "failures", 0, CLI_VALUE, RUN_OPT_FAILURES, "FILE",
    "failure schedule (CSV time_us,action,target; docs/failures.md), applied in each fabric's run; "
    "what happened is printed on stderr" },
  { "out", 'o', CLI_VALUE, RUN_OPT_OUT, "DIR", "also write DIR/FABRIC.csv, .json and .txt (written atomically)" },
  CLI_TABLE_END,
};
enum { TABLE_COLL, TABLE_COMMON, TABLE_PLATFORM };

static void usage(FILE *out)
{
  fprintf(out,
          "usage: sgfabric coll [--op OP] [--group world|tp|dp] [--gpus N] [--tp T] [--sizes MIN:MAX:F | -b MIN -e MAX "
          "-f F]\n"
          "                     [--fabrics ib,roce] [--fidelity flow|packet] [--platform FILE | platform options]\n"
          "                     [--seed N] [--cfg area/name:value ...] [-o DIR]\n\n"
          "A collective microbenchmark: prints, per fabric, the table of nccl-tests (all_reduce_perf's layout:\n"
          "size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and in place; the\n"
          "in-place block repeats the out-of-place one, the simulator moves the same bytes). A size's time\n"
          "runs from the first rank's call to the last rank's completion; algbw = size/time, busbw = algbw x\n"
          "2(n-1)/n (allreduce), (n-1)/n (allgather, reducescatter, alltoall), 1 (broadcast), nccl-tests'\n"
          "definitions. #wrong is N/A: no data is simulated. Without --platform the platform is a\n"
          "rail-optimized fat-tree of radix-64 switches for --gpus (64), as sgfabric compare builds.\n"
          "Options take their value as --name value or --name=value.\n\n");
  cli_print_options(out, coll_options_table, NULL);
  cli_print_options(out, coll_common_table, NULL);
  fprintf(out, "\nplatform options (as sgfabric platform; not with --platform):\n");
  cli_print_options(out, platform_cli_options(), coll_options_table);
  fprintf(out, "  -h, --help                 this help\n"
               "Exit status: 0 ok, 1 error while running, 2 usage error or refused --out, 130/143 interrupted.\n");
}

/* nccl-tests' size syntax (parsesize in its common.cu): a number, optionally followed by K, M or
 * G (powers of 1024). Returns 0 or -1. */
static int parse_size(const char *text, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno != 0 || !isfinite(v) || v < 0)
    return -1;
  double unit = 1;
  switch (*end) {
  case 'k':
  case 'K': unit = 1024, end++; break;
  case 'm':
  case 'M': unit = 1024.0 * 1024, end++; break;
  case 'g':
  case 'G': unit = 1024.0 * 1024 * 1024, end++; break;
  default: break;
  }
  if (*end != '\0')
    return -1;
  *out = floor(v * unit); /* nccl-tests casts to size_t */
  return *out <= COLL_MAX_BYTES ? 0 : -1;
}

static int size_option(const struct cli *c, const char *text, double *out)
{
  if (parse_size(text, out) != 0)
    return cli_usage_error(c, "%s: '%s' is not a size (bytes, with an optional K, M or G suffix, at most 1024G)",
                           c->spelled, text);
  return 0;
}

static int parse_sizes(struct coll_options *o, const struct cli *c)
{
  char buf[128];
  if (strlen(c->value) >= sizeof buf)
    return cli_usage_error(c, "--sizes: '%s' is too long", c->value);
  snprintf(buf, sizeof buf, "%s", c->value);
  char *parts[3] = { buf, NULL, NULL };
  int n = 1;
  for (char *p = buf; *p; p++)
    if (*p == ':') {
      if (n == 3)
        return cli_usage_error(c, "--sizes: '%s' is not MIN:MAX or MIN:MAX:FACTOR", c->value);
      *p = '\0';
      parts[n++] = p + 1;
    }
  if (n < 2)
    return cli_usage_error(c, "--sizes: '%s' is not MIN:MAX or MIN:MAX:FACTOR", c->value);
  if (parse_size(parts[0], &o->min_bytes) != 0 || parse_size(parts[1], &o->max_bytes) != 0)
    return cli_usage_error(c,
                           "--sizes: '%s': MIN and MAX are sizes (bytes, with an optional K, M or G suffix, at "
                           "most 1024G)",
                           c->value);
  if (n == 3 && (cli_parse_long(parts[2], 1, 1 << 20, &o->factor) != 0 || o->factor < 2))
    return cli_usage_error(c, "--sizes: '%s': FACTOR is an integer >= 2", c->value);
  return 0;
}

static int parse_fabrics(struct coll_options *o, const struct cli *c)
{
  return run_parse_fabrics(c, o->fabric_list, sizeof o->fabric_list, o->fabrics, COLL_MAX_FABRICS, &o->n_fabrics);
}

static int parse_name(const struct cli *c, const char *const *names, int *out)
{
  for (int i = 0; names[i]; i++)
    if (!strcmp(c->value, names[i])) {
      *out = i;
      return 0;
    }
  char message[256];
  snprintf(message, sizeof message, "%s: '%s' is not one of", c->spelled, c->value);
  for (int i = 0; names[i]; i++)
    snprintf(message + strlen(message), sizeof message - strlen(message), "%s %s", i ? "," : "", names[i]);
  cli_did_you_mean(message, sizeof message, c->value, names, "");
  return cli_usage_error(c, "%s", message);
}

static int parse_options(int argc, char **argv, struct coll_options *o, int *help)
{
  static const char *const op_names[] = { "allreduce", "reducescatter", "allgather", "alltoall", "broadcast", NULL };
  struct cli c;
  cli_init(&c, "sgfabric coll", argc, argv);
  cli_add_table(&c, coll_options_table);
  cli_add_table(&c, coll_common_table);
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
    if (c.table == TABLE_PLATFORM) {
      if (!o->first_platform_option)
        o->first_platform_option = c.opt->name;
      if (o->n_platform > COLL_MAX_ARGS - 4 || o->n_spelled == COLL_MAX_ARGS)
        return cli_usage_error(&c, "too many options");
      snprintf(o->spelled[o->n_spelled], sizeof o->spelled[0], "%s", c.spelled);
      o->platform_args[o->n_platform++] = o->spelled[o->n_spelled++];
      if (c.opt->arg == CLI_VALUE)
        o->platform_args[o->n_platform++] = c.value;
      continue;
    }
    if (c.table == TABLE_COMMON) {
      if (run_common_apply(&o->run, &c, id) != 0)
        return CLI_USAGE;
      if (id == RUN_OPT_OUT)
        o->out = c.value;
      continue;
    }
    int v;
    switch (id) {
    case COLL_OPT_OP:
      if (parse_name(&c, op_names, &v) != 0)
        return CLI_USAGE;
      o->kind = (enum coll_kind)v;
      break;
    case COLL_OPT_GROUP:
      if (parse_name(&c, group_names, &v) != 0)
        return CLI_USAGE;
      o->group = (enum coll_group)v;
      break;
    case COLL_OPT_GPUS:
      if (cli_int(&c, 2, 1 << 24, &o->gpus) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_TP:
      if (cli_int(&c, 1, 1 << 24, &o->tp) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_SINGLE: o->single_group = 1; break;
    case COLL_OPT_SIZES:
      if (parse_sizes(o, &c) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_MIN:
      if (size_option(&c, c.value, &o->min_bytes) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_MAX:
      if (size_option(&c, c.value, &o->max_bytes) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_STEP:
      if (size_option(&c, c.value, &o->step_bytes) != 0)
        return CLI_USAGE;
      if (o->step_bytes < 1)
        return cli_usage_error(&c, "%s: the increment must be at least 1 byte", c.spelled);
      break;
    case COLL_OPT_FACTOR:
      if (cli_long(&c, 1, 1 << 20, &o->factor) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_ITERS:
      if (cli_int(&c, 1, 1000, &o->iters) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_WARMUP:
      if (cli_int(&c, 0, 1000, &o->warmup) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_FABRICS:
      if (parse_fabrics(o, &c) != 0)
        return CLI_USAGE;
      break;
    case COLL_OPT_GPU: o->gpu = c.value; break;
    }
  }
  if (o->run.platform && o->first_platform_option)
    return cli_usage_error(&c, "--%s builds a platform; it cannot be combined with --platform %s",
                           o->first_platform_option, o->run.platform);
  if (o->run.platform && o->gpu)
    return cli_usage_error(&c, "--gpu sets the generated platform's GPUs; it cannot be combined with --platform %s",
                           o->run.platform);
  if (o->min_bytes > o->max_bytes)
    return cli_usage_error(&c, "the smallest size (%.0f B) is above the largest (%.0f B)", o->min_bytes, o->max_bytes);
  return 0;
}

/* The sizes nccl-tests visits: MIN, then times the factor (or plus the step) while <= MAX. */
static int list_sizes(const struct coll_options *o, double *sizes)
{
  int n = 0;
  for (double s = o->min_bytes; s <= o->max_bytes; s = o->factor > 1 ? s * o->factor : s + o->step_bytes) {
    if (n == COLL_MAX_SIZES)
      return -1;
    sizes[n++] = s;
    if (s == 0 && o->factor > 1)
      break; /* 0 times a factor stays 0 */
  }
  return n;
}

/* nccl-tests' buffer arithmetic (GetCollByteCount of each test): count = size / 4 elements; the
 * gathered, scattered and all-to-all buffers are rounded down to a multiple of the ranks. The
 * printed size is the larger buffer, the printed count the per-rank parameter. */
static void nccl_counts(enum coll_kind kind, double size, int n, double *bytes, double *count)
{
  double elements = floor(size / COLL_TYPE_SIZE);
  switch (kind) {
  case COLL_ALLGATHER:
  case COLL_REDUCE_SCATTER:
  case COLL_ALLTOALL:
    *count = floor(elements / n);
    *bytes = *count * n * COLL_TYPE_SIZE;
    break;
  case COLL_ALLREDUCE:
  case COLL_BROADCAST:
  default:
    *count = elements;
    *bytes = elements * COLL_TYPE_SIZE;
    break;
  }
}

/* The groups: n_groups x group_size ranks, rank r on GPU r. */
struct layout {
  int n_groups, group_size;
  int *gpus; /* [n_groups * group_size] */
};

static int build_layout(const struct coll_options *o, int gpus, int tp, struct layout *l, char *err, size_t errlen)
{
  memset(l, 0, sizeof *l);
  if (o->group != GROUP_WORLD && gpus % tp != 0) {
    snprintf(err, errlen, "--gpus %d is not a multiple of the TP degree %d (--tp)", gpus, tp);
    return -1;
  }
  switch (o->group) {
  case GROUP_TP: l->n_groups = gpus / tp, l->group_size = tp; break;
  case GROUP_DP: l->n_groups = tp, l->group_size = gpus / tp; break;
  case GROUP_WORLD:
  default: l->n_groups = 1, l->group_size = gpus; break;
  }
  if (l->group_size < 2) {
    snprintf(err, errlen, "the %s group has %d rank (--gpus %d, TP degree %d): a collective needs two",
             group_names[o->group], l->group_size, gpus, tp);
    return -1;
  }
  if (o->single_group)
    l->n_groups = 1;
  l->gpus = malloc(sizeof(int) * (size_t)l->n_groups * (size_t)l->group_size);
  for (int g = 0; g < l->n_groups; g++)
    for (int m = 0; m < l->group_size; m++)
      l->gpus[g * l->group_size + m] = o->group == GROUP_TP ? g * tp + m : o->group == GROUP_DP ? g + m * tp : m;
  return 0;
}

/* ---- the child: one fabric's simulation ---- */

static struct {
  const struct coll_options *o;
  const struct layout *l;
  struct fabric *fab;
  struct coll_params coll;
  const double *sizes;
  int n_sizes;
  struct size_result *results;
  sg_sem_t sem;
  int running; /* instances not finished */
  int waiting; /* the actor blocks on sem (a collective with no transfer finishes inside coll_join) */
  double first_start, last_end;
  int algo_mask, proto_mask, ring_forms;
} g_bench;

static void bench_finished(void *ctx, const struct coll_report *report)
{
  (void)ctx;
  if (report->start_s < g_bench.first_start)
    g_bench.first_start = report->start_s;
  if (report->end_s > g_bench.last_end)
    g_bench.last_end = report->end_s;
  g_bench.algo_mask |= 1 << report->algo;
  g_bench.proto_mask |= 1 << report->proto;
  g_bench.ring_forms |= report->ring_forms;
  if (--g_bench.running == 0 && g_bench.waiting) {
    g_bench.waiting = 0;
    sg_sem_release(g_bench.sem);
  }
}

/* One iteration of a size: every group's instance, every member joining now; returns the time
 * from the first call to the last completion. */
static double bench_iteration(double bytes)
{
  struct fabric *fab = g_bench.fab;
  double now = simgrid_get_clock();
  if (fab->now < now) /* the fabric's clock follows SimGrid's when an actor acts */
    fab->now = now;
  const struct layout *l = g_bench.l;
  g_bench.first_start = INFINITY;
  g_bench.last_end = -INFINITY;
  g_bench.running = l->n_groups;
  struct coll_instance **inst = malloc(sizeof *inst * (size_t)l->n_groups);
  for (int g = 0; g < l->n_groups; g++) {
    struct coll_desc d = { g_bench.o->kind,         bytes, l->group_size, &l->gpus[g * l->group_size], 0, 0,
                           fab->topo->gpus_per_node };
    inst[g] = coll_create(fab, &g_bench.coll, &d, NULL, bench_finished, NULL);
  }
  /* All instances exist before any member joins: a small one may finish (and free itself) at
   * once. Members join in rank order, all at this date. */
  for (int g = 0; g < l->n_groups; g++)
    for (int m = 0; m < l->group_size; m++)
      coll_join(inst[g], m);
  free(inst);
  if (g_bench.running > 0) {
    g_bench.waiting = 1;
    sg_sem_acquire(g_bench.sem);
  }
  return g_bench.last_end - g_bench.first_start;
}

static void bench_actor(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  for (int k = 0; k < g_bench.n_sizes; k++) {
    double bytes, count;
    nccl_counts(g_bench.o->kind, g_bench.sizes[k], g_bench.l->group_size, &bytes, &count);
    for (int w = 0; w < g_bench.o->warmup; w++)
      bench_iteration(bytes);
    g_bench.algo_mask = g_bench.proto_mask = g_bench.ring_forms = 0;
    double total = 0;
    for (int i = 0; i < g_bench.o->iters; i++)
      total += bench_iteration(bytes);
    g_bench.results[k].time_s = total / g_bench.o->iters;
    g_bench.results[k].algo_mask = g_bench.algo_mask;
    g_bench.results[k].proto_mask = g_bench.proto_mask;
    g_bench.results[k].ring_forms = g_bench.ring_forms;
  }
}

static int write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* In the child: runs the simulation of s and writes n_sizes results to fd; never returns. */
static void child_main(const struct coll_options *o, const struct layout *l, struct run_setup *s, const double *sizes,
                       int n_sizes, int fd)
{
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  char err[1024];
  if (run_simgrid_start(s, "sgfabric", err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric coll: %s\n", err);
    _exit(1);
  }
  signal(SIGINT, SIG_DFL);
  memset(&g_bench, 0, sizeof g_bench);
  g_bench.o = o;
  g_bench.l = l;
  g_bench.fab = s->fab;
  coll_params_from(s->params, &g_bench.coll);
  if (coll_params_check(&g_bench.coll, s->fab, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric coll: %s\n", err);
    _exit(1);
  }
  g_bench.sizes = sizes;
  g_bench.n_sizes = n_sizes;
  g_bench.results = calloc((size_t)n_sizes, sizeof *g_bench.results);
  g_bench.sem = sg_sem_init(0);
  char host[32];
  snprintf(host, sizeof host, "gpu%d", l->gpus[0]);
  sg_host_t h = sg_host_by_name(host);
  if (h == NULL) {
    fprintf(stderr, "sgfabric coll: the platform has no host %s\n", host);
    _exit(1);
  }
  char *args[] = { "coll", NULL };
  sg_actor_create("coll", h, bench_actor, 1, args);
  simgrid_run();
  char prefix[64];
  snprintf(prefix, sizeof prefix, "sgfabric coll: %s: failure: ", s->model->name);
  fabric_failures_print(s->fab, stderr, prefix);
  if (fabric_stalled(s->fab)) {
    fprintf(stderr, "sgfabric coll: %s\n", fabric_stall_message(s->fab));
    _exit(fabric_failures_job_failed(s->fab->failures) >= 0 ? 3 : 1);
  }
  char late[200];
  if (fabric_ended_too_late(s->fab->now, late, sizeof late)) { /* the later sizes were timed at that resolution */
    fprintf(stderr, "sgfabric coll: %s: the collectives %s\n", s->model->name, late);
    _exit(1);
  }
  if (write_all(fd, g_bench.results, sizeof *g_bench.results * (size_t)n_sizes) != 0)
    _exit(1);
  _exit(0);
}

/* ---- the parent ---- */

static int read_all(int fd, void *buf, size_t len)
{
  char *p = buf;
  while (len > 0) {
    ssize_t r = read(fd, p, len);
    if (r < 0 && errno == EINTR) {
      if (results_interrupted())
        return -1;
      continue;
    }
    if (r <= 0)
      return -1;
    p += r;
    len -= (size_t)r;
  }
  return 0;
}

/* nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f (in us). */
static void format_time(char *buf, size_t len, double us)
{
  if (us >= 10000.0)
    snprintf(buf, len, "%7.0f", us);
  else if (us >= 100.0)
    snprintf(buf, len, "%7.1f", us);
  else
    snprintf(buf, len, "%7.2f", us);
}

struct row {
  double size, count, time_us, algbw, busbw;
  int proto_mask, ring_forms;
};

static void compute_rows(const struct coll_options *o, const struct layout *l, const double *sizes, int n_sizes,
                         const struct size_result *res, struct row *rows)
{
  for (int k = 0; k < n_sizes; k++) {
    struct row *r = &rows[k];
    nccl_counts(o->kind, sizes[k], l->group_size, &r->size, &r->count);
    double t = res[k].time_s;
    r->time_us = t * 1e6;
    r->proto_mask = res[k].proto_mask;
    r->ring_forms = res[k].ring_forms;
    /* nccl-tests' getBw: algbw = size / time in GB/s (1e9), busbw = algbw x the bus factor. */
    r->algbw = t > 0 ? r->size / t / 1e9 : 0;
    r->busbw = r->algbw * coll_busbw_factor(o->kind, l->group_size);
  }
}

static const char *redop_of(enum coll_kind k)
{
  return k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER ? "sum" : "none";
}

static void algo_text(int mask, char *buf, size_t len)
{
  buf[0] = '\0';
  for (int a = 0, sep = 0; a < COLL_ALGO_COUNT; a++)
    if (mask & (1 << a))
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", sep++ ? "+" : "", coll_algo_name((enum coll_algo)a));
}

static void proto_text(int mask, char *buf, size_t len)
{
  buf[0] = '\0';
  for (int q = 0, sep = 0; q < COLL_PROTO_COUNT; q++)
    if (mask & (1 << q))
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", sep++ ? "+" : "", coll_proto_name((enum coll_proto)q));
  if (!buf[0])
    snprintf(buf, len, "none");
}

/* The protocols by size, as runs of sizes with the same ones: "ll 8-262144 B, simple 2097152 B". */
static void proto_runs(const struct row *rows, int n_sizes, char *buf, size_t len)
{
  buf[0] = '\0';
  for (int k = 0; k < n_sizes;) {
    int e = k;
    while (e + 1 < n_sizes && rows[e + 1].proto_mask == rows[k].proto_mask)
      e++;
    char name[64];
    proto_text(rows[k].proto_mask, name, sizeof name);
    if (e > k)
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %.0f-%.0f B", k ? ", " : "", name, rows[k].size,
               rows[e].size);
    else
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %.0f B", k ? ", " : "", name, rows[k].size);
    k = e + 1;
  }
}

/* A zone prop of the platform file, "?" when it does not declare it. */
static const char *prop_value(const struct platform *p, const char *name)
{
  for (int i = 0; i < p->n_props; i++)
    if (!strcmp(p->props[i].name, name))
      return p->props[i].value;
  return "?";
}

/* One fabric's block, in nccl-tests' text layout (its common.cu: header, columns, rows, the
 * closing lines). Lines starting with '#' are comments to nccl-tests' readers. */
static void print_block(FILE *f, const struct coll_options *o, const struct layout *l, const char *fabric,
                        const char *platform, const struct platform *p, int gpus, int tp, const struct row *rows,
                        int n_sizes, int algo_mask)
{
  char algo[64], protos[1024];
  algo_text(algo_mask, algo, sizeof algo);
  proto_runs(rows, n_sizes, protos, sizeof protos);
  fprintf(f, "# sgfabric coll: %s, fabric %s, %s fidelity, seed %llu\n", coll_kind_name(o->kind), fabric,
          o->run.fidelity == FAB_FIDELITY_PACKET ? "packet" : "flow", (unsigned long long)o->run.seed);
  fprintf(f,
          "# group %s: %d group%s of %d ranks%s (TP degree %d), %d of the platform's %d %s GPUs, algorithm %s, "
          "protocol %s\n",
          group_names[o->group], l->n_groups, l->n_groups > 1 ? "s" : "", l->group_size,
          l->n_groups > 1 ? " at once" : "", tp, gpus, p->topo->n_gpus, p->gpu_type[0] ? p->gpu_type : "", algo,
          protos);
  fprintf(f, "# platform %s: %s-tier %sfat-tree, radix %s, %s links, oversubscription %s, %d GPUs per node\n", platform,
          prop_value(p, "sgfabric/tiers"),
          !strcmp(prop_value(p, "sgfabric/rail-optimized"), "1") ? "rail-optimized " : "",
          prop_value(p, "sgfabric/radix"), prop_value(p, "sgfabric/link-rate"),
          prop_value(p, "sgfabric/oversubscription"), p->gpus_per_node);
  fprintf(f,
          "# nThread 1 nGpus 1 minBytes %.0f maxBytes %.0f step: %.0f(%s) warmup iters: %d iters: %d agg iters: 1 "
          "validation: 0 graph: 0\n",
          o->min_bytes, o->max_bytes, o->factor > 1 ? (double)o->factor : o->step_bytes,
          o->factor > 1 ? "factor" : "bytes", o->warmup, o->iters);
  fprintf(f, "#\n# Using devices\n");
  /* nccl-tests lists every rank in order with its group (NCCL_TESTS_SPLIT_MASK's color); rank r
   * runs on GPU r. */
  for (int gpu = 0; gpu < gpus; gpu++) {
    int g = o->group == GROUP_TP ? gpu / tp : o->group == GROUP_DP ? gpu % tp : 0;
    if (g >= l->n_groups)
      continue; /* --single-group */
    char node[32], dev[32];
    snprintf(node, sizeof node, "node%d", gpu / p->gpus_per_node);
    snprintf(dev, sizeof dev, "gpu%d", gpu);
    fprintf(f, "#  Rank %2d Group %2d Pid %6s on %10s device %2d [%s] %s\n", gpu, g, "n/a", node,
            gpu % p->gpus_per_node, dev, p->gpu_type);
  }
  fprintf(f, "#\n");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
          "", "", "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
          "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
          "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  double bw_sum = 0;
  for (int k = 0; k < n_sizes; k++) {
    const struct row *r = &rows[k];
    char t[32];
    format_time(t, sizeof t, r->time_us);
    fprintf(f, "%12.0f  %12.0f  %8s  %6s  %6d", r->size, r->count, "float", redop_of(o->kind),
            o->kind == COLL_BROADCAST ? 0 : -1);
    for (int place = 0; place < 2; place++) /* in place: the same simulation */
      fprintf(f, "  %7s  %6.2f  %6.2f  %5s", t, r->algbw, r->busbw, "N/A");
    fprintf(f, "\n");
    bw_sum += r->busbw;
  }
  fprintf(f, "# Out of bounds values : 0 OK\n");
  fprintf(f, "# Avg bus bandwidth    : %g \n", n_sizes ? bw_sum / n_sizes : 0.0);
  fprintf(f, "#\n");
}

static int write_csv(FILE *f, const struct row *rows, int n_sizes, const struct coll_options *o)
{
  fprintf(f, "size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps\n");
  for (int k = 0; k < n_sizes; k++)
    fprintf(f, "%.0f,%.0f,float,%s,%d,%s,%s,%s\n", rows[k].size, rows[k].count, redop_of(o->kind),
            o->kind == COLL_BROADCAST ? 0 : -1, JSON_NUMBER(rows[k].time_us), JSON_NUMBER(rows[k].algbw),
            JSON_NUMBER(rows[k].busbw));
  return 0;
}

static void write_json(FILE *f, const struct coll_options *o, const struct layout *l, const char *fabric, int gpus,
                       int tp, const struct row *rows, int n_sizes, int algo_mask)
{
  char algo[64];
  algo_text(algo_mask, algo, sizeof algo);
  fprintf(f, "{\n  \"op\": \"%s\",\n  \"fabric\": ", coll_kind_name(o->kind));
  json_write_string(f, fabric);
  fprintf(f, ",\n  \"fidelity\": \"%s\",\n  \"seed\": %llu,\n",
          o->run.fidelity == FAB_FIDELITY_PACKET ? "packet" : "flow", (unsigned long long)o->run.seed);
  fprintf(f, "  \"group\": \"%s\",\n  \"gpus\": %d,\n  \"tp\": %d,\n  \"groups\": %d,\n  \"ranks_per_group\": %d,\n",
          group_names[o->group], gpus, tp, l->n_groups, l->group_size);
  fprintf(f, "  \"algorithm\": \"%s\",\n  \"type\": \"float\",\n  \"redop\": \"%s\",\n  \"root\": %d,\n", algo,
          redop_of(o->kind), o->kind == COLL_BROADCAST ? 0 : -1);
  fprintf(f, "  \"warmup_iters\": %d,\n  \"iters\": %d,\n  \"wrong\": null,\n  \"rows\": [", o->warmup, o->iters);
  double bw_sum = 0;
  for (int k = 0; k < n_sizes; k++) {
    char proto[64];
    proto_text(rows[k].proto_mask, proto, sizeof proto);
    fprintf(f,
            "%s\n    {\"size_B\": %.0f, \"count\": %.0f, \"time_us\": %s, \"algbw_GBps\": %s, \"busbw_GBps\": %s, "
            "\"protocol\": \"%s\", \"rings\": ",
            k ? "," : "", rows[k].size, rows[k].count, JSON_NUMBER(rows[k].time_us), JSON_NUMBER(rows[k].algbw),
            JSON_NUMBER(rows[k].busbw), proto);
    json_write_string_or_null(f, coll_ring_forms_name(rows[k].ring_forms));
    fprintf(f, "}");
    bw_sum += rows[k].busbw;
  }
  fprintf(f, "\n  ],\n  \"avg_busbw_GBps\": %s\n}\n", n_sizes ? JSON_NUMBER(bw_sum / n_sizes) : "null");
}

static void stop_children(pid_t *pids, int n)
{
  for (int i = 0; i < n; i++)
    if (pids[i] > 0)
      kill(pids[i], SIGTERM);
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
        ;
      results_remove_child(pids[i]);
      pids[i] = 0;
    }
}

int cmd_coll(int argc, char **argv)
{
  static struct coll_options o;
  memset(&o, 0, sizeof o);
  run_options_init(&o.run);
  o.run.fidelity = FAB_FIDELITY_FLOW;
  o.kind = COLL_ALLREDUCE;
  o.group = GROUP_WORLD;
  o.min_bytes = 8;
  o.max_bytes = 8.0 * 1024 * 1024 * 1024;
  o.factor = 2;
  o.step_bytes = 1024 * 1024;
  o.iters = 1;
  o.fabrics[0] = "ib";
  o.fabrics[1] = "roce";
  o.n_fabrics = 2;
  run_register_params();
  int help = 0, status = parse_options(argc, argv, &o, &help);
  if (status != 0)
    return status;
  if (help) {
    usage(stdout);
    return 0;
  }
  if (o.run.help_cfg) {
    run_print_params(stdout, NULL, 0);
    return 0;
  }
  static double sizes[COLL_MAX_SIZES];
  int n_sizes = list_sizes(&o, sizes);
  if (n_sizes < 0) {
    fprintf(stderr,
            "sgfabric coll: the sizes from %.0f to %.0f B make more than %d rows; raise the factor or the "
            "step\n",
            o.min_bytes, o.max_bytes, COLL_MAX_SIZES);
    return CLI_USAGE;
  }

  /* Everything is written in a results directory: DIR for -o, else a private one removed at the
   * end (the generated platform lives there while the simulations read it). */
  char scratch[4096] = "", out_dir[4200];
  if (o.out == NULL) {
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/sgfabric-coll.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(scratch) == NULL) {
      fprintf(stderr, "sgfabric coll: cannot create a temporary directory %s: %s\n", scratch, strerror(errno));
      return 1;
    }
    snprintf(out_dir, sizeof out_dir, "%s/out", scratch);
  } else
    snprintf(out_dir, sizeof out_dir, "%s", o.out);
  static struct results r;
  char err[1024];
  const char *user_inputs[] = { o.run.platform };
  results_catch_signals(RESULTS_SIGNALS_FLAG);
  int rc = results_begin(&r, "sgfabric coll", out_dir, o.run.force, user_inputs, 1, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "sgfabric coll: %s\n", err);
    if (scratch[0])
      rmdir(scratch);
    return rc;
  }
  rc = 1;
  pid_t pids[COLL_MAX_FABRICS] = { 0 };
  int fds[COLL_MAX_FABRICS] = { -1, -1, -1, -1 };
  struct layout l = { 0 };
  struct platform *shown = NULL;
  struct size_result *res[COLL_MAX_FABRICS] = { NULL };
  struct row *rows = NULL;
  char platform[4300];
  snprintf(platform, sizeof platform, "%s/platform.xml", r.tmp);
  results_register(&r, "platform.xml");
  if (o.run.platform) {
    if (results_copy_file(o.run.platform, platform) != 0) {
      fprintf(stderr, "sgfabric coll: --platform %s: cannot read it or copy it into the results: %s\n", o.run.platform,
              strerror(errno));
      goto fail;
    }
  } else {
    int gpus = o.gpus ? o.gpus : 64;
    int prc = run_generate_platform(gpus, o.gpu, o.platform_args, o.n_platform, platform);
    if (results_interrupted())
      goto interrupted;
    if (prc != 0) {
      fprintf(stderr, "sgfabric coll: cannot build a platform for %d GPUs (above)\n", gpus);
      rc = prc;
      goto fail;
    }
  }
  const char *platform_name = o.run.platform ? o.run.platform : "generated";

  /* Each fabric's set-up is loaded here, so that a bad platform or parameter is reported before
   * any simulation; the child inherits it. */
  int gpus = 0, tp = 0;
  for (int f = 0; f < o.n_fabrics; f++) {
    struct run_options ro = o.run;
    ro.fabric = o.fabrics[f];
    ro.platform = platform;
    struct run_setup s;
    if (run_setup_load(&ro, &s, err, sizeof err) != 0) {
      /* Messages name the copy; the user knows the file by the name given. */
      const char *msg = strncmp(err, platform, strlen(platform)) == 0 ? err + strlen(platform) : NULL;
      fprintf(stderr, "sgfabric coll: %s%s\n", msg ? (o.run.platform ? o.run.platform : "platform.xml") : "",
              msg ? msg : err);
      run_setup_free(&s);
      goto fail;
    }
    if (f == 0) {
      int n_gpus = s.platform->topo->n_gpus;
      gpus = o.gpus ? o.gpus : n_gpus;
      tp = o.tp ? o.tp : (s.platform->gpus_per_node < gpus ? s.platform->gpus_per_node : gpus);
      if (gpus > n_gpus) {
        fprintf(stderr, "sgfabric coll: --gpus %d: the platform %s has %d GPUs\n", gpus, platform_name, n_gpus);
        run_setup_free(&s);
        rc = CLI_USAGE;
        goto fail;
      }
      if (build_layout(&o, gpus, tp, &l, err, sizeof err) != 0) {
        fprintf(stderr, "sgfabric coll: %s\n", err);
        run_setup_free(&s);
        rc = CLI_USAGE;
        goto fail;
      }
      if (o.run.fidelity == FAB_FIDELITY_PACKET && o.max_bytes * l.n_groups * l.group_size > 64e9)
        fprintf(stderr,
                "sgfabric coll: warning: packet fidelity simulates every packet of %.0f B per rank on %d "
                "ranks and can take hours; --fidelity flow (the default) is fast\n",
                o.max_bytes, l.n_groups * l.group_size);
      shown = platform_load(platform, err, sizeof err);
      if (shown == NULL) {
        fprintf(stderr, "sgfabric coll: %s\n", err);
        run_setup_free(&s);
        goto fail;
      }
    }
    int pipefd[2];
    if (pipe(pipefd) != 0) {
      fprintf(stderr, "sgfabric coll: cannot create a pipe: %s\n", strerror(errno));
      run_setup_free(&s);
      goto fail;
    }
    fflush(NULL); /* the child must not inherit unwritten output */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
#ifdef __linux__
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent)
        _exit(127);
#endif
      (void)parent;
      close(pipefd[0]);
      for (int k = 0; k < f; k++)
        close(fds[k]);
      child_main(&o, &l, &s, sizes, n_sizes, pipefd[1]);
    }
    close(pipefd[1]);
    run_setup_free(&s);
    if (pid < 0) {
      fprintf(stderr, "sgfabric coll: cannot start the %s simulation: %s\n", o.fabrics[f], strerror(errno));
      close(pipefd[0]);
      goto fail;
    }
    results_add_child(pid);
    pids[f] = pid;
    fds[f] = pipefd[0];
  }
  int failed = 0;
  for (int f = 0; f < o.n_fabrics; f++) {
    res[f] = calloc((size_t)n_sizes, sizeof *res[f]);
    int got = read_all(fds[f], res[f], sizeof *res[f] * (size_t)n_sizes) == 0;
    close(fds[f]);
    fds[f] = -1;
    int st = 0;
    while (waitpid(pids[f], &st, 0) < 0 && errno == EINTR)
      ;
    results_remove_child(pids[f]);
    pids[f] = 0;
    if (results_interrupted())
      goto interrupted;
    if (!got || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "sgfabric coll: the %s simulation failed (the reason is above)\n", o.fabrics[f]);
      failed = 1;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
        rc = 3; /* the job failed (failures: communicator timeout, InfiniBand QP retries), as run and flows */
    }
  }
  if (failed)
    goto fail;

  rows = malloc(sizeof *rows * (size_t)n_sizes);
  for (int f = 0; f < o.n_fabrics; f++) {
    int mask = 0;
    for (int k = 0; k < n_sizes; k++)
      mask |= res[f][k].algo_mask;
    compute_rows(&o, &l, sizes, n_sizes, res[f], rows);
    print_block(stdout, &o, &l, o.fabrics[f], platform_name, shown, gpus, tp, rows, n_sizes, mask);
    if (o.out) {
      char name[RESULTS_MAX_NAME];
      snprintf(name, sizeof name, "%s.txt", o.fabrics[f]);
      FILE *t = results_open(&r, name);
      if (t)
        print_block(t, &o, &l, o.fabrics[f], platform_name, shown, gpus, tp, rows, n_sizes, mask);
      snprintf(name, sizeof name, "%s.csv", o.fabrics[f]);
      FILE *c = results_open(&r, name);
      if (c)
        write_csv(c, rows, n_sizes, &o);
      snprintf(name, sizeof name, "%s.json", o.fabrics[f]);
      FILE *j = results_open(&r, name);
      if (j)
        write_json(j, &o, &l, o.fabrics[f], gpus, tp, rows, n_sizes, mask);
      int bad = t == NULL || c == NULL || j == NULL;
      bad |= (t && results_close(t) != 0) | (c && results_close(c) != 0) | (j && results_close(j) != 0);
      if (bad) {
        fprintf(stderr, "sgfabric coll: --out %s: cannot write the results: %s\n", o.out,
                errno ? strerror(errno) : "write error");
        goto fail;
      }
    }
  }
  if (o.out) {
    char fabrics_json[256] = "\"fabrics\": [";
    for (int f = 0; f < o.n_fabrics; f++)
      snprintf(fabrics_json + strlen(fabrics_json), sizeof fabrics_json - strlen(fabrics_json), "%s\"%s\"",
               f ? ", " : "", o.fabrics[f]);
    snprintf(fabrics_json + strlen(fabrics_json), sizeof fabrics_json - strlen(fabrics_json), "]");
    const char *inputs[] = { "platform.xml" };
    const char *given_as[] = { o.run.platform };
    struct manifest_desc md = { .argc = argc,
                                .argv = argv,
                                .inputs = inputs,
                                .given_as = given_as,
                                .n_inputs = 1,
                                .base = r.tmp,
                                .seed = o.run.seed,
                                .extra_json = fabrics_json };
    if (results_write_manifest_desc(&r, &md) != 0) {
      fprintf(stderr, "sgfabric coll: cannot write %s/manifest.json\n", o.out);
      goto fail;
    }
    if ((rc = results_commit(&r, err, sizeof err)) != 0) {
      fprintf(stderr, "sgfabric coll: %s\n", err);
      goto done;
    }
  }
  rc = 0;
  goto done;
interrupted:
  stop_children(pids, o.n_fabrics);
  rc = results_interrupted_exit(&r);
  goto done;
fail:
  stop_children(pids, o.n_fabrics);
done:
  results_abort(&r); /* nothing once committed */
  if (scratch[0])
    rmdir(scratch);
  for (int f = 0; f < COLL_MAX_FABRICS; f++) {
    if (fds[f] >= 0)
      close(fds[f]);
    free(res[f]);
  }
  free(rows);
  free(l.gpus);
  if (shown)
    platform_free(shown);
  return rc;
}
