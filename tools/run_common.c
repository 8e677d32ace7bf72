/* Options, set-up and SimGrid start shared by the simulating subcommands. */
#include "run_common.h"
#include "failure.h"
#include "platform_cli.h"

#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "coll_params.h"
#include "straggler.h"
#include "compute_params.h"
#include "replay.h"
#include "results.h"
#include "sg_fabric.h"
#ifdef SGF_HAVE_IB
#include "ib.h"
#endif
#ifdef SGF_HAVE_ROCE
#include "roce.h"
#endif

static const struct fab_model *maxmin_model(void) { return &fab_model_ideal; }

/* The fabric models of this build: --fabric name, the model, its parameter table. "maxmin" is
 * the engine alone: ECMP-hashed paths, FIFO output queues with unlimited buffers, no flow control,
 * no congestion control, max-min fair rates at flow fidelity. It is no best case: its hash
 * collisions can make it slower than InfiniBand's adaptive routing. "ideal" is its former name. */
static const struct model_entry {
  const char *name;
  const struct fab_model *(*model)(void);
  void (*register_params)(void);
  const char *alias_of; /* a deprecated name: the model it names */
} g_models[] = {
  { "maxmin", maxmin_model, NULL, NULL },
#ifdef SGF_HAVE_IB
  { "ib", ib_model, ib_register_params, NULL },
#endif
#ifdef SGF_HAVE_ROCE
  { "roce", roce_model, roce_register_params, NULL },
#endif
  { "ideal", maxmin_model, NULL, "maxmin" },
  { NULL, NULL, NULL, NULL },
};

void run_options_init(struct run_options *o)
{
  memset(o, 0, sizeof *o);
  o->fabric = "maxmin";
  o->fidelity = FAB_FIDELITY_PACKET;
  o->seed = 1;
}

static const struct cli_option common_options[] = {
  { "platform", 0, CLI_VALUE, RUN_OPT_PLATFORM, "FILE", "platform XML (sgfabric platform writes one)" },
  { "fabric", 0, CLI_VALUE, RUN_OPT_FABRIC, "NAME",
    "fabric model: maxmin, ib or roce (default maxmin: ECMP-hashed paths, FIFO queues with unlimited buffers, no flow "
    "or congestion control; not a best case, hash collisions can make it slower than ib; ideal is its deprecated "
    "name)" },
  { "fidelity", 0, CLI_VALUE, RUN_OPT_FIDELITY, "packet|flow",
    "packet-level or flow-level (default: flow for run, packet for flows)" },
  { "seed", 0, CLI_VALUE, RUN_OPT_SEED, "N", "seed of every random choice, 0 to 2^64-1 (default 1)" },
  { "cfg", 0, CLI_VALUE, RUN_OPT_CFG, "area/name:value", "set a model parameter (repeatable; --help-cfg lists them)" },
  { "help-cfg", 0, CLI_FLAG, RUN_OPT_HELP_CFG, NULL, "list the model parameters (as sgfabric params) and exit" },
  { "force", 0, CLI_FLAG, RUN_OPT_FORCE, NULL,
    "replace an existing DIR that is not a result of sgfabric (its files that are not sgfabric's are kept in "
    "DIR.old-*)" },
  { "failures", 0, CLI_VALUE, RUN_OPT_FAILURES, "FILE",
    "failure schedule: CSV time_us,action,target (down|up; a link id or a node); both fidelities "
    "(docs/failures.md)" },
  { "out", 'o', CLI_VALUE, RUN_OPT_OUT, "DIR",
    "results directory, written atomically (docs/outputs.md): a new directory, or a previous result of "
    "sgfabric, replaced only once the new one is complete; any other directory is refused (exit 2), the "
    "current one and one holding an input always" },
  CLI_TABLE_END,
};

const struct cli_option *run_common_options(void) { return common_options; }

/* The generators' one-line report names where they wrote: not for the caller's output (their
 * errors, on stderr, still show). */
