/* The RoCEv2 model's hooks into the fabric core (struct fab_model), the NIC side of RoCE (RP
 * and NP of DCQCN, go-back-N, QPs and ECMP keys) and the counters.
 *
 * Hooks used: init/fini (configuration, per-port and per-switch state), flow_start (QP keys,
 * split over roce/qps-per-conn QPs with fabric_flow_split, DCQCN state), flow_done, may_send
 * (PFC pause), on_transmit (ECN at dequeue), on_tx_done (buffer release, XON), on_arrive (random
 * loss, buffer admission, XOFF; at the receiver: NP and go-back-N), on_injected (pacing at RC,
 * byte counter, retransmitted bytes), on_rates (flow fidelity, roce_flow.c), on_timer (PFC
 * frames, CNPs, NACKs, DCQCN and retransmission timers), counters, series.
 *
 * CNPs and NACKs are not packets: each is an event delayed by the path's latency (links and
 * switches, the reverse path of a symmetric fabric), the priority-6 CNP queueing ignored. */
#include "roce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roce_internal.h"
#include "failure.h"
#include "roce_rp.h"
#include "check.h"

static struct roce_flow *rflow_alloc(struct roce_state *rs)
{
  if (rs->free_flows == NULL) {
    enum { BLOCK = 1024 };
    struct roce_flow *block = sgf_xcalloc(BLOCK, sizeof *block);
    rs->blocks = sgf_xrealloc(rs->blocks, (rs->n_blocks + 1) * sizeof *rs->blocks);
    rs->blocks[rs->n_blocks++] = block;
    for (int i = BLOCK - 1; i >= 0; i--) {
      block[i].free_next = rs->free_flows;
      rs->free_flows = &block[i];
    }
  }
  struct roce_flow *rf = rs->free_flows;
  rs->free_flows = rf->free_next;
  uint32_t gen = (rf->gen + 1) & 0x0FFFFFFF;
  memset(rf, 0, sizeof *rf);
  rf->gen = gen;
  return rf;
}

/* Whether DCQCN can hold a congested port at flow fidelity, measured on the packet model
 * (roce_held_port.h): DCQCN on without the fluid model, the held-port measure on, and two
 * senders at their floor rate (roce_dcqcn_floor.h) at the slowest NIC's line rate not enough
 * to saturate a port of that rate (nic preset: 0.2 % of the line rate at 100 Gb/s, where
 * DCQCN holds ports; 90 % at 200 Gb/s and 95 % at 400 Gb/s, where PFC governs them; the
 * floor's fraction grows with the rate, so the slowest NIC decides). Such ports are what rings
 * moved step by step make faithful: each step restarts its sender's DCQCN at the line rate,
 * and a ring waits on its slowest edge at each step (docs/roce.md, "Ring steps": Llama-3 8B on
 * 1,024 GPUs of a 2:1 fat-tree at 100 Gb/s, -5.3 % of packet fidelity pipelined, -0.6 % in
 * steps). The floor's feedback delay is one NIC link there and back; the rates' floors are far
 * from the threshold either side. */
static int dcqcn_can_hold(struct fabric *fab, struct roce_state *rs)
{
  if (rs->cfg.dcqcn_preset == ROCE_DCQCN_OFF || rs->cfg.fluid || rs->cfg.flow_held == ROCE_HELD_MEASURE_OFF)
    return 0;
  const struct topo *t = fab->topo;
  int slowest = -1;
  for (int g = 0; g < t->n_gpus; g++) {
    int p = t->gpu_nic_port[g];
    if (p >= 0 && (slowest < 0 || t->ports[p].rate_Bps < t->ports[slowest].rate_Bps))
      slowest = p;
  }
  if (slowest < 0)
    return 0;
  double floor = roce_dcqcn_floor_cached(&rs->floors, &rs->cfg.dcqcn, t->ports[slowest].rate_Bps, fab->mtu,
                                         fab->mtu + fab->frame_overhead_B, rs->cfg.cnp_interval_s,
                                         2 * t->ports[slowest].latency_s);
  return 2 * floor < 1;
}

static int roce_rings_in_steps(const struct fabric *fab) { return roce__state(fab)->rings_in_steps; }

