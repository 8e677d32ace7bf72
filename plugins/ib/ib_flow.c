/* InfiniBand at flow fidelity: the same mechanisms as fluid-rate effects.
 *
 *  - routing: a flow follows its D-mod-K path (static tables) or, under adaptive routing, is
 *    spread evenly over its minimal paths (one part per path, fabric_flow_split) when they are
 *    at most ib/ar-paths, or else takes the least-loaded path at its start: per-packet
 *    AR sends each packet to the least loaded up-port, which in steady state balances a flow's
 *    bytes over the paths that are not congested;
 *  - credit window: a sender can have at most one receive buffer of unacknowledged bytes per
 *    hop, whose credits come back one credit round trip later, so a flow's rate is capped at
 *    min over hops of floor(buffer / MTU) x MTU / RTT_hop with
 *      RTT_hop = 2 x link delay + MTU / rate + credit delay (+ switch latency into a switch);
 *  - congestion trees: a flow whose bottleneck is a port further downstream fills the input
 *    buffers it crosses before that port; a flow that shares one of those buffers (same
 *    upstream port, same VL) then gets credits only in turn with the blocked traffic, so its
 *    rate is capped (ib__on_rates says how much), after max-min, iterated to a fixed point
 *    through the on_rates hook;
 *  - the adaptive-routing imbalance: per-packet AR, deciding at each leaf alone, does not hold the
 *    even spread; a busy leaf sending to many leaves loses a share of its line rate
 *    (ar_imbalance_derate below lowers its NICs' capacity). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ib_internal.h"
#include "check.h"
#include "radix.h"

double ib__window_cap(const struct fabric *fab, const struct fab_flow *flow)
{
  const struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  /* Full packets the credit holds (each its headers included), in payload bytes. */
  double window = floor((double)st->p.buffer_blocks / ib__packet_blocks(&st->p, st->p.mtu_bytes)) * st->p.mtu_bytes;
  double cap = INFINITY;
  for (int h = 0; h < flow->hops; h++) {
    const struct topo_port *p = &t->ports[flow->path[h]];
    if (p->is_nvlink)
      continue;
    double rtt = 2 * p->latency_s + (st->p.mtu_bytes + st->p.header_bytes) / p->rate_Bps + st->p.credit_delay_s;
    if (t->nodes[p->peer_node].kind == TOPO_SWITCH)
      rtt += fab->switch_latency_s;
    int shared = h == 0 || h == flow->hops - 1 ? ib__flow_parts(flow) : 1;
    if (window / rtt / shared < cap)
      cap = window / rtt / shared;
  }
  return cap < fabric_port_payload_rate(fab, flow->path[0]) / ib__flow_parts(flow) ? cap : 0;
}

/* The path of a flow, or of one of its parts, under adaptive routing, written to ports (hop count
 * returned); *count receives the number of minimal paths (the product of the candidates at each
 * hop of a fat-tree).
 *  - parts == count: the flow is spread over every path, part number `part` read as a mixed-radix
 *    number, first hop fastest, so the parts are exactly the distinct paths;
 *  - parts == 0: a single path, the least-loaded candidate (fewest active flows) at each hop,
 *    ties broken by a per-flow hash: what adaptive routing picks for the first packets;
 *  - otherwise part i takes candidate (h + i) mod n at each hop, h a per-hop hash of the flow.
 * Either way a path costs one walk down the tree, not an enumeration. */
/* The load of going through up-port `port`: the active flows on it and, when it reaches a switch
 * from which the way down to the destination is fixed (a top of the up-down path), the most loaded
 * port of that way down, where flows that chose different up-ports meet again. */
