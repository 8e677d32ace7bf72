/* RoCEv2 at flow fidelity: the rate caps of the flow engine's flows, from what the fluid flows
 * keep of the packet model. Each mechanism is in a file of its own; this one composes their
 * caps (the lowest binds) and applies them.
 *
 *  - ECMP: the same QP keys, hence the same paths, as packet fidelity (roce_model.c flow_start);
 *  - DCQCN: where it holds a port, its steady state, the max-min fair share of the flow engine
 *    (the CoNEXT'16 fixed point keeps the bottleneck busy: sum RC = C); where it cannot (its
 *    senders' floor rates, roce_dcqcn_floor.c, still saturate the port), PFC governs: FIFO shares
 *    and spreading below. With the fluid model on (roce_dcqcn_fluid.c), the CoNEXT'16 fluid model
 *    caps the flows of a bottleneck in transient instead;
 *  - FIFO shares (roce_fifo.c; unless the fluid model runs): senders transmit at line rate (with
 *    DCQCN, at their floor rate) and a saturated switch egress serves its flows in proportion to
 *    their arrival rates;
 *  - PFC pause spreading (roce_spread.c; PFC on, unless the fluid model runs): the victims of
 *    the links a congested egress pauses;
 *  - loss (roce_loss.c; applied here): go-back-N delivers (1 - P) / (1 + P W) of what a flow
 *    sends (its cap above, else the line rate), P the path loss probability per packet and W its
 *    packets in flight (a round trip's and, with FIFO shares, those in the standing queues of the
 *    PFC-governed egresses it crosses): its goodput fraction, the rest resent, which loads its
 *    links like the rest (fabric_flow_set_goodput); and the retransmission timeouts, waited
 *    after it drains. */
#include "roce_internal.h"

#include <math.h>
#include <stdlib.h>

#include "roce_dcqcn_fluid.h"
#include "roce_fifo.h"
#include "roce_loss.h"
#include "roce_spread.h"
#include "rng.h"
#include "check.h"

static double line_rate(const struct fabric *fab, const struct fab_flow *f)
{
  return fab->topo->ports[f->path[0]].rate_Bps;
}

/* Room for n flows in the list of the flows whose cap changed. */
static void reserve_changed(struct roce_state *rs, size_t n)
{
  if (n <= rs->fl_changed_cap)
    return;
  rs->fl_changed_cap = 2 * n;
  rs->fl_changed = sgf_xrealloc(rs->fl_changed, rs->fl_changed_cap * sizeof *rs->fl_changed);
}

/* A flow's path loss per packet (roce_loss.h; 0: none), found at its first pass, when it also
 * draws its retransmission timeouts and adds their wait to the delay it completes with after
 * draining. A reroute (a link failure) keeps it: routes are minimal up-down paths, all of one
 * length between two GPUs. An NVLink transfer (no NIC) loses nothing, as at packet fidelity; a
 * transfer through a NIC crosses fabric links only (a PXN relay is two transfers). */
static double loss_path(struct fabric *fab, struct roce_state *rs, struct fab_flow *f)
{
  struct roce_flow *rf = f->model_data;
  if (rf == NULL || rf->line_port < 0)
    return 0;
  if (rf->fl_loss_path >= 0)
    return rf->fl_loss_path;
  double p_path = roce_loss_path_probability(rs->cfg.drop_rate, f->hops);
  rf->fl_loss_path = p_path;
  if (p_path > 0 && rs->cfg.flow_timeouts != ROCE_TIMEOUTS_OFF) {
    double packets = ceil(f->bytes / fab->mtu), messages = f->message_B > 0 ? ceil(f->bytes / f->message_B) : 1;
    double mean = roce_loss_expected_timeouts(p_path, packets, messages);
    /* its own stream: the run's seed and the transfer's QP (a part of a transfer has its own) */
    uint64_t stream = fab_rng_mix64(fab->seed ^ fab_rng_mix64(f->id ^ fab_rng_mix64(f->key)));
    double timeouts = rs->cfg.flow_timeouts == ROCE_TIMEOUTS_MEAN ? mean : roce_loss_draw_timeouts(mean, stream);
    rs->stats.timeouts_est += timeouts;
    f->extra_latency_s += timeouts * (rs->cfg.rto_s + 2 * fabric_path_tail_latency(fab, f, 0));
    /* what the sender sends in vain before those timers fire, at most an rto at the line rate
     * (counted, not charged to the links: the wait holds none) */
    double message = f->message_B > 0 ? f->message_B : f->bytes;
    fabric_flow_count_wire_extra(fab, f,
                                 timeouts *
                                     roce_loss_stall_bytes(p_path, packets, messages, message,
                                                           rs->cfg.rto_s * fabric_port_payload_rate(fab, f->path[0])));
  }
  return p_path;
}