static int roce_init(struct fabric *fab, char *err, size_t errlen)
{
  struct roce_state *rs = roce__state(fab);
  if (roce__config_read(&rs->cfg, fab, err, errlen) != 0)
    return -1;
  int n_ports = fab->topo->n_ports;
  rs->ports = sgf_xcalloc((size_t)n_ports + 1, sizeof *rs->ports);
  rs->switches = sgf_xcalloc((size_t)fab->topo->n_nodes + 1, sizeof *rs->switches);
  SGF_CHECK(roce_fifo_init(&rs->fifo, n_ports) == 0 &&
                roce_spread_init(&rs->spread, n_ports, fab->topo->n_nodes) == 0 &&
                roce_loss_init(&rs->loss, n_ports, fab->topo->n_nodes) == 0 && roce_est_init(&rs->est, n_ports) == 0 &&
                roce_held_init(&rs->held, n_ports) == 0,
            "roce: out of memory for the flow-level state of %d ports", n_ports);
  fab_rng_seed(&rs->rng, fab_rng_next(&fab->rng));
  /* The switches hash with roce/ecmp-seed as the NICs number their QPs with it: the paths follow
   * that parameter alone, and the run's seed (RED marks, drops) can change without them. */
  fab->route_seed = rs->cfg.ecmp_seed;
  /* RoCEv2 framing on every packet: serialisation at packet fidelity, payload capacity at flow
   * fidelity (the fabric core applies it). */
  fab->frame_overhead_B = rs->cfg.frame_overhead_B;
  SGF_CHECK(roce_fluid_init(fab) == 0, "roce: out of memory for the fluid DCQCN state");
  rs->rings_in_steps = fab->fidelity == FAB_FIDELITY_FLOW && dcqcn_can_hold(fab, rs);
  roce__switch_init(fab);
  return roce__check_headroom(fab, rs, err, errlen); /* on failure fabric_new calls roce_fini */
}

static void roce_fini(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  if (rs->ports == NULL)
    return; /* init stopped at the configuration: nothing was allocated */
  for (size_t i = 0; i < rs->n_blocks; i++)
    free(rs->blocks[i]);
  free(rs->blocks);
  roce_qp_rps_free(&rs->qp_rps);
  free(rs->ports);
  free(rs->switches);
  roce_fifo_fini(&rs->fifo);
  roce_loss_fini(&rs->loss);
  roce_spread_fini(&rs->spread);
  roce_est_fini(&rs->est);
  roce_held_fini(&rs->held);
  free(rs->fl_changed);
  roce_fluid_fini(fab);
  free(rs->flow_series.rows);
  free(rs->port_series.rows);
  free(rs->peak_queue);
  free(rs->port_paused);
}

static int uses_nvlink(const struct topo *t, int src, int dst)
{
  return t->gpus_per_node > 0 && src / t->gpus_per_node == dst / t->gpus_per_node && t->gpu_nvl_port[src] >= 0;
}

static int dcqcn_on(const struct roce_state *rs) { return rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF; }

/* A timer of flow rf: arg is its generation, so that a timer armed for an earlier use of rf
 * (a CNP or NACK still in flight when the flow ended) is recognised. */
static fab_timer_id flow_timer(struct fabric *fab, struct roce_flow *rf, int kind, double when)
{
  return fabric_timer_arm(fab, when, kind, rf, rf->gen);
}

/* Arms rf's retransmission timer at date when. */
static void rto_arm(struct fabric *fab, struct roce_flow *rf, double when)
{
  rf->rto_timer = flow_timer(fab, rf, ROCE_TIMER_RTO, when);
}

/* Whether flow rf's reaction point belongs to its QP rather than to the transfer (roce/rp-per-qp). */
static int qp_rp_kept(const struct fabric *fab, const struct roce_state *rs, const struct roce_flow *rf)
{
  return rs->cfg.qp_rate_kept && fab->fidelity == FAB_FIDELITY_PACKET && rf->line_port >= 0 && dcqcn_on(rs);
}

static void qp_rp_take_over(struct fabric *fab, struct roce_flow *rf);

static void roce_flow_start(struct fabric *fab, struct fab_flow *flow)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  struct roce_flow *rf = rflow_alloc(rs);
  rf->flow = flow;
  rf->last_cnp_s = -1;
  rf->fl_loss_path = -1;
  rf->fifo.inject = rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF ? -1 : 1; /* -1: its DCQCN floor, found later */
  rf->est.since_s = fab->now;
  rs->fluid.starts++;
  flow->model_data = rf;
  flow->queue = (uint8_t)rs->cfg.priority;
  gbn_rx_init(&rf->rx);
  gbn_tx_init(&rf->tx);
  int nvlink = uses_nvlink(t, flow->src_gpu, flow->dst_gpu) || t->gpu_nic_port[flow->src_gpu] < 0;
  rf->line_port = nvlink ? -1 : t->gpu_nic_port[flow->src_gpu];
  if (rf->line_port >= 0)
    dcqcn_init(&rs->cfg.dcqcn, &rf->cc, t->ports[rf->line_port].rate_Bps);
  if (flow->parent == NULL && rf->line_port >= 0) {
    /* Each connection between two GPUs has QPs of its own (NCCL connects every channel
     * separately), so a collective's channels hash to paths of their own. */
    int qps = rs->cfg.qps_per_conn, first_qp = flow->conn * qps;
    flow->key = roce__qp_key(&rs->cfg, fab->seed, flow->src_gpu, flow->dst_gpu, first_qp);
    double share = floor(flow->bytes / qps / fab->mtu) * fab->mtu;
    if (qps > 1 && share > 0)
      for (int q = 1; q < qps; q++)
        fabric_flow_split(fab, flow, share,
                          roce__qp_key(&rs->cfg, fab->seed, flow->src_gpu, flow->dst_gpu, first_qp + q));
  }
  rf->ack_delay_s = -1;
  rf->progress_s = fab->now;
  if (qp_rp_kept(fab, rs, rf))
    qp_rp_take_over(fab, rf);
  if (fab->fidelity == FAB_FIDELITY_PACKET && rf->line_port >= 0) {
    rf->rto_armed = 1;
    rto_arm(fab, rf, fab->now + rs->cfg.rto_s);
  }
  roce__trace_flow(fab, rf);
}

