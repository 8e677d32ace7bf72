/* The sgfabric command: one tool, one subcommand per job. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "platform_cli.h"
#include "wl_gen.h"
#include "sgf_version.h"

struct command {
  const char *name;
  int (*main)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
  { "compare", cmd_compare, "the main job: one training job on InfiniBand and RoCEv2, side by side" },
  { "platform", platform_cli_main, "generate a fat-tree platform XML" },
  { "workload", workload_cli_main, "generate an LLM-training workload trace" },
  { "deployment", cmd_deployment, "write a rank-to-GPU placement (SimGrid deployment XML)" },
  { "run", cmd_run, "replay one training iteration of a workload: MFU, breakdown, fabric counters" },
  { "coll", cmd_coll, "a collective microbenchmark printing nccl-tests' table per fabric" },
  { "flows", cmd_flows, "simulate the transfers of a flow file (src,dst,bytes,start_us)" },
  { "replay", cmd_replay, "re-run a results directory from its manifest and check summary.json is identical" },
  { "sweep", cmd_sweep, "run a study (parameters x values x seeds) with Snakemake: a CSV table and figures" },
  { "params", cmd_params, "list every fabric model parameter" },
  { NULL, NULL, NULL },
};

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric COMMAND [options]   (sgfabric COMMAND --help for its options)\n\ncommands:\n");
  for (const struct command *c = commands; c->name; c++)
    fprintf(out, "  %-10s %s\n", c->name, c->summary);
  fprintf(out, "\nsgfabric %s, SimGrid %s\n", SGF_VERSION, SGF_SIMGRID_VERSION);
}

int main(int argc, char **argv)
{
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("sgfabric %s (SimGrid %s)\n", SGF_VERSION, SGF_SIMGRID_VERSION);
    return 0;
  }
  for (const struct command *c = commands; c->name; c++)
    if (!strcmp(argv[1], c->name))
      return c->main(argc - 1, argv + 1);
  struct cli_suggestion s;
  cli_suggest_begin(&s, argv[1]);
  for (const struct command *c = commands; c->name; c++)
    cli_suggest_consider(&s, c->name);
  if (cli_suggest_result(&s))
    fprintf(stderr, "sgfabric: unknown command '%s' (did you mean %s?)\n", argv[1], cli_suggest_result(&s));
  else
    fprintf(stderr, "sgfabric: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return CLI_USAGE;
}
