/* Generator: layout refusals, stage balancing, pipeline schedules, TP and DP volumes. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen.h"
#include "wl_model.h"
#include "cunit_main.h"

static struct wl_gen_params params(const char *model, int gpus, int tp, int pp)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  wl_model_preset(model, &p.model);
  p.layout.gpus = gpus;
  p.layout.tp = tp;
  p.layout.pp = pp;
  return p;
}

static void expect_refusal(struct wl_gen_params p, const char *needle)
{
  char err[512] = "";
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NULL(t);
  if (strstr(err, needle) == NULL)
    fprintf(stderr, "\nexpected '%s' in refusal, got '%s'\n", needle, err);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));
  wl_trace_free(t);
}

static void test_wl_gen_refuses_impossible_layouts(void)
{
  expect_refusal(params("llama3-8b", 12, 8, 1), "not divisible by tp*pp*cp");
  expect_refusal(params("gpt3-175b", 80, 80, 1), "heads=96 not divisible by tp=80");
  expect_refusal(params("llama3-8b", 16, 16, 1), "kv-heads=8 not divisible by tp=16");
  struct wl_gen_params p = params("llama3-8b", 16, 2, 2);
  p.global_batch = 10;
  expect_refusal(p, "global-batch=10 not divisible by micro-batch*dp");
  p = params("mixtral-8x7b", 48, 1, 1);
  p.layout.ep = 3;
  expect_refusal(p, "ep=3 does not divide experts=8");
  p = params("mixtral-8x7b", 16, 2, 1);
  p.layout.ep = 16;
  expect_refusal(p, "ep=16 does not divide dp=8");
  p = params("llama3-8b", 8, 1, 1);
  p.layout.ep = 2;
  expect_refusal(p, "not a mixture-of-experts model");
  p = params("llama3-8b", 8, 1, 4);
  p.model.layers = 3;
  expect_refusal(p, "cannot be balanced over pp*vpp");
  p = params("llama3-8b", 8, 1, 4);
  p.layout.vpp = 2;
  p.global_batch = 6;
  expect_refusal(p, "divisible by pp=4");
  p = params("llama3-8b", 8, 1, 1);
  p.layout.cp = 3;
  expect_refusal(p, "not divisible by tp*pp*cp");
}

static void test_wl_gen_405b_on_16_stages_is_balanced(void)
{
  int vl[16];
  char err[256];
  CU_ASSERT_EQUAL_FATAL(wl_gen_balance(126, 16, 1, vl, err, sizeof err), 0);
  int sum = 0;
  for (int i = 0; i < 16; i++) {
    sum += vl[i];
    if (i > 0 && i < 15)
      CU_ASSERT_EQUAL(vl[i], 8);
  }
  CU_ASSERT_EQUAL(vl[0], 7);
  CU_ASSERT_EQUAL(vl[15], 7);
  CU_ASSERT_EQUAL(sum, 126);
  CU_ASSERT_EQUAL(wl_gen_balance(96, 8, 1, vl, err, sizeof err), 0);
  for (int i = 0; i < 8; i++)
    CU_ASSERT_EQUAL(vl[i], 12);
}

static void test_wl_gen_cli_records_405b_balance(void)
{
  const char *out = WL_TEST_BIN_DIR "/llama405b.trace";
  char *argv[] = { "workload", "--model", "llama3-405b", "--gpus",      "256",
                   "--tp",     "8",       "--pp",        "16",          "--global-batch",
                   "32",       "--gpu",   "H100",        "--recompute", "--sequence-parallel",
                   "--seed",   "7",       "-o",          (char *)out };
  /* --sequence-parallel: without it the full-recompute checkpoints of stage 1's 15 micro-batches
   * in flight take 97 GB with the model states (wl_memory.h), more than an H100 has. */
  CU_ASSERT_EQUAL_FATAL(workload_cli_main(19, argv), 0);
  char err[512];
  struct wl_trace *t = wl_trace_load(out, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->layout.dp, 2);
  CU_ASSERT_EQUAL(t->microbatches, 16);
  CU_ASSERT_EQUAL(t->stage_layers[0], 7);
  CU_ASSERT_EQUAL(t->stage_layers[15], 7);
  CU_ASSERT_EQUAL(t->stage_layers[7], 8);
  CU_ASSERT_EQUAL(t->seed, 7);
  CU_ASSERT_EQUAL(t->stage_first_layer[15], 119);
  wl_trace_free(t);
  char *bad[] = { "workload", "--model", "llama3-405b", "--gpus", "100", "--tp", "8", "--pp", "16", "-o", (char *)out };
  CU_ASSERT_NOT_EQUAL(workload_cli_main(11, bad), 0);
}

