/* Compute model: a roofline per operation with an efficiency factor per kernel class.
 *
 *   time = max(flops / (peak_bf16 * eff[class]), mem_bytes / (hbm_Bps * eff_mem))
 *
 * An op with a fixed duration (SimAI import, "time=") takes that duration. The factors and
 * their sources are in docs/compute-model.md; peaks and HBM bandwidth come from
 * platforms/gpu_types.h.
 */
#ifndef SGFABRIC_WL_COMPUTE_H
#define SGFABRIC_WL_COMPUTE_H

#include "gpu_types.h"
#include "wl_trace.h"

struct wl_compute_params {
  double eff_flops[WL_CC_COUNT]; /* fraction of the BF16 dense peak each class reaches */
  double eff_mem;                /* fraction of HBM bandwidth streaming kernels reach */
};

/* The documented defaults. */
void wl_compute_params_init(struct wl_compute_params *p);
/* Seconds the op takes on gpu; 0 for non-compute ops. */
double wl_compute_time(const struct wl_compute_params *p, const struct gpu_type *gpu,
                       const struct wl_op *op);

#endif
