/* Trace generator: one program per pipeline stage, Megatron-LM's order of kernels and
 * collectives. Sizes: activations and weights in BF16 (2 bytes), gradients reduced in
 * grad_bytes (FP32 by default, as Megatron-LM does for --bf16 unless told otherwise). */
#include "wl_gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wl_memory.h"
#include "wl_model.h"

#define BF16 2.0
/* Adam step per parameter: read FP32 master, grad, m, v (16 B), write master, m, v (12 B)
 * and the BF16 copy (2 B). */
#define ADAM_BYTES_PER_PARAM 30.0

/* Generator state while it writes one stage's program. */
struct gen {
  const struct wl_gen_params *p;
  struct wl_trace *t;
  struct wl_program *prog;
  struct wl_layer_params lp;
  int stage, nv, moe;
  double tokens;        /* tokens of one micro-batch on one rank: b * s / cp */
  double kvd;           /* key/value width: kv_heads * head_dim */
  double dense_pending; /* gradient elements not yet in a bucket */
  double expert_pending;
  int last_dense, last_expert; /* id of the last bucket of each kind, -1 if none */
  double dense_params;         /* this rank's parameters on this stage */
  double expert_params;
  double expert_per_layer_local; /* expert parameters of one layer on this rank */
  /* --overlap-param-gather: the async all-gather each layer's first forward waits for (-1: none
   * or already waited), indexed by global layer; [layers] the embedding, [layers + 1] the
   * output layer. */
  int *gather_dense, *gather_expert;
  int waited_dense, waited_expert; /* the last all-gather waited for: buckets come in order */
  /* --no-overlap-grad-reduce: the buckets formed during the backward, reduced after it. */
  double *deferred[2];
  int n_deferred[2], cap_deferred[2];
  int failed;
};

void wl_gen_params_init(struct wl_gen_params *p)
{
  memset(p, 0, sizeof *p);
  p->layout = (struct wl_layout){ 0, 1, 1, 1, 1, 1, 1 };
  snprintf(p->gpu, sizeof p->gpu, "H100");
  p->micro_batch = 1;
  p->grad_bytes = 4;
  /* Megatron-Core DistributedDataParallel: bucket_size = max(40M, 1M * dp) elements. */
  p->bucket_params = 40e6;
  p->overlap_grad_reduce = 1;
  p->tied_embeddings = -1;
  p->grad_norm = 1;
  p->cp_comm_p2p = 1;
  p->seed = 1;
}

#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      snprintf(err, errlen, __VA_ARGS__);                                                                              \
      return -1;                                                                                                       \
    }                                                                                                                  \
  } while (0)

int wl_gen_check(struct wl_gen_params *p, char *err, size_t errlen)
{
  struct wl_layout *l = &p->layout;
  const struct wl_model *m = &p->model;
  if (p->seq <= 0)
    p->seq = m->seq;
  CHECK(l->gpus >= 1 && l->tp >= 1 && l->pp >= 1 && l->vpp >= 1 && l->ep >= 1 && l->cp >= 1,
        "gpus, tp, pp, vpp, ep and cp must all be at least 1");
  long mp = (long)l->tp * l->pp * l->cp;
  CHECK(l->gpus % mp == 0, "gpus=%d is not divisible by tp*pp*cp = %d*%d*%d = %ld", l->gpus, l->tp, l->pp, l->cp, mp);
  l->dp = (int)(l->gpus / mp);
  char msg[200];
  CHECK(wl_layout_check(l, msg, sizeof msg) == 0, "%s", msg);
  CHECK(m->hidden % m->heads == 0, "hidden=%d not divisible by heads=%d", m->hidden, m->heads);
  CHECK(m->heads % l->tp == 0, "heads=%d not divisible by tp=%d", m->heads, l->tp);
  CHECK(m->kv_heads % l->tp == 0,
        "kv-heads=%d not divisible by tp=%d (Megatron needs whole "
        "query groups per TP rank)",
        m->kv_heads, l->tp);
  CHECK(m->ffn % l->tp == 0, "ffn=%d not divisible by tp=%d", m->ffn, l->tp);
  CHECK(p->seq % l->cp == 0, "seq=%d not divisible by cp=%d", p->seq, l->cp);
  CHECK(!p->seq_parallel || (p->seq / l->cp) % l->tp == 0, "sequence parallelism needs seq/cp=%d divisible by tp=%d",
        p->seq / l->cp, l->tp);
  CHECK(!p->tp_comm_overlap || (p->seq_parallel && l->tp > 1),
        "--tp-comm-overlap needs tp > 1 and --sequence-parallel (Megatron-LM overlaps the sequence-parallel "
        "all-gathers and reduce-scatters; tp=%d, sequence parallel %s)",
        l->tp, p->seq_parallel ? "on" : "off");
  CHECK(l->vpp == 1 || l->pp > 1, "vpp=%d needs pp > 1", l->vpp);
  CHECK(l->ep == 1 || m->experts > 0, "ep=%d but %s is not a mixture-of-experts model", l->ep, m->name);
  CHECK(m->experts == 0 || m->experts % l->ep == 0, "ep=%d does not divide experts=%d", l->ep, m->experts);
  CHECK(p->micro_batch >= 1, "micro-batch=%d must be at least 1", p->micro_batch);
  if (p->global_batch <= 0)
    p->global_batch = (long)p->micro_batch * l->dp * 4 * l->pp;
  long per_step = (long)p->micro_batch * l->dp;
  CHECK(p->global_batch % per_step == 0, "global-batch=%ld not divisible by micro-batch*dp = %d*%d = %ld",
        p->global_batch, p->micro_batch, l->dp, per_step);
  long mb = p->global_batch / per_step;
  CHECK(mb <= WL_MAX_MICROBATCHES, "global-batch=%ld gives %ld micro-batches, more than the limit of %d",
        p->global_batch, mb, WL_MAX_MICROBATCHES);
  CHECK(m->layers <= WL_MAX_LAYERS, "layers=%d is more than the limit of %d layers", m->layers, WL_MAX_LAYERS);
  /* Every layer of a stage emits at least its forward and backward GEMMs per micro-batch: refuse
   * before generating when that alone passes the op limit of a program. */
  double min_ops = 2.0 * (m->layers / l->pp) * (double)mb;
  CHECK(min_ops <= WL_MAX_OPS,
        "%d layers over pp=%d with %ld micro-batches need at least %.0f ops per stage, more "
        "than the limit of %d",
        m->layers, l->pp, mb, min_ops, WL_MAX_OPS);
  CHECK(l->vpp == 1 || mb % l->pp == 0, "interleaved schedule needs the micro-batch count %ld divisible by pp=%d", mb,
        l->pp);
  CHECK(p->grad_bytes == 2 || p->grad_bytes == 4, "grad bytes %d must be 2 or 4", p->grad_bytes);
  CHECK(wl_recompute_name(p->recompute) != NULL, "recompute %d must be none (0), full (1) or selective (2)",
        p->recompute);
  CHECK(!p->overlap_param_gather || p->zero1,
        "overlapping the parameter all-gather needs the distributed optimizer (--zero1)");
  if (p->tied_embeddings >= 0)
    p->model.tied_embeddings = p->tied_embeddings;
  int *tmp = malloc((size_t)l->pp * l->vpp * sizeof *tmp);
  CHECK(tmp != NULL, "out of memory");
  int rc = wl_gen_balance(m->layers, l->pp, l->vpp, tmp, err, errlen);
  free(tmp);
  return rc;
}

