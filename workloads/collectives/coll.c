/* Collectives as dataflow graphs of transfers (see coll.h). */
#include "coll.h"
#include "check.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xfer {
  struct coll_instance *owner;
  int src, dst; /* member indices */
  double bytes;
  double later_steps; /* pipelined ring: steps whose latency follows the transfer's end */
  double message_B;   /* pipelined ring: its steps' mean size, each a message at packet fidelity;
                         a ring step: its bytes */
  int ring_step;      /* a ring's step moved on its own (not pipelined) */
  double sync_s;      /* the protocol's step latency: a step lasts at least that long (sync_extra) */
  int ring;           /* pipelined ring it is an edge of, -1 */
  int channel;        /* the NCCL channel it belongs to: its own connection between its GPUs */
  int port;           /* in-network tree leg: the one egress port it crosses (fabric_post_path), -1 */
  int rep;            /* tree leg: the member on whose behalf it moves (its GPU names the flow) */
  double delay_s;     /* tree leg: a switch's reduction latency, paid before it starts */
  double cap_Bps;     /* tree leg: the switch's reduction rate (0: none) */
  int waiting;        /* predecessors not done + ends not joined */
  int succ_first;     /* successors: succ[succ_first .. succ_first + succ_count) */
  int succ_count;
};

/* Pipelined rings, and the legs of an in-network algorithm: consecutive transfers that end
 * together, tail_s after the last one arrived. */
struct ring {
  int first, count, finished;
  double tail_s;
};
struct member_ref {
  struct coll_instance *c;
  int member;
}; /* timer contexts */

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
  int *trees;   /* in-network algorithms: the records of their trees and rings (struct tree_record) */
  int trees_len;
  double innet[4]; /* their switches' latencies and rates: SHARP's, NVLS's */
  int *pxn;        /* all-to-all under PXN: [2n + 1] node (first appearance) and local rank (-1: no
                   NVLink) of each member, then GPUs per node */
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
  int *remaining;                   /* per member: transfers, the initial value of an instance's counter */
  struct ring *rings;
  int n_rings, cap_rings;
  int ring_forms;       /* how its rings move: COLL_RINGS_STEPS | COLL_RINGS_PIPELINED (0: no ring) */
  size_t bytes_used;    /* memory of its arrays (the cache's bound) */
  int building_channel; /* while building: the channel the transfers added belong to */
};

struct coll_instance {
  struct fabric *fab;
  enum coll_kind kind;
  enum coll_algo algo;
  enum coll_proto proto;
  double start_delay_s;             /* kernel launch + the protocol's base latency: a member's first transfer
                           waits that long after its call */
  double step_nvlink_s, step_net_s; /* the protocol's step latencies */
  int n;
  int *gpus;
  int tag;
  uint32_t call; /* fabric_new_call: its flows' call, for the "why" accounting */
  double bytes;
  const struct coll_shape *shape;
  struct coll_shape *own_shape; /* a shape the cache did not keep: freed with the instance */
  struct xfer *x;               /* copies of the shape's, with this instance's counters */
  int nx;
  const int *succ;
  const int *member_first, *member_xfers;
  int *remaining; /* per member: transfers not done */
  uint8_t *joined;
  struct member_ref *refs;
  int joined_count, done_count;
  double start_s;
  struct ring *rings;
  coll_done_fn done;
  coll_finish_fn finish;
  void *ctx;
  int *sharp_switches; /* the switches of its SHARP trees, each holding one of its
                          coll/sharp-max-trees while it runs (NULL: none) */
  int n_sharp_switches;
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
  /* In-network reduction: off unless asked for (the parameter table's defaults and sources). */
  p->sharp = 0;
  p->sharp_max_trees = 2;
  p->sharp_latency_s = 1e-6;
  p->sharp_rate_Bps = 50e9;
  p->nvls = 0;
  p->nvls_latency_s = 9e-6;
  p->nvls_rate_Bps = 275e9;
  p->pxn = 0;
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
  case COLL_PROTO_LL: /* 8-byte lines: 4 data bytes and a 4-byte flag */ return 8 * ceil(bytes / 4);
  case COLL_PROTO_LL128: /* 128-byte lines: 120 data bytes and 8 flag bytes */ return bytes + 8 * ceil(bytes / 120);
  default: return bytes;
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
  void *q = sgf_xrealloc(p, bytes ? bytes : 1);
  return q;
}

static int add_xfer(struct coll_shape *c, int src, int dst, double bytes)
{
  if (c->nx == c->cap_x) {
    c->cap_x = c->cap_x ? 2 * c->cap_x : 64;
    c->x = xrealloc(c->x, (size_t)c->cap_x * sizeof *c->x);
  }
  c->x[c->nx] = (struct xfer){ .owner = NULL,
                               .src = src,
                               .dst = dst,
                               .bytes = coll_wire_bytes(c->proto, bytes),
                               .later_steps = 0,
                               .sync_s = shape_hop_sync(c, src, dst),
                               .ring = -1,
                               .channel = c->building_channel,
                               .port = -1,
                               .rep = -1,
                               .waiting = 2 };
  return c->nx++;
}

/* A leg of an in-network tree: bytes over one port. member >= 0: a member's own leg (its NIC or
 * NVLink), which it sends and receives (src = dst = member: its ends join when it does); -1: a
 * leg between switches, which no member owns and which starts when its predecessors are done. */
