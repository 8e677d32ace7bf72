/* Kernel-level compute model (wl_kernels.h); sources of every constant in docs/compute-model.md. */
#include "wl_kernels.h"

#include <math.h>
#include <string.h>

/* Attention rows: {non-causal, causal} x head dim {64, 128, 256}.
 *
 * H100: least-squares fits (largest relative error per curve) of E * s / (s + s0) to the
 * FlashAttention-3 BF16/FP16 throughput of Shah et al. 2024 (arXiv:2407.08608), figure 5 (forward,
 * non-causal and causal, head dims 64/128/256, seq 512-16k) and figure 6 (backward, non-causal,
 * head dims 64/128). Backward causal and backward head dim 256 have no published curve: they
 * carry the forward's causal/non-causal ratios of E and s0 and its d256/d128 ratio of E
 * (assumption).
 *
 * A100: no per-sequence FlashAttention-2 figure on A100 was at hand: the FlashAttention-2
 * curves measured on H100 (same figures of Shah et al.: the shape of the ramp with s) scaled so
 * that the non-causal head-dim-128 forward reaches 73 % of the A100 peak, the maximum Dao 2023
 * (arXiv:2307.08691) reports on A100 (assumption for everything but that maximum). */
/* The H100's attention fits (above), which the H200 and the B200 carry over. */
#define H100_ATTENTION                                                                                                 \
  .attn_fwd_e = { { 0.520, 0.683, 0.791 }, { 0.516, 0.663, 0.700 } },                                                  \
  .attn_fwd_s0 = { { 298, 228, 286 }, { 870, 608, 686 } },                                                             \
  .attn_bwd_e = { { 0.501, 0.595, 0.689 }, { 0.497, 0.578, 0.610 } },                                                  \
  .attn_bwd_s0 = { { 402, 420, 420 }, { 1174, 1120, 1007 } }

/* Everything fitted on the H100, for the H100 and for the H200 (the same compute die). */
#define H100_FITS                                                                                                      \
  .sms = 132, .gemm_eff = 0.93, .gemm_k0 = 256, .gemm_t0 = 5e-6, .tile_alpha = 0.2, .hbm_eff = 0.92, H100_ATTENTION

static const struct wl_kernel_gpu kernel_gpus[] = {
  { .name = "A100",
    .sms = 108,
    .gemm_eff = 0.93,
    .gemm_k0 = 256,
    .gemm_t0 = 5e-6,
    .tile_alpha = 0.2,
    .hbm_eff = 0.92,
    .attn_fwd_e = { { 0.638, 0.730, 0.640 }, { 0.597, 0.678, 0.594 } },
    .attn_fwd_s0 = { { 84, 98, 86 }, { 358, 396, 232 } },
    .attn_bwd_e = { { 0.574, 0.640, 0.561 }, { 0.537, 0.594, 0.521 } },
    .attn_bwd_s0 = { { 252, 274, 274 }, { 1074, 1107, 739 } },
    .extrapolated = 0 },
  { .name = "H100", H100_FITS, .extrapolated = 0 },
  /* H200: the H100's compute die (same SMs and clocks, NVIDIA H200 data sheet), faster HBM:
   * the H100's efficiencies, extrapolated. */
  { .name = "H200", H100_FITS, .extrapolated = 1 },
  /* B200: 148 SMs (NVIDIA Blackwell architecture technical brief). GEMM: E_gemm and t0 fitted
   * to XLA's sm_100 table (29 batch-1 shapes), k0 and the tile penalty the H100's; attention and
   * memory-bound kernels: the H100's efficiencies, extrapolated (no kernel-level data). */
  { .name = "B200",
    .sms = 148,
    .gemm_eff = 0.82,
    .gemm_k0 = 256,
    .gemm_t0 = 6e-6,
    .tile_alpha = 0.2,
    .hbm_eff = 0.92,
    H100_ATTENTION,
    .extrapolated = 1 },
};

