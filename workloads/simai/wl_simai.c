/* SimAI/AICB workload import. Format as read by SimAI's astra-sim Workload.cc: a policy
 * line with "key: value" fields, the row count, then 12-field rows per layer.
 *
 * The rows are one training iteration of one rank. AICB's SimAI training generator writes the
 * rows of a stage's layers once per micro-batch (gradient accumulation unrolled) and puts `ga: N`
 * in the header; SimAI walks the rows once per pass and uses GA only in its analytical bubble
 * term (pp - 1) / GA. So the import runs every row once, and with pp > 1 schedules the ga
 * repeated micro-batch blocks through the pipeline (docs/workload-format.md, "SimAI/AICB
 * import"). */
#include "wl_simai.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen.h"
#include "text_input.h"

#define SIMAI_FIELDS 12
#define SIMAI_MAX_ROWS 1000000
#define SIMAI_MAX_TOKENS 256

struct simai_row {
  uint64_t name_hash; /* FNV-1a of the row's name (block recognition) */
  double fwd_s, ig_s, wg_s, update_s;
  enum wl_coll fwd_coll, ig_coll, wg_coll;
  enum wl_group fwd_group, ig_group, wg_group;
  double fwd_bytes, ig_bytes, wg_bytes;
};

struct simai_file {
  const char *path;
  int line;
  char *err;
  size_t errlen;
  int platform_gpus;
  enum wl_group fwd_default, wg_default;
  long ga, pp_comm;
  int nrows;
  struct simai_row *rows;
  /* Micro-batch structure: rows [0, prologue) once, then nblocks blocks of block_len rows
   * (one per micro-batch), then the epilogue up to nrows. */
  int prologue, block_len, nblocks;
};

static int fail(struct simai_file *f, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf(f->err, f->errlen, "%s:%d: ", f->path, f->line);
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < f->errlen)
    vsnprintf(f->err + n, f->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static const struct {
  const char *name;
  enum wl_coll coll;
} comm_types[] = {
  { "NONE", WL_COLL_NONE },
  { "ALLREDUCE", WL_COLL_ALLREDUCE },
  { "ALLGATHER", WL_COLL_ALLGATHER },
  { "REDUCESCATTER", WL_COLL_REDUCE_SCATTER },
  { "ALLTOALL", WL_COLL_ALLTOALL },
  /* astra-sim's All_Reduce_All_to_All is an all-reduce whose phases run as all-to-alls;
     * the result is an all-reduce and the algorithm is the replay's choice. */
  { "ALLREDUCEALLTOALL", WL_COLL_ALLREDUCE },
  { "BROADCAST", WL_COLL_BROADCAST },
};

int wl_simai_comm_type(const char *s, enum wl_group default_group, enum wl_coll *coll, enum wl_group *group)
{
  char base[64];
  size_t n = strlen(s);
  enum wl_group g = default_group;
  if (n >= sizeof base)
    return -1;
  strcpy(base, s);
  if (n > 6 && strcmp(base + n - 6, "_DP_EP") == 0) {
    base[n - 6] = '\0';
    g = WL_GROUP_DP_EP;
  } else if (n > 3 && strcmp(base + n - 3, "_EP") == 0) {
    base[n - 3] = '\0';
    g = WL_GROUP_EP;
  }
  for (size_t i = 0; i < sizeof comm_types / sizeof comm_types[0]; i++)
    if (strcmp(comm_types[i].name, base) == 0) {
      if (comm_types[i].coll == WL_COLL_NONE && g != default_group)
        return -1;
      *coll = comm_types[i].coll;
      *group = comm_types[i].coll == WL_COLL_NONE ? WL_GROUP_NONE : g;
      return 0;
    }
  return -1;
}

/* A whole number: an integer, or a float with no fractional part ("8388608.0": AICB divides
 * pp_comm by tp in Python and writes the float; SimAI's std::stoi reads its integral part). */
static int parse_num(struct simai_file *f, const char *what, const char *s, int allow_neg, long *v)
{
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (end != s && *end != '\0' && errno == 0) {
    double d = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(d))
      return fail(f, "%s: '%s' is not a number", what, s);
    if (d != floor(d) || fabs(d) > 9007199254740992.0)
      return fail(f, "%s: '%s' is not a whole number", what, s);
    x = (long long)d;
  } else if (end == s || *end != '\0' || errno != 0) {
    return fail(f, "%s: '%s' is not an integer", what, s);
  }
  if (x < 0 && !allow_neg)
    return fail(f, "%s: negative value %s", what, s);
  *v = (long)x;
  return 0;
}