static int quiet_stdout(void)
{
  fflush(stdout);
  int saved = dup(1);
  FILE *null = fopen("/dev/null", "w");
  if (saved >= 0 && null != NULL)
    dup2(fileno(null), 1);
  if (null != NULL)
    fclose(null);
  return saved;
}

static void restore_stdout(int saved)
{
  fflush(stdout);
  if (saved >= 0) {
    dup2(saved, 1);
    close(saved);
  }
}

int run_quiet_main(int (*main_fn)(int, char **), int argc, char **argv)
{
  int saved = quiet_stdout();
  int rc = main_fn(argc, argv);
  restore_stdout(saved);
  return rc;
}

int run_generate_platform(int gpus, const char *gpu, const char *const *options, int n_options, const char *out)
{
  if (n_options > RUN_MAX_PLATFORM_OPTIONS)
    return 2;
  char gpus_text[16];
  snprintf(gpus_text, sizeof gpus_text, "%d", gpus);
  const char *argv[RUN_MAX_PLATFORM_OPTIONS + 16];
  int argc = 0;
  const char *defaults[] = { "platform", "--gpus",           gpus_text, "--radix",
                             "64",       "--rail-optimized", "--tiers", gpus > 2048 ? "3" : "2" };
  for (size_t k = 0; k < sizeof defaults / sizeof defaults[0]; k++)
    argv[argc++] = defaults[k];
  if (gpu) {
    argv[argc++] = "--gpu";
    argv[argc++] = gpu;
  }
  for (int i = 0; i < n_options; i++)
    argv[argc++] = options[i];
  argv[argc++] = "-o";
  argv[argc++] = out;
  argv[argc] = NULL;
  /* The file records its command with its own name, not the temporary directory's: a replay
   * generates it again, elsewhere, and must get the same bytes. */
  const char *slash = strrchr(out, '/');
  int saved = quiet_stdout();
  int rc = platform_cli_generate(argc, (char **)argv, slash ? slash + 1 : out);
  restore_stdout(saved);
  return rc;
}

int run_parse_fabrics(const struct cli *c, char *list, size_t list_size, const char **fabrics, int max, int *n)
{
  char err[512];
  if (strlen(c->value) >= list_size)
    return cli_usage_error(c, "--fabrics: '%s' is too long", c->value);
  snprintf(list, list_size, "%s", c->value);
  *n = 0;
  for (char *name = list, *end;; name = end + 1) {
    end = strchr(name, ',');
    if (end)
      *end = '\0';
    if (*name == '\0')
      return cli_usage_error(c, "--fabrics: '%s' has an empty entry (expected names like ib,roce)", c->value);
    for (int f = 0; f < *n; f++)
      if (!strcmp(fabrics[f], name))
        return cli_usage_error(c, "--fabrics: '%s' names %s twice", c->value, name);
    if (run_find_model(name, err, sizeof err) == NULL)
      return cli_usage_error(c, "--fabrics: %s", strchr(err, ' ') ? strchr(err, ' ') + 1 : err);
    if (*n == max)
      return cli_usage_error(c, "--fabrics: at most %d fabrics", max);
    fabrics[(*n)++] = name;
    if (end == NULL)
      break;
  }
  return 0;
}

int run_parse_fidelity(const struct cli *c, const char *text, fab_fidelity *out)
{
  if (!strcmp(text, "packet"))
    *out = FAB_FIDELITY_PACKET;
  else if (!strcmp(text, "flow"))
    *out = FAB_FIDELITY_FLOW;
  else {
    static const char *const names[] = { "packet", "flow", NULL };
    char message[256];
    snprintf(message, sizeof message, "--fidelity: '%s' is not packet or flow", text);
    cli_did_you_mean(message, sizeof message, text, names, NULL);
    cli_usage_error(c, "%s", message);
    return -1;
  }
  return 0;
}

