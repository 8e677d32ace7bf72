/* Transformer model descriptions, parameter counts and FLOPs per iteration.
 *
 * FLOPs follow Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
 * Clusters Using Megatron-LM" (SC'21), appendix: a dense GPT iteration of B sequences of s
 * tokens is 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) model FLOPs, and 96*B*s*l*h^2*(1 + s/(6h)
 * + V/(16*l*h)) hardware FLOPs with full activation recomputation. We compute the general
 * form (Chowdhery et al., PaLM, 2022, appendix B: 6N + 12*L*H*Q*T per token), where N counts
 * the matmul parameters a token touches (MoE: the top-k experts and the router, not the
 * embedding lookup) and which reduces exactly to Megatron's expression for GPT models.
 */
#ifndef SGFABRIC_WL_MODEL_H
#define SGFABRIC_WL_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "wl_trace.h"

/* Activation recomputation, the trace's recompute field. 1 is full so that traces written before
 * selective existed keep their meaning. */
enum wl_recompute { WL_RECOMPUTE_NONE = 0, WL_RECOMPUTE_FULL = 1, WL_RECOMPUTE_SELECTIVE = 2 };
/* "none", "full", "selective"; NULL for another value. */
const char *wl_recompute_name(int recompute);
/* The value of a name, or -1. */
int wl_recompute_parse(const char *name);

/* Fills m with a built-in model ("gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b",
 * "mixtral-8x7b"); returns 0, or -1 for an unknown name. */
int wl_model_preset(const char *name, struct wl_model *m);
/* NULL-terminated list of the built-in names. */
const char *const *wl_model_preset_names(void);
/* Reads a "key value" description file (layers, hidden, heads, kv-heads, ffn, vocab, seq,
 * experts, top-k, gated, tied-embeddings, name). Returns 0, or -1 with "FILE:LINE: message" in err. */
int wl_model_load_file(const char *path, struct wl_model *m, char *err, size_t errlen);
/* The same from an open stream (named path in messages); the caller closes it. */
int wl_model_read(FILE *in, const char *path, struct wl_model *m, char *err, size_t errlen);

/* Parameter counts of one transformer layer, unsharded. */
struct wl_layer_params {
  double attn;   /* Q, K, V and output projections */
  double mlp;    /* dense MLP (0 for MoE) */
  double expert; /* one expert's MLP (0 for dense) */
  double router; /* MoE gate */
  double norms;  /* the two norm weight vectors */
};
void wl_model_layer_params(const struct wl_model *m, struct wl_layer_params *p);
/* Total parameters (embedding and untied output layer included). */
double wl_model_params_total(const struct wl_model *m);

/* Forward FLOPs of one token through one layer, at sequence length seq (MoE: top-k). */
double wl_model_layer_fwd_flops_per_token(const struct wl_model *m, int seq);
/* Model FLOPs of one iteration of global_batch sequences of seq tokens, no recomputation. */
double wl_model_flops_per_iteration(const struct wl_model *m, long global_batch, int seq);
/* Hardware FLOPs: model FLOPs plus, with full recomputation (WL_RECOMPUTE_FULL), one more forward
 * of every layer, with selective recomputation one more forward of every layer's attention core
 * (4*s*h FLOPs per token per layer: scores and context). */
double wl_hardware_flops_per_iteration(const struct wl_model *m, long global_batch, int seq, int recompute);
/* flops / (iteration_s * gpus * peak_flops): MFU with model FLOPs, HFU with hardware FLOPs. */
double wl_flops_utilization(double flops, double iteration_s, int gpus, double peak_flops);

#endif