static void test_wl_gen_1f1b_warmup_steady_cooldown(void)
{
  int p = 4, m = 8;
  struct wl_sched_step st[16];
  for (int s = 0; s < p; s++) {
    CU_ASSERT_EQUAL_FATAL(wl_schedule_1f1b(p, s, m, st), 2 * m);
    int w = p - s - 1, i = 0;
    for (; i < w; i++)
      CU_ASSERT(!st[i].is_backward && st[i].micro == i);
    for (int k = 0; k < m - w; k++, i += 2) {
      CU_ASSERT(!st[i].is_backward && st[i].micro == w + k);
      CU_ASSERT(st[i + 1].is_backward && st[i + 1].micro == k);
    }
    for (int k = m - w; k < m; k++, i++)
      CU_ASSERT(st[i].is_backward && st[i].micro == k);
  }
  CU_ASSERT_EQUAL(wl_schedule_1f1b(8, 0, 3, st), 6);
  CU_ASSERT(!st[2].is_backward && st[3].is_backward);
}

/* The generated program follows the schedule: at stage s, p - s forward micro-batches start
 * before the first backward. */
static void test_wl_gen_program_follows_1f1b(void)
{
  struct wl_gen_params p = params("llama3-8b", 4, 1, 4);
  p.global_batch = 8;
  char err[256];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  for (int s = 0; s < 4; s++) {
    const struct wl_program *pr = &t->programs[s];
    int max_fwd = -1, i = 0;
    for (; i < pr->nops && pr->ops[i].phase != WL_PHASE_BACKWARD; i++)
      if (pr->ops[i].micro > max_fwd)
        max_fwd = pr->ops[i].micro;
    CU_ASSERT_EQUAL(max_fwd + 1, 4 - s);
    CU_ASSERT_EQUAL(pr->ops[i].micro, 0);
    if (s < 3)
      CU_ASSERT_EQUAL(pr->ops[i].kind, WL_OP_RECV);
  }
  wl_trace_free(t);
}

