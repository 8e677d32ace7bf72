/* Trace format: writer/loader round trip, layout queries, bogus files (native and SimAI). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "wl_gen.h"
#include "wl_model.h"
#include "wl_simai.h"
#include "wl_trace.h"
#include "cunit_main.h"

#define BOGUS(f) WL_TEST_SRC_DIR "/bogus/" f

static void ops_equal(const struct wl_program *a, const struct wl_program *b)
{
  CU_ASSERT_EQUAL_FATAL(a->nops, b->nops);
  for (int i = 0; i < a->nops; i++) {
    const struct wl_op *x = &a->ops[i], *y = &b->ops[i];
    int nx, ny;
    const int *dx = wl_op_deps(a, x, &nx), *dy = wl_op_deps(b, y, &ny);
    int same = x->kind == y->kind && x->phase == y->phase && x->micro == y->micro && x->chunk == y->chunk &&
               x->layer == y->layer && x->is_async == y->is_async && x->group == y->group && x->coll == y->coll &&
               x->bytes == y->bytes && x->peer == y->peer && x->tag == y->tag && x->cclass == y->cclass &&
               x->flops == y->flops && x->mem_bytes == y->mem_bytes && x->duration_s == y->duration_s && nx == ny &&
               (nx == 0 || memcmp(dx, dy, (size_t)nx * sizeof *dx) == 0);
    CU_ASSERT(same);
    if (!same)
      return;
  }
}

static void round_trip(struct wl_gen_params p, const char *path)
{
  char err[512];
  struct wl_trace *a = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_EQUAL_FATAL(wl_trace_save(a, path, err, sizeof err), 0);
  struct wl_trace *b = wl_trace_open(path, err, sizeof err);
  if (b == NULL)
    fprintf(stderr, "\n%s\n", err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT(memcmp(&a->model, &b->model, sizeof a->model) == 0);
  CU_ASSERT(memcmp(&a->layout, &b->layout, sizeof a->layout) == 0);
  CU_ASSERT_STRING_EQUAL(a->gpu, b->gpu);
  CU_ASSERT_EQUAL(a->microbatches, b->microbatches);
  CU_ASSERT_EQUAL(a->global_batch, b->global_batch);
  CU_ASSERT_EQUAL(a->recompute, b->recompute);
  CU_ASSERT_EQUAL(a->zero1, b->zero1);
  CU_ASSERT_EQUAL(a->grad_bytes, b->grad_bytes);
  CU_ASSERT(a->model_flops == b->model_flops && a->hardware_flops == b->hardware_flops);
  int nv = a->layout.pp * a->layout.vpp;
  CU_ASSERT(memcmp(a->vstage_layers, b->vstage_layers, nv * sizeof(int)) == 0);
  CU_ASSERT(memcmp(a->stage_first_layer, b->stage_first_layer, nv * sizeof(int)) == 0);
  for (int s = 0; s < a->layout.pp; s++)
    ops_equal(&a->programs[s], &b->programs[s]);
  wl_trace_free(a);
  wl_trace_free(b);
}

static void test_wl_format_round_trip(void)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  wl_model_preset("llama3-8b", &p.model);
  p.layout = (struct wl_layout){ 32, 2, 4, 2, 1, 1, 2 };
  p.global_batch = 16;
  p.recompute = 1;
  p.zero1 = 1;
  round_trip(p, WL_TEST_BIN_DIR "/rt-llama.trace");
  wl_gen_params_init(&p);
  wl_model_preset("mixtral-8x7b", &p.model);
  p.layout = (struct wl_layout){ 16, 2, 2, 1, 1, 2, 1 };
  p.global_batch = 8;
  p.seq_parallel = 1;
  round_trip(p, WL_TEST_BIN_DIR "/rt-mixtral.trace");
}

static void test_wl_format_rank_order_and_groups(void)
{
  struct wl_trace *t = wl_trace_new();
  t->layout = (struct wl_layout){ 64, 2, 2, 1, 8, 4, 2 };
  struct wl_coord c;
  /* rank = tp + 2*(cp + 2*(dp + 8*pp)) */
  CU_ASSERT_EQUAL(wl_rank_coord(t, 2 * (1 + 2 * (5 + 8 * 1)) + 1, &c), 0);
  CU_ASSERT(c.tp == 1 && c.cp == 1 && c.dp == 5 && c.pp == 1 && c.ep == 1 && c.edp == 1);
  CU_ASSERT_EQUAL(wl_coord_rank(t, &c), 55);
  int m[64];
  CU_ASSERT_EQUAL(wl_group_members(t, 0, WL_GROUP_TP, m, 64), 2);
  CU_ASSERT(m[0] == 0 && m[1] == 1);
  CU_ASSERT_EQUAL(wl_group_members(t, 0, WL_GROUP_CP, m, 64), 2);
  CU_ASSERT(m[1] == 2);
  CU_ASSERT_EQUAL(wl_group_members(t, 0, WL_GROUP_DP, m, 64), 8);
  CU_ASSERT(m[7] == 28);
  CU_ASSERT_EQUAL(wl_group_members(t, 55, WL_GROUP_EP, m, 64), 4);
  CU_ASSERT(m[0] == 2 * (1 + 2 * (4 + 8)) + 1 && m[3] == 2 * (1 + 2 * (7 + 8)) + 1);
  CU_ASSERT_EQUAL(wl_group_members(t, 55, WL_GROUP_DP_EP, m, 64), 2);
  CU_ASSERT(m[0] == 2 * (1 + 2 * (1 + 8)) + 1 && m[1] == 55);
  CU_ASSERT_EQUAL(wl_group_members(t, 3, WL_GROUP_PP, m, 64), 2);
  CU_ASSERT(m[0] == 3 && m[1] == 35);
  CU_ASSERT_EQUAL(wl_group_index(t, 35, WL_GROUP_PP), 1);
  struct wl_op send = { .kind = WL_OP_SEND, .group = WL_GROUP_PP, .peer = +1 };
  CU_ASSERT_EQUAL(wl_op_peer_rank(t, 35, &send), 3);
  CU_ASSERT_EQUAL(wl_rank_coord(t, 64, &c), -1);
  wl_trace_free(t);
}

