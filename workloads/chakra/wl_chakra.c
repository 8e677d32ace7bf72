/* Chakra execution-trace import ("chakra:PREFIX").
 *
 * A Chakra trace is a dependency graph per rank (MLCommons Chakra, schema/protobuf/et_def.proto;
 * ASTRA-sim reads it through its ET feeder and issues every node whose parents have finished).
 * sgfabric's programs are one ordered stream of ops per rank, with asynchronous communication on
 * per-group streams. The import therefore:
 *   1. decodes each rank file: varint length, GlobalMetadata, then varint length + Node, repeated
 *      (the framing of Chakra's protolib encodeMessage/decodeMessage);
 *   2. sorts each rank's nodes topologically (data_deps and ctrl_deps), ready nodes in file order;
 *   3. infers each process group's members from the ranks whose traces name it (pg_name or
 *      comm_group attribute; none or "0" is every rank, as in ASTRA-sim), and finds a
 *      tp x dp x pp layout in which every group is one of sgfabric's groups (tp, dp, pp, world);
 *   4. emits compute nodes as blocking compute ops (duration_micros, else the roofline of num_ops
 *      and tensor_size), collectives and sends as asynchronous ops on their group's stream with
 *      their dependencies, receives as blocking ops;
 *   5. checks that the members of every group issue the same collectives in the same order and
 *      that every send has its receive, so that a mismatch is refused here rather than left to
 *      deadlock or mis-simulate in the replay. */
#include "wl_chakra.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SGF_HAVE_CHAKRA

int wl_chakra_supported(void) { return 0; }

struct wl_trace *wl_chakra_load(const char *prefix, char *err, size_t errlen)
{
  snprintf(err, errlen,
           "chakra:%s: this sgfabric was built without Chakra execution-trace support (it needs "
           "protoc-c and libprotobuf-c when it is configured: install protobuf-c-compiler and "
           "libprotobuf-c-dev, then re-run cmake, without -DSGF_CHAKRA=OFF, and rebuild)",
           prefix);
  return NULL;
}

#else

#include "chakra_et.pb-c.h"

int wl_chakra_supported(void) { return 1; }

/* A rank file larger than this is refused before it is read (1 GiB: millions of nodes). */
#define CHAKRA_MAX_FILE_BYTES (1L << 30)

enum cnode_kind { CN_NOOP, CN_COMPUTE, CN_COLL, CN_SEND, CN_RECV };

/* One node of a rank's graph, as imported. */
struct cnode {
  uint64_t id;
  long offset; /* byte offset of its message in the file (messages) */
  enum cnode_kind kind;
  enum wl_coll coll;
  int group;                           /* CN_COLL: index in the process-group table, -1 for every rank */
  int peer;                            /* CN_SEND: destination rank; CN_RECV: source rank */
  uint32_t tag;                        /* CN_SEND/CN_RECV: comm_tag */
  double bytes;                        /* CN_COLL/CN_SEND/CN_RECV: comm_size */
  double duration_s, flops, mem_bytes; /* CN_COMPUTE */
  int ndeps;
  int *deps;      /* node indices (resolved ids) */
  int op;         /* op id emitted for it, -1 for none */
  int async;      /* its op is asynchronous (dependents must wait for it) */
  int *eff, neff; /* CN_NOOP: the asynchronous ops it stands for (its dependencies') */
};

struct crank {
  char *path;
  int n, cap;
  struct cnode *nodes;
  int *order; /* topological order, node indices */
  int coll_count[WL_GROUP_COUNT];
};

struct pgroup {
  char *name;
  unsigned char *is_member; /* [nranks] */
  int *members, n;          /* sorted */
  enum wl_group kind;
};

struct importer {
  const char *prefix;
  char *err;
  size_t errlen;
  int nranks;
  struct crank *ranks;
  int npg, cap_pg;
  struct pgroup *pg;
  int n_mem_nodes;    /* MEM_LOAD/MEM_STORE nodes, not modelled */
  int n_host_colls;   /* CPU-side collective calls without comm_type/comm_size */
  int n_missing_ctrl; /* ctrl_deps on ids the file does not have, ignored */
  char version[64];
};