static int policy_defaults(struct simai_file *f, const char *policy)
{
  if (strcmp(policy, "HYBRID_TRANSFORMER") == 0 || strcmp(policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD") == 0) {
    f->fwd_default = WL_GROUP_TP;
    f->wg_default = WL_GROUP_DP;
  } else if (strcmp(policy, "DATA") == 0) {
    f->fwd_default = WL_GROUP_DP;
    f->wg_default = WL_GROUP_DP;
  } else if (strcmp(policy, "MICRO") == 0) {
    f->fwd_default = WL_GROUP_WORLD;
    f->wg_default = WL_GROUP_WORLD;
  } else {
    return fail(f,
                "unsupported SimAI policy '%s' (supported: HYBRID_TRANSFORMER, "
                "HYBRID_TRANSFORMER_FWD_IN_BCKWD, DATA, MICRO)",
                policy);
  }
  return 0;
}

/* The policy line. SimAI matches "key:" tokens and takes the next token as the value, except
 * pp_comm, which it also accepts without the colon (its analytical example writes
 * "pp_comm 50331648"); it ignores every other token. Unknown keys are ignored the same way, with
 * one warning listing them. */
static int parse_header(struct simai_file *f, char *line, struct wl_layout *l)
{
  char *tok[SIMAI_MAX_TOKENS];
  int n = 0;
  for (char *s = strtok(line, " \t\r\n"); s != NULL; s = strtok(NULL, " \t\r\n")) {
    if (n == SIMAI_MAX_TOKENS)
      return fail(f, "more than %d fields on the policy line", SIMAI_MAX_TOKENS);
    tok[n++] = s;
  }
  if (n == 0)
    return fail(f, "empty first line: expected a SimAI policy such as HYBRID_TRANSFORMER");
  const char *policy = tok[0];
  if (policy_defaults(f, policy) != 0)
    return -1;
  long tp = 1, pp = 1, ep = 1, gpus = 0, vpp = 1, ckpt = 0, ckpt_init = 0;
  f->ga = 1;
  f->pp_comm = 0;
  char unknown[512] = "";
  size_t unknown_len = 0;
  for (int i = 1; i < n; i++) {
    size_t len = strlen(tok[i]);
    int colon = len >= 2 && tok[i][len - 1] == ':';
    if (colon)
      tok[i][len - 1] = '\0';
    const char *key = tok[i];
    struct {
      const char *k;
      long *v;
      long min;
    } keys[] = { { "model_parallel_NPU_group", &tp, 1 },
                 { "ep", &ep, 1 },
                 { "pp", &pp, 1 },
                 { "vpp", &vpp, 0 },
                 { "ga", &f->ga, 1 },
                 { "all_gpus", &gpus, 1 },
                 { "pp_comm", &f->pp_comm, 0 },
                 { "checkpoints", &ckpt, 0 },
                 { "checkpoint_initiates", &ckpt_init, 0 } };
    size_t k = 0;
    while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k].k, key) != 0)
      k++;
    int known = k < sizeof keys / sizeof keys[0] && (colon || strcmp(key, "pp_comm") == 0);
    if (!known) {
      /* A "key:" takes its value along; a bare token is ignored on its own. */
      if (colon && i + 1 < n) {
        size_t vlen = strlen(tok[i + 1]);
        if (vlen == 0 || tok[i + 1][vlen - 1] != ':')
          i++;
      }
      int w = snprintf(unknown + unknown_len, sizeof unknown - unknown_len, "%s'%s'", unknown_len ? ", " : "", key);
      if (w > 0 && (size_t)w < sizeof unknown - unknown_len)
        unknown_len += (size_t)w;
      continue;
    }
    if (i + 1 >= n)
      return fail(f, "'%s' has no value", key);
    const char *val = tok[++i];
    if (parse_num(f, key, val, 0, keys[k].v) != 0)
      return -1;
    if (*keys[k].v < keys[k].min)
      return fail(f, "%s: %s must be at least %ld", key, val, keys[k].min);
  }
  if (strcmp(policy, "DATA") == 0 || strcmp(policy, "MICRO") == 0) {
    /* SimAI reads the parallelism keys only for the transformer policies and runs DATA and
     * MICRO without model parallelism: a pipeline there would be one it never simulated. */
    if (pp > 1)
      return fail(f, "pp %ld with policy %s: SimAI runs %s without a pipeline (pp must be 1)", pp, policy, policy);
    tp = 1;
  }
  if (unknown_len > 0)
    fprintf(stderr, "warning: %s:1: ignoring header fields SimAI does not read: %s\n", f->path, unknown);
  if (gpus == 0) {
    if (f->platform_gpus <= 0)
      return fail(f, "no all_gpus in the header, and no platform to take the GPU count from "
                     "(sgfabric run uses the platform's GPUs)");
    gpus = f->platform_gpus;
    fprintf(stderr, "note: %s:1: no all_gpus in the header: the job spans the platform's %ld GPUs\n", f->path, gpus);
  }
  if (ckpt != 0 || ckpt_init != 0)
    return fail(f, "checkpoints/checkpoint_initiates lists are not supported (must be 0)");
  if (f->ga > WL_MAX_MICROBATCHES)
    return fail(f, "ga: %ld micro-batches is more than the limit of %d", f->ga, WL_MAX_MICROBATCHES);
  if (gpus > 1L << 24)
    return fail(f, "all_gpus: %ld is more than the limit of %ld GPUs", gpus, 1L << 24);
  if (f->pp_comm > WL_MAX_BYTES)
    return fail(f, "pp_comm: %ld bytes is more than the limit of 2^50 bytes", f->pp_comm);
  /* Without the activation size the stages would run uncoupled (no bubble); SimAI warns that
   * its input "may cause simulation error" and AICB always writes pp_comm when pp > 1. */
  if (pp > 1 && f->pp_comm == 0)
    return fail(f,
                "pp %ld needs pp_comm, the bytes of the activation a stage sends to the next per "
                "micro-batch (missing or 0)",
                pp);
  if (tp > gpus || pp > gpus || ep > gpus)
    return fail(f, "group larger than the job: tp=%ld pp=%ld ep=%ld, all_gpus=%ld", tp, pp, ep, gpus);
  if (gpus % (tp * pp) != 0)
    return fail(f, "all_gpus=%ld not divisible by model_parallel_NPU_group*pp = %ld", gpus, tp * pp);
  *l = (struct wl_layout){ (int)gpus, (int)tp, (int)pp, 1, (int)(gpus / (tp * pp)), (int)ep, 1 };
  char msg[200];
  if (wl_layout_check(l, msg, sizeof msg) != 0)
    return fail(f, "%s", msg);
  return 0;
}

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 14695981039346656037ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static int parse_row(struct simai_file *f, char *line, struct simai_row *r)
{
  char *tok[SIMAI_FIELDS + 1];
  int n = 0;
  for (char *s = strtok(line, " \t\r\n"); s != NULL && n <= SIMAI_FIELDS; s = strtok(NULL, " \t\r\n"))
    tok[n++] = s;
  if (n != SIMAI_FIELDS)
    return fail(f, n < SIMAI_FIELDS ? "truncated row: %d fields, expected %d" : "row has more than %d fields",
                n < SIMAI_FIELDS ? n : SIMAI_FIELDS, SIMAI_FIELDS);
  long dep, t[4], b[3];
  const char *names[] = { "forward compute time", "input-grad compute time", "weight-grad compute time",
                          "update time" };
  const char *bnames[] = { "forward comm bytes", "input-grad comm bytes", "weight-grad comm bytes" };
  if (parse_num(f, "dependency", tok[1], 1, &dep) != 0)
    return -1;
  const int tcol[4] = { 2, 5, 8, 11 }, bcol[3] = { 4, 7, 10 }, ccol[3] = { 3, 6, 9 };
  for (int i = 0; i < 4; i++)
    if (parse_num(f, names[i], tok[tcol[i]], 0, &t[i]) != 0)
      return -1;
  for (int i = 0; i < 3; i++) {
    if (parse_num(f, bnames[i], tok[bcol[i]], 0, &b[i]) != 0)
      return -1;
    if (b[i] > WL_MAX_BYTES)
      return fail(f, "%s %ld is more than the limit of 2^50 bytes", bnames[i], b[i]);
  }
  enum wl_coll *colls[3] = { &r->fwd_coll, &r->ig_coll, &r->wg_coll };
  enum wl_group *groups[3] = { &r->fwd_group, &r->ig_group, &r->wg_group };
  enum wl_group defaults[3] = { f->fwd_default, f->fwd_default, f->wg_default };
  for (int i = 0; i < 3; i++)
    if (wl_simai_comm_type(tok[ccol[i]], defaults[i], colls[i], groups[i]) != 0)
      return fail(f, "unknown comm type '%s' in row '%s'", tok[ccol[i]], tok[0]);
  r->name_hash = fnv1a(tok[0]);
  r->fwd_s = t[0] * 1e-9;
  r->ig_s = t[1] * 1e-9;
  r->wg_s = t[2] * 1e-9;
  r->update_s = t[3] * 1e-9;
  /* A NONE slot's size does not matter (AICB leaves the TP size in some of them). */
  r->fwd_bytes = r->fwd_coll == WL_COLL_NONE ? 0 : (double)b[0];
  r->ig_bytes = r->ig_coll == WL_COLL_NONE ? 0 : (double)b[1];
  r->wg_bytes = r->wg_coll == WL_COLL_NONE ? 0 : (double)b[2];
  return 0;
}