static void test_wl_gen_interleaved_has_v_chunks(void)
{
  struct wl_sched_step st[64];
  int p = 2, v = 3, m = 4;
  for (int s = 0; s < p; s++) {
    int n = wl_schedule_interleaved(p, s, m, v, st), seen[2][4][3] = { { { 0 } } };
    CU_ASSERT_EQUAL_FATAL(n, 2 * m * v);
    for (int i = 0; i < n; i++)
      seen[st[i].is_backward][st[i].micro][st[i].chunk]++;
    for (int b = 0; b < 2; b++)
      for (int mb = 0; mb < m; mb++)
        for (int c = 0; c < v; c++)
          CU_ASSERT_EQUAL(seen[b][mb][c], 1);
    CU_ASSERT(!st[0].is_backward && st[0].chunk == 0 && st[2].chunk == 1);
  }
  struct wl_gen_params gp = params("llama3-8b", 8, 1, 4);
  gp.layout.vpp = 2;
  gp.global_batch = 8;
  char err[256];
  struct wl_trace *t = wl_generate(&gp, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  for (int s = 0; s < 4; s++) {
    int chunks[2] = { 0, 0 };
    for (int i = 0; i < t->programs[s].nops; i++)
      chunks[t->programs[s].ops[i].chunk]++;
    CU_ASSERT(chunks[0] > 0 && chunks[1] > 0);
    CU_ASSERT_EQUAL(t->stage_layers[s], 8);
  }
  CU_ASSERT_EQUAL(t->stage_first_layer[4], 16); /* chunk 1 of stage 0 */
  wl_trace_free(t);
}

static void test_wl_gen_tp_allreduce_bytes_per_layer(void)
{
  for (int b = 1; b <= 2; b++) {
    struct wl_gen_params p = params("llama3-8b", 8, 8, 1);
    p.micro_batch = b;
    p.global_batch = 2 * b;
    char err[256];
    struct wl_trace *t = wl_generate(&p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int fwd[32] = { 0 }, bwd[32] = { 0 };
    const struct wl_program *pr = &t->programs[0];
    for (int i = 0; i < pr->nops; i++) {
      const struct wl_op *o = &pr->ops[i];
      if (o->kind != WL_OP_COLL || o->group != WL_GROUP_TP || o->micro != 0 || o->layer < 0)
        continue;
      CU_ASSERT_EQUAL(o->coll, WL_COLL_ALLREDUCE);
      CU_ASSERT_DOUBLE_EQUAL(o->bytes, b * 8192.0 * 4096 * 2, 0.5);
      (o->phase == WL_PHASE_FORWARD ? fwd : bwd)[o->layer]++;
    }
    for (int l = 0; l < 32; l++) {
      CU_ASSERT_EQUAL(fwd[l], 2);
      CU_ASSERT_EQUAL(bwd[l], 2);
    }
    wl_trace_free(t);
  }
}

static double grad_bytes_of(const struct wl_program *pr)
{
  double sum = 0;
  for (int i = 0; i < pr->nops; i++) {
    const struct wl_op *o = &pr->ops[i];
    if (o->kind == WL_OP_COLL && o->phase == WL_PHASE_BACKWARD &&
        (o->group == WL_GROUP_DP || o->group == WL_GROUP_DP_EP)) {
      CU_ASSERT(o->is_async);
      CU_ASSERT_EQUAL(o->micro, 7);
      sum += o->bytes;
    }
  }
  return sum;
}

static void test_wl_gen_dp_gradient_bytes_equal_stage_params(void)
{
  /* Llama 3 8B, tp=1, pp=2, dp=2, FP32 gradient reduction (4 bytes per parameter). */
  struct wl_gen_params p = params("llama3-8b", 4, 1, 2);
  p.global_batch = 16;
  char err[256];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  double layer = 41943040.0 + 176160768.0 + 8192.0, embed = 128256.0 * 4096;
  CU_ASSERT_DOUBLE_EQUAL(grad_bytes_of(&t->programs[0]), 4 * (16 * layer + embed), 1);
  CU_ASSERT_DOUBLE_EQUAL(grad_bytes_of(&t->programs[1]), 4 * (16 * layer + embed + 4096), 1);
  CU_ASSERT_DOUBLE_EQUAL(grad_bytes_of(&t->programs[0]) + grad_bytes_of(&t->programs[1]), 4 * 8030261248.0, 1);
  wl_trace_free(t);
  p = params("llama3-8b", 4, 1, 2);
  p.global_batch = 16;
  p.grad_bytes = 2;
  p.zero1 = 1;
  t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_DOUBLE_EQUAL(grad_bytes_of(&t->programs[0]), 2 * (16 * layer + embed), 1);
  int rs = 0, ag = 0;
  for (int i = 0; i < t->programs[0].nops; i++) {
    const struct wl_op *o = &t->programs[0].ops[i];
    rs += o->group == WL_GROUP_DP && o->coll == WL_COLL_REDUCE_SCATTER;
    ag += o->group == WL_GROUP_DP && o->coll == WL_COLL_ALLGATHER;
  }
  CU_ASSERT(rs > 1);
  CU_ASSERT_EQUAL(ag, 1);
  wl_trace_free(t);
}

/* Summed over every rank, the compute FLOPs of the programs are the hardware FLOPs. */
static void check_flops_sum(struct wl_gen_params p)
{
  char err[256];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  double sum = 0, ranks_per_stage = (double)t->layout.gpus / t->layout.pp;
  for (int s = 0; s < t->layout.pp; s++)
    for (int i = 0; i < t->programs[s].nops; i++)
      sum += t->programs[s].ops[i].flops * ranks_per_stage;
  CU_ASSERT(fabs(sum - t->hardware_flops) <= 1e-9 * t->hardware_flops);
  wl_trace_free(t);
}

static void test_wl_gen_program_flops_sum_to_hardware_flops(void)
{
  struct wl_gen_params p = params("llama3-8b", 16, 2, 2);
  p.layout.cp = 2;
  p.recompute = 1;
  p.global_batch = 16;
  check_flops_sum(p);
  p = params("mixtral-8x7b", 16, 2, 2);
  p.layout.ep = 4;
  p.seq_parallel = 1;
  p.global_batch = 8;
  check_flops_sum(p);
}

static void test_wl_gen_moe_and_cp_collectives(void)
{
  struct wl_gen_params p = params("mixtral-8x7b", 16, 1, 1);
  p.layout.ep = 4;
  p.layout.cp = 2;
  p.global_batch = 8;
  char err[256];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  int a2a_fwd = 0, cp_ag = 0, dpep = 0;
  const struct wl_program *pr = &t->programs[0];
  for (int i = 0; i < pr->nops; i++) {
    const struct wl_op *o = &pr->ops[i];
    if (o->layer == 0 && o->micro == 0 && o->phase == WL_PHASE_FORWARD) {
      a2a_fwd += o->coll == WL_COLL_ALLTOALL && o->group == WL_GROUP_EP;
      cp_ag += o->coll == WL_COLL_ALLGATHER && o->group == WL_GROUP_CP;
    }
    dpep += o->group == WL_GROUP_DP_EP;
  }
  CU_ASSERT_EQUAL(a2a_fwd, 2);
  CU_ASSERT_EQUAL(cp_ag, 1);
  CU_ASSERT(dpep > 0);
  wl_trace_free(t);
}

/* Counts of a program's ops matching kind, collective, group and phase (-1: any). */
struct op_count {
  int n, async;
  double bytes, mem;
  int first, last; /* op ids of the first and last match, -1 if none */
};
static struct op_count count_ops(const struct wl_program *pr, int kind, int coll, int group, int phase, int cclass)
{
  struct op_count c = { 0, 0, 0, 0, -1, -1 };
  for (int i = 0; i < pr->nops; i++) {
    const struct wl_op *o = &pr->ops[i];
    if ((kind >= 0 && (int)o->kind != kind) || (coll >= 0 && (int)o->coll != coll) ||
        (group >= 0 && (int)o->group != group) || (phase >= 0 && (int)o->phase != phase) ||
        (cclass >= 0 && (o->kind != WL_OP_COMPUTE || (int)o->cclass != cclass)))
      continue;
    c.n++;
    c.async += o->is_async;
    c.bytes += o->bytes;
    c.mem += o->mem_bytes;
    if (c.first < 0)
      c.first = i;
    c.last = i;
  }
  return c;
}

static struct wl_trace *gen_ok(struct wl_gen_params p)
{
  char err[512] = "";
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  if (t == NULL)
    fprintf(stderr, "\nrefused: %s\n", err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  return t;
}

static void test_wl_gen_selective_recompute_reruns_attention_core(void)
{
  struct wl_gen_params p = params("llama3-8b", 16, 2, 2);
  p.global_batch = 16;
  p.recompute = WL_RECOMPUTE_SELECTIVE;
  struct wl_trace *t = gen_ok(p);
  const struct wl_program *pr = &t->programs[0];
  /* One attention-core kernel per layer and micro-batch, nothing else, in the recompute phase. */
  struct op_count rc = count_ops(pr, -1, -1, -1, WL_PHASE_RECOMPUTE, -1);
  struct op_count attn = count_ops(pr, WL_OP_COMPUTE, -1, -1, WL_PHASE_RECOMPUTE, WL_CC_ATTN);
  CU_ASSERT_EQUAL(rc.n, 16 * t->microbatches);
  CU_ASSERT_EQUAL(attn.n, rc.n);
  CU_ASSERT(fabs(t->hardware_flops - wl_hardware_flops_per_iteration(&p.model, 16, 8192, WL_RECOMPUTE_SELECTIVE)) <
            1e-9 * t->hardware_flops);
  wl_trace_free(t);
  check_flops_sum(p);
  /* Full recomputation re-runs the whole layer, collectives included. */
  p.recompute = WL_RECOMPUTE_FULL;
  t = gen_ok(p);
  CU_ASSERT(count_ops(&t->programs[0], WL_OP_COLL, -1, WL_GROUP_TP, WL_PHASE_RECOMPUTE, -1).n > 0);
  CU_ASSERT(count_ops(&t->programs[0], WL_OP_COMPUTE, -1, -1, WL_PHASE_RECOMPUTE, WL_CC_GEMM).n > 0);
  wl_trace_free(t);
  p.recompute = 3;
  expect_refusal(p, "recompute 3");
}

static void test_wl_gen_grad_reduce_overlap_switch(void)
{
  struct wl_gen_params p = params("llama3-8b", 4, 1, 2);
  p.global_batch = 16;
  struct wl_trace *on = gen_ok(p);
  p.overlap_grad_reduce = 0;
  struct wl_trace *off = gen_ok(p);
  for (int s = 0; s < 2; s++) {
    struct op_count a = count_ops(&on->programs[s], WL_OP_COLL, WL_COLL_ALLREDUCE, WL_GROUP_DP, -1, -1);
    struct op_count b = count_ops(&off->programs[s], WL_OP_COLL, WL_COLL_ALLREDUCE, WL_GROUP_DP, -1, -1);
    struct op_count bwd = count_ops(&off->programs[s], WL_OP_COMPUTE, -1, -1, WL_PHASE_BACKWARD, -1);
    /* The same buckets; overlapped: async, during the backward; not: blocking, after it. */
    CU_ASSERT_DOUBLE_EQUAL(a.bytes, b.bytes, 1);
    CU_ASSERT_EQUAL(a.n, b.n);
    CU_ASSERT_EQUAL(a.async, a.n);
    CU_ASSERT(count_ops(&on->programs[s], WL_OP_COLL, -1, WL_GROUP_DP, WL_PHASE_BACKWARD, -1).n == a.n);
    CU_ASSERT_EQUAL(b.async, 0);
    CU_ASSERT(b.n >= 1);
    CU_ASSERT(b.first > bwd.last);
    CU_ASSERT_EQUAL(count_ops(&off->programs[s], WL_OP_COLL, -1, WL_GROUP_DP, WL_PHASE_OPTIMIZER, -1).n, b.n);
  }
  wl_trace_free(on);
  wl_trace_free(off);
}

static void param_gather_case(struct wl_gen_params p);
static void test_wl_gen_param_gather_overlap_switch(void)
{
  /* Layers larger than a bucket (tp 1), and smaller ones (tp 8: 27M parameters), the last
   * bucket of the first stage partial. */
  struct wl_gen_params p = params("llama3-8b", 4, 1, 2);
  p.global_batch = 16;
  param_gather_case(p);
  p = params("llama3-8b", 32, 8, 2);
  p.global_batch = 16;
  p.bucket_params = 60e6; /* 3 layers a bucket: 16 layers leave one */
  param_gather_case(p);
}

static void param_gather_case(struct wl_gen_params p)
{
  p.zero1 = 1;
  struct wl_trace *tail = gen_ok(p);
  p.overlap_param_gather = 1;
  struct wl_trace *ovl = gen_ok(p);
  for (int s = 0; s < 2; s++) {
    struct op_count a = count_ops(&tail->programs[s], WL_OP_COLL, WL_COLL_ALLGATHER, WL_GROUP_DP, -1, -1);
    struct op_count b = count_ops(&ovl->programs[s], WL_OP_COLL, WL_COLL_ALLGATHER, WL_GROUP_DP, -1, -1);
    /* The same BF16 parameters gathered: one blocking all-gather after the optimizer step, or
     * async buckets issued first, before any forward kernel. */
    CU_ASSERT_DOUBLE_EQUAL(a.bytes, b.bytes, 4);
    CU_ASSERT_EQUAL(a.n, 1);
    CU_ASSERT_EQUAL(a.async, 0);
    CU_ASSERT(a.first > count_ops(&tail->programs[s], WL_OP_COMPUTE, -1, -1, -1, WL_CC_OPTIMIZER).last);
    CU_ASSERT(b.n > 1);
    CU_ASSERT_EQUAL(b.async, b.n);
    CU_ASSERT(b.last < count_ops(&ovl->programs[s], WL_OP_COMPUTE, -1, -1, WL_PHASE_FORWARD, -1).first);
    /* The first forward of micro-batch 0 waits for them, once per bucket. */
    struct op_count waits = count_ops(&ovl->programs[s], WL_OP_WAIT, -1, -1, WL_PHASE_FORWARD, -1);
    CU_ASSERT_EQUAL(waits.n, b.n);
    for (int i = 0; i < ovl->programs[s].nops; i++) {
      const struct wl_op *o = &ovl->programs[s].ops[i];
      if (o->kind == WL_OP_WAIT && o->phase == WL_PHASE_FORWARD)
        CU_ASSERT_EQUAL(o->micro, 0);
    }
  }
  wl_trace_free(tail);
  wl_trace_free(ovl);
  p.zero1 = 0;
  expect_refusal(p, "--zero1");
}

static void test_wl_gen_tied_embedding_allreduce(void)
{
  /* GPT-3 ties its embeddings: with pp > 1 the first and last stages all-reduce the embedding's
   * FP32 gradient, h x V / tp elements, after the DP reduction; middle stages do not. */
  struct wl_gen_params p = params("gpt3-175b", 32, 8, 4);
  p.global_batch = 4;
  struct wl_trace *t = gen_ok(p);
  double bytes = 4.0 * 12288 * 51200 / 8;
  for (int s = 0; s < 4; s++) {
    struct op_count e = count_ops(&t->programs[s], WL_OP_COLL, WL_COLL_ALLREDUCE, WL_GROUP_EMB, -1, -1);
    CU_ASSERT_EQUAL(e.n, s == 0 || s == 3 ? 1 : 0);
    if (e.n)
      CU_ASSERT_DOUBLE_EQUAL(e.bytes, bytes, 1);
  }
  wl_trace_free(t);
  p.tied_embeddings = 0;
  t = gen_ok(p);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COLL, -1, WL_GROUP_EMB, -1, -1).n, 0);
  wl_trace_free(t);
  /* Llama 3 does not tie; --tied-embeddings does. */
  p = params("llama3-8b", 16, 8, 2);
  p.global_batch = 4;
  t = gen_ok(p);
  CU_ASSERT_EQUAL(count_ops(&t->programs[1], WL_OP_COLL, -1, WL_GROUP_EMB, -1, -1).n, 0);
  wl_trace_free(t);
  p.tied_embeddings = 1;
  t = gen_ok(p);
  CU_ASSERT_EQUAL(count_ops(&t->programs[1], WL_OP_COLL, -1, WL_GROUP_EMB, -1, -1).n, 1);
  /* The group: rank r of stage 0 and the rank of the last stage with the same tp, cp, dp. */
  int members[2];
  CU_ASSERT_EQUAL(wl_group_members(t, 3, WL_GROUP_EMB, members, 2), 2);
  CU_ASSERT_EQUAL(members[0], 3);
  CU_ASSERT_EQUAL(members[1], 11);
  CU_ASSERT_EQUAL(wl_group_index(t, 11, WL_GROUP_EMB), 1);
  wl_trace_free(t);
  /* One stage: one matrix, nothing to reduce, and counted once. */
  p = params("gpt3-175b", 8, 8, 1);
  p.global_batch = 1;
  t = gen_ok(p);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COLL, -1, WL_GROUP_EMB, -1, -1).n, 0);
  wl_trace_free(t);
}