static void roce_flow_done(struct fabric *fab, struct fab_flow *flow)
{
  struct roce_state *rs = roce__state(fab);
  struct roce_flow *rf = flow->model_data;
  if (rf == NULL)
    return;
  if (fab->fidelity == FAB_FIDELITY_FLOW) {
    roce_est_flow_end(fab, &rs->est, flow);
    if (rs->held.measures > 0)
      roce_held_flow_gone(fab, &rs->held, flow);
    if (rf->spread_entered) {
      unsigned idle;
      roce_spread_flow_leave(&rs->spread, flow, &idle);
      for (int h = 0; h < flow->hops; h++)
        if (idle & (1u << h))
          roce_est_link_idle(fab, &rs->est, flow->path[h]);
    }
  }
  if (qp_rp_kept(fab, rs, rf))
    roce_qp_rp_save(&rs->qp_rps, flow->key, rf);
  /* Its periodic timers will not be needed; CNPs and NACKs in flight are told apart by the
   * generation bumped here. */
  fabric_timer_cancel(fab, rf->rto_timer);
  fabric_timer_cancel(fab, rf->alpha_timer);
  fabric_timer_cancel(fab, rf->rate_timer);
  rf->gen = (rf->gen + 1) & 0x0FFFFFFF;
  rf->flow = NULL;
  rf->free_next = rs->free_flows;
  rs->free_flows = rf;
  flow->model_data = NULL;
}

static int roce_may_send(struct fabric *fab, int port, int queue, const struct fab_packet *pkt)
{
  (void)pkt;
  return roce__may_send(fab, port, queue);
}

static void roce_on_transmit(struct fabric *fab, int port, struct fab_packet *pkt)
{
  if (fab->topo->nodes[fab->topo->ports[port].node].kind == TOPO_SWITCH)
    roce__switch_transmit(fab, port, pkt);
}

static void roce_on_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx)
{
  roce__switch_tx_done(fab, port, tx);
}

static double feedback_delay(const struct fabric *fab, const struct fab_flow *flow)
{
  return fabric_path_tail_latency(fab, flow, 0);
}

/* NP: a CNP for a marked packet, at most one per flow per CNP interval. */
static void np_marked(struct fabric *fab, struct roce_flow *rf)
{
  struct roce_state *rs = roce__state(fab);
  if (!dcqcn_on(rs) || rf->line_port < 0)
    return;
  if (rs->cfg.cnp_interval_s > 0 && rf->last_cnp_s >= 0 && fab->now - rf->last_cnp_s < rs->cfg.cnp_interval_s)
    return;
  rf->last_cnp_s = fab->now;
  rs->stats.cnps_sent++;
  flow_timer(fab, rf, ROCE_TIMER_CNP, fab->now + feedback_delay(fab, rf->flow));
}

static int roce_on_arrive(struct fabric *fab, int node, struct fab_packet *pkt)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  struct roce_flow *rf = pkt->flow->model_data;
  if (rs->cfg.drop_rate > 0 && !t->ports[pkt->in_port].is_nvlink && fab_rng_uniform(&rs->rng) < rs->cfg.drop_rate) {
    fabric_count_drop(fab, FAB_DROP_RANDOM);
    rf->inflight--;
    return FAB_ARRIVE_DROP;
  }
  if (t->nodes[node].kind == TOPO_SWITCH) {
    int verdict = roce__switch_arrive(fab, node, pkt);
    if (verdict == FAB_ARRIVE_DROP)
      rf->inflight--;
    return verdict;
  }
  if (t->nodes[node].kind != TOPO_GPU)
    return FAB_ARRIVE_FORWARD;
  rf->inflight--;
  if (pkt->flags & ROCE_PKT_CE)
    np_marked(fab, rf);
  if (pkt->flow->state == FLOW_ACTIVE) {
    enum gbn_verdict v = gbn_rx_receive(&rf->rx, &rs->stats.gbn, pkt->seq);
    if (v == GBN_ACCEPT) {
      /* The ACK of this packet advances the sender's window one reverse path later: the
       * retransmission timer counts from there (the requester's local ACK timeout of IBTA Vol.1
       * ch. 9 measures the time without an acknowledgement of outstanding packets). */
      if (rf->ack_delay_s < 0)
        rf->ack_delay_s = feedback_delay(fab, pkt->flow);
      rf->progress_s = fab->now + rf->ack_delay_s;
      return FAB_ARRIVE_FORWARD;
    }
    if (v == GBN_NACK) {
      rf->nack_psn = rf->rx.expected_psn;
      rf->nack_sent_s = fab->now;
      flow_timer(fab, rf, ROCE_TIMER_NACK, fab->now + feedback_delay(fab, pkt->flow));
    }
  }
  fabric_packet_free(fab, pkt);
  return FAB_ARRIVE_TAKEN;
}