/* The next line into *line; 1, 0 at end of file, -1 (NUL byte, too long, read error). */
static int simai_line(struct simai_file *f, struct text_input *in, char **line)
{
  int got = text_input_line(in, line, NULL, f->err, f->errlen);
  if (got > 0)
    f->line = in->line;
  return got;
}

static int read_file(struct simai_file *f, struct text_input *in, struct wl_layout *l)
{
  char *line;
  int got;
  f->line = 1;
  if ((got = simai_line(f, in, &line)) <= 0)
    return got < 0 ? -1 : fail(f, "empty file");
  if (parse_header(f, line, l) != 0)
    return -1;
  f->line = 2;
  long nrows = 0;
  if ((got = simai_line(f, in, &line)) <= 0)
    return got < 0 ? -1 : fail(f, "truncated: missing the row count");
  line += strspn(line, " \t");
  line[strcspn(line, " \t")] = '\0';
  if (parse_num(f, "row count", line, 0, &nrows) != 0)
    return -1;
  if (nrows < 1 || nrows > SIMAI_MAX_ROWS)
    return fail(f, "row count %ld out of range 1..%d", nrows, SIMAI_MAX_ROWS);
  f->rows = calloc((size_t)nrows, sizeof *f->rows);
  if (f->rows == NULL)
    return fail(f, "out of memory");
  while (f->nrows < nrows && (got = simai_line(f, in, &line)) > 0) {
    if (strspn(line, " \t\r\n") == strlen(line))
      continue;
    if (parse_row(f, line, &f->rows[f->nrows]) != 0)
      return -1;
    f->nrows++;
  }
  if (got < 0)
    return -1;
  if (f->nrows < nrows)
    return fail(f, "truncated: the header announces %ld rows, found %d", nrows, f->nrows);
  while ((got = simai_line(f, in, &line)) > 0)
    if (strspn(line, " \t\r\n") != strlen(line))
      return fail(f, "extra row beyond the announced %ld", nrows);
  return got < 0 ? -1 : 0;
}

