/* "sgfabric platform": parses the fat-tree options, then writes the platform file of
 * docs/platforms.md atomically (a temporary file in the same directory, then rename). */
#include "platform_cli.h"

#include "cli.h"
#include "atomic_file.h"
#include "fattree.h"
#include "gpu_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_PREFIX "sgfabric platform: "
#define CLI_USAGE_ERROR CLI_USAGE
#define CLI_IO_ERROR CLI_FAILURE

/* The options (cli.h grammar); each value option's name is also its fattree_spec_set key. */
enum {
  PLAT_OPT_VALUE, /* any fattree_spec_set key */
  PLAT_OPT_RAIL_OPTIMIZED,
  PLAT_OPT_NO_RAIL_OPTIMIZED,
  PLAT_OPT_OUT,
};

static const struct cli_option cli_options[] = {
  { "gpus", 0, CLI_VALUE, PLAT_OPT_VALUE, "N", "GPUs, a multiple of --gpus-per-node (required)" },
  { "gpus-per-node", 0, CLI_VALUE, PLAT_OPT_VALUE, "G", "GPUs and NICs per node, one NVSwitch each (8)" },
  { "tiers", 0, CLI_VALUE, PLAT_OPT_VALUE, "2|3", "switch tiers: leaf-spine or leaf-aggregation-core (2)" },
  { "radix", 0, CLI_VALUE, PLAT_OPT_VALUE, "K", "ports per switch (64)" },
  { "rail-optimized", 0, CLI_FLAG, PLAT_OPT_RAIL_OPTIMIZED, NULL, "NIC i of every node goes to a rail-i leaf" },
  { "no-rail-optimized", 0, CLI_FLAG, PLAT_OPT_NO_RAIL_OPTIMIZED, NULL, "GPU i goes to leaf i/d (the default)" },
  { "oversubscription", 0, CLI_VALUE, PLAT_OPT_VALUE, "R[,R2]", "down:up port ratio of leaves[, aggregation] (1,1)" },
  { "link-rate", 0, CLI_VALUE, PLAT_OPT_VALUE, "RATE",
    "NIC and switch links, per direction (the GPU's NIC rate: 400Gbps for H100)" },
  { "link-latency", 0, CLI_VALUE, PLAT_OPT_VALUE, "T", "NIC and switch links (100ns)" },
  { "nvlink-rate", 0, CLI_VALUE, PLAT_OPT_VALUE, "RATE", "GPU-NVSwitch links (the GPU's NVLink rate)" },
  { "nvlink-latency", 0, CLI_VALUE, PLAT_OPT_VALUE, "T", "GPU-NVSwitch links (25ns)" },
  { "switch-latency", 0, CLI_VALUE, PLAT_OPT_VALUE, "T", "forwarding latency of a switch (130ns)" },
  { "gpu", 0, CLI_VALUE, PLAT_OPT_VALUE, "TYPE", "GPU type: A100, H100, H200, B200 (H100)" },
  { "out", 'o', CLI_VALUE, PLAT_OPT_OUT, "FILE", "output file, replaced atomically" },
  CLI_TABLE_END,
};

const struct cli_option *platform_cli_options(void) { return cli_options; }

static void cli_usage(FILE *out)
{
  fputs("usage: sgfabric platform --gpus N [options] -o FILE\n"
        "Writes a fat-tree platform for SimGrid and sgfabric (docs/platforms.md).\n",
        out);
  cli_print_options(out, cli_options, NULL);
  fputs("  -h, --help                 this help\n"
        "Options take their value as --name value or --name=value.\n"
        "The output is replaced atomically when complete, and only a regular file is written (a device,\n"
        "directory or fifo is refused).\n"
        "Exit status: 0 ok, 2 usage error or impossible topology, 1 write error or refused FILE\n"
        "(nothing written, an existing FILE kept).\n",
        out);
}

/* ---- the generating command, recorded in the file -------------------------------------- */

static int shell_safe(const char *arg)
{
  if (*arg == '\0')
    return 0;
  for (const char *c = arg; *c; c++)
    if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,:=+@%", *c) == NULL)
      return 0;
  return 1;
}

/* "sgfabric platform" followed by the arguments, quoted for a POSIX shell. With recorded_out,
 * a final "-o FILE" is recorded as "-o recorded_out": the name the file has where it ends up. */
