/* RoCEv2 at flow fidelity: what the fluid flows keep of the packet model.
 *
 *  - ECMP: the same QP keys, hence the same paths, as packet fidelity (roce_model.c flow_start);
 *  - DCQCN: its steady state, the max-min fair share of the flow engine (the CoNEXT'16 fixed
 *    point keeps the bottleneck busy: sum RC = C), and while a bottleneck is in transient the
 *    CoNEXT'16 fluid model (roce_fluid.c), which caps its flows;
 *  - FIFO shares (DCQCN off): senders transmit at line rate and a saturated switch egress serves
 *    its flows in proportion to their arrival rates (fifo_shares below), which caps the flows;
 *    with DCQCN on the rates converge to the fair shares and max-min stays;
 *  - PFC pause spreading (DCQCN off, PFC on): a switch egress whose arrival rate exceeds its
 *    capacity fills the ingress PGs feeding it past XOFF, so each of those ingress links is paused
 *    for part of the time (only when the bytes the egress cannot drain, sum over its flows of
 *    remaining x (1 - C / arrival), exceed the XOFF of an empty switch); a flow that crosses such
 *    a link toward another, idle egress is throttled to the FIFO share of the incast flows
 *    sharing that link (FIFO service of the paused link). The pause is taken to hold for the
 *    whole transfer: the victim's unthrottled start, before XOFF is reached, is missing;
 *  - loss: go-back-N goodput, rate cap = line rate x (1 - P) / (1 + P W), P the path loss
 *    probability per packet and W the window in packets (one bandwidth-delay product). */
#include "roce_internal.h"

#include <math.h>
#include <stdlib.h>

double roce__loss_goodput_factor(double p_link, int hops, double window_pkts)
{
  if (p_link <= 0)
    return 1;
  double p = 1 - pow(1 - p_link, hops);
  return (1 - p) / (1 + p * window_pkts);
}

static double line_rate(const struct fabric *fab, const struct fab_flow *f)
{
  return fab->topo->ports[f->path[0]].rate_Bps;
}

/* A flow's arrival rate at hop h >= 1 under FIFO shares. */
static double fifo_in(const struct fab_flow *f, int h)
{
  return ((const struct roce_flow *)f->model_data)->fl_fifo_in[h];
}

static int is_switch_port(const struct fabric *fab, int port)
{
  return fab->topo->nodes[fab->topo->ports[port].node].kind == TOPO_SWITCH;
}

/* The XOFF an ingress PG of an empty switch reaches: a congested egress pauses its inputs only
 * once the bytes it cannot drain (its backlog) exceed it. */
static double xoff_estimate(const struct fabric *fab, int node)
{
  const struct roce_state *rs = roce__state(fab);
  return pfc_xoff(&rs->cfg.pfc, rs->cfg.buffer_B - rs->switches[node].headroom_total_B);
}

/* Without congestion control every sender transmits at its NIC's share of the line rate, and a
 * switch egress is a FIFO: when the bytes arriving at a port exceed its capacity C, each flow
 * leaves it at C x (its arrival rate / total arrival rate), not at the max-min share (Jain's FIFO
 * fluid model; a flow slowed upstream keeps less of a later bottleneck). The arrival rates
 * depend on the upstream ports' shares: a Jacobi iteration over the hops from the NIC (round
 * robin among its flows, an equal split) to the last hop reaches their fixed point. Each flow's
 * arrival rates (fl_fifo_in) and share (fl_fifo_Bps) are kept in its roce_flow.
 *
 * The shares of a flow depend only on the flows of its component (flows linked by shared
 * ports), so the pass takes one or more whole components; flows must be in active-set order,
 * the order the sums over a port's flows are taken in, so that a component gets the same bits
 * as in a pass over every active flow. */
