/* Per-GPU memory of a training job: weights, gradients, optimizer state and activations of each
 * pipeline stage, against the GPU's HBM capacity (platforms/gpu_types.h).
 *
 * Model states (bytes per parameter held by the rank) follow Megatron-LM's mixed-precision
 * training with Adam (docs/distrib_optimizer.md of Megatron-LM: "bf16 params, fp32 grads":
 * 18 bytes per parameter, 6 + 12/d with the distributed optimizer over d data-parallel ranks):
 *   weights   2 (BF16)
 *   gradients grad_bytes (4: the FP32 main_grad buffer Megatron keeps for BF16 training; 2 with
 *             --grad-bf16)
 *   optimizer 12 (FP32 master weights, Adam's first and second moments), divided by dp with the
 *             distributed optimizer (ZeRO-1), by dp/ep for expert parameters.
 *
 * Activations follow Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
 * Models" (MLSys 2023), section 4 and table 2: bytes per transformer layer for s tokens, micro-batch
 * b, hidden h, a heads, tensor parallel t, 16-bit activations:
 *   no parallelism                   sbh (34 + 5as/h)
 *   tensor parallel                  sbh (10 + 24/t + 5as/(ht))
 *   tensor + sequence parallel       sbh/t (34 + 5as/h)
 *   selective recomputation          the same without the 5as/h term (attention core recomputed)
 *   full recomputation               2sbh (the layer input; /t when it is sequence-parallel)
 * wl_mem_layer_activations() generalises the 24 (attention 8, MLP 16) to grouped-query attention,
 * gated MLPs, other FFN widths and MoE (top-k experts per token), and reduces to the paper's
 * formulas for a GPT model (ffn = 4h, heads = kv heads, GeLU): a unit test checks it. With context
 * parallelism s is the rank's s/cp tokens, and each attends the whole sequence (the 5as/h term
 * keeps the full s). A stage holds the activations of the micro-batches its pipeline schedule has in
 * flight: the peak of forwards not yet backwarded, walked over the schedule Megatron-LM runs
 * (wl_schedule_1f1b, wl_schedule_interleaved). For 1F1B stage 0 holds p micro-batches, i.e. the
 * activations of all L layers (Korthikanti section 4.2.3); the interleaved schedule holds
 * L (1 + (p-1)/(p v)) (the same section; Narayanan et al. SC'21 section 2.2.2).
 *
 * Besides the layers: stage 0 keeps the embedding's dropout mask (sbh bytes, /t with SP) per
 * micro-batch in flight; the last stage keeps the final norm's input (2sbh, /t with SP) and the
 * logits in FP32 for the cross entropy (4sbV/t) of one micro-batch (Korthikanti section 4.3's
 * accounting, our reading). With full recomputation a stage also needs one layer's activations,
 * recomputed during its backward.
 *
 * Not counted: the CUDA context and NCCL buffers (about 1-3 GB), the allocator's fragmentation,
 * temporary buffers of the kernels, the all-gathered parameter buffers of ZeRO-3 (not modelled).
 */
#ifndef SGFABRIC_WL_MEMORY_H
#define SGFABRIC_WL_MEMORY_H

#include "wl_model.h"
#include "wl_trace.h"

/* Activation bytes one transformer layer keeps for one micro-batch of b sequences of seq tokens
 * (each rank holds seq/cp of them), on a rank of tp-way tensor parallelism, with (sp = 1) or
 * without sequence parallelism, under the recompute mode (enum wl_recompute). */
double wl_mem_layer_activations(const struct wl_model *m, int seq, int micro_batch, int tp, int cp, int sp,
                                int recompute);

struct wl_memory {
  int stage;      /* the pipeline stage these figures are for */
  double weights; /* bytes per GPU */
  double gradients;
  double optimizer;
  double activations; /* transformer layers' activations of the micro-batches in flight */
  double other;       /* embedding and output-layer buffers (first and last stage) */
  double total;
  double inflight_layers;    /* layer-micro-batches whose activations are held at the peak */
  int inflight_microbatches; /* micro-batches in flight at the peak (all chunks) */
  double capacity;           /* HBM bytes of the trace's GPU, 0 if unknown */
};

/* The parameters a rank of stage holds: dense (tensor-parallel share) and expert (its experts'
 * tensor-parallel share), the embedding on the first stage and the output layer on the last. */
void wl_stage_params(const struct wl_trace *t, int stage, double *dense, double *expert);

/* Whether the trace carries what the memory model needs: model dimensions, batch and stage
 * layers (SimAI and Chakra imports do not). */
int wl_memory_known(const struct wl_trace *t);
/* The memory of one stage; 0, or -1 when the trace lacks model dimensions or stage is out of range. */
int wl_memory_stage(const struct wl_trace *t, int stage, struct wl_memory *out);
/* The stage that needs the most memory (the first of equals); 0 or -1 as above. */
int wl_memory_worst(const struct wl_trace *t, struct wl_memory *out);
/* "weights 4.38 GB, gradients ..., total T GB of C GB (H100)": the breakdown in one line. */
void wl_memory_describe(const struct wl_memory *m, const char *gpu, char *buf, size_t len);

#endif
