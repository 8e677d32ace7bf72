/* The native text format (docs/workload-format.md): writer and loader. */
#include "wl_trace.h"

#include "atomic_file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text_input.h"

#define MAX_TOKENS 48
#define LINE_MAX_CHARS 65536

/* The header lines' fields ("model name=... layers=...", "layout ...", "batch ...", "generator
 * ...", "flops ..."): one table, which the writer prints from and the reader parses into, so
 * that the two cannot disagree on a name, an order or a type. */
enum field_type { F_INT, F_LONG, F_DOUBLE, F_STR };
struct field {
  const char *key;
  enum field_type type;
  void *ptr;
  size_t size; /* F_STR: buffer size */
};
enum { H_MODEL = 12, H_LAYOUT = 7, H_BATCH = 7, H_GENERATOR = 2, H_FLOPS = 2 };
struct header_fields {
  struct field model[H_MODEL], layout[H_LAYOUT], batch[H_BATCH], generator[H_GENERATOR], flops[H_FLOPS];
};

static void header_fields_init(struct header_fields *h, struct wl_trace *t)
{
  struct wl_model *m = &t->model;
  struct wl_layout *l = &t->layout;
  const struct header_fields fields = {
    .model = { { "name", F_STR, m->name, sizeof m->name },
               { "layers", F_INT, &m->layers, 0 },
               { "hidden", F_INT, &m->hidden, 0 },
               { "heads", F_INT, &m->heads, 0 },
               { "kv_heads", F_INT, &m->kv_heads, 0 },
               { "ffn", F_INT, &m->ffn, 0 },
               { "vocab", F_INT, &m->vocab, 0 },
               { "seq", F_INT, &m->seq, 0 },
               { "experts", F_INT, &m->experts, 0 },
               { "topk", F_INT, &m->topk, 0 },
               { "gated", F_INT, &m->gated_mlp, 0 },
               { "tied", F_INT, &m->tied_embeddings, 0 } },
    .layout = { { "gpus", F_INT, &l->gpus, 0 },
                { "tp", F_INT, &l->tp, 0 },
                { "pp", F_INT, &l->pp, 0 },
                { "vpp", F_INT, &l->vpp, 0 },
                { "dp", F_INT, &l->dp, 0 },
                { "ep", F_INT, &l->ep, 0 },
                { "cp", F_INT, &l->cp, 0 } },
    .batch = { { "micro", F_INT, &t->micro_batch, 0 },
               { "global", F_LONG, &t->global_batch, 0 },
               { "microbatches", F_INT, &t->microbatches, 0 },
               { "recompute", F_INT, &t->recompute, 0 },
               { "zero1", F_INT, &t->zero1, 0 },
               { "seq_parallel", F_INT, &t->seq_parallel, 0 },
               { "grad_bytes", F_INT, &t->grad_bytes, 0 } },
    .generator = { { "seed", F_LONG, &t->seed, 0 }, { "by", F_STR, t->generator, sizeof t->generator } },
    .flops = { { "model", F_DOUBLE, &t->model_flops, 0 }, { "hardware", F_DOUBLE, &t->hardware_flops, 0 } },
  };
  *h = fields;
}

/* "NAME key=value key=value ...\n" from a header table. */
static void write_fields(FILE *out, const char *name, const struct field *fields, int n)
{
  fputs(name, out);
  for (int i = 0; i < n; i++) {
    const struct field *f = &fields[i];
    switch (f->type) {
    case F_INT: fprintf(out, " %s=%d", f->key, *(const int *)f->ptr); break;
    case F_LONG: fprintf(out, " %s=%ld", f->key, *(const long *)f->ptr); break;
    case F_DOUBLE: fprintf(out, " %s=%.17g", f->key, *(const double *)f->ptr); break;
    case F_STR: fprintf(out, " %s=%s", f->key, (const char *)f->ptr); break;
    }
  }
  fputc('\n', out);
}

static void write_int_list(FILE *out, const char *key, const int *v, int n)
{
  fprintf(out, " %s=", key);
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%d", i ? "," : "", v[i]);
}

