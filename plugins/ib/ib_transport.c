/* InfiniBand RC transport: recovery of the packets a failed link lost (packet fidelity,
 * --failures; failure.h).
 *
 * The fabric is lossless (credits, IBTA Vol.1 7.9): without a failure schedule nothing here runs
 * and every packet reaches its HCA once. A failed link loses packets, and the reliable connection
 * recovers them as the requester of IBTA Vol.1 9.7 does:
 *
 *  - the responder acknowledges the packets it received, cumulatively: its acknowledged PSN is
 *    the first it has not received. Packets after a gap are kept (adaptive routing delivers out
 *    of order, and ConnectX HCAs place them), a packet received twice is discarded;
 *  - the requester's transport timer (IBTA Vol.1 9.7.6.1.3) fires when no acknowledgement advanced
 *    for the local ACK timeout, 4.096 us x 2^ib/transport-timeout (the QP attribute "Local ACK
 *    Timeout", IBTA Vol.1 11.2.4.2; NCCL sets it from NCCL_IB_TIMEOUT); it then goes back to the
 *    first unacknowledged PSN and sends everything from there again (go-back-N);
 *  - after ib/transport-retry timeouts in a row without progress (the QP's Retry Count, 3 bits,
 *    NCCL_IB_RETRY_CNT = 7) the QP goes to the error state: NCCL reports the completion error and
 *    the job fails (fabric_failures_fail_job).
 *
 * The timer (a model timer, IB_TIMER_QP_TIMEOUT) is armed for a QP when one of its packets is
 * lost (fab_model.packet.on_packet_lost): a QP that loses nothing is acknowledged within
 * microseconds, far inside a timeout of 1 s, so its timer could never fire; this saves an event
 * per QP and per timeout. It is cancelled when the QP's transfer ends. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ib_internal.h"
#include "check.h"
#include "failure.h"

struct ib_qp {
  struct fab_flow *flow;  /* NULL once its flow ended */
  struct ib_qp *all_next; /* every QP of the run (ib_state.qps) */
  uint64_t *seen;         /* responder: the PSNs received, one bit each */
  uint32_t n_psn;
  uint32_t acked_psn;    /* responder: first PSN not received (all before are acknowledged) */
  uint32_t next_new_psn; /* requester: first PSN never sent */
  uint8_t gen;           /* stamped in its packets' flags: a copy still in the network after its flow
                          * ended and the flow's record was reused is recognised */
  fab_timer_id timer;    /* requester: its transport timer (IB_TIMER_QP_TIMEOUT), 0: none */
  int retries;           /* timeouts in a row without progress */
  double progress_s;     /* requester: the last acknowledgement that advanced, or the first packet
                          * sent with none outstanding */
};

/* The QP of a flow, when the transport is modelled (failures at packet fidelity). */
static struct ib_qp *qp_of(const struct fabric *fab, const struct fab_flow *flow)
{
  if (fab->failures == NULL || fab->fidelity != FAB_FIDELITY_PACKET)
    return NULL;
  struct ib_qp *qp = flow->model_data;
  return qp != NULL && qp->flow == flow ? qp : NULL;
}

void ib__qp_start(struct fabric *fab, struct fab_flow *flow)
{
  struct ib_state *st = ib__state(fab);
  if (fab->failures == NULL || fab->fidelity != FAB_FIDELITY_PACKET || flow->src_gpu == flow->dst_gpu ||
      flow->fixed_path)
    return;
  struct ib_qp *qp = sgf_xcalloc(1, sizeof *qp);
  qp->flow = flow;
  qp->n_psn = (uint32_t)((flow->bytes + st->p.mtu_bytes - 1) / st->p.mtu_bytes);
  qp->seen = sgf_xcalloc((size_t)qp->n_psn / 64 + 1, sizeof *qp->seen);
  qp->gen = (uint8_t)(1 + st->qp_gen++ % 255); /* never 0: the flags of a packet without a QP */
  qp->progress_s = fab->now;
  qp->all_next = st->qps;
  st->qps = qp;
  flow->model_data = qp;
}

void ib__qp_done(struct fabric *fab, struct fab_flow *flow)
{
  struct ib_qp *qp = qp_of(fab, flow);
  if (qp == NULL)
    return;
  free(qp->seen);
  qp->seen = NULL;
  qp->flow = NULL;
  fabric_timer_cancel(fab, qp->timer); /* nothing left to time */
  qp->timer = 0;
  flow->model_data = NULL;
}

void ib__qp_free_all(struct ib_state *st)
{
  while (st->qps != NULL) {
    struct ib_qp *next = st->qps->all_next;
    free(st->qps->seen);
    free(st->qps);
    st->qps = next;
  }
}

static double acked_bytes(const struct ib_state *st, const struct ib_qp *qp)
{
  double b = (double)qp->acked_psn * st->p.mtu_bytes;
  return b < qp->flow->bytes ? b : qp->flow->bytes;
}

