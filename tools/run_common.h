/* What every simulating subcommand (flows, run, compare) shares: the options that choose the
 * platform, fabric model, fidelity, seed and parameters; loading and checking them before any
 * simulation starts; starting SimGrid with the fabric; the common part of summary.json. */
#ifndef SGFABRIC_RUN_COMMON_H
#define SGFABRIC_RUN_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "fabric.h"
#include "platform.h"

#define RUN_MAX_CFG 256

struct run_options {
  const char *platform;
  const char *out;
  const char *fabric; /* maxmin | ib | roce (ideal: deprecated name of maxmin) */
  fab_fidelity fidelity;
  uint64_t seed;
  const char *cfg[RUN_MAX_CFG];
  int n_cfg;
  int help_cfg;         /* --help-cfg: list the parameters and exit */
  const char *failures; /* --failures FILE (NULL: none) */
  int force;            /* --force: replace the results directory even if it is not a previous result */
};

struct run_setup {
  struct platform *platform;
  struct param_set *params;
  const struct fab_model *model;
  struct fabric *fab;
};

void run_options_init(struct run_options *o);
/* The ids of the options shared by flows, run and compare (cli.h); above every subcommand's own. */
enum run_option_id {
  RUN_OPT_PLATFORM = 1000,
  RUN_OPT_OUT,
  RUN_OPT_FABRIC,
  RUN_OPT_FIDELITY,
  RUN_OPT_SEED,
  RUN_OPT_CFG,
  RUN_OPT_HELP_CFG,
  RUN_OPT_FORCE,
  RUN_OPT_FAILURES,
};
/* Their table: --platform --fabric --fidelity --seed --cfg --help-cfg --force -o/--out. */
const struct cli_option *run_common_options(void);
/* Applies the option c just read (an id of run_common_options()); returns 0, or -1 after
 * printing a usage error (unknown fabric, bad fidelity, seed or --cfg). */
int run_common_apply(struct run_options *o, struct cli *c, int id);
/* Reads "packet" or "flow"; -1 after printing a usage error. */
int run_parse_fidelity(const struct cli *c, const char *text, fab_fidelity *out);
/* Runs a subcommand's main (the workload or platform generator) with its stdout silenced; returns
 * its exit status. */
int run_quiet_main(int (*main_fn)(int, char **), int argc, char **argv);
/* The platform compare and coll generate when none is given: a rail-optimized fat-tree of radix-64
 * switches, 2 tiers up to 2,048 GPUs, 3 above; gpu (NULL: the default) and the user's platform
 * options (at most RUN_MAX_PLATFORM_OPTIONS, given after the defaults: the last value of an
 * option wins) as sgfabric platform takes them. Writes out; returns platform's exit status. */
#define RUN_MAX_PLATFORM_OPTIONS 512
int run_generate_platform(int gpus, const char *gpu, const char *const *options, int n_options, const char *out);
/* Splits --fabrics A,B,... into fabrics[] (names point into list, a copy of the value): every
 * name a known fabric, none empty, none twice (a fabric compared with itself is a mistake, and
 * the per-fabric outputs would collide), at most max. Returns 0 or the usage error's status. */
int run_parse_fabrics(const struct cli *c, char *list, size_t list_size, const char **fabrics, int max, int *n);
/* Checks one --cfg value (name and value) against the parameter tables; -1 after printing. */
int run_check_cfg(const struct cli *c, const char *cfg);
/* Prints the parameter table (sgfabric params, --help-cfg): the rows of one area ("roce") or
 * all (area NULL), wrapped to the terminal (or $COLUMNS, or 80 columns). Returns the rows. */
int run_print_params(FILE *out, const char *area, int markdown);
/* Registers every model's parameters. */
void run_register_params(void);
/* The model of a --fabric name, or NULL with a message. */
const struct fab_model *run_find_model(const char *name, char *err, size_t errlen);
/* Loads the platform, applies its props then the --cfg values, creates the fabric. */
int run_setup_load(const struct run_options *o, struct run_setup *s, char *err, size_t errlen);
void run_setup_free(struct run_setup *s);
/* Starts SimGrid on the platform with the fabric model installed. */
/* Starts SimGrid on the platform and installs the fabric; 0, or -1 with a message in err when
 * SimGrid cannot read the platform. */
/* Above this many GPUs (one actor each), SimGrid's actor stacks are small and unguarded
 * (run_simgrid_start): the guarded default needs two memory mappings per actor. */
#define RUN_SMALL_STACKS_GPUS 20000
/* Where the analysis scripts are (plot_compare.py, report_html.py, sweep/): PREFIX/share/sgfabric/
 * analysis next to an installed executable (PREFIX/bin/sgfabric), else the source tree this one
 * was built from. Writes the directory into buf; 0, or -1 when neither exists. */
int run_analysis_dir(char *buf, size_t len);

int run_simgrid_start(const struct run_setup *s, const char *program, char *err, size_t errlen);
/* From this many ranks SimGrid's context switches between rank actors are most of a run: `run`
 * and `compare` (command) say on stderr that the events engine exists, unless it runs. */
#define RUN_ENGINE_NOTE_RANKS 4096
void run_note_actor_engine(const char *command, int ranks);
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