int wl_gen_balance(int layers, int pp, int vpp, int *vl, char *err, size_t errlen)
{
  int nv = pp * vpp;
  if (layers % nv == 0) {
    for (int i = 0; i < nv; i++)
      vl[i] = layers / nv;
    return 0;
  }
  /* Count the embedding and the output layer as one layer each, spread layers + 2 evenly,
   * then take the embedding and output "layers" back from the first and last stages.
   * Remainders go to the middle stages first. */
  CHECK(nv >= 2, "layers=%d cannot be balanced over one stage", layers);
  int units = layers + 2, base = units / nv, rem = units % nv;
  for (int i = 0; i < nv; i++)
    vl[i] = base;
  int mid = nv - 2;
  for (int k = 0; k < rem; k++)
    vl[k < mid ? 1 + k : (k == mid ? 0 : nv - 1)]++;
  vl[0]--;
  vl[nv - 1]--;
  for (int i = 0; i < nv; i++)
    CHECK(vl[i] >= 1,
          "layers=%d cannot be balanced over pp*vpp = %d*%d virtual stages "
          "(virtual stage %d would get no layer)",
          layers, pp, vpp, i);
  return 0;
}

static int add(struct gen *g, const struct wl_op *o, const int *deps, int ndeps)
{
  int id = wl_program_add(g->prog, o, deps, ndeps);
  if (id < 0)
    g->failed = 1;
  return id;
}

/* A compute op with the shapes of its kernels (nk = 0: none). The roofline times it from flops and
 * mem; the kernel model (compute/model:kernel) from the shapes. */
static void compute_k(struct gen *g, const struct wl_op *ctx, enum wl_cclass c, double flops, double mem,
                      const struct wl_kernel *k, int nk)
{
  struct wl_op o = *ctx;
  o.kind = WL_OP_COMPUTE;
  o.cclass = c;
  o.flops = flops;
  o.mem_bytes = mem;
  int id = add(g, &o, NULL, 0);
  if (id >= 0 && nk > 0 && wl_program_set_kernels(g->prog, id, k, nk) != 0)
    g->failed = 1;
}

/* Kernel lists under construction. */
struct klist {
  struct wl_kernel k[16];
  int n;
};

/* The GEMM C[MxN] = A[MxK] B[KxN] of a forward (x = 1), or its two backward GEMMs (x = 2): the
 * input gradient dA = dC B^T (M x K, inner N) and the weight gradient dB = A^T dC (K x N, inner M). */
static void kl_gemm(struct klist *l, double x, double m, double n, double k, int count)
{
  if (x < 1.5) {
    l->k[l->n++] = (struct wl_kernel){ .type = WL_K_GEMM, .count = count, .a = m, .b = n, .c = k };
  } else {
    l->k[l->n++] = (struct wl_kernel){ .type = WL_K_GEMM, .count = count, .a = m, .b = k, .c = n };
    l->k[l->n++] = (struct wl_kernel){ .type = WL_K_GEMM, .count = count, .a = k, .b = n, .c = m };
  }
}

static void kl_mem(struct klist *l, enum wl_ew_kind kind, double bytes)
{
  if (bytes > 0)
    l->k[l->n++] = (struct wl_kernel){ .type = WL_K_MEM, .sub = kind, .count = 1, .a = bytes };
}

static int coll(struct gen *g, const struct wl_op *ctx, enum wl_coll c, enum wl_group grp, double bytes, int is_async)
{
  if (wl_group_size(g->t, grp) <= 1)
    return -1;
  struct wl_op o = *ctx;
  o.kind = WL_OP_COLL;
  o.coll = c;
  o.group = grp;
  o.bytes = ceil(bytes); /* transfers are whole bytes; a fraction left by a division still needs one */
  o.is_async = is_async;
  return add(g, &o, NULL, 0);
}

static void p2p(struct gen *g, const struct wl_op *ctx, enum wl_op_kind k, int peer, long tag, double bytes)
{
  struct wl_op o = *ctx;
  o.kind = k;
  o.group = WL_GROUP_PP;
  o.peer = peer;
  o.tag = tag;
  o.bytes = ceil(bytes);
  o.is_async = k == WL_OP_SEND;
  add(g, &o, NULL, 0);
}

