/* SimAI/AICB workload import. Format as read by SimAI's astra-sim Workload.cc: a policy
 * line with "key: value" fields, the row count, then 12-field rows per layer. */
#include "wl_simai.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_input.h"

#define SIMAI_FIELDS 12
#define SIMAI_MAX_ROWS 1000000

struct simai_row {
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
  enum wl_group fwd_default, wg_default;
  long ga, pp_comm;
  int nrows;
  struct simai_row *rows;
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

static const struct { const char *name; enum wl_coll coll; } comm_types[] = {
    {"NONE", WL_COLL_NONE},
    {"ALLREDUCE", WL_COLL_ALLREDUCE},
    {"ALLGATHER", WL_COLL_ALLGATHER},
    {"REDUCESCATTER", WL_COLL_REDUCE_SCATTER},
    {"ALLTOALL", WL_COLL_ALLTOALL},
    /* astra-sim's All_Reduce_All_to_All is an all-reduce whose phases run as all-to-alls;
     * the result is an all-reduce and the algorithm is the replay's choice. */
    {"ALLREDUCEALLTOALL", WL_COLL_ALLREDUCE},
    {"BROADCAST", WL_COLL_BROADCAST},
};

int wl_simai_comm_type(const char *s, enum wl_group default_group, enum wl_coll *coll,
                       enum wl_group *group)
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

static int parse_num(struct simai_file *f, const char *what, const char *s, int allow_neg,
                     long *v)
{
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0)
    return fail(f, "%s: '%s' is not an integer", what, s);
  if (x < 0 && !allow_neg)
    return fail(f, "%s: negative value %s", what, s);
  *v = (long)x;
  return 0;
}

static int parse_header(struct simai_file *f, char *line, struct wl_layout *l)
{
  char *tok[64];
  int n = 0;
  for (char *s = strtok(line, " \t\r\n"); s != NULL && n < 64; s = strtok(NULL, " \t\r\n"))
    tok[n++] = s;
  if (n == 0)
    return fail(f, "empty first line: expected a SimAI policy such as HYBRID_TRANSFORMER");
  const char *policy = tok[0];
  if (strcmp(policy, "HYBRID_TRANSFORMER") == 0 ||
      strcmp(policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD") == 0) {
    f->fwd_default = WL_GROUP_TP;
    f->wg_default = WL_GROUP_DP;
  } else if (strcmp(policy, "DATA") == 0) {
    f->fwd_default = WL_GROUP_DP;
    f->wg_default = WL_GROUP_DP;
  } else if (strcmp(policy, "MICRO") == 0) {
    f->fwd_default = WL_GROUP_WORLD;
    f->wg_default = WL_GROUP_WORLD;
  } else {
    return fail(f, "unsupported SimAI policy '%s' (supported: HYBRID_TRANSFORMER, "
                   "HYBRID_TRANSFORMER_FWD_IN_BCKWD, DATA, MICRO)", policy);
  }
  long tp = 1, pp = 1, ep = 1, gpus = 0, vpp = 1, ckpt = 0, ckpt_init = 0;
  f->ga = 1;
  for (int i = 1; i < n; i++) {
    size_t len = strlen(tok[i]);
    if (len < 2 || tok[i][len - 1] != ':')
      return fail(f, "'%s': expected 'key:' followed by a value", tok[i]);
    if (i + 1 >= n)
      return fail(f, "'%s' has no value", tok[i]);
    tok[i][len - 1] = '\0';
    const char *key = tok[i], *val = tok[++i];
    struct { const char *k; long *v; long min; } keys[] = {
        {"model_parallel_NPU_group", &tp, 1}, {"ep", &ep, 1}, {"pp", &pp, 1},
        {"vpp", &vpp, 0}, {"ga", &f->ga, 1}, {"all_gpus", &gpus, 1},
        {"pp_comm", &f->pp_comm, 0}, {"checkpoints", &ckpt, 0},
        {"checkpoint_initiates", &ckpt_init, 0}};
    size_t k = 0;
    while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k].k, key) != 0)
      k++;
    if (k == sizeof keys / sizeof keys[0])
      return fail(f, "unknown header field '%s'", key);
    if (parse_num(f, key, val, 0, keys[k].v) != 0)
      return -1;
    if (*keys[k].v < keys[k].min)
      return fail(f, "%s: %s must be at least %ld", key, val, keys[k].min);
  }
  if (gpus == 0)
    return fail(f, "missing all_gpus");
  if (ckpt != 0 || ckpt_init != 0)
    return fail(f, "checkpoints/checkpoint_initiates lists are not supported (must be 0)");
  if (f->ga > 1000000 || gpus > 1L << 24)
    return fail(f, "ga or all_gpus out of range");
  if (strcmp(policy, "DATA") == 0 || strcmp(policy, "MICRO") == 0)
    tp = 1;
  if (tp > gpus || pp > gpus || ep > gpus)
    return fail(f, "group larger than the job: tp=%ld pp=%ld ep=%ld, all_gpus=%ld", tp, pp, ep,
                gpus);
  if (gpus % (tp * pp) != 0)
    return fail(f, "all_gpus=%ld not divisible by model_parallel_NPU_group*pp = %ld", gpus,
                tp * pp);
  *l = (struct wl_layout){(int)gpus, (int)tp, (int)pp, 1, (int)(gpus / (tp * pp)), (int)ep, 1};
  char msg[200];
  if (wl_layout_check(l, msg, sizeof msg) != 0)
    return fail(f, "%s", msg);
  return 0;
}

