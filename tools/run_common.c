/* Options, set-up and SimGrid start shared by the simulating subcommands. */
#include "run_common.h"

#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>

#include "coll_params.h"
#include "results.h"
#include "sg_fabric.h"
#ifdef SGF_HAVE_IB
#include "ib.h"
#endif
#ifdef SGF_HAVE_ROCE
#include "roce.h"
#endif

static const struct fab_model *ideal_model(void) { return &fab_model_ideal; }

/* The fabric models of this build: --fabric name, the model, its parameter table. */
static const struct model_entry {
  const char *name;
  const struct fab_model *(*model)(void);
  void (*register_params)(void);
} g_models[] = {
    {"ideal", ideal_model, NULL},
#ifdef SGF_HAVE_IB
    {"ib", ib_model, ib_register_params},
#endif
#ifdef SGF_HAVE_ROCE
    {"roce", roce_model, roce_register_params},
#endif
    {NULL, NULL, NULL},
};

void run_options_init(struct run_options *o)
{
  memset(o, 0, sizeof *o);
  o->fabric = "ideal";
  o->fidelity = FAB_FIDELITY_PACKET;
  o->seed = 1;
}

static const char *value_of(int argc, char **argv, int *i, const char *name, char *err, size_t errlen)
{
  size_t len = strlen(name);
  if (argv[*i][len] == '=')
    return argv[*i] + len + 1;
  if (*i + 1 >= argc) {
    snprintf(err, errlen, "%s needs a value", name);
    return NULL;
  }
  return argv[++*i];
}

static int is_option(const char *arg, const char *name)
{
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

int run_common_option(struct run_options *o, int argc, char **argv, int *i, char *err, size_t errlen)
{
  const char *arg = argv[*i];
  const char *v;
  if (strncmp(arg, "--cfg=", 6) == 0) {
    if (o->n_cfg == RUN_MAX_CFG) {
      snprintf(err, errlen, "too many --cfg options");
      return -1;
    }
    o->cfg[o->n_cfg++] = arg + 6;
    return 1;
  }
  if (is_option(arg, "--platform")) {
    if ((v = value_of(argc, argv, i, "--platform", err, errlen)) == NULL)
      return -1;
    o->platform = v;
    return 1;
  }
  if (is_option(arg, "--out")) {
    if ((v = value_of(argc, argv, i, "--out", err, errlen)) == NULL)
      return -1;
    o->out = v;
    return 1;
  }
  if (is_option(arg, "--fabric")) {
    if ((v = value_of(argc, argv, i, "--fabric", err, errlen)) == NULL)
      return -1;
    o->fabric = v;
    return 1;
  }
  if (is_option(arg, "--fidelity")) {
    if ((v = value_of(argc, argv, i, "--fidelity", err, errlen)) == NULL)
      return -1;
    if (!strcmp(v, "packet"))
      o->fidelity = FAB_FIDELITY_PACKET;
    else if (!strcmp(v, "flow"))
      o->fidelity = FAB_FIDELITY_FLOW;
    else {
      snprintf(err, errlen, "--fidelity: '%s' is not packet or flow", v);
      return -1;
    }
    return 1;
  }
  if (is_option(arg, "--seed")) {
    if ((v = value_of(argc, argv, i, "--seed", err, errlen)) == NULL)
      return -1;
    char *end;
    unsigned long long seed = strtoull(v, &end, 10);
    if (*v == '\0' || *v == '-' || *end != '\0') {
      snprintf(err, errlen, "--seed: '%s' is not a non-negative integer", v);
      return -1;
    }
    o->seed = seed;
    return 1;
  }
  return 0;
}

void run_register_params(void)
{
  fabric_register_params();
  coll_register_params();
  for (const struct model_entry *m = g_models; m->name; m++)
    if (m->register_params)
      m->register_params();
}

const struct fab_model *run_find_model(const char *name, char *err, size_t errlen)
{
  char available[128] = "";
  for (const struct model_entry *m = g_models; m->name; m++) {
    if (!strcmp(name, m->name))
      return m->model();
    snprintf(available + strlen(available), sizeof available - strlen(available), "%s%s", available[0] ? ", " : "",
             m->name);
  }
  if (!strcmp(name, "ib") || !strcmp(name, "roce"))
    snprintf(err, errlen, "--fabric %s: this fabric model is not part of this build yet (available: %s)", name,
             available);
  else
    snprintf(err, errlen, "--fabric: unknown fabric '%s' (available: %s)", name, available);
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
  s->params = param_set_new();
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
      if (param_set_cfg(s->params, o->cfg[i], message, sizeof message) != 0) {
        snprintf(err, errlen, "--cfg=%s: %s", o->cfg[i], message);
        return -1;
      }
    }
  }
  s->fab = fabric_new(s->platform->topo, s->params, s->model, o->fidelity, o->seed, err, errlen);
  return s->fab ? 0 : -1;
}

