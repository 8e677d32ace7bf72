/* sgfabric deployment: the rank placement of a workload as a SimGrid deployment file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "deployment.h"
#include "wl_trace.h"

int cmd_deployment(int argc, char **argv)
{
  const char *workload = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--workload") && i + 1 < argc)
      workload = argv[++i];
    else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: sgfabric deployment --workload W -o FILE\n\nWrites the linear placement (rank r on gpu r): "
             "with Megatron's rank order, tensor-parallel groups\nstay inside a node and data/pipeline-parallel peers "
             "share a rail.\n");
      return 0;
    } else {
      fprintf(stderr, "sgfabric deployment: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (workload == NULL || out == NULL) {
    fprintf(stderr, "sgfabric deployment: --workload and -o are required\n");
    return 2;
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