/* Failures (failure.h): a packet lost to a failed link leaves the network (the retransmission
 * timer fires only when nothing of the flow is in it) and, if it was queued at a switch, that
 * switch's buffer. Go-back-N then recovers it: a NACK if a later packet of the flow arrives, the
 * timeout (roce/rto after the last progress) otherwise. */
static void roce_on_packet_lost(struct fabric *fab, int port, struct fab_packet *pkt, int queued)
{
  struct roce_flow *rf = pkt->flow->model_data;
  if (queued)
    roce__switch_lost(fab, port, pkt);
  if (rf != NULL)
    rf->inflight--;
}

static void roce_on_injected(struct fabric *fab, struct fab_flow *flow, struct fab_packet *pkt)
{
  struct roce_state *rs = roce__state(fab);
  struct roce_flow *rf = flow->model_data;
  rf->inflight++;
  /* The first packet outstanding after none was starts the retransmission timer. */
  if (flow->injected - pkt->bytes <= flow->delivered)
    rf->progress_s = fab->now;
  if (gbn_tx_on_send(&rf->tx, &rs->stats.gbn, pkt->seq, pkt->bytes) && fab->failures != NULL)
    fabric_failures_retransmitted(fab, flow, pkt->bytes);
  if (!dcqcn_on(rs) || rf->line_port < 0)
    return;
  if (dcqcn_on_bytes(&rs->cfg.dcqcn, &rf->cc, &rs->stats.dcqcn, pkt->bytes))
    roce__trace_flow(fab, rf);
  /* The NIC's rate limiter paces frames on the wire: RC counts the framing too. */
  rf->last_tx_s = fab->now;
  rf->last_tx_B = pkt->bytes + fab->frame_overhead_B;
  flow->next_tx_s = fab->now + rf->last_tx_B / rf->cc.rc_Bps;
}

/* RC changed between two packets: the gap after the last packet follows the new rate, as the
 * NIC's rate limiter does (HPCC ns-3 rdma-hw.cc ChangeRate moves the next send date by the
 * difference of the two transmission times). Without this a packet sent at the minimum rate
 * (1 Mb/s: 33 ms per 4 KB packet) held the flow for 33 ms whatever the increases meanwhile. */
static void repace(struct fabric *fab, struct roce_flow *rf)
{
  struct fab_flow *flow = rf->flow;
  if (rf->last_tx_B <= 0 || flow->injected >= flow->bytes)
    return;
  double next = rf->last_tx_s + rf->last_tx_B / rf->cc.rc_Bps;
  if (next < fab->now)
    next = fab->now;
  if (next == flow->next_tx_s)
    return;
  int earlier = next < flow->next_tx_s;
  flow->next_tx_s = next;
  if (earlier)
    fabric_port_kick(fab, rf->line_port);
}

static void arm(struct fabric *fab, struct roce_flow *rf, int kind, double when)
{
  fab_timer_id id = flow_timer(fab, rf, kind, when);
  if (kind == ROCE_TIMER_ALPHA)
    rf->alpha_timer = id;
  else
    rf->rate_timer = id;
}

static void rp_cnp(struct fabric *fab, struct roce_flow *rf)
{
  if (!roce_rp_cut(&roce__state(fab)->cfg.dcqcn, &roce__state(fab)->stats.dcqcn, rf, fab->now))
    return;
  repace(fab, rf);
  if (!rf->alpha_armed) {
    rf->alpha_armed = 1;
    arm(fab, rf, ROCE_TIMER_ALPHA, rf->alpha_due_s);
  }
  if (!rf->rate_armed) {
    rf->rate_armed = 1;
    arm(fab, rf, ROCE_TIMER_RATE, rf->rate_due_s);
  }
  roce__trace_flow(fab, rf);
}

/* A transfer takes over its QP's reaction point (roce_rp.h) and its pending timers. */
static void qp_rp_take_over(struct fabric *fab, struct roce_flow *rf)
{
  struct roce_state *rs = roce__state(fab);
  if (!roce_qp_rp_restore(&rs->qp_rps, rf->flow->key, &rs->cfg.dcqcn, &rs->stats.dcqcn, rf, fab->now))
    return;
  if (rf->alpha_armed)
    arm(fab, rf, ROCE_TIMER_ALPHA, rf->alpha_due_s);
  if (rf->rate_armed)
    arm(fab, rf, ROCE_TIMER_RATE, rf->rate_due_s);
}