/* Activation bytes of one micro-batch on one rank (sequence parallel: a 1/tp slice). */
static double act_bytes(const struct gen *g, int sliced)
{
  double b = g->tokens * g->p->model.hidden * BF16;
  return sliced && g->p->seq_parallel ? b / g->p->layout.tp : b;
}

/* TP exchange after a row-parallel block: all-reduce, or reduce-scatter with SP. */
static void tp_reduce(struct gen *g, const struct wl_op *ctx)
{
  coll(g, ctx, g->p->seq_parallel ? WL_COLL_REDUCE_SCATTER : WL_COLL_ALLREDUCE, WL_GROUP_TP, act_bytes(g, 0), 0);
}

/* TP exchange before a column-parallel block: an all-gather with SP, nothing otherwise. */
static void tp_gather(struct gen *g, const struct wl_op *ctx)
{
  if (g->p->seq_parallel)
    coll(g, ctx, WL_COLL_ALLGATHER, WL_GROUP_TP, act_bytes(g, 0), 0);
}

/* The attention core (scores, softmax, context): what selective recomputation re-runs. */
static void attention_core(struct gen *g, const struct wl_op *ctx, double x)
{
  const struct wl_model *m = &g->p->model;
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden, cp = g->p->layout.cp;
  /* FlashAttention over this rank's heads/tp: s/cp queries against the s keys (causal, as GPT and
   * Llama are); its backward (x = 2) is one kernel too. */
  struct wl_kernel k = { .type = WL_K_ATTN,
                         .sub = 1,
                         .count = 1,
                         .a = g->p->micro_batch * (double)m->heads / tp,
                         .b = T / g->p->micro_batch,
                         .c = (double)g->p->seq,
                         .d = h / m->heads };
  compute_k(g, ctx, WL_CC_ATTN, x * 4 * T * g->p->seq * h / tp, x * BF16 * (2 * T * h + 2 * cp * T * g->kvd) / tp, &k,
            1);
}

static void layer_attention(struct gen *g, const struct wl_op *ctx, double x)
{
  const struct wl_model *m = &g->p->model;
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden;
  /* Column-parallel QKV projection, row-parallel output projection. */
  struct klist l = { .n = 0 };
  kl_gemm(&l, x, T, (h + 2 * g->kvd) / tp, h, 1);
  kl_gemm(&l, x, T, h, h / tp, 1);
  compute_k(g, ctx, WL_CC_GEMM, x * 2 * T * g->lp.attn / tp,
            x * BF16 * (g->lp.attn / tp + T * (2 * h + (2 * h + 2 * g->kvd) / tp)), l.k, l.n);
  attention_core(g, ctx, x);
}

static void layer_mlp(struct gen *g, const struct wl_op *ctx, double x)
{
  const struct wl_model *m = &g->p->model;
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden;
  double active = g->lp.mlp + m->topk * g->lp.expert + g->lp.router;
  double weights = g->lp.mlp / tp + g->lp.router + g->expert_per_layer_local;
  /* fc1 (column-parallel; gate and up together for a gated MLP), fc2 (row-parallel). MoE: the
   * router, then each local expert's fc1 and fc2 on its share of the routed tokens (T * topk spread
   * evenly over the experts, ep of which run on this rank's group). */
  struct klist l = { .n = 0 };
  double up = m->gated_mlp ? 2.0 : 1.0;
  if (g->moe) {
    int local = m->experts / g->p->layout.ep > 0 ? m->experts / g->p->layout.ep : 1;
    double rows = T * m->topk * g->p->layout.ep / m->experts;
    kl_gemm(&l, x, T, m->experts, h, 1);
    kl_gemm(&l, x, rows, up * m->ffn / tp, h, local);
    kl_gemm(&l, x, rows, h, m->ffn / tp, local);
  } else {
    kl_gemm(&l, x, T, up * m->ffn / tp, h, 1);
    kl_gemm(&l, x, T, h, m->ffn / tp, 1);
  }
  compute_k(g, ctx, WL_CC_GEMM, x * 2 * T * active / tp,
            x * BF16 * (weights + T * (2 * h + 3.0 * m->ffn * (m->topk ? m->topk : 1) / tp)), l.k, l.n);
}

static void layer_elemwise(struct gen *g, const struct wl_op *ctx, double x)
{
  const struct wl_model *m = &g->p->model;
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden;
  /* Two norms (read+write), two residual adds (2 reads + 1 write), the activation function
   * (gated: read 2, write 1 ffn-wide), rotary on q and k. Counting assumption. */
  double elems = 4 * h + 6 * h + 3.0 * m->ffn * (m->topk ? m->topk : 1) / tp + 2 * (h + g->kvd) / tp;
  /* The same bytes as kernels: two norms, two residual adds, the activation, rotary; softmax and
   * dropout of attention are inside FlashAttention, the bias-dropout-add is the residual kernel. */
  struct klist l = { .n = 0 };
  double b = x * BF16 * T;
  kl_mem(&l, WL_EW_NORM, b * 2 * h);
  kl_mem(&l, WL_EW_NORM, b * 2 * h);
  kl_mem(&l, WL_EW_RESIDUAL, b * 3 * h);
  kl_mem(&l, WL_EW_RESIDUAL, b * 3 * h);
  kl_mem(&l, WL_EW_ACT, b * 3.0 * m->ffn * (m->topk ? m->topk : 1) / tp);
  kl_mem(&l, WL_EW_ROTARY, b * 2 * (h + g->kvd) / tp);
  compute_k(g, ctx, WL_CC_ELEMWISE, 0, x * BF16 * T * elems, l.k, l.n);
}

static void a2a(struct gen *g, const struct wl_op *ctx)
{
  if (g->moe)
    coll(g, ctx, WL_COLL_ALLTOALL, WL_GROUP_EP, g->tokens * g->p->model.topk * g->p->model.hidden * BF16, 0);
}