/* Two rows of the same layer in different micro-batches: same name, comm types, groups and
 * sizes. Compute times may differ (AICB's first micro-batch carries extra embedding time). */
static int rows_alike(const struct simai_row *a, const struct simai_row *b)
{
  return a->name_hash == b->name_hash && a->fwd_coll == b->fwd_coll && a->ig_coll == b->ig_coll &&
         a->wg_coll == b->wg_coll && a->fwd_group == b->fwd_group && a->ig_group == b->ig_group &&
         a->wg_group == b->wg_group && a->fwd_bytes == b->fwd_bytes && a->ig_bytes == b->ig_bytes &&
         a->wg_bytes == b->wg_bytes;
}

int wl_simai_find_blocks(int nrows, int ga, int (*alike)(int i, int j, void *ctx), void *ctx, int *prologue,
                         int *block_len)
{
  if (ga < 2 || nrows < ga)
    return 0;
  /* Longest block first: a block of layers is itself periodic (every transformer layer looks
   * the same), and its sub-periods repeat ga times too. The blocks must cover more than half of
   * the rows, so they contain the middle row c, and c matches the row one block before or after
   * it: a check in O(1) that rules out most lengths before the O(n) scan. */
  int c = nrows / 2;
  for (int len = nrows / ga; len >= 1 && (long)ga * len > nrows / 2; len--) {
    if (!(c + len < nrows && alike(c, c + len, ctx)) && !(c - len >= 0 && alike(c - len, c, ctx)))
      continue;
    long need = (long)(ga - 1) * len, run = 0;
    for (int i = 0; i + len < nrows; i++) {
      run = alike(i, i + len, ctx) ? run + 1 : 0;
      if (run >= need) {
        *prologue = (int)(i - need + 1);
        *block_len = len;
        return 1;
      }
    }
  }
  return 0;
}

