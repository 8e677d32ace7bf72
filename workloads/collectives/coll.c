/* Collectives as dataflow graphs of transfers (see coll.h). */
#include "coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct xfer {
  struct coll_instance *owner;
  int src, dst;     /* member indices */
  double bytes;
  double later_steps; /* pipelined ring: steps whose latency follows the transfer's end */
  double sync_s;      /* the protocol's step latency: a step lasts at least that long (sync_extra) */
  int ring;           /* pipelined ring it is an edge of, -1 */
  int waiting;      /* predecessors not done + ends not joined */
  int succ_first;   /* successors: succ[succ_first .. succ_first + succ_count) */
  int succ_count;
};

struct ring { int first, count, finished; }; /* pipelined rings: consecutive edges */
struct member_ref { struct coll_instance *c; int member; }; /* timer contexts */

/* The dataflow graph of a collective, as built: a function of the collective's description, not
 * of its GPUs. The description (the cache key) is every input of build(): kind, bytes, member
 * count, root, parameters (algorithm, channels, chunk size, ring mode), the protocol chosen for
 * the call (its wire bytes) and its two step latencies, and of the GPUs only what the graph reads:
 * which members share a node under the collective's gpus_per_node (when the hierarchical
 * all-reduce is tried) and, when the NVLink and network step latencies differ, which pairs of
 * members the fabric joins by NVLink (each transfer's step latency). Built once per distinct
 * description and shared read-only by its instances (struct shape_cache); each instance copies
 * only what it changes (the transfers' counters, the rings' progress, the members' remaining
 * transfers). */
struct coll_shape {
  /* the description it was built for (the cache key) */
  enum coll_kind kind;
  enum coll_algo param_algo;
  enum coll_proto proto;
  int pipelined_rings, channels, n, root, gpus_per_node;
  double bytes, chunk_bytes;
  double step_nvlink_s, step_net_s; /* the protocol's step latencies */
  int *node_of; /* [n] when hierarchical is tried: node (first appearance, gpus_per_node) of each member */
  int *loc;     /* [n] when the step latencies differ: 2 x the member's fabric node (first appearance)
                   + 1 if its GPU has an NVLink port (same_node's inputs) */
  uint64_t hash;
  struct coll_shape *next; /* cache chain */
  /* the graph */
  enum coll_algo algo;
  struct xfer *x;
  int nx, cap_x;
  int *edge_from, *edge_to; /* predecessor edges collected while building */
  int n_edges, cap_edges;
  int *succ;
  int *member_first, *member_xfers; /* CSR: transfers each member sends or receives */
  int *remaining;    /* per member: transfers, the initial value of an instance's counter */
  struct ring *rings;
  int n_rings, cap_rings;
  size_t bytes_used; /* memory of its arrays (the cache's bound) */
};

struct coll_instance {
  struct fabric *fab;
  enum coll_kind kind;
  enum coll_algo algo;
  enum coll_proto proto;
  double start_delay_s; /* kernel launch + the protocol's base latency: a member's first transfer
                           waits that long after its call */
  double step_nvlink_s, step_net_s; /* the protocol's step latencies */
  int n;
  int *gpus;
  int tag;
  uint32_t call;  /* fabric_new_call: its flows' call, for the "why" accounting */
  double bytes;
  const struct coll_shape *shape;
  struct coll_shape *own_shape; /* a shape the cache did not keep: freed with the instance */
  struct xfer *x;    /* copies of the shape's, with this instance's counters */
  int nx;
  const int *succ;
  const int *member_first, *member_xfers;
  int *remaining;    /* per member: transfers not done */
  uint8_t *joined;
  struct member_ref *refs;
  int joined_count, done_count;
  double start_s;
  struct ring *rings;
  coll_done_fn done;
  coll_finish_fn finish;
  void *ctx;
};

void coll_params_init(struct coll_params *p)
{
  p->algo = COLL_ALGO_AUTO;
  p->ring_mode = COLL_RING_AUTO;
  p->channels = 1;
  p->chunk_bytes = 4e6;
  /* NCCL's tuning model (src/graph/tuning.cc, ring rows): base latencies and per-step latencies
   * over NVLink and over the network, in us. The parameter table holds the same defaults. */
  p->proto = COLL_PROTO_AUTO;
  p->launch_s = 2e-6;
  p->base_latency_s[COLL_PROTO_SIMPLE] = 8.4e-6;
  p->base_latency_s[COLL_PROTO_LL] = 3.6e-6;
  p->base_latency_s[COLL_PROTO_LL128] = 10.0e-6;
  p->step_latency_nvlink_s[COLL_PROTO_SIMPLE] = 3.4e-6;
  p->step_latency_nvlink_s[COLL_PROTO_LL] = 0.47e-6;
  p->step_latency_nvlink_s[COLL_PROTO_LL128] = 1.9e-6;
  p->step_latency_net_s[COLL_PROTO_SIMPLE] = 9.6e-6;
  p->step_latency_net_s[COLL_PROTO_LL] = 2.7e-6;
  p->step_latency_net_s[COLL_PROTO_LL128] = 4.0e-6;
  p->base_latency_s[COLL_PROTO_AUTO] = p->step_latency_nvlink_s[COLL_PROTO_AUTO] =
      p->step_latency_net_s[COLL_PROTO_AUTO] = 0;
}

void coll_params_no_protocol_cost(struct coll_params *p)
{
  p->proto = COLL_PROTO_SIMPLE;
  p->launch_s = 0;
  for (int i = 0; i < COLL_PROTO_COUNT; i++)
    p->base_latency_s[i] = p->step_latency_nvlink_s[i] = p->step_latency_net_s[i] = 0;
}