static void timer_arm(struct fabric *fab, struct ib_qp *qp, double when)
{
  qp->timer = fabric_timer_arm(fab, when > fab->now ? when : fab->now, IB_TIMER_QP_TIMEOUT, qp, 0);
}

void ib__on_injected(struct fabric *fab, struct fab_flow *flow, struct fab_packet *pkt)
{
  struct ib_state *st = ib__state(fab);
  struct ib_qp *qp = qp_of(fab, flow);
  if (qp == NULL)
    return;
  pkt->flags = qp->gen;
  /* The first packet outstanding after none was starts the transport timer (IBTA Vol.1
   * 9.7.6.1.3), a retransmission restarts it. */
  if (flow->injected - pkt->bytes <= acked_bytes(st, qp))
    qp->progress_s = fab->now;
  if (pkt->seq < qp->next_new_psn) {
    st->stats.transport_retransmitted_B += pkt->bytes;
    fabric_failures_retransmitted(fab, flow, pkt->bytes);
  } else {
    qp->next_new_psn = pkt->seq + 1;
  }
}

void ib__on_deliver(struct fabric *fab, struct fab_packet *pkt)
{
  struct fab_flow *flow = pkt->flow;
  if (fab->failures == NULL || fab->fidelity != FAB_FIDELITY_PACKET) {
    flow->delivered += pkt->bytes; /* lossless: every packet arrives once */
    return;
  }
  struct ib_qp *qp = qp_of(fab, flow);
  if (qp == NULL && flow->model_data == NULL && pkt->flags == 0 && flow->state == FLOW_ACTIVE) {
    flow->delivered += pkt->bytes; /* a transfer without a QP of its own */
    return;
  }
  if (qp == NULL || pkt->flags != qp->gen || pkt->seq >= qp->n_psn || flow->state != FLOW_ACTIVE)
    return; /* a copy of an ended transfer's packet */
  uint64_t bit = 1ULL << (pkt->seq % 64);
  if (qp->seen[pkt->seq / 64] & bit)
    return; /* received before: the responder discards the duplicate */
  qp->seen[pkt->seq / 64] |= bit;
  flow->delivered += pkt->bytes;
  if (pkt->seq != qp->acked_psn)
    return;
  while (qp->acked_psn < qp->n_psn && (qp->seen[qp->acked_psn / 64] & (1ULL << (qp->acked_psn % 64))))
    qp->acked_psn++;
  /* The acknowledgement reaches the requester one reverse path later: its timer counts from
   * there, and the retry count starts again. */
  qp->retries = 0;
  qp->progress_s = fab->now + fabric_path_tail_latency(fab, flow, 0);
}

void ib__on_packet_lost(struct fabric *fab, int port, struct fab_packet *pkt, int queued)
{
  (void)port;
  (void)queued;
  struct ib_state *st = ib__state(fab);
  struct ib_qp *qp = qp_of(fab, pkt->flow);
  if (qp == NULL || pkt->flags != qp->gen || fabric_timer_pending(fab, qp->timer))
    return;
  timer_arm(fab, qp, qp->progress_s + st->p.transport_timeout_s);
}

void ib__qp_timeout(struct fabric *fab, struct ib_qp *qp)
{
  struct ib_state *st = ib__state(fab);
  qp->timer = 0; /* it fired */
  struct fab_flow *flow = qp->flow;
  if (flow == NULL || flow->state != FLOW_ACTIVE)
    return;
  double due = qp->progress_s + st->p.transport_timeout_s;
  if (fab->now < due - 1e-15) {
    timer_arm(fab, qp, due); /* an acknowledgement advanced meanwhile */
    return;
  }
  /* Outstanding: packets sent and not acknowledged, or a NIC whose link is down (its sends go
   * nowhere and are never acknowledged either). */
  int outstanding = flow->injected > acked_bytes(st, qp) || (flow->hops > 0 && fabric_port_down(fab, flow->path[0]));
  if (!outstanding)
    return; /* nothing to time: the next loss starts the timer again */
  if (++qp->retries > st->p.transport_retries) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "job failed at %.6f s: transfer GPU %d -> GPU %d: InfiniBand RC transport retry count exceeded (%d "
             "timeouts of %g s without an acknowledgement since %.6f s; ib/transport-timeout %d, "
             "ib/transport-retry %d)",
             fab->now, flow->src_gpu, flow->dst_gpu, qp->retries, st->p.transport_timeout_s,
             fab->now - qp->retries * st->p.transport_timeout_s, fab_param_get_int(fab->params, "ib/transport-timeout"),
             st->p.transport_retries);
    fabric_failures_fail_job(fab, msg);
    return;
  }
  st->stats.transport_timeouts++;
  qp->progress_s = fab->now;
  fabric_flow_rewind(fab, flow, qp->acked_psn);
  timer_arm(fab, qp, fab->now + st->p.transport_timeout_s);
}