static double kv_bytes(const struct gen *g)
{
  return g->p->layout.cp * g->tokens * 2 * g->kvd / g->p->layout.tp * BF16;
}

/* Waits for an asynchronous collective (id < 0: none was issued). */
static void wait_coll(struct gen *g, const struct wl_op *ctx, int id)
{
  if (id < 0)
    return;
  struct wl_op w = *ctx;
  w.kind = WL_OP_WAIT;
  add(g, &w, &id, 1);
}

/* One of the attention block's GEMMs on its own: the column-parallel QKV projection (out = 0) or
 * the row-parallel output projection (out = 1), with their shares of layer_attention's FLOPs and
 * bytes (the two add up to its GEMM op). */
static void attention_gemm(struct gen *g, const struct wl_op *ctx, double x, int out)
{
  double T = g->tokens, tp = g->p->layout.tp, h = g->p->model.hidden, qkv = h + 2 * g->kvd;
  double share = out ? h / (qkv + h) : qkv / (qkv + h);
  struct klist l = { .n = 0 };
  if (out)
    kl_gemm(&l, x, T, h, h / tp, 1);
  else
    kl_gemm(&l, x, T, qkv / tp, h, 1);
  compute_k(g, ctx, WL_CC_GEMM, x * 2 * T * g->lp.attn / tp * share,
            x * BF16 * (g->lp.attn / tp * share + T * (out ? h / tp + h : h + qkv / tp)), l.k, l.n);
}

/* A dense MLP's GEMMs on their own: fc1 (column-parallel, out = 0) or fc2 (row-parallel, out = 1),
 * with their shares of layer_mlp's FLOPs and bytes. */
static void mlp_gemm(struct gen *g, const struct wl_op *ctx, double x, int out)
{
  const struct wl_model *m = &g->p->model;
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden, up = m->gated_mlp ? 2.0 : 1.0;
  double share = out ? 1 / (up + 1) : up / (up + 1);
  struct klist l = { .n = 0 };
  if (out)
    kl_gemm(&l, x, T, h, m->ffn / tp, 1);
  else
    kl_gemm(&l, x, T, up * m->ffn / tp, h, 1);
  compute_k(g, ctx, WL_CC_GEMM, x * 2 * T * g->lp.mlp / tp * share,
            x * BF16 * (g->lp.mlp / tp * share + T * (out ? m->ffn / tp + h : h + 2 * m->ffn / tp)), l.k, l.n);
}

/* --tp-comm-overlap (Megatron-LM, TransformerEngine's userbuffers): the sequence-parallel
 * all-gather feeding a column-parallel GEMM, and the reduce-scatter draining a row-parallel one,
 * are cut into chunks pipelined with the GEMM's own chunks. Modelled as the collective running
 * beside the GEMM (issued asynchronously before it, waited for after it): max(comm, GEMM) instead
 * of their sum. The GEMM's slowdown from the SMs or copy engines the communication takes is not
 * modelled. */
static int tp_overlapped(struct gen *g, const struct wl_op *ctx, enum wl_coll c)
{
  return coll(g, ctx, c, WL_GROUP_TP, act_bytes(g, 0), 1);
}

/* Context parallelism with --cp-comm-type p2p (Megatron-Core's default; TransformerEngine's
 * ring attention): each of the cp steps computes attention on one KV chunk while the next chunk
 * travels one hop around the CP ring. The bytes are those of a ring all-gather of the KV (and,
 * backward, of its reduce-scatter for dKV), issued asynchronously and overlapped with the
 * attention core. all_gather: the KV gathered before attention and dKV reduce-scattered after,
 * blocking. */
static int cp_ring(const struct gen *g) { return g->p->cp_comm_p2p && g->p->layout.cp > 1; }

typedef void (*gemm_fn)(struct gen *g, const struct wl_op *ctx, double x, int out);

/* A GEMM whose input the TP all-gather brings (sequence parallelism): the gather before it, or,
 * with --tp-comm-overlap, beside it. */
static void gathered_gemm(struct gen *g, const struct wl_op *ctx, gemm_fn gemm, double x, int out)
{
  int ag = -1;
  if (g->p->tp_comm_overlap)
    ag = tp_overlapped(g, ctx, WL_COLL_ALLGATHER);
  else
    tp_gather(g, ctx);
  gemm(g, ctx, x, out);
  wait_coll(g, ctx, ag);
}

/* A GEMM whose output the TP reduction takes: the reduction after it, or, with
 * --tp-comm-overlap, its reduce-scatter beside it. */
static void reduced_gemm(struct gen *g, const struct wl_op *ctx, gemm_fn gemm, double x, int out)
{
  if (!g->p->tp_comm_overlap) {
    gemm(g, ctx, x, out);
    tp_reduce(g, ctx);
    return;
  }
  int rs = tp_overlapped(g, ctx, WL_COLL_REDUCE_SCATTER);
  gemm(g, ctx, x, out);
  wait_coll(g, ctx, rs);
}

/* The MLP with its TP (and, MoE, expert all-to-all) communication before and after, blocking. */
static void mlp_block(struct gen *g, const struct wl_op *ctx, double x)
{
  tp_gather(g, ctx);
  a2a(g, ctx);
  layer_mlp(g, ctx, x);
  a2a(g, ctx);
  tp_reduce(g, ctx);
}

/* The MLP forward (x = 1: fc1 then fc2) or backward (x = 2: fc2 then fc1). With --tp-comm-overlap
 * a dense MLP's two GEMMs overlap their TP collectives; MoE's expert GEMMs are not overlapped. */
static void mlp(struct gen *g, const struct wl_op *ctx, double x)
{
  if (!g->p->tp_comm_overlap || g->moe) {
    mlp_block(g, ctx, x);
    return;
  }
  int backward = x > 1.5;
  gathered_gemm(g, ctx, mlp_gemm, x, backward);
  reduced_gemm(g, ctx, mlp_gemm, x, !backward);
}