/* The op's kernel shapes: gemm=M:N:K[xC],... attn=BH:SQ:SKV:D:causal|full,... ew=KIND:BYTES[xC],... */
static void write_kernels(FILE *out, const struct wl_program *p, const struct wl_op *o)
{
  int n;
  const struct wl_kernel *k = wl_op_kernels(p, o, &n);
  for (int type = 0; type < WL_K_COUNT; type++) {
    int first = 1;
    for (int i = 0; i < n; i++) {
      if ((int)k[i].type != type)
        continue;
      fputs(first ? (type == WL_K_GEMM ? " gemm=" : type == WL_K_ATTN ? " attn=" : " ew=") : ",", out);
      first = 0;
      if (type == WL_K_GEMM)
        fprintf(out, "%.17g:%.17g:%.17g", k[i].a, k[i].b, k[i].c);
      else if (type == WL_K_ATTN)
        fprintf(out, "%.17g:%.17g:%.17g:%.17g:%s", k[i].a, k[i].b, k[i].c, k[i].d, k[i].sub ? "causal" : "full");
      else
        fprintf(out, "%s:%.17g", wl_ew_kind_name(k[i].sub), k[i].a);
      if (k[i].count > 1)
        fprintf(out, "x%d", k[i].count);
    }
  }
}

static void write_op(FILE *out, const struct wl_program *p, int id)
{
  const struct wl_op *o = &p->ops[id];
  fprintf(out, "%d %s ph=%s", id, wl_op_kind_name(o->kind), wl_phase_name(o->phase));
  if (o->micro >= 0)
    fprintf(out, " mb=%d", o->micro);
  if (o->chunk != 0)
    fprintf(out, " ch=%d", o->chunk);
  if (o->layer >= 0)
    fprintf(out, " l=%d", o->layer);
  switch (o->kind) {
  case WL_OP_COMPUTE:
    fprintf(out, " class=%s", wl_cclass_name(o->cclass));
    if (o->duration_s > 0)
      fprintf(out, " time=%.17g", o->duration_s);
    else
      fprintf(out, " flops=%.17g mem=%.17g", o->flops, o->mem_bytes);
    write_kernels(out, p, o);
    break;
  case WL_OP_COLL:
    fprintf(out, " coll=%s group=%s bytes=%.17g", wl_coll_name(o->coll), wl_group_name(o->group), o->bytes);
    break;
  case WL_OP_SEND:
  case WL_OP_RECV:
    fprintf(out, " group=%s peer=%+d tag=%ld bytes=%.17g", wl_group_name(o->group), o->peer, o->tag, o->bytes);
    break;
  default: break;
  }
  if (o->is_async)
    fprintf(out, " async");
  if (o->ndeps > 0)
    write_int_list(out, "deps", p->deps + o->dep_first, o->ndeps);
  fputc('\n', out);
}

int wl_trace_write(const struct wl_trace *t, FILE *out)
{
  const struct wl_layout *l = &t->layout;
  int nv = l->pp * l->vpp;
  fprintf(out, "sgf-workload %d\n", WL_FORMAT_VERSION);
  fprintf(out, "# SPMD trace: every rank runs the program of its pipeline stage; "
               "see docs/workload-format.md\n");
  /* The header tables point into a copy: the writer reads through them, and an unnamed generator
   * is written as "unknown". */
  struct wl_trace header = *t;
  if (header.generator[0] == '\0')
    snprintf(header.generator, sizeof header.generator, "unknown");
  struct header_fields h;
  header_fields_init(&h, &header);
  write_fields(out, "model", h.model, H_MODEL);
  write_fields(out, "layout", h.layout, H_LAYOUT);
  fprintf(out, "gpu %s\n", t->gpu[0] ? t->gpu : "H100");
  write_fields(out, "batch", h.batch, H_BATCH);
  write_fields(out, "generator", h.generator, H_GENERATOR);
  write_fields(out, "flops", h.flops, H_FLOPS);
  fprintf(out, "stages");
  write_int_list(out, "layers", t->stage_layers, l->pp);
  write_int_list(out, "vfirst", t->stage_first_layer, nv);
  write_int_list(out, "vlayers", t->vstage_layers, nv);
  fputc('\n', out);
  for (int s = 0; s < l->pp; s++) {
    const struct wl_program *p = &t->programs[s];
    fprintf(out, "program %d ops=%d\n", s, p->nops);
    for (int i = 0; i < p->nops; i++)
      write_op(out, p, i);
    fprintf(out, "end\n");
  }
  return ferror(out) ? -1 : 0;
}

