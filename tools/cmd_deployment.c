/* sgfabric deployment: the rank placement of a workload as a SimGrid deployment file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "deployment.h"
#include "wl_trace.h"

enum { DEPLOY_OPT_WORKLOAD, DEPLOY_OPT_OUT };

static const struct cli_option deployment_options[] = {
  { "workload", 0, CLI_VALUE, DEPLOY_OPT_WORKLOAD, "SPEC", "trace file, simai:FILE or chakra:PREFIX" },
  { "out", 'o', CLI_VALUE, DEPLOY_OPT_OUT, "FILE", "the deployment XML to write" },
  CLI_TABLE_END,
};

int cmd_deployment(int argc, char **argv)
{
  const char *workload = NULL, *out = NULL;
  struct cli c;
  cli_init(&c, "sgfabric deployment", argc, argv);
  cli_add_table(&c, deployment_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP:
      printf("usage: sgfabric deployment --workload W -o FILE\n\nWrites the linear placement (rank r on gpu r): "
             "with Megatron's rank order, tensor-parallel groups\nstay inside a node and data/pipeline-parallel peers "
             "share a rail.\n");
      cli_print_options(stdout, deployment_options, NULL);
      return 0;
    case CLI_POSITIONAL: return cli_unexpected(&c);
    case DEPLOY_OPT_WORKLOAD: workload = c.value; break;
    case DEPLOY_OPT_OUT: out = c.value; break;
    }
  }
  if (workload == NULL || out == NULL) {
    fprintf(stderr, "sgfabric deployment: --workload and -o are required\n");
    return CLI_USAGE;
  }
  char err[1024];
  struct wl_trace *t = wl_trace_open(workload, err, sizeof err);
  if (t == NULL) {
    fprintf(stderr, "sgfabric deployment: %s\n", err);
    return 1;
  }
  int *map = deployment_linear(t->layout.gpus);
  char comment[256];
  snprintf(comment, sizeof comment, "linear placement of %d ranks (tp=%d pp=%d dp=%d): rank r on gpu r", t->layout.gpus,
           t->layout.tp, t->layout.pp, t->layout.dp);
  int rc = deployment_write(out, map, t->layout.gpus, comment, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "sgfabric deployment: %s\n", err);
  free(map);
  wl_trace_free(t);
  return rc ? 1 : 0;
}