static void layer_forward(struct gen *g, const struct wl_op *ctx)
{
  if (!g->p->tp_comm_overlap && !cp_ring(g)) {
    coll(g, ctx, WL_COLL_ALLGATHER, WL_GROUP_CP, kv_bytes(g), 0);
    tp_gather(g, ctx);
    layer_attention(g, ctx, 1);
    tp_reduce(g, ctx);
    layer_elemwise(g, ctx, 1);
    mlp_block(g, ctx, 1);
    return;
  }
  int kv = -1;
  if (!cp_ring(g))
    coll(g, ctx, WL_COLL_ALLGATHER, WL_GROUP_CP, kv_bytes(g), 0);
  gathered_gemm(g, ctx, attention_gemm, 1, 0);
  if (cp_ring(g))
    kv = coll(g, ctx, WL_COLL_ALLGATHER, WL_GROUP_CP, kv_bytes(g), 1);
  attention_core(g, ctx, 1);
  wait_coll(g, ctx, kv);
  reduced_gemm(g, ctx, attention_gemm, 1, 1);
  layer_elemwise(g, ctx, 1);
  mlp(g, ctx, 1);
}

static void layer_backward(struct gen *g, const struct wl_op *ctx)
{
  if (!g->p->tp_comm_overlap && !cp_ring(g)) {
    mlp_block(g, ctx, 2);
    layer_elemwise(g, ctx, 2);
    tp_gather(g, ctx);
    layer_attention(g, ctx, 2);
    coll(g, ctx, WL_COLL_REDUCE_SCATTER, WL_GROUP_CP, kv_bytes(g), 0);
    tp_reduce(g, ctx);
    return;
  }
  mlp(g, ctx, 2);
  layer_elemwise(g, ctx, 2);
  gathered_gemm(g, ctx, attention_gemm, 2, 1);
  if (cp_ring(g)) { /* the KV chunks go round the ring again, their gradients after them */
    int kv = coll(g, ctx, WL_COLL_ALLGATHER, WL_GROUP_CP, kv_bytes(g), 1);
    int dkv = coll(g, ctx, WL_COLL_REDUCE_SCATTER, WL_GROUP_CP, kv_bytes(g), 1);
    attention_core(g, ctx, 2);
    wait_coll(g, ctx, kv);
    wait_coll(g, ctx, dkv);
  } else {
    attention_core(g, ctx, 2);
    coll(g, ctx, WL_COLL_REDUCE_SCATTER, WL_GROUP_CP, kv_bytes(g), 0);
  }
  reduced_gemm(g, ctx, attention_gemm, 2, 0);
}

/* Keeps a full bucket for after the backward (no overlap). */
static void bucket_defer(struct gen *g, int expert)
{
  double *pending = expert ? &g->expert_pending : &g->dense_pending;
  if (*pending <= 0)
    return;
  if (g->n_deferred[expert] == g->cap_deferred[expert]) {
    int cap = g->cap_deferred[expert] ? 2 * g->cap_deferred[expert] : 64;
    double *grown = realloc(g->deferred[expert], (size_t)cap * sizeof *grown);
    if (grown == NULL) {
      g->failed = 1;
      return;
    }
    g->deferred[expert] = grown;
    g->cap_deferred[expert] = cap;
  }
  g->deferred[expert][g->n_deferred[expert]++] = *pending;
  *pending = 0;
}

static void bucket_flush(struct gen *g, const struct wl_op *ctx, int expert)
{
  double *pending = expert ? &g->expert_pending : &g->dense_pending;
  if (*pending <= 0)
    return;
  if (!g->p->overlap_grad_reduce && ctx->phase != WL_PHASE_OPTIMIZER) {
    bucket_defer(g, expert);
    return;
  }
  enum wl_coll c = g->p->zero1 ? WL_COLL_REDUCE_SCATTER : WL_COLL_ALLREDUCE;
  struct wl_op o = *ctx;
  o.layer = -1;
  /* Without overlap (Megatron-LM before --overlap-grad-reduce) the buckets are reduced after the
   * backward, each blocking the stream (finalize_model_grads). */
  int id =
      coll(g, &o, c, expert ? WL_GROUP_DP_EP : WL_GROUP_DP, *pending * g->p->grad_bytes, g->p->overlap_grad_reduce);
  if (id >= 0)
    *(expert ? &g->last_expert : &g->last_dense) = id;
  *pending = 0;
}

/* The parameters of the output layer on the last stage: none of its own when tied to the
 * embedding on the same rank (pp = 1), plus the final norm. */
static double output_params(const struct gen *g)
{
  const struct wl_model *m = &g->p->model;
  int shared = m->tied_embeddings && g->p->layout.pp == 1;
  return (shared ? 0 : m->hidden * (double)m->vocab / g->p->layout.tp) + m->hidden;
}

static double bucket_size(const struct gen *g)
{
  double size = g->p->bucket_params;
  double dp_min = 1e6 * g->p->layout.dp;
  return size < dp_min ? dp_min : size;
}

static void bucket_add(struct gen *g, const struct wl_op *ctx, double dense, double expert)
{
  double size = bucket_size(g);
  g->dense_pending += dense;
  g->expert_pending += expert;
  if (g->dense_pending >= size)
    bucket_flush(g, ctx, 0);
  if (g->expert_pending >= size)
    bucket_flush(g, ctx, 1);
}

static long p2p_tag(const struct gen *g, int micro, int vs, int backward)
{
  return ((long)micro * g->nv + vs) * 2 + backward;
}

/* --overlap-param-gather: before the first use of a layer's parameters, wait for the all-gather
 * that brings them (index: global layer, or layers / layers + 1 for the embedding / output layer). */
