/* Roofline compute model; the numbers are justified in docs/compute-model.md. */
#include "wl_compute.h"

#include "wl_kernels.h"

void wl_compute_params_init(struct wl_compute_params *p)
{
  /* GEMM: large BF16 GEMMs reach 70-80% of the dense peak in cuBLAS on H100/A100; 0.75 is a
   * modelling assumption in that range (end-to-end MFU of 40-55% reported by Megatron-LM
   * and MegaScale includes communication and bubbles, so per-kernel efficiency is higher). */
  p->eff_flops[WL_CC_GEMM] = 0.75;
  /* Attention: FlashAttention-2 reports 50-73% of the A100 peak forward and backward
   * (Dao, 2023); we take 0.55 for the combined fused kernel. */
  p->eff_flops[WL_CC_ATTN] = 0.55;
  /* Element-wise and optimizer kernels are memory bound; their FLOP efficiency only matters
   * if a trace gives them FLOPs. Modelling assumption. */
  p->eff_flops[WL_CC_ELEMWISE] = 0.10;
  p->eff_flops[WL_CC_OPTIMIZER] = 0.10;
  /* Streaming kernels reach about 80-90% of HBM bandwidth (STREAM-like copies on H100);
   * 0.8 is a modelling assumption at the low end. */
  p->eff_mem = 0.8;
  p->model = WL_COMPUTE_ROOFLINE;
  /* A few microseconds between dependent kernels launched from the host without CUDA graphs
   * (assumption; compute/launch-gap). */
  p->launch_gap_s = 4e-6;
}

double wl_compute_time(const struct wl_compute_params *p, const struct gpu_type *gpu, const struct wl_program *prog,
                       const struct wl_op *op)
{
  if (op->kind != WL_OP_COMPUTE)
    return 0;
  if (op->duration_s > 0)
    return op->duration_s;
  if (p->model == WL_COMPUTE_KERNEL && prog != NULL && op->nkern > 0) {
    int n;
    const struct wl_kernel *k = wl_op_kernels(prog, op, &n);
    double t = 0;
    for (int i = 0; i < n; i++)
      t += wl_kernel_time(gpu, &k[i], op->phase == WL_PHASE_BACKWARD) +
           p->launch_gap_s * (k[i].count > 1 ? k[i].count : 1);
    return t;
  }
  return wl_compute_roofline_time(p, gpu, op);
}

double wl_compute_roofline_time(const struct wl_compute_params *p, const struct gpu_type *gpu, const struct wl_op *op)
{
  if (op->kind != WL_OP_COMPUTE)
    return 0;
  if (op->duration_s > 0)
    return op->duration_s;
  double eff = op->cclass < WL_CC_COUNT ? p->eff_flops[op->cclass] : p->eff_flops[WL_CC_GEMM];
  double t_flops = op->flops / (gpu->bf16_dense_flops * eff);
  double t_mem = op->mem_bytes / (gpu->hbm_Bps * p->eff_mem);
  return t_flops > t_mem ? t_flops : t_mem;
}
