/* Trace generator: Megatron-style TP/PP/DP/EP/CP training iterations as SPMD programs.
 *
 * Pipeline schedules follow Megatron-LM's schedules.py: 1F1B (PipeDream-Flush, Narayanan et
 * al. 2021, section 2.2.1) with p-s-1 warm-up forwards at stage s, and the interleaved
 * schedule with v model chunks per stage (section 2.2.2), which needs m divisible by p.
 */
#ifndef SGFABRIC_WL_GEN_H
#define SGFABRIC_WL_GEN_H

#include <stddef.h>

#include "wl_trace.h"

struct wl_gen_params {
  struct wl_model model;
  struct wl_layout layout; /* dp is derived: gpus / (tp*pp*cp) */
  char gpu[32];
  int seq;                  /* tokens per sequence (default: the model's) */
  int micro_batch;          /* sequences per micro-batch */
  long global_batch;        /* sequences per iteration */
  int recompute;            /* enum wl_recompute: none, full, selective (attention core only) */
  int zero1;                /* distributed optimizer (ZeRO-1) */
  int overlap_grad_reduce;  /* gradient buckets reduced during the backward (1), or after it */
  int overlap_param_gather; /* ZeRO-1: parameters all-gathered during the forward (1), or after
                              * the optimizer step */
  int tied_embeddings;      /* -1: the model's; 0 or 1 overrides it */
  int grad_norm;            /* gradient norm for clipping: a kernel and a small all-reduce */
  int seq_parallel;         /* TP communication as all-gather/reduce-scatter */
  int tp_comm_overlap;      /* sequence-parallel TP collectives pipelined with their GEMMs */
  int cp_comm_p2p;          /* context parallelism as ring attention (1) or gather/scatter (0) */
  int grad_bytes;           /* gradient element size in the DP reduction: 4 (FP32) or 2 */
  double bucket_params;     /* gradient bucket size in elements */
  long seed;
};

/* Defaults: micro 1, global = 4 * pp micro-batches when unset (0), FP32 gradient reduction,
 * 40M-element buckets (Megatron-Core DDP), gradient reduction overlapped with the backward,
 * parameter all-gather not overlapped, TP communication not overlapped with GEMMs, context
 * parallelism as ring attention (p2p), the model's embedding tying, gradient norm on, seed 1. */
void wl_gen_params_init(struct wl_gen_params *p);

/* Derives dp and checks every constraint; returns 0 or -1 with the failed one in err. */
int wl_gen_check(struct wl_gen_params *p, char *err, size_t errlen);

/* Spreads layers over pp*vpp virtual stages (vs = chunk*pp + stage). Evenly when possible;
 * otherwise the first and last virtual stages, which carry the embedding and the output
 * layer, get one layer fewer (Llama 3: 126 layers on 16 stages = 7, 14 x 8, 7). Returns 0,
 * or -1 when a stage would get no layer. */
int wl_gen_balance(int layers, int pp, int vpp, int *vstage_layers, char *err, size_t errlen);

/* One step of a pipeline schedule. */
struct wl_sched_step {
  int is_backward;
  int micro;
  int chunk;
};
/* Fills out (room for 2*m*v steps) with the order stage s runs; returns the step count. */
int wl_schedule_1f1b(int p, int s, int m, struct wl_sched_step *out);
int wl_schedule_interleaved(int p, int s, int m, int v, struct wl_sched_step *out);

/* Builds the trace; NULL with a message in err. */
struct wl_trace *wl_generate(struct wl_gen_params *p, char *err, size_t errlen);

/* The `sgfabric workload` command; argv[0] is "workload". Returns the exit status. */
int workload_cli_main(int argc, char **argv);

#endif
