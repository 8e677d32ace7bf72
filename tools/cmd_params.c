/* sgfabric params: every model parameter with its default, unit, range, description, source. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "run_common.h"

int cmd_params(int argc, char **argv)
{
  int markdown = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--markdown"))
      markdown = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: sgfabric params [--markdown]\n\nLists every parameter settable with --cfg=area/name:value "
             "or a platform <prop>.\n");
      return 0;
    } else {
      fprintf(stderr, "sgfabric params: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  run_register_params();
  param_print_table(stdout, markdown);
  return 0;
}