static void test_wl_gen_grad_norm_and_optimizer_step(void)
{
  /* Llama 3 8B, tp 2, pp 2, dp 2: the stage's parameters, 30 B each for the Adam step. */
  struct wl_gen_params p = params("llama3-8b", 8, 2, 2);
  p.global_batch = 8;
  struct wl_trace *t = gen_ok(p);
  double layer = (41943040.0 + 176160768.0) / 2 + 8192.0, embed = 128256.0 * 4096 / 2;
  double stage0 = 16 * layer + embed;
  struct op_count opt = count_ops(&t->programs[0], WL_OP_COMPUTE, -1, -1, WL_PHASE_OPTIMIZER, WL_CC_OPTIMIZER);
  CU_ASSERT_EQUAL(opt.n, 1);
  CU_ASSERT_DOUBLE_EQUAL(opt.mem, 30 * stage0, 1);
  /* Gradient norm: one read of the FP32 gradients, then 4 bytes all-reduced over tp x pp. */
  struct op_count norm = count_ops(&t->programs[0], WL_OP_COLL, WL_COLL_ALLREDUCE, WL_GROUP_MP, -1, -1);
  CU_ASSERT_EQUAL(norm.n, 1);
  CU_ASSERT_DOUBLE_EQUAL(norm.bytes, 4, 0);
  CU_ASSERT(norm.first < opt.first);
  struct op_count read = count_ops(&t->programs[0], WL_OP_COMPUTE, -1, -1, WL_PHASE_OPTIMIZER, WL_CC_ELEMWISE);
  CU_ASSERT_DOUBLE_EQUAL(read.mem, 4 * stage0, 1);
  CU_ASSERT_EQUAL(wl_group_size(t, WL_GROUP_MP), 4);
  wl_trace_free(t);
  /* Distributed optimizer: a shard of each, the norm over every rank. */
  p.zero1 = 1;
  t = gen_ok(p);
  opt = count_ops(&t->programs[0], WL_OP_COMPUTE, -1, -1, WL_PHASE_OPTIMIZER, WL_CC_OPTIMIZER);
  CU_ASSERT_DOUBLE_EQUAL(opt.mem, 30 * stage0 / 2, 1);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COLL, WL_COLL_ALLREDUCE, WL_GROUP_WORLD, -1, -1).n, 1);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COLL, -1, WL_GROUP_MP, -1, -1).n, 0);
  wl_trace_free(t);
  p.grad_norm = 0;
  t = gen_ok(p);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COLL, -1, WL_GROUP_WORLD, -1, -1).n, 0);
  CU_ASSERT_EQUAL(count_ops(&t->programs[0], WL_OP_COMPUTE, -1, -1, WL_PHASE_OPTIMIZER, WL_CC_ELEMWISE).n, 0);
  wl_trace_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "wl_gen";
