/* The options of `sgfabric workload` (cli.h grammar), shared with `sgfabric compare` so that the
 * two accept the same workload options and the same Megatron-LM aliases. */
#ifndef SGFABRIC_WL_CLI_H
#define SGFABRIC_WL_CLI_H

#include "cli.h"

/* The ids of the table's options; a Megatron-LM alias has the id of the option it names. */
enum wl_cli_option {
  WL_OPT_MODEL,
  WL_OPT_MODEL_FILE,
  WL_OPT_GPU,
  WL_OPT_GPUS,
  WL_OPT_TP,
  WL_OPT_PP,
  WL_OPT_VPP,
  WL_OPT_LAYERS_PER_VSTAGE, /* Megatron's --num-layers-per-virtual-pipeline-stage */
  WL_OPT_EP,
  WL_OPT_CP,
  WL_OPT_SEQ,
  WL_OPT_MICRO_BATCH,
  WL_OPT_GLOBAL_BATCH,
  WL_OPT_RECOMPUTE,             /* --recompute [none|selective|full]; alone: full */
  WL_OPT_RECOMPUTE_GRANULARITY, /* Megatron's --recompute-granularity full|selective */
  WL_OPT_RECOMPUTE_ACTIVATIONS, /* Megatron's --recompute-activations: selective */
  WL_OPT_OVERLAP_GRAD_REDUCE,
  WL_OPT_NO_OVERLAP_GRAD_REDUCE,
  WL_OPT_TP_COMM_OVERLAP,
  WL_OPT_NO_TP_COMM_OVERLAP,
  WL_OPT_CP_COMM_TYPE,
  WL_OPT_OVERLAP_PARAM_GATHER,
  WL_OPT_NO_OVERLAP_PARAM_GATHER,
  WL_OPT_TIED_EMBEDDINGS,
  WL_OPT_NO_TIED_EMBEDDINGS,
  WL_OPT_GRAD_NORM,
  WL_OPT_NO_GRAD_NORM,
  WL_OPT_IGNORE_MEMORY,
  WL_OPT_ZERO1,
  WL_OPT_SEQUENCE_PARALLEL,
  WL_OPT_GRAD_BF16,
  WL_OPT_BUCKET_PARAMS,
  WL_OPT_SEED,
  WL_OPT_OUT,
};

/* The table, terminated by CLI_TABLE_END. */
const struct cli_option *wl_cli_options(void);

/* The rule for the global batch when --global-batch is not given, for --help texts. */
#define WL_CLI_DEFAULT_GLOBAL_BATCH_RULE                                                                               \
  "default global batch: micro-batch x dp x 4 x pp (4*pp micro-batches per data-parallel replica)"

#endif