const struct wl_kernel_gpu *wl_kernel_gpu_find(const char *name)
{
  size_t n = sizeof kernel_gpus / sizeof kernel_gpus[0];
  for (size_t i = 0; name != NULL && i < n; i++)
    if (strcmp(kernel_gpus[i].name, name) == 0)
      return &kernel_gpus[i];
  return &kernel_gpus[1];
}

/* cuBLAS-like tile configurations (NVIDIA, "Matrix Multiplication Background User's Guide",
 * section 2.3: the library picks among tile sizes; smaller tiles reuse less of each load and run
 * below the large tiles' throughput, by (area / (256 x 128))^tile_alpha, fitted). */
static const struct {
  double tm, tn;
} tiles[] = { { 256, 128 }, { 128, 256 }, { 128, 128 }, { 128, 64 }, { 64, 128 }, { 64, 64 } };

double wl_gemm_quantization(const struct gpu_type *gpu, double m, double n)
{
  const struct wl_kernel_gpu *kg = wl_kernel_gpu_find(gpu->name);
  double best = 0;
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    /* Tile quantization: partial tiles cost whole tiles; wave quantization: the tiles run in
     * waves of one tile per SM, and a partial last wave costs a whole one (same guide, ch. 3). */
    double ntiles = ceil(m / tiles[i].tm) * ceil(n / tiles[i].tn);
    double waves = ceil(ntiles / kg->sms);
    double rel = pow(tiles[i].tm * tiles[i].tn / (256.0 * 128.0), kg->tile_alpha);
    double e = (m * n) / (waves * kg->sms * tiles[i].tm * tiles[i].tn) * rel;
    if (e > best)
      best = e;
  }
  return best;
}

double wl_gemm_time(const struct gpu_type *gpu, double m, double n, double k)
{
  const struct wl_kernel_gpu *kg = wl_kernel_gpu_find(gpu->name);
  double eff = kg->gemm_eff * wl_gemm_quantization(gpu, m, n) * k / (k + kg->gemm_k0);
  double t_math = 2 * m * n * k / (gpu->bf16_dense_flops * eff) + kg->gemm_t0;
  /* A skinny GEMM is bound by its BF16 operands and result over HBM. */
  double t_mem = 2 * (m * k + k * n + m * n) / (gpu->hbm_Bps * kg->hbm_eff);
  return t_math > t_mem ? t_math : t_mem;
}

double wl_gemm_efficiency(const struct gpu_type *gpu, double m, double n, double k)
{
  return 2 * m * n * k / (gpu->bf16_dense_flops * wl_gemm_time(gpu, m, n, k));
}

double wl_attn_flops(double bh, double sq, double skv, double d, int causal, int backward)
{
  double f = 4 * bh * sq * skv * d * (causal ? 0.5 : 1.0);
  return backward ? 2.5 * f : f;
}

/* Log-linear interpolation of v[3] at head dims 64, 128, 256, clamped outside. */
static double interp_d(const double v[3], double d)
{
  double x = log2(d) - 6; /* 0 at 64, 1 at 128, 2 at 256 */
  if (x <= 0)
    return v[0];
  if (x >= 2)
    return v[2];
  int i = x < 1 ? 0 : 1;
  double f = x - i;
  return v[i] * (1 - f) + v[i + 1] * f;
}

double wl_attn_efficiency(const struct gpu_type *gpu, double s, double d, int causal, int backward)
{
  const struct wl_kernel_gpu *kg = wl_kernel_gpu_find(gpu->name);
  int c = causal ? 1 : 0;
  double e = interp_d(backward ? kg->attn_bwd_e[c] : kg->attn_fwd_e[c], d);
  double s0 = interp_d(backward ? kg->attn_bwd_s0[c] : kg->attn_fwd_s0[c], d);
  return e * s / (s + s0);
}

