/* Kernel-level compute model (compute/model:kernel): the time of each kernel a compute op lists
 * (trace fields gemm=, attn=, ew=; docs/workload-format.md) from its shape, per GPU type.
 *
 *   GEMM   t = 2MNK / (peak * E_gemm * q(M, N) * K / (K + k0)) + t0, at least its operands over
 *          HBM; q = tile-and-wave quantization (the cuBLAS-like tile that finishes first, smaller
 *          tiles less efficient), t0 a fixed time per GEMM; E_gemm, k0, t0 and the tile penalty
 *          fitted to XLA's measured BF16 GEMM table for H100 (sm_90)
 *   attn   t = flops / (peak * eff_attn(s, d, causal, direction)), flops as the FlashAttention
 *          papers count them (forward 4*BH*SQ*SKV*D, halved when causal; backward 2.5x forward)
 *          eff_attn = E(d, causal, dir) * s / (s + s0(d, causal, dir)), fitted per GPU to the
 *                     FlashAttention-2/3 figures, log-interpolated in d
 *   memory t = bytes / (hbm_Bps * eff_hbm)
 *   each kernel adds a launch gap.
 *
 * Every constant and its source is in docs/compute-model.md; the published kernel throughputs the
 * model is checked against are in wl_kernels_published (unit test test_wl_kernels, which also
 * prints the table of predicted against published throughput). */
#ifndef SGFABRIC_WL_KERNELS_H
#define SGFABRIC_WL_KERNELS_H

#include <stdio.h>

#include "gpu_types.h"
#include "wl_trace.h"

/* The kernel-level figures of one GPU type. */
struct wl_kernel_gpu {
  const char *name;  /* as in platforms/gpu_types.c */
  int sms;           /* streaming multiprocessors: the wave size */
  double gemm_eff;   /* E_gemm: BF16 GEMM without quantization losses, fraction of the dense peak */
  double gemm_k0;    /* K of half efficiency (main loop against per-tile prologue/epilogue) */
  double gemm_t0;    /* fixed seconds per GEMM */
  double tile_alpha; /* a tile of area A runs at (A / (256 x 128))^alpha of the largest's rate */
  double hbm_eff;    /* fraction of HBM bandwidth streaming kernels reach */
  /* Attention, forward: E and s0 at head dims 64, 128, 256, non-causal [0] and causal [1]. */
  double attn_fwd_e[2][3], attn_fwd_s0[2][3];
  double attn_bwd_e[2][3], attn_bwd_s0[2][3];
  int extrapolated; /* 1: no kernel-level data, figures carried over from another type */
};

/* The row of gpu (by name), or the H100's when the type has none. */
const struct wl_kernel_gpu *wl_kernel_gpu_find(const char *name);

/* Tile-and-wave quantization of an M x N output: the fraction of the tiles' work that is
 * useful, times the chosen tile's relative efficiency, for the best tile (in (0, 1]). */
double wl_gemm_quantization(const struct gpu_type *gpu, double m, double n);
/* Seconds of one M x N x K BF16 GEMM. */
double wl_gemm_time(const struct gpu_type *gpu, double m, double n, double k);
/* Its efficiency: 2MNK / (peak * time). */
double wl_gemm_efficiency(const struct gpu_type *gpu, double m, double n, double k);
/* FLOPs one attention kernel executes as the FlashAttention papers count them (causal: half;
 * backward: 2.5 x forward). */
double wl_attn_flops(double bh, double sq, double skv, double d, int causal, int backward);
/* Efficiency of the attention kernel at sequence length s and head dim d. */
double wl_attn_efficiency(const struct gpu_type *gpu, double s, double d, int causal, int backward);

/* Seconds of one kernel (count times), without the launch gap. backward: the op is in the
 * backward pass (attention's backward kernel). */
double wl_kernel_time(const struct gpu_type *gpu, const struct wl_kernel *k, int backward);

/* A published kernel-level measurement the model is checked against. */
struct wl_kernel_point {
  const char *gpu;
  const char *what;   /* "attn fwd d128 full s4096" ... */
  struct wl_kernel k; /* the kernel's shape */
  int backward;
  double published; /* TFLOP/s (GEMM, attention) or GB/s (memory) as published */
  double tol;       /* relative error the unit test allows for this point */
  const char *source;
};
/* The points, terminated by one whose gpu is NULL. */
const struct wl_kernel_point *wl_kernels_published(void);
/* Predicted throughput of a point in its published unit (TFLOP/s or GB/s). */
double wl_kernel_point_predicted(const struct wl_kernel_point *p);
/* Prints the markdown table "predicted vs published kernel throughput"; returns the largest
 * ratio of a point's relative error to its tolerance (<= 1: every point within). */
double wl_kernels_print_table(FILE *out);

#endif