static int add_leg(struct coll_shape *c, int member, int rep, int port, double bytes, double delay_s, double cap_Bps)
{
  if (c->nx == c->cap_x) {
    c->cap_x = c->cap_x ? 2 * c->cap_x : 64;
    c->x = xrealloc(c->x, (size_t)c->cap_x * sizeof *c->x);
  }
  c->x[c->nx] = (struct xfer){ .owner = NULL,
                               .src = member,
                               .dst = member,
                               .bytes = bytes,
                               .ring = -1,
                               .port = port,
                               .rep = rep,
                               .delay_s = delay_s,
                               .cap_Bps = cap_Bps,
                               .waiting = member >= 0 ? 2 : 0 };
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
static double ring_chunk(double total, int k, int i, int s) { return share_of(total, k, ((i - s) % k + k) % k); }

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
  c->ring_forms |= c->pipelined_rings ? COLL_RINGS_PIPELINED : COLL_RINGS_STEPS;
  if (c->pipelined_rings) {
    /* The ring moves in lockstep: every edge ends when the slowest one has (struct ring). */
    if (c->n_rings == c->cap_rings) {
      c->cap_rings = c->cap_rings ? 2 * c->cap_rings : 8;
      c->rings = xrealloc(c->rings, (size_t)c->cap_rings * sizeof *c->rings);
    }
    c->rings[c->n_rings] = (struct ring){ c->nx, k, 0, 0 };
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
      c->x[edge[i]].message_B = bytes / steps;
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
      /* one message of the edge's chain: RoCE's held-port measure sends such messages back to
       * back, as the steps come (roce_held_port.h) */
      c->x[cur[i]].message_B = c->x[cur[i]].bytes;
      c->x[cur[i]].ring_step = 1;
      if (s == 0 && entry) {
        add_edge(c, entry->last_send[me], cur[i]);
        add_edge(c, entry->last_recv[me], cur[i]);
      }
    }
    if (s > 0)
      for (int i = 0; i < k; i++) {
        add_edge(c, prev[i], cur[i]);               /* my previous send */
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
  struct phase_exit after_rs = { malloc(sizeof(int) * (size_t)n), malloc(sizeof(int) * (size_t)n) };
  struct phase_exit after_ar = { malloc(sizeof(int) * (size_t)n), malloc(sizeof(int) * (size_t)n) };
  int *rail = malloc(sizeof(int) * (size_t)nodes);
  for (int ch = 0; ch < channel_count; ch++) {
    double share = share_of(bytes, channel_count, ch);
    c->building_channel = ch;
    for (int i = 0; i < n; i++)
      after_rs.last_send[i] = after_rs.last_recv[i] = after_ar.last_send[i] = after_ar.last_recv[i] = -1;
    for (int k = 0; k < nodes; k++)
      build_ring(c, &local[k * per_node], per_node, per_node - 1, share, NULL, &after_rs);
    for (int l = 0; l < per_node; l++) {
      for (int k = 0; k < nodes; k++)
        rail[k] = local[k * per_node + l];
      /* Rail l reduces the chunk its members hold after the node's reduce-scatter: member l of
       * a node received last the chunk (l - 1) - (per_node - 2) = l + 1 mod per_node. */
      build_ring(c, rail, nodes, 2 * (nodes - 1), share_of(share, per_node, (l + 1) % per_node), &after_rs, &after_ar);
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

/* ---- In-network reduction: the shape side ----
 *
 * An in-network algorithm is a list of records (built from the GPUs by innet_resolve, kept in
 * the shape's key), each a tree or a ring over some members, in phases: a phase's transfers of a
 * member wait for that member's last transfers of the previous phase. A record is the ints
 *   phase, mode, tech, part, parts, m, e_sw, members[m], (up port, down port, parent) x (m + e_sw)
 * mode: what the record does (TREC_AR all-reduce, TREC_RS reduce-scatter, TREC_AG all-gather) of
 * part `part` of `parts` of the data; tech: TREC_SHARP or TREC_NVLS (a tree: the switches'
 * latency and rate), TREC_RING (a ring all-reduce, no edges). A tree's edges 0..m-1 are the
 * members' own legs (NIC or NVLink port up to the first switch), edges m.. go from a switch up
 * to its parent; parent is the edge above (-1: the edge reaches the root), and a switch's edge
 * always comes after its children's. Going down a leg crosses the up port's reverse. */
enum { TREC_AR, TREC_RS, TREC_AG };
enum { TREC_SHARP, TREC_NVLS, TREC_RING };
#define TREC_HEAD 7
/* The data streams through a tree in steps of 128 KiB (NCCL_NVLS_CHUNKSIZE's default): every
 * leg runs at once and the legs end together (a pipeline paced by its slowest leg, as the
 * pipelined ring, struct ring), then the last step crosses the legs after it. */
#define INNET_STEP_BYTES 131072.0

static int trec_len(const int *r) { return TREC_HEAD + r[5] + (r[2] == TREC_RING ? 0 : 3 * (r[5] + r[6])); }

/* A no-op transfer (port -2): complete as soon as its predecessors are (a barrier). */
static int add_noop(struct coll_shape *c, int member) { return add_leg(c, member, member, -2, 0, 0, 0); }

/* One tree record over `total` bytes (the record's part): a leg up per member (its NIC or NVLink
 * port) and per switch below the root, a leg down for each. A leg carries the data once whatever
 * the members below it: the reduction (all-reduce, reduce-scatter going up) or the multicast
 * (going down) happens in the switch. Reduce-scatter brings down only the shares of the members
 * below a leg, all-gather sends up only theirs. Every leg waits for `barrier` (every member
 * joined) and belongs to ring group `group`. Returns the pipeline's fill after the legs drain:
 * the last step crosses the 2D - 1 legs after the first (D: legs from a member up to the root)
 * and D reductions (the switches' latency going up, the root's going down). */
static double build_tree_record(struct coll_shape *c, const int *r, double total, int barrier, int group)
{
  int mode = r[1], tech = r[2], m = r[5], esw = r[6], E = m + esw;
  const int *mem = r + TREC_HEAD, *edge = r + TREC_HEAD + m;
  double lat = tech == TREC_NVLS ? c->innet[2] : c->innet[0];
  double rate = tech == TREC_NVLS ? c->innet[3] : c->innet[1];
  double *upb = sgf_xcalloc((size_t)E, sizeof(double)), *downb = sgf_xcalloc((size_t)E, sizeof(double));
  int *rep = sgf_xmalloc(sizeof(int) * (size_t)E);
  for (int e = 0; e < E; e++)
    rep[e] = -1;
  for (int i = 0; i < m; i++) {
    double share = share_of(total, m, i);
    for (int e = i; e >= 0; e = edge[3 * e + 2]) {
      if (mode == TREC_AG)
        upb[e] += share;
      if (mode == TREC_RS)
        downb[e] += share;
      if (rep[e] < 0)
        rep[e] = mem[i];
    }
  }
  for (int e = 0; e < E; e++) {
    if (mode != TREC_AG)
      upb[e] = total;
    if (mode != TREC_RS)
      downb[e] = total;
  }
  for (int dir = 0; dir < 2; dir++)
    for (int e = 0; e < E; e++) {
      int leg = add_leg(c, e < m ? mem[e] : -1, rep[e], edge[3 * e + dir], dir == 0 ? upb[e] : downb[e], 0, rate);
      c->x[leg].ring = group;
      add_edge(c, barrier, leg);
    }
  int depth = 0;
  for (int e = 0; e >= 0; e = edge[3 * e + 2])
    depth++;
  double step = total < INNET_STEP_BYTES ? total : INNET_STEP_BYTES;
  free(upb);
  free(downb);
  free(rep);
  return (2 * depth - 1) * step / rate + depth * lat;
}

/* A ring record: the all-reduce of `total` bytes over members mem[0..k) as one pipelined
 * transfer per ring edge (2(k-1) steps of total/k, the steps after the first paying their
 * latency: later_steps), in ring group `group`, after `barrier`. */
static void build_ring_record(struct coll_shape *c, const int *mem, int k, double total, int barrier, int group)
{
  if (k < 2)
    return;
  c->ring_forms |= COLL_RINGS_PIPELINED;
  int steps = 2 * (k - 1);
  double sync = 0;
  for (int i = 0; i < k; i++)
    sync += shape_hop_sync(c, mem[i], mem[(i + 1) % k]);
  sync /= k;
  for (int i = 0; i < k; i++) {
    double bytes = 0;
    for (int s = 0; s < steps; s++)
      bytes += coll_wire_bytes(c->proto, ring_chunk(total, k, i, s));
    int e = add_xfer(c, mem[i], mem[(i + 1) % k], 0);
    c->x[e].bytes = bytes;
    c->x[e].sync_s = sync;
    c->x[e].later_steps = steps - 1;
    c->x[e].message_B = bytes / steps;
    c->x[e].ring = group;
    add_edge(c, barrier, e);
  }
}

/* An in-network algorithm: every record's transfers start once every member joined (a
 * barrier: a SHARP switch or the NVSwitch reduces a step only when every member's part of it
 * is there) and stream at once, phases included (NCCL pipelines the stages of NVLS-tree and
 * NVLS-SHARP step by step); they end together, when the slowest has drained, plus the fill of
 * the pipeline: the sum over phases of the slowest record's fill. */
static void build_innet(struct coll_shape *c)
{
  int n = c->n;
  int barrier = add_noop(c, -1);
  for (int i = 0; i < n; i++) /* member i joined */
    add_edge(c, add_noop(c, i), barrier);
  if (c->n_rings == c->cap_rings) {
    c->cap_rings = c->cap_rings ? 2 * c->cap_rings : 8;
    c->rings = xrealloc(c->rings, (size_t)c->cap_rings * sizeof *c->rings);
  }
  int group = c->n_rings++;
  int first = c->nx;
  double fill = 0, phase_fill = 0;
  int phase = c->trees_len > 0 ? c->trees[0] : 0;
  for (int at = 0; at < c->trees_len; at += trec_len(c->trees + at)) {
    const int *r = c->trees + at;
    if (r[0] != phase) {
      fill += phase_fill;
      phase_fill = 0;
      phase = r[0];
    }
    double total = share_of(c->bytes, r[4], r[3]);
    if (r[2] == TREC_RING) {
      build_ring_record(c, r + TREC_HEAD, r[5], total, barrier, group);
    } else {
      double f = build_tree_record(c, r, total, barrier, group);
      phase_fill = f > phase_fill ? f : phase_fill;
    }
  }
  fill += phase_fill;
  c->rings[group] = (struct ring){ first, c->nx - first, 0, fill };
}

/* Whether every node holds the same number (> 1) of a multi-node group's members; writes the
 * node count and members per node. */
static int hier_shape(const struct coll_instance *c, int gpus_per_node, int *nodes, int *per_node)
{
  if (gpus_per_node <= 0)
    return 0;
  int max_node = 0, min_node = INT_MAX;
  for (int i = 0; i < c->n; i++) {
    int node = c->gpus[i] / gpus_per_node;
    max_node = node > max_node ? node : max_node;
    min_node = node < min_node ? node : min_node;
  }
  if (c->n > 0 && min_node == max_node) { /* one node (a tensor-parallel group): no hierarchy */
    *nodes = 1;
    *per_node = c->n;
    return 0;
  }
  int *count = sgf_xcalloc((size_t)max_node + 1, sizeof(int));
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
    default: return t + predict_ring(c, NULL, n, 2 * (n - 1), S);
    }
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER: return t + predict_ring(c, NULL, n, n - 1, S);
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
  static const enum coll_proto order[] = { COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE };
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

/* All-to-all under PXN (NCCL 2.12+, NCCL_PXN_DISABLE=0): a transfer to a member of another node
 * on another rail (local rank) goes over NVLink to the member of the sender's node on the
 * destination's rail, which sends it on its own NIC: the network part stays on one rail (on a
 * rail-optimized fat-tree, under one leaf), at the cost of an NVLink hop. Without such a relay
 * among the members, the transfer goes direct. */
static void build_alltoall_pxn(struct coll_shape *c)
{
  int n = c->n, gpn = c->pxn[2 * n], nodes = 0;
  for (int i = 0; i < n; i++)
    if (c->pxn[2 * i] + 1 > nodes)
      nodes = c->pxn[2 * i] + 1;
  int *relay = sgf_xmalloc(sizeof(int) * (size_t)nodes * (size_t)gpn); /* (node, local rank) -> member */
  for (int k = 0; k < nodes * gpn; k++)
    relay[k] = -1;
  for (int i = 0; i < n; i++)
    if (c->pxn[2 * i + 1] >= 0 && relay[c->pxn[2 * i] * gpn + c->pxn[2 * i + 1]] < 0)
      relay[c->pxn[2 * i] * gpn + c->pxn[2 * i + 1]] = i;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j)
        continue;
      double share = share_of(c->bytes, n, j);
      int ni = c->pxn[2 * i], li = c->pxn[2 * i + 1], nj = c->pxn[2 * j], lj = c->pxn[2 * j + 1];
      int r = ni != nj && li >= 0 && lj >= 0 && li != lj ? relay[ni * gpn + lj] : -1;
      if (r >= 0) {
        int nvl = add_xfer(c, i, r, share);
        add_edge(c, nvl, add_xfer(c, r, j, share));
      } else {
        add_xfer(c, i, j, share);
      }
    }
  free(relay);
}

static void build(struct coll_shape *c)
{
  int n = c->n;
  int *order = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    order[i] = i;
  int channels = c->channels;
  c->building_channel = 0;
  if (c->trees != NULL) { /* an in-network algorithm (innet_resolve chose it and built its records) */
    c->algo = c->param_algo;
    build_innet(c);
    free(order);
    return;
  }
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
        c->building_channel = ch;
        build_tree(c, order, n, share_of(share, 2, 0), c->chunk_bytes);
        build_tree(c, mirror, n, share_of(share, 2, 1), c->chunk_bytes);
      }
      free(mirror);
      break;
    }
    for (int ch = 0; ch < channels; ch++) {
      c->building_channel = ch;
      build_ring(c, order, n, 2 * (n - 1), share_of(c->bytes, channels, ch), NULL, NULL);
    }
    break;
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    c->algo = COLL_ALGO_RING;
    for (int ch = 0; ch < channels; ch++) {
      c->building_channel = ch;
      build_ring(c, order, n, n - 1, share_of(c->bytes, channels, ch), NULL, NULL);
    }
    break;
  case COLL_ALLTOALL:
    c->algo = COLL_ALGO_RING; /* reported as "pairwise" */
    if (c->pxn != NULL) {
      build_alltoall_pxn(c);
      break;
    }
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
    for (int ch = 0; ch < channels; ch++) {
      c->building_channel = ch;
      build_chain(c, order, n, share_of(c->bytes, channels, ch), c->chunk_bytes);
    }
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
    if (c->x[t].src < 0) /* a tree leg between switches: no member's */
      continue;
    c->member_first[c->x[t].src + 1]++;
    c->member_first[c->x[t].dst + 1]++;
  }
  for (int m = 0; m < c->n; m++)
    c->member_first[m + 1] += c->member_first[m];
  c->member_xfers = xrealloc(NULL, sizeof(int) * (size_t)(2 * c->nx + 1));
  int *fill = calloc((size_t)c->n, sizeof(int));
  for (int t = 0; t < c->nx; t++) {
    int s = c->x[t].src, d = c->x[t].dst;
    if (s < 0)
      continue;
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
  free(c->trees);
  free(c->pxn);
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
         a->pipelined_rings == b->pipelined_rings && a->channels == b->channels && a->n == b->n && a->root == b->root &&
         a->gpus_per_node == b->gpus_per_node && double_bits(a->bytes) == double_bits(b->bytes) &&
         double_bits(a->chunk_bytes) == double_bits(b->chunk_bytes) &&
         double_bits(a->step_nvlink_s) == double_bits(b->step_nvlink_s) &&
         double_bits(a->step_net_s) == double_bits(b->step_net_s) && same_ints(a->node_of, b->node_of, a->n) &&
         same_ints(a->loc, b->loc, a->n) && a->trees_len == b->trees_len &&
         same_ints(a->trees, b->trees, a->trees_len) && memcmp(a->innet, b->innet, sizeof a->innet) == 0 &&
         same_ints(a->pxn, b->pxn, a->pxn ? 2 * a->n + 1 : 0);
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
  int *p = sgf_xmalloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  return p;
}