int run_check_cfg(const struct cli *c, const char *cfg)
{
  run_register_params();
  struct param_set *scratch = fab_param_set_new();
  char message[512];
  int rc = fab_param_set_cfg(scratch, cfg, message, sizeof message);
  fab_param_set_free(scratch);
  if (rc != 0) {
    /* A misspelled name gets the closest registered one. */
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(cfg, ":"), cfg);
    if (!fab_param_exists(name)) {
      const char *names[512];
      size_t n = fab_param_list_names(names, 511);
      names[n] = NULL;
      cli_did_you_mean(message, sizeof message, name, names, NULL);
    }
    cli_usage_error(c, "--cfg=%s: %s", cfg, message);
  }
  return rc;
}

int run_common_apply(struct run_options *o, struct cli *c, int id)
{
  char err[512];
  switch (id) {
  case RUN_OPT_PLATFORM: o->platform = c->value; return 0;
  case RUN_OPT_OUT: o->out = c->value; return 0;
  case RUN_OPT_FABRIC:
    if (run_find_model(c->value, err, sizeof err) == NULL) {
      cli_usage_error(c, "%s", err);
      return -1;
    }
    o->fabric = c->value;
    return 0;
  case RUN_OPT_FIDELITY: return run_parse_fidelity(c, c->value, &o->fidelity);
  case RUN_OPT_SEED: return cli_u64(c, &o->seed);
  case RUN_OPT_CFG:
    if (o->n_cfg == RUN_MAX_CFG) {
      cli_usage_error(c, "too many --cfg options (at most %d)", RUN_MAX_CFG);
      return -1;
    }
    /* Checked now, so that a misspelled parameter is a usage error found before any work. */
    if (run_check_cfg(c, c->value) != 0)
      return -1;
    o->cfg[o->n_cfg++] = c->value;
    return 0;
  case RUN_OPT_HELP_CFG: o->help_cfg = 1; return 0;
  case RUN_OPT_FORCE: o->force = 1; return 0;
  case RUN_OPT_FAILURES: o->failures = c->value; return 0;
  default: return -1;
  }
}

void run_register_params(void)
{
  fabric_register_params();
  coll_register_params();
  straggler_register_params();
  compute_register_params();
  replay_register_params();
  for (const struct model_entry *m = g_models; m->name; m++)
    if (m->register_params)
      m->register_params();
}

const struct fab_model *run_find_model(const char *name, char *err, size_t errlen)
{
  char available[128] = "";
  const char *names[8] = { NULL };
  int n = 0;
  for (const struct model_entry *m = g_models; m->name; m++) {
    if (!strcmp(name, m->name)) {
      if (m->alias_of) {
        /* Said to a person at a terminal; scripts keep a first stderr line that is the error's. */
        static int warned;
        if (!warned++ && isatty(2))
          fprintf(stderr,
                  "sgfabric: warning: --fabric %s is a deprecated name of %s (ECMP hashing, FIFO queues, "
                  "no flow or congestion control; not a best case)\n",
                  m->name, m->alias_of);
      }
      return m->model();
    }
    if (!m->alias_of) {
      snprintf(available + strlen(available), sizeof available - strlen(available), "%s%s", available[0] ? ", " : "",
               m->name);
      names[n++] = m->name;
    }
  }
  if (!strcmp(name, "ib") || !strcmp(name, "roce")) {
    snprintf(err, errlen, "--fabric %s: this fabric model is not part of this build yet (available: %s)", name,
             available);
  } else {
    snprintf(err, errlen, "--fabric: unknown fabric '%s'", name);
    cli_did_you_mean(err, errlen, name, names, NULL);
    snprintf(err + strlen(err), errlen - strlen(err), " (available: %s)", available);
  }
  return NULL;
}