static int failf(struct importer *im, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(im->err, im->errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- Attributes ---------------------------------------------------------------------------- */

static const ChakraProtoMsg__AttributeProto *attr_find(const ChakraProtoMsg__Node *n, const char *name)
{
  for (size_t i = 0; i < n->n_attr; i++)
    if (n->attr[i]->name != NULL && strcmp(n->attr[i]->name, name) == 0)
      return n->attr[i];
  return NULL;
}

/* An integer attribute of any of the schema's integer (or bool) encodings. Chakra's own writers
 * use int64_val for comm_type, comm_size and num_ops, int32_val for comm_src/dst/tag and
 * uint64_val for tensor_size; readers should not depend on which. Returns 1 when present, 0
 * when absent, -1 when present with a value that is not an integer (message in err). */
static int attr_int(struct importer *im, const struct crank *r, long off, const ChakraProtoMsg__Node *n,
                    const char *name, int64_t *v)
{
  const ChakraProtoMsg__AttributeProto *a = attr_find(n, name);
  if (a == NULL)
    return 0;
  switch (a->value_case) {
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *v = a->int32_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *v = a->int64_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *v = a->uint32_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *v = a->sint32_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *v = a->sint64_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *v = a->fixed32_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *v = a->sfixed32_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *v = a->sfixed64_val; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *v = a->bool_val ? 1 : 0; return 1;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: {
    uint64_t u = a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL ? a->uint64_val : a->fixed64_val;
    if (u > (uint64_t)INT64_MAX)
      return failf(im, "%s: byte %ld: node %" PRIu64 ": attribute %s = %" PRIu64 " is out of range", r->path, off,
                   n->id, name, u);
    *v = (int64_t)u;
    return 1;
  }
  default:
    return failf(im, "%s: byte %ld: node %" PRIu64 ": attribute %s has no integer value", r->path, off, n->id, name);
  }
}

/* A required or optional non-negative integer attribute, at most max. */
static int attr_count(struct importer *im, const struct crank *r, long off, const ChakraProtoMsg__Node *n,
                      const char *name, int required, int64_t max, int64_t *v)
{
  int got = attr_int(im, r, off, n, name, v);
  if (got < 0)
    return -1;
  if (got == 0) {
    if (required)
      return failf(im, "%s: byte %ld: node %" PRIu64 " ('%s') has no %s attribute", r->path, off, n->id,
                   n->name ? n->name : "", name);
    return 0;
  }
  if (*v < 0 || *v > max)
    return failf(im, "%s: byte %ld: node %" PRIu64 ": %s = %" PRId64 " is out of range 0..%" PRId64, r->path, off,
                 n->id, name, *v, max);
  return 1;
}

/* ---- Process groups ------------------------------------------------------------------------- */

/* The process group a collective names: pg_name (PyTorch's process-group name, a string in
 * Chakra's converter) or comm_group; none, "" or "0" is the default group of every rank, as in
 * ASTRA-sim's Workload::extract_comm_group. Returns the table index, -1 for every rank, -2 on
 * error. */
static int node_group(struct importer *im, const struct crank *r, long off, const ChakraProtoMsg__Node *n, int rank)
{
  const ChakraProtoMsg__AttributeProto *a = attr_find(n, "pg_name");
  if (a == NULL)
    a = attr_find(n, "comm_group");
  if (a == NULL)
    return -1;
  char name[64];
  if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) {
    if (strlen(a->string_val) >= sizeof name)
      return failf(im, "%s: byte %ld: node %" PRIu64 ": process group name longer than %zu bytes", r->path, off, n->id,
                   sizeof name - 1),
             -2;
    strcpy(name, a->string_val);
  } else {
    int64_t v;
    if (attr_int(im, r, off, n, a->name, &v) < 0)
      return -2;
    snprintf(name, sizeof name, "%" PRId64, v);
  }
  if (name[0] == '\0' || strcmp(name, "0") == 0)
    return -1;
  int g = 0;
  while (g < im->npg && strcmp(im->pg[g].name, name) != 0)
    g++;
  if (g == im->npg) {
    if (im->npg == im->cap_pg) {
      int cap = im->cap_pg ? 2 * im->cap_pg : 8;
      struct pgroup *p = realloc(im->pg, sizeof *p * (size_t)cap);
      if (p == NULL)
        return failf(im, "%s: out of memory", r->path), -2;
      im->pg = p;
      im->cap_pg = cap;
    }
    struct pgroup *p = &im->pg[im->npg];
    memset(p, 0, sizeof *p);
    p->name = malloc(strlen(name) + 1);
    p->is_member = calloc((size_t)im->nranks, 1);
    if (p->name == NULL || p->is_member == NULL) {
      free(p->name);
      free(p->is_member);
      return failf(im, "%s: out of memory", r->path), -2;
    }
    strcpy(p->name, name);
    im->npg++;
  }
  im->pg[g].is_member[rank] = 1;
  return g;
}

/* ---- Decoding ------------------------------------------------------------------------------- */

/* Reads a base-128 varint at buf[*pos] (protobuf encoding). Returns 0, or -1 when the file ends
 * inside it or it is longer than ten bytes. */
static int read_varint(const uint8_t *buf, long size, long *pos, uint64_t *v)
{
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= size)
      return -1;
    uint8_t b = buf[(*pos)++];
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

static int load_file(const char *path, uint8_t **buf, long *size, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  long cap = 1 << 16, n = 0;
  uint8_t *b = malloc((size_t)cap);
  size_t got;
  while (b != NULL && (got = fread(b + n, 1, (size_t)(cap - n), f)) > 0) {
    n += (long)got;
    if (n > CHAKRA_MAX_FILE_BYTES) {
      snprintf(err, errlen, "%s: larger than the limit of %ld bytes", path, CHAKRA_MAX_FILE_BYTES);
      free(b);
      fclose(f);
      return -1;
    }
    if (n == cap) {
      cap *= 2;
      uint8_t *nb = realloc(b, (size_t)cap);
      if (nb == NULL)
        free(b);
      b = nb;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (b == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  if (bad) {
    snprintf(err, errlen, "%s: read error", path);
    free(b);
    return -1;
  }
  *buf = b;
  *size = n;
  return 0;
}

static int id_order(const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  if (x[0] != y[0])
    return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

static struct cnode *add_node(struct crank *r)
{
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 64;
    struct cnode *n = realloc(r->nodes, sizeof *n * (size_t)cap);
    if (n == NULL)
      return NULL;
    r->nodes = n;
    r->cap = cap;
  }
  struct cnode *c = &r->nodes[r->n++];
  memset(c, 0, sizeof *c);
  c->op = -1;
  return c;
}

/* Maps one decoded Node onto a cnode (dependencies are resolved afterwards). */
static int map_node(struct importer *im, struct crank *r, int rank, long off, const ChakraProtoMsg__Node *n,
                    struct cnode *c)
{
  c->id = n->id;
  c->offset = off;
  int64_t v;
  switch (n->type) {
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
    c->kind = CN_COMPUTE;
    /* ASTRA-sim replays a recorded duration (microseconds); without one, the roofline of the
     * node's operations and the bytes it touches (tensor_size), as ASTRA-sim's roofline mode. */
    c->duration_s = (double)n->duration_micros * 1e-6;
    if (attr_count(im, r, off, n, "num_ops", 0, INT64_MAX, &v) < 0)
      return -1;
    c->flops = attr_find(n, "num_ops") ? (double)v : 0;
    if (attr_count(im, r, off, n, "tensor_size", 0, INT64_MAX, &v) < 0)
      return -1;
    c->mem_bytes = attr_find(n, "tensor_size") ? (double)v : 0;
    return 0;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE: {
    int64_t cpu = 0;
    if (attr_int(im, r, off, n, "is_cpu_op", &cpu) < 0)
      return -1;
    if (cpu && attr_find(n, "comm_type") == NULL && attr_find(n, "comm_size") == NULL) {
      /* The host-side call of a collective in a PyTorch host trace that was not linked with its
       * device trace: no operation, size or kernel. Its recorded time is CPU time on the rank's
       * timeline; it moves no data. */
      c->kind = CN_COMPUTE;
      c->duration_s = (double)n->duration_micros * 1e-6;
      im->n_host_colls++;
      return 0;
    }
    c->kind = CN_COLL;
    if (attr_count(im, r, off, n, "comm_type", 1, 1000, &v) < 0)
      return -1;
    switch (v) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE: c->coll = WL_COLL_ALLREDUCE; break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER: c->coll = WL_COLL_ALLGATHER; break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER: c->coll = WL_COLL_REDUCE_SCATTER; break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL: c->coll = WL_COLL_ALLTOALL; break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST: c->coll = WL_COLL_BROADCAST; break;
    default: {
      static const char *names[] = { "ALL_REDUCE", "REDUCE",         "ALL_GATHER",
                                     "GATHER",     "SCATTER",        "BROADCAST",
                                     "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK",
                                     "BARRIER" };
      return failf(im,
                   "%s: byte %ld: node %" PRIu64 " ('%s'): collective %s (comm_type %" PRId64
                   ") is not supported (supported: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, "
                   "ALL_TO_ALL, BROADCAST)",
                   r->path, off, n->id, n->name ? n->name : "", v < 10 ? names[v] : "unknown", v);
    }
    }
    if (attr_count(im, r, off, n, "comm_size", 1, (int64_t)WL_MAX_BYTES, &v) < 0)
      return -1;
    c->bytes = (double)v;
    if ((c->group = node_group(im, r, off, n, rank)) < -1)
      return -1;
    return 0;
  }
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE: {
    int send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
    c->kind = send ? CN_SEND : CN_RECV;
    const char *self_key = send ? "comm_src" : "comm_dst", *peer_key = send ? "comm_dst" : "comm_src";
    int64_t self = rank, peer, tag = 0;
    if (attr_count(im, r, off, n, self_key, 0, WL_CHAKRA_MAX_RANKS - 1, &self) < 0 ||
        attr_count(im, r, off, n, peer_key, 1, WL_CHAKRA_MAX_RANKS - 1, &peer) < 0 ||
        attr_count(im, r, off, n, "comm_size", 1, (int64_t)WL_MAX_BYTES, &v) < 0 ||
        attr_count(im, r, off, n, "comm_tag", 0, UINT32_MAX, &tag) < 0)
      return -1;
    if (!attr_find(n, self_key))
      self = rank;
    if (self != rank)
      return failf(im, "%s: byte %ld: node %" PRIu64 ": a %s of rank %d has %s = %" PRId64, r->path, off, n->id,
                   send ? "send" : "receive", rank, self_key, self);
    if (peer == rank)
      return failf(im, "%s: byte %ld: node %" PRIu64 ": rank %d %s itself", r->path, off, n->id, rank,
                   send ? "sends to" : "receives from");
    if (peer >= im->nranks)
      return failf(im,
                   "%s: byte %ld: node %" PRIu64 " %s rank %" PRId64 ", but there are only %d rank files "
                   "(%s.%" PRId64 ".et is missing)",
                   r->path, off, n->id, send ? "sends to" : "receives from", peer, im->nranks, im->prefix, peer);
    c->peer = (int)peer;
    c->tag = attr_find(n, "comm_tag") ? (uint32_t)tag : 0;
    c->bytes = (double)v;
    return 0;
  }
  case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE:
  case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE:
    /* Remote-memory traffic is not modelled: the node only passes its dependencies on. */
    im->n_mem_nodes++;
    c->kind = CN_NOOP;
    return 0;
  case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
  case CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE: c->kind = CN_NOOP; return 0;
  default: return failf(im, "%s: byte %ld: node %" PRIu64 ": unknown node type %d", r->path, off, n->id, (int)n->type);
  }
}

/* Decodes one rank file into r->nodes, with dependencies as node indices. */
static int read_rank(struct importer *im, int rank)
{
  struct crank *r = &im->ranks[rank];
  uint8_t *buf;
  long size, pos = 0;
  if (load_file(r->path, &buf, &size, im->err, im->errlen) != 0)
    return -1;
  int rc = -1;
  uint64_t(*ids)[2] = NULL;
  uint64_t **rawdeps = NULL;
  int *nraw = NULL, *ndata = NULL, cap_raw = 0;
  if (size == 0) {
    failf(im, "%s: empty file (expected a GlobalMetadata message, then the rank's nodes)", r->path);
    goto out;
  }
  if (size >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
    failf(im, "%s: gzip-compressed; decompress it first (gunzip)", r->path);
    goto out;
  }
  for (int msg = 0; pos < size; msg++) {
    long off = pos;
    uint64_t len;
    if (read_varint(buf, size, &pos, &len) != 0) {
      failf(im, "%s: byte %ld: truncated or corrupt length prefix (file of %ld bytes)", r->path, off, size);
      goto out;
    }
    if (len > (uint64_t)(size - pos)) {
      failf(im, "%s: byte %ld: truncated: the message announces %" PRIu64 " bytes, %ld remain", r->path, off, len,
            size - pos);
      goto out;
    }
    if (msg == 0) {
      ChakraProtoMsg__GlobalMetadata *m = chakra_proto_msg__global_metadata__unpack(NULL, (size_t)len, buf + pos);
      if (m == NULL) {
        failf(im, "%s: byte %ld: corrupt GlobalMetadata message (%" PRIu64 " bytes)", r->path, off, len);
        goto out;
      }
      if (rank == 0 && m->version != NULL)
        snprintf(im->version, sizeof im->version, "%s", m->version);
      chakra_proto_msg__global_metadata__free_unpacked(m, NULL);
      pos += (long)len;
      continue;
    }
    if (len == 0) { /* an empty Node: every field at its default (an INVALID node), nothing to run */
      continue;
    }
    ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack(NULL, (size_t)len, buf + pos);
    if (n == NULL) {
      failf(im, "%s: byte %ld: corrupt Node message (%" PRIu64 " bytes)", r->path, off, len);
      goto out;
    }
    pos += (long)len;
    struct cnode *c = add_node(r);
    if (c == NULL || r->n > WL_MAX_OPS) {
      chakra_proto_msg__node__free_unpacked(n, NULL);
      failf(im, c == NULL ? "%s: out of memory" : "%s: more than the limit of %d nodes", r->path, WL_MAX_OPS);
      goto out;
    }
    int bad = map_node(im, r, rank, off, n, c);
    if (!bad && r->n > cap_raw) {
      cap_raw = r->cap;
      uint64_t **d = realloc(rawdeps, sizeof *d * (size_t)cap_raw);
      int *k = d ? realloc(nraw, sizeof *k * (size_t)cap_raw) : NULL;
      int *kd = k ? realloc(ndata, sizeof *kd * (size_t)cap_raw) : NULL;
      if (d != NULL)
        rawdeps = d;
      if (k != NULL)
        nraw = k;
      if (kd != NULL)
        ndata = kd;
      if (d == NULL || k == NULL || kd == NULL)
        bad = failf(im, "%s: out of memory", r->path);
    }
    if (!bad) {
      int nd = (int)(n->n_data_deps + n->n_ctrl_deps);
      uint64_t *d = malloc(sizeof *d * (size_t)(nd ? nd : 1));
      if (d == NULL) {
        bad = failf(im, "%s: out of memory", r->path);
      } else {
        if (n->n_data_deps)
          memcpy(d, n->data_deps, sizeof *d * n->n_data_deps);
        if (n->n_ctrl_deps)
          memcpy(d + n->n_data_deps, n->ctrl_deps, sizeof *d * n->n_ctrl_deps);
        rawdeps[r->n - 1] = d;
        nraw[r->n - 1] = nd;
        ndata[r->n - 1] = (int)n->n_data_deps;
      }
    }
    chakra_proto_msg__node__free_unpacked(n, NULL);
    if (bad) {
      r->n--; /* its rawdeps slot was not filled */
      goto out;
    }
  }
  /* Resolve dependency ids to node indices: sort (id, index) pairs, look each id up. */
  ids = malloc(sizeof *ids * (size_t)(r->n ? r->n : 1));
  if (ids == NULL) {
    failf(im, "%s: out of memory", r->path);
    goto out;
  }
  for (int i = 0; i < r->n; i++) {
    ids[i][0] = r->nodes[i].id;
    ids[i][1] = (uint64_t)i;
  }
  qsort(ids, (size_t)r->n, sizeof *ids, id_order);
  for (int i = 1; i < r->n; i++)
    if (ids[i][0] == ids[i - 1][0]) {
      failf(im, "%s: byte %ld: node id %" PRIu64 " is used twice (first at byte %ld)", r->path,
            r->nodes[ids[i][1]].offset, ids[i][0], r->nodes[ids[i - 1][1]].offset);
      goto out;
    }
  for (int i = 0; i < r->n; i++) {
    struct cnode *c = &r->nodes[i];
    c->deps = malloc(sizeof *c->deps * (size_t)(nraw[i] ? nraw[i] : 1));
    if (c->deps == NULL) {
      failf(im, "%s: out of memory", r->path);
      goto out;
    }
    for (int k = 0; k < nraw[i]; k++) {
      uint64_t key[2] = { rawdeps[i][k], 0 };
      int lo = 0, hi = r->n;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ids[mid][0] < key[0])
          lo = mid + 1;
        else
          hi = mid;
      }
      if ((lo == r->n || ids[lo][0] != key[0]) && k >= ndata[i]) {
        /* A control dependency on a node the file does not have: PyTorch host traces converted
         * by Chakra keep ctrl_deps on parent ops that the conversion dropped (the root of the
         * profiler's tree). Nothing to wait for; counted in a warning. */
        im->n_missing_ctrl++;
        continue;
      }
      if (lo == r->n || ids[lo][0] != key[0]) {
        failf(im,
              "%s: byte %ld: node %" PRIu64 " has a data dependency on node %" PRIu64 ", which the file does not have",
              r->path, c->offset, c->id, key[0]);
        goto out;
      }
      c->deps[c->ndeps++] = (int)ids[lo][1];
    }
  }
  rc = 0;
out:
  if (rawdeps != NULL)
    for (int i = 0; i < r->n; i++)
      free(rawdeps[i]);
  free(rawdeps);
  free(nraw);
  free(ndata);
  free(ids);
  free(buf);
  return rc;
}

/* ---- Topological order ---------------------------------------------------------------------- */

/* Kahn's algorithm; among the ready nodes, the first in file order (a binary min-heap of node
 * indices), so that the order is the file's wherever the dependencies allow and is deterministic. */
static int topo_sort(struct importer *im, struct crank *r)
{
  int n = r->n, rc = -1, nout = 0, hn = 0;
  int *indeg = calloc((size_t)(n ? n : 1), sizeof *indeg);
  int *nchild = calloc((size_t)(n + 1), sizeof *nchild);
  int *child = NULL, *heap = malloc(sizeof *heap * (size_t)(n ? n : 1));
  r->order = malloc(sizeof *r->order * (size_t)(n ? n : 1));
  long nedges = 0;
  if (indeg == NULL || nchild == NULL || heap == NULL || r->order == NULL)
    goto oom;
  for (int i = 0; i < n; i++) {
    nedges += r->nodes[i].ndeps;
    indeg[i] = r->nodes[i].ndeps;
    for (int k = 0; k < r->nodes[i].ndeps; k++)
      nchild[r->nodes[i].deps[k] + 1]++;
  }
  for (int i = 0; i < n; i++)
    nchild[i + 1] += nchild[i]; /* now: start of node i's children */
  child = malloc(sizeof *child * (size_t)(nedges ? nedges : 1));
  int *fill = calloc((size_t)(n ? n : 1), sizeof *fill);
  if (child == NULL || fill == NULL) {
    free(fill);
    goto oom;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < r->nodes[i].ndeps; k++) {
      int p = r->nodes[i].deps[k];
      child[nchild[p] + fill[p]++] = i;
    }
  free(fill);
  for (int i = 0; i < n; i++)
    if (indeg[i] == 0)
      heap[hn++] = i; /* ascending: already a heap */
  while (hn > 0) {
    int v = heap[0];
    heap[0] = heap[--hn];
    for (int i = 0;;) { /* sift down */
      int l = 2 * i + 1, m = i;
      if (l < hn && heap[l] < heap[m])
        m = l;
      if (l + 1 < hn && heap[l + 1] < heap[m])
        m = l + 1;
      if (m == i)
        break;
      int t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
    r->order[nout++] = v;
    for (int e = nchild[v]; e < nchild[v + 1]; e++) {
      int c = child[e];
      if (--indeg[c] == 0) {
        int i = hn++;
        heap[i] = c;
        while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
          int t = heap[i];
          heap[i] = heap[(i - 1) / 2];
          heap[(i - 1) / 2] = t;
          i = (i - 1) / 2;
        }
      }
    }
  }
  if (nout < n) {
    int first = 0;
    while (indeg[first] == 0)
      first++;
    failf(im, "%s: byte %ld: dependency cycle: node %" PRIu64 " (and %d other nodes) can never start", r->path,
          r->nodes[first].offset, r->nodes[first].id, n - nout - 1);
    goto out;
  }
  rc = 0;
  goto out;
oom:
  failf(im, "%s: out of memory", r->path);
out:
  free(indeg);
  free(nchild);
  free(child);
  free(heap);
  return rc;
}

/* ---- Groups onto a layout ------------------------------------------------------------------- */

/* Whether the sorted rank list equals rank list[0]'s group g in layout l. */
static int group_is(const struct wl_layout *l, enum wl_group g, const int *list, int n, int *tmp)
{
  struct wl_trace t;
  memset(&t, 0, sizeof t);
  t.layout = *l;
  if (wl_group_size(&t, g) != n || wl_group_members(&t, list[0], g, tmp, n) != n)
    return 0;
  for (int i = 0; i < n; i++)
    if (tmp[i] != list[i])
      return 0;
  return 1;
}

/* The smallest pipeline, then the smallest tp, in which every process group is the tp, dp or pp
 * group of its members (or every rank: world). Fills l and each group's kind; -1 when none. */
static int find_layout(struct importer *im, struct wl_layout *l)
{
  int N = im->nranks;
  int *tmp = malloc(sizeof *tmp * (size_t)N);
  if (tmp == NULL)
    return failf(im, "chakra:%s: out of memory", im->prefix);
  for (int pp = 1; pp <= N; pp++) {
    if (N % pp)
      continue;
    for (int tp = 1; tp <= N / pp; tp++) {
      if ((N / pp) % tp)
        continue;
      struct wl_layout c = { N, tp, pp, 1, N / (pp * tp), 1, 1 };
      int ok = 1;
      for (int g = 0; g < im->npg && ok; g++) {
        struct pgroup *p = &im->pg[g];
        static const enum wl_group kinds[] = { WL_GROUP_WORLD, WL_GROUP_TP, WL_GROUP_DP, WL_GROUP_PP };
        p->kind = WL_GROUP_NONE;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && p->kind == WL_GROUP_NONE; k++)
          if (group_is(&c, kinds[k], p->members, p->n, tmp))
            p->kind = kinds[k];
        ok = p->kind != WL_GROUP_NONE;
      }
      if (ok) {
        *l = c;
        free(tmp);
        return 0;
      }
    }
  }
  free(tmp);
  char list[600] = "";
  size_t len = 0;
  for (int g = 0; g < im->npg && len < sizeof list - 100; g++) {
    len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s' = ranks", g ? "; " : "", im->pg[g].name);
    for (int i = 0; i < im->pg[g].n && len < sizeof list - 100; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? "," : " ", im->pg[g].members[i]);
  }
  return failf(im,
               "chakra:%s: the process groups are not the tp, dp and pp groups of any tp x dp x pp "
               "layout of %d ranks (ranks numbered tp fastest), which is what sgfabric's groups "
               "can express: %s",
               im->prefix, N, list);
}

