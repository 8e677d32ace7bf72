/* Per-GPU memory (wl_memory.h) against Korthikanti et al., "Reducing Activation Recomputation in
 * Large Transformer Models" (MLSys 2023), table 2, and hand-computed model states. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "wl_gen.h"
#include "wl_memory.h"
#include "wl_model.h"
#include "cunit_main.h"

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* The paper's models (table 3): 175B (GPT-3), 530B and 1T, sequence 2048, micro-batch 1, t = 8. */
static struct wl_model paper_model(int layers, int hidden, int heads)
{
  struct wl_model m;
  memset(&m, 0, sizeof m);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = m.kv_heads = heads;
  m.ffn = 4 * hidden;
  m.vocab = 51200;
  m.seq = 2048;
  m.gated_mlp = 0;
  return m;
}

static void test_wl_memory_table2_formulas(void)
{
  const int dims[][3] = { { 96, 12288, 96 }, { 105, 20480, 128 }, { 128, 25600, 160 } };
  for (int k = 0; k < 3; k++) {
    struct wl_model m = paper_model(dims[k][0], dims[k][1], dims[k][2]);
    double s = 2048, b = 1, h = m.hidden, a = m.heads, t = 8, sbh = s * b * h;
    double none1 = sbh * (34 + 5 * a * s / h);
    double tp = sbh * (10 + 24 / t + 5 * a * s / (h * t));
    double tpsp = sbh / t * (34 + 5 * a * s / h);
    double tp_sel = sbh * (10 + 24 / t), tpsp_sel = sbh * 34 / t;
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 1, 1, 0, WL_RECOMPUTE_NONE), none1, 1e-12));
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 8, 1, 0, WL_RECOMPUTE_NONE), tp, 1e-12));
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 8, 1, 1, WL_RECOMPUTE_NONE), tpsp, 1e-12));
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 8, 1, 0, WL_RECOMPUTE_SELECTIVE), tp_sel, 1e-12));
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 8, 1, 1, WL_RECOMPUTE_SELECTIVE), tpsp_sel, 1e-12));
    CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 2048, 1, 8, 1, 0, WL_RECOMPUTE_FULL), 2 * sbh, 1e-12));
  }
  /* Hand-computed, GPT-3 175B, t = 8: sbh = 2048 x 12288 = 25,165,824 bytes.
   * TP only: 10 + 3 + 5 x 96 x 2048 / (12288 x 8) = 23 sbh = 578,813,952 bytes;
   * TP + SP + selective: 34/8 sbh = 106,954,752 bytes; x 96 layers = 10.27 GB on stage 0. */
  struct wl_model g = paper_model(96, 12288, 96);
  CU_ASSERT_DOUBLE_EQUAL(wl_mem_layer_activations(&g, 2048, 1, 8, 1, 0, WL_RECOMPUTE_NONE), 578813952.0, 0.5);
  CU_ASSERT_DOUBLE_EQUAL(wl_mem_layer_activations(&g, 2048, 1, 8, 1, 1, WL_RECOMPUTE_SELECTIVE), 106954752.0, 0.5);
  /* 530B (h 20480): 34/8 x 2048 x 20480 = 178,257,920; 1T (h 25600): 222,822,400. */
  struct wl_model m530 = paper_model(105, 20480, 128), m1t = paper_model(128, 25600, 160);
  CU_ASSERT_DOUBLE_EQUAL(wl_mem_layer_activations(&m530, 2048, 1, 8, 1, 1, WL_RECOMPUTE_SELECTIVE), 178257920.0, 0.5);
  CU_ASSERT_DOUBLE_EQUAL(wl_mem_layer_activations(&m1t, 2048, 1, 8, 1, 1, WL_RECOMPUTE_SELECTIVE), 222822400.0, 0.5);
  /* Micro-batch b scales every term; CP splits the tokens but each attends the whole sequence. */
  CU_ASSERT(close_rel(wl_mem_layer_activations(&g, 2048, 4, 8, 1, 0, WL_RECOMPUTE_NONE), 4 * 578813952.0, 1e-12));
  double cp2 = 1024.0 * 12288 * (13 + 10); /* s/cp = 1024 tokens, 5as/(ht) with the full s */
  CU_ASSERT(close_rel(wl_mem_layer_activations(&g, 2048, 1, 8, 2, 0, WL_RECOMPUTE_NONE), cp2, 1e-12));
}

