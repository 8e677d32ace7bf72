/* The in-memory workload trace: one SPMD description of every rank of an LLM training job.
 *
 * A trace holds the model and parallel layout (for MFU and for the groups) and one program
 * per pipeline stage; every rank of a stage runs that stage's program, so a 10,240-rank job
 * stores pp programs, not 10,240. The replay engine asks, for a global rank, for its
 * coordinates, its group members and its program.
 *
 * Rank ordering (Megatron-Core's default "tp-cp-ep-dp-pp", tp fastest):
 *   rank = tp_i + tp * (cp_i + cp * (dp_i + dp * pp_i)),   dp_i = ep_i + ep * edp_i
 * EP is carved out of DP: the ep ranks with consecutive dp_i form an expert-parallel group,
 * and ranks with the same ep_i form the expert-data-parallel group (WL_GROUP_DP_EP) that
 * reduces expert gradients.
 *
 * Op semantics (see docs/workload-format.md):
 *   - ops run in program order on the rank's main stream; an op starts when the previous
 *     blocking op has finished and every op in its deps list has finished;
 *   - an op with is_async set is issued under the same rule but does not block the stream:
 *     it runs on the comm stream of its group (async ops of one group kind run in issue
 *     order, like NCCL on one communicator) and something later must name it in deps
 *     (usually a WL_OP_WAIT); the end of the program waits for every outstanding op;
 *   - send/recv match by (sender, receiver, tag); recv blocks, send is normally async.
 */
#ifndef SGFABRIC_WL_TRACE_H
#define SGFABRIC_WL_TRACE_H

#include <stddef.h>
#include <stdio.h>

#define WL_FORMAT_VERSION 1

/* Limits on what a workload may ask for, so that a typo (ga: 1000000, layers: 1073741824, a
 * transfer of 1e308 bytes) is refused at load time instead of running until killed:
 *   - a transfer is a whole number of bytes, at most 2^50 (1 PiB; the fabric's own limit,
 *     FAB_MAX_TRANSFER_BYTES in plugins/fabric/fabric.h);
 *   - at most 100,000 layers in a model and 100,000 micro-batches (SimAI: ga) per iteration;
 *   - at most 2^22 (4,194,304) ops in one stage's program (about 370 MB of ops; the largest
 *     shipped workloads need tens of thousands). */
#define WL_MAX_BYTES 1125899906842624.0
#define WL_MAX_LAYERS 100000
#define WL_MAX_MICROBATCHES 100000
#define WL_MAX_OPS (1 << 22)
/* Virtual pipeline stages (pp x vpp): the trace's 'stages' line lists three integers per stage
 * and must stay within the reader's 65,534-character line (7 characters an entry at most). */
#define WL_MAX_VSTAGES 2048

/* Whether bytes is a transfer size a workload may carry: a whole number in 0..WL_MAX_BYTES. */
int wl_bytes_valid(double bytes);

enum wl_group {
  WL_GROUP_NONE,  /* compute and wait ops */
  WL_GROUP_TP,    /* tensor parallel: same cp, dp, pp */
  WL_GROUP_CP,    /* context parallel: same tp, dp, pp */
  WL_GROUP_DP,    /* data parallel: same tp, cp, pp (dense gradients) */
  WL_GROUP_EP,    /* expert parallel: same tp, cp, pp, edp; ep consecutive dp indices */
  WL_GROUP_DP_EP, /* expert data parallel: same tp, cp, pp, ep index (expert gradients) */
  WL_GROUP_PP,    /* pipeline: same tp, cp, dp; members ordered by stage */
  WL_GROUP_WORLD, /* every rank */
  WL_GROUP_EMB,   /* embedding: the first and the last stage of a pipeline (same tp, cp, dp), which
                   * both hold the tied embedding matrix; 1 member when pp = 1. Only ranks of those
                   * two stages are members (wl_group_index is -1 on the others). */
  WL_GROUP_MP,    /* model parallel: same cp, dp; tp x pp ranks (Megatron-LM's model-parallel group,
                   * over which the gradient norm is reduced) */
  WL_GROUP_COUNT
};