int run_setup_load(const struct run_options *o, struct run_setup *s, char *err, size_t errlen)
{
  memset(s, 0, sizeof *s);
  if (o->platform == NULL) {
    snprintf(err, errlen, "--platform FILE is required");
    return -1;
  }
  if ((s->model = run_find_model(o->fabric, err, errlen)) == NULL)
    return -1;
  run_register_params();
  s->params = fab_param_set_new();
  /* --cfg values are checked before the platform is read (a large one takes a while), and
   * applied again after its props so that the command line wins. */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      if ((s->platform = platform_load(o->platform, err, errlen)) == NULL)
        return -1;
      if (platform_apply_params(s->platform, s->params, err, errlen) != 0)
        return -1;
    }
    for (int i = 0; i < o->n_cfg; i++) {
      char message[256];
      if (fab_param_set_cfg(s->params, o->cfg[i], message, sizeof message) != 0) {
        snprintf(err, errlen, "--cfg=%s: %s", o->cfg[i], message);
        return -1;
      }
    }
  }
  s->fab = fabric_new(s->platform->topo, s->params, s->model, o->fidelity, o->seed, err, errlen);
  if (s->fab == NULL)
    return -1;
  if (o->failures != NULL) {
    struct fab_failures *f = fab_failures_load(o->failures, s->platform->topo, err, errlen);
    if (f == NULL)
      return -1;
    if (fabric_failures_install(s->fab, f, fab_param_get(s->params, "coll/timeout"), err, errlen) != 0) {
      fab_failures_free(f);
      return -1;
    }
  }
  return 0;
}

void run_setup_free(struct run_setup *s)
{
  fabric_free(s->fab);
  platform_free(s->platform);
  fab_param_set_free(s->params);
  memset(s, 0, sizeof *s);
}

void run_note_actor_engine(const char *command, int ranks)
{
  if (ranks >= RUN_ENGINE_NOTE_RANKS)
    fprintf(stderr,
            "sgfabric %s: note: %d ranks run as SimGrid actors; --cfg=replay/engine:events steps them inside the "
            "fabric's events, several times faster (docs/performance.md, B4)\n",
            command, ranks);
}

int run_simgrid_start(const struct run_setup *s, const char *program, char *err, size_t errlen)
{
  /* SimGrid gets only its own options: ours were consumed. Times are exact to 1e-13 s, so
   * that actors' sleeps land on the dates the fabric computes. */
  char *argv[] = { (char *)program, "--log=root.thres:warning", "--cfg=surf/precision:1e-13", NULL, NULL, NULL };
  int argc = 3;
  /* One actor per GPU. SimGrid maps each actor's stack (8 MiB) with a guard page: two memory
   * mappings per actor, and Linux allows 65,530 per process (vm.max_map_count), so about 32,000
   * actors is the limit: a 65,536-GPU run stopped with "Failed to protect stack". Above
   * RUN_SMALL_STACKS_GPUS the stacks are 64 KiB without guard pages, taken from the heap (below
   * malloc's mmap threshold, so no mapping each). The rank actors' calls are shallow; results do
   * not depend on where stacks live. */
  if (s->platform && s->platform->topo->n_gpus > RUN_SMALL_STACKS_GPUS) {
    argv[argc++] = "--cfg=contexts/guard-size:0";
    argv[argc++] = "--cfg=contexts/stack-size:64";
  }
  simgrid_init(&argc, argv);
  if (sgf_glue_load_platform(s->platform->path, err, errlen) != 0)
    return -1;
  sgf_install(s->fab);
  return 0;
}