double wl_kernel_time(const struct gpu_type *gpu, const struct wl_kernel *k, int backward)
{
  const struct wl_kernel_gpu *kg = wl_kernel_gpu_find(gpu->name);
  double t = 0;
  switch (k->type) {
  case WL_K_GEMM: t = wl_gemm_time(gpu, k->a, k->b, k->c); break;
  case WL_K_ATTN:
    t = wl_attn_flops(k->a, k->b, k->c, k->d, k->sub, backward) /
        (gpu->bf16_dense_flops * wl_attn_efficiency(gpu, k->b, k->d, k->sub, backward));
    break;
  case WL_K_MEM: t = k->a / (gpu->hbm_Bps * kg->hbm_eff); break;
  default: break;
  }
  return t * (k->count > 1 ? k->count : 1);
}

/* FlashAttention-3 paper setup: batch x sequence = 16k tokens, heads x head dim = 2048. */
#define FA(gpu, what, s, d, causal, bwd, tflops, src)                                                                  \
  {                                                                                                                    \
    gpu, what, { WL_K_ATTN, causal, 1, (16384.0 / (s)) * (2048.0 / (d)), s, s, d }, bwd, tflops, 0.08, src             \
  }
#define FA3F "Shah et al. 2024 (FlashAttention-3), fig. 5"
#define FA3B "Shah et al. 2024 (FlashAttention-3), fig. 6"

#define GEMM(gpu, n, tflops, tol, src)                                                                                 \
  {                                                                                                                    \
    gpu, "gemm bf16", { WL_K_GEMM, 0, 1, n, n, n, 0 }, 0, tflops, tol, src                                             \
  }
#define FASTCU "pranjalssh/fast.cu README, H100 SXM, cuBLAS baseline"
/* XLA's measured BF16 GEMM throughput on sm_90 (H100), batch 1: tensorflow/tensorflow,
 * third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h (kDefaultMatmulPTable). */
#define XLA(m, n, k, tflops, tol)                                                                                      \
  {                                                                                                                    \
    "H100", "gemm bf16", { WL_K_GEMM, 0, 1, m, n, k, 0 }, 0, tflops, tol, "XLA matmul_interpolator_data.h, sm_90"      \
  }

#define XLAB(m, n, k, tflops)                                                                                          \
  {                                                                                                                    \
    "B200", "gemm bf16", { WL_K_GEMM, 0, 1, m, n, k, 0 }, 0, tflops, 0.15, "XLA matmul_interpolator_data.h, sm_100"    \
  }