static char *cli_command_line(int argc, char **argv, const char *recorded_out)
{
  char **args = argv;
  if (recorded_out && argc >= 3 && strcmp(argv[argc - 2], "-o") == 0) {
    args = malloc((size_t)argc * sizeof *args);
    if (args == NULL)
      return NULL;
    memcpy(args, argv, (size_t)argc * sizeof *args);
    args[argc - 1] = (char *)recorded_out;
  }
  size_t len = strlen("sgfabric platform") + 1;
  for (int i = 1; i < argc; i++)
    len += 4 * strlen(args[i]) + 3;
  char *cmd = malloc(len);
  if (cmd == NULL) {
    if (args != argv)
      free(args);
    return NULL;
  }
  char *p = cmd + sprintf(cmd, "sgfabric platform");
  for (int i = 1; i < argc; i++) {
    *p++ = ' ';
    if (shell_safe(args[i])) {
      p += sprintf(p, "%s", args[i]);
      continue;
    }
    *p++ = '\'';
    for (const char *c = args[i]; *c; c++)
      p += *c == '\'' ? sprintf(p, "'\\''") : sprintf(p, "%c", *c);
    *p++ = '\'';
  }
  *p = '\0';
  if (args != argv)
    free(args);
  return cmd;
}

/* ---- the XML ---------------------------------------------------------------------------- */

struct xml_writer {
  FILE *out;
  char speed[32]; /* every host's speed, e.g. "989.4Tf" */
};

static void xml_attr(FILE *out, const char *text)
{
  for (const char *c = text; *c; c++) {
    switch (*c) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    default: fputc(*c, out); break;
    }
  }
}

static void xml_prop(void *ctx, const char *key, const char *value)
{
  struct xml_writer *w = ctx;
  fprintf(w->out, "    <prop id=\"sgfabric/%s\" value=\"", key);
  xml_attr(w->out, value);
  fputs("\"/>\n", w->out);
}

static void xml_gpu(void *ctx, int gpu, int node, const char *name)
{
  struct xml_writer *w = ctx;
  (void)gpu;
  (void)node;
  fprintf(w->out, "    <host id=\"%s\" speed=\"%s\"/>\n", name, w->speed);
}

static void xml_router(void *ctx, const char *name, int level)
{
  struct xml_writer *w = ctx;
  (void)level;
  fprintf(w->out, "    <router id=\"%s\"/>\n", name);
}

static void xml_link(void *ctx, const char *name, const char *lower, const char *upper, double rate_Bps,
                     double latency_s, int is_nvlink)
{
  struct xml_writer *w = ctx;
  char bw[32], lat[32];
  (void)lower;
  (void)upper;
  /* NVLink is quoted in bytes per second, network links in bits (data sheets do the same). */
  fattree_format_rate(rate_Bps, is_nvlink, bw, sizeof(bw));
  fattree_format_time(latency_s, lat, sizeof(lat));
  fprintf(w->out, "    <link id=\"%s\" bandwidth=\"%s\" latency=\"%s\" sharing_policy=\"SPLITDUPLEX\"/>\n", name, bw,
          lat);
}

/* The leading comment. XML forbids a double hyphen inside a comment, so the exact command
 * (whose options start with one) lives in the sgfabric/command prop; the text below never
 * prints one: link ids are described, not quoted. */