/* Go-back-N's goodput over what a flow sends at rate_Bps, (1 - P) / (1 + P W): W its bytes in
 * flight, a round trip's and, with FIFO shares, those in the standing queues of the PFC-governed
 * egresses on its path (roce_loss_window), which a loss sends again too. */
static double loss_factor(const struct fabric *fab, const struct roce_state *rs, const struct fab_flow *f,
                          double p_path, double rate_Bps, int queues)
{
  double rtt = 2 * fabric_path_tail_latency(fab, f, 0);
  double window = queues ? roce_loss_window(fab, &rs->loss, f, rate_Bps, rtt) : ceil(rate_Bps * rtt / fab->mtu) + 1;
  return roce_loss_goodput_factor(p_path, window);
}

/* Under DCQCN a sender on a congested path injects at its floor rate (roce_dcqcn_floor.h), found
 * once per flow: its NIC's line rate and its CNPs' feedback delay (the packet model's). */
static void set_injection(struct fabric *fab, struct roce_state *rs, struct fab_flow *f)
{
  struct roce_flow *rf = f->model_data;
  if (rf == NULL || rf->fifo.inject >= 0)
    return; /* found already, or 1: DCQCN off */
  if (rf->line_port < 0) {
    rf->fifo.inject = 1; /* NVLink: no DCQCN */
    return;
  }
  rf->fifo.inject = roce_dcqcn_floor_cached(&rs->floors, &rs->cfg.dcqcn, line_rate(fab, f), fab->mtu,
                                            fab->mtu + fab->frame_overhead_B, rs->cfg.cnp_interval_s,
                                            fabric_path_tail_latency(fab, f, 0));
}