static int candidate_load(const struct fabric *fab, int port, int dst_gpu)
{
  const struct topo *t = fab->topo;
  int load = fabric_port_flow_count(fab, port);
  int node = t->ports[port].peer_node, dst_node = t->gpu_node[dst_gpu];
  int down[ROUTE_MAX_CANDIDATES];
  if (t->nodes[node].kind != TOPO_SWITCH || !topo_downset_has(t, node, t->gpu_leaf[dst_gpu]))
    return load;
  for (int hops = 0; node != dst_node && hops < ROUTE_MAX_HOPS; hops++) {
    if (fab_route_candidates(t, node, dst_gpu, down, ROUTE_MAX_CANDIDATES) < 1)
      break;
    int l = fabric_port_flow_count(fab, down[0]);
    if (l > load)
      load = l;
    node = t->ports[down[0]].peer_node;
  }
  return load;
}

static int ar_path(const struct fabric *fab, const struct fab_flow *flow, uint64_t part, int parts, int *ports,
                   int *count)
{
  const struct topo *t = fab->topo;
  int cand[ROUTE_MAX_CANDIDATES];
  int node = t->gpu_node[flow->src_gpu], dst_node = t->gpu_node[flow->dst_gpu];
  int hops = 0;
  uint64_t total = 1, digits = part;
  while (node != dst_node && hops < ROUTE_MAX_HOPS) {
    int n = fab_route_candidates(t, node, flow->dst_gpu, cand, ROUTE_MAX_CANDIDATES);
    if (n == 0)
      return -1;
    total *= (uint64_t)n;
    int pick = 0;
    if (n > 1) {
      int start = (int)route_pick(flow->key, 0x1b, node, n);
      if (parts == 0) {
        int best = -1, best_load = 0;
        for (int k = 0; k < n; k++) {
          int c = (start + k) % n, load = candidate_load(fab, cand[c], flow->dst_gpu);
          if (best < 0 || load < best_load) {
            best = c;
            best_load = load;
          }
        }
        pick = best;
      } else if ((uint64_t)parts >= total) {
        pick = (int)(digits % (uint64_t)n);
        digits /= (uint64_t)n;
      } else {
        pick = (int)((start + part) % (uint64_t)n);
      }
    }
    ports[hops++] = cand[pick];
    node = t->ports[cand[pick]].peer_node;
  }
  *count = total > INT32_MAX ? INT32_MAX : (int)total;
  return node == dst_node ? hops : -1;
}

/* How many parts an AR flow is spread over: every minimal path when there are at most
 * ib/ar-paths of them and the transfer has at least as many packets, else none (0: one
 * least-loaded path). Per-packet AR cannot put a transfer on more paths than it has packets
 * (the 64 KB transfers of an all-to-all, 16 packets, over a 32-spine tree), and spreading over a
 * 3-tier tree's hundreds of paths would join every flow of the fabric into one max-min
 * component. */
static int ar_parts(const struct fabric *fab, const struct ib_state *st, const struct fab_flow *whole)
{
  int ports[ROUTE_MAX_HOPS], count;
  if (ar_path(fab, whole, 0, 1, ports, &count) < 0)
    return 0;
  double packets = ceil((whole->bytes + whole->split_bytes) / st->p.mtu_bytes);
  return count <= st->p.ar_paths && count <= packets ? count : 0;
}

void ib__flow_spread(struct fabric *fab, struct fab_flow *flow)
{
  const struct ib_state *st = ib__state(fab);
  if (fab->fidelity != FAB_FIDELITY_FLOW || st->p.routing != IB_ROUTING_AR || flow->parent != NULL ||
      flow->src_gpu == flow->dst_gpu)
    return;
  int parts = ar_parts(fab, st, flow);
  if (parts <= 1)
    return;
  double part = floor(flow->bytes / parts); /* whole bytes; the whole keeps the remainder */
  if (part <= 0)
    return;
  flow->model_data = (void *)(uintptr_t)parts; /* the parts' paths read it (ib__flow_path) */
  for (int i = 1; i < parts; i++)
    fabric_flow_split(fab, flow, part, (uint64_t)i);
}