static int file_rows_alike(int i, int j, void *ctx)
{
  const struct simai_file *f = ctx;
  return rows_alike(&f->rows[i], &f->rows[j]);
}

/* Splits the rows into prologue, micro-batch blocks and epilogue, or refuses a pipeline whose
 * micro-batches cannot be told apart. */
static int find_structure(struct simai_file *f, int pp)
{
  int prologue = 0, len = 0;
  if (wl_simai_find_blocks(f->nrows, (int)f->ga, file_rows_alike, f, &prologue, &len)) {
    f->prologue = prologue;
    f->block_len = len;
    f->nblocks = (int)f->ga;
    return 0;
  }
  if (f->ga > 1 && pp > 1) {
    f->line = 1;
    return fail(f,
                "pp %d with ga %ld: the rows do not hold %ld repeated micro-batch blocks (rows "
                "with the same names, comm types and sizes, as AICB writes them), so the "
                "micro-batches cannot be scheduled through the pipeline",
                pp, f->ga, f->ga);
  }
  /* One pass over the rows, as SimAI runs them: every row belongs to one micro-batch. */
  f->prologue = 0;
  f->block_len = f->nrows;
  f->nblocks = 1;
  return 0;
}

static int emit(struct wl_program *p, struct wl_op o) { return wl_program_add(p, &o, NULL, 0); }

static int emit_compute(struct wl_program *p, struct wl_op ctx, double s, enum wl_cclass c)
{
  if (s <= 0)
    return 0;
  ctx.kind = WL_OP_COMPUTE;
  ctx.cclass = c;
  ctx.duration_s = s;
  return emit(p, ctx);
}

static int emit_coll(struct wl_program *p, struct wl_op ctx, enum wl_coll c, enum wl_group g, double bytes,
                     int is_async)
{
  if (c == WL_COLL_NONE)
    return 0;
  ctx.kind = WL_OP_COLL;
  ctx.coll = c;
  ctx.group = g;
  ctx.bytes = bytes;
  ctx.is_async = is_async;
  return emit(p, ctx);
}

struct builder {
  const struct simai_file *f;
  struct wl_program *p;
  int stage, pp;
  int *pending, npending; /* async weight-gradient collectives, joined before the optimizer */
};

/* Forward of rows [first, end): compute, then the blocking forward collective (SimAI waits for
 * it before the next layer). */