int wl_trace_save(const struct wl_trace *t, const char *path, char *err, size_t errlen)
{
  /* Written next to its final name and renamed when complete: never a half-written trace,
   * and never anything but a regular file replaced (atomic_file.h). */
  struct atomic_file af;
  FILE *f = atomic_file_open(&af, path, err, errlen);
  if (f == NULL)
    return -1;
  errno = 0;
  if (wl_trace_write(t, f) != 0) {
    int saved = errno ? errno : EIO; /* a full disk (ENOSPC), a file-size limit (EFBIG) */
    atomic_file_abort(&af);
    snprintf(err, errlen, "%s: cannot write the workload: %s", path, strerror(saved));
    return -1;
  }
  return atomic_file_commit(&af, err, errlen);
}

/* Loader state: the file being read, for "FILE:LINE: message" errors. */
struct reader {
  const char *path;
  struct text_input in;
  int line;
  char *buf;
  char *tok[MAX_TOKENS];
  int ntok;
  char *err;
  size_t errlen;
};

static int fail(struct reader *r, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf(r->err, r->errlen, "%s:%d: ", r->path, r->line);
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < r->errlen)
    vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* Reads the next non-empty, non-comment line and splits it; 0, 1 at end of file, -1. */
static int next_line(struct reader *r)
{
  int got;
  while ((got = text_input_line(&r->in, &r->buf, NULL, r->err, r->errlen)) > 0) {
    r->line = r->in.line;
    r->ntok = 0;
    for (char *s = strtok(r->buf, " \t\r\n"); s != NULL; s = strtok(NULL, " \t\r\n")) {
      if (s[0] == '#')
        break;
      if (r->ntok == MAX_TOKENS)
        return fail(r, "more than %d fields", MAX_TOKENS);
      r->tok[r->ntok++] = s;
    }
    if (r->ntok > 0)
      return 0;
  }
  if (got < 0) {
    r->line = r->in.line + 1;
    return -1; /* NUL byte, line too long, read error: the message is in r->err */
  }
  return 1;
}

static int parse_double(struct reader *r, const char *key, const char *s, double *v)
{
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(x))
    return fail(r, "field '%s': '%s' is not a number", key, s);
  if (x < 0)
    return fail(r, "field '%s': negative value %s", key, s);
  *v = x;
  return 0;
}

static int parse_long(struct reader *r, const char *key, const char *s, long *v, int allow_neg)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || *s == ' ')
    return fail(r, "field '%s': '%s' is not an integer%s", key, s, errno == ERANGE ? " (out of range)" : "");
  if (x < 0 && !allow_neg)
    return fail(r, "field '%s': negative value %s", key, s);
  *v = x;
  return 0;
}

static int parse_int(struct reader *r, const char *key, const char *s, int *v, int allow_neg)
{
  long x = 0; /* set on success; initialised for -Wmaybe-uninitialized */
  if (parse_long(r, key, s, &x, allow_neg) != 0)
    return -1;
  if (x > 2147483647L || x < -2147483647L)
    return fail(r, "field '%s': %s out of range", key, s);
  *v = (int)x;
  return 0;
}

static int parse_int_list(struct reader *r, const char *key, char *s, int *out, int n)
{
  int i = 0;
  for (char *p = s; i < n; i++) {
    char *comma = strchr(p, ',');
    if (comma != NULL)
      *comma = '\0';
    if (parse_int(r, key, p, &out[i], 0) != 0)
      return -1;
    if (comma == NULL) {
      i++;
      break;
    }
    p = comma + 1;
  }
  if (i != n)
    return fail(r, "field '%s': expected %d values", key, n);
  return 0;
}