int ib__flow_path(struct fabric *fab, struct fab_flow *flow)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  int hops = ib_lft_path(&st->lft, t, flow->src_gpu, flow->dst_gpu, flow->path, ROUTE_MAX_HOPS);
  if (hops < 0 || fab->fidelity != FAB_FIDELITY_FLOW)
    return hops;
  if (st->p.routing == IB_ROUTING_AR) {
    const struct fab_flow *whole = flow->parent ? flow->parent : flow;
    /* a split transfer knows its parts (ib__flow_spread); the others find they have none */
    int parts = whole->model_data ? ib__flow_parts(whole) : ar_parts(fab, st, whole), count;
    int spread = ar_path(fab, whole, flow->parent ? flow->key : 0, parts, flow->path, &count);
    if (spread > 0)
      hops = spread;
    if (parts > 1) {
      flow->model_data = (void *)(uintptr_t)parts;
      flow->spread = 1;
      /* One transfer, one share at the NIC: the HCA arbitrates between queue pairs, not between
       * the paths AR sends a queue pair's packets on, so the parts weigh 1/parts each in max-min
       * (otherwise a transfer spread over P paths takes P shares of its NIC beside a transfer
       * that is not spread). */
      if (flow->active_index < 0) /* not on the engine's port lists yet (a reroute keeps its parts) */
        flow->share_weight = 1.0 / parts;
    }
  }
  flow->hops = (uint8_t)hops;
  /* the credit window depends on the path alone: computed once, restored by ib__before_fill */
  flow->standing_cap_Bps = ib__window_cap(fab, flow);
  flow->base_cap_Bps = flow->standing_cap_Bps;
  flow->rate_cap_Bps = flow->standing_cap_Bps;
  if (flow->rate_cap_Bps > 0)
    st->stats.window_caps++;
  return hops;
}

/* The adaptive-routing imbalance.
 *
 * Spreading a flow evenly over its minimal paths is the balance per-packet AR tends to, not one it
 * holds. A leaf sends each packet to its least-loaded up-port whatever the packet's destination,
 * and that load counts the bytes its earlier packets still hold in the spine's buffer, queued for
 * down-links that other leaves load too. When every up-port is busy with traffic to many leaves,
 * an up-port whose spine holds such a backlog is left idle while the others are full, and the
 * time is lost: the flows cannot send above their line rate to catch up. Packet fidelity shows
 * this as a stationary loss, about 10% of line rate on a full leaf, the same for 1, 4 and 16 MB
 * flows and for 64 KiB to 1 MiB buffers, seen at the NICs as credit stalls; it is absent when the
 * leaf sends to one leaf (shift permutations) or to leaves no other leaf sends to, and falls fast
 * with spare up-ports. A deterministic max-min model has no such term; it is added as a lower
 * capacity, (1 - loss(S)) x line rate, of the NICs that send inter-leaf flows from leaf S (spread
 * or not: a transfer left on one path, having fewer packets than paths, still has its packets
 * routed one by one at packet fidelity), with
 *
 *   loss(S) = ib/ar-imbalance x C(N, A) x V^2 x I
 *
 *  - C(N, A): Erlang C, the probability that all N servers of an M/M/N queue offered A erlangs
 *    are busy [A. K. Erlang, 1917]: here the chance that AR finds no idle up-port, N the leaf's
 *    up-ports toward the flows, A their demand (at the NICs' line rate) in up-port units. It
 *    depends on (1 - A/N) sqrt(N) [Halfin and Whitt, 1981], which is what packet fidelity shows:
 *    one spare port of 32 costs a leaf ~80% of the full loss, one of 8 ~50%;
 *  - V: the leaf's destination diversity, 1 - sum over destination leaves of w^2 (w: the share of
 *    the leaf's demand going there; Gini-Simpson), over its largest useful value 1 - 1/N, at most 1;
 *  - I: the share of the leaf's demand going to leaves that another leaf also sends to.
 * ib/ar-imbalance (0.060) and the exponent of V are fitted to packet fidelity (docs/ib.md, "AR
 * imbalance", with the held-out checks). */