/* ---- In-network reduction: the instance side (the trees, from the GPUs and the topology) ---- */

struct ibuf {
  int *v;
  int n, cap;
};

static void ib_push(struct ibuf *b, int x)
{
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    b->v = xrealloc(b->v, sizeof(int) * (size_t)b->cap);
  }
  b->v[b->n++] = x;
}

/* The SHARP trees running on each switch and the SHARP collectives running are the fabric's
 * (fab->innet_trees, fab->innet_active): the limit is per job, one fabric per run. */
int coll_sharp_active(const struct fabric *fab) { return fab->innet_active; }

static void sharp_for(struct fabric *fab)
{
  if (fab->innet_trees != NULL)
    return;
  fab->innet_trees = sgf_xcalloc((size_t)fab->topo->n_nodes + 1, sizeof(int));
}

/* The SHARP trees running on each switch of fab's topology. */
static const int *sharp_busy(struct fabric *fab)
{
  sharp_for(fab);
  return fab->innet_trees;
}

/* The switches of the SHARP records of b from offset `from` (each once, in node order) into
 * *list; returns their count. */
static int sharp_switches(const struct topo *t, const struct ibuf *b, int from, int **list)
{
  uint8_t *seen = sgf_xcalloc((size_t)t->n_nodes + 1, 1);
  for (int at = from; at < b->n; at += trec_len(b->v + at)) {
    const int *r = b->v + at;
    if (r[2] != TREC_SHARP)
      continue;
    const int *edge = r + TREC_HEAD + r[5];
    for (int e = 0; e < r[5] + r[6]; e++) {
      const struct topo_port *up = &t->ports[edge[3 * e]];
      if (t->nodes[up->node].kind == TOPO_SWITCH)
        seen[up->node] = 1;
      if (t->nodes[up->peer_node].kind == TOPO_SWITCH)
        seen[up->peer_node] = 1;
    }
  }
  int count = 0;
  for (int v = 0; v < t->n_nodes; v++)
    count += seen[v];
  *list = xmalloc_ints(count);
  for (int v = 0, k = 0; v < t->n_nodes; v++)
    if (seen[v])
      (*list)[k++] = v;
  free(seen);
  return count;
}