void roce__flow_rates(struct fabric *fab, enum roce_flow_when when)
{
  struct roce_state *rs = roce__state(fab);
  size_t n, n_recomputed;
  /* The fluid DCQCN model, when on, integrates the transients with its own FIFO service and PFC
   * bound; otherwise (DCQCN off, or on with the fluid model off, the nic preset's default) the
   * FIFO shares and pause spreading apply, with DCQCN on to the senders' floor rates: they act
   * only at the ports DCQCN cannot hold (roce_dcqcn_floor.h; docs/roce.md, "Flow fidelity"). */
  int dcqcn = rs->cfg.dcqcn_preset != ROCE_DCQCN_OFF;
  int fluid = dcqcn && rs->cfg.fluid && fab->fidelity == FAB_FIDELITY_FLOW;
  int fifo = !fluid && rs->cfg.flow_fifo;
  int spreading_on = fifo && rs->cfg.pfc.enabled && rs->cfg.flow_spread;
  struct fab_flow **recomputed = fabric_recomputed_flows(fab, &n_recomputed);
  struct fab_flow **active = fabric_active_flows(fab, &n);
  /* Without the fluid model every cap depends only on the flows of a component (FIFO shares,
   * spreading, loss), so they are set before its recomputation fills it; after, only the
   * estimates, which follow the rates, remain. The fluid model integrates the rates the filling
   * gives, so it sets its caps after (and they are applied by a second recomputation). */
  if (when == ROCE_AFTER_FILL && !fluid) {
    if (fifo)
      for (size_t i = 0; i < n_recomputed; i++)
        roce_est_flow_update(fab, &rs->est, recomputed[i]);
    if (fifo && dcqcn && rs->cfg.ecn_enabled)
      roce_est_held(fab, &rs->est, rs->held.last_load_Bps, recomputed, n_recomputed);
    return;
  }
  if (when == ROCE_BEFORE_FILL && fluid)
    return;
  int before_fill = when == ROCE_BEFORE_FILL;
  /* Without FIFO shares, spreading or the fluid model the only cap is the loss goodput, a
   * property of each flow: the flows about to be recomputed are enough. The fluid model looks at
   * every active flow; FIFO shares and pause spreading only at the components recomputed, the
   * others keep theirs (a pause's onset recomputes its link's component: roce_spread.h). */
  int per_flow = !fifo && !fluid && !spreading_on;
  if (fifo && dcqcn)
    for (size_t i = 0; i < n_recomputed; i++)
      set_injection(fab, rs, recomputed[i]);
  if (fifo)
    roce_fifo_update(fab, &rs->fifo); /* the estimates follow after the filling (ROCE_AFTER_FILL) */
  /* The ports DCQCN holds, from the FIFO pass's offered loads and marks: their capacity is the
   * utilisation the packet model keeps there (with roce/flow-held-ports off only the loads, which
   * the held-time estimate uses too). Like the FIFO shares they depend on the component's flows
   * alone, so a recomputation that followed cap changes only keeps them. */
  int held_ports = fifo && dcqcn && rs->cfg.ecn_enabled && fab->fidelity == FAB_FIDELITY_FLOW;
  if (held_ports && fabric_recompute_followed_flow_change(fab))
    roce_held_update(fab, &rs->held, recomputed, n_recomputed, rs->cfg.flow_held);
  /* Pause spreading looks at the components recomputed (a pause and its victims share the
   * paused link, hence a component), and only if one of their flows crosses a saturated egress
   * or one of their links was paused: otherwise a pass finds nothing and changes no cap. */
  size_t n_entered = 0; /* flows that start now: counted on their links, then their wait below */
  if (spreading_on)
    for (size_t i = 0; i < n_recomputed; i++) {
      struct roce_flow *rf = recomputed[i]->model_data;
      if (rf != NULL && !rf->spread_entered) {
        rf->spread_entered = ROCE_SPREAD_ENTERED_NOW;
        roce_spread_flow_enter(&rs->spread, recomputed[i]);
        n_entered++;
      }
    }
  int spreading = spreading_on && roce_spread_needed(&rs->spread, recomputed, n_recomputed);
  struct fab_flow **flows = fluid ? active : recomputed;
  if (!fluid)
    n = n_recomputed;
  rs->stats.flow_pass_flows += n;
  if (fluid) {
    if (!roce_fluid_flows_changed(fab))
      return; /* a cap moved (a fluid step): the loss caps cannot have changed */
    roce_fluid_detect(fab, flows, n);
  }
  reserve_changed(rs, n);
  if (spreading)
    roce_spread_compute(fab, &rs->spread, flows, n);
  int lossy = rs->cfg.drop_rate > 0;
  if (lossy && fifo)
    roce_loss_queues(fab, &rs->loss, flows, n);
  /* the held ports' unequal shares (roce/flow-held-shares:spread), by the flows' ages */
  int held_shares = held_ports && rs->cfg.flow_held_spread;
  if (held_shares)
    roce_held_rank(fab, &rs->held, flows, n);
  size_t n_changed = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    double p_path = lossy ? loss_path(fab, rs, f) : 0;
    double cap = 0; /* none */
    int goodput_moved = 0;
    if (fluid) { /* the fluid rates are what the senders send, go-back-N delivers a part of it */
      if (p_path > 0)
        goodput_moved = fabric_flow_set_goodput(fab, f, loss_factor(fab, rs, f, p_path, line_rate(fab, f), 0));
      cap = roce_fluid_cap(fab, f, 0);
    } else {
      double share = fifo ? roce_fifo_of(f)->share_Bps : 0;
      if (fifo && share < line_rate(fab, f) * (1 - 1e-9))
        cap = share;
      if (spreading)
        cap = roce_spread_cap(fab, &rs->spread, f, cap);
      double held_cap = held_shares ? roce_held_flow_cap(fab, &rs->held, f) : 0;
      if (held_cap > 0 && (cap == 0 || held_cap < cap))
        cap = held_cap;
      /* what a flow sends at its share (or at line rate), go-back-N delivers that part of; the
       * rest, sent again, loads its links too (the engine shares out what they carry) */
      if (p_path > 0) {
        double sent = cap > 0 ? cap : line_rate(fab, f);
        double goodput = loss_factor(fab, rs, f, p_path, sent, fifo);
        goodput_moved = fabric_flow_set_goodput(fab, f, goodput);
        if (cap > 0)
          cap = sent * goodput;
      }
    }
    if (goodput_moved || fabs(cap - f->rate_cap_Bps) > 1e-9 * (cap + f->rate_cap_Bps)) {
      if (before_fill) {
        f->rate_cap_Bps = cap; /* the filling about to run applies it */
      } else if (per_flow) {
        fabric_flow_set_cap(fab, f, cap);
      } else {
        f->rate_cap_Bps = cap;
        rs->fl_changed[n_changed++] = f;
      }
    }
  }
  /* the flows that started now, behind the queues standing on their paths (most passes have none:
   * a pause's onset or end, or a flow that drained, recomputes without a new flow) */
  for (size_t i = 0; n_entered > 0 && i < n; i++) {
    struct roce_flow *rf = flows[i]->model_data;
    if (rf == NULL || rf->spread_entered != ROCE_SPREAD_ENTERED_NOW)
      continue;
    rf->spread_entered = ROCE_SPREAD_ENTERED;
    n_entered--; /* the last one found ends the loop */
    if (spreading && rs->cfg.flow_queue_wait)
      flows[i]->extra_latency_s += roce_spread_queue_wait(
          fab, &rs->spread, flows[i],
          flows[i]->rate_cap_Bps > 0 ? flows[i]->rate_cap_Bps : fabric_port_payload_rate(fab, flows[i]->path[0]));
  }
  if (spreading) {
    roce_est_pauses(fab, &rs->est, &rs->spread, flows, n);
    roce_spread_clear(fab, &rs->spread);
  }
  if (lossy && fifo)
    roce_loss_clear(fab, &rs->loss);
  fabric_flow_caps_changed_for(fab, rs->fl_changed, n_changed); /* their components only */
}