static void expect_load_error(const char *path, const char *line, const char *needle)
{
  char err[512] = "", prefix[600];
  struct wl_trace *t = wl_trace_open(path, err, sizeof err);
  CU_ASSERT_PTR_NULL(t);
  const char *file = strncmp(path, "simai:", 6) == 0 ? path + 6 : path;
  snprintf(prefix, sizeof prefix, "%s:%s: ", file, line);
  int ok = strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, needle) != NULL;
  if (!ok)
    fprintf(stderr, "\nexpected '%s...%s', got '%s'\n", prefix, needle, err);
  CU_ASSERT(ok);
  wl_trace_free(t);
}

static void test_wl_format_bogus_native_refused(void)
{
  expect_load_error(BOGUS("unknown-op.trace"), "8", "unknown op 'teleport'");
  expect_load_error(BOGUS("group-too-large.trace"), "3", "larger than the job");
  expect_load_error(BOGUS("truncated.trace"), "8", "truncated");
  expect_load_error(BOGUS("negative-size.trace"), "8", "negative value");
  expect_load_error(BOGUS("wrong-version.trace"), "1", "unsupported format version 7");
  expect_load_error(BOGUS("non-numeric.trace"), "7", "'lots' is not a number");
  /* Found by fuzz_trace: a second layout line leaked the stages of the first. */
  expect_load_error(BOGUS("second-layout.trace"), "4", "second 'layout' line (the layout is given once");
  /* Opening names the file and the system's reason; a directory is said to be one. */
  char err[512] = "";
  CU_ASSERT_PTR_NULL(wl_trace_open(BOGUS("does-not-exist.trace"), err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "does-not-exist.trace: cannot open the workload trace: No such file"));
  CU_ASSERT_PTR_NULL(wl_trace_open(WL_TEST_SRC_DIR "/bogus", err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "bogus: is a directory, not a workload trace"));
}

static void test_wl_format_simai_comm_types(void)
{
  static const struct {
    const char *s;
    enum wl_group def;
    enum wl_coll c;
    enum wl_group g;
  } cases[] = {
    { "ALLREDUCE", WL_GROUP_TP, WL_COLL_ALLREDUCE, WL_GROUP_TP },
    { "ALLGATHER", WL_GROUP_TP, WL_COLL_ALLGATHER, WL_GROUP_TP },
    { "REDUCESCATTER", WL_GROUP_DP, WL_COLL_REDUCE_SCATTER, WL_GROUP_DP },
    { "ALLTOALL", WL_GROUP_TP, WL_COLL_ALLTOALL, WL_GROUP_TP },
    { "ALLREDUCEALLTOALL", WL_GROUP_DP, WL_COLL_ALLREDUCE, WL_GROUP_DP },
    { "BROADCAST", WL_GROUP_TP, WL_COLL_BROADCAST, WL_GROUP_TP },
    { "ALLTOALL_EP", WL_GROUP_TP, WL_COLL_ALLTOALL, WL_GROUP_EP },
    { "ALLGATHER_DP_EP", WL_GROUP_DP, WL_COLL_ALLGATHER, WL_GROUP_DP_EP },
    { "ALLREDUCEALLTOALL_DP_EP", WL_GROUP_DP, WL_COLL_ALLREDUCE, WL_GROUP_DP_EP },
    { "NONE", WL_GROUP_TP, WL_COLL_NONE, WL_GROUP_NONE },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    enum wl_coll c;
    enum wl_group g;
    CU_ASSERT_EQUAL_FATAL(wl_simai_comm_type(cases[i].s, cases[i].def, &c, &g), 0);
    CU_ASSERT(c == cases[i].c && g == cases[i].g);
  }
  enum wl_coll c;
  enum wl_group g;
  CU_ASSERT_EQUAL(wl_simai_comm_type("ALLSHUFFLE", WL_GROUP_TP, &c, &g), -1);
  CU_ASSERT_EQUAL(wl_simai_comm_type("NONE_EP", WL_GROUP_TP, &c, &g), -1);
}

