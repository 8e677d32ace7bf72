/* RoCEv2 at flow fidelity: FIFO shares (roce_fifo.h).
 *
 * Without congestion control every sender transmits at its NIC's share of the line rate, and a
 * switch egress is a FIFO: when the bytes arriving at a port exceed its capacity C, each flow
 * leaves it at C x (its arrival rate / total arrival rate), not at the max-min share (Jain's FIFO
 * fluid model; a flow slowed upstream keeps less of a later bottleneck). The arrival rates
 * depend on the upstream ports' shares: a Jacobi iteration over the hops from the NIC (round
 * robin among its flows, an equal split) to the last hop reaches their fixed point. Each flow's
 * arrival rates and share are kept in its roce_flow.
 *
 * The shares of a flow depend only on the flows of its component (flows linked by shared
 * ports), so the pass takes one or more whole components; flows must be in active-set order,
 * the order the sums over a port's flows are taken in, so that a component gets the same bits
 * as in a pass over every active flow. */
#include "roce_fifo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roce_internal.h"
#include "check.h"
#include "radix.h"

int roce_fifo_init(struct roce_fifo *s, int n_ports)
{
  s->nic_flows = calloc((size_t)n_ports + 1, sizeof(double));
  s->arrival_Bps = calloc((size_t)n_ports + 1, sizeof(double));
  return s->nic_flows && s->arrival_Bps ? 0 : -1;
}

void roce_fifo_fini(struct roce_fifo *s)
{
  free(s->nic_flows);
  free(s->arrival_Bps);
  free(s->comp);
  free(s->pass_hops);
  free(s->pass_mask);
  free(s->pass_rate);
  free(s->pass_port);
  free(s->pass_in);
}

const struct roce_fifo_flow *roce_fifo_of(const struct fab_flow *f)
{
  return &((const struct roce_flow *)f->model_data)->fifo;
}

/* Room for a pass over n flows of (at most) hops crossings in all. */
static void reserve_pass(struct roce_fifo *s, size_t n, size_t hops)
{
  if (n > s->pass_flows_cap) {
    s->pass_flows_cap = 2 * n;
    s->pass_hops = sgf_xrealloc(s->pass_hops, s->pass_flows_cap * sizeof *s->pass_hops);
    s->pass_mask = sgf_xrealloc(s->pass_mask, s->pass_flows_cap * sizeof *s->pass_mask);
    s->pass_rate = sgf_xrealloc(s->pass_rate, s->pass_flows_cap * sizeof *s->pass_rate);
  }
  if (hops > s->pass_cross_cap) {
    s->pass_cross_cap = 2 * hops;
    s->pass_port = sgf_xrealloc(s->pass_port, s->pass_cross_cap * sizeof *s->pass_port);
    s->pass_in = sgf_xrealloc(s->pass_in, s->pass_cross_cap * sizeof *s->pass_in);
  }
}

/* The Jacobi sweeps run on a copy of the pass's crossings (hops >= 1: port, arrival rate), flow
 * after flow in one array, and the results go back to each flow's roce_flow at the end: the
 * sweeps then read two arrays in order rather than each flow's structures (a cache miss per flow
 * and loop, most of the pass on a large component). The operations, and their order, are those
 * of sweeping the flows themselves, so the shares are the same bits. */