static void flow_timer_fired(struct fabric *fab, struct roce_flow *rf, int kind)
{
  struct roce_state *rs = roce__state(fab);
  const struct dcqcn_params *p = &rs->cfg.dcqcn;
  struct fab_flow *flow = rf->flow;
  switch (kind) {
  case ROCE_TIMER_CNP: rp_cnp(fab, rf); break;
  case ROCE_TIMER_NACK:
    if (gbn_tx_on_nack(&rf->tx, rf->nack_psn, rf->nack_sent_s, fab->now))
      fabric_flow_rewind(fab, flow, rf->nack_psn);
    break;
  case ROCE_TIMER_RTO: {
    /* The timeout is rto after the last progress, not a period from the flow's start (which
     * made the effective timeout anywhere in (rto, 2 rto]): an earlier event re-dates itself. */
    double due = rf->progress_s + rs->cfg.rto_s;
    if (fab->now < due - 1e-15) {
      rto_arm(fab, rf, due);
      break;
    }
    if (rf->inflight == 0 && flow->injected > flow->delivered) {
      rs->stats.gbn.timeouts++;
      rf->tx.rewind_s = fab->now;
      rf->tx.rewind_psn = rf->rx.expected_psn;
      rf->rx.nack_sent = 0;
      rf->progress_s = fab->now;
      fabric_flow_rewind(fab, flow, rf->rx.expected_psn);
    }
    /* Nothing outstanding, or packets still in the network (held by PFC): look again one rto
     * later, or rto after the progress that happens meanwhile. */
    rto_arm(fab, rf, fab->now + rs->cfg.rto_s);
    break;
  }
  case ROCE_TIMER_ALPHA:
    if (fab->now < rf->alpha_due_s - 1e-15) {
      arm(fab, rf, ROCE_TIMER_ALPHA, rf->alpha_due_s);
      break;
    }
    roce_rp_alpha_expiry(p, rf);
    if (rf->alpha_armed)
      arm(fab, rf, ROCE_TIMER_ALPHA, rf->alpha_due_s);
    break;
  case ROCE_TIMER_RATE:
    if (fab->now < rf->rate_due_s - 1e-15) {
      arm(fab, rf, ROCE_TIMER_RATE, rf->rate_due_s);
      break;
    }
    if (roce_rp_rate_expiry(p, &rs->stats.dcqcn, rf)) {
      repace(fab, rf);
      roce__trace_flow(fab, rf);
    }
    if (rf->rate_armed)
      arm(fab, rf, ROCE_TIMER_RATE, rf->rate_due_s);
    break;
  default: sgf_fatal(__FILE__, __LINE__, "roce: unknown event kind %d", (int)kind);
  }
}

static void roce_on_timer(struct fabric *fab, int kind, void *ptr, uint32_t arg)
{
  if (kind == ROCE_TIMER_FLUID) {
    roce_fluid_step(fab);
  } else if (kind == ROCE_TIMER_SPREAD) {
    /* A pause starts or ends: the caps of the link's component (its flows and every flow sharing
     * a port with them) are recomputed, which runs the pass over them before the filling; an end
     * with no victim to free only stops the link's paused time. */
    int count, idle;
    struct roce_state *rs = roce__state(fab);
    struct fab_flow *const *flows = roce_spread_timer_flows(fab, &rs->spread, arg, &count, &idle);
    if (idle)
      roce_est_link_idle(fab, &rs->est, (int)arg);
    fabric_flow_caps_changed_for(fab, flows, (size_t)count);
  } else if (kind == ROCE_TIMER_HELD_AGE) {
    roce_held_aged(fab, &roce__state(fab)->held, (int)arg);
  } else if (kind >= ROCE_TIMER_CNP) {
    struct roce_flow *rf = ptr;
    if (rf->gen != arg || rf->flow == NULL || rf->flow->state != FLOW_ACTIVE)
      return;
    flow_timer_fired(fab, rf, kind);
  } else {
    roce__port_timer(fab, ptr, kind, (int)arg);
  }
}

static void roce_before_fill(struct fabric *fab) { roce__flow_rates(fab, ROCE_BEFORE_FILL); }
static void roce_on_rates(struct fabric *fab) { roce__flow_rates(fab, ROCE_AFTER_FILL); }

static double paused_total(const struct fabric *fab)
{
  const struct roce_state *rs = roce__state(fab);
  double total = rs->stats.paused_s;
  for (int p = 0; p < fab->topo->n_ports; p++)
    for (int q = 0; q < FAB_MAX_QUEUES; q++)
      if (rs->ports[p].is_paused[q])
        total += fab->now - rs->ports[p].pause_start_s[q];
  return total;
}