static void test_wl_memory_generalised_layers(void)
{
  /* Llama 3 70B, t = 8, no SP, selective: unsharded 10, attention 4 + 4 x 1024/8192 = 4.5, gated MLP
   * 6 x 28672/8192 = 21, over t: 10 + 25.5/8 = 13.1875 sbh. */
  struct wl_model m;
  wl_model_preset("llama3-70b", &m);
  double sbh = 8192.0 * 8192;
  CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 8192, 1, 8, 1, 0, WL_RECOMPUTE_SELECTIVE), 13.1875 * sbh, 1e-12));
  /* No recomputation adds 5as/(ht) = 5 x 64 x 8192 / (8192 x 8) = 40 sbh. */
  CU_ASSERT(close_rel(wl_mem_layer_activations(&m, 8192, 1, 8, 1, 0, WL_RECOMPUTE_NONE), 53.1875 * sbh, 1e-12));
  /* Mixtral: top-2 experts double the MLP's stored tensors. */
  struct wl_model x;
  wl_model_preset("mixtral-8x7b", &x);
  double xs = 4096.0 * 4096, mlp = 6.0 * 14336 / 4096;
  CU_ASSERT(close_rel(wl_mem_layer_activations(&x, 4096, 1, 1, 1, 0, WL_RECOMPUTE_SELECTIVE),
                      xs * (10 + 4 + 4 * 1024.0 / 4096 + 2 * mlp), 1e-12));
}

static struct wl_trace *generate(const char *model, int gpus, int tp, int pp, int vpp, long global, int recompute,
                                 int zero1, int sp)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  CU_ASSERT_EQUAL_FATAL(wl_model_preset(model, &p.model), 0);
  p.layout.gpus = gpus;
  p.layout.tp = tp;
  p.layout.pp = pp;
  p.layout.vpp = vpp;
  p.global_batch = global;
  p.recompute = recompute;
  p.zero1 = zero1;
  p.seq_parallel = sp;
  char err[256];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  return t;
}

static void test_wl_memory_pipeline_inflight(void)
{
  /* GPT-3 175B, TP 8, PP 8, 1F1B with 32 micro-batches: stage s holds p - s micro-batches of its
   * 12 layers, stage 0 all 96 layers' worth (Korthikanti section 4.2.3). */
  struct wl_trace *t = generate("gpt3-175b", 64, 8, 8, 1, 32, WL_RECOMPUTE_SELECTIVE, 0, 1);
  struct wl_memory mem;
  for (int s = 0; s < 8; s++) {
    CU_ASSERT_EQUAL_FATAL(wl_memory_stage(t, s, &mem), 0);
    CU_ASSERT_DOUBLE_EQUAL(mem.inflight_layers, 12.0 * (8 - s), 1e-9);
    CU_ASSERT_EQUAL(mem.inflight_microbatches, 8 - s);
  }
  CU_ASSERT_EQUAL_FATAL(wl_memory_stage(t, 0, &mem), 0);
  CU_ASSERT_DOUBLE_EQUAL(mem.activations, 96 * 106954752.0, 1);
  wl_trace_free(t);
  /* Interleaved, v = 2: stage 0 holds L (1 + (p-1)/(p v)) = 96 x (1 + 7/16) = 138 layers. */
  t = generate("gpt3-175b", 64, 8, 8, 2, 32, WL_RECOMPUTE_SELECTIVE, 0, 1);
  CU_ASSERT_EQUAL_FATAL(wl_memory_stage(t, 0, &mem), 0);
  CU_ASSERT_DOUBLE_EQUAL(mem.inflight_layers, 96 * (1 + 7.0 / 16), 1e-9);
  wl_trace_free(t);
  /* Fewer micro-batches than stages: at most m in flight. */
  t = generate("gpt3-175b", 64, 8, 8, 1, 2, WL_RECOMPUTE_SELECTIVE, 0, 1);
  CU_ASSERT_EQUAL_FATAL(wl_memory_stage(t, 0, &mem), 0);
  CU_ASSERT_EQUAL(mem.inflight_microbatches, 2);
  wl_trace_free(t);
}

static void test_wl_memory_model_states(void)
{
  /* Llama 3 8B on one stage, TP 1: 8,030,261,248 parameters; BF16 weights 2 B, FP32 main_grad 4 B,
   * FP32 master + Adam moments 12 B (Megatron-LM docs/distrib_optimizer.md: 18 B per parameter);
   * distributed optimizer over dp = 4: 6 + 12/4 B. */
  const double P = 8030261248.0;
  struct wl_trace *t = generate("llama3-8b", 4, 1, 1, 1, 4, WL_RECOMPUTE_FULL, 0, 0);
  struct wl_memory mem;
  CU_ASSERT_EQUAL_FATAL(wl_memory_worst(t, &mem), 0);
  CU_ASSERT_DOUBLE_EQUAL(mem.weights, 2 * P, 1);
  CU_ASSERT_DOUBLE_EQUAL(mem.gradients, 4 * P, 1);
  CU_ASSERT_DOUBLE_EQUAL(mem.optimizer, 12 * P, 1);
  CU_ASSERT_DOUBLE_EQUAL(mem.capacity, 80e9, 1);
  wl_trace_free(t);
  t = generate("llama3-8b", 4, 1, 1, 1, 4, WL_RECOMPUTE_FULL, 1, 0);
  CU_ASSERT_EQUAL_FATAL(wl_memory_worst(t, &mem), 0);
  CU_ASSERT_DOUBLE_EQUAL(mem.weights + mem.gradients + mem.optimizer, (6 + 12.0 / 4) * P, 1);
  /* Full recomputation: 1 micro-batch of 32 layer inputs 2sbh, plus one layer recomputed. */
  struct wl_model m;
  wl_model_preset("llama3-8b", &m);
  double sbh = 8192.0 * 4096;
  CU_ASSERT(close_rel(mem.activations, 32 * 2 * sbh + wl_mem_layer_activations(&m, 8192, 1, 1, 1, 0, WL_RECOMPUTE_NONE),
                      1e-12));
  /* pp = 1: the first and the last stage; the embedding's dropout mask sbh, the norm's input
   * 2sbh and the FP32 logits 4 s b V. */
  CU_ASSERT(close_rel(mem.other, 3 * sbh + 4.0 * 8192 * 128256, 1e-12));
  wl_trace_free(t);
}