struct ar_leg {
  int32_t src_leaf, dst_leaf; /* first and last switch of the flow's (or part's) path */
  int32_t nic;                /* first port of the path: the sending NIC's */
  int32_t flow;               /* index in the component */
  int32_t shared;             /* another source leaf sends to dst_leaf */
  double demand;              /* the flow's (part's) share of its NIC's line rate, scaled down when the
                                 NIC's flows together ask for more than that line rate */
};

/* Byte `pass` of a leg's sort key, least significant first: the destination leaf's four bytes,
 * then the source leaf's. */
static inline unsigned leg_byte(const struct ar_leg *l, int pass)
{
  uint32_t id = (uint32_t)(pass < 4 ? l->dst_leaf : l->src_leaf);
  return (id >> (8 * (pass % 4))) & 0xff;
}

/* Sorts the legs by (source leaf, destination leaf), given in increasing flow order, which ties
 * keep: a stable LSD radix sort on the two node ids (non-negative), a byte at a time, passes
 * whose byte every leg shares skipped. The leaf sums are taken in this order. glibc's qsort was
 * 14 % of the CPU of IB flow runs whose components hold thousands of spread parts. tmp has room
 * for m. */
static void sort_legs(struct ar_leg *a, struct ar_leg *tmp, size_t m)
{
  struct ar_leg *from = a, *to = tmp;
  for (int pass = 0; pass < 8; pass++) {
    size_t count[256] = { 0 };
    for (size_t i = 0; i < m; i++)
      count[leg_byte(&from[i], pass)]++;
    if (count[leg_byte(&from[0], pass)] == m)
      continue; /* every leg has this byte */
    radix_counts_to_offsets(count);
    for (size_t i = 0; i < m; i++)
      to[count[leg_byte(&from[i], pass)]++] = from[i];
    struct ar_leg *swap = from;
    from = to;
    to = swap;
  }
  if (from != a)
    memcpy(a, from, m * sizeof *a);
}

/* Erlang C: the probability that an arrival waits in an M/M/servers queue offered `offered`
 * erlangs, through Erlang B's recurrence B(k) = A B(k-1) / (k + A B(k-1)), B(0) = 1. */
static double erlang_c(int servers, double offered)
{
  if (offered >= servers)
    return 1;
  double b = 1;
  for (int k = 1; k <= servers; k++)
    b = offered * b / (k + offered * b);
  return servers * b / (servers - offered * (1 - b));
}

/* The loss of one source leaf, legs[lo, hi) (sorted by destination leaf), up its `ports` up-ports
 * of total capacity `capacity`; `coefficient` is ib/ar-imbalance. */
static double leaf_loss(double coefficient, const struct ar_leg *leg, size_t lo, size_t hi, int ports, double capacity)
{
  double total = 0, sum_sq = 0, shared = 0;
  for (size_t k = lo; k < hi; k++)
    total += leg[k].demand;
  for (size_t d = lo, e; d < hi; d = e) {
    double to_leaf = 0;
    for (e = d; e < hi && leg[e].dst_leaf == leg[d].dst_leaf; e++)
      to_leaf += leg[e].demand;
    sum_sq += (to_leaf / total) * (to_leaf / total);
    shared += leg[d].shared ? to_leaf / total : 0;
  }
  double diversity = fmin(1, (1 - sum_sq) / (1 - 1.0 / ports));
  return coefficient * erlang_c(ports, ports * total / capacity) * diversity * diversity * shared;
}

/* Sets the capacity of the NICs that send the component's inter-leaf flows to (1 - loss) x their
 * line rate, loss that of their leaf, and gives the other NICs of the component their line rate back.
 * A NIC's capacity is shared by all its flows, so an all-to-all loses as a permutation does. */
