/* SimAI/AICB import: the rows are one iteration (compute = the file's one-pass sum), the ga
 * micro-batch blocks are found and scheduled 1F1B through the pipeline, header variants, the
 * shipped example's comm-type mapping. Files: workloads/examples/ and the corpus in
 * tests/integration/data/workloads/simai/. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_simai.h"
#include "wl_trace.h"
#include "cunit_main.h"

#define CORPUS(f) WL_SIMAI_CORPUS_DIR "/" f
#define EXAMPLE WL_EXAMPLES_DIR "/simai-every-type.txt"

static const char *const corpus[] = {
  "data-ga1.txt",        "data-ga4.txt",         "hybrid-ga1.txt",    "hybrid-ga4.txt",
  "hybrid-pp2-ga4.txt",  "pp-comm-no-colon.txt", "pp-comm-float.txt", "no-all-gpus.txt",
  "micro-allreduce.txt", "unknown-keys.txt",     "moe-pp2-ep2.txt",   "pp2-compute-only.txt",
};

/* The file's one-pass sum of the four time columns, read independently of the importer: skip
 * the policy line and the row count, then 12 whitespace-separated fields per row. */
static double row_time_sum(const char *path, int *nrows)
{
  FILE *in = fopen(path, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  char line[8192];
  CU_ASSERT_PTR_NOT_NULL_FATAL(fgets(line, sizeof line, in));
  int n = 0;
  CU_ASSERT_EQUAL_FATAL(fscanf(in, "%d", &n), 1);
  double sum = 0;
  for (int i = 0; i < n; i++) {
    char name[256], c[3][64];
    double dep, t[4], b[3];
    int got = fscanf(in, "%255s %lf %lf %63s %lf %lf %63s %lf %lf %63s %lf %lf", name, &dep, &t[0], c[0], &b[0], &t[1],
                     c[1], &b[1], &t[2], c[2], &b[2], &t[3]);
    CU_ASSERT_EQUAL_FATAL(got, 12);
    sum += (t[0] + t[1] + t[2] + t[3]) * 1e-9;
  }
  fclose(in);
  *nrows = n;
  return sum;
}

static double program_compute(const struct wl_program *p)
{
  double s = 0;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE)
      s += p->ops[i].duration_s;
  return s;
}

static struct wl_trace *load(const char *path, int platform_gpus)
{
  char spec[1100], err[1024];
  snprintf(spec, sizeof spec, "simai:%s", path);
  struct wl_trace *t = wl_trace_open_on(spec, platform_gpus, err, sizeof err);
  if (t == NULL)
    fprintf(stderr, "\n%s\n", err);
  return t;
}

/* Every stage of every file runs each row once: no ga factor (AICB unrolled the micro-batches
 * into the rows already). */