/* Whether every switch of the SHARP records of b from `from` has a tree to spare. */
static int sharp_switches_free(struct fabric *fab, const struct coll_params *p, const struct ibuf *b, int from)
{
  sharp_for(fab);
  int *list, n = sharp_switches(fab->topo, b, from, &list), ok = 1;
  for (int k = 0; k < n && ok; k++)
    ok = fab->innet_trees[list[k]] < p->sharp_max_trees;
  free(list);
  return ok;
}

static void sharp_release(struct coll_instance *c)
{
  if (c->sharp_switches) {
    for (int k = 0; k < c->n_sharp_switches; k++)
      if (c->fab->innet_trees[c->sharp_switches[k]] > 0)
        c->fab->innet_trees[c->sharp_switches[k]]--;
    if (c->fab->innet_active > 0)
      c->fab->innet_active--;
  }
  free(c->sharp_switches);
  c->sharp_switches = NULL;
}

int coll_algo_in_network(enum coll_algo a)
{
  return a == COLL_ALGO_SHARP || a == COLL_ALGO_NVLS || a == COLL_ALGO_NVLS_TREE || a == COLL_ALGO_NVLS_SHARP;
}

int coll_algo_needs_sharp(enum coll_algo a) { return a == COLL_ALGO_SHARP || a == COLL_ALGO_NVLS_SHARP; }

int coll_fabric_has_sharp(const struct fabric *fab)
{
  return fab->model && fab->model->name && strcmp(fab->model->name, "ib") == 0 && fab->fidelity == FAB_FIDELITY_FLOW;
}

int coll_params_check(const struct coll_params *p, const struct fabric *fab, char *err, size_t errlen)
{
  if (coll_algo_needs_sharp(p->algo) && !coll_fabric_has_sharp(fab)) {
    snprintf(err, errlen,
             "coll/algorithm:%s needs IB SHARP, which reduces in InfiniBand switches: an ib fabric at flow fidelity "
             "(this one is %s at %s fidelity); use coll/algorithm:auto with coll/sharp:on to use SHARP where the "
             "fabric has it",
             coll_algo_name(p->algo), fab->model && fab->model->name ? fab->model->name : "?",
             fab->fidelity == FAB_FIDELITY_FLOW ? "flow" : "packet");
    return -1;
  }
  return 0;
}

/* Whether switch node v reaches node root going up only. */
static int reaches_up(const struct topo *t, int v, int root)
{
  if (v == root)
    return 1;
  if (t->nodes[v].level >= t->nodes[root].level)
    return 0;
  const struct topo_node *nd = &t->nodes[v];
  for (int q = nd->first_port; q < nd->first_port + nd->port_count; q++)
    if (t->ports[q].is_up && reaches_up(t, t->ports[q].peer_node, root))
      return 1;
  return 0;
}

/* The record head; the caller appends members and edges. */
static void trec_head(struct ibuf *b, int phase, int mode, int tech, int part, int parts, int m, int esw)
{
  int h[TREC_HEAD] = { phase, mode, tech, part, parts, m, esw };
  for (int i = 0; i < TREC_HEAD; i++)
    ib_push(b, h[i]);
}

