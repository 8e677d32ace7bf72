/* InfiniBand at flow fidelity: the shares a switch output's arbiter gives its input ports.
 *
 * An IB switch output port serves the input ports holding packets for it in turn, one packet
 * each (the packet model's arbiter, ib_switch.c: IBTA Vol 1 7.6.9 specifies the arbitration
 * between VLs, and among the inputs of one VL the packet model goes round robin). At a saturated
 * output an input port therefore gets min(its arrivals, S), with S the round-robin level at which
 * the inputs' takings fill the port (water filling over the inputs). An input held below its
 * arrivals fills its buffer, and the credits then stop the port upstream, whose own arbiter serves
 * its units in turn: so what the input gets is shared the same way among the input ports of the
 * switch before it, and so on up to the HCAs, which serve their transfers in turn
 * (split_upstream). Max-min shares the port among flows instead: where one input brings two
 * transfers and another eight, the two get four times as much each at packet fidelity, the same
 * at flow fidelity.
 *
 * The shares are found as RoCE's FIFO shares are (roce_fifo.c): each flow arrives at its first
 * switch with its NIC's share (the NIC serves its queue pairs in turn; parts of a spread transfer
 * by their weight), each saturated output scales its inputs' flows down, and the arrivals at the
 * next hop are what leaves; a Gauss-Seidel iteration over the outputs reaches the fixed point.
 * A flow's cap is what leaves its last hop when an output scaled it down somewhere; max-min then
 * hands what the caps leave to the flows that can take it (a flow held back downstream does not
 * hold its share upstream: the credits stop it). The pass ignores those downstream limits when it
 * weighs an input's arrivals, so an input whose transfers are held back further on can count for
 * more at an earlier output than it takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ib_internal.h"
#include "check.h"

static int cmp_group_ratio(const void *a, const void *b)
{
  const struct upstream_group *x = a, *y = b;
  double rx = x->demand / x->weight, ry = y->demand / y->weight;
  if (rx != ry)
    return rx < ry ? -1 : 1;
  return x->lo < y->lo ? -1 : x->lo > y->lo; /* a total order: the same split every run */
}

/* Sorts n elements of `size` bytes (at most 32) by cmp, a total order, so that any sort gives the
 * same result: an insertion sort for the few units an arbiter serves (a switch's ports); glibc's
 * qsort (a merge sort copying each element through a buffer) made the Mixtral iteration's IB flow
 * run take 2.35 s of CPU instead of 2.10 s (medians of 5). qsort beyond that. */
static void sort_small(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
  if (n > 32) {
    qsort(base, n, size, cmp);
    return;
  }
  unsigned char *a = base, x[32];
  for (size_t i = 1; i < n; i++) {
    memcpy(x, a + i * size, size);
    size_t j = i;
    for (; j > 0 && cmp(a + (j - 1) * size, x) > 0; j--)
      memcpy(a + j * size, a + (j - 1) * size, size);
    memcpy(a + j * size, x, size);
  }
}
_Static_assert(sizeof(struct upstream_group) <= 32 && sizeof(struct upstream_key) <= 32, "sort_small's element");

/* The level of a weighted round robin over k units of capacity c: unit j takes
 * min(demand_j, level x weight_j), and the takings sum to c (INFINITY when every demand fits).
 * Sorts g by demand / weight. */
static double weighted_level(struct upstream_group *g, size_t k, double c)
{
  sort_small(g, k, sizeof *g, cmp_group_ratio);
  double left = c, weight = 0;
  for (size_t j = 0; j < k; j++)
    weight += g[j].weight;
  for (size_t j = 0; j < k; j++) {
    if (g[j].demand > left * g[j].weight / weight)
      return left / weight;
    left -= g[j].demand;
    weight -= g[j].weight;
  }
  return INFINITY;
}