enum wl_op_kind {
  WL_OP_COMPUTE, /* GPU kernel(s): roofline from flops/mem_bytes, or a fixed duration */
  WL_OP_COLL,    /* collective on a group */
  WL_OP_SEND,    /* point-to-point to the member at offset peer in the group */
  WL_OP_RECV,    /* point-to-point from the member at offset peer in the group */
  WL_OP_WAIT,    /* blocks the main stream until its deps have finished */
  WL_OP_KIND_COUNT
};

enum wl_coll {
  WL_COLL_NONE,
  WL_COLL_ALLREDUCE,
  WL_COLL_REDUCE_SCATTER,
  WL_COLL_ALLGATHER,
  WL_COLL_ALLTOALL,
  WL_COLL_BROADCAST,
  WL_COLL_COUNT
};

/* What kind of kernel a compute op is; selects the efficiency factor (docs/compute-model.md). */
enum wl_cclass {
  WL_CC_GEMM,      /* dense matrix multiplications */
  WL_CC_ATTN,      /* fused attention core (FlashAttention) */
  WL_CC_ELEMWISE,  /* norms, residuals, activations, rotary: memory bound */
  WL_CC_OPTIMIZER, /* Adam step: memory bound */
  WL_CC_COUNT
};

enum wl_phase {
  WL_PHASE_FORWARD,
  WL_PHASE_BACKWARD,
  WL_PHASE_RECOMPUTE, /* forward re-run inside the backward pass (activation recomputation) */
  WL_PHASE_OPTIMIZER, /* gradient reduction tail, optimizer step, parameter all-gather */
  WL_PHASE_COUNT
};

/* The kernels a compute op launches, when the trace gives their shapes (optional; an op without
 * them is timed by the roofline from flops= and mem=). docs/workload-format.md, fields gemm=,
 * attn= and ew=; the kernel model in workloads/compute/wl_kernels.h times them. */
enum wl_ktype {
  WL_K_GEMM, /* a = M, b = N, c = K: C[MxN] = A[MxK] B[KxN], 2MNK FLOPs */
  WL_K_ATTN, /* a = batch x heads, b = query length, c = key length, d = head dim; sub = causal */
  WL_K_MEM,  /* a = HBM bytes read plus written; sub = enum wl_ew_kind */
  WL_K_COUNT
};

/* What a memory-bound kernel does (the name in the trace; the model times them alike). */
enum wl_ew_kind {
  WL_EW_NORM,     /* layer norm / RMSNorm */
  WL_EW_ACT,      /* activation (GeLU, SwiGLU) */
  WL_EW_RESIDUAL, /* residual add (fused bias-dropout-add in Megatron-LM) */
  WL_EW_ROTARY,   /* rotary position embedding on q and k */
  WL_EW_DROPOUT,  /* a separate dropout */
  WL_EW_SOFTMAX,  /* a separate softmax (not FlashAttention's, which is fused) */
  WL_EW_XENT,     /* (vocab-parallel) cross-entropy over the logits */
  WL_EW_EMBED,    /* embedding lookup */
  WL_EW_GRADNORM, /* gradient norm: sum of squares over the gradients */
  WL_EW_ADAM,     /* the Adam optimizer step */
  WL_EW_OTHER,
  WL_EW_COUNT
};

struct wl_kernel {
  enum wl_ktype type;
  int sub;   /* ATTN: 1 causal, 0 not; MEM: enum wl_ew_kind */
  int count; /* identical kernels launched (>= 1): "M:N:Kx8" for 8 experts' GEMMs */
  double a, b, c, d;
};
#define WL_MAX_OP_KERNELS 64 /* kernels one op may list */