static int parse_row(struct simai_file *f, char *line, struct simai_row *r)
{
  char *tok[SIMAI_FIELDS + 1];
  int n = 0;
  for (char *s = strtok(line, " \t\r\n"); s != NULL && n <= SIMAI_FIELDS;
       s = strtok(NULL, " \t\r\n"))
    tok[n++] = s;
  if (n != SIMAI_FIELDS)
    return fail(f, n < SIMAI_FIELDS ? "truncated row: %d fields, expected %d"
                                    : "row has more than %d fields", n < SIMAI_FIELDS ? n : SIMAI_FIELDS,
                SIMAI_FIELDS);
  long dep, t[4], b[3];
  const char *names[] = {"forward compute time", "input-grad compute time",
                         "weight-grad compute time", "update time"};
  const char *bnames[] = {"forward comm bytes", "input-grad comm bytes",
                          "weight-grad comm bytes"};
  if (parse_num(f, "dependency", tok[1], 1, &dep) != 0)
    return -1;
  const int tcol[4] = {2, 5, 8, 11}, bcol[3] = {4, 7, 10}, ccol[3] = {3, 6, 9};
  for (int i = 0; i < 4; i++)
    if (parse_num(f, names[i], tok[tcol[i]], 0, &t[i]) != 0)
      return -1;
  for (int i = 0; i < 3; i++)
    if (parse_num(f, bnames[i], tok[bcol[i]], 0, &b[i]) != 0)
      return -1;
  enum wl_coll *colls[3] = {&r->fwd_coll, &r->ig_coll, &r->wg_coll};
  enum wl_group *groups[3] = {&r->fwd_group, &r->ig_group, &r->wg_group};
  enum wl_group defaults[3] = {f->fwd_default, f->fwd_default, f->wg_default};
  for (int i = 0; i < 3; i++)
    if (wl_simai_comm_type(tok[ccol[i]], defaults[i], colls[i], groups[i]) != 0)
      return fail(f, "unknown comm type '%s' in row '%s'", tok[ccol[i]], tok[0]);
  r->fwd_s = t[0] * 1e-9;
  r->ig_s = t[1] * 1e-9;
  r->wg_s = t[2] * 1e-9;
  r->update_s = t[3] * 1e-9;
  r->fwd_bytes = (double)b[0];
  r->ig_bytes = (double)b[1];
  r->wg_bytes = (double)b[2];
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

static int emit(struct wl_program *p, struct wl_op o)
{
  return wl_program_add(p, &o, NULL, 0);
}

static int emit_compute(struct wl_program *p, struct wl_op ctx, double s, enum wl_cclass c)
{
  if (s <= 0)
    return 0;
  ctx.kind = WL_OP_COMPUTE;
  ctx.cclass = c;
  ctx.duration_s = s;
  return emit(p, ctx);
}

static int emit_coll(struct wl_program *p, struct wl_op ctx, enum wl_coll c, enum wl_group g,
                     double bytes, int is_async)
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

/* All forwards, then all backwards (GPipe order, as SimAI's own loop runs them); weight
 * gradients are reduced once, asynchronously, during the last micro-batch's backward. */
static int build_program(const struct simai_file *f, const struct wl_trace *t, int stage,
                         struct wl_program *p)
{
  int pp = t->layout.pp, rc = 0, *pending = malloc((size_t)f->nrows * 2 * sizeof(int));
  int npending = 0;
  if (pending == NULL)
    return -1;
  for (int g = 0; g < f->ga && rc >= 0; g++) {
    struct wl_op ctx = {.phase = WL_PHASE_FORWARD, .micro = g};
    if (stage > 0 && f->pp_comm > 0)
      rc |= emit(p, (struct wl_op){.kind = WL_OP_RECV, .micro = g, .layer = -1,
                                   .group = WL_GROUP_PP, .peer = -1, .tag = 2L * g,
                                   .bytes = (double)f->pp_comm});
    for (int i = 0; i < f->nrows && rc >= 0; i++) {
      const struct simai_row *r = &f->rows[i];
      ctx.layer = i;
      rc = emit_compute(p, ctx, r->fwd_s, WL_CC_GEMM);
      if (rc >= 0)
        rc = emit_coll(p, ctx, r->fwd_coll, r->fwd_group, r->fwd_bytes, 0);
    }
    if (rc >= 0 && stage < pp - 1 && f->pp_comm > 0)
      rc = emit(p, (struct wl_op){.kind = WL_OP_SEND, .micro = g, .layer = -1,
                                  .group = WL_GROUP_PP, .peer = +1, .tag = 2L * g,
                                  .bytes = (double)f->pp_comm, .is_async = 1});
  }
  for (int g = 0; g < f->ga && rc >= 0; g++) {
    struct wl_op ctx = {.phase = WL_PHASE_BACKWARD, .micro = g};
    int last = g == f->ga - 1;
    if (stage < pp - 1 && f->pp_comm > 0)
      rc = emit(p, (struct wl_op){.kind = WL_OP_RECV, .phase = WL_PHASE_BACKWARD, .micro = g,
                                  .layer = -1, .group = WL_GROUP_PP, .peer = +1,
                                  .tag = 2L * g + 1, .bytes = (double)f->pp_comm});
    for (int i = f->nrows - 1; i >= 0 && rc >= 0; i--) {
      const struct simai_row *r = &f->rows[i];
      ctx.layer = i;
      rc = emit_compute(p, ctx, r->ig_s, WL_CC_GEMM);
      if (rc >= 0)
        rc = emit_coll(p, ctx, r->ig_coll, r->ig_group, r->ig_bytes, 0);
      if (rc >= 0)
        rc = emit_compute(p, ctx, r->wg_s, WL_CC_GEMM);
      int dp_like = r->wg_group == WL_GROUP_DP || r->wg_group == WL_GROUP_DP_EP;
      if (rc >= 0 && r->wg_coll != WL_COLL_NONE && (!dp_like || last)) {
        rc = emit_coll(p, ctx, r->wg_coll, r->wg_group, r->wg_bytes, dp_like);
        if (rc >= 0 && dp_like)
          pending[npending++] = rc;
      }
    }
    if (rc >= 0 && stage > 0 && f->pp_comm > 0)
      rc = emit(p, (struct wl_op){.kind = WL_OP_SEND, .phase = WL_PHASE_BACKWARD, .micro = g,
                                  .layer = -1, .group = WL_GROUP_PP, .peer = -1,
                                  .tag = 2L * g + 1, .bytes = (double)f->pp_comm,
                                  .is_async = 1});
  }
  struct wl_op ctx = {.phase = WL_PHASE_OPTIMIZER, .micro = -1, .layer = -1};
  if (rc >= 0 && npending > 0) {
    ctx.kind = WL_OP_WAIT;
    rc = wl_program_add(p, &ctx, pending, npending);
  }
  double update = 0;
  for (int i = 0; i < f->nrows; i++)
    update += f->rows[i].update_s;
  if (rc >= 0)
    rc = emit_compute(p, ctx, update, WL_CC_OPTIMIZER);
  free(pending);
  return rc < 0 ? -1 : 0;
}

struct wl_trace *wl_simai_load(const char *path, char *err, size_t errlen)
{
  FILE *in = text_input_open(path, "SimAI workload file", err, errlen);
  if (in == NULL)
    return NULL;
  struct wl_trace *t = wl_simai_read(in, path, err, errlen);
  fclose(in);
  return t;
}

struct wl_trace *wl_simai_read(FILE *stream, const char *path, char *err, size_t errlen)
{
  struct simai_file f = {.path = path, .err = err, .errlen = errlen};
  struct wl_trace *t = NULL;
  struct text_input in;
  text_input_init(&in, stream, path, 8190);
  struct wl_layout l;
  int read_rc = read_file(&f, &in, &l);
  text_input_free(&in);
  if (read_rc != 0)
    goto close_file;
  t = wl_trace_new();
  if (t == NULL)
    goto close_file;
  t->layout = l;
  t->microbatches = (int)f.ga;
  t->global_batch = f.ga * l.dp;
  snprintf(t->model.name, sizeof t->model.name, "simai");
  snprintf(t->generator, sizeof t->generator, "simai-import");
  snprintf(t->gpu, sizeof t->gpu, "H100");
  if (wl_trace_alloc_stages(t) != 0)
    goto fail_trace;
  for (int s = 0; s < l.pp; s++)
    if (build_program(&f, t, s, &t->programs[s]) != 0)
      goto fail_trace;
  goto close_file;
fail_trace:
  snprintf(err, errlen, "%s:0: out of memory", path);
  wl_trace_free(t);
  t = NULL;
close_file:
  free(f.rows);
  return t;
}