/* Appends the record of a SHARP aggregation tree over members mem[0..m) (GPUs gpus[mem[i]]):
 * the root is a lowest switch above every member's leaf: among those in the fewest running
 * trees (busy: per node, or NULL), candidate `part` mod their count in node order (the rails'
 * trees of NVLS-SHARP spread over the spines, as the aggregation manager gives each rail its
 * own tree and avoids busy switches), each switch's parent its first up-port toward the root: a tree
 * per job over the fat-tree, as SHARP's aggregation manager builds them (Graham et al. 2016). Returns 0, or -1 (nothing
 * appended) when a member has no NIC or no switch is above them all. */
static int sharp_record(const struct topo *t, const int *busy, const int *gpus, const int *mem, int m, int phase,
                        int mode, int part, int parts, struct ibuf *b)
{
  int *leaf = sgf_xcalloc((size_t)m + 1, sizeof(int));
  int *sw = sgf_xmalloc(sizeof(int) * (size_t)t->n_nodes); /* node -> its edge, -1 */
  int *edge = sgf_xmalloc(sizeof(int) * 3 * (size_t)(m + t->n_nodes)),
      *order = sgf_xmalloc(sizeof(int) * (size_t)t->n_nodes);
  int root = -1, ok = 1, esw = 0;
  for (int i = 0; i < m && ok; i++) {
    int port = t->gpu_nic_port[gpus[mem[i]]];
    ok = port >= 0;
    leaf[i] = ok ? t->ports[port].peer_node : -1;
  }
  if (ok) {
    root = leaf[0];
    for (int i = 1; i < m; i++)
      if (leaf[i] != root)
        root = -1;
    for (int level = 2; root < 0 && level <= t->max_level; level++) {
      /* The candidates at this level; among those in the fewest running trees, number part. */
      int count = 0, least = INT32_MAX;
      for (int v = 0; v < t->n_nodes; v++) {
        if (t->nodes[v].kind != TOPO_SWITCH || t->nodes[v].level != level)
          continue;
        int all = 1;
        for (int i = 0; i < m && all; i++)
          all = t->nodes[leaf[i]].leaf_index >= 0 && topo_downset_has(t, v, t->nodes[leaf[i]].leaf_index);
        if (!all)
          continue;
        int load = busy ? busy[v] : 0;
        if (load < least) {
          least = load;
          count = 0;
        }
        if (load == least)
          order[count++] = v;
      }
      if (count > 0)
        root = order[part % count];
    }
    ok = root >= 0;
  }
  for (int v = 0; v < t->n_nodes; v++)
    sw[v] = -1;
  /* Member legs, then each switch met on the way up gets its edge (children first). */
  for (int i = 0; i < m && ok; i++) {
    int port = t->gpu_nic_port[gpus[mem[i]]];
    edge[3 * i] = port;
    edge[3 * i + 1] = t->ports[port].peer_port;
    edge[3 * i + 2] = -1;
  }
  for (int i = 0; i < m && ok; i++) {
    int below = i, v = leaf[i];
    while (ok && v != root) {
      if (sw[v] >= 0) { /* already on the tree: hang below it */
        edge[3 * below + 2] = m + sw[v];
        break;
      }
      int up = -1;
      for (int q = t->nodes[v].first_port; q < t->nodes[v].first_port + t->nodes[v].port_count && up < 0; q++)
        if (t->ports[q].is_up && reaches_up(t, t->ports[q].peer_node, root))
          up = q;
      if (up < 0) {
        ok = 0;
        break;
      }
      sw[v] = esw;
      order[esw] = v;
      int e = m + esw++;
      edge[3 * e] = up;
      edge[3 * e + 1] = t->ports[up].peer_port;
      edge[3 * e + 2] = -1;
      edge[3 * below + 2] = e;
      below = e;
      v = t->ports[up].peer_node;
    }
  }
  /* A switch's edge must come after its children's: a switch edge is made before the edges of
   * the switches above it, and a later member only hangs below existing edges, so edges are in
   * order already; checked here all the same. */
  for (int e = 0; e < m + esw && ok; e++)
    ok = edge[3 * e + 2] < 0 || edge[3 * e + 2] > e;
  if (ok) {
    trec_head(b, phase, mode, TREC_SHARP, part, parts, m, esw);
    for (int i = 0; i < m; i++)
      ib_push(b, mem[i]);
    for (int k = 0; k < 3 * (m + esw); k++)
      ib_push(b, edge[k]);
  }
  free(leaf);
  free(sw);
  free(edge);
  free(order);
  return ok ? 0 : -1;
}

/* Appends the record of an NVLS tree over members mem[0..m): every member's NVLink port must
 * reach one NVSwitch, the root. Returns 0, or -1 (nothing appended). */
static int nvls_record(const struct topo *t, const int *gpus, const int *mem, int m, int phase, int mode,
                       struct ibuf *b)
{
  int root = -1;
  for (int i = 0; i < m; i++) {
    int port = t->gpu_nvl_port[gpus[mem[i]]];
    if (port < 0 || (root >= 0 && t->ports[port].peer_node != root))
      return -1;
    root = t->ports[port].peer_node;
  }
  trec_head(b, phase, mode, TREC_NVLS, 0, 1, m, 0);
  for (int i = 0; i < m; i++)
    ib_push(b, mem[i]);
  for (int i = 0; i < m; i++) {
    int port = t->gpu_nvl_port[gpus[mem[i]]];
    ib_push(b, port);
    ib_push(b, t->ports[port].peer_port);
    ib_push(b, -1);
  }
  return 0;
}

/* The members by node (node numbers in order of first appearance, GPUs per node gpn): writes
 * local[k * per_node + l] (member l of node k) and returns the node count, or 0 when the nodes do
 * not all hold the same number (> 1) of members. */
static int members_by_node(const int *gpus, int n, int gpn, int **local_out, int *per_node_out)
{
  if (gpn <= 0)
    return 0;
  int *node_of = xmalloc_ints(n), *scratch = xmalloc_ints(n);
  number_nodes(gpus, n, gpn, node_of, scratch);
  int nodes = 0;
  for (int i = 0; i < n; i++)
    nodes = node_of[i] + 1 > nodes ? node_of[i] + 1 : nodes;
  int *count = calloc((size_t)nodes, sizeof(int));
  for (int i = 0; i < n; i++)
    count[node_of[i]]++;
  int per_node = count[0], regular = per_node > 1;
  for (int k = 0; k < nodes; k++)
    regular &= count[k] == per_node;
  int *local = NULL;
  if (regular) {
    local = xmalloc_ints(n);
    for (int k = 0; k < nodes; k++)
      count[k] = 0;
    for (int i = 0; i < n; i++)
      local[node_of[i] * per_node + count[node_of[i]]++] = i;
  }
  free(node_of);
  free(scratch);
  free(count);
  *local_out = local;
  *per_node_out = per_node;
  return regular ? nodes : 0;
}