static double program_flops(const struct wl_program *pr, int cclass)
{
  double f = 0;
  for (int i = 0; i < pr->nops; i++)
    if (pr->ops[i].kind == WL_OP_COMPUTE && (cclass < 0 || (int)pr->ops[i].cclass == cclass))
      f += pr->ops[i].flops;
  return f;
}

/* TP collectives of the transformer layers (layer >= 0): how many, how many asynchronous, bytes. */
static struct op_count layer_tp_colls(const struct wl_program *pr, int coll)
{
  struct op_count c = { 0, 0, 0, 0, -1, -1 };
  for (int i = 0; i < pr->nops; i++) {
    const struct wl_op *o = &pr->ops[i];
    if (o->kind == WL_OP_COLL && (int)o->coll == coll && o->group == WL_GROUP_TP && o->layer >= 0) {
      c.n++;
      c.async += o->is_async;
      c.bytes += o->bytes;
    }
  }
  return c;
}

/* --tp-comm-overlap: every sequence-parallel TP all-gather and reduce-scatter of the transformer
 * layers is issued asynchronously, and waited for after the GEMM it overlaps (one wait each); the
 * bytes, the GEMMs' FLOPs and HBM bytes stay those of the job without overlap. The embedding's and
 * output layer's stay blocking. Refused without sequence parallelism. */
