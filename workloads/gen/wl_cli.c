/* `sgfabric workload`: generate a trace from a model name or description file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_types.h"
#include "wl_gen.h"
#include "wl_model.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: sgfabric workload (--model NAME | --model-file F) --gpus N --tp T --pp P\n"
          "         [--vpp V] [--ep E] [--cp C] [--gpu TYPE] [--seq S] [--micro-batch M]\n"
          "         [--global-batch B] [--recompute] [--zero1] [--sequence-parallel]\n"
          "         [--grad-bf16] [--bucket-params N] [--seed N] -o FILE\n"
          "  dp = gpus / (tp*pp*cp); ep is carved out of dp; micro-batches m = B / (M*dp).\n"
          "  models:");
  for (const char *const *n = wl_model_preset_names(); *n != NULL; n++)
    fprintf(out, " %s", *n);
  fprintf(out, "\n  -o FILE is replaced atomically when complete, and only if it is a regular file\n"
               "  (a device, directory or fifo is refused).\n"
               "  docs/workload-format.md describes the output.\n");
}

static int parse_long_arg(const char *opt, const char *s, long min, long *v)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || x < min) {
    fprintf(stderr, "sgfabric workload: %s: '%s' is not an integer >= %ld\n", opt, s, min);
    return -1;
  }
  *v = x;
  return 0;
}

int workload_cli_main(int argc, char **argv)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  const char *model = NULL, *model_file = NULL, *out = NULL;
  char err[512];
  struct { const char *name; long min; long v; } nums[] = {
      {"--gpus", 1, 0}, {"--tp", 1, 1}, {"--pp", 1, 1}, {"--vpp", 1, 1}, {"--ep", 1, 1},
      {"--cp", 1, 1}, {"--seq", 1, 0}, {"--micro-batch", 1, 1}, {"--global-batch", 1, 0},
      {"--seed", 0, 1}, {"--bucket-params", 1, 40000000}};
  const int nnums = sizeof nums / sizeof nums[0];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--recompute") == 0) { p.recompute = 1; continue; }
    if (strcmp(a, "--zero1") == 0) { p.zero1 = 1; continue; }
    if (strcmp(a, "--sequence-parallel") == 0) { p.seq_parallel = 1; continue; }
    if (strcmp(a, "--grad-bf16") == 0) { p.grad_bytes = 2; continue; }
    if (i + 1 >= argc) {
      fprintf(stderr, "sgfabric workload: %s needs a value (or is unknown)\n", a);
      usage(stderr);
      return 2;
    }
    const char *v = argv[++i];
    if (strcmp(a, "--model") == 0) { model = v; continue; }
    if (strcmp(a, "--model-file") == 0) { model_file = v; continue; }
    if (strcmp(a, "--gpu") == 0) { snprintf(p.gpu, sizeof p.gpu, "%s", v); continue; }
    if (strcmp(a, "-o") == 0) { out = v; continue; }
    int k = 0;
    while (k < nnums && strcmp(nums[k].name, a) != 0)
      k++;
    if (k == nnums) {
      fprintf(stderr, "sgfabric workload: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
    if (parse_long_arg(a, v, nums[k].min, &nums[k].v) != 0)
      return 2;
  }
  if ((model == NULL) == (model_file == NULL) || out == NULL || nums[0].v == 0) {
    fprintf(stderr, "sgfabric workload: need one of --model/--model-file, --gpus and -o\n");
    usage(stderr);
    return 2;
  }
  if (model != NULL && wl_model_preset(model, &p.model) != 0) {
    fprintf(stderr, "sgfabric workload: unknown model '%s'\n", model);
    usage(stderr);
    return 2;
  }
  if (model_file != NULL && wl_model_load_file(model_file, &p.model, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric workload: %s\n", err);
    return 1;
  }
  const struct gpu_type *gpu = gpu_type_find(p.gpu);
  if (gpu == NULL) {
    fprintf(stderr, "sgfabric workload: unknown GPU type '%s' (see platforms/gpu_types.c)\n",
            p.gpu);
    return 2;
  }
  snprintf(p.gpu, sizeof p.gpu, "%s", gpu->name);
  for (int k = 0; k < nnums; k++)
    if (nums[k].v > 2147483647L && k != 8 && k != 9) {
      fprintf(stderr, "sgfabric workload: %s too large\n", nums[k].name);
      return 2;
    }
  p.layout.gpus = (int)nums[0].v;
  p.layout.tp = (int)nums[1].v;
  p.layout.pp = (int)nums[2].v;
  p.layout.vpp = (int)nums[3].v;
  p.layout.ep = (int)nums[4].v;
  p.layout.cp = (int)nums[5].v;
  p.seq = (int)nums[6].v;
  p.micro_batch = (int)nums[7].v;
  p.global_batch = nums[8].v;
  p.seed = nums[9].v;
  p.bucket_params = (double)nums[10].v;
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  if (t == NULL) {
    fprintf(stderr, "sgfabric workload: impossible layout: %s\n", err);
    return 1;
  }
  if (wl_trace_save(t, out, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric workload: %s\n", err);
    wl_trace_free(t);
    return 1;
  }
  const struct wl_layout *l = &t->layout;
  printf("workload %s: model=%s gpus=%d tp=%d pp=%d vpp=%d dp=%d ep=%d cp=%d gpu=%s "
         "microbatches=%d model_flops=%.6g hardware_flops=%.6g layers_per_stage=",
         out, t->model.name, l->gpus, l->tp, l->pp, l->vpp, l->dp, l->ep, l->cp, t->gpu,
         t->microbatches, t->model_flops, t->hardware_flops);
  for (int s = 0; s < l->pp; s++)
    printf("%s%d", s ? "," : "", t->stage_layers[s]);
  printf("\n");
  wl_trace_free(t);
  return 0;
}