static void xml_comment(FILE *out, const struct fattree_spec *s, const struct fattree_counts *c)
{
  char nv_rate[32], nv_lat[32], rate[32], lat[32], sw_lat[32];
  int g = s->gpus_per_node;
  fattree_format_rate(fattree_nvlink_rate(s), 1, nv_rate, sizeof(nv_rate));
  fattree_format_time(s->nvlink_latency_s, nv_lat, sizeof(nv_lat));
  fattree_format_rate(s->link_rate_Bps, 0, rate, sizeof(rate));
  fattree_format_time(s->link_latency_s, lat, sizeof(lat));
  fattree_format_time(s->switch_latency_s, sw_lat, sizeof(sw_lat));

  fputs("<!-- sgfabric platform file, format 1 (docs/platforms.md).\n"
        "     Generated by the command in the sgfabric/command prop below (a comment cannot\n"
        "     quote it: XML forbids double hyphens in comments).\n",
        out);
  fprintf(out, "     Topology: %d-tier fat-tree of radix-%d switches, %s.\n", s->tiers, s->radix,
          s->rail_optimized ? "rail-optimized" : "not rail-optimized");
  fprintf(out,
          "       %d %s GPUs (hosts gpu0 to gpu%d) in %d nodes of %d: node n holds GPUs\n"
          "       %dn to %dn+%d and NVSwitch nvs<n>, one NVLink per GPU (%s, %s).\n",
          s->gpus, s->gpu, s->gpus - 1, c->nodes, g, g, g, g - 1, nv_rate, nv_lat);
  fprintf(out, "       %d leaves with %d down ports (GPU NICs) and %d up ports (%g:1).\n", c->leaves, c->leaf_down,
          c->leaf_up, s->oversub[0]);
  if (s->rail_optimized)
    fprintf(out,
            "       Rails: GPU %dn+r (rail r of node n) uses leaf (n/%d)*%d+r, so each\n"
            "       group of %d nodes has %d leaves, one per rail.\n",
            g, c->leaf_down, g, c->leaf_down, g);
  else
    fprintf(out, "       GPU i uses leaf i/%d.\n", c->leaf_down);
  if (s->tiers == 2) {
    fprintf(out, "       %d spines; every leaf has one link to every spine.\n", c->spines);
  } else {
    fprintf(out,
            "       %d pods of %d leaves (pod = leaf/%d), %d aggregation switches per pod\n"
            "       (agg<%dp+a>, %d in all, %d down and %d up ports, %g:1); every leaf\n"
            "       links to every aggregation switch of its pod.\n",
            c->pods, c->agg_down, c->agg_down, c->leaf_up, c->leaf_up, c->aggs, c->agg_down, c->agg_up, s->oversub[1]);
    fprintf(out,
            "       %d cores in %d groups of %d (core<%da+c>); aggregation switch a of\n"
            "       every pod links to every core of group a.\n",
            c->cores, c->leaf_up, c->agg_up, c->agg_up);
  }
  fprintf(out, "       Fabric links %s, %s; each switch adds %s (sgfabric/switch-latency).\n", rate, lat, sw_lat);
  fprintf(out,
          "       %ld links: %ld NVLinks and %ld fabric links. A link id names its two\n"
          "       ends, lower tier first, joined by two hyphens.\n",
          c->nvlinks + c->fabric_links, c->nvlinks, c->fabric_links);
  fprintf(out, "     SimGrid loads the hosts, routers and links of a routing=None zone; the\n"
               "     sgfabric fabric reads the props and computes the routes. sgfabric/pgft is\n"
               "     the same tree as SimGrid FAT_TREE topo_parameters (levels; down ports\n"
               "     per level; up ports per level; parallel links), rail layout aside. -->\n");
}

static int cli_write_xml(FILE *out, const struct fattree_spec *spec, const char *command)
{
  struct fattree_counts counts;
  struct xml_writer w = { .out = out };
  const struct fattree_visitor v = { .gpu = xml_gpu, .router = xml_router, .link = xml_link };
  if (fattree_counts(spec, &counts) != 0)
    return -1;
  /* A host computes at the GPU's dense BF16 peak, the MFU denominator (gpu_types.c). */
  snprintf(w.speed, sizeof(w.speed), "%.15gTf", gpu_type_find(spec->gpu)->bf16_dense_flops / 1e12);

  fputs("<?xml version='1.0'?>\n"
        "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n",
        out);
  xml_comment(out, spec, &counts);
  fputs("<platform version=\"4.1\">\n  <zone id=\"sgfabric\" routing=\"None\">\n", out);
  fattree_props(spec, xml_prop, &w);
  xml_prop(&w, "command", command);
  fattree_enumerate(spec, &v, &w);
  fputs("  </zone>\n</platform>\n", out);
  return 0;
}

/* Writes the platform atomically (a temporary file next to path, then rename): readers never
 * see half a file, a failure leaves nothing behind, and only a regular file is ever replaced
 * (as root, "-o /dev/null" would otherwise replace the device). */