static void test_wl_gen_tp_comm_overlap_switch(void)
{
  struct wl_gen_params p = params("llama3-8b", 16, 8, 1);
  p.seq_parallel = 1;
  p.global_batch = 4;
  struct wl_trace *off = gen_ok(p);
  p.tp_comm_overlap = 1;
  struct wl_trace *on = gen_ok(p);
  const struct wl_program *a = &off->programs[0], *b = &on->programs[0];
  int tp_ops = 0;
  static const int kinds[] = { WL_COLL_ALLGATHER, WL_COLL_REDUCE_SCATTER };
  for (int k = 0; k < 2; k++) {
    struct op_count x = layer_tp_colls(a, kinds[k]), y = layer_tp_colls(b, kinds[k]);
    CU_ASSERT(x.n > 0);
    CU_ASSERT_EQUAL(x.async, 0);
    CU_ASSERT_EQUAL(y.n, x.n);
    CU_ASSERT_EQUAL(y.async, y.n);
    CU_ASSERT_DOUBLE_EQUAL(y.bytes, x.bytes, 1e-6 * x.bytes);
    tp_ops += y.n;
  }
  int waits_off = count_ops(a, WL_OP_WAIT, -1, -1, -1, -1).n, waits_on = count_ops(b, WL_OP_WAIT, -1, -1, -1, -1).n;
  CU_ASSERT_EQUAL(waits_on - waits_off, tp_ops);
  /* The split GEMMs add up to the fused ones */
  double fa = program_flops(a, WL_CC_GEMM), fb = program_flops(b, WL_CC_GEMM);
  CU_ASSERT_DOUBLE_EQUAL(fb, fa, 1e-9 * fa);
  struct op_count ga = count_ops(a, WL_OP_COMPUTE, -1, -1, -1, WL_CC_GEMM);
  struct op_count gb = count_ops(b, WL_OP_COMPUTE, -1, -1, -1, WL_CC_GEMM);
  CU_ASSERT_DOUBLE_EQUAL(gb.mem, ga.mem, 1e-9 * ga.mem);
  CU_ASSERT(gb.n > ga.n);
  /* Each wait of a layer follows the GEMM its collective overlaps. */
  for (int i = 1; i < b->nops; i++)
    if (b->ops[i].kind == WL_OP_WAIT && b->ops[i].layer >= 0)
      CU_ASSERT(b->ops[i - 1].kind == WL_OP_COMPUTE && b->ops[i - 1].cclass == WL_CC_GEMM);
  wl_trace_free(off);
  wl_trace_free(on);
  p.seq_parallel = 0;
  expect_refusal(p, "--tp-comm-overlap needs");
}