static void roce_counters(struct fabric *fab, struct fab_counters *out)
{
  struct roce_state *rs = roce__state(fab);
  const struct roce_stats *s = &rs->stats;
  /* Frames, marks, CNPs, drops and go-back-N exist only at packet fidelity; the fluid model
   * (roce_dcqcn_fluid.c) estimates marks and CNPs (the _est counters) and, with its default reaction
   * point (roce/fluid-rp:machine), runs the packet model's DCQCN rate machine, whose cuts count. */
  int packet = fab->fidelity == FAB_FIDELITY_PACKET;
  fabric_counter_count(out, "pfc_pause_frames", packet, s->pfc.pause_sent);
  fabric_counter_count(out, "pfc_resume_frames", packet, s->pfc.resume_sent);
  fabric_counter_real(out, "pfc_paused_s", packet, paused_total(fab));
  fabric_counter_count(out, "ecn_marks", packet, s->ecn.marked_prob + s->ecn.marked_forced);
  fabric_counter_count(out, "cnps", packet, s->cnps_sent);
  int fluid_machine = rs->cfg.fluid && rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF && !rs->cfg.fluid_ode;
  fabric_counter_count(out, "dcqcn_rate_cuts", packet || fluid_machine, s->dcqcn.cuts);
  fabric_counter_count(out, "drops_buffer", packet, fab->stats.drops_by[FAB_DROP_BUFFER]);
  fabric_counter_count(out, "drops_random", packet, fab->stats.drops_by[FAB_DROP_RANDOM]);
  fabric_counter_count(out, "drops_headroom_overflow", packet, s->pfc.headroom_overflow);
  fabric_counter_real(out, "retransmitted_bytes", packet, s->gbn.retransmitted_B);
  fabric_counter_count(out, "gbn_nacks", packet, s->gbn.nacks);
  fabric_counter_count(out, "gbn_timeouts", packet, s->gbn.timeouts);
  /* flow fidelity: the timeouts its transfers waited (roce/flow-timeouts; with mean, fractional)
   * and what they sent again, by their goodput fractions and before their timeouts fired
   * (roce_flow.c); both from random loss only, so null without PFC, whose buffer drops flow
   * fidelity does not model (a 0 there would be no estimate) */
  int loss_est = !packet && rs->cfg.pfc.enabled;
  fabric_counter_real(out, "gbn_timeouts_est", loss_est && rs->cfg.flow_timeouts != ROCE_TIMEOUTS_OFF, s->timeouts_est);
  fabric_counter_real(out, "retransmitted_bytes_est", loss_est, fab->stats.flow_wire_extra_B);
  fabric_counter_count(out, "gbn_discarded_packets", packet, s->gbn.discarded);
  fabric_counter_real(out, "roce_peak_buffer_bytes", packet, sg_roce_get_peak_buffer(fab));
  if (!packet) {
    /* Estimates: the fluid model's where it runs (DCQCN on, roce/fluid on); otherwise, with FIFO
     * shares on, those of roce_flow_est.c (marks where DCQCN cannot hold a port, their CNPs and
     * cuts, the pauses of spreading). With neither, flow fidelity does not model marks or CNPs,
     * and null says so rather than a 0. */
    int dcqcn = rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF, fluid = rs->cfg.fluid && dcqcn;
    int fifo_est = !fluid && rs->cfg.flow_fifo;
    if (fifo_est)
      roce_est_flush(fab, &rs->est);
    double marks = fluid ? rs->fluid.stats.marks_est : rs->cfg.ecn_enabled ? rs->est.marks : 0;
    double cnps = fluid ? rs->fluid.stats.cnps_est : rs->cfg.ecn_enabled && dcqcn ? rs->est.cnps : 0;
    fabric_counter_real(out, "ecn_marks_est", fluid || fifo_est, round(marks));
    fabric_counter_real(out, "cnps_est", fluid || fifo_est, round(cnps));
    fabric_counter_real(out, "dcqcn_rate_cuts_est", fifo_est, round(rs->cfg.ecn_enabled && dcqcn ? rs->est.cuts : 0));
    int spreading = fifo_est && rs->cfg.flow_spread;
    fabric_counter_real(out, "pfc_paused_s_est", spreading || (fifo_est && !rs->cfg.pfc.enabled),
                        rs->cfg.pfc.enabled ? rs->est.paused_s : 0);
    /* Port time held by DCQCN: with DCQCN and ECN on only (with either off nothing holds a
     * port). Its marks, CNPs and pauses are estimated where the packet model measured the port
     * (roce_held_port.h). */
    int held = fifo_est && dcqcn && rs->cfg.ecn_enabled;
    fabric_counter_real(out, "dcqcn_held_s_est", held, held ? roce_est_held_total(fab, &rs->est, NULL) : 0);
    /* the part at ports the packet model did not measure: their marks and CNPs are missing */
    fabric_counter_real(out, "dcqcn_held_unestimated_s_est", held,
                        held ? roce_est_held_total(fab, &rs->est, rs->cfg.flow_held ? rs->held.ever_held : NULL) : 0);
    fabric_counter_count(out, "dcqcn_held_measures", held, rs->held.measures);
    fabric_counter_count(out, "dcqcn_held_phases_run", held, rs->held.phases_run);
    fabric_counter_real(out, "fluid_peak_queue_bytes", fluid, rs->fluid.stats.peak_queue_B);
    fabric_counter_count(out, "fluid_transients", fluid, rs->fluid.stats.transients);
    fabric_counter_count(out, "fluid_steps", fluid, rs->fluid.stats.steps);
    if (fifo_est) {
      fabric_counter_port_map(out, "ecn_marks_est_per_port", rs->cfg.ecn_enabled ? rs->est.port_marks : NULL, 1);
      fabric_counter_port_map(out, "pfc_paused_s_est_per_port", rs->cfg.pfc.enabled ? rs->est.port_paused_s : NULL, 0);
      fabric_counter_port_map(out, "dcqcn_held_s_est_per_port", held ? rs->est.port_held_s : NULL, 0);
    }
  }
  /* The engine's per-port peaks, fabric links only: copied into the model's state, which outlives
   * the writing of the counters. */
  const struct topo *t = fab->topo;
  if (rs->peak_queue == NULL)
    rs->peak_queue = sgf_xcalloc((size_t)t->n_ports + 1, sizeof *rs->peak_queue);
  for (int p = 0; p < t->n_ports; p++)
    rs->peak_queue[p] = t->ports[p].is_nvlink ? 0 : fabric_port_view(fab, p)->peak_queued;
  fabric_counter_port_map(out, "peak_queue_per_port", rs->peak_queue, 0);
  /* The paused time of each port at packet fidelity, beside the flow estimate's map
   * (pfc_paused_s_est_per_port): where the pauses are, not only their sum. */
  if (packet && rs->cfg.pfc.enabled) {
    if (rs->port_paused == NULL)
      rs->port_paused = sgf_xcalloc((size_t)t->n_ports + 1, sizeof *rs->port_paused);
    for (int p = 0; p < t->n_ports; p++)
      rs->port_paused[p] = sg_roce_get_port_paused_time(fab, p);
    fabric_counter_port_map(out, "pfc_paused_s_per_port", rs->port_paused, 0);
  }
}