void run_setup_free(struct run_setup *s)
{
  fabric_free(s->fab);
  platform_free(s->platform);
  param_set_free(s->params);
  memset(s, 0, sizeof *s);
}

void run_simgrid_start(const struct run_setup *s, const char *program)
{
  /* SimGrid gets only its own options: ours were consumed. Times are exact to 1e-13 s, so
   * that actors' sleeps land on the dates the fabric computes. */
  char *argv[] = {(char *)program, "--log=root.thres:warning", "--cfg=surf/precision:1e-13", NULL};
  int argc = 3;
  simgrid_init(&argc, argv);
  simgrid_load_platform(s->platform->path);
  sgf_install(s->fab);
}

void run_write_summary_head(FILE *f, const struct run_options *o, const struct run_setup *s, double sim_time_s)
{
  fprintf(f, "  \"fabric\": ");
  json_string(f, o->fabric);
  fprintf(f, ",\n  \"fidelity\": \"%s\",\n", o->fidelity == FAB_FIDELITY_PACKET ? "packet" : "flow");
  fprintf(f, "  \"seed\": %llu,\n", (unsigned long long)o->seed);
  fprintf(f, "  \"sim_time_s\": %s,\n", JSON_NUMBER(sim_time_s));
  fprintf(f, "  \"platform\": {\"gpus\": %d, \"gpus_per_node\": %d, \"gpu\": ", s->platform->topo->n_gpus,
          s->platform->gpus_per_node);
  json_string(f, s->platform->gpu_type);
  fprintf(f, ", \"switches\": %d, \"links\": %d},\n", s->platform->topo->n_nodes - s->platform->topo->n_gpus,
          s->platform->topo->n_links);
  fprintf(f, "  \"parameters\": {\n");
  param_write_json(s->params, f, "    ");
  fprintf(f, "  },\n");
}

static FILE *open_result(void *ctx, const char *name) { return results_open(ctx, name); }

int run_write_common_results(struct results *r, const struct run_setup *s, int argc, char **argv,
                             const char *const *inputs, int n_inputs, uint64_t seed)
{
  int failed = 0;
  if (param_get(s->params, "fabric/link-stats")) {
    FILE *f = results_open(r, "links.csv");
    failed |= f == NULL || fabric_write_links_csv(s->fab, f) != 0;
    failed |= results_close(f) != 0;
  }
  if (s->model->write_series)
    failed |= s->model->write_series(s->fab, open_result, r) != 0;
  failed |= results_write_manifest(r, argc, argv, inputs, n_inputs, seed) != 0;
  return failed ? -1 : 0;
}

void run_print_common_usage(FILE *out)
{
  fprintf(out, "  --platform FILE          platform XML (sgfabric platform writes one)\n"
               "  --fabric ideal|ib|roce   fabric model (default ideal)\n"
               "  --fidelity packet|flow   packet-level or flow-level simulation (default packet)\n"
               "  --seed N                 seed of every random choice (default 1)\n"
               "  --cfg=area/name:value    set a model parameter (sgfabric params lists them)\n"
               "  --out DIR                results directory (replaced atomically)\n");
}