void run_write_summary_head(FILE *f, const struct run_options *o, const struct run_setup *s, double sim_time_s)
{
  fprintf(f, "  \"fabric\": ");
  json_write_string(f, o->fabric);
  fprintf(f, ",\n  \"fidelity\": \"%s\",\n", o->fidelity == FAB_FIDELITY_PACKET ? "packet" : "flow");
  fprintf(f, "  \"seed\": %llu,\n", (unsigned long long)o->seed);
  fprintf(f, "  \"sim_time_s\": %s,\n", JSON_NUMBER(sim_time_s));
  fprintf(f, "  \"platform\": {\"gpus\": %d, \"gpus_per_node\": %d, \"gpu\": ", s->platform->topo->n_gpus,
          s->platform->gpus_per_node);
  json_write_string(f, s->platform->gpu_type);
  fprintf(f, ", \"switches\": %d, \"links\": %d", s->platform->topo->n_nodes - s->platform->topo->n_gpus,
          s->platform->topo->n_links);
  /* The fat-tree as its file declares it (docs/platforms.md), null where it does not say. */
  static const struct {
    const char *prop, *key;
    int kind; /* 0 integer, 1 boolean, 2 string */
  } declared[] = { { "sgfabric/tiers", "tiers", 0 },
                   { "sgfabric/radix", "radix", 0 },
                   { "sgfabric/rail-optimized", "rail_optimized", 1 },
                   { "sgfabric/oversubscription", "oversubscription", 2 },
                   { "sgfabric/link-rate", "link_rate", 2 },
                   { "sgfabric/nvlink-rate", "nvlink_rate", 2 } };
  for (size_t i = 0; i < sizeof declared / sizeof declared[0]; i++) {
    const char *v = platform_prop(s->platform, declared[i].prop);
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : 0;
    fprintf(f, ", \"%s\": ", declared[i].key);
    if (v == NULL || (declared[i].kind < 2 && (end == v || *end != '\0')))
      fprintf(f, "null");
    else if (declared[i].kind == 0)
      fprintf(f, "%ld", n);
    else if (declared[i].kind == 1)
      fprintf(f, "%s", n ? "true" : "false");
    else
      json_write_string(f, v);
  }
  fprintf(f, "},\n");
  fprintf(f, "  \"parameters\": {\n");
  fab_param_write_json(s->params, f, "    ");
  fprintf(f, "  },\n");
  fabric_failures_write_json(s->fab, f, "  "); /* nothing without --failures */
}

static FILE *open_result(void *ctx, const char *name) { return results_open(ctx, name); }

int run_write_common_results(struct results *r, const struct run_setup *s, int argc, char **argv,
                             const char *const *inputs, int n_inputs, uint64_t seed)
{
  int failed = 0;
  if (fab_param_get(s->params, "fabric/link-stats")) {
    FILE *f = results_open(r, "links.csv");
    failed |= f == NULL || fabric_write_links_csv(s->fab, f) != 0;
    failed |= results_close(f) != 0;
  }
  if (s->model->lifecycle.series)
    failed |= s->model->lifecycle.series(s->fab, open_result, r) != 0;
  failed |= results_write_manifest(r, argc, argv, inputs, n_inputs, seed) != 0;
  return failed ? -1 : 0;
}

void run_print_common_usage(FILE *out) { cli_print_options(out, common_options, NULL); }

/* The terminal's width when out is one, else $COLUMNS, else 80. */
static int output_width(FILE *out)
{
  struct winsize ws;
  if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return ws.ws_col;
  const char *columns = getenv("COLUMNS");
  long v;
  if (columns && cli_parse_long(columns, 40, 1000, &v) == 0)
    return (int)v;
  return 80;
}

int run_print_params(FILE *out, const char *area, int markdown)
{
  run_register_params();
  return fab_param_print_table(out, area, markdown, output_width(out));
}

void run_print_exit_status(FILE *out)
{
  fprintf(out, "\nExit status: 0 done, 1 error (nothing written), 2 usage error or refused --out,\n"
               "3 the simulated job failed (--failures: a transfer made no progress for coll/timeout; results\n"
               "written, summary.json job_failed_at_s),\n"
               "130/143 interrupted by SIGINT/SIGTERM (nothing written, the previous result kept).\n");
}

int run_analysis_dir(char *buf, size_t len)
{
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0'; /* PREFIX/bin */
      snprintf(buf, len, "%s/../share/sgfabric/analysis", self);
      if (access(buf, R_OK) == 0)
        return 0;
    }
  }
  snprintf(buf, len, "%s/analysis", SGF_SOURCE_DIR);
  return access(buf, R_OK) == 0 ? 0 : -1;
}