static int forward_rows(struct builder *b, int first, int end, int micro)
{
  struct wl_op ctx = { .phase = WL_PHASE_FORWARD, .micro = micro };
  for (int i = first; i < end; i++) {
    const struct simai_row *r = &b->f->rows[i];
    ctx.layer = i;
    if (emit_compute(b->p, ctx, r->fwd_s, WL_CC_GEMM) < 0 ||
        emit_coll(b->p, ctx, r->fwd_coll, r->fwd_group, r->fwd_bytes, 0) < 0)
      return -1;
  }
  return 0;
}

/* Backward of rows [first, end) in reverse: input-grad compute and its blocking collective,
 * weight-grad compute and its collective, which SimAI issues non-blocking (async here). */
static int backward_rows(struct builder *b, int first, int end, int micro)
{
  struct wl_op ctx = { .phase = WL_PHASE_BACKWARD, .micro = micro };
  for (int i = end - 1; i >= first; i--) {
    const struct simai_row *r = &b->f->rows[i];
    ctx.layer = i;
    if (emit_compute(b->p, ctx, r->ig_s, WL_CC_GEMM) < 0 ||
        emit_coll(b->p, ctx, r->ig_coll, r->ig_group, r->ig_bytes, 0) < 0 ||
        emit_compute(b->p, ctx, r->wg_s, WL_CC_GEMM) < 0)
      return -1;
    int id = emit_coll(b->p, ctx, r->wg_coll, r->wg_group, r->wg_bytes, 1);
    if (id < 0)
      return -1;
    if (r->wg_coll != WL_COLL_NONE)
      b->pending[b->npending++] = id;
  }
  return 0;
}

static int p2p(struct builder *b, enum wl_op_kind kind, enum wl_phase ph, int micro, int peer)
{
  struct wl_op o = { .kind = kind,
                     .phase = ph,
                     .micro = micro,
                     .layer = -1,
                     .group = WL_GROUP_PP,
                     .peer = peer,
                     .tag = 2L * micro + (ph == WL_PHASE_BACKWARD),
                     .bytes = (double)b->f->pp_comm,
                     .is_async = kind == WL_OP_SEND };
  return emit(b->p, o);
}

/* Micro-batch block m: activations come from the previous stage and go to the next one
 * (pp_comm bytes each way, the message SimAI's analytical model charges 2·GA times). */
static int forward_block(struct builder *b, int m)
{
  const struct simai_file *f = b->f;
  int first = f->prologue + m * f->block_len;
  if (b->stage > 0 && p2p(b, WL_OP_RECV, WL_PHASE_FORWARD, m, -1) < 0)
    return -1;
  if (forward_rows(b, first, first + f->block_len, m) != 0)
    return -1;
  if (b->stage < b->pp - 1 && p2p(b, WL_OP_SEND, WL_PHASE_FORWARD, m, +1) < 0)
    return -1;
  return 0;
}

static int backward_block(struct builder *b, int m)
{
  const struct simai_file *f = b->f;
  int first = f->prologue + m * f->block_len;
  if (b->stage < b->pp - 1 && p2p(b, WL_OP_RECV, WL_PHASE_BACKWARD, m, +1) < 0)
    return -1;
  if (backward_rows(b, first, first + f->block_len, m) != 0)
    return -1;
  if (b->stage > 0 && p2p(b, WL_OP_SEND, WL_PHASE_BACKWARD, m, -1) < 0)
    return -1;
  return 0;
}

/* The rows in SimAI's order, with the micro-batch blocks in Megatron-LM's 1F1B order
 * (PipeDream-Flush, Narayanan et al., SC'21 §2.2.1): prologue forward; the blocks; the epilogue
 * right after the last block's forward (forward, then backward, as in SimAI's pass, where it
 * sits between the last forward and the first backward); the prologue backward; then a wait for
 * the weight-gradient collectives and one optimizer op of the rows' update times. */