static void ar_imbalance_derate(struct fabric *fab, struct ib_state *st, struct fab_flow **flows, size_t n)
{
  /* Without the term no capacity is ever lowered, so there is none to restore either. */
  if (st->p.ar_imbalance <= 0 || st->p.routing != IB_ROUTING_AR)
    return;
  const struct topo *t = fab->topo;
  /* at most one leg per flow, twice: the second half is the sort's buffer */
  struct ar_leg *leg = st->legs = ib__scratch_reserve(st->legs, &st->cap_legs, 2 * n, sizeof *st->legs);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    const struct topo_port *first = &t->ports[f->path[0]];
    if (f->hops < 3 || first->is_nvlink)
      continue;
    leg[m] = (struct ar_leg){ .src_leaf = first->peer_node,
                              .dst_leaf = t->ports[f->path[f->hops - 1]].node,
                              .nic = f->path[0],
                              .flow = (int32_t)i,
                              .demand = first->rate_Bps / ib__flow_parts(f) };
    st->nic_demand[leg[m].nic] += leg[m].demand;
    m++;
  }
  /* A NIC offers at most its line rate, shared by its parts. */
  for (size_t k = 0; k < m; k++)
    leg[k].demand *= fmin(1, t->ports[leg[k].nic].rate_Bps / st->nic_demand[leg[k].nic]);
  /* dst_source[leaf]: -1 no source yet, the one source leaf, or -2 several */
  for (size_t k = 0; k < m; k++) {
    int32_t *seen = &st->dst_source[leg[k].dst_leaf];
    *seen = *seen == -1 ? leg[k].src_leaf : *seen == leg[k].src_leaf ? *seen : -2;
  }
  for (size_t k = 0; k < m; k++)
    leg[k].shared = st->dst_source[leg[k].dst_leaf] == -2;
  for (size_t k = 0; k < m; k++)
    st->dst_source[leg[k].dst_leaf] = -1;
  if (m > 0)
    sort_legs(leg, leg + m, m);
  for (size_t lo = 0, hi; lo < m; lo = hi) {
    for (hi = lo; hi < m && leg[hi].src_leaf == leg[lo].src_leaf; hi++)
      ;
    int up[ROUTE_MAX_CANDIDATES];
    int ports = fab_route_candidates(t, leg[lo].src_leaf, flows[leg[lo].flow]->dst_gpu, up, ROUTE_MAX_CANDIDATES);
    double capacity = 0;
    for (int k = 0; k < ports; k++)
      capacity += t->ports[up[k]].rate_Bps;
    /* with one up-port there is no choice to get wrong */
    double loss = ports < 2 ? 0 : fmax(0, leaf_loss(st->p.ar_imbalance, leg, lo, hi, ports, capacity));
    for (size_t k = lo; k < hi; k++)
      st->stats.ar_derates +=
          fabric_port_set_capacity(fab, leg[k].nic, (1 - loss) * fabric_port_payload_rate(fab, leg[k].nic));
  }
  /* A NIC without inter-leaf flows any more gets its line rate back when it is next in a recomputed
   * component. */
  for (size_t i = 0; i < n; i++) {
    int p = flows[i]->path[0];
    if (st->nic_demand[p] == 0)
      fabric_port_set_capacity(fab, p, fabric_port_payload_rate(fab, p));
  }
  for (size_t k = 0; k < m; k++)
    st->nic_demand[leg[k].nic] = 0;
}

/* The hop of the flow's bottleneck port (saturated, the flow at its largest share, rates per unit
 * of max-min weight), or -1 when its own cap limits it. */