/* --cp-comm-type: p2p (the default, ring attention) passes the KV round the CP ring beside the
 * attention core, asynchronously, and again with its gradient in the backward (twice all_gather's
 * backward bytes); all_gather gathers it before attention and scatters dKV after, blocking. */
static void test_wl_gen_cp_comm_type_switch(void)
{
  struct wl_gen_params p = params("llama3-8b", 16, 2, 1);
  p.layout.cp = 2;
  p.global_batch = 4;
  CU_ASSERT_EQUAL(p.cp_comm_p2p, 1);
  struct wl_trace *ring = gen_ok(p);
  p.cp_comm_p2p = 0;
  struct wl_trace *gather = gen_ok(p);
  const struct wl_program *r = &ring->programs[0], *g = &gather->programs[0];
  struct op_count rf = count_ops(r, WL_OP_COLL, -1, WL_GROUP_CP, WL_PHASE_FORWARD, -1);
  struct op_count gf = count_ops(g, WL_OP_COLL, -1, WL_GROUP_CP, WL_PHASE_FORWARD, -1);
  struct op_count rb = count_ops(r, WL_OP_COLL, -1, WL_GROUP_CP, WL_PHASE_BACKWARD, -1);
  struct op_count gb = count_ops(g, WL_OP_COLL, -1, WL_GROUP_CP, WL_PHASE_BACKWARD, -1);
  CU_ASSERT(gf.n > 0 && gf.async == 0 && gb.async == 0);
  CU_ASSERT(rf.n == gf.n && rf.async == rf.n);
  CU_ASSERT_DOUBLE_EQUAL(rf.bytes, gf.bytes, 1e-6 * gf.bytes);
  CU_ASSERT(rb.n == 2 * gb.n && rb.async == rb.n);
  CU_ASSERT_DOUBLE_EQUAL(rb.bytes, 2 * gb.bytes, 1e-6 * gb.bytes);
  /* In the ring, the attention core runs between the KV's issue and its wait. */
  int seen_ag = 0, core_between = 0;
  for (int i = 0; i < r->nops && !core_between; i++) {
    const struct wl_op *o = &r->ops[i];
    if (o->kind == WL_OP_COLL && o->group == WL_GROUP_CP && o->phase == WL_PHASE_FORWARD)
      seen_ag = 1;
    else if (seen_ag && o->kind == WL_OP_COMPUTE)
      core_between = o->cclass == WL_CC_ATTN;
  }
  CU_ASSERT(core_between);
  CU_ASSERT_DOUBLE_EQUAL(program_flops(r, -1), program_flops(g, -1), 1e-9 * program_flops(g, -1));
  wl_trace_free(ring);
  wl_trace_free(gather);
}

