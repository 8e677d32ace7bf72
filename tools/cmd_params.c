/* sgfabric params: every model parameter with its default, unit, range, description, source. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "run_common.h"

enum { PARAMS_OPT_MARKDOWN };

static const struct cli_option params_options[] = {
  { "markdown", 0, CLI_FLAG, PARAMS_OPT_MARKDOWN, NULL, "a markdown table (docs/parameters.md)" },
  CLI_TABLE_END,
};

int cmd_params(int argc, char **argv)
{
  int markdown = 0;
  const char *area = NULL;
  struct cli c;
  cli_init(&c, "sgfabric params", argc, argv);
  cli_add_table(&c, params_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP:
      printf("usage: sgfabric params [AREA] [--markdown]\n\n"
             "Lists the parameters settable with --cfg=area/name:value (or --cfg area/name:value) or a\n"
             "platform <prop id=\"area/name\" value=\"...\"/>: all of them, or those of one AREA (the part\n"
             "before '/': fabric, coll, ib, roce).\n");
      cli_print_options(stdout, params_options, NULL);
      return 0;
    case CLI_POSITIONAL:
      if (area)
        return cli_unexpected(&c);
      area = c.value;
      break;
    case PARAMS_OPT_MARKDOWN: markdown = 1; break;
    }
  }
  run_register_params();
  const char *areas[32];
  size_t n = fab_param_list_areas(areas, 31);
  areas[n] = NULL;
  if (area) {
    size_t k = 0;
    while (k < n && strcmp(areas[k], area) != 0)
      k++;
    if (k == n) {
      char message[512];
      snprintf(message, sizeof message, "no parameter area '%s'", area);
      cli_did_you_mean(message, sizeof message, area, areas, NULL);
      fprintf(stderr, "sgfabric params: %s; areas:", message);
      for (size_t j = 0; j < n; j++)
        fprintf(stderr, " %s", areas[j]);
      fprintf(stderr, "\n");
      return CLI_USAGE;
    }
  }
  run_print_params(stdout, area, markdown);
  return 0;
}