static void fifo_shares(struct fabric *fab, struct fab_flow **flows, size_t n)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  for (size_t i = 0; i < n; i++)
    rs->fl_demand[flows[i]->path[0]] += 1; /* flows per NIC port */
  for (size_t i = 0; i < n; i++) {
    struct roce_flow *rf = flows[i]->model_data;
    double r = t->ports[flows[i]->path[0]].rate_Bps / rs->fl_demand[flows[i]->path[0]];
    rf->fl_fifo_in[1] = r; /* also for a one-hop flow, whose share is then its NIC share */
    for (int h = 2; h < flows[i]->hops; h++)
      rf->fl_fifo_in[h] = r;
  }
  for (size_t i = 0; i < n; i++)
    rs->fl_demand[flows[i]->path[0]] = 0;
  for (int iter = 0; iter < 64; iter++) {
    for (size_t i = 0; i < n; i++) {
      const struct roce_flow *rf = flows[i]->model_data;
      for (int h = 1; h < flows[i]->hops; h++)
        rs->fl_demand[flows[i]->path[h]] += rf->fl_fifo_in[h];
    }
    double moved = 0;
    for (size_t i = 0; i < n; i++) {
      const struct fab_flow *f = flows[i];
      struct roce_flow *rf = f->model_data;
      double r = rf->fl_fifo_in[1];
      for (int h = 1; h < f->hops; h++) {
        int p = f->path[h];
        if (h > 1) {
          moved = fmax(moved, fabs(rf->fl_fifo_in[h] - r) / r);
          rf->fl_fifo_in[h] = r;
        }
        double c = t->ports[p].rate_Bps;
        if (rs->fl_demand[p] > c)
          r *= c / rs->fl_demand[p];
      }
      rf->fl_fifo_Bps = r;
    }
    for (size_t i = 0; i < n; i++)
      for (int h = 1; h < flows[i]->hops; h++)
        rs->fl_demand[flows[i]->path[h]] = 0;
    if (moved < 1e-6)
      break;
  }
}

static int by_active_index(const void *a, const void *b)
{
  int32_t x = (*(struct fab_flow *const *)a)->active_index, y = (*(struct fab_flow *const *)b)->active_index;
  return (x > y) - (x < y);
}

/* Room for n flows in the pass's two flow arrays. */
static void reserve_flows(struct roce_state *rs, size_t n)
{
  if (n <= rs->fl_cap)
    return;
  rs->fl_cap = 2 * n;
  rs->fl_comp = realloc(rs->fl_comp, rs->fl_cap * sizeof *rs->fl_comp);
  rs->fl_changed = realloc(rs->fl_changed, rs->fl_cap * sizeof *rs->fl_changed);
  if (rs->fl_comp == NULL || rs->fl_changed == NULL)
    abort();
}

/* The go-back-N goodput cap of a flow (0: none), a property of its path: computed once. */
static double loss_cap(const struct fabric *fab, const struct fab_flow *f)
{
  struct roce_flow *rf = f->model_data;
  if (rf != NULL && rf->fl_loss_cap_Bps >= 0)
    return rf->fl_loss_cap_Bps;
  const struct roce_state *rs = roce__state(fab);
  double rtt = 2 * fabric_path_tail_latency(fab, f, 0);
  double window = ceil(line_rate(fab, f) * rtt / fab->mtu) + 1;
  double factor = roce__loss_goodput_factor(rs->cfg.drop_rate, f->hops, window);
  double cap = factor < 1 ? factor * line_rate(fab, f) : 0;
  if (rf != NULL)
    rf->fl_loss_cap_Bps = cap;
  return cap;
}

/* Timed onset of a pause: a link u feeding a congested egress e is paused only once the ingress
 * PG it feeds at e's switch reaches XOFF. That PG grows at g (its flows' part of e's backlog
 * growth) while e's queue, which uses the shared buffer, grows at G = arrival - C; with
 * dynamic thresholds XOFF = alpha (B' - G t), so g t = alpha (B' - G t) gives
 * t = alpha B' / (g + alpha G), and t = XOFF / g with static ones. An episode starts the first
 * time a pass finds u paused and lasts while every later pass does; a ROCE_EV_SPREAD event at
 * the onset recomputes the caps. (Before: the victims were capped from the start of the
 * incast, 22.1 Gb/s against 32.2 at packet fidelity.) */