/* ---- Programs ------------------------------------------------------------------------------- */

struct p2p_rec {
  int src, dst;
  uint32_t tag;
  int seq;      /* index among the messages of (src, dst, tag) in the issuer's order */
  int rank, op; /* where the op is */
  double bytes;
};

static int p2p_order(const void *a, const void *b)
{
  const struct p2p_rec *x = a, *y = b;
  if (x->src != y->src)
    return x->src - y->src;
  if (x->dst != y->dst)
    return x->dst - y->dst;
  if (x->tag != y->tag)
    return x->tag < y->tag ? -1 : 1;
  return x->seq - y->seq;
}

struct p2p_list {
  struct p2p_rec *v;
  int n, cap;
};

static int p2p_push(struct p2p_list *l, struct p2p_rec r)
{
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    struct p2p_rec *v = realloc(l->v, sizeof *v * (size_t)cap);
    if (v == NULL)
      return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = r;
  return 0;
}

/* Emits rank's program in topological order. Compute and receives block the stream (the replay
 * sleeps and waits on them), so a later op never needs to name them; collectives and sends are
 * asynchronous and are named by the ops that depend on them, through any no-op nodes between. */
static int build_program(struct importer *im, int rank, struct wl_program *p, struct p2p_list *sends,
                         struct p2p_list *recvs)
{
  struct crank *r = &im->ranks[rank];
  int *deps = NULL, cap = 0, rc = -1;
  for (int k = 0; k < r->n; k++) {
    struct cnode *c = &r->nodes[r->order[k]];
    int nd = 0;
    for (int d = 0; d < c->ndeps; d++) {
      const struct cnode *pc = &r->nodes[c->deps[d]];
      int need = pc->kind == CN_NOOP ? pc->neff : pc->async;
      if (nd + need > cap) {
        cap = 2 * (nd + need) + 16;
        int *nd2 = realloc(deps, sizeof *deps * (size_t)cap);
        if (nd2 == NULL)
          goto oom;
        deps = nd2;
      }
      if (pc->kind == CN_NOOP)
        for (int e = 0; e < pc->neff; e++)
          deps[nd++] = pc->eff[e];
      else if (pc->async)
        deps[nd++] = pc->op;
    }
    /* Drop repeats (several paths to one op) so that dependency lists stay small. */
    int m = 0;
    for (int i = 0; i < nd; i++) {
      int seen = 0;
      for (int j = 0; j < m && !seen; j++)
        seen = deps[j] == deps[i];
      if (!seen)
        deps[m++] = deps[i];
    }
    nd = m;
    struct wl_op o = { .phase = WL_PHASE_FORWARD, .micro = -1, .layer = -1 };
    switch (c->kind) {
    case CN_NOOP:
      c->eff = malloc(sizeof *c->eff * (size_t)(nd ? nd : 1));
      if (c->eff == NULL)
        goto oom;
      if (nd > 0)
        memcpy(c->eff, deps, sizeof *deps * (size_t)nd);
      c->neff = nd;
      continue;
    case CN_COMPUTE:
      o.kind = WL_OP_COMPUTE;
      o.cclass = WL_CC_GEMM;
      o.duration_s = c->duration_s;
      o.flops = c->flops;
      o.mem_bytes = c->mem_bytes;
      break;
    case CN_COLL:
      o.kind = WL_OP_COLL;
      o.coll = c->coll;
      o.bytes = c->bytes;
      o.group = c->group < 0 ? WL_GROUP_WORLD : im->pg[c->group].kind;
      o.is_async = 1;
      r->coll_count[o.group]++;
      break;
    case CN_SEND:
    case CN_RECV:
      /* Point-to-point on the world group: peer is the offset from this rank to the other. */
      o.kind = c->kind == CN_SEND ? WL_OP_SEND : WL_OP_RECV;
      o.group = WL_GROUP_WORLD;
      o.peer = c->peer - rank;
      o.bytes = c->bytes;
      o.is_async = c->kind == CN_SEND;
      break;
    }
    c->op = wl_program_add(p, &o, deps, nd);
    if (c->op < 0)
      goto oom;
    c->async = o.is_async;
    if (c->kind == CN_SEND || c->kind == CN_RECV) {
      struct p2p_rec rec = {
        c->kind == CN_SEND ? rank : c->peer, c->kind == CN_SEND ? c->peer : rank, c->tag, c->op, rank, c->op, c->bytes
      };
      if (p2p_push(c->kind == CN_SEND ? sends : recvs, rec) != 0)
        goto oom;
    }
  }
  rc = 0;
  goto out;
oom:
  failf(im, "%s: out of memory", r->path);
out:
  free(deps);
  return rc;
}