struct wl_op {
  enum wl_op_kind kind;
  enum wl_phase phase;
  int micro;             /* micro-batch index, -1 outside micro-batches */
  int chunk;             /* virtual pipeline chunk (interleaved schedule), 0 otherwise */
  int layer;             /* global layer index (SimAI: row index), -1 when none */
  int is_async;          /* 1: issued without blocking the main stream */
  enum wl_group group;   /* COLL/SEND/RECV: the group; NONE otherwise */
  enum wl_coll coll;     /* COLL: which collective */
  double bytes;          /* COLL: buffer size per rank (all-gather: gathered output); P2P: message */
  int peer;              /* SEND/RECV: offset in the group's member list (+1 next, -1 previous) */
  long tag;              /* SEND/RECV: message identity, unique per (sender, receiver) pair */
  enum wl_cclass cclass; /* COMPUTE: kernel class */
  double flops;          /* COMPUTE: floating-point operations of this rank */
  double mem_bytes;      /* COMPUTE: HBM bytes read plus written */
  double duration_s;     /* COMPUTE: > 0 means a fixed duration that replaces the roofline */
  int ndeps;             /* number of dependencies */
  int dep_first;         /* index of the first one in wl_program.deps */
  int nkern;             /* COMPUTE: kernels listed (0: none, roofline) */
  int kern_first;        /* index of the first one in wl_program.kern */
};

struct wl_program {
  int nops, cap_ops;
  struct wl_op *ops; /* op id = index in this array */
  int ndeps, cap_deps;
  int *deps; /* pool of op ids; an op's deps are deps[dep_first .. +ndeps) */
  int nkern, cap_kern;
  struct wl_kernel *kern; /* pool of kernel shapes; an op's are kern[kern_first .. +nkern) */
};

struct wl_model {
  char name[64];
  int layers, hidden, heads, kv_heads, ffn, vocab, seq;
  int experts;         /* 0 for a dense model */
  int topk;            /* experts active per token (MoE) */
  int gated_mlp;       /* 1: SwiGLU (three matrices), 0: GeLU (two) */
  int tied_embeddings; /* 1: the output layer shares the input embedding's matrix (Megatron-LM's
                         * default for GPT; Llama 3 and Mixtral untie them) */
};

struct wl_layout {
  int gpus, tp, pp, vpp, dp, ep, cp;
};

struct wl_trace {
  int version;
  struct wl_model model;
  struct wl_layout layout;
  char gpu[32];      /* GPU type name, see platforms/gpu_types.h */
  int micro_batch;   /* sequences per micro-batch */
  long global_batch; /* sequences per iteration */
  int microbatches;  /* m = global / (micro * dp) */
  int recompute;     /* full activation recomputation */
  int zero1;         /* distributed optimizer: reduce-scatter + all-gather */
  int seq_parallel;  /* TP in the all-gather/reduce-scatter form */
  int grad_bytes;    /* bytes per gradient element in DP reduction (4: FP32) */
  long seed;
  char generator[128];         /* who wrote the trace and how ("sgfabric-workload 1f1b") */
  int *stage_layers;           /* [pp] transformer layers per physical stage */
  int *stage_first_layer;      /* [pp*vpp] first global layer of each virtual stage */
  int *vstage_layers;          /* [pp*vpp] layers of each virtual stage, in vs = chunk*pp+s */
  double model_flops;          /* per iteration, without recomputation (0 if unknown) */
  double hardware_flops;       /* per iteration, with recomputation (0 if unknown) */
  struct wl_program *programs; /* [pp] program of each pipeline stage */
  /* [gpus] one program per rank, or NULL: traces recorded per rank (Chakra) do not share one
   * program per stage; when set, wl_rank_program returns these and programs is unused. */
  struct wl_program *rank_programs;
};

/* Coordinates of a rank in the layout. */
struct wl_coord {
  int tp, cp, dp, ep, edp, pp;
};