static int bottleneck_hop(const struct fabric *fab, const struct ib_state *st, const struct fab_flow *f, double own_cap)
{
  const double eps = 1e-6;
  if (own_cap > 0 && f->rate_Bps >= own_cap * (1 - eps))
    return -1;
  double level = f->rate_Bps / f->share_weight;
  for (int h = 0; h < f->hops; h++) {
    int p = f->path[h];
    if (st->port_sum[p] >= fabric_port_capacity(fab, p) * (1 - eps) && level >= st->port_max[p] * (1 - eps))
      return h;
  }
  return -1;
}

/* The congestion-tree caps are a fixed point of (max-min, then caps from the rates it gives),
 * iterated from the caps in force. From the caps of an earlier flow set it can settle on
 * another fixed point than from none: a victim capped behind traffic that has since left keeps
 * a rate under the new grant, so the grant binds again. On a Llama-3 8B iteration (64 GPUs,
 * 2:1 leaves) a transfer's parts stayed at 1 GB/s for 12 ms, where they ran at 5 GB/s when the
 * flow that capped them had drained a few ns earlier. So after a flow started or drained the
 * component's flows start again from their base caps, the credit window lowered by the
 * switches' input-port shares (ib_arbiter.c), both found from the flows present: the caps follow
 * from the flows, not from the order of the events that brought them. */
void ib__before_fill(struct fabric *fab)
{
  if (fab->fidelity != FAB_FIDELITY_FLOW || !fabric_recompute_followed_flow_change(fab))
    return;
  struct ib_state *st = ib__state(fab);
  size_t n;
  struct fab_flow **flows = fabric_recomputed_flows(fab, &n);
  st->cap_limit = ib__scratch_reserve(st->cap_limit, &st->cap_limits, n, sizeof *st->cap_limit);
  ib__input_share_caps(fab, st, flows, n, st->cap_limit);
  /* The derate depends on the component's flows and paths alone (their NICs' line rates, not the
   * rates max-min gave them), so the filling about to run takes it: set after it, from on_rates,
   * it cost a second recomputation of the component at the same date whenever a NIC's capacity
   * moved (half the flows recomputed in the SimAI MoE run of docs/performance.md, B7). A
   * recomputation that followed cap changes only keeps it. */
  ar_imbalance_derate(fab, st, flows, n);
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    double window = f->standing_cap_Bps > 0 ? f->standing_cap_Bps : INFINITY;
    double base = fmin(window, st->cap_limit[i]);
    f->base_cap_Bps = isinf(base) ? 0 : base;
    f->rate_cap_Bps = f->base_cap_Bps;
  }
}

/* The hop a flow is held back at: its bottleneck port, or for a flow at the cap a switch's input
 * shares set (ib_arbiter.c) the last output that scaled it down (the flow fills the input
 * buffers before it as a blocked flow does), or -1 when its own cap limits it. */
static int held_hop(const struct fabric *fab, const struct ib_state *st, const struct fab_flow *f)
{
  int by_shares = f->base_cap_Bps > 0 && f->rate_cap_Bps == f->base_cap_Bps &&
                  (f->standing_cap_Bps <= 0 || f->base_cap_Bps < f->standing_cap_Bps) &&
                  f->rate_Bps >= f->base_cap_Bps * (1 - 1e-6);
  return by_shares ? f->held_hop : bottleneck_hop(fab, st, f, f->rate_cap_Bps);
}

/* One unit's crossings of one buffer, from `from` on: the rate of its blocked flows, their
 * weight and the unit's. */
static struct unit_load unit_load(struct fab_flow *const *flows, const struct crossing *c, size_t from, size_t m)
{
  struct unit_load l = { .begin = from, .end = from };
  while (l.end < m && c[l.end].buffer == c[from].buffer && c[l.end].unit == c[from].unit) {
    const struct fab_flow *f = flows[c[l.end].flow];
    if (c[l.end].blocked) {
      l.blocked += f->rate_Bps;
      l.blocked_weight += f->share_weight;
    }
    l.weight += f->share_weight;
    l.end++;
  }
  return l;
}