static void spread_onsets(struct fabric *fab, struct fab_flow **flows, size_t n)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  uint64_t pass = ++rs->fl_spread_pass;
  double due = 0;
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h + 1 < flows[i]->hops; h++) {
      int u = flows[i]->path[h];
      if (rs->fl_victim_cap[u] <= 0 || rs->fl_onset_seen[u] == pass)
        continue;
      if (rs->fl_onset_seen[u] + 1 != pass || rs->fl_onset[u] <= 0) { /* a new episode */
        int node = t->ports[flows[i]->path[h + 1]].node;
        double free_B = rs->cfg.buffer_B - rs->switches[node].headroom_total_B, g = rs->fl_pg_growth[u];
        double delay = rs->cfg.pfc.kind == PFC_STATIC ? rs->cfg.pfc.xoff_B / g
                                                       : rs->cfg.pfc.alpha * free_B / (g + rs->cfg.pfc.alpha * rs->fl_sw_growth[u]);
        rs->fl_onset[u] = fab->now + (g > 0 && isfinite(delay) ? delay : 0);
      }
      rs->fl_onset_seen[u] = pass;
      if (rs->fl_onset[u] > fab->now && (due == 0 || rs->fl_onset[u] < due))
        due = rs->fl_onset[u];
    }
  if (due > 0 && (rs->fl_spread_due == 0 || due < rs->fl_spread_due || rs->fl_spread_due <= fab->now)) {
    rs->fl_spread_due = due;
    fabric_schedule(fab, due, FAB_EV_MODEL, ROCE_EV_SPREAD, rs);
  }
}