/* NVLS-tree or NVLS-SHARP over regular nodes: NVLS reduce-scatter in each node (member l keeps
 * share l), the all-reduce of share l across nodes among the nodes' members l (a ring, or a
 * SHARP tree), NVLS all-gather in each node. Returns 0, or -1 (b restored). */
static int nvls_hier_records(const struct topo *t, const int *busy, const int *gpus, const int *local, int nodes,
                             int per_node, int use_sharp, struct ibuf *b)
{
  int mark = b->n, *rail = xmalloc_ints(nodes), ok = 1;
  for (int k = 0; k < nodes && ok; k++)
    ok = nvls_record(t, gpus, local + k * per_node, per_node, 0, TREC_RS, b) == 0;
  for (int l = 0; l < per_node && ok; l++) {
    for (int k = 0; k < nodes; k++)
      rail[k] = local[k * per_node + l];
    if (use_sharp) {
      ok = sharp_record(t, busy, gpus, rail, nodes, 1, TREC_AR, l, per_node, b) == 0;
    } else {
      trec_head(b, 1, TREC_AR, TREC_RING, l, per_node, nodes, 0);
      for (int k = 0; k < nodes; k++)
        ib_push(b, rail[k]);
    }
  }
  for (int k = 0; k < nodes && ok; k++)
    ok = nvls_record(t, gpus, local + k * per_node, per_node, 2, TREC_AG, b) == 0;
  free(rail);
  if (!ok)
    b->n = mark;
  return ok ? 0 : -1;
}

/* The legs from member 0 of the first SHARP record of b up to its root. */
static int sharp_legs(const struct ibuf *b)
{
  for (int at = 0; at < b->n; at += trec_len(b->v + at)) {
    const int *r = b->v + at;
    if (r[2] != TREC_SHARP)
      continue;
    const int *edge = r + TREC_HEAD + r[5];
    int legs = 0;
    for (int e = 0; e >= 0; e = edge[3 * e + 2])
      legs++;
    return legs;
  }
  return 1;
}

/* NCCL's kind of prediction (alpha-beta, src/graph/tuning.cc) of an in-network algorithm: its
 * switches' latencies, then a pipeline of `stages` legs in steps of INNET_STEP_BYTES paced by
 * its slowest stage. */
static double predict_innet(const struct fabric *fab, const struct coll_params *p, const struct coll_desc *d,
                            enum coll_algo algo, const struct ibuf *b, int nodes, int per_node)
{
  const struct topo *t = fab->topo;
  double S = d->bytes;
  double cs = S < INNET_STEP_BYTES ? S : INNET_STEP_BYTES; /* a step */
  double chunks = S / cs;
  int g = d->gpus[0];
  double nvl = p->nvls_rate_Bps, nic = p->sharp_rate_Bps;
  if (t->gpu_nvl_port[g] >= 0 && fabric_port_payload_rate(fab, t->gpu_nvl_port[g]) < nvl)
    nvl = fabric_port_payload_rate(fab, t->gpu_nvl_port[g]);
  double nic_line = t->gpu_nic_port[g] >= 0 ? fabric_port_payload_rate(fab, t->gpu_nic_port[g]) : 1e300;
  int L = sharp_legs(b);
  double lat = 0, stage = 0;
  int stages = 0;
  switch (algo) {
  case COLL_ALGO_NVLS:
    lat = p->nvls_latency_s;
    stage = cs / nvl;
    stages = 2;
    break;
  case COLL_ALGO_SHARP:
    lat = L * p->sharp_latency_s;
    stage = cs / (nic < nic_line ? nic : nic_line);
    stages = 2 * L;
    break;
  case COLL_ALGO_NVLS_SHARP: {
    lat = 2 * p->nvls_latency_s + L * p->sharp_latency_s;
    double net = cs / per_node / (nic < nic_line ? nic : nic_line);
    stage = cs / nvl > net ? cs / nvl : net;
    stages = 4 + 2 * L;
    break;
  }
  case COLL_ALGO_NVLS_TREE:
  default: {
    double step = p->step_latency_net_s[COLL_PROTO_SIMPLE];
    lat = 2 * p->nvls_latency_s + 2 * (nodes - 1) * step;
    double net = 2.0 * (nodes - 1) / nodes * cs / per_node / nic_line;
    stage = cs / nvl > net ? cs / nvl : net;
    stages = 4;
    break;
  }
  }
  return p->base_latency_s[COLL_PROTO_SIMPLE] + lat + (stages - 1 + chunks) * stage;
}

/* The lowest time NCCL's model predicts for the usual algorithm (auto: hierarchical or ring) over
 * the protocols. */
static double predict_usual(struct fabric *fab, const struct coll_params *p, const struct coll_desc *d)
{
  struct coll_params q = *p;
  q.algo = COLL_ALGO_AUTO;
  struct coll_instance c = { .fab = fab, .n = d->n, .gpus = (int *)d->gpus };
  static const enum coll_proto order[] = { COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE };
  double best = INFINITY;
  for (int i = 0; i < 3; i++) {
    if (p->proto != COLL_PROTO_AUTO && p->proto != order[i])
      continue;
    c.proto = order[i];
    c.step_nvlink_s = p->step_latency_nvlink_s[order[i]];
    c.step_net_s = p->step_latency_net_s[order[i]];
    double time = predict(&c, &q, d);
    best = time < best ? time : best;
  }
  return best;
}

/* The in-network algorithm a collective uses, its records in b; COLL_ALGO_AUTO when none (the
 * usual algorithms then apply: an explicit request that cannot be met falls back to a ring, as
 * NCCL falls back when an algorithm is unavailable). Under coll/algorithm:auto, NCCL's choice as
 * modelled (docs/collectives.md): with coll/nvls:on, NVLS for a group inside one node and, for an
 * all-reduce over nodes that hold the same number (> 1) of members, NVLS-SHARP when coll/sharp is
 * on and the fabric has SHARP, else NVLS-tree; with coll/sharp:on and no NVLS, SHARP for an
 * all-reduce. SHARP also needs a free tree (coll/sharp-max-trees). Auto takes the in-network
 * algorithm only when NCCL's kind of prediction says it is faster than the usual one (as NCCL's
 * tuner compares every algorithm's predicted time): small messages keep their LL rings. */