static void gather_wait(struct gen *g, const struct wl_op *ctx, int index)
{
  if (g->gather_dense == NULL)
    return;
  int deps[2], nd = 0;
  /* Once per bucket (later forwards find the parameters there); a bucket's all-gather also
   * finishes those issued before it on the same stream. */
  if (g->gather_dense[index] > g->waited_dense)
    deps[nd++] = g->waited_dense = g->gather_dense[index];
  if (g->gather_expert[index] > g->waited_expert)
    deps[nd++] = g->waited_expert = g->gather_expert[index];
  if (nd == 0)
    return;
  struct wl_op w = *ctx;
  w.kind = WL_OP_WAIT;
  add(g, &w, deps, nd);
}

static void step_forward(struct gen *g, int micro, int chunk)
{
  const struct wl_model *m = &g->p->model;
  int vs = chunk * g->p->layout.pp + g->stage;
  struct wl_op ctx = { .phase = WL_PHASE_FORWARD, .micro = micro, .chunk = chunk, .layer = -1 };
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden;
  int L = m->layers;
  if (vs > 0) {
    p2p(g, &ctx, WL_OP_RECV, -1, p2p_tag(g, micro, vs - 1, 0), act_bytes(g, 1));
  } else {
    gather_wait(g, &ctx, L);
    struct wl_kernel emb = { .type = WL_K_MEM, .sub = WL_EW_EMBED, .count = 1, .a = 2 * BF16 * T * h };
    compute_k(g, &ctx, WL_CC_ELEMWISE, 0, 2 * BF16 * T * h, &emb, 1);
    tp_reduce(g, &ctx);
  }
  for (int j = 0; j < g->t->vstage_layers[vs]; j++) {
    ctx.layer = g->t->stage_first_layer[vs] + j;
    gather_wait(g, &ctx, ctx.layer);
    layer_forward(g, &ctx);
  }
  ctx.layer = -1;
  if (vs == g->nv - 1) {
    gather_wait(g, &ctx, L + 1);
    tp_gather(g, &ctx);
    /* The output layer and the vocab-parallel cross-entropy over its FP32 logits (read the
     * logits, write the softmax kept for the backward: 8 bytes a logit). The roofline counts the
     * GEMM alone (mem= as before); the kernel model adds the cross-entropy kernel. */
    struct klist l = { .n = 0 };
    kl_gemm(&l, 1, T, m->vocab / tp, h, 1);
    kl_mem(&l, WL_EW_XENT, 8 * T * (double)m->vocab / tp);
    compute_k(g, &ctx, WL_CC_GEMM, 2 * T * h * m->vocab / tp,
              BF16 * (h * (double)m->vocab / tp + T * (h + (double)m->vocab / tp)), l.k, l.n);
  } else {
    p2p(g, &ctx, WL_OP_SEND, +1, p2p_tag(g, micro, vs, 0), act_bytes(g, 1));
  }
}

static void step_backward(struct gen *g, int micro, int chunk)
{
  const struct wl_model *m = &g->p->model;
  int vs = chunk * g->p->layout.pp + g->stage, last = micro == g->t->microbatches - 1;
  struct wl_op ctx = { .phase = WL_PHASE_BACKWARD, .micro = micro, .chunk = chunk, .layer = -1 };
  double T = g->tokens, tp = g->p->layout.tp, h = m->hidden;
  double dense_layer = g->lp.attn / tp + g->lp.norms + g->lp.router + g->lp.mlp / tp;
  if (vs < g->nv - 1) {
    p2p(g, &ctx, WL_OP_RECV, +1, p2p_tag(g, micro, vs, 1), act_bytes(g, 1));
  } else {
    /* Cross-entropy's backward (read the kept softmax, write the logits' gradient in BF16), then
     * the output layer's two GEMMs. */
    struct klist l = { .n = 0 };
    kl_mem(&l, WL_EW_XENT, 6 * T * (double)m->vocab / tp);
    kl_gemm(&l, 2, T, m->vocab / tp, h, 1);
    compute_k(g, &ctx, WL_CC_GEMM, 2 * 2 * T * h * m->vocab / tp,
              2 * BF16 * (h * (double)m->vocab / tp + T * (h + (double)m->vocab / tp)), l.k, l.n);
    tp_reduce(g, &ctx);
    if (last)
      bucket_add(g, &ctx, output_params(g), 0);
  }
  for (int j = g->t->vstage_layers[vs] - 1; j >= 0; j--) {
    ctx.layer = g->t->stage_first_layer[vs] + j;
    if (g->p->recompute != WL_RECOMPUTE_NONE) {
      /* Full: the whole layer's forward again (Korthikanti et al. 2022, section 2); selective:
       * only the attention core, whose activations (the 5as/h term) were not kept (section 4.2). */
      ctx.phase = WL_PHASE_RECOMPUTE;
      if (g->p->recompute == WL_RECOMPUTE_FULL)
        layer_forward(g, &ctx);
      else
        attention_core(g, &ctx, 1);
      ctx.phase = WL_PHASE_BACKWARD;
    }
    layer_backward(g, &ctx);
    if (last)
      bucket_add(g, &ctx, dense_layer, g->expert_per_layer_local);
  }
  ctx.layer = -1;
  if (vs == 0) {
    struct wl_kernel emb = { .type = WL_K_MEM, .sub = WL_EW_EMBED, .count = 1, .a = 2 * BF16 * T * h };
    compute_k(g, &ctx, WL_CC_ELEMWISE, 0, 2 * BF16 * T * h, &emb, 1);
    if (last)
      bucket_add(g, &ctx, h * (double)m->vocab / tp, 0);
  } else {
    p2p(g, &ctx, WL_OP_SEND, -1, p2p_tag(g, micro, vs - 1, 1), act_bytes(g, 1));
  }
  if (last) {
    bucket_flush(g, &ctx, 0);
    bucket_flush(g, &ctx, 1);
  }
}

/* Without --overlap-grad-reduce: the buckets the backward formed are reduced once it is over,
 * each blocking (Megatron-LM's finalize_model_grads before overlapping existed). */