static int cli_write_file(const char *path, const struct fattree_spec *spec, const char *command)
{
  struct atomic_file af;
  char err[4400];
  FILE *out = atomic_file_open(&af, path, err, sizeof err);
  if (out == NULL) {
    fprintf(stderr, CLI_PREFIX "-o %s\n", err);
    return -1;
  }
  static char buffer[1 << 20];
  setvbuf(out, buffer, _IOFBF, sizeof(buffer));
  if (cli_write_xml(out, spec, command) != 0) {
    fprintf(stderr, CLI_PREFIX "-o %s: cannot write the platform\n", path);
    atomic_file_abort(&af);
    return -1;
  }
  if (atomic_file_commit(&af, err, sizeof err) != 0) {
    fprintf(stderr, CLI_PREFIX "-o %s\n", err);
    return -1;
  }
  return 0;
}

/* ---- argument parsing ------------------------------------------------------------------- */

struct cli_args {
  struct fattree_spec spec;
  const char *out;
  int help;
  int link_rate_given;
};

/* Reads the options into the spec; returns 0, or -1 after printing the error. */
static int cli_parse(int argc, char **argv, struct cli_args *a)
{
  char err[256];
  struct cli c;
  cli_init(&c, "sgfabric platform", argc, argv);
  cli_add_table(&c, cli_options);
  for (;;) {
    int id = cli_next(&c);
    switch (id) {
    case CLI_DONE: return 0;
    case CLI_ERROR: return -1;
    case CLI_HELP: a->help = 1; return 0;
    case CLI_POSITIONAL: cli_unexpected(&c); return -1;
    case PLAT_OPT_OUT: a->out = c.value; break;
    case PLAT_OPT_RAIL_OPTIMIZED:
    case PLAT_OPT_NO_RAIL_OPTIMIZED: a->spec.rail_optimized = id == PLAT_OPT_RAIL_OPTIMIZED; break;
    default:
      if (fattree_spec_set(&a->spec, c.opt->name, c.value, err, sizeof(err)) != 0) {
        fprintf(stderr, CLI_PREFIX "--%s\n", err);
        return -1;
      }
      if (strcmp(c.opt->name, "link-rate") == 0)
        a->link_rate_given = 1;
      break;
    }
  }
}

int platform_cli_main(int argc, char **argv) { return platform_cli_generate(argc, argv, NULL); }

int platform_cli_generate(int argc, char **argv, const char *recorded_out)
{
  struct cli_args a = { .out = NULL, .help = 0 };
  char err[512];
  fattree_spec_init(&a.spec);
  if (cli_parse(argc, argv, &a) != 0)
    return CLI_USAGE_ERROR;
  if (a.help) {
    cli_usage(stdout);
    return 0;
  }
  /* A DGX-like node: without --link-rate, each GPU's NIC runs at the GPU table's rate (DGX A100:
   * 200 Gb/s HDR, DGX H100: 400 Gb/s NDR; gpu_types.c cites the data sheets). */
  const struct gpu_type *gpu = gpu_type_find(a.spec.gpu);
  if (!a.link_rate_given && gpu != NULL)
    a.spec.link_rate_Bps = gpu->nic_Bps;
  if (a.spec.gpus == 0) {
    fprintf(stderr, CLI_PREFIX "--gpus is required (see --help)\n");
    return CLI_USAGE_ERROR;
  }
  if (fattree_spec_check(&a.spec, err, sizeof(err)) != 0) {
    fprintf(stderr, CLI_PREFIX "--%s\n", err);
    return CLI_USAGE_ERROR;
  }
  if (a.out == NULL) {
    fprintf(stderr, CLI_PREFIX "-o FILE is required (see --help)\n");
    return CLI_USAGE_ERROR;
  }
  char *command = cli_command_line(argc, argv, recorded_out);
  if (command == NULL) {
    fprintf(stderr, CLI_PREFIX "out of memory\n");
    return CLI_IO_ERROR;
  }
  int rc = cli_write_file(a.out, &a.spec, command);
  free(command);
  if (rc != 0)
    return CLI_IO_ERROR;
  struct fattree_counts c;
  fattree_counts(&a.spec, &c);
  if (a.spec.tiers == 2)
    printf(CLI_PREFIX "wrote %s: %d GPUs, %d leaves, %d spines, %ld links\n", a.out, a.spec.gpus, c.leaves, c.spines,
           c.fabric_links + c.nvlinks);
  else
    printf(CLI_PREFIX "wrote %s: %d GPUs, %d leaves, %d aggregation switches, %d cores, "
                      "%ld links\n",
           a.out, a.spec.gpus, c.leaves, c.aggs, c.cores, c.fabric_links + c.nvlinks);
  return 0;
}