/* Every group's members issue the same collectives (operation and size) in the same order: the
 * replay matches a member's k-th collective on a group with the others' k-th. */
static int check_collectives(struct importer *im, struct wl_trace *t)
{
  int N = im->nranks;
  for (int g = 1; g < WL_GROUP_COUNT; g++) {
    int *members = malloc(sizeof *members * (size_t)N);
    if (members == NULL)
      return failf(im, "chakra:%s: out of memory", im->prefix);
    for (int rank = 0; rank < N; rank++) {
      int n = wl_group_members(t, rank, (enum wl_group)g, members, N);
      if (n <= 1 || members[0] != rank)
        continue; /* each group once, from its first member */
      const struct wl_program *p0 = &t->rank_programs[rank];
      for (int i = 1; i < n; i++) {
        const struct wl_program *pi = &t->rank_programs[members[i]];
        int a = 0, b = 0, k = 0;
        for (;; k++) {
          while (a < p0->nops && !(p0->ops[a].kind == WL_OP_COLL && (int)p0->ops[a].group == g))
            a++;
          while (b < pi->nops && !(pi->ops[b].kind == WL_OP_COLL && (int)pi->ops[b].group == g))
            b++;
          if (a == p0->nops || b == pi->nops)
            break;
          const struct wl_op *x = &p0->ops[a], *y = &pi->ops[b];
          if (x->coll != y->coll || x->bytes != y->bytes) {
            int other = members[i];
            free(members);
            return failf(im,
                         "chakra:%s: collective #%d on the %s group of ranks %d..: rank %d issues %s of "
                         "%.0f bytes, rank %d issues %s of %.0f bytes (the members of a group must "
                         "issue the same collectives in the same order)",
                         im->prefix, k + 1, wl_group_name((enum wl_group)g), rank, rank, wl_coll_name(x->coll),
                         x->bytes, other, wl_coll_name(y->coll), y->bytes);
          }
          a++;
          b++;
        }
        if (a != p0->nops || b != pi->nops) {
          int other = members[i], ca = im->ranks[rank].coll_count[g], cb = im->ranks[other].coll_count[g];
          free(members);
          return failf(im,
                       "chakra:%s: rank %d issues %d collectives on its %s group, rank %d issues %d "
                       "(the replay would deadlock)",
                       im->prefix, rank, ca, wl_group_name((enum wl_group)g), other, cb);
        }
      }
    }
    free(members);
  }
  return 0;
}