/* The rows of a series under header, with its first columns (2 or 3 values after the time). */
static int write_rows(FILE *f, const char *header, const struct roce_series *s, int values)
{
  fprintf(f, "%s\n", header);
  for (size_t i = 0; i < s->n; i++) {
    fprintf(f, "%.9g,%.9g,%.9g", s->rows[i].t, s->rows[i].a, s->rows[i].b);
    if (values > 2)
      fprintf(f, ",%.9g", s->rows[i].c);
    fprintf(f, "\n");
  }
  int failed = ferror(f) != 0;
  return fclose(f) != 0 || failed ? -1 : 0;
}

static int roce_write_series(struct fabric *fab, FILE *(*open)(void *ctx, const char *name), void *ctx)
{
  const struct roce_state *rs = roce__state(fab);
  int failed = 0;
  FILE *f;
  if (rs->cfg.trace_flow >= 0 && (f = open(ctx, "roce_flow_rate.csv")) != NULL)
    failed |= write_rows(f, "time_s,rc_Bps,rt_Bps,alpha", &rs->flow_series, 3);
  /* At flow fidelity the fluid queue while the port is in transient, and whether PFC holds its
   * senders; no switch buffer (the fluid model has the port's queue only). */
  if (rs->cfg.trace_port >= 0 && (f = open(ctx, "roce_port_queue.csv")) != NULL)
    failed |= fab->fidelity == FAB_FIDELITY_PACKET
                  ? write_rows(f, "time_s,queue_bytes,paused,switch_buffer_bytes", &rs->port_series, 3)
                  : write_rows(f, "time_s,fluid_queue_bytes,pfc_held", &rs->port_series, 2);
  return failed ? -1 : 0;
}

/* Failures: BFD detects a lost link after its multiplier of missed intervals, then the routing
 * (BGP, the ECMP groups) converges around it. */
static double roce_recovery_delay(struct fabric *fab, int up)
{
  (void)up;
  return fab_param_get(fab->params, "roce/bfd-interval") * fab_param_get(fab->params, "roce/bfd-multiplier") +
         fab_param_get(fab->params, "roce/route-update");
}

static const struct fab_model g_roce_model = {
  .name = "roce",
  .state_size = sizeof(struct roce_state),
  .lifecycle = { .init = roce_init,
                 .fini = roce_fini,
                 .flow_start = roce_flow_start,
                 .flow_done = roce_flow_done,
                 .recovery_delay = roce_recovery_delay,
                 .counters = roce_counters,
                 .series = roce_write_series },
  .packet = { .may_send = roce_may_send,
              .on_transmit = roce_on_transmit,
              .on_tx_done = roce_on_tx_done,
              .on_arrive = roce_on_arrive,
              .on_injected = roce_on_injected,
              .on_packet_lost = roce_on_packet_lost },
  .flow = { .before_fill = roce_before_fill, .on_rates = roce_on_rates, .rings_in_steps = roce_rings_in_steps },
  .timers = { .on_timer = roce_on_timer },
};