/* Whether a cap of `share` binds a flow: it would lower its rate, or the flow runs at a cap this
 * rule set at an earlier pass and that it sets again (a cap not set again is lifted). */
static int cap_binds(const struct fab_flow *f, double share)
{
  return share < f->rate_Bps * (1 - 1e-6) ||
         (f->rate_cap_Bps > 0 && share < f->rate_Bps * (1 + 1e-6) && share >= f->rate_cap_Bps * (1 - 1e-6));
}

/* The caps of one pace per upstream queue (ib__unit_pace) on a unit's flows. */
static void unit_pace_caps(struct fab_flow *const *flows, const int32_t *held, const struct crossing *c,
                           const struct unit_load *load, int nvl, double *cap_limit)
{
  double pace = ib__unit_pace(flows, held, c, load->begin, load->end, nvl);
  if (isinf(pace))
    return;
  for (size_t k = load->begin; k < load->end; k++) {
    if (!ib__last_level(flows, held, c, k, nvl))
      continue;
    const struct fab_flow *f = flows[c[k].flow];
    double share = pace * f->share_weight;
    if (cap_binds(f, share) && share < cap_limit[c[k].flow])
      cap_limit[c[k].flow] = share;
  }
}

/* After max-min: caps of congestion-tree victims. Once a blocked flow has filled an input buffer,
 * each credit it frees goes to the upstream port's arbiter, which serves its units in turn (flows
 * at an HCA, input ports at a switch): every unit is admitted at the rate g of the slowest unit
 * holding blocked flows. A unit's packets come in the order its own queue holds them, so a unit
 * whose blocked flows of weight w_b move at b, among flows of weight w in all, is admitted at
 * b x w / w_b, and g is the least of these. A victim in a unit with blocked flows moves as they
 * do per unit of weight (b x its weight / w_b); one in a unit without is capped at g divided by
 * the flows of its unit in that buffer. Iterated to a fixed point. Capping the first kind at g
 * shared among its unit's flows, as the second, held a transfer queued in a switch behind its
 * own NIC's blocked transfer at a fraction of that transfer's rate, where the HCA's turns keep
 * them level (tiny-16, test "a victim keeps pace with its unit's blocked flow": 4 -> 12 beside
 * 4 -> 8 in a congested 6-to-1, 364 us at flow fidelity, 312 us at packet fidelity; 323 us now). */