static void test_wl_memory_llama70b_feasibility(void)
{
  /* Llama 3 70B, seq 8192, TP 8, PP 4 on H100 (80 GB): stage 0 holds 4 micro-batches of 20 layers
   * at 53.1875 sbh each without recomputation (285.6 GB): refused. Full recomputation fits. */
  struct wl_trace *t = generate("llama3-70b", 32, 8, 4, 1, 16, WL_RECOMPUTE_NONE, 0, 0);
  struct wl_memory mem;
  CU_ASSERT_EQUAL_FATAL(wl_memory_worst(t, &mem), 0);
  CU_ASSERT_EQUAL(mem.stage, 0);
  CU_ASSERT(close_rel(mem.activations, 80 * 53.1875 * 8192.0 * 8192, 1e-12));
  CU_ASSERT(mem.total > mem.capacity);
  wl_trace_free(t);
  t = generate("llama3-70b", 32, 8, 4, 1, 16, WL_RECOMPUTE_FULL, 0, 0);
  CU_ASSERT_EQUAL_FATAL(wl_memory_worst(t, &mem), 0);
  CU_ASSERT(mem.total < mem.capacity);
  wl_trace_free(t);
}

static void test_wl_memory_unknown_without_dimensions(void)
{
  struct wl_trace *t = wl_trace_new();
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(wl_trace_alloc_stages(t), 0);
  struct wl_memory mem;
  CU_ASSERT_FALSE(wl_memory_known(t));
  CU_ASSERT_EQUAL(wl_memory_worst(t, &mem), -1);
  wl_trace_free(t);
}

static void test_wl_memory_recompute_names_and_flops(void)
{
  CU_ASSERT_EQUAL(wl_recompute_parse("none"), WL_RECOMPUTE_NONE);
  CU_ASSERT_EQUAL(wl_recompute_parse("selective"), WL_RECOMPUTE_SELECTIVE);
  CU_ASSERT_EQUAL(wl_recompute_parse("full"), WL_RECOMPUTE_FULL);
  CU_ASSERT_EQUAL(wl_recompute_parse("Full"), -1);
  CU_ASSERT_STRING_EQUAL(wl_recompute_name(WL_RECOMPUTE_SELECTIVE), "selective");
  CU_ASSERT_PTR_NULL(wl_recompute_name(3));
  /* Selective recomputation adds one attention core forward per layer: 4 s h FLOPs a token. GPT-3
   * 175B, B = 1536: 1536 x 2048 x 96 x 4 x 2048 x 12288 = 3.0399e19 FLOPs. */
  struct wl_model m;
  wl_model_preset("gpt3-175b", &m);
  double base = wl_model_flops_per_iteration(&m, 1536, 2048);
  double sel = wl_hardware_flops_per_iteration(&m, 1536, 2048, WL_RECOMPUTE_SELECTIVE);
  CU_ASSERT(close_rel(sel - base, 1536.0 * 2048 * 96 * 4 * 2048 * 12288, 1e-12));
  CU_ASSERT(sel < wl_hardware_flops_per_iteration(&m, 1536, 2048, WL_RECOMPUTE_FULL));
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "wl_memory";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "table2_formulas", test_wl_memory_table2_formulas },
  { "generalised_layers", test_wl_memory_generalised_layers },
  { "pipeline_inflight", test_wl_memory_pipeline_inflight },
  { "model_states", test_wl_memory_model_states },
  { "llama70b_feasibility", test_wl_memory_llama70b_feasibility },
  { "unknown_without_dimensions", test_wl_memory_unknown_without_dimensions },
  { "recompute_names_and_flops", test_wl_memory_recompute_names_and_flops },
  { NULL, NULL },
};