static void test_wl_format_bogus_simai_refused(void)
{
  expect_load_error("simai:" BOGUS("simai-truncated-row.txt"), "4", "truncated row");
  expect_load_error("simai:" BOGUS("simai-unknown-comm.txt"), "4", "unknown comm type 'ALLSHUFFLE'");
  expect_load_error("simai:" BOGUS("simai-negative.txt"), "3", "negative value -1024");
  expect_load_error("simai:" BOGUS("simai-group-too-large.txt"), "1", "larger than the job");
  expect_load_error("simai:" BOGUS("simai-bad-policy.txt"), "1", "unsupported SimAI policy");
  expect_load_error("simai:" BOGUS("simai-pp-no-pp-comm.txt"), "1", "pp 2 needs pp_comm");
  expect_load_error("simai:" BOGUS("simai-pp-zero-pp-comm.txt"), "1", "pp 2 needs pp_comm");
  expect_load_error("simai:" BOGUS("simai-pp-ga-no-blocks.txt"), "1", "do not hold 4 repeated micro-batch blocks");
  expect_load_error("simai:" BOGUS("simai-micro-pipeline.txt"), "1", "pp 2 with policy MICRO");
  expect_load_error("simai:" BOGUS("simai-fractional.txt"), "1", "pp_comm: '1048576.5' is not a whole number");
  /* Without a platform (sgfabric deployment) a file without all_gpus has no job size. */
  expect_load_error("simai:" BOGUS("simai-no-all-gpus.txt"), "1", "no all_gpus in the header");
}

/* reads a model description from text (named "m.model" in messages) */
static int model_from_bytes(const char *text, size_t len, struct wl_model *m, char *err, size_t errlen)
{
  FILE *f = fmemopen((void *)text, len, "r");
  int rc = wl_model_read(f, "m.model", m, err, errlen);
  fclose(f);
  return rc;
}

static int model_from(const char *text, struct wl_model *m, char *err, size_t errlen)
{
  return model_from_bytes(text, strlen(text), m, err, errlen);
}

/* docs/workload-format.md documents "key value"; "key: value" and "key = value" read the same. */
static void test_wl_format_model_file_syntax(void)
{
  static const char *const forms[] = {
    "name tiny\nlayers 2\nhidden 64\nheads 4\nkv-heads 2\nffn 256\nvocab 1000\nseq 128\n",
    "name: tiny\nlayers: 2\nhidden:64\nheads :4\nkv-heads: 2 # grouped\nffn: 256\nvocab: 1000\nseq: 128\n",
    "# a comment line\nname = tiny\r\nlayers = 2\r\n\n  "
    "hidden\t64\nheads=4\nkv-heads=2\nffn=256\nvocab=1000\nseq=128\n",
  };
  char err[256];
  for (int i = 0; i < 3; i++) {
    struct wl_model m;
    int rc = model_from(forms[i], &m, err, sizeof err);
    if (rc != 0)
      fprintf(stderr, "\nform %d refused: %s\n", i, err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(m.name, "tiny");
    CU_ASSERT(m.layers == 2 && m.hidden == 64 && m.heads == 4 && m.kv_heads == 2 && m.ffn == 256 && m.vocab == 1000 &&
              m.seq == 128 && m.gated_mlp == 1);
  }
  struct wl_model m;
  CU_ASSERT_EQUAL(model_from("layers 2 3\n", &m, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "m.model:1: expected 'key value'"));
  CU_ASSERT_EQUAL(model_from("layers 4294967298\n", &m, err, sizeof err), -1); /* not wrapped to 2 */
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "m.model:1: layers"));
  static const char nul[] = "\xEF\xBB\xBFlayers 2\nhid\0den 4\n"; /* a BOM is fine, a NUL is not */
  CU_ASSERT_EQUAL(model_from_bytes(nul, sizeof nul - 1, &m, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "m.model:2: NUL byte at column 4"));
}