double coll_wire_bytes(enum coll_proto proto, double bytes)
{
  switch (proto) {
  case COLL_PROTO_LL: /* 8-byte lines: 4 data bytes and a 4-byte flag */
    return 8 * ceil(bytes / 4);
  case COLL_PROTO_LL128: /* 128-byte lines: 120 data bytes and 8 flag bytes */
    return bytes + 8 * ceil(bytes / 120);
  default:
    return bytes;
  }
}

/* Whether a transfer between two GPUs stays on their node's NVLink (the fabric's route.c rule). */
static int same_node(const struct fabric *fab, int gpu_a, int gpu_b)
{
  const struct topo *t = fab->topo;
  return t->gpus_per_node > 0 && gpu_a / t->gpus_per_node == gpu_b / t->gpus_per_node && t->gpu_nvl_port[gpu_a] >= 0;
}

/* The protocol's step latency between two members. */
static double hop_sync(const struct coll_instance *c, int a, int b)
{
  return same_node(c->fab, c->gpus[a], c->gpus[b]) ? c->step_nvlink_s : c->step_net_s;
}

/* The protocol's step latency between two members of a shape (hop_sync from the description). */
static double shape_hop_sync(const struct coll_shape *c, int a, int b)
{
  if (c->loc == NULL) /* both latencies are the same */
    return c->step_net_s;
  return (c->loc[a] >> 1) == (c->loc[b] >> 1) && (c->loc[a] & 1) ? c->step_nvlink_s : c->step_net_s;
}

/* Payload rate of the first hop between two members (NVLink or the NIC): the tuner's bandwidth. */
static double hop_rate(const struct fabric *fab, int gpu_a, int gpu_b)
{
  const struct topo *t = fab->topo;
  int port = same_node(fab, gpu_a, gpu_b) ? t->gpu_nvl_port[gpu_a] : t->gpu_nic_port[gpu_a];
  return port >= 0 ? fabric_port_payload_rate(fab, port) : 1e300;
}

/* Part `index` of `total` whole bytes split into `parts`: floor(total / parts), plus one byte
 * for the first total mod parts parts, so that the parts add up to total exactly and every
 * transfer is a whole number of bytes (the packet engine moves whole bytes only). Exact for
 * totals up to 2^53, above the fabric's transfer limit. */
static double share_of(double total, int parts, int index)
{
  double base = floor(total / parts);
  double rem = total - base * parts;
  return base + (index < rem ? 1 : 0);
}

static void *xrealloc(void *p, size_t bytes)
{
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL)
    abort();
  return q;
}

static int add_xfer(struct coll_shape *c, int src, int dst, double bytes)
{
  if (c->nx == c->cap_x) {
    c->cap_x = c->cap_x ? 2 * c->cap_x : 64;
    c->x = xrealloc(c->x, (size_t)c->cap_x * sizeof *c->x);
  }
  c->x[c->nx] = (struct xfer){.owner = NULL, .src = src, .dst = dst, .bytes = coll_wire_bytes(c->proto, bytes),
                              .later_steps = 0, .sync_s = shape_hop_sync(c, src, dst), .ring = -1, .waiting = 2};
  return c->nx++;
}

/* to waits for from; a negative from (no such transfer) adds nothing. */
static void add_edge(struct coll_shape *c, int from, int to)
{
  if (from < 0 || to < 0)
    return;
  if (c->n_edges == c->cap_edges) {
    c->cap_edges = c->cap_edges ? 2 * c->cap_edges : 128;
    c->edge_from = xrealloc(c->edge_from, (size_t)c->cap_edges * sizeof(int));
    c->edge_to = xrealloc(c->edge_to, (size_t)c->cap_edges * sizeof(int));
  }
  c->edge_from[c->n_edges] = from;
  c->edge_to[c->n_edges] = to;
  c->n_edges++;
  c->x[to].waiting++;
}

/* Per-member record of a phase: the last transfer it sent and the last it received, which the
 * next phase of that member waits for. */
struct phase_exit {
  int *last_send;
  int *last_recv;
};

/* Chunk a ring member sends at a step: the data is split in k chunks (share_of), and at step s
 * member i sends chunk (i - s) mod k, as in the ring reduce-scatter and all-gather, so every step
 * moves each chunk exactly once. */
static double ring_chunk(double total, int k, int i, int s)
{
  return share_of(total, k, ((i - s) % k + k) % k);
}

/* A ring over members order[0..k) of `steps` steps; the data, `total` bytes, is cut in k chunks
 * (ring_chunk). A member's first send waits for entry (its previous phase). Writes the member's
 * last transfers of this ring into exit. */
