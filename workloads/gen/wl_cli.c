/* `sgfabric workload`: generate a trace from a model name or description file. */
#include "wl_cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_types.h"
#include "wl_gen.h"
#include "wl_memory.h"
#include "wl_model.h"

#define PROG "sgfabric workload"

/* Megatron-LM's argument names (megatron/training/arguments.py) are aliases of the short ones,
 * so that a job's launch line can be pasted as it is. */
static const struct cli_option wl_options[] = {
  { "model", 0, CLI_VALUE, WL_OPT_MODEL, "NAME", "built-in model (the models: line below)" },
  { "model-file", 0, CLI_VALUE, WL_OPT_MODEL_FILE, "FILE", "model description file (docs/workload-format.md)" },
  { "gpu", 0, CLI_VALUE, WL_OPT_GPU, "TYPE", "GPU type: A100, H100, H200, B200 (H100)" },
  { "gpus", 0, CLI_VALUE, WL_OPT_GPUS, "N", "ranks of the job (required)" },
  { "tp", 0, CLI_VALUE, WL_OPT_TP, "T", "tensor-parallel size (1)" },
  { "tensor-model-parallel-size", 0, CLI_VALUE, WL_OPT_TP, "T", "Megatron-LM name of --tp" },
  { "pp", 0, CLI_VALUE, WL_OPT_PP, "P", "pipeline-parallel size (1)" },
  { "pipeline-model-parallel-size", 0, CLI_VALUE, WL_OPT_PP, "P", "Megatron-LM name of --pp" },
  { "vpp", 0, CLI_VALUE, WL_OPT_VPP, "V", "virtual pipeline stages per rank, interleaved 1F1B (1)" },
  { "num-layers-per-virtual-pipeline-stage", 0, CLI_VALUE, WL_OPT_LAYERS_PER_VSTAGE, "L",
    "Megatron-LM: layers per virtual stage, vpp = layers / (pp * L)" },
  { "ep", 0, CLI_VALUE, WL_OPT_EP, "E", "expert-parallel size, carved out of dp (1)" },
  { "expert-model-parallel-size", 0, CLI_VALUE, WL_OPT_EP, "E", "Megatron-LM name of --ep" },
  { "cp", 0, CLI_VALUE, WL_OPT_CP, "C", "context-parallel size (1)" },
  { "context-parallel-size", 0, CLI_VALUE, WL_OPT_CP, "C", "Megatron-LM name of --cp" },
  { "seq", 0, CLI_VALUE, WL_OPT_SEQ, "S", "tokens per sequence (the model's)" },
  { "seq-length", 0, CLI_VALUE, WL_OPT_SEQ, "S", "Megatron-LM name of --seq" },
  { "micro-batch", 0, CLI_VALUE, WL_OPT_MICRO_BATCH, "M", "sequences per micro-batch (1)" },
  { "micro-batch-size", 0, CLI_VALUE, WL_OPT_MICRO_BATCH, "M", "Megatron-LM name of --micro-batch" },
  { "global-batch", 0, CLI_VALUE, WL_OPT_GLOBAL_BATCH, "B", "sequences per iteration (M x dp x 4 x pp)" },
  { "global-batch-size", 0, CLI_VALUE, WL_OPT_GLOBAL_BATCH, "B", "Megatron-LM name of --global-batch" },
  { "recompute", 0, CLI_OPTIONAL, WL_OPT_RECOMPUTE, "[none|selective|full]",
    "activation recomputation: none (default), selective (the attention core), full (every layer); "
    "--recompute alone is full" },
  { "recompute-granularity", 0, CLI_VALUE, WL_OPT_RECOMPUTE_GRANULARITY, "full|selective",
    "Megatron-LM name of --recompute" },
  { "recompute-activations", 0, CLI_FLAG, WL_OPT_RECOMPUTE_ACTIVATIONS, NULL, "Megatron-LM: --recompute selective" },
  { "zero1", 0, CLI_FLAG, WL_OPT_ZERO1, NULL, "distributed optimizer (ZeRO-1)" },
  { "use-distributed-optimizer", 0, CLI_FLAG, WL_OPT_ZERO1, NULL, "Megatron-LM name of --zero1" },
  { "sequence-parallel", 0, CLI_FLAG, WL_OPT_SEQUENCE_PARALLEL, NULL, "TP communication as all-gather/reduce-scatter" },
  { "tp-comm-overlap", 0, CLI_FLAG, WL_OPT_TP_COMM_OVERLAP, NULL,
    "with --sequence-parallel: pipeline the TP all-gathers and reduce-scatters with their GEMMs "
    "(TransformerEngine userbuffers)" },
  { "no-tp-comm-overlap", 0, CLI_FLAG, WL_OPT_NO_TP_COMM_OVERLAP, NULL,
    "TP collectives before/after their GEMMs (default)" },
  { "cp-comm-type", 0, CLI_VALUE, WL_OPT_CP_COMM_TYPE, "p2p|all_gather",
    "context-parallel attention: p2p ring attention, KV passed round the CP ring overlapped with attention "
    "(default), or all_gather, KV gathered before and dKV scattered after, blocking" },
  { "grad-bf16", 0, CLI_FLAG, WL_OPT_GRAD_BF16, NULL, "reduce gradients in BF16 (default FP32)" },
  { "overlap-grad-reduce", 0, CLI_FLAG, WL_OPT_OVERLAP_GRAD_REDUCE, NULL,
    "reduce gradient buckets during the backward (default)" },
  { "no-overlap-grad-reduce", 0, CLI_FLAG, WL_OPT_NO_OVERLAP_GRAD_REDUCE, NULL,
    "reduce them after the backward, blocking (Megatron-LM before overlapping)" },
  { "overlap-param-gather", 0, CLI_FLAG, WL_OPT_OVERLAP_PARAM_GATHER, NULL,
    "with --zero1: all-gather parameters in buckets during the forward" },
  { "no-overlap-param-gather", 0, CLI_FLAG, WL_OPT_NO_OVERLAP_PARAM_GATHER, NULL,
    "with --zero1: all-gather them after the optimizer step (default)" },
  { "tied-embeddings", 0, CLI_FLAG, WL_OPT_TIED_EMBEDDINGS, NULL,
    "output layer shares the embedding: all-reduce of its gradient between first and last stage "
    "(default: the model's; gpt3-175b ties)" },
  { "no-tied-embeddings", 0, CLI_FLAG, WL_OPT_NO_TIED_EMBEDDINGS, NULL, "separate output layer" },
  { "untie-embeddings-and-output-weights", 0, CLI_FLAG, WL_OPT_NO_TIED_EMBEDDINGS, NULL,
    "Megatron-LM name of --no-tied-embeddings" },
  { "grad-norm", 0, CLI_FLAG, WL_OPT_GRAD_NORM, NULL,
    "gradient norm for clipping: a kernel and an all-reduce of one value (default)" },
  { "no-grad-norm", 0, CLI_FLAG, WL_OPT_NO_GRAD_NORM, NULL, "no gradient clipping" },
  { "ignore-memory", 0, CLI_FLAG, WL_OPT_IGNORE_MEMORY, NULL,
    "generate a job that does not fit in GPU memory (with a warning) instead of refusing it" },
  { "bucket-params", 0, CLI_VALUE, WL_OPT_BUCKET_PARAMS, "N", "gradient bucket size in elements (40000000)" },
  { "seed", 0, CLI_VALUE, WL_OPT_SEED, "N", "seed of every random choice (1)" },
  { "out", 'o', CLI_VALUE, WL_OPT_OUT, "FILE", "the trace to write" },
  CLI_TABLE_END,
};

