/* Switches of the RoCEv2 fabric at packet fidelity: a shared buffer per switch, ingress
 * priority-group accounting with PFC (pfc.h), ECN marking at egress dequeue (ecn_red.h), and the
 * PAUSE state of every transmitting port. Egress queues are the packet engine's per-port,
 * per-priority queues; this file only admits packets into them and accounts their bytes to the
 * ingress they came from until they leave (on_tx_done). */
#include "roce_internal.h"
#include "check.h"
#include "failure.h"

#include <stdlib.h>

void roce__switch_init(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  for (int p = 0; p < t->n_ports; p++) {
    const struct topo_port *tp = &t->ports[p];
    struct roce_port *rp = &rs->ports[p];
    ecn_red_scale(&rp->ecn, &rs->cfg.ecn_ref, rs->cfg.ecn_ref_rate_Bps, tp->rate_Bps);
    if (t->nodes[tp->node].kind != TOPO_SWITCH)
      continue;
    /* hpcc: the response term is the switch latency: a cut-through switch admits a packet (and
     * decides XOFF) a switch latency after its head arrived, so the upstream port's bytes reach
     * the buffer that much later than they left it; the upstream port itself stops at once. */
    rp->headroom_B = rs->cfg.headroom_mode == 0 ? pfc_headroom_mlx5(tp->rate_Bps, tp->latency_s, fab->mtu)
                     : rs->cfg.headroom_mode == 1
                         ? pfc_headroom_hpcc(tp->rate_Bps, tp->latency_s, fab->switch_latency_s, fab->mtu)
                         : rs->cfg.headroom_fixed_B;
    if (rp->headroom_B < fab->mtu)
      rp->headroom_B = fab->mtu;
    if (rs->cfg.pfc.enabled)
      rs->switches[tp->node].headroom_total_B += rp->headroom_B;
  }
}

static double shared_free(const struct roce_state *rs, const struct roce_switch *sw)
{
  return rs->cfg.buffer_B - sw->headroom_total_B - sw->shared_used_B;
}

/* The ingress PG (port i of the switch, priority q) sends a PAUSE to its peer's egress port,
 * which stops after the link delay. */
static void send_pause(struct fabric *fab, int ingress, int prio)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo_port *tp = &fab->topo->ports[ingress];
  rs->stats.pfc.pause_sent++;
  fabric_timer_arm(fab, fab->now + tp->latency_s, ROCE_TIMER_PAUSE_ARRIVE, &rs->ports[tp->peer_port], (uint32_t)prio);
  struct roce_port *rp = &rs->ports[ingress];
  if (!rp->refresh_armed[prio]) {
    rp->refresh_armed[prio] = 1;
    double refresh = pfc_pause_time_s(&rs->cfg.pfc, fab->topo->ports[tp->peer_port].rate_Bps) / 2;
    fabric_timer_arm(fab, fab->now + refresh, ROCE_TIMER_PAUSE_REFRESH, rp, (uint32_t)prio);
  }
}

static void send_resume(struct fabric *fab, int ingress, int prio)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo_port *tp = &fab->topo->ports[ingress];
  rs->stats.pfc.resume_sent++;
  fabric_timer_arm(fab, fab->now + tp->latency_s, ROCE_TIMER_RESUME_ARRIVE, &rs->ports[tp->peer_port], (uint32_t)prio);
}

static void pause_end(struct fabric *fab, struct roce_port *rp, int port, int prio)
{
  struct roce_state *rs = roce__state(fab);
  if (!rp->is_paused[prio])
    return;
  rp->is_paused[prio] = 0;
  rp->paused_until[prio] = 0;
  double paused = fab->now - rp->pause_start_s[prio];
  rp->paused_s += paused;
  rs->stats.paused_s += paused;
  fabric_port_kick(fab, port);
}