static void build_ring(struct coll_shape *c, const int *order, int k, int steps, double total,
                       const struct phase_exit *entry, struct phase_exit *exit)
{
  if (k < 2 || steps < 1)
    return;
  /* A ring's steps pay the mean of its hops' step latencies: a chunk goes around the ring, over
   * NVLink and network hops in their proportion (NCCL's (nsteps - nInterSteps) * intraLat +
   * nInterSteps * interLat). Every transfer of the ring carries that mean, so that the ring in
   * lockstep and its pipelined form pay the same. */
  double sync = 0;
  for (int i = 0; i < k; i++)
    sync += shape_hop_sync(c, order[i], order[(i + 1) % k]);
  sync /= k;
  if (c->pipelined_rings) {
    /* The ring moves in lockstep: every edge ends when the slowest one has (struct ring). */
    if (c->n_rings == c->cap_rings) {
      c->cap_rings = c->cap_rings ? 2 * c->cap_rings : 8;
      c->rings = xrealloc(c->rings, (size_t)c->cap_rings * sizeof *c->rings);
    }
    c->rings[c->n_rings] = (struct ring){c->nx, k, 0};
    int *edge = malloc(sizeof(int) * (size_t)k);
    for (int i = 0; i < k; i++) {
      int me = order[i];
      double bytes = 0;
      for (int s = 0; s < steps; s++)
        bytes += coll_wire_bytes(c->proto, ring_chunk(total, k, i, s));
      edge[i] = add_xfer(c, me, order[(i + 1) % k], 0);
      c->x[edge[i]].bytes = bytes;
      c->x[edge[i]].sync_s = sync;
      c->x[edge[i]].later_steps = steps - 1;
      c->x[edge[i]].ring = c->n_rings;
      if (entry) {
        add_edge(c, entry->last_send[me], edge[i]);
        add_edge(c, entry->last_recv[me], edge[i]);
      }
    }
    if (exit)
      for (int i = 0; i < k; i++) {
        exit->last_send[order[i]] = edge[i];
        exit->last_recv[order[(i + 1) % k]] = edge[i];
      }
    free(edge);
    c->n_rings++;
    return;
  }
  int *prev = malloc(sizeof(int) * (size_t)k);
  for (int i = 0; i < k; i++)
    prev[i] = -1;
  for (int s = 0; s < steps; s++) {
    int *cur = malloc(sizeof(int) * (size_t)k);
    for (int i = 0; i < k; i++) {
      int me = order[i], next = order[(i + 1) % k];
      cur[i] = add_xfer(c, me, next, ring_chunk(total, k, i, s));
      c->x[cur[i]].sync_s = sync;
      if (s == 0 && entry) {
        add_edge(c, entry->last_send[me], cur[i]);
        add_edge(c, entry->last_recv[me], cur[i]);
      }
    }
    if (s > 0)
      for (int i = 0; i < k; i++) {
        add_edge(c, prev[i], cur[i]);           /* my previous send */
        add_edge(c, prev[(i + k - 1) % k], cur[i]); /* the chunk I forward */
      }
    free(prev);
    prev = cur;
  }
  if (exit)
    for (int i = 0; i < k; i++) {
      exit->last_send[order[i]] = prev[i];
      exit->last_recv[order[(i + 1) % k]] = prev[i];
    }
  free(prev);
}

/* Pipelined binary tree all-reduce over order[0..k) (heap-shaped: parent of i is (i-1)/2):
 * reduce chunks up to order[0], then broadcast them down. */
static void build_tree(struct coll_shape *c, const int *order, int k, double bytes, double chunk_bytes)
{
  if (k < 2)
    return;
  int chunks = (int)(bytes / chunk_bytes);
  if (chunks < 1)
    chunks = 1;
  int *up = malloc(sizeof(int) * (size_t)k), *down = malloc(sizeof(int) * (size_t)k);
  int *prev_up = malloc(sizeof(int) * (size_t)k), *prev_down = malloc(sizeof(int) * (size_t)k);
  for (int i = 0; i < k; i++)
    prev_up[i] = prev_down[i] = -1;
  for (int j = 0; j < chunks; j++) {
    double chunk = share_of(bytes, chunks, j);
    up[0] = down[0] = -1;
    /* Children before parents, so their transfers exist when the parent's is created. */
    for (int i = k - 1; i >= 1; i--) {
      up[i] = add_xfer(c, order[i], order[(i - 1) / 2], chunk);
      add_edge(c, prev_up[i], up[i]);
      for (int child = 2 * i + 1; child <= 2 * i + 2 && child < k; child++)
        add_edge(c, up[child], up[i]);
    }
    for (int i = 1; i < k; i++) {
      int parent = (i - 1) / 2;
      down[i] = add_xfer(c, order[parent], order[i], chunk);
      add_edge(c, prev_down[i], down[i]);
      if (parent == 0) {
        for (int child = 1; child <= 2 && child < k; child++)
          add_edge(c, up[child], down[i]); /* the root has the whole sum of chunk j */
      } else {
        add_edge(c, down[parent], down[i]);
      }
    }
    memcpy(prev_up, up, sizeof(int) * (size_t)k);
    memcpy(prev_down, down, sizeof(int) * (size_t)k);
  }
  free(up);
  free(down);
  free(prev_up);
  free(prev_down);
}

/* Pipelined chain from the root: member i forwards chunk j once it has it. */
static void build_chain(struct coll_shape *c, const int *order, int k, double bytes, double chunk_bytes)
{
  int chunks = (int)(bytes / chunk_bytes);
  if (chunks < 1)
    chunks = 1;
  int *prev = malloc(sizeof(int) * (size_t)k);
  for (int i = 0; i < k; i++)
    prev[i] = -1;
  for (int j = 0; j < chunks; j++) {
    double chunk = share_of(bytes, chunks, j);
    int received = -1;
    for (int i = 0; i + 1 < k; i++) {
      int t = add_xfer(c, order[i], order[i + 1], chunk);
      add_edge(c, prev[i], t);
      add_edge(c, received, t);
      prev[i] = t;
      received = t;
    }
  }
  free(prev);
}

/* Hierarchical all-reduce: every node must hold the same number of members. Returns 0, or -1
 * when the group is not regular (the caller falls back to a ring). */