/* Numbers the messages of each (sender, receiver, comm_tag) in issue order and gives both ends
 * the tag comm_tag * 2^31 + number: a Chakra tag may repeat between two ranks (the k-th send
 * then meets the k-th receive, the order MPI and NCCL guarantee), a replay tag may not. */
static int match_p2p(struct importer *im, struct wl_trace *t, struct p2p_list *s, struct p2p_list *r)
{
  struct p2p_list *lists[2] = { s, r };
  for (int l = 0; l < 2; l++) {
    struct p2p_list *x = lists[l];
    if (x->n > 0) /* seq = op id: issue order per rank */
      qsort(x->v, (size_t)x->n, sizeof *x->v, p2p_order);
    for (int i = 0; i < x->n; i++) {
      int same =
          i > 0 && x->v[i].src == x->v[i - 1].src && x->v[i].dst == x->v[i - 1].dst && x->v[i].tag == x->v[i - 1].tag;
      x->v[i].seq = same ? x->v[i - 1].seq + 1 : 0;
      t->rank_programs[x->v[i].rank].ops[x->v[i].op].tag = (long)x->v[i].tag * (1L << 31) + x->v[i].seq;
    }
  }
  int i = 0, j = 0;
  while (i < s->n || j < r->n) {
    int c = i == s->n ? 1 : j == r->n ? -1 : p2p_order(&s->v[i], &r->v[j]);
    if (c != 0) {
      const struct p2p_rec *m = c < 0 ? &s->v[i] : &r->v[j];
      return failf(im,
                   "chakra:%s: rank %d's %s #%d %s rank %d (comm_tag %" PRIu32 ") has no matching %s "
                   "in chakra:%s.%d.et",
                   im->prefix, m->rank, c < 0 ? "send" : "receive", m->seq + 1, c < 0 ? "to" : "from",
                   c < 0 ? m->dst : m->src, m->tag, c < 0 ? "receive" : "send", im->prefix, c < 0 ? m->dst : m->src);
    }
    if (s->v[i].bytes != r->v[j].bytes)
      return failf(im,
                   "chakra:%s: message #%d from rank %d to rank %d (comm_tag %" PRIu32 "): the send has "
                   "%.0f bytes, the receive %.0f",
                   im->prefix, s->v[i].seq + 1, s->v[i].src, s->v[i].dst, s->v[i].tag, s->v[i].bytes, r->v[j].bytes);
    i++;
    j++;
  }
  return 0;
}