void roce__port_timer(struct fabric *fab, struct roce_port *rp, int kind, int prio)
{
  struct roce_state *rs = roce__state(fab);
  int port = (int)(rp - rs->ports);
  const struct topo_port *tp = &fab->topo->ports[port];
  switch (kind) {
  case ROCE_TIMER_PAUSE_ARRIVE: {
    rp->pauses_received++;
    rp->paused_until[prio] = fab->now + pfc_pause_time_s(&rs->cfg.pfc, tp->rate_Bps);
    if (!rp->is_paused[prio]) {
      rp->is_paused[prio] = 1;
      rp->pause_start_s[prio] = fab->now;
    }
    if (!rp->expire_armed[prio]) {
      rp->expire_armed[prio] = 1;
      fabric_timer_arm(fab, rp->paused_until[prio], ROCE_TIMER_PAUSE_EXPIRE, rp, (uint32_t)prio);
    }
    break;
  }
  case ROCE_TIMER_RESUME_ARRIVE: pause_end(fab, rp, port, prio); break;
  case ROCE_TIMER_PAUSE_EXPIRE:
    rp->expire_armed[prio] = 0;
    if (!rp->is_paused[prio])
      break;
    if (rp->paused_until[prio] > fab->now) {
      rp->expire_armed[prio] = 1;
      fabric_timer_arm(fab, rp->paused_until[prio], ROCE_TIMER_PAUSE_EXPIRE, rp, (uint32_t)prio);
    } else {
      pause_end(fab, rp, port, prio);
    }
    break;
  case ROCE_TIMER_PAUSE_REFRESH:
    rp->refresh_armed[prio] = 0;
    if (rp->pg[prio].is_xoff)
      send_pause(fab, port, prio);
    break;
  default: sgf_fatal(__FILE__, __LINE__, "roce: unknown switch timer kind %d", (int)kind);
  }
}

int roce__may_send(struct fabric *fab, int port, int queue)
{
  struct roce_port *rp = &roce__state(fab)->ports[port];
  return !rp->is_paused[queue];
}

/* A packet reached a switch: buffer admission at its ingress PG. */
int roce__switch_arrive(struct fabric *fab, int node, struct fab_packet *pkt)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  int ingress = t->ports[pkt->in_port].peer_port;
  struct roce_port *rp = &rs->ports[ingress];
  struct roce_switch *sw = &rs->switches[node];
  struct pfc_pg *pg = &rp->pg[pkt->queue];
  double bytes = pkt->bytes;
  if (fab->failures != NULL) {
    int out = fabric_route_packet(fab, pkt);
    if (out < 0 || fabric_port_down(fab, out)) {
      /* Failures: routed to a dead link before the routing knew, or no live way on. */
      fabric_failures_packet_lost(fab, out >= 0 ? out : fabric_failures_dead_end_port(fab, pkt), pkt, 0);
      return FAB_ARRIVE_TAKEN;
    }
  }
  if (sw->used_B + bytes > rs->cfg.buffer_B) {
    fabric_count_drop(fab, FAB_DROP_BUFFER);
    return FAB_ARRIVE_DROP;
  }
  double xoff = pfc_xoff(&rs->cfg.pfc, shared_free(rs, sw));
  enum pfc_admit where = pfc_admit(&rs->cfg.pfc, pg, bytes, xoff, rp->headroom_B);
  if (where == PFC_ADMIT_DROP) {
    rs->stats.pfc.headroom_overflow++;
    fabric_count_drop(fab, FAB_DROP_BUFFER);
    return FAB_ARRIVE_DROP;
  }
  int egress = fabric_route_packet(fab, pkt);
  /* Lossy (PFC off): the dynamic threshold of shared-buffer switches (Choudhury & Hahne,
   * "Dynamic queue length thresholds for shared-memory packet switches", IEEE/ACM ToN 1998): an
   * egress queue may grow to alpha x the free buffer, so one congested queue settles at
   * alpha / (1 + alpha) of the buffer and drops there, leaving room for the other queues;
   * before, a lossy switch dropped only when the whole buffer was full. */
  if (!rs->cfg.pfc.enabled &&
      (sw->shared_used_B + bytes > rs->cfg.buffer_B || fabric_port_view(fab, egress)->queued_bytes[pkt->queue] + bytes >
                                                           rs->cfg.lossy_alpha * (rs->cfg.buffer_B - sw->used_B))) {
    pg->shared_B -= bytes;
    fabric_count_drop(fab, FAB_DROP_BUFFER);
    return FAB_ARRIVE_DROP;
  }
  sw->used_B += bytes;
  if (where == PFC_ADMIT_SHARED)
    sw->shared_used_B += bytes;
  if (sw->used_B > sw->peak_B)
    sw->peak_B = sw->used_B;
  if (pfc_should_pause(&rs->cfg.pfc, pg, xoff)) {
    pg->is_xoff = 1;
    send_pause(fab, ingress, pkt->queue);
  }
  if (egress == rs->cfg.trace_port)
    roce__series_add(&rs->port_series, fab->now, fabric_port_view(fab, egress)->total_queued + bytes,
                     rs->ports[egress].is_paused[pkt->queue], sw->used_B, rs->cfg.trace_interval_s);
  return FAB_ARRIVE_FORWARD;
}

