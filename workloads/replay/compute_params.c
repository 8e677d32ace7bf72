/* Compute model parameters (compute_params.h). */
#include "compute_params.h"

const struct param_def compute_param_table[] = {
  { "compute/model", PARAM_ENUM, UNIT_NONE, "kernel", 0, 0, "roofline|kernel",
    "How compute ops are timed: roofline (one efficiency per kernel class) or kernel (each kernel's "
    "shape the trace lists: GEMM, attention, memory-bound; ops without shapes by the roofline)",
    "docs/compute-model.md: kernel model fitted to kernel-level measurements (FlashAttention-2/3)" },
  { "compute/launch-gap", PARAM_REAL, UNIT_SECONDS, "4us", 0, 1e-3, NULL,
    "Idle time added per kernel by the kernel model (host launch overhead between kernels)",
    "assumption: a few microseconds per kernel launched without CUDA graphs" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void compute_register_params(void) { fab_param_register(compute_param_table); }

void compute_params_from(const struct param_set *set, struct wl_compute_params *p)
{
  wl_compute_params_init(p);
  p->model = fab_param_get_choice(set, "compute/model") == 1 ? WL_COMPUTE_KERNEL : WL_COMPUTE_ROOFLINE;
  p->launch_gap_s = fab_param_get(set, "compute/launch-gap");
}