void ib__on_rates(struct fabric *fab)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  size_t n;
  /* Only the component just recomputed: buffers are ports, and a component holds every flow that
   * shares a port with one of its flows. */
  struct fab_flow **flows = fabric_recomputed_flows(fab, &n);
  if (n == 0 || fab->fidelity != FAB_FIDELITY_FLOW)
    return;
  if (fab->now != st->rates_time) {
    st->rates_time = fab->now;
    st->rates_rounds = 0;
  }
  if (++st->rates_rounds > 8)
    return;
  int nvl = st->p.num_vls;
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h < flows[i]->hops; h++) {
      st->port_sum[flows[i]->path[h]] = 0;
      st->port_max[flows[i]->path[h]] = 0;
    }
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h < flows[i]->hops; h++) {
      int p = flows[i]->path[h];
      double level = flows[i]->rate_Bps / flows[i]->share_weight;
      st->port_sum[p] += flows[i]->rate_Bps;
      if (level > st->port_max[p])
        st->port_max[p] = level;
      count += t->nodes[t->ports[p].peer_node].kind == TOPO_SWITCH;
    }
  /* twice: the second half is the sort's buffer */
  st->crossings = ib__scratch_reserve(st->crossings, &st->cap_crossings, 2 * count, sizeof *st->crossings);
  st->cap_limit = ib__scratch_reserve(st->cap_limit, &st->cap_limits, n, sizeof *st->cap_limit);
  /* A victim needs a flow blocked downstream of a buffer it shares: when no flow's bottleneck lies
   * past its first hop, no buffer fills and only the credit windows cap (the common case of
   * uncongested collectives: skip building and sorting the crossings). */
  st->held = ib__scratch_reserve(st->held, &st->cap_held, n, sizeof *st->held);
  int any_blocked = 0;
  for (size_t i = 0; i < n; i++) {
    st->held[i] = held_hop(fab, st, flows[i]);
    any_blocked |= st->held[i] > 0;
  }
  int growth = st->p.tree_growth;
  if (!any_blocked && growth)
    ib_tree_clear(fab, &st->tree, flows, n);
  struct crossing *c = st->crossings;
  size_t m = 0;
  for (size_t i = 0; i < n && any_blocked; i++) {
    const struct fab_flow *f = flows[i];
    int b = st->held[i];
    for (int h = 0; h < f->hops; h++) {
      int p = f->path[h];
      if (t->nodes[t->ports[p].peer_node].kind != TOPO_SWITCH)
        continue;
      c[m].buffer = ib__buffer(p, nvl, f->queue);
      c[m].unit = h == 0 ? CROSSING_NIC_UNIT | f->id : (uint64_t)f->path[h - 1];
      c[m].flow = (int32_t)i;
      c[m].blocked = h < b;
      m++;
    }
  }
  ib__sort_crossings(c, c + count, m);
  if (growth && m > 0)
    ib_tree_grow(fab, &st->tree, flows, n, st->held, c, m, st->p.unit_pace);
  for (size_t i = 0; i < n; i++) {
    double cap = flows[i]->base_cap_Bps;
    st->cap_limit[i] = cap > 0 ? cap : INFINITY;
  }
  /* one buffer's units at a time, their loads kept from the grant's scan for the victims' */
  st->unit_loads = ib__scratch_reserve(st->unit_loads, &st->cap_unit_loads, m, sizeof *st->unit_loads);
  for (size_t lo = 0; lo < m;) {
    size_t hi = lo, units = 0;
    double grant = INFINITY;
    while (hi < m && c[hi].buffer == c[lo].buffer) {
      struct unit_load load = unit_load(flows, c, hi, m);
      if (load.blocked > 0)
        grant = fmin(grant, load.blocked * load.weight / load.blocked_weight);
      st->unit_loads[units++] = load;
      hi = load.end;
    }
    /* a tree that has not filled this buffer yet holds no victim here (ib_tree.h) */
    if (growth && !ib_tree_reached(&st->tree, c[lo].buffer, fab->now))
      grant = INFINITY;
    for (size_t j = 0; j < units && !isinf(grant); j++) {
      const struct unit_load *load = &st->unit_loads[j];
      if (st->p.unit_pace)
        unit_pace_caps(flows, st->held, c, load, nvl, st->cap_limit);
      for (size_t k = load->begin; k < load->end; k++) {
        if (c[k].blocked)
          continue;
        const struct fab_flow *f = flows[c[k].flow];
        double share = load->blocked > 0 ? load->blocked * f->share_weight / load->blocked_weight
                                         : grant / (double)(load->end - load->begin);
        if (cap_binds(f, share) && share < st->cap_limit[c[k].flow])
          st->cap_limit[c[k].flow] = share;
      }
    }
    lo = hi;
  }
  /* The component's flow list is the engine's scratch: the caps are collected first, then set
   * (each set schedules a recomputation of that flow's component only). */
  size_t changed = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    double new_cap = isinf(st->cap_limit[i]) ? 0 : st->cap_limit[i];
    if (fabs(new_cap - f->rate_cap_Bps) > 1e-9 * (new_cap + f->rate_cap_Bps)) {
      if (new_cap > 0 && new_cap != f->base_cap_Bps)
        st->stats.ct_caps++;
      st->cap_limit[changed] = new_cap;
      flows[changed++] = f;
    }
  }
  for (size_t i = 0; i < changed; i++)
    fabric_flow_set_cap(fab, flows[i], st->cap_limit[i]);
}