const struct fab_model *roce_model(void) { return &g_roce_model; }

void sg_roce_plugin_init(void)
{
  fabric_plugin_select(&g_roce_model, "sg_roce_plugin_init");
  fabric_register_params();
  roce_register_params();
}

uint64_t sg_roce_get_pause_frames(const struct fabric *fab) { return roce__state(fab)->stats.pfc.pause_sent; }
double sg_roce_get_paused_time(const struct fabric *fab) { return paused_total(fab); }
uint64_t sg_roce_get_ecn_marks(const struct fabric *fab)
{
  return roce__state(fab)->stats.ecn.marked_prob + roce__state(fab)->stats.ecn.marked_forced;
}
uint64_t sg_roce_get_cnps(const struct fabric *fab) { return roce__state(fab)->stats.cnps_sent; }
double sg_roce_get_retransmitted_bytes(const struct fabric *fab)
{
  return fab->fidelity == FAB_FIDELITY_PACKET ? roce__state(fab)->stats.gbn.retransmitted_B
                                              : fab->stats.flow_wire_extra_B;
}
uint64_t sg_roce_get_buffer_drops(const struct fabric *fab) { return fab->stats.drops_by[FAB_DROP_BUFFER]; }
uint64_t sg_roce_get_random_drops(const struct fabric *fab) { return fab->stats.drops_by[FAB_DROP_RANDOM]; }
double sg_roce_get_timeouts(const struct fabric *fab)
{
  const struct roce_stats *s = &roce__state(fab)->stats;
  return fab->fidelity == FAB_FIDELITY_PACKET ? (double)s->gbn.timeouts : s->timeouts_est;
}

double sg_roce_get_buffer_used(const struct fabric *fab)
{
  const struct roce_state *rs = roce__state(fab);
  double used = 0;
  for (int n = 0; n < fab->topo->n_nodes; n++)
    used += rs->switches[n].used_B;
  return used;
}

double sg_roce_get_peak_buffer(const struct fabric *fab)
{
  const struct roce_state *rs = roce__state(fab);
  double peak = 0;
  for (int n = 0; n < fab->topo->n_nodes; n++)
    if (rs->switches[n].peak_B > peak)
      peak = rs->switches[n].peak_B;
  return peak;
}

double sg_roce_get_fluid_queue(const struct fabric *fab, int port) { return roce_fluid_queue(fab, port); }

double sg_roce_get_fluid_peak_queue(const struct fabric *fab) { return roce__state(fab)->fluid.stats.peak_queue_B; }

double sg_roce_get_port_paused_time(const struct fabric *fab, int port)
{
  if (fab->fidelity != FAB_FIDELITY_PACKET)
    return -1; /* no PAUSE frames at flow fidelity (its estimate: sg_roce_get_flow_estimates) */
  const struct roce_port *rp = &roce__state(fab)->ports[port];
  double total = rp->paused_s;
  for (int q = 0; q < FAB_MAX_QUEUES; q++)
    if (rp->is_paused[q])
      total += fab->now - rp->pause_start_s[q];
  return total;
}

uint64_t sg_roce_get_port_pauses_received(const struct fabric *fab, int port)
{
  return roce__state(fab)->ports[port].pauses_received;
}
int sg_roce_get_flow_estimates(struct fabric *fab, double *marks, double *cnps, double *cuts, double *paused_s)
{
  struct roce_state *rs = roce__state(fab);
  if (fab->fidelity != FAB_FIDELITY_FLOW || !rs->cfg.flow_fifo ||
      (rs->cfg.fluid && rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF))
    return -1;
  roce_est_flush(fab, &rs->est);
  *marks = rs->est.marks, *cnps = rs->est.cnps, *cuts = rs->est.cuts, *paused_s = rs->est.paused_s;
  return 0;
}

uint64_t sg_roce_get_flow_pass_flows(const struct fabric *fab) { return roce__state(fab)->stats.flow_pass_flows; }

uint64_t sg_roce_get_held_measures(const struct fabric *fab, uint64_t *phases_run)
{
  const struct roce_held *h = &roce__state(fab)->held;
  if (phases_run != NULL)
    *phases_run = h->phases_run;
  return h->measures;
}

double sg_roce_get_ecn_marks_est(const struct fabric *fab) { return roce__state(fab)->fluid.stats.marks_est; }
double sg_roce_get_cnps_est(const struct fabric *fab) { return roce__state(fab)->fluid.stats.cnps_est; }

int sg_roce_get_flow_rate(const struct fab_flow *flow, double *rc_Bps, double *rt_Bps, double *alpha)
{
  const struct roce_flow *rf = flow->model_data;
  if (rf == NULL || rf->line_port < 0)
    return -1;
  *rc_Bps = rf->cc.rc_Bps;
  *rt_Bps = rf->cc.rt_Bps;
  *alpha = rf->cc.alpha;
  return 0;
}