static void test_wl_simai_compute_is_one_pass(void)
{
  for (size_t k = 0; k <= sizeof corpus / sizeof corpus[0]; k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s", k < sizeof corpus / sizeof corpus[0] ? CORPUS("") : EXAMPLE);
    if (k < sizeof corpus / sizeof corpus[0])
      strncat(path, corpus[k], sizeof path - strlen(path) - 1);
    int nrows;
    double want = row_time_sum(path, &nrows);
    struct wl_trace *t = load(path, 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (int s = 0; s < t->layout.pp; s++) {
      double got = program_compute(&t->programs[s]);
      int ok = fabs(got - want) <= 1e-12 * want + 1e-18;
      if (!ok)
        fprintf(stderr, "\n%s stage %d: compute %.12g s, rows sum to %.12g s (ga %d)\n", path, s, got, want,
                t->microbatches);
      CU_ASSERT(ok);
    }
    wl_trace_free(t);
  }
}

/* The layout and micro-batch count each header gives, including the GPU count taken from the
 * platform when all_gpus is missing, and no GPU type of the import's own. */
static void test_wl_simai_header_variants(void)
{
  static const struct {
    const char *file;
    int gpus, tp, pp, dp, ep, m;
  } cases[] = {
    { "data-ga1.txt", 8, 1, 1, 8, 1, 1 },         { "data-ga4.txt", 8, 1, 1, 8, 1, 4 },
    { "hybrid-ga4.txt", 8, 2, 1, 4, 1, 4 },       { "hybrid-pp2-ga4.txt", 16, 2, 2, 4, 1, 4 },
    { "pp-comm-no-colon.txt", 8, 2, 2, 2, 1, 2 }, { "pp-comm-float.txt", 8, 2, 2, 2, 1, 2 },
    { "no-all-gpus.txt", 16, 8, 1, 2, 1, 1 },     { "micro-allreduce.txt", 16, 1, 1, 16, 1, 1 },
    { "unknown-keys.txt", 8, 2, 1, 4, 1, 1 },     { "moe-pp2-ep2.txt", 16, 2, 2, 4, 2, 2 },
  };
  char path[1024];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(path, sizeof path, "%s%s", CORPUS(""), cases[i].file);
    struct wl_trace *t = load(path, 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    const struct wl_layout *l = &t->layout;
    int ok = l->gpus == cases[i].gpus && l->tp == cases[i].tp && l->pp == cases[i].pp && l->dp == cases[i].dp &&
             l->ep == cases[i].ep && t->microbatches == cases[i].m;
    if (!ok)
      fprintf(stderr, "\n%s: gpus %d tp %d pp %d dp %d ep %d m %d\n", cases[i].file, l->gpus, l->tp, l->pp, l->dp,
              l->ep, t->microbatches);
    CU_ASSERT(ok);
    CU_ASSERT_STRING_EQUAL(t->gpu, "");
    wl_trace_free(t);
  }
}

/* Counts the ops of p of a kind (and for SEND/RECV, of a phase) and checks their bytes. */
static int count_p2p(const struct wl_program *p, enum wl_op_kind kind, enum wl_phase ph, double bytes)
{
  int n = 0;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].kind == kind && p->ops[i].phase == ph) {
      CU_ASSERT_EQUAL(p->ops[i].bytes, bytes);
      n++;
    }
  return n;
}

/* pp > 1: one activation each way per micro-batch and stage boundary, of pp_comm bytes, in any
 * of the three spellings (colon, none, float). */
static void test_wl_simai_pipeline_messages(void)
{
  static const struct {
    const char *file;
    double bytes;
    int m;
  } cases[] = {
    { "hybrid-pp2-ga4.txt", 2097152, 4 },
    { "pp-comm-no-colon.txt", 1048576, 2 },
    { "pp-comm-float.txt", 524288, 2 },
    { "moe-pp2-ep2.txt", 524288, 2 },
  };
  char path[1024];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(path, sizeof path, "%s%s", CORPUS(""), cases[i].file);
    struct wl_trace *t = load(path, 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL_FATAL(t->layout.pp, 2);
    const struct wl_program *s0 = &t->programs[0], *s1 = &t->programs[1];
    double b = cases[i].bytes;
    int m = cases[i].m;
    CU_ASSERT_EQUAL(count_p2p(s0, WL_OP_SEND, WL_PHASE_FORWARD, b), m);
    CU_ASSERT_EQUAL(count_p2p(s0, WL_OP_RECV, WL_PHASE_BACKWARD, b), m);
    CU_ASSERT_EQUAL(count_p2p(s0, WL_OP_RECV, WL_PHASE_FORWARD, b), 0);
    CU_ASSERT_EQUAL(count_p2p(s1, WL_OP_RECV, WL_PHASE_FORWARD, b), m);
    CU_ASSERT_EQUAL(count_p2p(s1, WL_OP_SEND, WL_PHASE_BACKWARD, b), m);
    CU_ASSERT_EQUAL(count_p2p(s1, WL_OP_SEND, WL_PHASE_FORWARD, b), 0);
    wl_trace_free(t);
  }
}

/* hybrid-pp2-ga4.txt: 4 prologue rows, 4 blocks of 6 rows, 7 epilogue rows. Each block's rows
 * carry their micro-batch; stage 0 runs 1F1B (one warm-up forward with 2 stages): F0 F1 B0 F2
 * B1 F3 B2 B3, and the last stage F0 B0 F1 B1 ... */
