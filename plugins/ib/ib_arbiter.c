/* InfiniBand at flow fidelity: the shares a switch output's arbiter gives its input ports.
 *
 * An IB switch output port serves the input ports holding packets for it in turn, one packet
 * each (the packet model's arbiter, ib_switch.c: IBTA Vol 1 7.6.9 specifies the arbitration
 * between VLs, and among the inputs of one VL the packet model goes round robin). At a saturated
 * output an input port therefore gets min(its arrivals, S), with S the round-robin level at which
 * the inputs' takings fill the port (water filling over the inputs), and its flows share what it
 * gets in proportion to their arrivals (one queue per output in the input buffer, served in
 * order). Max-min shares the port among flows instead: where one input brings two transfers and
 * another eight, the two get four times as much each at packet fidelity, the same at flow
 * fidelity.
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

#include "ib_internal.h"
#include "check.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The round-robin level of an output of capacity c among k inputs of demands d[] (sorted here):
 * each input gets min(demand, level), and the takings sum to c. */
static double round_robin_level(double *d, size_t k, double c)
{
  qsort(d, k, sizeof *d, cmp_double);
  double left = c;
  for (size_t j = 0; j < k; j++) {
    if (d[j] * (double)(k - j) > left)
      return left / (double)(k - j);
    left -= d[j];
  }
  return INFINITY;
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
  enum { SLOTS = ROUTE_MAX_HOPS + 1 };
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
    st->port_max[c[k].buffer] += arrival[(size_t)c[k].flow * SLOTS + (size_t)c[k].blocked];
  for (size_t k = 0; k < m; k++) {
    double *sum = &st->port_max[c[k].buffer];
    if (*sum > fabric_port_capacity(fab, (int)c[k].buffer) * (1 + 1e-12))
      oversubscribed = 1;
    *sum = 0;
  }
  if (!oversubscribed)
    return;
  ib__sort_crossings(c, c + count, m);
#define ARRIVAL(k) arrival[(size_t)c[k].flow * SLOTS + (size_t)c[k].blocked]
  for (int iter = 0; iter < 64; iter++) {
    double moved = 0;
    for (size_t i = 0; i < n; i++) /* the hops the last (converged) sweep scales at */
      flows[i]->held_hop = 0;
    for (size_t lo = 0, hi; lo < m; lo = hi) {
      double total = 0;
      size_t units = 0;
      for (hi = lo; hi < m && c[hi].buffer == c[lo].buffer; hi++) {
        total += ARRIVAL(hi);
        units += hi == lo || c[hi].unit != c[hi - 1].unit;
      }
      double capacity = fabric_port_capacity(fab, (int)c[lo].buffer), level = INFINITY;
      if (total > capacity * (1 + 1e-12) && units > 1) {
        st->unit_demand = ib__scratch_reserve(st->unit_demand, &st->cap_units, units, sizeof *st->unit_demand);
        size_t u = 0;
        for (size_t k = lo; k < hi; k++) {
          if (k > lo && c[k].unit != c[k - 1].unit)
            u++;
          st->unit_demand[u] = (k == lo || c[k].unit != c[k - 1].unit ? 0 : st->unit_demand[u]) + ARRIVAL(k);
        }
        level = round_robin_level(st->unit_demand, units, capacity);
      }
      /* What leaves: each input's flows scaled by min(1, level / the input's arrivals). A port
       * one input fills, or that its inputs fill evenly, is left to max-min as it is. */
      for (size_t k = lo, e; k < hi; k = e) {
        double demand = 0;
        for (e = k; e < hi && c[e].unit == c[k].unit; e++)
          demand += ARRIVAL(e);
        double scale = demand > level ? level / demand : 1;
        for (size_t q = k; q < e; q++) {
          size_t i = (size_t)c[q].flow;
          double out = ARRIVAL(q) * scale;
          if (scale < 1 && c[q].blocked > flows[i]->held_hop)
            flows[i]->held_hop = (uint8_t)c[q].blocked;
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
    }
    if (moved < 1e-9)
      break;
  }
#undef ARRIVAL
  /* a cap for the flows an output scaled down: what leaves their last hop */
  for (size_t i = 0; i < n; i++) {
    double left = arrival[i * SLOTS + (size_t)flows[i]->hops], nic_share = arrival[i * SLOTS];
    if (left < nic_share * (1 - 1e-9))
      cap[i] = left;
  }
}