static struct wl_trace *trace_from(const char *text, char *err, size_t errlen)
{
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  struct wl_trace *t = wl_trace_read(f, "t.trace", err, errlen);
  fclose(f);
  return t;
}

/* The fields added with the memory model and the Megatron-LM options: tied embeddings and
 * selective recomputation survive a round trip; old traces (no tied field) still load; a
 * recompute value beyond 2 and an emb collective on a middle stage are refused. */
static void test_wl_format_tied_and_selective(void)
{
  struct wl_gen_params p;
  wl_gen_params_init(&p);
  wl_model_preset("gpt3-175b", &p.model);
  p.layout.gpus = 24;
  p.layout.tp = 8;
  p.layout.pp = 3;
  p.global_batch = 3;
  p.recompute = WL_RECOMPUTE_SELECTIVE;
  char err[512];
  struct wl_trace *t = wl_generate(&p, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  const char *path = WL_TEST_BIN_DIR "/tied.trace";
  CU_ASSERT_EQUAL_FATAL(wl_trace_save(t, path, err, sizeof err), 0);
  struct wl_trace *u = wl_trace_load(path, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(u);
  CU_ASSERT_EQUAL(u->model.tied_embeddings, 1);
  CU_ASSERT_EQUAL(u->recompute, WL_RECOMPUTE_SELECTIVE);
  for (int s = 0; s < 3; s++)
    ops_equal(&t->programs[s], &u->programs[s]);
  wl_trace_free(t);
  wl_trace_free(u);
  const char *head =
      "sgf-workload 1\n"
      "model name=x layers=3 hidden=64 heads=4 kv_heads=4 ffn=256 vocab=100 seq=16 experts=0 topk=0 gated=1\n"
      "layout gpus=3 tp=1 pp=3 vpp=1 dp=1 ep=1 cp=1\n"
      "gpu H100\n";
  char text[2048];
  snprintf(text, sizeof text,
           "%sbatch micro=1 global=1 microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4\n"
           "stages layers=1,1,1 vfirst=0,1,2 vlayers=1,1,1\nprogram 0 ops=1\n0 coll ph=opt coll=allreduce group=emb "
           "bytes=8\nend\n"
           "program 1 ops=0\nend\nprogram 2 ops=1\n0 coll ph=opt coll=allreduce group=emb bytes=8\nend\n",
           head);
  t = trace_from(text, err, sizeof err);
  if (t == NULL)
    fprintf(stderr, "\n%s\n", err);
  CU_ASSERT_PTR_NOT_NULL(t);
  if (t != NULL) {
    CU_ASSERT_EQUAL(t->model.tied_embeddings, 0);
    CU_ASSERT_EQUAL(wl_group_size(t, WL_GROUP_EMB), 2);
    CU_ASSERT_EQUAL(wl_group_index(t, 1, WL_GROUP_EMB), -1);
  }
  wl_trace_free(t);
  snprintf(text, sizeof text,
           "%sbatch micro=1 global=1 microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4\n"
           "stages layers=1,1,1 vfirst=0,1,2 vlayers=1,1,1\nprogram 0 ops=0\nend\n"
           "program 1 ops=1\n0 coll ph=opt coll=allreduce group=emb bytes=8\nend\n",
           head);
  t = trace_from(text, err, sizeof err);
  CU_ASSERT_PTR_NULL(t);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "group emb on stage 1"));
  wl_trace_free(t);
  snprintf(text, sizeof text,
           "%sbatch micro=1 global=1 microbatches=1 recompute=3 zero1=0 seq_parallel=0 grad_bytes=4\n", head);
  t = trace_from(text, err, sizeof err);
  CU_ASSERT_PTR_NULL(t);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "field 'recompute': 3"));
  wl_trace_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "wl_format";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "round_trip", test_wl_format_round_trip },
  { "rank_order_and_groups", test_wl_format_rank_order_and_groups },
  { "bogus_native_refused", test_wl_format_bogus_native_refused },
  { "simai_comm_types", test_wl_format_simai_comm_types },
  { "bogus_simai_refused", test_wl_format_bogus_simai_refused },
  { "model_file_syntax", test_wl_format_model_file_syntax },
  { "tied_and_selective", test_wl_format_tied_and_selective },
  { NULL, NULL },
};
