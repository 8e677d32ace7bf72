/* What every simulating subcommand (flows, run, compare) shares: the options that choose the
 * platform, fabric model, fidelity, seed and parameters; loading and checking them before any
 * simulation starts; starting SimGrid with the fabric; the common part of summary.json. */
#ifndef SGFABRIC_RUN_COMMON_H
#define SGFABRIC_RUN_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "fabric.h"
#include "platform.h"

#define RUN_MAX_CFG 256

struct run_options {
  const char *platform;
  const char *out;
  int force;            /* --force: --out may replace a directory that is not a result */
  const char *fabric;   /* ideal | ib | roce */
  fab_fidelity fidelity;
  uint64_t seed;
  const char *cfg[RUN_MAX_CFG];
  int n_cfg;
};

struct run_setup {
  struct platform *platform;
  struct param_set *params;
  const struct fab_model *model;
  struct fabric *fab;
};

void run_options_init(struct run_options *o);
/* Consumes argv[*i] (and its value) if it is a common option: returns 1, 0 if not one, -1 on
 * a bad value (message in err). */
int run_common_option(struct run_options *o, int argc, char **argv, int *i, char *err, size_t errlen);
/* Registers every model's parameters. */
void run_register_params(void);
/* The model of a --fabric name, or NULL with a message. */
const struct fab_model *run_find_model(const char *name, char *err, size_t errlen);
/* Loads the platform, applies its props then the --cfg values, creates the fabric. */
int run_setup_load(const struct run_options *o, struct run_setup *s, char *err, size_t errlen);
void run_setup_free(struct run_setup *s);
/* Starts SimGrid on the platform with the fabric model installed. */
void run_simgrid_start(const struct run_setup *s, const char *program);
/* Writes the first keys of summary.json (fabric, fidelity, seed, sim_time_s) and "parameters". */
void run_write_summary_head(FILE *f, const struct run_options *o, const struct run_setup *s, double sim_time_s);
struct results;
/* Writes what every run's results directory holds besides its summary: links.csv (when
 * fabric/link-stats is on), the model's requested time series, manifest.json. Returns 0 or -1. */
int run_write_common_results(struct results *r, const struct run_setup *s, int argc, char **argv,
                             const char *const *inputs, int n_inputs, uint64_t seed);
/* Prints the options shared by the simulating subcommands. */
void run_print_common_usage(FILE *out);
/* Prints the exit statuses of the simulating subcommands (docs/outputs.md). */
void run_print_exit_status(FILE *out);

#endif