static enum coll_algo innet_resolve(struct fabric *fab, const struct coll_params *p, const struct coll_desc *d,
                                    struct ibuf *b)
{
  const struct topo *t = fab->topo;
  enum coll_kind kind = d->kind;
  if (d->n < 2 || d->bytes <= 0 || (kind != COLL_ALLREDUCE && kind != COLL_REDUCE_SCATTER && kind != COLL_ALLGATHER))
    return COLL_ALGO_AUTO;
  enum coll_algo req = p->algo;
  if (req != COLL_ALGO_AUTO && !coll_algo_in_network(req))
    return COLL_ALGO_AUTO;
  if (req == COLL_ALGO_AUTO && !p->sharp && !p->nvls)
    return COLL_ALGO_AUTO; /* the default: nothing changes */
  int mode = kind == COLL_ALLREDUCE ? TREC_AR : kind == COLL_REDUCE_SCATTER ? TREC_RS : TREC_AG;
  int *all = xmalloc_ints(d->n);
  for (int i = 0; i < d->n; i++)
    all[i] = i;
  int sharp_ok = coll_fabric_has_sharp(fab);
  enum coll_algo got = COLL_ALGO_AUTO;
  int hier_nodes = 0, hier_per_node = 0;
  /* NVLS first: a group inside one node. */
  if ((req == COLL_ALGO_AUTO && p->nvls) || req == COLL_ALGO_NVLS || req == COLL_ALGO_NVLS_TREE ||
      req == COLL_ALGO_NVLS_SHARP)
    if (nvls_record(t, d->gpus, all, d->n, 0, mode, b) == 0)
      got = COLL_ALGO_NVLS;
  if (got == COLL_ALGO_AUTO && kind == COLL_ALLREDUCE &&
      ((req == COLL_ALGO_AUTO && p->nvls) || req == COLL_ALGO_NVLS_TREE || req == COLL_ALGO_NVLS_SHARP)) {
    int *local = NULL, per_node = 0;
    int gpn = d->gpus_per_node > 0 ? d->gpus_per_node : t->gpus_per_node;
    int nodes = members_by_node(d->gpus, d->n, gpn, &local, &per_node);
    int want_sharp = req == COLL_ALGO_NVLS_SHARP || (req == COLL_ALGO_AUTO && p->sharp);
    hier_nodes = nodes;
    hier_per_node = per_node;
    if (nodes > 1) {
      if (want_sharp && sharp_ok && nvls_hier_records(t, sharp_busy(fab), d->gpus, local, nodes, per_node, 1, b) == 0) {
        got = COLL_ALGO_NVLS_SHARP;
        if (!sharp_switches_free(fab, p, b, 0)) { /* no tree to spare: NVLS-tree */
          b->n = 0;
          got = COLL_ALGO_AUTO;
        }
      }
      if (got == COLL_ALGO_AUTO && nvls_hier_records(t, NULL, d->gpus, local, nodes, per_node, 0, b) == 0)
        got = COLL_ALGO_NVLS_TREE;
    }
    free(local);
  }
  if (got == COLL_ALGO_AUTO && sharp_ok &&
      (req == COLL_ALGO_SHARP || (req == COLL_ALGO_AUTO && p->sharp && kind == COLL_ALLREDUCE)))
    if (sharp_record(t, sharp_busy(fab), d->gpus, all, d->n, 0, mode, 0, 1, b) == 0) {
      got = COLL_ALGO_SHARP;
      if (!sharp_switches_free(fab, p, b, 0)) { /* no tree to spare: the usual algorithm */
        b->n = 0;
        got = COLL_ALGO_AUTO;
      }
    }
  free(all);
  if (got != COLL_ALGO_AUTO && req == COLL_ALGO_AUTO &&
      predict_innet(fab, p, d, got, b, hier_nodes, hier_per_node) >= predict_usual(fab, p, d)) {
    b->n = 0;
    got = COLL_ALGO_AUTO;
  }
  return got;
}