static const struct wl_kernel_point points[] = {
  XLA(256, 256, 256, 6.45, 0.55),
  XLA(256, 256, 512, 11.46, 0.55),
  XLA(256, 512, 256, 11.46, 0.55),
  XLA(256, 256, 1024, 19.5, 0.55),
  XLA(256, 512, 512, 21.96, 0.55),
  XLA(256, 1024, 256, 22.7, 0.55),
  XLA(512, 256, 512, 21.8, 0.55),
  XLA(512, 512, 256, 21.6, 0.55),
  XLA(1024, 256, 256, 21.96, 0.55),
  XLA(256, 256, 2048, 31.1, 0.55),
  XLA(256, 512, 1024, 39.1, 0.55),
  XLA(256, 1024, 512, 41.8, 0.55),
  XLA(256, 2048, 256, 41.8, 0.55),
  XLA(512, 256, 1024, 39.3, 0.55),
  XLA(512, 512, 512, 40.7, 0.55),
  XLA(512, 1024, 256, 43.5, 0.55),
  XLA(1024, 512, 256, 42.9, 0.55),
  XLA(2048, 256, 256, 43.6, 0.55),
  XLA(256, 256, 4096, 84.3, 0.55),
  XLA(256, 512, 2048, 62.4, 0.55),
  XLA(256, 1024, 1024, 72.5, 0.55),
  XLA(256, 2048, 512, 78.2, 0.55),
  XLA(256, 4096, 256, 78.0, 0.55),
  XLA(512, 256, 2048, 60.1, 0.55),
  XLA(512, 512, 1024, 71.2, 0.55),
  XLA(512, 1024, 512, 80.5, 0.55),
  XLA(512, 2048, 256, 79.3, 0.55),
  XLA(1024, 256, 1024, 68.3, 0.55),
  XLA(1024, 512, 512, 82.2, 0.55),
  XLA(1024, 1024, 256, 82.0, 0.55),
  XLA(2048, 256, 512, 77.3, 0.55),
  XLA(2048, 512, 256, 83.9, 0.55),
  XLA(4096, 256, 256, 82.2, 0.55),
  XLA(256, 512, 4096, 91.7, 0.55),
  XLA(256, 1024, 2048, 119.0, 0.55),
  XLA(256, 2048, 1024, 138.1, 0.55),
  XLA(256, 4096, 512, 138.1, 0.55),
  XLA(512, 256, 4096, 91.1, 0.55),
  XLA(512, 512, 2048, 114.7, 0.55),
  XLA(512, 1024, 1024, 138.7, 0.55),
  XLA(512, 2048, 512, 143.4, 0.55),
  XLA(512, 4096, 256, 134.2, 0.55),
  XLA(1024, 256, 2048, 113.2, 0.55),
  XLA(1024, 512, 1024, 141.3, 0.55),
  XLA(1024, 1024, 512, 145.6, 0.55),
  XLA(1024, 2048, 256, 139.5, 0.55),
  XLA(2048, 256, 1024, 135.8, 0.55),
  XLA(2048, 512, 512, 142.8, 0.55),
  XLA(2048, 1024, 256, 141.6, 0.55),
  XLA(4096, 256, 512, 137.2, 0.55),
  XLA(4096, 512, 256, 142.5, 0.55),
  XLA(256, 1024, 4096, 172.3, 0.25),
  XLA(256, 2048, 2048, 215.8, 0.25),
  XLA(256, 4096, 1024, 225.2, 0.25),
  XLA(512, 512, 4096, 174.5, 0.25),
  XLA(512, 1024, 2048, 216.5, 0.25),
  XLA(512, 2048, 1024, 232.6, 0.25),
  XLA(512, 4096, 512, 236.3, 0.25),
  XLA(1024, 256, 4096, 169.7, 0.25),
  XLA(1024, 512, 2048, 220.0, 0.25),
  XLA(1024, 1024, 1024, 236.3, 0.25),
  XLA(1024, 2048, 512, 237.6, 0.25),
  XLA(1024, 4096, 256, 209.7, 0.25),
  XLA(2048, 256, 2048, 216.1, 0.25),
  XLA(2048, 512, 1024, 235.9, 0.25),
  XLA(2048, 1024, 512, 238.4, 0.25),
  XLA(2048, 2048, 256, 213.0, 0.25),
  XLA(4096, 256, 1024, 217.2, 0.25),
  XLA(4096, 512, 512, 238.8, 0.25),
  XLA(4096, 1024, 256, 216.5, 0.25),
  XLA(256, 2048, 4096, 285.9, 0.25),
  XLA(256, 4096, 2048, 324.6, 0.25),
  XLA(512, 1024, 4096, 309.6, 0.25),
  XLA(512, 2048, 2048, 342.4, 0.25),
  XLA(512, 4096, 1024, 373.3, 0.25),
  XLA(1024, 512, 4096, 298.9, 0.25),
  XLA(1024, 1024, 2048, 350.0, 0.25),
  XLA(1024, 2048, 1024, 373.3, 0.25),
  XLA(1024, 4096, 512, 338.9, 0.25),
  XLA(2048, 256, 4096, 307.5, 0.25),
  XLA(2048, 512, 2048, 347.7, 0.25),
  XLA(2048, 1024, 1024, 373.3, 0.25),
  XLA(2048, 2048, 512, 345.5, 0.25),
  XLA(2048, 4096, 256, 299.3, 0.25),
  XLA(4096, 256, 2048, 304.7, 0.25),
  XLA(4096, 512, 1024, 370.8, 0.25),
  XLA(4096, 1024, 512, 343.7, 0.25),
  XLA(4096, 2048, 256, 304.0, 0.25),
  XLA(256, 4096, 4096, 412.0, 0.25),
  XLA(512, 2048, 4096, 430.5, 0.25),
  XLA(512, 4096, 2048, 522.2, 0.25),
  XLA(1024, 1024, 4096, 470.1, 0.25),
  XLA(1024, 2048, 2048, 524.3, 0.25),
  XLA(1024, 4096, 1024, 490.3, 0.25),
  XLA(2048, 512, 4096, 451.2, 0.25),
  XLA(2048, 2048, 1024, 493.9, 0.25),
  XLA(2048, 4096, 512, 450.4, 0.25),
  XLA(4096, 256, 4096, 376.2, 0.25),
  XLA(4096, 512, 2048, 521.7, 0.25),
  XLA(4096, 1024, 1024, 488.1, 0.25),
  XLA(4096, 2048, 512, 447.0, 0.25),
  XLA(4096, 4096, 256, 392.2, 0.25),
  XLA(512, 4096, 4096, 644.1, 0.25),
  XLA(1024, 2048, 4096, 653.5, 0.25),
  XLA(1024, 4096, 2048, 634.2, 0.25),
  XLA(2048, 1024, 4096, 653.1, 0.25),
  XLA(2048, 2048, 2048, 632.0, 0.25),
  XLA(2048, 4096, 1024, 594.2, 0.25),
  XLA(4096, 512, 4096, 650.0, 0.25),
  XLA(4096, 1024, 2048, 632.0, 0.25),
  XLA(4096, 2048, 1024, 593.2, 0.25),
  XLA(4096, 4096, 512, 543.1, 0.25),
  XLA(1024, 4096, 4096, 738.5, 0.25),
  XLA(2048, 2048, 4096, 738.0, 0.25),
  XLA(2048, 4096, 2048, 715.4, 0.25),
  XLA(4096, 1024, 4096, 738.5, 0.25),
  XLA(4096, 2048, 2048, 716.1, 0.25),
  XLA(4096, 4096, 1024, 677.4, 0.25),
  XLA(2048, 4096, 4096, 753.6, 0.25),
  XLA(4096, 2048, 4096, 758.4, 0.25),
  XLA(4096, 4096, 2048, 738.7, 0.25),
  XLA(4096, 4096, 4096, 783.3, 0.25),
  XLAB(256, 512, 256, 9.2),
  XLAB(256, 512, 512, 20.8),
  XLAB(256, 1024, 256, 23.2),
  XLAB(1024, 256, 256, 22.5),
  XLAB(256, 2048, 256, 43.2),
  XLAB(512, 256, 1024, 40.4),
  XLAB(256, 512, 4096, 103.4),
  XLAB(512, 512, 2048, 133.2),
  XLAB(4096, 512, 256, 126.4),
  XLAB(256, 1024, 4096, 196.2),
  XLAB(256, 2048, 2048, 239.2),
  XLAB(512, 1024, 2048, 258.5),
  XLAB(1024, 256, 4096, 195.6),
  XLAB(2048, 256, 2048, 239.2),
  XLAB(2048, 1024, 512, 271.7),
  XLAB(4096, 1024, 256, 241.3),
  XLAB(512, 2048, 2048, 454.9),
  XLAB(1024, 2048, 1024, 465.9),
  XLAB(1024, 4096, 512, 437.8),
  XLAB(2048, 256, 4096, 369.7),
  XLAB(2048, 1024, 1024, 466.7),
  XLAB(2048, 2048, 512, 434.2),
  XLAB(2048, 4096, 256, 368.2),
  XLAB(4096, 2048, 256, 371.8),
  XLAB(2048, 4096, 512, 620.5),
  XLAB(4096, 512, 4096, 941.7),
  XLAB(2048, 2048, 4096, 1185.8),
  XLAB(4096, 2048, 2048, 1141.6),
  XLAB(4096, 4096, 2048, 1270.1),
  GEMM("H100", 4096, 716, 0.16, FASTCU),
  GEMM("H100", 6144, 741.1, 0.16, FASTCU),
  GEMM("H100", 8192, 797.8, 0.16, FASTCU),
  { "H100",
    "memory: device sum of 2^30 floats (CUB)",
    { WL_K_MEM, WL_EW_OTHER, 1, 4294967296.0, 0, 0, 0 },
    0,
    3193,
    0.08,
    "pranjalssh/fast.cu README, H100 sum reduction, cub library" },
  FA("H100", "attn fwd d64 full", 512, 64, 0, 0, 333, FA3F),
  FA("H100", "attn fwd d64 full", 1024, 64, 0, 0, 392, FA3F),
  FA("H100", "attn fwd d64 full", 2048, 64, 0, 0, 460, FA3F),
  FA("H100", "attn fwd d64 full", 4096, 64, 0, 0, 476, FA3F),
  FA("H100", "attn fwd d64 full", 8192, 64, 0, 0, 496, FA3F),
  FA("H100", "attn fwd d64 full", 16384, 64, 0, 0, 497, FA3F),
  FA("H100", "attn fwd d128 full", 512, 128, 0, 0, 467, FA3F),
  FA("H100", "attn fwd d128 full", 1024, 128, 0, 0, 565, FA3F),
  FA("H100", "attn fwd d128 full", 2048, 128, 0, 0, 625, FA3F),
  FA("H100", "attn fwd d128 full", 4096, 128, 0, 0, 638, FA3F),
  FA("H100", "attn fwd d128 full", 8192, 128, 0, 0, 646, FA3F),
  FA("H100", "attn fwd d128 full", 16384, 128, 0, 0, 648, FA3F),
  FA("H100", "attn fwd d256 full", 512, 256, 0, 0, 482, FA3F),
  FA("H100", "attn fwd d256 full", 1024, 256, 0, 0, 639, FA3F),
  FA("H100", "attn fwd d256 full", 2048, 256, 0, 0, 707, FA3F),
  FA("H100", "attn fwd d256 full", 4096, 256, 0, 0, 736, FA3F),
  FA("H100", "attn fwd d256 full", 8192, 256, 0, 0, 746, FA3F),
  FA("H100", "attn fwd d256 full", 16384, 256, 0, 0, 756, FA3F),
  FA("H100", "attn fwd d64 causal", 512, 64, 1, 0, 197, FA3F),
  FA("H100", "attn fwd d64 causal", 1024, 64, 1, 0, 265, FA3F),
  FA("H100", "attn fwd d64 causal", 2048, 64, 1, 0, 371, FA3F),
  FA("H100", "attn fwd d64 causal", 4096, 64, 1, 0, 420, FA3F),
  FA("H100", "attn fwd d64 causal", 8192, 64, 1, 0, 460, FA3F),
  FA("H100", "attn fwd d64 causal", 16384, 64, 1, 0, 473, FA3F),
  FA("H100", "attn fwd d128 causal", 512, 128, 1, 0, 292, FA3F),
  FA("H100", "attn fwd d128 causal", 1024, 128, 1, 0, 423, FA3F),
  FA("H100", "attn fwd d128 causal", 2048, 128, 1, 0, 521, FA3F),
  FA("H100", "attn fwd d128 causal", 4096, 128, 1, 0, 579, FA3F),
  FA("H100", "attn fwd d128 causal", 8192, 128, 1, 0, 602, FA3F),
  FA("H100", "attn fwd d128 causal", 16384, 128, 1, 0, 616, FA3F),
  FA("H100", "attn fwd d256 causal", 512, 256, 1, 0, 286, FA3F),
  FA("H100", "attn fwd d256 causal", 1024, 256, 1, 0, 427, FA3F),
  FA("H100", "attn fwd d256 causal", 2048, 256, 1, 0, 537, FA3F),
  FA("H100", "attn fwd d256 causal", 4096, 256, 1, 0, 612, FA3F),
  FA("H100", "attn fwd d256 causal", 8192, 256, 1, 0, 628, FA3F),
  FA("H100", "attn fwd d256 causal", 16384, 256, 1, 0, 642, FA3F),
  FA("H100", "attn bwd d64 full", 512, 64, 0, 1, 272, FA3B),
  FA("H100", "attn bwd d64 full", 1024, 64, 0, 1, 363, FA3B),
  FA("H100", "attn bwd d64 full", 2048, 64, 0, 1, 422, FA3B),
  FA("H100", "attn bwd d64 full", 4096, 64, 0, 1, 453, FA3B),
  FA("H100", "attn bwd d64 full", 8192, 64, 0, 1, 472, FA3B),
  FA("H100", "attn bwd d64 full", 16384, 64, 0, 1, 474, FA3B),
  FA("H100", "attn bwd d128 full", 512, 128, 0, 1, 316, FA3B),
  FA("H100", "attn bwd d128 full", 1024, 128, 0, 1, 424, FA3B),
  FA("H100", "attn bwd d128 full", 2048, 128, 0, 1, 501, FA3B),
  FA("H100", "attn bwd d128 full", 4096, 128, 0, 1, 542, FA3B),
  FA("H100", "attn bwd d128 full", 8192, 128, 0, 1, 559, FA3B),
  FA("H100", "attn bwd d128 full", 16384, 128, 0, 1, 561, FA3B),
  FA("A100", "attn fwd d128 full (maximum)", 16384, 128, 0, 0, 230,
     "Dao 2023 (FlashAttention-2): up to 230 TFLOP/s, 73 % of the A100 peak"),
  { NULL, NULL, { 0, 0, 0, 0, 0, 0, 0 }, 0, 0, 0, NULL },
};