static int build_hierarchical(struct coll_shape *c, double bytes, int channel_count)
{
  int n = c->n;
  const int *node_of = c->node_of; /* node numbers in order of first appearance */
  int nodes = 0, per_node = 0;
  for (int i = 0; i < n; i++)
    if (node_of[i] + 1 > nodes)
      nodes = node_of[i] + 1;
  int *count = calloc((size_t)nodes, sizeof(int));
  for (int i = 0; i < n; i++)
    count[node_of[i]]++;
  per_node = count[0];
  int regular = nodes > 1 && per_node > 1;
  for (int k = 0; k < nodes; k++)
    regular &= count[k] == per_node;
  if (!regular) {
    free(count);
    return -1;
  }
  /* local[k][l]: member index of the l-th member of node k. */
  int *local = malloc(sizeof(int) * (size_t)n);
  int *fill = calloc((size_t)nodes, sizeof(int));
  for (int i = 0; i < n; i++)
    local[node_of[i] * per_node + fill[node_of[i]]++] = i;
  struct phase_exit after_rs = {malloc(sizeof(int) * (size_t)n), malloc(sizeof(int) * (size_t)n)};
  struct phase_exit after_ar = {malloc(sizeof(int) * (size_t)n), malloc(sizeof(int) * (size_t)n)};
  int *rail = malloc(sizeof(int) * (size_t)nodes);
  for (int ch = 0; ch < channel_count; ch++) {
    double share = share_of(bytes, channel_count, ch);
    for (int i = 0; i < n; i++)
      after_rs.last_send[i] = after_rs.last_recv[i] = after_ar.last_send[i] = after_ar.last_recv[i] = -1;
    for (int k = 0; k < nodes; k++)
      build_ring(c, &local[k * per_node], per_node, per_node - 1, share, NULL, &after_rs);
    for (int l = 0; l < per_node; l++) {
      for (int k = 0; k < nodes; k++)
        rail[k] = local[k * per_node + l];
      /* Rail l reduces the chunk its members hold after the node's reduce-scatter: member l of
       * a node received last the chunk (l - 1) - (per_node - 2) = l + 1 mod per_node. */
      build_ring(c, rail, nodes, 2 * (nodes - 1), share_of(share, per_node, (l + 1) % per_node), &after_rs,
                 &after_ar);
      for (int k = 0; k < nodes; k++) { /* a member that had no inter-node step keeps its RS exit */
        int m = rail[k];
        if (after_ar.last_send[m] < 0)
          after_ar.last_send[m] = after_rs.last_send[m];
        if (after_ar.last_recv[m] < 0)
          after_ar.last_recv[m] = after_rs.last_recv[m];
      }
    }
    for (int k = 0; k < nodes; k++)
      build_ring(c, &local[k * per_node], per_node, per_node - 1, share, &after_ar, NULL);
  }
  free(rail);
  free(after_rs.last_send);
  free(after_rs.last_recv);
  free(after_ar.last_send);
  free(after_ar.last_recv);
  free(local);
  free(fill);
  free(count);
  return 0;
}

/* Whether every node holds the same number (> 1) of a multi-node group's members; writes the
 * node count and members per node. */
static int hier_shape(const struct coll_instance *c, int gpus_per_node, int *nodes, int *per_node)
{
  if (gpus_per_node <= 0)
    return 0;
  int max_node = 0;
  for (int i = 0; i < c->n; i++)
    if (c->gpus[i] / gpus_per_node > max_node)
      max_node = c->gpus[i] / gpus_per_node;
  int *count = calloc((size_t)max_node + 1, sizeof(int));
  for (int i = 0; i < c->n; i++)
    count[c->gpus[i] / gpus_per_node]++;
  int used = 0, first = 0, regular = 1;
  for (int k = 0; k <= max_node; k++) {
    if (count[k] == 0)
      continue;
    if (used++ == 0)
      first = count[k];
    regular &= count[k] == first;
  }
  free(count);
  *nodes = used;
  *per_node = first;
  return regular && used > 1 && first > 1;
}

/* The algorithm an all-reduce uses (AUTO resolved). */
static enum coll_algo allreduce_algo(const struct coll_instance *c, const struct coll_params *p,
                                     const struct coll_desc *d)
{
  int nodes, per_node;
  if (p->algo == COLL_ALGO_AUTO || p->algo == COLL_ALGO_HIERARCHICAL)
    return hier_shape(c, d->gpus_per_node, &nodes, &per_node) ? COLL_ALGO_HIERARCHICAL : COLL_ALGO_RING;
  return p->algo;
}

/* NCCL's alpha-beta prediction of a ring of `steps` steps over members order[0..k) carrying
 * total bytes (k chunks): every step costs the ring's mean step latency and one chunk on the wire
 * at the ring's slowest first hop. */
static double predict_ring(const struct coll_instance *c, const int *order, int k, int steps, double total)
{
  if (k < 2 || steps < 1)
    return 0;
  double sync = 0, rate = 1e300;
  for (int i = 0; i < k; i++) {
    int a = order ? order[i] : i, b = order ? order[(i + 1) % k] : (i + 1) % k;
    sync += hop_sync(c, a, b);
    double r = hop_rate(c->fab, c->gpus[a], c->gpus[b]);
    rate = r < rate ? r : rate;
  }
  return steps * (sync / k + coll_wire_bytes(c->proto, total / k) / rate);
}

/* Predicted time of the collective with protocol c->proto (NCCL's tuning model: the protocol's
 * base latency, its step latencies, and the wire bytes at the hops' payload rate). The kernel
 * launch is the same for every protocol and left out. */
static double predict(const struct coll_instance *c, const struct coll_params *p, const struct coll_desc *d)
{
  int n = c->n;
  double S = d->bytes, t = p->base_latency_s[c->proto];
  double rate = hop_rate(c->fab, c->gpus[0], c->gpus[1]);
  double sync = hop_sync(c, 0, 1);
  switch (d->kind) {
  case COLL_ALLREDUCE:
    switch (allreduce_algo(c, p, d)) {
    case COLL_ALGO_HIERARCHICAL: {
      int nodes, per_node;
      hier_shape(c, d->gpus_per_node, &nodes, &per_node);
      /* intra-node reduce-scatter and all-gather on NVLink, the rails' all-reduce on the network */
      int peer = 1; /* a member on member 0's node */
      while (peer < n - 1 && !same_node(c->fab, c->gpus[0], c->gpus[peer]))
        peer++;
      double intra = (per_node - 1) * (hop_sync(c, 0, peer) + coll_wire_bytes(c->proto, S / per_node) /
                                                                   hop_rate(c->fab, c->gpus[0], c->gpus[peer]));
      double rail_rate = fabric_port_payload_rate(c->fab, c->fab->topo->gpu_nic_port[c->gpus[0]]);
      double inter = 2 * (nodes - 1) * (c->step_net_s + coll_wire_bytes(c->proto, S / per_node / nodes) / rail_rate);
      return t + 2 * intra + inter;
    }
    case COLL_ALGO_TREE: {
      int depth = 0;
      while ((2 << depth) - 1 < n)
        depth++;
      double chunks = floor(S / 2 / p->chunk_bytes);
      chunks = chunks < 1 ? 1 : chunks;
      return t + (2 * depth + chunks) * sync + coll_wire_bytes(c->proto, S) / rate;
    }
    default:
      return t + predict_ring(c, NULL, n, 2 * (n - 1), S);
    }
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return t + predict_ring(c, NULL, n, n - 1, S);
  case COLL_ALLTOALL:
    for (int j = 1; j < n; j++)
      if (hop_sync(c, 0, j) > sync)
        sync = hop_sync(c, 0, j);
    return t + sync + (n - 1) * coll_wire_bytes(c->proto, S / n) / rate;
  case COLL_BROADCAST:
  default: {
    double chunks = floor(S / p->chunk_bytes);
    chunks = chunks < 1 ? 1 : chunks;
    return t + (chunks + n - 2) * (sync + coll_wire_bytes(c->proto, S / chunks) / rate);
  }
  }
}

