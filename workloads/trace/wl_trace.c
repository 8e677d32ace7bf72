/* Trace construction, layout arithmetic and group membership. */
#include "wl_trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const group_names[WL_GROUP_COUNT] = { "none",  "tp", "cp",    "dp",  "ep",
                                                         "dp_ep", "pp", "world", "emb", "mp" };
static const char *const kind_names[WL_OP_KIND_COUNT] = { "compute", "coll", "send", "recv", "wait" };
static const char *const coll_names[WL_COLL_COUNT] = { "none",      "allreduce", "reducescatter",
                                                       "allgather", "alltoall",  "broadcast" };
static const char *const cclass_names[WL_CC_COUNT] = { "gemm", "attn", "elemwise", "optimizer" };
static const char *const phase_names[WL_PHASE_COUNT] = { "fwd", "bwd", "recompute", "opt" };
static const char *const ew_names[WL_EW_COUNT] = { "norm", "act",   "residual", "rotary", "dropout", "softmax",
                                                   "xent", "embed", "gradnorm", "adam",   "other" };

static int name_parse(const char *const *names, int n, const char *s)
{
  for (int i = 0; i < n; i++)
    if (strcasecmp(names[i], s) == 0)
      return i;
  return -1;
}

const char *wl_group_name(enum wl_group g) { return g < WL_GROUP_COUNT ? group_names[g] : "?"; }
const char *wl_op_kind_name(enum wl_op_kind k) { return k < WL_OP_KIND_COUNT ? kind_names[k] : "?"; }
const char *wl_coll_name(enum wl_coll c) { return c < WL_COLL_COUNT ? coll_names[c] : "?"; }
const char *wl_cclass_name(enum wl_cclass c) { return c < WL_CC_COUNT ? cclass_names[c] : "?"; }
const char *wl_phase_name(enum wl_phase p) { return p < WL_PHASE_COUNT ? phase_names[p] : "?"; }
int wl_group_parse(const char *s) { return name_parse(group_names, WL_GROUP_COUNT, s); }
int wl_op_kind_parse(const char *s) { return name_parse(kind_names, WL_OP_KIND_COUNT, s); }
int wl_coll_parse(const char *s) { return name_parse(coll_names, WL_COLL_COUNT, s); }
int wl_cclass_parse(const char *s) { return name_parse(cclass_names, WL_CC_COUNT, s); }
int wl_phase_parse(const char *s) { return name_parse(phase_names, WL_PHASE_COUNT, s); }
const char *wl_ew_kind_name(enum wl_ew_kind k) { return k < WL_EW_COUNT ? ew_names[k] : "?"; }
int wl_ew_kind_parse(const char *s) { return name_parse(ew_names, WL_EW_COUNT, s); }

int wl_layout_check(const struct wl_layout *l, char *err, size_t errlen)
{
  const struct {
    const char *name;
    int v;
  } dims[] = { { "gpus", l->gpus }, { "tp", l->tp }, { "pp", l->pp }, { "vpp", l->vpp },
               { "dp", l->dp },     { "ep", l->ep }, { "cp", l->cp } };
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (dims[i].v < 1) {
      snprintf(err, errlen, "%s=%d must be at least 1", dims[i].name, dims[i].v);
      return -1;
    }
  const struct {
    const char *name;
    int v;
  } groups[] = { { "tp", l->tp }, { "pp", l->pp }, { "dp", l->dp }, { "ep", l->ep }, { "cp", l->cp } };
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    if (groups[i].v > l->gpus) {
      snprintf(err, errlen, "group %s of %d ranks is larger than the job (%d gpus)", groups[i].name, groups[i].v,
               l->gpus);
      return -1;
    }
  if ((long)l->tp * l->cp * l->dp * l->pp != l->gpus) {
    snprintf(err, errlen, "tp*cp*dp*pp = %d*%d*%d*%d = %ld differs from gpus=%d", l->tp, l->cp, l->dp, l->pp,
             (long)l->tp * l->cp * l->dp * l->pp, l->gpus);
    return -1;
  }
  if (l->dp % l->ep != 0) {
    snprintf(err, errlen, "ep=%d does not divide dp=%d (EP is carved out of DP)", l->ep, l->dp);
    return -1;
  }
  if ((long)l->pp * l->vpp > WL_MAX_VSTAGES) {
    snprintf(err, errlen, "pp*vpp = %d*%d = %ld virtual pipeline stages, more than %d", l->pp, l->vpp,
             (long)l->pp * l->vpp, WL_MAX_VSTAGES);
    return -1;
  }
  return 0;
}