/* Dequeue at a switch egress: ECN marking on the queue left behind. */
void roce__switch_transmit(struct fabric *fab, int port, struct fab_packet *pkt)
{
  struct roce_state *rs = roce__state(fab);
  const struct fab_port *fp = fabric_port_view(fab, port);
  if (rs->cfg.ecn_enabled &&
      ecn_red_mark(&rs->ports[port].ecn, &rs->stats.ecn, fp->queued_bytes[pkt->queue], fab_rng_uniform(&rs->rng)))
    pkt->flags |= ROCE_PKT_CE;
  if (port == rs->cfg.trace_port)
    roce__series_add(&rs->port_series, fab->now, fp->total_queued, rs->ports[port].is_paused[pkt->queue], 0,
                     rs->cfg.trace_interval_s);
}

/* A packet of bytes that came in through in_port (the upstream egress port) left the buffer of
 * the switch at node: release its ingress PG, maybe RESUME. */
static void release(struct fabric *fab, int node, int in_port, int queue, double bytes)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  int ingress = t->ports[in_port].peer_port;
  struct roce_port *rp = &rs->ports[ingress];
  struct roce_switch *sw = &rs->switches[node];
  struct pfc_pg *pg = &rp->pg[queue];
  double from_shared = pfc_release(pg, bytes);
  sw->used_B -= bytes;
  sw->shared_used_B -= from_shared;
  if (sw->shared_used_B < 1e-6)
    sw->shared_used_B = 0;
  if (rs->cfg.pfc.enabled && pfc_should_resume(&rs->cfg.pfc, pg, pfc_xoff(&rs->cfg.pfc, shared_free(rs, sw)))) {
    pg->is_xoff = 0;
    send_resume(fab, ingress, queue);
  }
}

/* The packet on a switch port left the buffer. */
void roce__switch_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx)
{
  const struct topo *t = fab->topo;
  if (tx->in_port < 0 || t->nodes[t->ports[port].node].kind != TOPO_SWITCH)
    return;
  release(fab, t->ports[port].node, tx->in_port, tx->queue, tx->bytes);
}

/* Failures: a packet queued at a switch egress port whose link went down is lost: it leaves the
 * buffer as if it had been sent. */
void roce__switch_lost(struct fabric *fab, int port, const struct fab_packet *pkt)
{
  const struct topo *t = fab->topo;
  if (pkt->in_port < 0 || t->nodes[t->ports[port].node].kind != TOPO_SWITCH)
    return;
  release(fab, t->ports[port].node, pkt->in_port, pkt->queue, pkt->bytes);
}