void roce__flow_rates(struct fabric *fab, int after_recompute)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  size_t n, n_recomputed;
  int spreading = rs->cfg.pfc.enabled && rs->cfg.dcqcn_preset == ROCE_DCQCN_OFF;
  int fifo = rs->cfg.dcqcn_preset == ROCE_DCQCN_OFF;
  int fluid = !fifo && rs->cfg.fluid && fab->fidelity == FAB_FIDELITY_FLOW;
  /* With DCQCN on and no fluid model the only cap is the loss goodput, a property of each flow:
   * the flows just recomputed are enough (a 10,240-GPU run has tens of thousands of active flows
   * and millions of recomputations). Pause spreading and the fluid model look at every active
   * flow; FIFO shares only at the components whose flow set changed (the flows just
   * recomputed), the others keep theirs. */
  int per_flow = !fifo && !fluid;
  struct fab_flow **recomputed = fabric_recomputed_flows(fab, &n_recomputed);
  struct fab_flow **active = fabric_active_flows(fab, &n);
  if (!after_recompute)
    n_recomputed = 0, recomputed = NULL; /* a timer: no recomputation to follow */
  int whole = spreading || fluid || !after_recompute;
  struct fab_flow **flows = whole ? active : recomputed;
  if (!whole)
    n = n_recomputed;
  if (fluid) {
    if (!roce__fluid_flows_changed(fab))
      return; /* a cap moved (a fluid step): the loss caps cannot have changed */
    roce__fluid_detect(fab, flows, n);
  }
  reserve_flows(rs, n > n_recomputed ? n : n_recomputed);
  if (fifo) {
    if (!after_recompute) {
      fifo_shares(fab, active, n);
    } else if (fabric_recompute_followed_flow_change(fab)) {
      /* Flows started or drained: their components get new shares. (A recomputation that
       * followed cap changes only leaves every flow set, hence every share, as it was.) */
      size_t n_active;
      struct fab_flow **all = fabric_active_flows(fab, &n_active);
      if (n_recomputed == n_active) {
        fifo_shares(fab, all, n_active); /* one component: already in order */
      } else {
        for (size_t i = 0; i < n_recomputed; i++)
          rs->fl_comp[i] = recomputed[i];
        qsort(rs->fl_comp, n_recomputed, sizeof *rs->fl_comp, by_active_index);
        fifo_shares(fab, rs->fl_comp, n_recomputed);
      }
    }
  }
  if (spreading) {
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++) /* arrival rates: the FIFO shares upstream of each hop */
        rs->fl_demand[flows[i]->path[h]] += h == 0 ? line_rate(fab, flows[i]) : fifo_in(flows[i], h);
    for (size_t i = 0; i < n; i++)
      for (int h = 1; h < flows[i]->hops; h++) {
        int e = flows[i]->path[h];
        if (rs->fl_demand[e] > t->ports[e].rate_Bps * (1 + 1e-9))
          rs->fl_backlog[e] += flows[i]->remaining * (1 - t->ports[e].rate_Bps / rs->fl_demand[e]);
      }
    for (size_t i = 0; i < n; i++) {
      struct fab_flow *f = flows[i];
      for (int h = 1; h < f->hops; h++) {
        int e = f->path[h], u = f->path[h - 1];
        if (is_switch_port(fab, e) && rs->fl_demand[e] > t->ports[e].rate_Bps * (1 + 1e-9) &&
            rs->fl_backlog[e] > xoff_estimate(fab, t->ports[e].node)) {
          /* the part of e's backlog this flow leaves in the ingress PG fed by u */
          rs->fl_pg_growth[u] += fifo_in(f, h) * (1 - t->ports[e].rate_Bps / rs->fl_demand[e]);
          rs->fl_sw_growth[u] = rs->fl_demand[e] - t->ports[e].rate_Bps;
          rs->fl_spread_on[u] += 1;
          if (rs->fl_spread_e[u] != e) {
            rs->fl_spread_e[u] = e;
            rs->fl_spread_in[e] += 1;
          }
        }
      }
    }
    /* Once paused, every ingress PG feeding e sits at XOFF, so e drains them alike: C_e / (links
     * feeding e) each. The FIFO at u's upstream egress then serves every flow on u at the rate
     * of its e-bound flows, C_e / (links feeding e) / (e-bound flows on u), victims included
     * (line-rate arrivals). (Before: the FIFO share of the incast flows without pauses, 14.3
     * Gb/s in test 3 where the packet model gives ~25.) */
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++) {
        int u = flows[i]->path[h], e = rs->fl_spread_e[u];
        if (e >= 0 && rs->fl_spread_on[u] > 0 && rs->fl_victim_cap[u] == 0)
          rs->fl_victim_cap[u] = t->ports[e].rate_Bps / rs->fl_spread_in[e] / rs->fl_spread_on[u];
      }
    spread_onsets(fab, flows, n);
  }
  size_t n_changed = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    double cap = loss_cap(fab, f);
    if (fluid)
      cap = roce__fluid_cap(fab, f, cap);
    double share = fifo ? ((const struct roce_flow *)f->model_data)->fl_fifo_Bps : 0;
    if (fifo && share < line_rate(fab, f) * (1 - 1e-9) && (cap == 0 || share < cap))
      cap = share;
    if (spreading)
      for (int h = 0; h + 1 < f->hops; h++) {
        int u = f->path[h], next = f->path[h + 1];
        if (rs->fl_victim_cap[u] > 0 && fab->now >= rs->fl_onset[u] - 1e-12 &&
            rs->fl_demand[next] <= t->ports[next].rate_Bps * (1 + 1e-9) && (cap == 0 || rs->fl_victim_cap[u] < cap))
          cap = rs->fl_victim_cap[u];
      }
    if (fabs(cap - f->rate_cap_Bps) > 1e-9 * (cap + f->rate_cap_Bps)) {
      if (per_flow) {
        fabric_flow_set_cap(fab, f, cap);
      } else {
        f->rate_cap_Bps = cap;
        rs->fl_changed[n_changed++] = f;
      }
    }
  }
  if (spreading)
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++) {
        rs->fl_demand[flows[i]->path[h]] = 0;
        rs->fl_victim_cap[flows[i]->path[h]] = 0;
        rs->fl_backlog[flows[i]->path[h]] = 0;
        rs->fl_pg_growth[flows[i]->path[h]] = 0;
        rs->fl_sw_growth[flows[i]->path[h]] = 0;
        rs->fl_spread_on[flows[i]->path[h]] = 0;
        rs->fl_spread_in[flows[i]->path[h]] = 0;
        rs->fl_spread_e[flows[i]->path[h]] = -1;
      }
  fabric_flow_caps_changed_for(fab, rs->fl_changed, n_changed); /* their components only */
}