const struct wl_kernel_point *wl_kernels_published(void) { return points; }

double wl_kernel_point_predicted(const struct wl_kernel_point *p)
{
  const struct gpu_type *gpu = gpu_type_find(p->gpu);
  double t = wl_kernel_time(gpu, &p->k, p->backward);
  switch (p->k.type) {
  case WL_K_GEMM: return 2 * p->k.a * p->k.b * p->k.c / t / 1e12;
  case WL_K_ATTN: return wl_attn_flops(p->k.a, p->k.b, p->k.c, p->k.d, p->k.sub, p->backward) / t / 1e12;
  default: return p->k.a / t / 1e9;
  }
}

double wl_kernels_print_table(FILE *out)
{
  double worst = 0;
  fprintf(out, "| GPU | kernel | shape | published | predicted | error | tolerance | source |\n");
  fprintf(out, "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n");
  for (const struct wl_kernel_point *p = points; p->gpu != NULL; p++) {
    double pred = wl_kernel_point_predicted(p), err = pred / p->published - 1;
    if (fabs(err) / p->tol > worst)
      worst = fabs(err) / p->tol;
    char shape[64];
    if (p->k.type == WL_K_ATTN)
      snprintf(shape, sizeof shape, "s=%.0f", p->k.b);
    else if (p->k.type == WL_K_GEMM)
      snprintf(shape, sizeof shape, "%.0fx%.0fx%.0f", p->k.a, p->k.b, p->k.c);
    else
      snprintf(shape, sizeof shape, "%.0f MiB", p->k.a / 1048576);
    fprintf(out, "| %s | %s | %s | %.0f %s | %.0f | %+.1f %% | %.0f %% | %s |\n", p->gpu, p->what, shape, p->published,
            p->k.type == WL_K_MEM ? "GB/s" : "TFLOP/s", pred, 100 * err, 100 * p->tol, p->source);
  }
  return worst;
}
