/* Per-GPU memory: model states and activations per pipeline stage (wl_memory.h has the sources). */
#include "wl_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_types.h"
#include "wl_gen.h"
#include "wl_model.h"

#define BF16 2.0
/* FP32 master weights and Adam's two moments (Megatron-LM docs/distrib_optimizer.md). */
#define OPTIMIZER_BYTES_PER_PARAM 12.0

double wl_mem_layer_activations(const struct wl_model *m, int seq, int micro_batch, int tp, int cp, int sp,
                                int recompute)
{
  double s = (double)seq / cp, b = micro_batch, h = m->hidden, t = tp, a = m->heads;
  double sbh = s * b * h;
  if (recompute == WL_RECOMPUTE_FULL)
    return 2 * sbh / (sp ? t : 1); /* the layer's input, the checkpoint (table 2, last row) */
  double kvd = m->kv_heads * (h / m->heads);
  /* Korthikanti section 4.1, per layer in units of sbh bytes:
   *  - kept whole without SP ("10"): the two norms' inputs 2+2, the QKV projection's input 2,
   *    the attention output's dropout mask 1, the MLP's input 2, its dropout mask 1;
   *  - split over t ("24"): attention Q 2 and K 2 (for QK^T), V 2, the output projection's input
   *    2 (GPT: 8; K and V are kv_heads/heads as wide with grouped-query attention); the MLP's
   *    stored ffn-wide tensors: GeLU's input and output 2·ffn/h each (GPT, ffn = 4h: 16), a gated
   *    MLP's gate and up projections and their product (3 · 2·ffn/h), times top-k for MoE;
   *  - the attention core ("5as/h", split over t): softmax output 2as, its dropout mask as,
   *    dropout output 2as per token (times b·s), over the whole sequence with CP. */
  double unsharded = 10;
  double attn = 4 + 4 * kvd / h;
  double mlp = (m->gated_mlp ? 6.0 : 4.0) * m->ffn / h * (m->topk > 0 ? m->topk : 1);
  double core = recompute == WL_RECOMPUTE_SELECTIVE ? 0 : 5 * a * (double)seq / h;
  return sbh * ((sp ? unsharded / t : unsharded) + (attn + mlp + core) / t);
}

int wl_memory_known(const struct wl_trace *t)
{
  const struct wl_model *m = &t->model;
  return m->layers > 0 && m->hidden > 0 && m->heads > 0 && m->kv_heads > 0 && m->ffn > 0 && m->vocab > 0 &&
         m->seq > 0 && t->micro_batch > 0 && t->microbatches > 0 && t->stage_layers != NULL &&
         t->vstage_layers != NULL && t->rank_programs == NULL && wl_recompute_name(t->recompute) != NULL;
}

void wl_stage_params(const struct wl_trace *t, int stage, double *dense, double *expert)
{
  const struct wl_model *m = &t->model;
  const struct wl_layout *l = &t->layout;
  struct wl_layer_params lp;
  wl_model_layer_params(m, &lp);
  double tp = l->tp, h = m->hidden, V = m->vocab;
  int layers = 0;
  for (int c = 0; c < l->vpp; c++)
    layers += t->vstage_layers[c * l->pp + stage];
  double expert_local = (double)m->experts / l->ep * lp.expert / tp;
  *dense = layers * (lp.attn / tp + lp.norms + lp.router + lp.mlp / tp);
  *expert = layers * expert_local;
  /* The embedding on the first stage, the output layer (and final norm) on the last. Tied
   * embeddings are one matrix when both are on one stage; across stages the last keeps a copy
   * (Megatron-LM's shared embedding, kept in sync by an all-reduce of its gradient). */
  if (stage == 0)
    *dense += h * V / tp;
  if (stage == l->pp - 1)
    *dense += (m->tied_embeddings && l->pp == 1 ? 0 : h * V / tp) + h;
}

/* The peak of activations a stage holds along its schedule: in layer-micro-batches (each live
 * forward of chunk c counts the chunk's layers on this stage), and live micro-batches of the
 * first virtual stage (the embedding's buffers). */