const struct cli_option *wl_cli_options(void) { return wl_options; }

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric workload (--model NAME | --model-file F) --gpus N --tp T --pp P [options] -o FILE\n");
  cli_print_options(out, wl_options, NULL);
  fprintf(out, "  -h, --help                 this help\n"
               "  dp = gpus / (tp*pp*cp); ep is carved out of dp; micro-batches m = B / (M*dp);\n"
               "  " WL_CLI_DEFAULT_GLOBAL_BATCH_RULE ".\n"
               "  Options take their value as --name value or --name=value.\n"
               "  models:");
  for (const char *const *n = wl_model_preset_names(); *n != NULL; n++)
    fprintf(out, " %s", *n);
  fprintf(out, "\n  -o FILE is replaced atomically when complete, and only if it is a regular file\n"
               "  (a device, directory or fifo is refused).\n"
               "  docs/workload-format.md describes the output.\n");
}

int workload_cli_main(int argc, char **argv)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  const char *model = NULL, *model_file = NULL, *out = NULL;
  int layers_per_vstage = 0, vpp_given = 0, ignore_memory = 0;
  long bucket = 40000000;
  char err[512];
  struct cli c;
  cli_init(&c, PROG, argc, argv);
  cli_add_table(&c, wl_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    int bad = 0;
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP: usage(stdout); return 0;
    case CLI_POSITIONAL: return cli_unexpected(&c);
    case WL_OPT_MODEL: model = c.value; break;
    case WL_OPT_MODEL_FILE: model_file = c.value; break;
    case WL_OPT_GPU: snprintf(p.gpu, sizeof p.gpu, "%s", c.value); break;
    case WL_OPT_OUT: out = c.value; break;
    case WL_OPT_GPUS: bad = cli_int(&c, 1, INT_MAX, &p.layout.gpus); break;
    case WL_OPT_TP: bad = cli_int(&c, 1, INT_MAX, &p.layout.tp); break;
    case WL_OPT_PP: bad = cli_int(&c, 1, INT_MAX, &p.layout.pp); break;
    case WL_OPT_VPP:
      bad = cli_int(&c, 1, INT_MAX, &p.layout.vpp);
      vpp_given = 1;
      break;
    case WL_OPT_LAYERS_PER_VSTAGE: bad = cli_int(&c, 1, INT_MAX, &layers_per_vstage); break;
    case WL_OPT_EP: bad = cli_int(&c, 1, INT_MAX, &p.layout.ep); break;
    case WL_OPT_CP: bad = cli_int(&c, 1, INT_MAX, &p.layout.cp); break;
    case WL_OPT_SEQ: bad = cli_int(&c, 1, INT_MAX, &p.seq); break;
    case WL_OPT_MICRO_BATCH: bad = cli_int(&c, 1, INT_MAX, &p.micro_batch); break;
    case WL_OPT_GLOBAL_BATCH: bad = cli_long(&c, 1, LONG_MAX, &p.global_batch); break;
    case WL_OPT_SEED: bad = cli_long(&c, 0, LONG_MAX, &p.seed); break;
    case WL_OPT_BUCKET_PARAMS: bad = cli_long(&c, 1, LONG_MAX, &bucket); break;
    case WL_OPT_RECOMPUTE:
    case WL_OPT_RECOMPUTE_GRANULARITY:
      if (c.value == NULL) {
        p.recompute = WL_RECOMPUTE_FULL; /* the flag of earlier versions */
      } else if ((p.recompute = wl_recompute_parse(c.value)) < 0 ||
                 (id == WL_OPT_RECOMPUTE_GRANULARITY && p.recompute == WL_RECOMPUTE_NONE)) {
        fprintf(stderr, PROG ": %s: unknown recomputation '%s' (expected %s)\n", c.spelled, c.value,
                id == WL_OPT_RECOMPUTE ? "none, selective or full" : "full or selective");
        return CLI_USAGE;
      }
      break;
    case WL_OPT_RECOMPUTE_ACTIVATIONS: p.recompute = WL_RECOMPUTE_SELECTIVE; break;
    case WL_OPT_OVERLAP_GRAD_REDUCE:
    case WL_OPT_NO_OVERLAP_GRAD_REDUCE: p.overlap_grad_reduce = id == WL_OPT_OVERLAP_GRAD_REDUCE; break;
    case WL_OPT_OVERLAP_PARAM_GATHER:
    case WL_OPT_NO_OVERLAP_PARAM_GATHER: p.overlap_param_gather = id == WL_OPT_OVERLAP_PARAM_GATHER; break;
    case WL_OPT_TIED_EMBEDDINGS:
    case WL_OPT_NO_TIED_EMBEDDINGS: p.tied_embeddings = id == WL_OPT_TIED_EMBEDDINGS; break;
    case WL_OPT_GRAD_NORM:
    case WL_OPT_NO_GRAD_NORM: p.grad_norm = id == WL_OPT_GRAD_NORM; break;
    case WL_OPT_IGNORE_MEMORY: ignore_memory = 1; break;
    case WL_OPT_ZERO1: p.zero1 = 1; break;
    case WL_OPT_SEQUENCE_PARALLEL: p.seq_parallel = 1; break;
    case WL_OPT_TP_COMM_OVERLAP:
    case WL_OPT_NO_TP_COMM_OVERLAP: p.tp_comm_overlap = id == WL_OPT_TP_COMM_OVERLAP; break;
    case WL_OPT_CP_COMM_TYPE:
      if (strcmp(c.value, "p2p") == 0 || strcmp(c.value, "all_gather") == 0) {
        p.cp_comm_p2p = strcmp(c.value, "p2p") == 0;
      } else {
        fprintf(stderr, PROG ": %s: unknown context-parallel communication '%s' (expected p2p or all_gather)\n",
                c.spelled, c.value);
        return CLI_USAGE;
      }
      break;
    case WL_OPT_GRAD_BF16: p.grad_bytes = 2; break;
    default: break;
    }
    if (bad)
      return CLI_USAGE;
  }
  p.bucket_params = (double)bucket;
  if ((model == NULL) == (model_file == NULL) || out == NULL || p.layout.gpus == 0) {
    fprintf(stderr, PROG ": need one of --model/--model-file, --gpus and -o (see " PROG " --help)\n");
    return CLI_USAGE;
  }
  if (model != NULL && wl_model_preset(model, &p.model) != 0) {
    snprintf(err, sizeof err, PROG ": --model: unknown model '%s'", model);
    cli_did_you_mean(err, sizeof err, model, wl_model_preset_names(), NULL);
    fprintf(stderr, "%s; models:", err);
    for (const char *const *n = wl_model_preset_names(); *n != NULL; n++)
      fprintf(stderr, " %s", *n);
    fprintf(stderr, "\n");
    return CLI_USAGE;
  }
  if (model_file != NULL && wl_model_load_file(model_file, &p.model, err, sizeof err) != 0) {
    fprintf(stderr, PROG ": %s\n", err);
    return CLI_FAILURE;
  }
  const struct gpu_type *gpu = gpu_type_find(p.gpu);
  if (gpu == NULL) {
    const char *close = gpu_type_suggest(p.gpu);
    fprintf(stderr, PROG ": --gpu: unknown GPU type '%s'%s%s%s (known:", p.gpu, close ? " (did you mean " : "",
            close ? close : "", close ? "?)" : "");
    for (const struct gpu_type *g = gpu_type_table(); g->name; g++)
      fprintf(stderr, " %s", g->name);
    fprintf(stderr, ")\n");
    return CLI_USAGE;
  }
  snprintf(p.gpu, sizeof p.gpu, "%s", gpu->name);
  if (layers_per_vstage > 0) {
    /* Megatron-LM counts layers per virtual stage: vpp = layers / (pp * L), exactly. */
    int layers = p.model.layers, pp = p.layout.pp;
    if (vpp_given) {
      fprintf(stderr, PROG ": give --vpp or --num-layers-per-virtual-pipeline-stage, not both\n");
      return CLI_USAGE;
    }
    if (layers % ((long)pp * layers_per_vstage) != 0) {
      fprintf(stderr,
              PROG ": --num-layers-per-virtual-pipeline-stage %d: the model's %d layers are not a multiple of "
                   "pp x %d = %ld\n",
              layers_per_vstage, layers, layers_per_vstage, (long)pp * layers_per_vstage);
      return CLI_USAGE;
    }
    p.layout.vpp = (int)(layers / ((long)pp * layers_per_vstage));
  }
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  if (t == NULL) {
    fprintf(stderr, PROG ": impossible layout: %s\n", err);
    return CLI_USAGE;
  }
  /* Per-GPU memory of the stage that needs the most (wl_memory.h): a job that cannot fit is
   * refused before anything is written, unless --ignore-memory. */
  struct wl_memory mem;
  char mem_text[400];
  wl_memory_worst(t, &mem);
  wl_memory_describe(&mem, t->gpu, mem_text, sizeof mem_text);
  if (mem.total > mem.capacity) {
    if (!ignore_memory) {
      fprintf(stderr,
              PROG ": the job does not fit in GPU memory: %s; use --recompute selective or full, more tp, pp "
                   "or cp, --zero1 or a smaller micro-batch, or --ignore-memory to generate it anyway\n",
              mem_text);
      wl_trace_free(t);
      return CLI_USAGE;
    }
    fprintf(stderr, PROG ": warning: the job does not fit in GPU memory (--ignore-memory): %s\n", mem_text);
  }
  if (wl_trace_save(t, out, err, sizeof err) != 0) {
    fprintf(stderr, PROG ": %s\n", err);
    wl_trace_free(t);
    return CLI_FAILURE;
  }
  const struct wl_layout *l = &t->layout;
  printf("workload %s: model=%s gpus=%d tp=%d pp=%d vpp=%d dp=%d ep=%d cp=%d gpu=%s "
         "microbatches=%d model_flops=%.6g hardware_flops=%.6g layers_per_stage=",
         out, t->model.name, l->gpus, l->tp, l->pp, l->vpp, l->dp, l->ep, l->cp, t->gpu, t->microbatches,
         t->model_flops, t->hardware_flops);
  for (int s = 0; s < l->pp; s++)
    printf("%s%d", s ? "," : "", t->stage_layers[s]);
  printf("\nmemory per GPU, %s%s\n", mem_text, mem.total > mem.capacity ? ": does not fit" : "");
  wl_trace_free(t);
  return 0;
}