static int cmp_key(const void *a, const void *b)
{
  const struct upstream_key *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

#define FLOW_KEY (UINT64_C(1) << 63)

/* How much more of a flow must arrive at an output than leaves its last hop for the input buffers
 * before that output to fill with it. The pass's arrivals are a fluid round robin's; where they
 * exceed what leaves by a few percent the packet model's credit loop holds the flow back further
 * upstream instead. On Mixtral's all-to-all (64 GPUs, 2:1 leaves) two GPUs of leaf 5 sent into
 * leaf 4 2.4 % above their share of their receivers' links: taken as filling leaf 4's input
 * buffers, they held the 34 transfers from leaf 3 into leaf 4 at 0.49 GB/s per part (9.7 GB/s per
 * GPU) for 0.8 ms, where packet fidelity's HCAs sent about 22 GB/s (tests/integration/
 * ib_fill_margin.sh). A fitted tolerance: 1 % keeps the error, 2.5 %, 5 % and 10 % remove it
 * alike. */
#define IB_FILL_MARGIN 0.05

/* arrival[] entries per flow: one per hop, and what leaves its last hop */
enum { SLOTS = ROUTE_MAX_HOPS + 1 };

/* What arrives of a crossing's flow at its output (blocked holds the output's hop here). */
static inline double crossing_arrival(const double *arrival, const struct crossing *c)
{
  return arrival[(size_t)c->flow * SLOTS + (size_t)c->blocked];
}

struct split {
  struct ib_state *st;
  struct fab_flow **flows;
  struct crossing *c, *tmp; /* the output's crossings; room to reorder them */
  const double *arrival;    /* per flow, SLOTS entries */
  size_t m;                 /* crossings in all: sorted by (buffer, unit), each output's run
                             * reordered by split_upstream only within one unit */
};

/* What arrives at output `port` by its switch's input port `unit`, whatever output of the next
 * switch it goes on to. */
static double unit_arrival(const struct split *x, uint64_t port, uint64_t unit)
{
  const struct crossing *c = x->c;
  size_t lo = 0, hi = x->m;
  while (lo < hi) { /* the first crossing of (port, unit) */
    size_t mid = lo + (hi - lo) / 2;
    if (c[mid].buffer < port || (c[mid].buffer == port && c[mid].unit < unit))
      lo = mid + 1;
    else
      hi = mid;
  }
  double sum = 0;
  for (size_t k = lo; k < x->m && c[k].buffer == port && c[k].unit == unit; k++)
    sum += crossing_arrival(x->arrival, &c[k]);
  return sum;
}

/* The unit a crossing belongs to at the arbiter `depth` hops upstream of its output: the port it
 * came in by there, or past its NIC the flow itself (FLOW_KEY | its index). */
static uint64_t upstream_key(const struct fab_flow *f, const struct crossing *c, int depth)
{
  int h = c->blocked - 1 - depth;
  return h >= 0 ? (uint64_t)f->path[h] : FLOW_KEY | (uint64_t)c->flow;
}

/* Splits `take`, less than what arrives, among the crossings c[lo, hi) of one output that share
 * their unit at the arbiter `depth` hops upstream. Once the output holds back more than it serves
 * of them, their input buffers fill and the credits stop the port that feeds it, whose arbiter
 * then serves its own units in turn (a switch its input ports, an HCA its transfers by weight):
 * so the take is shared round robin among the units one hop further upstream, each by its turns
 * for this output (below), and so on up to the NICs. Splitting in proportion to arrivals instead
 * gave a transfer that joins a congested output by a crowded upstream switch the share of one
 * that comes in alone (tiny-16: 4 -> 9 beside 0, 1, 2 -> 9: 364 us at flow fidelity, 168 us at
 * packet fidelity). The leave[] of each crossing is set; groups from `base` on are free. */
static void split_upstream(const struct split *x, size_t lo, size_t hi, int depth, double take, size_t base)
{
  struct ib_state *st = x->st;
  struct fab_flow **flows = x->flows;
  struct crossing *c = x->c;
  if (hi - lo == 1) {
    st->leave[lo] = take;
    return;
  }
  /* group by the unit one arbiter further upstream */
  struct upstream_key *key = st->keys;
  for (size_t k = lo; k < hi; k++)
    key[k - lo] = (struct upstream_key){ upstream_key(flows[c[k].flow], &c[k], depth + 1), k };
  sort_small(key, hi - lo, sizeof *key, cmp_key);
  for (size_t k = lo; k < hi; k++)
    x->tmp[k - lo] = c[key[k - lo].index];
  memcpy(c + lo, x->tmp, (hi - lo) * sizeof *c);
  struct upstream_group *g = st->groups + base;
  size_t groups = 0;
  for (size_t k = lo; k < hi; k++) {
    uint64_t unit = key[k - lo].key;
    double a = crossing_arrival(x->arrival, &c[k]);
    if (k == lo || unit != key[k - lo - 1].key)
      g[groups++] =
          (struct upstream_group){ .lo = k, .hi = k, .weight = unit & FLOW_KEY ? flows[c[k].flow]->share_weight : 1 };
    g[groups - 1].hi = k + 1;
    g[groups - 1].demand += a;
  }
  /* A switch's arbiter takes turns among its input ports over all their packets for the port it
   * feeds, whatever output of the next switch they go on to (the credits are the link's, and an
   * input port's packets for one output leave in the order they came): so an input port gets of
   * this output's take its turns times the part of its traffic bound here. Equal turns instead
   * gave a transfer that comes with three others for other outputs the share of one that comes
   * alone (tiny-16, leaves 0 and 1 into leaf 2: 202.6 us at flow fidelity, 162 us at packet
   * fidelity; tests/integration/ib_shared_turns.sh). An HCA's turns go to its transfers by
   * weight. A single group takes the whole take whatever its weight. */
  for (size_t j = 0; groups > 1 && j < groups; j++) {
    uint64_t unit = key[g[j].lo - lo].key;
    if (unit & FLOW_KEY)
      continue;
    int hop = c[g[j].lo].blocked - 1 - depth; /* the port this arbiter serves */
    double bound = 0;
    for (size_t k = g[j].lo; k < g[j].hi; k++)
      bound += x->arrival[(size_t)c[k].flow * SLOTS + (size_t)hop];
    double all = unit_arrival(x, (uint64_t)flows[c[g[j].lo].flow]->path[hop], unit);
    if (bound > 0 && all > bound) /* a group with nothing bound here takes nothing: weight 1 keeps its ratio 0 */
      g[j].weight = bound / all;
  }
  double level = weighted_level(g, groups, take);
  for (size_t j = 0; j < groups; j++) {
    double share = fmin(g[j].demand, level * g[j].weight);
    if (share >= g[j].demand)
      for (size_t k = g[j].lo; k < g[j].hi; k++)
        st->leave[k] = crossing_arrival(x->arrival, &c[k]);
    else
      split_upstream(x, g[j].lo, g[j].hi, depth + 1, share, base + groups);
  }
}

/* A port whose arbiter serves input ports: a fabric switch's output. */
static int switch_output(const struct topo *t, int port)
{
  return !t->ports[port].is_nvlink && t->nodes[t->ports[port].node].kind == TOPO_SWITCH;
}

void ib__input_share_caps(struct fabric *fab, struct ib_state *st, struct fab_flow **flows, size_t n, double *cap)
{
  const struct topo *t = fab->topo;
  for (size_t i = 0; i < n; i++)
    cap[i] = INFINITY;
  if (!st->p.input_shares || n == 0)
    return;
  /* NIC shares: the weights of each NIC's flows (port_sum is free scratch between passes) */
  for (size_t i = 0; i < n; i++)
    st->port_sum[flows[i]->path[0]] = 0;
  for (size_t i = 0; i < n; i++)
    st->port_sum[flows[i]->path[0]] += flows[i]->share_weight;
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += flows[i]->hops;
  st->crossings = ib__scratch_reserve(st->crossings, &st->cap_crossings, 2 * count, sizeof *st->crossings);
  /* arrival[i * SLOTS + h]: flow i's arrival rate at hop h; at h = hops, what leaves its last hop */
  st->arrival = ib__scratch_reserve(st->arrival, &st->cap_arrival, n * SLOTS, sizeof *st->arrival);
  struct crossing *c = st->crossings;
  double *arrival = st->arrival;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    int nic = f->path[0];
    double share = fabric_port_capacity(fab, nic) * f->share_weight / st->port_sum[nic];
    for (int h = 0; h <= f->hops; h++)
      arrival[i * SLOTS + (size_t)h] = share;
    for (int h = 1; h < f->hops; h++) {
      int p = f->path[h];
      if (!switch_output(t, p))
        continue;
      /* a switch output: its units are the input ports (blocked holds the hop here) */
      c[m++] = (struct crossing){
        .buffer = (uint64_t)p, .unit = (uint64_t)f->path[h - 1], .flow = (int32_t)i, .blocked = h
      };
    }
  }
  for (size_t i = 0; i < n; i++) {
    st->port_sum[flows[i]->path[0]] = 0;
    flows[i]->held_hop = 0;
  }
  /* Arrivals only fall along a path: when the NICs' shares fit every output, none scales (the
   * common case of a non-blocking tree; the sort and the sweeps are skipped). port_max is free
   * scratch here too: the sum per output, checked at its first crossing and cleared there. */
  int oversubscribed = 0;
  for (size_t k = 0; k < m; k++)
    st->port_max[c[k].buffer] = 0;
  for (size_t k = 0; k < m; k++)
    st->port_max[c[k].buffer] += crossing_arrival(arrival, &c[k]);
  for (size_t k = 0; k < m; k++) {
    double *sum = &st->port_max[c[k].buffer];
    if (*sum > fabric_port_capacity(fab, (int)c[k].buffer) * (1 + 1e-12))
      oversubscribed = 1;
    *sum = 0;
  }
  if (!oversubscribed)
    return;
  ib__sort_crossings(c, c + count, m);
  /* scratch for the widest output: its crossings keyed, and groups on at most ROUTE_MAX_HOPS
   * levels (its input ports, then split_upstream's), each level no more than its crossings */
  size_t widest = 0;
  for (size_t lo = 0, hi; lo < m; lo = hi) {
    for (hi = lo; hi < m && c[hi].buffer == c[lo].buffer; hi++)
      ;
    if (hi - lo > widest)
      widest = hi - lo;
  }
  st->leave = ib__scratch_reserve(st->leave, &st->cap_leave, m, sizeof *st->leave);
  st->keys = ib__scratch_reserve(st->keys, &st->cap_keys, widest, sizeof *st->keys);
  st->groups = ib__scratch_reserve(st->groups, &st->cap_groups, ROUTE_MAX_HOPS * widest, sizeof *st->groups);
  const struct split split = { .st = st, .flows = flows, .c = c, .tmp = c + count, .arrival = arrival, .m = m };
  for (int iter = 0; iter < 64; iter++) {
    double moved = 0;
    for (size_t lo = 0, hi; lo < m; lo = hi) {
      /* the output's input ports: its crossings are sorted by the port they came in by */
      struct upstream_group *in = st->groups;
      size_t units = 0;
      double total = 0;
      for (hi = lo; hi < m && c[hi].buffer == c[lo].buffer; hi++) {
        if (hi == lo || c[hi].unit != c[hi - 1].unit)
          in[units++] = (struct upstream_group){ .lo = hi, .hi = hi, .weight = 1 };
        in[units - 1].hi = hi + 1;
        in[units - 1].demand += crossing_arrival(arrival, &c[hi]);
        total += crossing_arrival(arrival, &c[hi]);
      }
      /* What leaves: each input's arrivals, or when they exceed the round-robin level, the level
       * split among the units of the arbiters upstream (split_upstream). A port one input fills
       * is left to max-min as it is. */
      double capacity = fabric_port_capacity(fab, (int)c[lo].buffer);
      double level = total > capacity * (1 + 1e-12) && units > 1 ? weighted_level(in, units, capacity) : INFINITY;
      for (size_t u = 0; u < units; u++) {
        if (in[u].demand > level)
          split_upstream(&split, in[u].lo, in[u].hi, 0, level, units);
        else
          for (size_t k = in[u].lo; k < in[u].hi; k++)
            st->leave[k] = crossing_arrival(arrival, &c[k]);
      }
      for (size_t q = lo; q < hi; q++) {
        size_t i = (size_t)c[q].flow;
        double out = st->leave[q];
        /* so it arrives at the next output it crosses (or leaves its last hop) */
        for (int g = c[q].blocked + 1; g <= flows[i]->hops; g++) {
          double *next = &arrival[i * SLOTS + (size_t)g];
          if (out > 0 && fabs(*next - out) > moved * out)
            moved = fabs(*next - out) / out;
          *next = out;
          if (g < flows[i]->hops && switch_output(t, flows[i]->path[g]))
            break;
        }
      }
    }
    if (moved < 1e-9)
      break;
  }
  /* A cap for the flows an output scaled down: what leaves their last hop. Such a flow fills the
   * input buffers where more of it arrives than leaves, up to the last output that takes it
   * down by more than IB_FILL_MARGIN (its held_hop): the buffers after that one see it arrive as
   * fast as it leaves, within the pass's accuracy, and hold back no one (ib__on_rates). */
  for (size_t i = 0; i < n; i++) {
    double left = arrival[i * SLOTS + (size_t)flows[i]->hops], nic_share = arrival[i * SLOTS];
    if (!(left < nic_share * (1 - 1e-9)))
      continue;
    cap[i] = left;
    for (int g = flows[i]->hops - 1; g > 0 && flows[i]->held_hop == 0; g--)
      if (arrival[i * SLOTS + (size_t)g] > left * (1 + IB_FILL_MARGIN))
        flows[i]->held_hop = (uint8_t)g;
  }
}
