/* Roofline compute model; the numbers are justified in docs/compute-model.md. */
#include "wl_compute.h"

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
}

double wl_compute_time(const struct wl_compute_params *p, const struct gpu_type *gpu,
                       const struct wl_op *op)
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