/* The description of a collective (see struct coll_shape) whose protocol is c's (set_protocol). */
static void describe(struct coll_shape *key, const struct coll_instance *c, const struct coll_params *p,
                     const struct coll_desc *d, enum coll_algo innet, struct ibuf *trees)
{
  struct fabric *fab = c->fab;
  memset(key, 0, sizeof *key);
  key->kind = d->kind;
  /* An in-network algorithm that could not be had falls back to a ring. */
  key->param_algo = innet != COLL_ALGO_AUTO ? innet : coll_algo_in_network(p->algo) ? COLL_ALGO_RING : p->algo;
  if (innet != COLL_ALGO_AUTO) {
    key->trees = trees->v; /* taken over */
    key->trees_len = trees->n;
    trees->v = NULL;
    trees->n = trees->cap = 0;
    key->innet[0] = p->sharp_latency_s;
    key->innet[1] = p->sharp_rate_Bps;
    key->innet[2] = p->nvls_latency_s;
    key->innet[3] = p->nvls_rate_Bps;
  }
  key->proto = c->proto;
  int model_steps = fab->model->flow.rings_in_steps != NULL && fab->model->flow.rings_in_steps(fab);
  key->pipelined_rings = p->ring_mode == COLL_RING_PIPELINED ||
                         (p->ring_mode == COLL_RING_AUTO && fab->fidelity == FAB_FIDELITY_FLOW && !model_steps);
  key->channels = p->channels > 0 ? p->channels : 1;
  key->n = d->n;
  key->root = d->kind == COLL_BROADCAST ? d->root : 0;
  key->bytes = d->bytes;
  key->chunk_bytes = p->chunk_bytes;
  key->step_nvlink_s = c->step_nvlink_s;
  key->step_net_s = c->step_net_s;
  int buildable = d->n > 1 && d->bytes > 0;
  int *scratch = NULL;
  if (buildable && d->kind == COLL_ALLREDUCE &&
      (key->param_algo == COLL_ALGO_AUTO || key->param_algo == COLL_ALGO_HIERARCHICAL) && d->gpus_per_node > 0) {
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
  if (buildable && d->kind == COLL_ALLTOALL && p->pxn && fab->topo->gpus_per_node > 0) {
    const struct topo *t = fab->topo;
    if (scratch == NULL)
      scratch = xmalloc_ints(d->n);
    int *node = xmalloc_ints(d->n);
    number_nodes(d->gpus, d->n, t->gpus_per_node, node, scratch);
    key->pxn = xmalloc_ints(2 * d->n + 1);
    for (int i = 0; i < d->n; i++) {
      key->pxn[2 * i] = node[i];
      key->pxn[2 * i + 1] = t->gpu_nvl_port[d->gpus[i]] >= 0 ? d->gpus[i] % t->gpus_per_node : -1;
    }
    key->pxn[2 * d->n] = t->gpus_per_node;
    free(node);
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
  /* Only when used, so that the descriptions of the other algorithms hash as they did. */
  if (key->trees) {
    h = mix64(h, (uint64_t)key->trees_len);
    for (int i = 0; i < key->trees_len; i++)
      h = mix64(h, (uint64_t)(unsigned)key->trees[i]);
    for (int i = 0; i < 4; i++)
      h = mix64(h, double_bits(key->innet[i]));
  }
  if (key->pxn)
    for (int i = 0; i < 2 * key->n + 1; i++)
      h = mix64(h, (uint64_t)(unsigned)key->pxn[i]);
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
      free(key->trees);
      free(key->pxn);
      *cached = 1;
      return c;
    }
  struct coll_shape *c = sgf_xmalloc(sizeof *c);
  *c = *key;
  if (c->n > 1 && c->bytes > 0)
    build(c);
  else
    c->algo = COLL_ALGO_RING;
  index_graph(c);
  c->bytes_used = sizeof *c + sizeof(struct xfer) * (size_t)c->cap_x + sizeof(struct ring) * (size_t)c->cap_rings +
                  sizeof(int) * ((size_t)c->n * 5 + (size_t)c->nx * 3 + 3 + (size_t)c->trees_len +
                                 (c->pxn ? 2 * (size_t)c->n + 1 : 0));
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
  struct coll_instance proto = { .fab = fab, .n = d->n, .gpus = (int *)d->gpus };
  struct ibuf trees = { NULL, 0, 0 };
  enum coll_algo innet = innet_resolve(fab, p, d, &trees);
  int *sharp_list = NULL, n_sharp = 0;
  if (coll_algo_needs_sharp(innet)) {
    sharp_for(fab);
    n_sharp = sharp_switches(fab->topo, &trees, 0, &sharp_list);
  }
  if (innet != COLL_ALGO_AUTO) {
    /* NCCL runs its NVLS and CollNet (SHARP) algorithms with the Simple protocol only
     * (src/graph/tuning.cc: their LL and LL128 bandwidths are 0). */
    proto.proto = COLL_PROTO_SIMPLE;
    proto.step_nvlink_s = p->step_latency_nvlink_s[COLL_PROTO_SIMPLE];
    proto.step_net_s = p->step_latency_net_s[COLL_PROTO_SIMPLE];
    proto.start_delay_s = p->launch_s + p->base_latency_s[COLL_PROTO_SIMPLE];
  } else if (d->n > 1 && d->bytes > 0) {
    set_protocol(&proto, p, d);
  } else {
    /* Nothing to move: no kernel, no cost (as NCCL returns at once on an empty buffer). */
    proto.proto = p->proto == COLL_PROTO_AUTO ? COLL_PROTO_SIMPLE : p->proto;
  }
  struct coll_shape key;
  describe(&key, &proto, p, d, innet, &trees);
  free(trees.v);
  int cached;
  struct coll_shape *shape = shape_get(&key, &cached);
  /* One block: the instance, then its copies of the shape's transfers, the members' timer
   * contexts, its copies of the shape's rings, the members' counters, GPUs and join flags. */
  size_t n = d->n > 0 ? (size_t)d->n : 0, nx = (size_t)shape->nx, nr = (size_t)shape->n_rings;
  size_t size = sizeof(struct coll_instance) + sizeof(struct xfer) * nx + sizeof(struct member_ref) * n +
                sizeof(struct ring) * nr + sizeof(int) * 2 * n + n;
  struct coll_instance *c = sgf_xmalloc(size);
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
    c->refs[m] = (struct member_ref){ c, (int)m };
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
  c->sharp_switches = NULL;
  c->n_sharp_switches = 0;
  if (sharp_list) { /* it holds a tree on each of its switches while it runs */
    c->sharp_switches = sharp_list;
    c->n_sharp_switches = n_sharp;
    for (int k = 0; k < n_sharp; k++)
      fab->innet_trees[sharp_list[k]]++;
    fab->innet_active++;
  }
  return c;
}

static void sharp_release(struct coll_instance *c);

static void instance_free(struct coll_instance *c)
{
  sharp_release(c);
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
    struct coll_report r = {
      c->kind, c->algo, c->proto, c->shape->ring_forms, c->n, c->bytes, c->start_s, c->fab->now
    };
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
  int ends[2] = { x->src, x->dst };
  for (int e = 0; e < 2 && x->src >= 0; e++)
    if (--c->remaining[ends[e]] == 0 && c->joined[ends[e]])
      if (member_done(c, ends[e]))
        return 1;
  return 0;
}

/* Every transfer of x's ring group arrived (and its tail passed): they complete together. */
static void ring_done(struct fabric *fab, void *ctx)
{
  (void)fab;
  struct xfer *x = ctx;
  struct coll_instance *c = x->owner;
  struct ring *r = &c->rings[x->ring];
  for (int i = 0; i < r->count; i++)
    if (xfer_complete(c, &c->x[r->first + i]))
      return;
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
  if (r->tail_s > 0) { /* the pipeline's last step still crosses the legs after the first */
    fabric_call_at(fab, fab->now + r->tail_s, ring_done, x);
    return;
  }
  ring_done(fab, x);
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
    fabric_call_at(fab, fab->now + x->later_steps * step + (x->later_steps + 1) * sync_extra(x, step), xfer_arrived, x);
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

static void xfer_noop_done(struct fabric *fab, void *ctx)
{
  (void)fab;
  struct xfer *x = ctx;
  xfer_complete(x->owner, x);
}

static void xfer_start(struct coll_instance *c, int t)
{
  struct xfer *x = &c->x[t];
  if (x->port == -2) { /* a no-op (a barrier's parts): done now, from the calendar */
    fabric_call_at(c->fab, c->fab->now, xfer_noop_done, x);
    return;
  }
  if (x->port >= 0) { /* a leg of an in-network tree: one port, after the switch's latency */
    fabric_post_path(c->fab, c->gpus[x->rep], &x->port, 1, x->bytes, c->fab->now + x->delay_s, c->tag, x->cap_Bps,
                     xfer_finished, x);
    return;
  }
  struct fab_flow *f =
      fabric_post(c->fab, c->gpus[x->src], c->gpus[x->dst], x->bytes, c->fab->now, c->tag, xfer_finished, x);
  f->call = c->call;
  f->conn = (uint8_t)x->channel;
  f->message_B = x->message_B;
  f->ring_step = (uint8_t)x->ring_step;
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
  case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
  case COLL_ALLTOALL: return (double)(n - 1) / n;
  case COLL_BROADCAST:
  default: return 1;
  }
}

const char *coll_kind_name(enum coll_kind k)
{
  static const char *names[] = { "allreduce", "reducescatter", "allgather", "alltoall", "broadcast" };
  return k < COLL_KIND_COUNT ? names[k] : "?";
}

const char *coll_algo_name(enum coll_algo a)
{
  static const char *names[] = { "auto", "ring", "tree", "hierarchical", "sharp", "nvls", "nvls_tree", "nvls_sharp" };
  return a < COLL_ALGO_COUNT ? names[a] : "?";
}

const char *coll_proto_name(enum coll_proto p)
{
  static const char *names[] = { "auto", "simple", "ll", "ll128" };
  return p < COLL_PROTO_COUNT ? names[p] : "?";
}

const char *coll_ring_forms_name(int ring_forms)
{
  static const char *names[] = { NULL, "steps", "pipelined", "steps+pipelined" };
  return ring_forms >= 0 && ring_forms < 4 ? names[ring_forms] : NULL;
}