/* Sets the instance's protocol and its costs: the one asked for, or under AUTO the one NCCL's
 * tuner would pick, the lowest predicted time (LL, then LL128, then Simple on a tie). */
static void set_protocol(struct coll_instance *c, const struct coll_params *p, const struct coll_desc *d)
{
  static const enum coll_proto order[] = {COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE};
  enum coll_proto best = p->proto;
  if (best == COLL_PROTO_AUTO) {
    double best_t = INFINITY;
    for (int i = 0; i < 3; i++) {
      c->proto = order[i];
      c->step_nvlink_s = p->step_latency_nvlink_s[order[i]];
      c->step_net_s = p->step_latency_net_s[order[i]];
      double t = predict(c, p, d);
      if (t < best_t) {
        best_t = t;
        best = order[i];
      }
    }
  }
  c->proto = best;
  c->step_nvlink_s = p->step_latency_nvlink_s[best];
  c->step_net_s = p->step_latency_net_s[best];
  c->start_delay_s = p->launch_s + p->base_latency_s[best];
}

static void build(struct coll_shape *c)
{
  int n = c->n;
  int *order = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    order[i] = i;
  int channels = c->channels;
  switch (c->kind) {
  case COLL_ALLREDUCE:
    c->algo = c->param_algo;
    if (c->algo == COLL_ALGO_AUTO || c->algo == COLL_ALGO_HIERARCHICAL) {
      if (c->node_of != NULL && build_hierarchical(c, c->bytes, channels) == 0) {
        c->algo = COLL_ALGO_HIERARCHICAL;
        break;
      }
      c->algo = COLL_ALGO_RING;
    }
    if (c->algo == COLL_ALGO_TREE) {
      /* Double binary tree: the second tree is the first mirrored, so that most leaves of one
       * are inner nodes of the other; each carries half of the data. */
      int *mirror = malloc(sizeof(int) * (size_t)n);
      for (int i = 0; i < n; i++)
        mirror[i] = n - 1 - i;
      for (int ch = 0; ch < channels; ch++) {
        double share = share_of(c->bytes, channels, ch);
        build_tree(c, order, n, share_of(share, 2, 0), c->chunk_bytes);
        build_tree(c, mirror, n, share_of(share, 2, 1), c->chunk_bytes);
      }
      free(mirror);
      break;
    }
    for (int ch = 0; ch < channels; ch++)
      build_ring(c, order, n, 2 * (n - 1), share_of(c->bytes, channels, ch), NULL, NULL);
    break;
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    c->algo = COLL_ALGO_RING;
    for (int ch = 0; ch < channels; ch++)
      build_ring(c, order, n, n - 1, share_of(c->bytes, channels, ch), NULL, NULL);
    break;
  case COLL_ALLTOALL:
    c->algo = COLL_ALGO_RING; /* reported as "pairwise" */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if (i != j)
          add_xfer(c, i, j, share_of(c->bytes, n, j));
    break;
  case COLL_BROADCAST:
  default: {
    c->algo = COLL_ALGO_RING;
    for (int i = 0; i < n; i++)
      order[i] = (c->root + i) % n;
    for (int ch = 0; ch < channels; ch++)
      build_chain(c, order, n, share_of(c->bytes, channels, ch), c->chunk_bytes);
    break;
  }
  }
  free(order);
}

/* Successor lists and per-member transfer lists (CSR), from the collected edges. */
static void index_graph(struct coll_shape *c)
{
  int *count = calloc((size_t)c->nx + 1, sizeof(int));
  for (int e = 0; e < c->n_edges; e++)
    count[c->edge_from[e]]++;
  int offset = 0;
  for (int t = 0; t < c->nx; t++) {
    c->x[t].succ_first = offset;
    c->x[t].succ_count = 0;
    offset += count[t];
  }
  c->succ = xrealloc(NULL, sizeof(int) * (size_t)(offset + 1));
  for (int e = 0; e < c->n_edges; e++) {
    struct xfer *from = &c->x[c->edge_from[e]];
    c->succ[from->succ_first + from->succ_count++] = c->edge_to[e];
  }
  free(count);
  free(c->edge_from);
  free(c->edge_to);
  c->edge_from = c->edge_to = NULL;
  c->member_first = calloc((size_t)c->n + 1, sizeof(int));
  for (int t = 0; t < c->nx; t++) {
    c->member_first[c->x[t].src + 1]++;
    c->member_first[c->x[t].dst + 1]++;
  }
  for (int m = 0; m < c->n; m++)
    c->member_first[m + 1] += c->member_first[m];
  c->member_xfers = xrealloc(NULL, sizeof(int) * (size_t)(2 * c->nx + 1));
  int *fill = calloc((size_t)c->n, sizeof(int));
  for (int t = 0; t < c->nx; t++) {
    int s = c->x[t].src, d = c->x[t].dst;
    c->member_xfers[c->member_first[s] + fill[s]++] = t;
    c->member_xfers[c->member_first[d] + fill[d]++] = t;
  }
  free(fill);
  c->remaining = calloc((size_t)c->n, sizeof(int));
  for (int m = 0; m < c->n; m++)
    c->remaining[m] = c->member_first[m + 1] - c->member_first[m];
}