/* Parses "key=value" tokens tok[first..] into the table; unknown keys are errors. */
static int parse_fields(struct reader *r, int first, const struct field *fields, int nfields)
{
  for (int i = first; i < r->ntok; i++) {
    char *eq = strchr(r->tok[i], '=');
    if (eq == NULL)
      return fail(r, "'%s': expected key=value", r->tok[i]);
    *eq = '\0';
    const char *key = r->tok[i], *val = eq + 1;
    int k = 0;
    while (k < nfields && strcmp(fields[k].key, key) != 0)
      k++;
    if (k == nfields)
      return fail(r, "unknown field '%s' in '%s' line", key, r->tok[0]);
    const struct field *f = &fields[k];
    int rc = 0;
    switch (f->type) {
    case F_INT: rc = parse_int(r, key, val, f->ptr, 0); break;
    case F_LONG: rc = parse_long(r, key, val, f->ptr, 0); break;
    case F_DOUBLE: rc = parse_double(r, key, val, f->ptr); break;
    case F_STR:
      if (strlen(val) >= f->size)
        return fail(r, "field '%s': value too long", key);
      strcpy(f->ptr, val);
      break;
    }
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* One shape number: finite and > 0 (a count suffix "xC" is split off before). */
static int parse_dim(struct reader *r, const char *key, const char *entry, const char *s, double *v)
{
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(x) || x <= 0 || (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
    return fail(r, "field '%s': '%s' in '%s' is not a positive number", key, s, entry);
  if (x > WL_MAX_BYTES)
    return fail(r, "field '%s': '%s' in '%s' is more than 2^50", key, s, entry);
  *v = x;
  return 0;
}

/* Parses one list field (gemm=, attn= or ew=) into k[*n ..]; 0 or -1 with a message. */
static int parse_kernels(struct reader *r, const char *key, char *val, enum wl_ktype type, struct wl_kernel *k, int *n)
{
  static const char *const forms[WL_K_COUNT] = { "M:N:K[xCOUNT]", "BH:SQ:SKV:D:causal|full", "KIND:BYTES[xCOUNT]" };
  if (*val == '\0')
    return fail(r, "field '%s' is empty (expected a comma list of %s)", key, forms[type]);
  for (char *e = val, *next; e != NULL; e = next) {
    next = strchr(e, ',');
    if (next != NULL)
      *next++ = '\0';
    if (*e == '\0')
      return fail(r, "field '%s': an empty entry in the list", key);
    if (*n == WL_MAX_OP_KERNELS)
      return fail(r, "field '%s': more than %d kernels in one op", key, WL_MAX_OP_KERNELS);
    char entry[128];
    snprintf(entry, sizeof entry, "%s", e);
    struct wl_kernel kk = { .type = type, .count = 1 };
    char *part[6];
    int np = 0;
    for (char *q = e;; q++) {
      if (np == 6)
        return fail(r, "field '%s': '%s' is not %s", key, entry, forms[type]);
      part[np++] = q;
      q = strchr(q, ':');
      if (q == NULL)
        break;
      *q = '\0';
    }
    int want = type == WL_K_GEMM ? 3 : type == WL_K_ATTN ? 5 : 2;
    if (np != want)
      return fail(r, "field '%s': '%s' is not %s", key, entry, forms[type]);
    if (type != WL_K_ATTN) {
      char *x = strchr(part[np - 1], 'x');
      if (x != NULL && x != part[np - 1] && !(x == part[np - 1] + 1 && part[np - 1][0] == '0')) {
        *x = '\0';
        long c = 0;
        char *end;
        errno = 0;
        c = strtol(x + 1, &end, 10);
        if (end == x + 1 || *end != '\0' || errno != 0 || c < 1 || c > 1000000)
          return fail(r, "field '%s': count '%s' in '%s' is not an integer in 1..1000000", key, x + 1, entry);
        kk.count = (int)c;
      }
    }
    double *dims[4] = { &kk.a, &kk.b, &kk.c, &kk.d };
    if (type == WL_K_MEM) {
      int kind = wl_ew_kind_parse(part[0]);
      if (kind < 0)
        return fail(r,
                    "field '%s': unknown kernel kind '%s' in '%s' (norm, act, residual, rotary, dropout, "
                    "softmax, xent, embed, gradnorm, adam, other)",
                    key, part[0], entry);
      kk.sub = kind;
      if (parse_dim(r, key, entry, part[1], &kk.a) != 0)
        return -1;
    } else {
      int ndims = type == WL_K_GEMM ? 3 : 4;
      for (int i = 0; i < ndims; i++)
        if (parse_dim(r, key, entry, part[i], dims[i]) != 0)
          return -1;
      if (type == WL_K_ATTN) {
        if (strcmp(part[4], "causal") == 0)
          kk.sub = 1;
        else if (strcmp(part[4], "full") != 0)
          return fail(r, "field '%s': '%s' in '%s' is neither 'causal' nor 'full'", key, part[4], entry);
      }
    }
    k[(*n)++] = kk;
  }
  return 0;
}

static int parse_op(struct reader *r, struct wl_program *p, int *deps_buf, int max_deps)
{
  struct wl_op o = { .micro = -1, .layer = -1 };
  struct wl_kernel kbuf[WL_MAX_OP_KERNELS];
  int nk = 0, seen_k[WL_K_COUNT] = { 0 };
  int id = 0, ndeps = 0, has_bytes = 0, has_group = 0, has_coll = 0, has_peer = 0, has_work = 0;
  if (r->ntok < 2)
    return fail(r, "truncated op line");
  if (parse_int(r, "id", r->tok[0], &id, 0) != 0)
    return -1;
  if (id != p->nops)
    return fail(r, "op id %d out of sequence (expected %d)", id, p->nops);
  int kind = wl_op_kind_parse(r->tok[1]);
  if (kind < 0)
    return fail(r, "unknown op '%s'", r->tok[1]);
  o.kind = kind;
  for (int i = 2; i < r->ntok; i++) {
    char *key = r->tok[i], *val = strchr(key, '=');
    if (strcmp(key, "async") == 0) {
      o.is_async = 1;
      continue;
    }
    if (val == NULL)
      return fail(r, "'%s': expected key=value", key);
    *val++ = '\0';
    int rc = 0, v;
    if (strcmp(key, "ph") == 0) {
      if ((v = wl_phase_parse(val)) < 0)
        return fail(r, "unknown phase '%s'", val);
      o.phase = v;
    } else if (strcmp(key, "mb") == 0) {
      rc = parse_int(r, key, val, &o.micro, 0);
    } else if (strcmp(key, "ch") == 0) {
      rc = parse_int(r, key, val, &o.chunk, 0);
    } else if (strcmp(key, "l") == 0) {
      rc = parse_int(r, key, val, &o.layer, 0);
    } else if (strcmp(key, "class") == 0) {
      if ((v = wl_cclass_parse(val)) < 0)
        return fail(r, "unknown compute class '%s'", val);
      o.cclass = v;
    } else if (strcmp(key, "flops") == 0) {
      rc = parse_double(r, key, val, &o.flops);
      has_work = 1;
    } else if (strcmp(key, "mem") == 0) {
      rc = parse_double(r, key, val, &o.mem_bytes);
      has_work = 1;
    } else if (strcmp(key, "time") == 0) {
      rc = parse_double(r, key, val, &o.duration_s);
      has_work = 1;
    } else if (strcmp(key, "gemm") == 0 || strcmp(key, "attn") == 0 || strcmp(key, "ew") == 0) {
      enum wl_ktype type = key[0] == 'g' ? WL_K_GEMM : key[0] == 'a' ? WL_K_ATTN : WL_K_MEM;
      if (o.kind != WL_OP_COMPUTE)
        return fail(r, "field '%s' is only for compute ops", key);
      if (seen_k[type]++)
        return fail(r, "field '%s' given twice", key);
      rc = parse_kernels(r, key, val, type, kbuf, &nk);
    } else if (strcmp(key, "coll") == 0) {
      if ((v = wl_coll_parse(val)) <= 0)
        return fail(r, "unknown collective '%s'", val);
      o.coll = v;
      has_coll = 1;
    } else if (strcmp(key, "group") == 0) {
      if ((v = wl_group_parse(val)) <= 0)
        return fail(r, "unknown group '%s'", val);
      o.group = v;
      has_group = 1;
    } else if (strcmp(key, "bytes") == 0) {
      rc = parse_double(r, key, val, &o.bytes);
      if (rc == 0 && !wl_bytes_valid(o.bytes))
        return fail(r, "field 'bytes': %s is not a whole number of bytes in 0..2^50", val);
      has_bytes = 1;
    } else if (strcmp(key, "peer") == 0) {
      rc = parse_int(r, key, val, &o.peer, 1);
      has_peer = 1;
    } else if (strcmp(key, "tag") == 0) {
      rc = parse_long(r, key, val, &o.tag, 0);
    } else if (strcmp(key, "deps") == 0) {
      for (char *d = strtok(val, ","); d != NULL; d = strtok(NULL, ",")) {
        if (ndeps == max_deps)
          return fail(r, "more than %d dependencies", max_deps);
        if (parse_int(r, "deps", d, &deps_buf[ndeps], 0) != 0)
          return -1;
        if (deps_buf[ndeps] >= id)
          return fail(r, "dependency %d is not an earlier op", deps_buf[ndeps]);
        ndeps++;
      }
    } else {
      return fail(r, "unknown field '%s' for op '%s'", key, r->tok[1]);
    }
    if (rc != 0)
      return -1;
  }
  switch (o.kind) {
  case WL_OP_COMPUTE:
    if (!has_work)
      return fail(r, "compute op needs flops=/mem= or time=");
    break;
  case WL_OP_COLL:
    if (!has_coll || !has_group || !has_bytes)
      return fail(r, "coll op needs coll=, group= and bytes=");
    break;
  case WL_OP_SEND:
  case WL_OP_RECV:
    if (!has_group || !has_bytes || !has_peer)
      return fail(r, "%s op needs group=, peer= and bytes=", r->tok[1]);
    break;
  case WL_OP_WAIT:
    if (ndeps == 0)
      return fail(r, "wait op needs deps=");
    break;
  default: break;
  }
  if (p->nops >= WL_MAX_OPS)
    return fail(r, "more than the limit of %d ops in one program", WL_MAX_OPS);
  if (nk > 0 && o.duration_s > 0)
    return fail(r, "a compute op with time= takes that time and no kernel shapes");
  int added = wl_program_add(p, &o, deps_buf, ndeps);
  if (added < 0 || wl_program_set_kernels(p, added, kbuf, nk) != 0)
    return fail(r, "out of memory");
  return 0;
}

static int check_group_sizes(struct reader *r, const struct wl_trace *t, const struct wl_op *o, int stage)
{
  if (o->group == WL_GROUP_NONE)
    return 0;
  /* The embedding group has only the first and last stages' ranks as members. */
  if (o->group == WL_GROUP_EMB && stage != 0 && stage != t->layout.pp - 1)
    return fail(r, "group emb on stage %d: only the first and last pipeline stages are its members", stage);
  if (wl_group_size(t, o->group) < 1)
    return fail(r, "group %s is empty in this layout", wl_group_name(o->group));
  if ((o->kind == WL_OP_SEND || o->kind == WL_OP_RECV) && (o->peer == 0 || abs(o->peer) >= wl_group_size(t, o->group)))
    return fail(r, "peer offset %+d outside group %s of %d ranks", o->peer, wl_group_name(o->group),
                wl_group_size(t, o->group));
  return 0;
}

static int load_body(struct reader *r, struct wl_trace *t)
{
  int rc;
  if ((rc = next_line(r)) != 0)
    return rc < 0 ? -1 : fail(r, "empty file: expected 'sgf-workload %d'", WL_FORMAT_VERSION);
  if (strcmp(r->tok[0], "sgf-workload") != 0 || r->ntok != 2)
    return fail(r, "not a sgfabric workload: expected 'sgf-workload %d'", WL_FORMAT_VERSION);
  if (parse_int(r, "version", r->tok[1], &t->version, 0) != 0)
    return -1;
  if (t->version != WL_FORMAT_VERSION)
    return fail(r, "unsupported format version %d (this build reads %d)", t->version, WL_FORMAT_VERSION);
  struct wl_layout *l = &t->layout;
  struct header_fields h;
  header_fields_init(&h, t);
  int have_layout = 0, nprog = 0, deps_buf[4096];
  while ((rc = next_line(r)) == 0) {
    const char *k = r->tok[0];
    if (strcmp(k, "model") == 0) {
      rc = parse_fields(r, 1, h.model, H_MODEL);
    } else if (strcmp(k, "layout") == 0) {
      /* One layout per file: the stages' tables and programs are sized from it. */
      if (have_layout)
        return fail(r, "second 'layout' line (the layout is given once, at line %d)", have_layout);
      rc = parse_fields(r, 1, h.layout, H_LAYOUT);
      char msg[200];
      if (rc == 0 && wl_layout_check(l, msg, sizeof msg) != 0)
        return fail(r, "%s", msg);
      if (rc == 0 && wl_trace_alloc_stages(t) != 0)
        return fail(r, "out of memory");
      have_layout = r->line;
    } else if (strcmp(k, "gpu") == 0) {
      if (r->ntok != 2 || strlen(r->tok[1]) >= sizeof t->gpu)
        return fail(r, "expected 'gpu NAME'");
      strcpy(t->gpu, r->tok[1]);
    } else if (strcmp(k, "batch") == 0) {
      rc = parse_fields(r, 1, h.batch, H_BATCH);
      /* 0 none, 1 full, 2 selective (recomputation of the attention core only). */
      if (rc == 0 && t->recompute > 2)
        return fail(r, "field 'recompute': %d is not 0 (none), 1 (full) or 2 (selective)", t->recompute);
    } else if (strcmp(k, "generator") == 0) {
      rc = parse_fields(r, 1, h.generator, H_GENERATOR);
    } else if (strcmp(k, "flops") == 0) {
      rc = parse_fields(r, 1, h.flops, H_FLOPS);
    } else if (strcmp(k, "stages") == 0 || strcmp(k, "program") == 0) {
      if (!have_layout)
        return fail(r, "'%s' before the 'layout' line", k);
      int nv = l->pp * l->vpp;
      if (strcmp(k, "stages") == 0) {
        for (int i = 1; i < r->ntok; i++) {
          char *eq = strchr(r->tok[i], '=');
          if (eq == NULL)
            return fail(r, "'%s': expected key=value", r->tok[i]);
          *eq = '\0';
          if (strcmp(r->tok[i], "layers") == 0)
            rc = parse_int_list(r, "layers", eq + 1, t->stage_layers, l->pp);
          else if (strcmp(r->tok[i], "vfirst") == 0)
            rc = parse_int_list(r, "vfirst", eq + 1, t->stage_first_layer, nv);
          else if (strcmp(r->tok[i], "vlayers") == 0)
            rc = parse_int_list(r, "vlayers", eq + 1, t->vstage_layers, nv);
          else
            return fail(r, "unknown field '%s' in 'stages' line", r->tok[i]);
          if (rc != 0)
            return -1;
        }
        continue;
      }
      int s = 0, nops = 0;
      if (r->ntok != 3 || strncmp(r->tok[2], "ops=", 4) != 0)
        return fail(r, "expected 'program STAGE ops=N'");
      if (parse_int(r, "program", r->tok[1], &s, 0) != 0 || parse_int(r, "ops", r->tok[2] + 4, &nops, 0) != 0)
        return -1;
      if (s != nprog || s >= l->pp)
        return fail(r, "program %d out of order or beyond pp=%d", s, l->pp);
      struct wl_program *p = &t->programs[s];
      while ((rc = next_line(r)) == 0 && strcmp(r->tok[0], "end") != 0) {
        if (parse_op(r, p, deps_buf, 4096) != 0 || check_group_sizes(r, t, &p->ops[p->nops - 1], s) != 0)
          return -1;
      }
      if (rc < 0)
        return -1;
      if (rc > 0 || p->nops != nops)
        return fail(r, "truncated: program %d declares %d ops, found %d%s", s, nops, p->nops,
                    rc > 0 ? " and no 'end'" : "");
      nprog++;
      continue;
    } else {
      return fail(r, "unknown line '%s'", k);
    }
    if (rc != 0)
      return -1;
  }
  if (rc < 0)
    return -1;
  if (!have_layout)
    return fail(r, "truncated: no 'layout' line");
  if (nprog != l->pp)
    return fail(r, "truncated: %d programs for pp=%d stages", nprog, l->pp);
  return 0;
}

struct wl_trace *wl_trace_read(FILE *in, const char *path, char *err, size_t errlen)
{
  struct reader r = { .path = path, .err = err, .errlen = errlen };
  text_input_init(&r.in, in, path, LINE_MAX_CHARS - 2);
  struct wl_trace *t = wl_trace_new();
  if (t == NULL)
    fail(&r, "out of memory");
  else if (load_body(&r, t) != 0) {
    wl_trace_free(t);
    t = NULL;
  }
  text_input_free(&r.in);
  return t;
}

struct wl_trace *wl_trace_load(const char *path, char *err, size_t errlen)
{
  FILE *in = text_input_open(path, "workload trace", err, errlen);
  if (in == NULL)
    return NULL;
  struct wl_trace *t = wl_trace_read(in, path, err, errlen);
  fclose(in);
  return t;
}