int wl_rank_coord(const struct wl_trace *t, int rank, struct wl_coord *c)
{
  const struct wl_layout *l = &t->layout;
  if (rank < 0 || rank >= l->gpus)
    return -1;
  c->tp = rank % l->tp;
  rank /= l->tp;
  c->cp = rank % l->cp;
  rank /= l->cp;
  c->dp = rank % l->dp;
  c->pp = rank / l->dp;
  c->ep = c->dp % l->ep;
  c->edp = c->dp / l->ep;
  return 0;
}

int wl_coord_rank(const struct wl_trace *t, const struct wl_coord *c)
{
  const struct wl_layout *l = &t->layout;
  return c->tp + l->tp * (c->cp + l->cp * (c->dp + l->dp * c->pp));
}

int wl_group_size(const struct wl_trace *t, enum wl_group g)
{
  const struct wl_layout *l = &t->layout;
  switch (g) {
  case WL_GROUP_TP: return l->tp;
  case WL_GROUP_CP: return l->cp;
  case WL_GROUP_DP: return l->dp;
  case WL_GROUP_EP: return l->ep;
  case WL_GROUP_DP_EP: return l->dp / l->ep;
  case WL_GROUP_PP: return l->pp;
  case WL_GROUP_WORLD: return l->gpus;
  case WL_GROUP_EMB: return l->pp > 1 ? 2 : 1;
  case WL_GROUP_MP: return l->tp * l->pp;
  default: return -1;
  }
}

static int member(const struct wl_trace *t, const struct wl_coord *c0, enum wl_group g, int i)
{
  struct wl_coord c = *c0;
  switch (g) {
  case WL_GROUP_TP: c.tp = i; break;
  case WL_GROUP_CP: c.cp = i; break;
  case WL_GROUP_DP: c.dp = i; break;
  case WL_GROUP_EP: c.dp = i + t->layout.ep * c.edp; break;
  case WL_GROUP_DP_EP: c.dp = c.ep + t->layout.ep * i; break;
  case WL_GROUP_PP: c.pp = i; break;
  case WL_GROUP_EMB: c.pp = i == 0 ? 0 : t->layout.pp - 1; break;
  case WL_GROUP_MP:
    c.tp = i % t->layout.tp;
    c.pp = i / t->layout.tp;
    break;
  default: return i;
  }
  return wl_coord_rank(t, &c);
}

int wl_group_index(const struct wl_trace *t, int rank, enum wl_group g)
{
  struct wl_coord c;
  if (wl_rank_coord(t, rank, &c) != 0)
    return -1;
  switch (g) {
  case WL_GROUP_TP: return c.tp;
  case WL_GROUP_CP: return c.cp;
  case WL_GROUP_DP: return c.dp;
  case WL_GROUP_EP: return c.ep;
  case WL_GROUP_DP_EP: return c.edp;
  case WL_GROUP_PP: return c.pp;
  case WL_GROUP_WORLD: return rank;
  case WL_GROUP_EMB: return c.pp == 0 ? 0 : c.pp == t->layout.pp - 1 ? 1 : -1;
  case WL_GROUP_MP: return c.tp + t->layout.tp * c.pp;
  default: return -1;
  }
}

int wl_group_members(const struct wl_trace *t, int rank, enum wl_group g, int *out, int max)
{
  struct wl_coord c;
  int n = wl_group_size(t, g);
  if (n < 0 || wl_rank_coord(t, rank, &c) != 0)
    return -1;
  for (int i = 0; i < n && i < max; i++)
    out[i] = member(t, &c, g, i);
  return n;
}

const struct wl_program *wl_rank_program(const struct wl_trace *t, int rank)
{
  struct wl_coord c;
  if (wl_rank_coord(t, rank, &c) != 0)
    return NULL;
  if (t->rank_programs != NULL)
    return &t->rank_programs[rank];
  return &t->programs[c.pp];
}

int wl_op_peer_rank(const struct wl_trace *t, int rank, const struct wl_op *op)
{
  struct wl_coord c;
  if ((op->kind != WL_OP_SEND && op->kind != WL_OP_RECV) || wl_rank_coord(t, rank, &c) != 0)
    return -1;
  int n = wl_group_size(t, op->group);
  int me = wl_group_index(t, rank, op->group);
  if (n < 1 || me < 0)
    return -1;
  int i = ((me + op->peer) % n + n) % n;
  return member(t, &c, op->group, i);
}