static void shape_free(struct coll_shape *c)
{
  if (c == NULL)
    return;
  free(c->node_of);
  free(c->loc);
  free(c->x);
  free(c->edge_from);
  free(c->edge_to);
  free(c->succ);
  free(c->member_first);
  free(c->member_xfers);
  free(c->remaining);
  free(c->rings);
  free(c);
}

/* The shapes built so far, by description: a collective repeated over and over (a layer's
 * tensor-parallel all-reduce, every micro-batch) is built once. Bounded: past the bound, new
 * descriptions are built for their instance alone. Never freed (reachable until exit). */
#define SHAPE_TABLE_SIZE 1024
#define SHAPE_CACHE_MAX_BYTES ((size_t)256 << 20)
static struct {
  struct coll_shape *table[SHAPE_TABLE_SIZE];
  size_t bytes;
} g_shapes;

static uint64_t mix64(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

static uint64_t double_bits(double v)
{
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static int same_ints(const int *a, const int *b, int n)
{
  if ((a == NULL) != (b == NULL))
    return 0;
  return a == NULL || n <= 0 || memcmp(a, b, sizeof(int) * (size_t)n) == 0;
}

static int same_description(const struct coll_shape *a, const struct coll_shape *b)
{
  return a->hash == b->hash && a->kind == b->kind && a->param_algo == b->param_algo && a->proto == b->proto &&
         a->pipelined_rings == b->pipelined_rings && a->channels == b->channels && a->n == b->n &&
         a->root == b->root && a->gpus_per_node == b->gpus_per_node &&
         double_bits(a->bytes) == double_bits(b->bytes) && double_bits(a->chunk_bytes) == double_bits(b->chunk_bytes) &&
         double_bits(a->step_nvlink_s) == double_bits(b->step_nvlink_s) &&
         double_bits(a->step_net_s) == double_bits(b->step_net_s) && same_ints(a->node_of, b->node_of, a->n) &&
         same_ints(a->loc, b->loc, a->n);
}

/* Writes, for each of the n GPUs, the number of its node (gpu / per_node) in order of first
 * appearance. scratch: [n]. */
static void number_nodes(const int *gpus, int n, int per_node, int *out, int *scratch)
{
  int nodes = 0, last_node = -1, last_k = -1, max_node = -1;
  for (int i = 0; i < n; i++) {
    int node = gpus[i] / per_node, k;
    if (node == last_node) {
      k = last_k;
    } else if (node > max_node) { /* not seen yet: members usually come in GPU order */
      k = nodes;
      scratch[nodes++] = node;
    } else {
      for (k = 0; k < nodes && scratch[k] != node; k++)
        ;
      if (k == nodes)
        scratch[nodes++] = node;
    }
    if (node > max_node)
      max_node = node;
    last_node = node;
    last_k = k;
    out[i] = k;
  }
}

static int *xmalloc_ints(int n)
{
  int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (p == NULL)
    abort();
  return p;
}

/* The description of a collective (see struct coll_shape) whose protocol is c's (set_protocol). */
static void describe(struct coll_shape *key, const struct coll_instance *c, const struct coll_params *p,
                     const struct coll_desc *d)
{
  struct fabric *fab = c->fab;
  memset(key, 0, sizeof *key);
  key->kind = d->kind;
  key->param_algo = p->algo;
  key->proto = c->proto;
  key->pipelined_rings = p->ring_mode == COLL_RING_PIPELINED ||
                         (p->ring_mode == COLL_RING_AUTO && fab->fidelity == FAB_FIDELITY_FLOW);
  key->channels = p->channels > 0 ? p->channels : 1;
  key->n = d->n;
  key->root = d->kind == COLL_BROADCAST ? d->root : 0;
  key->bytes = d->bytes;
  key->chunk_bytes = p->chunk_bytes;
  key->step_nvlink_s = c->step_nvlink_s;
  key->step_net_s = c->step_net_s;
  int buildable = d->n > 1 && d->bytes > 0;
  int *scratch = NULL;
  if (buildable && d->kind == COLL_ALLREDUCE && (p->algo == COLL_ALGO_AUTO || p->algo == COLL_ALGO_HIERARCHICAL) &&
      d->gpus_per_node > 0) {
    scratch = xmalloc_ints(d->n);
    key->gpus_per_node = d->gpus_per_node;
    key->node_of = xmalloc_ints(d->n);
    number_nodes(d->gpus, d->n, d->gpus_per_node, key->node_of, scratch);
  }
  if (buildable && double_bits(c->step_nvlink_s) != double_bits(c->step_net_s)) {
    const struct topo *t = fab->topo;
    if (scratch == NULL)
      scratch = xmalloc_ints(d->n);
    key->loc = xmalloc_ints(d->n);
    if (t->gpus_per_node > 0) {
      number_nodes(d->gpus, d->n, t->gpus_per_node, key->loc, scratch);
      for (int i = 0; i < d->n; i++)
        key->loc[i] = 2 * key->loc[i] + (t->gpu_nvl_port[d->gpus[i]] >= 0);
    } else {
      for (int i = 0; i < d->n; i++)
        key->loc[i] = 0; /* no node: every hop is a network one */
    }
  }
  free(scratch);
  uint64_t h = mix64(0, (uint64_t)key->kind);
  h = mix64(h, (uint64_t)key->param_algo);
  h = mix64(h, (uint64_t)key->proto);
  h = mix64(h, (uint64_t)key->pipelined_rings);
  h = mix64(h, (uint64_t)key->channels);
  h = mix64(h, (uint64_t)key->n);
  h = mix64(h, (uint64_t)key->root);
  h = mix64(h, (uint64_t)key->gpus_per_node);
  h = mix64(h, double_bits(key->bytes));
  h = mix64(h, double_bits(key->chunk_bytes));
  h = mix64(h, double_bits(key->step_nvlink_s));
  h = mix64(h, double_bits(key->step_net_s));
  if (key->node_of)
    for (int i = 0; i < key->n; i++)
      h = mix64(h, (uint64_t)key->node_of[i]);
  h = mix64(h, key->loc != NULL);
  if (key->loc)
    for (int i = 0; i < key->n; i++)
      h = mix64(h, (uint64_t)key->loc[i]);
  key->hash = h;
}

/* The shape of the description in key (which it takes over): from the cache, or built. */
static struct coll_shape *shape_get(struct coll_shape *key, int *cached)
{
  struct coll_shape **slot = &g_shapes.table[key->hash % SHAPE_TABLE_SIZE];
  for (struct coll_shape *c = *slot; c; c = c->next)
    if (same_description(c, key)) {
      free(key->node_of);
      free(key->loc);
      *cached = 1;
      return c;
    }
  struct coll_shape *c = malloc(sizeof *c);
  if (c == NULL)
    abort();
  *c = *key;
  if (c->n > 1 && c->bytes > 0)
    build(c);
  else
    c->algo = COLL_ALGO_RING;
  index_graph(c);
  c->bytes_used = sizeof *c + sizeof(struct xfer) * (size_t)c->cap_x + sizeof(struct ring) * (size_t)c->cap_rings +
                  sizeof(int) * ((size_t)c->n * 5 + (size_t)c->nx * 3 + 3);
  if (g_shapes.bytes + c->bytes_used > SHAPE_CACHE_MAX_BYTES) {
    *cached = 0;
    return c;
  }
  g_shapes.bytes += c->bytes_used;
  c->next = *slot;
  *slot = c;
  *cached = 1;
  return c;
}

struct coll_instance *coll_create(struct fabric *fab, const struct coll_params *p, const struct coll_desc *d,
                                  coll_done_fn done, coll_finish_fn finish, void *ctx)
{
  /* The protocol first (it depends on the GPUs, through the hops' rates and latencies): the
   * shape depends on it. */
  struct coll_instance proto = {.fab = fab, .n = d->n, .gpus = (int *)d->gpus};
  if (d->n > 1 && d->bytes > 0) {
    set_protocol(&proto, p, d);
  } else {
    /* Nothing to move: no kernel, no cost (as NCCL returns at once on an empty buffer). */
    proto.proto = p->proto == COLL_PROTO_AUTO ? COLL_PROTO_SIMPLE : p->proto;
  }
  struct coll_shape key;
  describe(&key, &proto, p, d);
  int cached;
  struct coll_shape *shape = shape_get(&key, &cached);
  /* One block: the instance, then its copies of the shape's transfers, the members' timer
   * contexts, its copies of the shape's rings, the members' counters, GPUs and join flags. */
  size_t n = d->n > 0 ? (size_t)d->n : 0, nx = (size_t)shape->nx, nr = (size_t)shape->n_rings;
  size_t size = sizeof(struct coll_instance) + sizeof(struct xfer) * nx + sizeof(struct member_ref) * n +
                sizeof(struct ring) * nr + sizeof(int) * 2 * n + n;
  struct coll_instance *c = malloc(size);
  if (c == NULL)
    abort();
  *c = proto;
  char *next = (char *)(c + 1);
  c->x = (struct xfer *)next;
  next += sizeof(struct xfer) * nx;
  c->refs = (struct member_ref *)next;
  next += sizeof(struct member_ref) * n;
  c->rings = (struct ring *)next;
  next += sizeof(struct ring) * nr;
  c->remaining = (int *)next;
  next += sizeof(int) * n;
  c->gpus = (int *)next;
  next += sizeof(int) * n;
  c->joined = (uint8_t *)next;
  if (nx)
    memcpy(c->x, shape->x, sizeof(struct xfer) * nx);
  for (size_t t = 0; t < nx; t++)
    c->x[t].owner = c;
  if (nr)
    memcpy(c->rings, shape->rings, sizeof(struct ring) * nr);
  if (n) {
    memcpy(c->remaining, shape->remaining, sizeof(int) * n);
    memcpy(c->gpus, d->gpus, sizeof(int) * n);
    memset(c->joined, 0, n);
  }
  for (size_t m = 0; m < n; m++)
    c->refs[m] = (struct member_ref){c, (int)m};
  c->kind = d->kind;
  c->algo = shape->algo;
  c->tag = d->tag;
  c->call = fabric_new_call(fab);
  c->bytes = d->bytes;
  c->shape = shape;
  c->own_shape = cached ? NULL : shape;
  c->nx = shape->nx;
  c->succ = shape->succ;
  c->member_first = shape->member_first;
  c->member_xfers = shape->member_xfers;
  c->done = done;
  c->finish = finish;
  c->ctx = ctx;
  return c;
}

static void instance_free(struct coll_instance *c)
{
  shape_free(c->own_shape);
  free(c);
}

static void xfer_start(struct coll_instance *c, int t);
static int member_done(struct coll_instance *c, int m);

/* A member finished its part; the last one reports and frees the instance. Returns 1 if freed. */
static int member_done(struct coll_instance *c, int m)
{
  c->done_count++;
  if (c->done)
    c->done(c->ctx, m);
  if (c->done_count < c->n)
    return 0;
  if (c->finish) {
    struct coll_report r = {c->kind, c->algo, c->proto, c->n, c->bytes, c->start_s, c->fab->now};
    c->finish(c->ctx, &r);
  }
  instance_free(c);
  return 1;
}

/* A transfer is complete: release its successors, and the members it was the last one of.
 * Returns 1 if that freed the instance. */
static int xfer_complete(struct coll_instance *c, struct xfer *x)
{
  for (int k = 0; k < x->succ_count; k++) {
    int s = c->succ[x->succ_first + k];
    if (--c->x[s].waiting == 0)
      xfer_start(c, s);
  }
  int ends[2] = {x->src, x->dst};
  for (int e = 0; e < 2; e++)
    if (--c->remaining[ends[e]] == 0 && c->joined[ends[e]])
      if (member_done(c, ends[e]))
        return 1;
  return 0;
}

/* A transfer's data arrived (a pipelined edge: and its later steps' latency passed). */
static void xfer_arrived(struct fabric *fab, void *ctx)
{
  (void)fab;
  struct xfer *x = ctx;
  struct coll_instance *c = x->owner;
  if (x->ring < 0) {
    xfer_complete(c, x);
    return;
  }
  struct ring *r = &c->rings[x->ring];
  if (++r->finished < r->count)
    return;
  for (int i = 0; i < r->count; i++)
    if (xfer_complete(c, &c->x[r->first + i]))
      return;
}

/* What a protocol's step latency adds to a step whose data crossed the fabric with latency
 * fabric_s (NIC, links, switches): NCCL's figures are end-to-end step latencies measured on real
 * systems and include the wire's, so the step lasts at least the protocol's latency, and the
 * fabric's latency counts toward it rather than on top. */
static double sync_extra(const struct xfer *x, double fabric_s)
{
  return x->sync_s > fabric_s ? x->sync_s - fabric_s : 0;
}

static void xfer_finished(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  struct xfer *x = ctx;
  if (x->later_steps > 0) {
    /* A pipelined ring edge: the steps after the first each add the latency of one step (NIC,
     * links, switches, and one chunk's re-serialisation when storing and forwarding). */
    double chunk = x->bytes / (x->later_steps + 1);
    double step = fab->nic_latency_s + fabric_path_tail_latency(fab, flow, chunk < fab->mtu ? chunk : fab->mtu);
    /* ... and every step, the first included, what the protocol's step latency adds to the
     * fabric's (sync_extra). */
    fabric_call_at(fab, fab->now + x->later_steps * step + (x->later_steps + 1) * sync_extra(x, step), xfer_arrived,
                   x);
    return;
  }
  double extra = 0;
  if (x->sync_s > 0) {
    double bytes = x->bytes < fab->mtu ? x->bytes : fab->mtu;
    extra = sync_extra(x, fab->nic_latency_s + fabric_path_tail_latency(fab, flow, bytes));
  }
  if (extra > 0) { /* the receiver sees the step's data once the protocol's flag says so */
    fabric_call_at(fab, fab->now + extra, xfer_arrived, x);
    return;
  }
  xfer_arrived(fab, x);
}

static void xfer_start(struct coll_instance *c, int t)
{
  struct xfer *x = &c->x[t];
  struct fab_flow *f = fabric_post(c->fab, c->gpus[x->src], c->gpus[x->dst], x->bytes, c->fab->now, c->tag,
                                   xfer_finished, x);
  f->call = c->call;
}

/* A member's kernel is running (its launch and the protocol's base latency have passed): its
 * transfers may start. */
static void member_ready(struct coll_instance *c, int member)
{
  if (c->remaining[member] == 0) {
    member_done(c, member);
    return;
  }
  for (int k = c->member_first[member]; k < c->member_first[member + 1]; k++) {
    int t = c->member_xfers[k];
    if (--c->x[t].waiting == 0)
      xfer_start(c, t);
  }
}

static void member_ready_timer(struct fabric *fab, void *ctx)
{
  (void)fab;
  struct member_ref *r = ctx;
  member_ready(r->c, r->member);
}

void coll_join(struct coll_instance *c, int member)
{
  if (c->joined[member])
    return;
  c->joined[member] = 1;
  /* Timed from the first member's call, as nccl-tests times a collective: the first members
   * start their transfers at once, so a clock started at the last call would see part of the
   * data moved in no time (and a bus bandwidth above the line rate). */
  if (++c->joined_count == 1)
    c->start_s = c->fab->now;
  if (c->nx > 0 && c->start_delay_s > 0) {
    fabric_call_at(c->fab, c->fab->now + c->start_delay_s, member_ready_timer, &c->refs[member]);
    return;
  }
  member_ready(c, member);
}

int coll_transfer_count(const struct coll_instance *c) { return c->nx; }
enum coll_algo coll_algorithm(const struct coll_instance *c) { return c->algo; }
enum coll_proto coll_protocol(const struct coll_instance *c) { return c->proto; }

double coll_busbw_factor(enum coll_kind kind, int n)
{
  if (n <= 1)
    return 1;
  switch (kind) {
  case COLL_ALLREDUCE:
    return 2.0 * (n - 1) / n;
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
  case COLL_ALLTOALL:
    return (double)(n - 1) / n;
  case COLL_BROADCAST:
  default:
    return 1;
  }
}

const char *coll_kind_name(enum coll_kind k)
{
  static const char *names[] = {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast"};
  return k < COLL_KIND_COUNT ? names[k] : "?";
}

const char *coll_algo_name(enum coll_algo a)
{
  static const char *names[] = {"auto", "ring", "tree", "hierarchical"};
  return a <= COLL_ALGO_HIERARCHICAL ? names[a] : "?";
}

const char *coll_proto_name(enum coll_proto p)
{
  static const char *names[] = {"auto", "simple", "ll", "ll128"};
  return p < COLL_PROTO_COUNT ? names[p] : "?";
}