static void importer_free(struct importer *im)
{
  for (int i = 0; i < im->nranks && im->ranks; i++) {
    struct crank *r = &im->ranks[i];
    for (int k = 0; k < r->n; k++) {
      free(r->nodes[k].deps);
      free(r->nodes[k].eff);
    }
    free(r->nodes);
    free(r->order);
    free(r->path);
  }
  free(im->ranks);
  for (int g = 0; g < im->npg; g++) {
    free(im->pg[g].name);
    free(im->pg[g].is_member);
    free(im->pg[g].members);
  }
  free(im->pg);
}

static char *rank_path(const char *prefix, int rank)
{
  size_t n = strlen(prefix) + 16;
  char *s = malloc(n);
  if (s != NULL)
    snprintf(s, n, "%s.%d.et", prefix, rank);
  return s;
}

static int file_exists(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return 0;
  fclose(f);
  return 1;
}

struct wl_trace *wl_chakra_load(const char *prefix, char *err, size_t errlen)
{
  struct importer im = { .prefix = prefix, .err = err, .errlen = errlen };
  struct wl_trace *t = NULL;
  struct p2p_list sends = { 0 }, recvs = { 0 };
  /* The ranks: PREFIX.0.et up to the first missing index (ASTRA-sim reads PREFIX.<npu>.et). */
  int n = 0;
  for (;; n++) {
    char *path = rank_path(prefix, n);
    if (path == NULL) {
      failf(&im, "chakra:%s: out of memory", prefix);
      goto fail;
    }
    int exists = file_exists(path);
    if (!exists && n == 0) {
      failf(&im,
            "%s: cannot open: %s (a Chakra trace is PREFIX.0.et, PREFIX.1.et, ..., one file per "
            "rank; give chakra:PREFIX)",
            path, strerror(errno));
      free(path);
      goto fail;
    }
    free(path);
    if (!exists)
      break;
    if (n == WL_CHAKRA_MAX_RANKS) {
      failf(&im, "chakra:%s: more than the limit of %d rank files", prefix, WL_CHAKRA_MAX_RANKS);
      goto fail;
    }
  }
  /* A gap (PREFIX.3.et missing, PREFIX.4.et present) is a lost file, not the end of the job. */
  for (int k = n + 1; k <= n + 8; k++) {
    char *path = rank_path(prefix, k);
    int exists = path != NULL && file_exists(path);
    free(path);
    if (exists) {
      failf(&im, "%s.%d.et: missing, but %s.%d.et exists (one file per rank, numbered from 0 without gaps)", prefix, n,
            prefix, k);
      goto fail;
    }
  }
  im.nranks = n;
  im.ranks = calloc((size_t)n, sizeof *im.ranks);
  if (im.ranks == NULL) {
    failf(&im, "chakra:%s: out of memory", prefix);
    goto fail;
  }
  for (int rank = 0; rank < n; rank++) {
    if ((im.ranks[rank].path = rank_path(prefix, rank)) == NULL) {
      failf(&im, "chakra:%s: out of memory", prefix);
      goto fail;
    }
    if (read_rank(&im, rank) != 0 || topo_sort(&im, &im.ranks[rank]) != 0)
      goto fail;
  }
  for (int g = 0; g < im.npg; g++) {
    struct pgroup *p = &im.pg[g];
    p->members = malloc(sizeof *p->members * (size_t)n);
    if (p->members == NULL) {
      failf(&im, "chakra:%s: out of memory", prefix);
      goto fail;
    }
    for (int rank = 0; rank < n; rank++)
      if (p->is_member[rank])
        p->members[p->n++] = rank;
  }
  struct wl_layout l;
  if (find_layout(&im, &l) != 0)
    goto fail;
  t = wl_trace_new();
  if (t == NULL) {
    failf(&im, "chakra:%s: out of memory", prefix);
    goto fail;
  }
  t->layout = l;
  t->microbatches = 0; /* no micro-batches in a Chakra graph */
  t->global_batch = 0;
  snprintf(t->model.name, sizeof t->model.name, "chakra");
  snprintf(t->generator, sizeof t->generator, "chakra-import/et-version=%s/ranks=%d",
           im.version[0] ? im.version : "unknown", n);
  t->gpu[0] = '\0'; /* the trace does not name its GPU: the platform's */
  if (wl_trace_alloc_stages(t) != 0 || (t->rank_programs = calloc((size_t)n, sizeof *t->rank_programs)) == NULL) {
    failf(&im, "chakra:%s: out of memory", prefix);
    goto fail;
  }
  for (int rank = 0; rank < n; rank++)
    if (build_program(&im, rank, &t->rank_programs[rank], &sends, &recvs) != 0)
      goto fail;
  if (check_collectives(&im, t) != 0 || match_p2p(&im, t, &sends, &recvs) != 0)
    goto fail;
  if (im.n_mem_nodes > 0)
    fprintf(stderr,
            "warning: chakra:%s: %d remote-memory nodes (MEM_LOAD/MEM_STORE) are not modelled: "
            "they take no time and only pass their dependencies on\n",
            prefix, im.n_mem_nodes);
  if (im.n_missing_ctrl > 0)
    fprintf(stderr,
            "warning: chakra:%s: %d control dependencies (ctrl_deps) name nodes their file does not "
            "have: ignored\n",
            prefix, im.n_missing_ctrl);
  if (im.n_host_colls > 0)
    fprintf(stderr,
            "warning: chakra:%s: %d CPU-side collective calls have no comm_type or comm_size (a host "
            "trace not linked with its device trace): timed by their duration, they move no data\n",
            prefix, im.n_host_colls);
  free(sends.v);
  free(recvs.v);
  importer_free(&im);
  return t;
fail:
  free(sends.v);
  free(recvs.v);
  importer_free(&im);
  wl_trace_free(t);
  return NULL;
}

#endif
