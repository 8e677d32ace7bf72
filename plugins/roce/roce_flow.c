/* RoCEv2 at flow fidelity: what the fluid flows keep of the packet model.
 *
 *  - ECMP: the same QP keys, hence the same paths, as packet fidelity (roce_model.c flow_start);
 *  - DCQCN: its steady state, the max-min fair share of the flow engine (the CoNEXT'16 fixed
 *    point keeps the bottleneck busy: sum RC = C), no transient;
 *  - PFC pause spreading (DCQCN off, PFC on): a switch egress whose senders' line rates exceed its
 *    capacity fills the ingress PGs feeding it past XOFF, so each of those ingress links is paused
 *    for part of the time (only when the bytes the egress cannot drain, sum over its flows of
 *    remaining x (1 - C / demand), exceed the XOFF of an empty switch); a flow that crosses such a link toward another, idle egress is throttled
 *    to the rate of the incast flows sharing that link (FIFO service of the paused link);
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

void roce__flow_rates(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  size_t n;
  struct fab_flow **flows = fabric_active_flows(fab, &n);
  int spreading = rs->cfg.pfc.enabled && rs->cfg.dcqcn_preset == ROCE_DCQCN_OFF;
  if (spreading) {
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++)
        rs->fl_demand[flows[i]->path[h]] += line_rate(fab, flows[i]);
    for (size_t i = 0; i < n; i++)
      for (int h = 1; h < flows[i]->hops; h++) {
        int e = flows[i]->path[h];
        if (rs->fl_demand[e] > t->ports[e].rate_Bps * (1 + 1e-9))
          rs->fl_backlog[e] += flows[i]->remaining * (1 - t->ports[e].rate_Bps / rs->fl_demand[e]);
      }
    for (size_t i = 0; i < n; i++) {
      struct fab_flow *f = flows[i];
      for (int h = 1; h < f->hops; h++) {
        int e = f->path[h];
        if (is_switch_port(fab, e) && rs->fl_demand[e] > t->ports[e].rate_Bps * (1 + 1e-9) &&
            rs->fl_backlog[e] > xoff_estimate(fab, t->ports[e].node) && f->rate_Bps > rs->fl_victim_cap[f->path[h - 1]])
          rs->fl_victim_cap[f->path[h - 1]] = f->rate_Bps;
      }
    }
  }
  int changed = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    double rtt = 2 * fabric_path_tail_latency(fab, f, 0);
    double window = ceil(line_rate(fab, f) * rtt / fab->mtu) + 1;
    double factor = roce__loss_goodput_factor(rs->cfg.drop_rate, f->hops, window);
    double cap = factor < 1 ? factor * line_rate(fab, f) : 0;
    if (spreading)
      for (int h = 0; h + 1 < f->hops; h++) {
        int u = f->path[h], next = f->path[h + 1];
        if (rs->fl_victim_cap[u] > 0 && rs->fl_demand[next] <= t->ports[next].rate_Bps * (1 + 1e-9) &&
            (cap == 0 || rs->fl_victim_cap[u] < cap))
          cap = rs->fl_victim_cap[u];
      }
    if (fabs(cap - f->rate_cap_Bps) > 1e-9 * (cap + f->rate_cap_Bps)) {
      f->rate_cap_Bps = cap;
      changed = 1;
    }
  }
  if (spreading)
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++) {
        rs->fl_demand[flows[i]->path[h]] = 0;
        rs->fl_victim_cap[flows[i]->path[h]] = 0;
        rs->fl_backlog[flows[i]->path[h]] = 0;
      }
  if (changed)
    fabric_flow_caps_changed(fab);
}