static void fifo_shares(struct fabric *fab, struct roce_fifo *s, struct fab_flow **flows, size_t n)
{
  const struct topo *t = fab->topo;
  size_t crossings = 0;
  for (size_t i = 0; i < n; i++) {
    s->nic_flows[flows[i]->path[0]] += 1;
    crossings += (size_t)flows[i]->hops - 1;
  }
  reserve_pass(s, n, crossings);
  for (size_t i = 0, c = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    struct roce_fifo_flow *ff = &((struct roce_flow *)f->model_data)->fifo;
    double r = t->ports[f->path[0]].rate_Bps / s->nic_flows[f->path[0]];
    if (ff->inject > 0 && ff->inject < 1)
      r *= ff->inject;
    ff->in_Bps[1] = r; /* also for a one-hop flow, whose share is then its NIC share */
    s->pass_hops[i] = f->hops;
    for (int h = 1; h < f->hops; h++, c++) {
      s->pass_port[c] = f->path[h];
      s->pass_in[c] = r;
    }
  }
  for (size_t i = 0; i < n; i++)
    s->nic_flows[flows[i]->path[0]] = 0;
  for (int iter = 0; iter < 64; iter++) {
    for (size_t c = 0; c < crossings; c++)
      s->arrival_Bps[s->pass_port[c]] += s->pass_in[c];
    double moved = 0;
    for (size_t i = 0, c = 0; i < n; i++) {
      int hops = s->pass_hops[i];
      if (hops < 2) {
        s->pass_mask[i] = 0;
        continue;
      }
      double r = s->pass_in[c]; /* hop 1: the NIC's share, fixed */
      int mask = 0;
      for (int h = 1; h < hops; h++, c++) {
        int p = s->pass_port[c];
        if (h > 1) {
          double d = fabs(s->pass_in[c] - r) / r;
          if (d > moved) /* fmax without its call through the PLT (the same for a NaN d) */
            moved = d;
          s->pass_in[c] = r;
        }
        double cap = t->ports[p].rate_Bps;
        if (s->arrival_Bps[p] > cap) {
          r *= cap / s->arrival_Bps[p];
          mask |= 1 << h;
        }
      }
      s->pass_mask[i] = (uint8_t)mask;
      s->pass_rate[i] = r;
    }
    for (size_t c = 0; c < crossings; c++)
      s->arrival_Bps[s->pass_port[c]] = 0;
    if (moved < 1e-6)
      break;
  }
  for (size_t i = 0, c = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    struct roce_fifo_flow *ff = &((struct roce_flow *)f->model_data)->fifo;
    for (int h = 1; h < f->hops; h++, c++)
      ff->in_Bps[h] = s->pass_in[c];
    ff->marked_mask = s->pass_mask[i];
    /* A flow no saturated egress marks keeps its NIC share, the round robin of its NIC's QPs;
     * under DCQCN it is not marked, so it sends at that share of the line rate, not of the
     * floor. (Leaving such flows uncapped, max-min under DCQCN, put the 16-GPU all-to-all
     * at -6.5% against packet fidelity instead of -1.3%, and spread their completions: 2.3x
     * the CPU time on the 64-GPU all-to-all.) */
    ff->share_Bps = ff->marked_mask == 0 ? roce_fifo_nic_share(ff) : s->pass_rate[i];
    /* The shares above are of line rates, framing included (what queues and PFC see); the cap
     * the flow engine applies is of payload, as its port capacities are: the same share of the
     * payload a port carries per byte on the wire, MTU / (MTU + framing). */
    ff->share_Bps *= fabric_port_payload_rate(fab, f->path[0]) / t->ports[f->path[0]].rate_Bps;
  }
}

/* Sorts flows by their index in the active set (distinct, so the order is unique): an LSD radix
 * sort on the index's bytes, skipping the bytes all share, where qsort's calls through a pointer
 * took an eighth of the CPU of RoCE flow runs with large all-to-all components. tmp holds n. */
static void sort_by_active_index(struct fab_flow **a, struct fab_flow **tmp, size_t n)
{
  if (n <= 32) { /* a small component: insertion sort, cheaper than clearing the counters */
    for (size_t i = 1; i < n; i++) {
      struct fab_flow *f = a[i];
      size_t j = i;
      for (; j > 0 && a[j - 1]->active_index > f->active_index; j--)
        a[j] = a[j - 1];
      a[j] = f;
    }
    return;
  }
  size_t count[4][256] = { { 0 } };
  for (size_t i = 0; i < n; i++)
    for (int b = 0; b < 4; b++)
      count[b][((uint32_t)a[i]->active_index >> (8 * b)) & 0xff]++;
  struct fab_flow **from = a, **to = tmp;
  for (int b = 0; b < 4; b++) {
    if (n == 0 || count[b][((uint32_t)a[0]->active_index >> (8 * b)) & 0xff] == n)
      continue; /* every index has this byte */
    radix_counts_to_offsets(count[b]);
    for (size_t i = 0; i < n; i++)
      to[count[b][((uint32_t)from[i]->active_index >> (8 * b)) & 0xff]++] = from[i];
    struct fab_flow **swap = from;
    from = to;
    to = swap;
  }
  if (from != a)
    memcpy(a, from, n * sizeof *a);
}

void roce_fifo_update(struct fabric *fab, struct roce_fifo *s)
{
  size_t n_active, n_recomputed;
  struct fab_flow **active = fabric_active_flows(fab, &n_active);
  /* Flows started or drained: their components get new shares. (A recomputation that followed
   * cap changes only leaves every flow set, hence every share, as it was.) */
  if (!fabric_recompute_followed_flow_change(fab))
    return;
  struct fab_flow **recomputed = fabric_recomputed_flows(fab, &n_recomputed);
  if (n_recomputed == 0)
    return; /* only flows that drained: no component left to redo */
  if (n_recomputed == n_active) {
    fifo_shares(fab, s, active, n_active); /* one component: already in order */
    return;
  }
  if (2 * n_recomputed > s->comp_cap) { /* the second half is the sort's buffer */
    s->comp_cap = 4 * n_recomputed;
    s->comp = sgf_xrealloc(s->comp, s->comp_cap * sizeof *s->comp);
  }
  for (size_t i = 0; i < n_recomputed; i++)
    s->comp[i] = recomputed[i];
  sort_by_active_index(s->comp, s->comp + n_recomputed, n_recomputed);
  fifo_shares(fab, s, s->comp, n_recomputed);
}