static void flush_after_backward(struct gen *g, const struct wl_op *ctx, int expert)
{
  for (int i = 0; i < g->n_deferred[expert]; i++) {
    *(expert ? &g->expert_pending : &g->dense_pending) = g->deferred[expert][i];
    bucket_flush(g, ctx, expert);
  }
}

static void stage_tail(struct gen *g)
{
  struct wl_op ctx = { .phase = WL_PHASE_OPTIMIZER, .micro = -1, .layer = -1 };
  const struct wl_gen_params *p = g->p;
  const struct wl_layout *l = &p->layout;
  const struct wl_model *m = &p->model;
  if (!p->overlap_grad_reduce) {
    flush_after_backward(g, &ctx, 0);
    flush_after_backward(g, &ctx, 1);
  }
  int deps[2], nd = 0;
  if (g->last_dense >= 0 && p->overlap_grad_reduce)
    deps[nd++] = g->last_dense;
  if (g->last_expert >= 0 && p->overlap_grad_reduce)
    deps[nd++] = g->last_expert;
  if (nd > 0) {
    struct wl_op w = ctx;
    w.kind = WL_OP_WAIT;
    add(g, &w, deps, nd);
  }
  /* Tied embeddings over pp > 1 stages: the first stage's embedding and the last stage's output
   * layer are copies of one matrix, whose gradients are summed by an all-reduce between the two
   * stages once the data-parallel reduction is done (Megatron-LM finalize_model_grads,
   * _allreduce_word_embedding_grads, on the embedding group; FP32 main_grad as the DP buckets). */
  if (m->tied_embeddings && (g->stage == 0 || g->stage == l->pp - 1))
    coll(g, &ctx, WL_COLL_ALLREDUCE, WL_GROUP_EMB, p->grad_bytes * (double)m->hidden * m->vocab / l->tp, 0);
  double dense = g->dense_params, expert = g->expert_params;
  if (p->zero1) {
    dense /= l->dp;
    expert /= l->dp / l->ep;
  }
  /* Gradient clipping needs the global gradient norm (Megatron-LM clip_grad, default 1.0): each
   * rank reads its gradients (its shard with the distributed optimizer) for the sum of squares,
   * then one FP32 value is all-reduced over the model-parallel group, or over every rank with the
   * distributed optimizer whose shards split the data-parallel group too (get_grad_norm_fp32 on
   * the optimizer's grad-stats group). Latency-bound: a few microseconds per hop. */
  if (p->grad_norm) {
    struct wl_kernel gn = {
      .type = WL_K_MEM, .sub = WL_EW_GRADNORM, .count = 1, .a = p->grad_bytes * (dense + expert)
    };
    compute_k(g, &ctx, WL_CC_ELEMWISE, 0, p->grad_bytes * (dense + expert), &gn, gn.a > 0);
    coll(g, &ctx, WL_COLL_ALLREDUCE, p->zero1 ? WL_GROUP_WORLD : WL_GROUP_MP, 4, 0);
  }
  /* The Adam step is memory-bound: ADAM_BYTES_PER_PARAM of optimizer state and gradients read
   * and written per local parameter, at the HBM bandwidth the compute model gives. */
  struct wl_kernel adam = {
    .type = WL_K_MEM, .sub = WL_EW_ADAM, .count = 1, .a = ADAM_BYTES_PER_PARAM * (dense + expert)
  };
  compute_k(g, &ctx, WL_CC_OPTIMIZER, 0, adam.a, &adam, adam.a > 0);
  if (p->zero1 && !p->overlap_param_gather) {
    coll(g, &ctx, WL_COLL_ALLGATHER, WL_GROUP_DP, BF16 * g->dense_params, 0);
    coll(g, &ctx, WL_COLL_ALLGATHER, WL_GROUP_DP_EP, BF16 * g->expert_params, 0);
  }
}

/* --overlap-param-gather (distributed optimizer): the updated parameters are all-gathered in
 * buckets, in forward order, while the forward runs; each layer's first forward waits for its
 * bucket (Megatron-Core's overlap_param_gather, which dispatches the next bucket's all-gather
 * from the forward pre-hook of the current one). The all-gathers of iteration n overlap the
 * forward of iteration n + 1; in this one-iteration replay they are issued at its start. */
/* One async all-gather of the pending parameters; the slots waiting for them get its id. */
static void gather_bucket(struct gen *g, const struct wl_op *ctx, enum wl_group grp, double *pending, int *ids,
                          const int *waiting, int *nwaiting)
{
  int id = coll(g, ctx, WL_COLL_ALLGATHER, grp, BF16 * *pending, 1);
  for (int k = 0; k < *nwaiting; k++)
    ids[waiting[k]] = id;
  *pending = 0;
  *nwaiting = 0;
}