const int *wl_op_deps(const struct wl_program *p, const struct wl_op *op, int *n)
{
  *n = op->ndeps;
  return p->deps + op->dep_first;
}

struct wl_trace *wl_trace_new(void)
{
  struct wl_trace *t = calloc(1, sizeof *t);
  if (t == NULL)
    return NULL;
  t->version = WL_FORMAT_VERSION;
  t->layout = (struct wl_layout){ 1, 1, 1, 1, 1, 1, 1 };
  t->micro_batch = 1;
  t->global_batch = 1;
  t->microbatches = 1;
  t->grad_bytes = 4;
  return t;
}

int wl_trace_alloc_stages(struct wl_trace *t)
{
  int pp = t->layout.pp, nv = pp * t->layout.vpp;
  t->stage_layers = calloc((size_t)pp, sizeof(int));
  t->stage_first_layer = calloc((size_t)nv, sizeof(int));
  t->vstage_layers = calloc((size_t)nv, sizeof(int));
  t->programs = calloc((size_t)pp, sizeof(struct wl_program));
  if (!t->stage_layers || !t->stage_first_layer || !t->vstage_layers || !t->programs)
    return -1;
  return 0;
}

int wl_bytes_valid(double bytes) { return bytes >= 0 && bytes <= WL_MAX_BYTES && bytes == floor(bytes); }

int wl_program_add(struct wl_program *p, const struct wl_op *op, const int *deps, int ndeps)
{
  if (p->nops >= WL_MAX_OPS)
    return -1;
  if (p->nops == p->cap_ops) {
    int cap = p->cap_ops ? 2 * p->cap_ops : 256;
    struct wl_op *ops = realloc(p->ops, (size_t)cap * sizeof *ops);
    if (ops == NULL)
      return -1;
    p->ops = ops;
    p->cap_ops = cap;
  }
  if (p->ndeps + ndeps > p->cap_deps) {
    int cap = p->cap_deps ? 2 * p->cap_deps : 256;
    while (cap < p->ndeps + ndeps)
      cap *= 2;
    int *d = realloc(p->deps, (size_t)cap * sizeof *d);
    if (d == NULL)
      return -1;
    p->deps = d;
    p->cap_deps = cap;
  }
  struct wl_op *o = &p->ops[p->nops];
  *o = *op;
  o->nkern = 0;
  o->kern_first = 0;
  o->ndeps = ndeps;
  o->dep_first = p->ndeps;
  if (ndeps > 0)
    memcpy(p->deps + p->ndeps, deps, (size_t)ndeps * sizeof *deps);
  p->ndeps += ndeps;
  return p->nops++;
}

int wl_program_set_kernels(struct wl_program *p, int id, const struct wl_kernel *k, int n)
{
  if (id < 0 || id >= p->nops || n < 0 || p->ops[id].nkern != 0)
    return -1;
  if (n == 0)
    return 0;
  if (p->nkern + n > p->cap_kern) {
    int cap = p->cap_kern ? 2 * p->cap_kern : 256;
    while (cap < p->nkern + n)
      cap *= 2;
    struct wl_kernel *kk = realloc(p->kern, (size_t)cap * sizeof *kk);
    if (kk == NULL)
      return -1;
    p->kern = kk;
    p->cap_kern = cap;
  }
  memcpy(p->kern + p->nkern, k, (size_t)n * sizeof *k);
  p->ops[id].kern_first = p->nkern;
  p->ops[id].nkern = n;
  p->nkern += n;
  return 0;
}

const struct wl_kernel *wl_op_kernels(const struct wl_program *p, const struct wl_op *op, int *n)
{
  *n = op->nkern;
  return op->nkern > 0 ? p->kern + op->kern_first : NULL;
}

void wl_trace_free(struct wl_trace *t)
{
  if (t == NULL)
    return;
  if (t->programs != NULL)
    for (int s = 0; s < t->layout.pp; s++) {
      free(t->programs[s].ops);
      free(t->programs[s].deps);
      free(t->programs[s].kern);
    }
  free(t->programs);
  if (t->rank_programs != NULL)
    for (int r = 0; r < t->layout.gpus; r++) {
      free(t->rank_programs[r].ops);
      free(t->rank_programs[r].deps);
      free(t->rank_programs[r].kern);
    }
  free(t->rank_programs);
  free(t->stage_layers);
  free(t->stage_first_layer);
  free(t->vstage_layers);
  free(t);
}