static int inflight(const struct wl_trace *t, int stage, double *layers_peak, int *mb_peak, int *embed_peak)
{
  const struct wl_layout *l = &t->layout;
  int m = t->microbatches, p = l->pp, v = l->vpp;
  *layers_peak = 0;
  *mb_peak = 0;
  *embed_peak = 0;
  if ((double)m * v > 2e6) {
    /* A schedule too long to walk (a hand-written trace): the peak is reached after the warm-up
     * forwards and one more (wl_schedule.c), on chunks of the stage's mean size. */
    long total = (long)m * v;
    long warm = v == 1 ? p - stage - 1 : (m == p ? total : (long)(p - stage - 1) * 2 + (long)(v - 1) * p);
    long live = warm + 1 < total ? warm + 1 : total;
    *layers_peak = (double)live * t->stage_layers[stage] / v;
    *mb_peak = (int)live;
    *embed_peak = stage == 0 ? (int)(live < m ? live : m) : 0;
    return 0;
  }
  struct wl_sched_step *steps = malloc(2 * (size_t)m * v * sizeof *steps);
  if (steps == NULL)
    return -1;
  int n = v == 1 ? wl_schedule_1f1b(p, stage, m, steps) : wl_schedule_interleaved(p, stage, m, v, steps);
  double live = 0;
  int live_mb = 0, live_embed = 0;
  for (int i = 0; i < n; i++) {
    int c = steps[i].chunk, vs = c * p + stage, sign = steps[i].is_backward ? -1 : 1;
    live += sign * t->vstage_layers[vs];
    live_mb += sign;
    live_embed += vs == 0 ? sign : 0;
    if (live > *layers_peak)
      *layers_peak = live;
    if (live_mb > *mb_peak)
      *mb_peak = live_mb;
    if (live_embed > *embed_peak)
      *embed_peak = live_embed;
  }
  free(steps);
  return 0;
}

int wl_memory_stage(const struct wl_trace *t, int stage, struct wl_memory *out)
{
  memset(out, 0, sizeof *out);
  if (!wl_memory_known(t) || stage < 0 || stage >= t->layout.pp)
    return -1;
  const struct wl_model *m = &t->model;
  const struct wl_layout *l = &t->layout;
  double dense, expert;
  wl_stage_params(t, stage, &dense, &expert);
  double params = dense + expert;
  out->stage = stage;
  out->weights = BF16 * params;
  out->gradients = (double)t->grad_bytes * params;
  out->optimizer = OPTIMIZER_BYTES_PER_PARAM * (t->zero1 ? dense / l->dp + expert / ((double)l->dp / l->ep) : params);
  double peak_layers;
  int peak_mb, peak_embed;
  if (inflight(t, stage, &peak_layers, &peak_mb, &peak_embed) != 0)
    return -1;
  int sp = t->seq_parallel;
  double per_layer = wl_mem_layer_activations(m, m->seq, t->micro_batch, l->tp, l->cp, sp, t->recompute);
  out->activations = peak_layers * per_layer;
  if (t->recompute == WL_RECOMPUTE_FULL) /* one layer rematerialised during its backward */
    out->activations += wl_mem_layer_activations(m, m->seq, t->micro_batch, l->tp, l->cp, sp, WL_RECOMPUTE_NONE);
  out->inflight_layers = peak_layers;
  out->inflight_microbatches = peak_mb;
  double sbh = (double)m->seq / l->cp * t->micro_batch * m->hidden, spdiv = sp ? l->tp : 1;
  if (stage == 0)
    out->other += peak_embed * sbh / spdiv; /* the embedding's dropout mask */
  if (stage == l->pp - 1)
    out->other += 2 * sbh / spdiv + 4.0 * sbh / m->hidden * m->vocab / l->tp; /* norm input, FP32 logits */
  out->total = out->weights + out->gradients + out->optimizer + out->activations + out->other;
  const struct gpu_type *gpu = gpu_type_find(t->gpu[0] ? t->gpu : "H100");
  out->capacity = gpu ? gpu->hbm_bytes : 0;
  return 0;
}

int wl_memory_worst(const struct wl_trace *t, struct wl_memory *out)
{
  if (!wl_memory_known(t))
    return -1;
  struct wl_memory cur;
  for (int s = 0; s < t->layout.pp; s++) {
    if (wl_memory_stage(t, s, &cur) != 0)
      return -1;
    if (s == 0 || cur.total > out->total)
      *out = cur;
  }
  return 0;
}

void wl_memory_describe(const struct wl_memory *m, const char *gpu, char *buf, size_t len)
{
  snprintf(buf, len,
           "stage %d: weights %.2f GB, gradients %.2f GB, optimizer %.2f GB, activations %.2f GB "
           "(%d micro-batch%s in flight), embedding/output buffers %.2f GB; total %.2f GB of %.0f GB (%s)",
           m->stage, m->weights / 1e9, m->gradients / 1e9, m->optimizer / 1e9, m->activations / 1e9,
           m->inflight_microbatches, m->inflight_microbatches == 1 ? "" : "es", m->other / 1e9, m->total / 1e9,
           m->capacity / 1e9, gpu);
}