const struct sgf_unit_test sgf_unit_tests[] = {
  { "refuses_impossible_layouts", test_wl_gen_refuses_impossible_layouts },
  { "405b_on_16_stages_is_balanced", test_wl_gen_405b_on_16_stages_is_balanced },
  { "cli_records_405b_balance", test_wl_gen_cli_records_405b_balance },
  { "1f1b_warmup_steady_cooldown", test_wl_gen_1f1b_warmup_steady_cooldown },
  { "program_follows_1f1b", test_wl_gen_program_follows_1f1b },
  { "interleaved_has_v_chunks", test_wl_gen_interleaved_has_v_chunks },
  { "tp_allreduce_bytes_per_layer", test_wl_gen_tp_allreduce_bytes_per_layer },
  { "dp_gradient_bytes_equal_stage_params", test_wl_gen_dp_gradient_bytes_equal_stage_params },
  { "program_flops_sum_to_hardware_flops", test_wl_gen_program_flops_sum_to_hardware_flops },
  { "moe_and_cp_collectives", test_wl_gen_moe_and_cp_collectives },
  { "selective_recompute_reruns_attention_core", test_wl_gen_selective_recompute_reruns_attention_core },
  { "grad_reduce_overlap_switch", test_wl_gen_grad_reduce_overlap_switch },
  { "param_gather_overlap_switch", test_wl_gen_param_gather_overlap_switch },
  { "tied_embedding_allreduce", test_wl_gen_tied_embedding_allreduce },
  { "grad_norm_and_optimizer_step", test_wl_gen_grad_norm_and_optimizer_step },
  { "tp_comm_overlap_switch", test_wl_gen_tp_comm_overlap_switch },
  { "cp_comm_type_switch", test_wl_gen_cp_comm_type_switch },
  { NULL, NULL },
};
