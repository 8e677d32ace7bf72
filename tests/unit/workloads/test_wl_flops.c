/* FLOPs per iteration, MFU and HFU against Megatron-LM's closed forms. */
#include <CUnit/Basic.h>
#include <math.h>

#include "wl_model.h"
#include "cunit_main.h"

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

static void test_wl_flops_gpt3_matches_megatron_formula(void)
{
  struct wl_model m;
  CU_ASSERT_EQUAL_FATAL(wl_model_preset("gpt3-175b", &m), 0);
  double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  double megatron = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  CU_ASSERT(close_rel(wl_model_flops_per_iteration(&m, 1536, 2048), megatron, 1e-12));
  double hw96 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CU_ASSERT(close_rel(wl_hardware_flops_per_iteration(&m, 1536, 2048, 1), hw96, 1e-12));
  CU_ASSERT(close_rel(wl_hardware_flops_per_iteration(&m, 1536, 2048, 0), megatron, 1e-15));
}

static void test_wl_flops_mfu_and_hfu_differ_by_recompute_term(void)
{
  struct wl_model m;
  wl_model_preset("gpt3-175b", &m);
  double B = 1536, s = 2048, l = 96, h = 12288, t = 20.0, peak = 312e12;
  double mf = wl_model_flops_per_iteration(&m, 1536, 2048);
  double hf = wl_hardware_flops_per_iteration(&m, 1536, 2048, 1);
  double recompute = 24 * B * s * l * h * h * (1 + s / (6 * h));
  double mfu = wl_flops_utilization(mf, t, 1024, peak);
  double hfu = wl_flops_utilization(hf, t, 1024, peak);
  CU_ASSERT(close_rel(hfu - mfu, recompute / (t * 1024 * peak), 1e-9));
  CU_ASSERT(mfu > 0.3 && mfu < 0.7);
}

static void test_wl_flops_moe_counts_topk_experts_only(void)
{
  struct wl_model moe, dense;
  wl_model_preset("mixtral-8x7b", &moe);
  dense = moe;
  dense.experts = 0;
  dense.topk = 0;
  struct wl_layer_params p;
  wl_model_layer_params(&moe, &p);
  double extra = 2.0 * (moe.topk - 1) * p.expert + 2.0 * p.router; /* per token, per layer */
  double diff = wl_model_flops_per_iteration(&moe, 8, 4096) - wl_model_flops_per_iteration(&dense, 8, 4096);
  CU_ASSERT(close_rel(diff, 3.0 * 8 * 4096 * moe.layers * extra, 1e-9));
  /* Mixtral 8x7B: 46.7B total, 12.9B active parameters (Jiang et al. 2024). */
  CU_ASSERT(close_rel(wl_model_params_total(&moe), 46.7e9, 0.01));
}

static void test_wl_flops_llama3_8b_param_count(void)
{
  struct wl_model m;
  wl_model_preset("llama3-8b", &m);
  CU_ASSERT_DOUBLE_EQUAL(wl_model_params_total(&m), 8030261248.0, 0.5);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "wl_flops";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "gpt3_matches_megatron_formula", test_wl_flops_gpt3_matches_megatron_formula },
  { "mfu_and_hfu_differ_by_recompute_term", test_wl_flops_mfu_and_hfu_differ_by_recompute_term },
  { "moe_counts_topk_experts_only", test_wl_flops_moe_counts_topk_experts_only },
  { "llama3_8b_param_count", test_wl_flops_llama3_8b_param_count },
  { NULL, NULL },
};