static void test_wl_simai_blocks_1f1b(void)
{
  struct wl_trace *t = load(CORPUS("hybrid-pp2-ga4.txt"), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  static const char *const want[2] = { "F0F1B0F2B1F3B2B3", "F0B0F1B1F2B2F3B3" };
  for (int s = 0; s < 2; s++) {
    const struct wl_program *p = &t->programs[s];
    char order[64] = "";
    int last_micro = -2, last_phase = -1;
    for (int i = 0; i < p->nops; i++) {
      const struct wl_op *o = &p->ops[i];
      if (o->layer >= 0) {
        int in_block = o->layer >= 4 && o->layer < 28;
        CU_ASSERT_EQUAL(o->micro, in_block ? (o->layer - 4) / 6 : -1);
      }
      if (o->micro < 0 || (o->micro == last_micro && (int)o->phase == last_phase))
        continue;
      size_t n = strlen(order);
      if (n + 3 < sizeof order)
        snprintf(order + n, sizeof order - n, "%c%d", o->phase == WL_PHASE_FORWARD ? 'F' : 'B', o->micro);
      last_micro = o->micro;
      last_phase = (int)o->phase;
    }
    if (strcmp(order, want[s]) != 0)
      fprintf(stderr, "\nstage %d runs %s, want %s\n", s, order, want[s]);
    CU_ASSERT_STRING_EQUAL(order, want[s]);
  }
  wl_trace_free(t);
}

/* The block finder on sequences of labels: rows are alike when their labels are equal. */
static const char *labels;
static int labels_alike(int i, int j, void *ctx)
{
  (void)ctx;
  return labels[i] == labels[j];
}

static void expect_blocks(const char *seq, int ga, int found, int prologue, int len)
{
  labels = seq;
  int p = -1, l = -1;
  int got = wl_simai_find_blocks((int)strlen(seq), ga, labels_alike, NULL, &p, &l);
  int ok = got == found && (!found || (p == prologue && l == len));
  if (!ok)
    fprintf(stderr, "\n'%s' ga %d: found %d prologue %d len %d\n", seq, ga, got, p, l);
  CU_ASSERT(ok);
}

static void test_wl_simai_find_blocks(void)
{
  expect_blocks("PQabcabcabcXYZ", 3, 1, 2, 3); /* prologue, 3 blocks, epilogue */
  expect_blocks("abab", 2, 1, 0, 2);
  /* The longest block wins over its sub-periods (every layer alike). */
  expect_blocks("PababababE", 2, 1, 1, 4);
  expect_blocks("PababababE", 4, 1, 1, 2);
  expect_blocks("abcdef", 2, 0, 0, 0);       /* nothing repeats */
  expect_blocks("abcabc", 3, 0, 0, 0);       /* two copies, not three */
  expect_blocks("abab", 1, 0, 0, 0);         /* ga 1: no blocks to find */
  expect_blocks("PQRSTUVWxxyz", 2, 0, 0, 0); /* "xx" repeats but covers < half the rows */
  expect_blocks("PQRSabab", 2, 0, 0, 0);     /* exactly half: not more */
  expect_blocks("ababPQR", 2, 1, 0, 2);      /* blocks first, then a long epilogue */
}

/* The shipped example: (collective, group) per row for forward, input-grad and weight-grad. Row 0
 * is the prologue, rows 1-9 and 10-18 the two micro-batch blocks (same comm, the first block's
 * embedding weight-grad time larger), row 19 the epilogue. */
static void test_wl_simai_example_mapping(void)
{
  enum {
    AR = WL_COLL_ALLREDUCE,
    AG = WL_COLL_ALLGATHER,
    RS = WL_COLL_REDUCE_SCATTER,
    A2A = WL_COLL_ALLTOALL,
    BC = WL_COLL_BROADCAST,
    NO = WL_COLL_NONE
  };
  enum { TP = WL_GROUP_TP, DP = WL_GROUP_DP, EP = WL_GROUP_EP, DE = WL_GROUP_DP_EP, N = 0 };
  static const int block[9][3][2] = {
    { { AR, TP }, { NO, N }, { NO, N } },     { { AG, TP }, { RS, TP }, { AR, DP } },
    { { RS, TP }, { AG, TP }, { RS, DP } },   { { A2A, EP }, { A2A, EP }, { AR, DE } },
    { { A2A, TP }, { A2A, TP }, { AG, DE } }, { { AR, TP }, { AR, EP }, { RS, DE } },
    { { BC, TP }, { BC, EP }, { BC, DP } },   { { AG, EP }, { RS, EP }, { A2A, DE } },
    { { AR, EP }, { BC, DE }, { AR, DE } },
  };
  int want[20][3][2];
  memcpy(want[0], (int[3][2]){ { NO, N }, { NO, N }, { RS, DP } }, sizeof want[0]);
  for (int r = 0; r < 9; r++) {
    memcpy(want[1 + r], block[r], sizeof want[0]);
    memcpy(want[10 + r], block[r], sizeof want[0]);
  }
  memcpy(want[19], (int[3][2]){ { AR, TP }, { NO, N }, { AR, DP } }, sizeof want[0]);
  struct wl_trace *t = load(EXAMPLE, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT(t->layout.tp == 2 && t->layout.dp == 4 && t->layout.ep == 2 && t->layout.pp == 1);
  CU_ASSERT_EQUAL(t->microbatches, 2);
  const struct wl_program *p = &t->programs[0];
  int got[20][3][2] = { { { 0 } } }, seen[20][3] = { { 0 } }, async_wg = 0, waits = 0;
  double emb_wg[2] = { 0, 0 };
  for (int i = 0; i < p->nops; i++) {
    const struct wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_WAIT)
      waits++;
    if (o->kind == WL_OP_COMPUTE && (o->layer == 1 || o->layer == 10) && o->phase == WL_PHASE_BACKWARD)
      emb_wg[o->layer == 10] = o->duration_s; /* input-grad then weight-grad: the last one stays */
    if (o->kind != WL_OP_COLL)
      continue;
    CU_ASSERT_FATAL(o->layer >= 0 && o->layer < 20);
    /* In the backward pass the input-grad op of a row precedes its weight-grad op. */
    int slot = o->phase == WL_PHASE_FORWARD ? 0 : (seen[o->layer][1] || want[o->layer][1][0] == NO) ? 2 : 1;
    seen[o->layer][slot]++;
    got[o->layer][slot][0] = o->coll;
    got[o->layer][slot][1] = o->group;
    if (slot == 2)
      async_wg += o->is_async;
  }
  for (int r = 0; r < 20; r++)
    for (int k = 0; k < 3; k++) {
      int ok = got[r][k][0] == want[r][k][0] && got[r][k][1] == want[r][k][1] && seen[r][k] == (want[r][k][0] != NO);
      if (!ok)
        fprintf(stderr, "\nrow %d slot %d: got (%d,%d) x%d want (%d,%d)\n", r, k, got[r][k][0], got[r][k][1],
                seen[r][k], want[r][k][0], want[r][k][1]);
      CU_ASSERT(ok);
    }
  CU_ASSERT_DOUBLE_EQUAL(emb_wg[0], 5e-6, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(emb_wg[1], 1e-6, 1e-15);
  CU_ASSERT_EQUAL(async_wg, 18); /* every weight-grad collective, as SimAI issues them */
  CU_ASSERT_EQUAL(waits, 1);
  wl_trace_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "wl_simai";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "compute_is_one_pass", test_wl_simai_compute_is_one_pass },
  { "header_variants", test_wl_simai_header_variants },
  { "pipeline_messages", test_wl_simai_pipeline_messages },
  { "blocks_1f1b", test_wl_simai_blocks_1f1b },
  { "find_blocks", test_wl_simai_find_blocks },
  { "example_mapping", test_wl_simai_example_mapping },
  { NULL, NULL },
};