/* Layout helpers. wl_rank_coord returns 0, or -1 when rank is out of range. */
int wl_rank_coord(const struct wl_trace *t, int rank, struct wl_coord *c);
int wl_coord_rank(const struct wl_trace *t, const struct wl_coord *c);
int wl_group_size(const struct wl_trace *t, enum wl_group g);
/* Writes the ordered members of rank's group g into out (at most max) and returns the group
 * size, or -1 for a bad rank or group. The rank's own index is wl_group_index. */
int wl_group_members(const struct wl_trace *t, int rank, enum wl_group g, int *out, int max);
int wl_group_index(const struct wl_trace *t, int rank, enum wl_group g);

/* The program every rank of rank's pipeline stage runs, or NULL for a bad rank. */
const struct wl_program *wl_rank_program(const struct wl_trace *t, int rank);
/* The global rank a SEND/RECV op of rank talks to, or -1. */
int wl_op_peer_rank(const struct wl_trace *t, int rank, const struct wl_op *op);
/* The op ids op depends on; *n receives their count. */
const int *wl_op_deps(const struct wl_program *p, const struct wl_op *op, int *n);

/* Construction (generator, importers). */
struct wl_trace *wl_trace_new(void);
/* Allocates the stage arrays and programs; layout must be set. Returns 0 or -1. */
int wl_trace_alloc_stages(struct wl_trace *t);
/* Appends op with the given dependencies; returns its id or -1 when out of memory. */
int wl_program_add(struct wl_program *p, const struct wl_op *op, const int *deps, int ndeps);
/* Attaches n kernel shapes to op id (replacing none: the op must have none yet). 0 or -1 when
 * out of memory. */
int wl_program_set_kernels(struct wl_program *p, int id, const struct wl_kernel *k, int n);
/* The kernels of op; *n receives their count (0 when the op lists none). */
const struct wl_kernel *wl_op_kernels(const struct wl_program *p, const struct wl_op *op, int *n);
void wl_trace_free(struct wl_trace *t);

/* Checks the layout: every size >= 1, tp*cp*dp*pp == gpus, ep divides dp. Returns 0 or -1
 * with a message in err naming the failed constraint. */
int wl_layout_check(const struct wl_layout *l, char *err, size_t errlen);

/* Writer and loaders. Loaders return NULL with "FILE:LINE: message" in err. */
int wl_trace_write(const struct wl_trace *t, FILE *out);
int wl_trace_save(const struct wl_trace *t, const char *path, char *err, size_t errlen);
struct wl_trace *wl_trace_load(const char *path, char *err, size_t errlen);
/* The same from an open stream (named path in messages); the caller closes it. */
struct wl_trace *wl_trace_read(FILE *in, const char *path, char *err, size_t errlen);
/* Opens a trace by spec: "simai:FILE" for a SimAI/AICB file, "chakra:PREFIX" for Chakra
 * execution traces PREFIX.0.et, PREFIX.1.et, ..., else the native format. */
struct wl_trace *wl_trace_open(const char *spec, char *err, size_t errlen);
/* The same, for a run on a platform of platform_gpus GPUs: the job size of a SimAI file whose
 * header has no all_gpus. */
struct wl_trace *wl_trace_open_on(const char *spec, int platform_gpus, char *err, size_t errlen);

/* Names used by the text format and in reports; *_parse return -1 for unknown names. */
const char *wl_group_name(enum wl_group g);
const char *wl_op_kind_name(enum wl_op_kind k);
const char *wl_coll_name(enum wl_coll c);
const char *wl_cclass_name(enum wl_cclass c);
const char *wl_phase_name(enum wl_phase p);
const char *wl_ew_kind_name(enum wl_ew_kind k);
int wl_ew_kind_parse(const char *s);
int wl_group_parse(const char *s);
int wl_op_kind_parse(const char *s);
int wl_coll_parse(const char *s);
int wl_cclass_parse(const char *s);
int wl_phase_parse(const char *s);

#endif
