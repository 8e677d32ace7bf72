/* Compute model: the time of each compute op, by one of two models (parameter compute/model):
 *
 *   roofline (default): time = max(flops / (peak_bf16 * eff[class]), mem_bytes / (hbm_Bps * eff_mem))
 *   kernel: an op that lists its kernels' shapes (trace fields gemm=, attn=, ew=) takes the sum of
 *           their times by the kernel-level model (wl_kernels.h), plus one launch gap per kernel;
 *           an op without shapes is timed by the roofline as before.
 *
 * An op with a fixed duration (SimAI import, "time=") takes that duration. The factors and
 * their sources are in docs/compute-model.md; peaks and HBM bandwidth come from
 * platforms/gpu_types.h.
 */
#ifndef SGFABRIC_WL_COMPUTE_H
#define SGFABRIC_WL_COMPUTE_H

#include "gpu_types.h"
#include "wl_trace.h"

enum wl_compute_model { WL_COMPUTE_ROOFLINE, WL_COMPUTE_KERNEL };

struct wl_compute_params {
  double eff_flops[WL_CC_COUNT]; /* fraction of the BF16 dense peak each class reaches */
  double eff_mem;                /* fraction of HBM bandwidth streaming kernels reach */
  enum wl_compute_model model;   /* compute/model */
  double launch_gap_s;           /* compute/launch-gap: idle time per kernel (kernel model) */
};

/* The documented defaults (roofline). */
void wl_compute_params_init(struct wl_compute_params *p);
/* Seconds the op of program prog takes on gpu; 0 for non-compute ops. prog may be NULL for an op
 * without kernel shapes. */
double wl_compute_time(const struct wl_compute_params *p, const struct gpu_type *gpu, const struct wl_program *prog,
                       const struct wl_op *op);
/* The roofline time of the op, whatever the model. */
double wl_compute_roofline_time(const struct wl_compute_params *p, const struct gpu_type *gpu, const struct wl_op *op);

#endif