static int plan_param_gather(struct gen *g)
{
  const struct wl_gen_params *p = g->p;
  const struct wl_layout *l = &p->layout;
  int L = p->model.layers, nslots = L + 2;
  g->gather_dense = malloc((size_t)nslots * sizeof *g->gather_dense);
  g->gather_expert = malloc((size_t)nslots * sizeof *g->gather_expert);
  int *waiting_d = malloc((size_t)nslots * sizeof *waiting_d);
  int *waiting_e = malloc((size_t)nslots * sizeof *waiting_e);
  if (!g->gather_dense || !g->gather_expert || !waiting_d || !waiting_e) {
    free(waiting_d);
    free(waiting_e);
    return -1;
  }
  for (int i = 0; i < nslots; i++)
    g->gather_dense[i] = g->gather_expert[i] = -1;
  struct wl_op ctx = { .phase = WL_PHASE_OPTIMIZER, .micro = -1, .layer = -1 };
  double tp = l->tp, size = bucket_size(g), dpend = 0, epend = 0;
  double dense_layer = g->lp.attn / tp + g->lp.norms + g->lp.router + g->lp.mlp / tp;
  int nd = 0, ne = 0;
  for (int c = 0; c < l->vpp; c++) {
    int vs = c * l->pp + g->stage;
    int first = g->t->stage_first_layer[vs], count = g->t->vstage_layers[vs];
    for (int j = -1; j <= count; j++) {
      int slot;
      double d = 0, e = 0;
      if (j == -1 && vs == 0)
        slot = L, d = p->model.hidden * (double)p->model.vocab / tp;
      else if (j == count && vs == g->nv - 1)
        slot = L + 1, d = output_params(g);
      else if (j >= 0 && j < count)
        slot = first + j, d = dense_layer, e = g->expert_per_layer_local;
      else
        continue;
      dpend += d;
      epend += e;
      waiting_d[nd++] = slot;
      if (e > 0)
        waiting_e[ne++] = slot;
      if (dpend >= size)
        gather_bucket(g, &ctx, WL_GROUP_DP, &dpend, g->gather_dense, waiting_d, &nd);
      if (epend >= size)
        gather_bucket(g, &ctx, WL_GROUP_DP_EP, &epend, g->gather_expert, waiting_e, &ne);
    }
  }
  /* What is left: the last, partial buckets. */
  if (dpend > 0)
    gather_bucket(g, &ctx, WL_GROUP_DP, &dpend, g->gather_dense, waiting_d, &nd);
  if (epend > 0)
    gather_bucket(g, &ctx, WL_GROUP_DP_EP, &epend, g->gather_expert, waiting_e, &ne);
  free(waiting_d);
  free(waiting_e);
  return 0;
}

static int build_stage(struct wl_trace *t, const struct wl_gen_params *p, int stage, struct wl_sched_step *steps)
{
  const struct wl_layout *l = &p->layout;
  struct gen g = { .p = p,
                   .t = t,
                   .prog = &t->programs[stage],
                   .stage = stage,
                   .nv = l->pp * l->vpp,
                   .last_dense = -1,
                   .last_expert = -1,
                   .waited_dense = -1,
                   .waited_expert = -1 };
  wl_model_layer_params(&p->model, &g.lp);
  g.moe = p->model.experts > 0 && l->ep > 1;
  g.tokens = (double)p->micro_batch * p->seq / l->cp;
  g.kvd = p->model.kv_heads * ((double)p->model.hidden / p->model.heads);
  g.expert_per_layer_local = (double)p->model.experts / l->ep * g.lp.expert / l->tp;
  wl_stage_params(t, stage, &g.dense_params, &g.expert_params);
  if (p->zero1 && p->overlap_param_gather && plan_param_gather(&g) != 0)
    g.failed = 1;
  int n = l->vpp == 1 ? wl_schedule_1f1b(l->pp, stage, t->microbatches, steps)
                      : wl_schedule_interleaved(l->pp, stage, t->microbatches, l->vpp, steps);
  for (int i = 0; i < n && !g.failed; i++) {
    if (steps[i].is_backward)
      step_backward(&g, steps[i].micro, steps[i].chunk);
    else
      step_forward(&g, steps[i].micro, steps[i].chunk);
  }
  if (!g.failed)
    stage_tail(&g);
  free(g.gather_dense);
  free(g.gather_expert);
  free(g.deferred[0]);
  free(g.deferred[1]);
  return g.failed ? -1 : 0;
}

struct wl_trace *wl_generate(struct wl_gen_params *p, char *err, size_t errlen)
{
  if (wl_gen_check(p, err, errlen) != 0)
    return NULL;
  struct wl_trace *t = wl_trace_new();
  struct wl_sched_step *steps = NULL;
  if (t == NULL)
    goto fail_oom;
  const struct wl_layout *l = &p->layout;
  t->model = p->model;
  t->layout = *l;
  snprintf(t->gpu, sizeof t->gpu, "%s", p->gpu);
  t->micro_batch = p->micro_batch;
  t->global_batch = p->global_batch;
  t->microbatches = (int)(p->global_batch / ((long)p->micro_batch * l->dp));
  t->recompute = p->recompute;
  t->zero1 = p->zero1;
  t->seq_parallel = p->seq_parallel;
  t->grad_bytes = p->grad_bytes;
  t->seed = p->seed;
  t->model.seq = p->seq;
  snprintf(t->generator, sizeof t->generator, "sgfabric-workload/%s/bucket=%.0f", l->vpp > 1 ? "interleaved" : "1f1b",
           p->bucket_params);
  t->model_flops = wl_model_flops_per_iteration(&p->model, p->global_batch, p->seq);
  t->hardware_flops = wl_hardware_flops_per_iteration(&p->model, p->global_batch, p->seq, p->recompute);
  if (wl_trace_alloc_stages(t) != 0)
    goto fail_oom;
  int nv = l->pp * l->vpp;
  wl_gen_balance(p->model.layers, l->pp, l->vpp, t->vstage_layers, err, errlen);
  for (int vs = 0, first = 0; vs < nv; vs++) {
    t->stage_first_layer[vs] = first;
    first += t->vstage_layers[vs];
    t->stage_layers[vs % l->pp] += t->vstage_layers[vs];
  }
  steps = malloc(2 * (size_t)t->microbatches * l->vpp * sizeof *steps);
  if (steps == NULL)
    goto fail_oom;
  for (int s = 0; s < l->pp; s++)
    if (build_stage(t, p, s, steps) != 0) {
      if (t->programs[s].nops >= WL_MAX_OPS) {
        snprintf(err, errlen, "stage %d needs more than the limit of %d ops (fewer micro-batches or layers)", s,
                 WL_MAX_OPS);
        free(steps);
        wl_trace_free(t);
        return NULL;
      }
      goto fail_oom;
    }
  free(steps);
  return t;
fail_oom:
  snprintf(err, errlen, "out of memory while generating the trace");
  free(steps);
  wl_trace_free(t);
  return NULL;
}