static int build_program(const struct simai_file *f, const struct wl_trace *t, int stage, struct wl_program *p)
{
  struct builder b = { .f = f, .p = p, .stage = stage, .pp = t->layout.pp };
  int m = f->nblocks, epilogue = f->prologue + m * f->block_len, rc = -1;
  struct wl_sched_step *steps = malloc(sizeof *steps * 2 * (size_t)m);
  b.pending = malloc(sizeof *b.pending * (size_t)f->nrows);
  if (steps == NULL || b.pending == NULL)
    goto out;
  if (forward_rows(&b, 0, f->prologue, -1) != 0)
    goto out;
  int nsteps = wl_schedule_1f1b(b.pp, stage, m, steps);
  for (int k = 0; k < nsteps; k++) {
    if (steps[k].is_backward ? backward_block(&b, steps[k].micro) : forward_block(&b, steps[k].micro))
      goto out;
    if (!steps[k].is_backward && steps[k].micro == m - 1 &&
        (forward_rows(&b, epilogue, f->nrows, -1) != 0 || backward_rows(&b, epilogue, f->nrows, -1) != 0))
      goto out;
  }
  if (backward_rows(&b, 0, f->prologue, -1) != 0)
    goto out;
  struct wl_op ctx = { .phase = WL_PHASE_OPTIMIZER, .micro = -1, .layer = -1 };
  if (b.npending > 0) {
    ctx.kind = WL_OP_WAIT;
    if (wl_program_add(p, &ctx, b.pending, b.npending) < 0)
      goto out;
  }
  /* SimAI adds a row's update time after each of its collectives completes; here the rows'
   * update times are one optimizer op at the end (AICB writes 100 ns per row). */
  double update = 0;
  for (int i = 0; i < f->nrows; i++)
    update += f->rows[i].update_s;
  if (emit_compute(p, ctx, update, WL_CC_OPTIMIZER) < 0)
    goto out;
  rc = 0;
out:
  free(steps);
  free(b.pending);
  return rc;
}

struct wl_trace *wl_simai_load(const char *path, int platform_gpus, char *err, size_t errlen)
{
  FILE *in = text_input_open(path, "SimAI workload file", err, errlen);
  if (in == NULL)
    return NULL;
  struct wl_trace *t = wl_simai_read(in, path, platform_gpus, err, errlen);
  fclose(in);
  return t;
}

struct wl_trace *wl_simai_read(FILE *stream, const char *path, int platform_gpus, char *err, size_t errlen)
{
  struct simai_file f = { .path = path, .err = err, .errlen = errlen, .platform_gpus = platform_gpus };
  struct wl_trace *t = NULL;
  struct text_input in;
  text_input_init(&in, stream, path, 8190);
  struct wl_layout l;
  int read_rc = read_file(&f, &in, &l);
  text_input_free(&in);
  if (read_rc != 0 || find_structure(&f, l.pp) != 0)
    goto close_file;
  t = wl_trace_new();
  if (t == NULL)
    goto fail_trace;
  t->layout = l;
  t->microbatches = (int)f.ga;
  t->global_batch = f.ga * l.dp;
  snprintf(t->model.name, sizeof t->model.name, "simai");
  snprintf(t->generator, sizeof t->generator, "simai-import/prologue=%d/blocks=%dx%d/epilogue=%d", f.prologue,
           f.nblocks, f.block_len, f.nrows - f.prologue - f.nblocks * f.block_len);
  /* No GPU type: the file does not say (AICB's published traces are A100 measurements), so the
   * replay takes the platform's. */
  t->gpu[0] = '\0';
  if (wl_trace_alloc_stages(t) != 0)
    goto fail_trace;
  for (int s = 0; s < l.pp; s++)
    if (build_program(&f, t, s, &t->programs[s]) != 0) {
      if (t->programs[s].nops >= WL_MAX_OPS) {
        snprintf(err, errlen, "%s:0: stage %d needs more than the limit of %d ops (ga=%ld x %d rows)", path, s,
                 WL_MAX_OPS, f.ga, f.nrows);
        wl_trace_free(t);
        t = NULL;
        goto close_file;
      }
      goto fail_trace;
    }
  goto close_file;
fail_trace:
  snprintf(err, errlen, "%s:0: out of memory", path);
  wl_trace_free(t);
  t = NULL;
close_file:
  free(f.rows);
  return t;
}
