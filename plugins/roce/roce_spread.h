/* RoCEv2 at flow fidelity: PFC pause spreading (roce_spread.c). A switch egress whose arrival
 * rate exceeds its capacity pauses the ingress links feeding it; a flow crossing such a link
 * toward another, idle egress (a victim) is throttled to the rate the paused link drains at. */
#ifndef SGFABRIC_ROCE_SPREAD_H
#define SGFABRIC_ROCE_SPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

struct roce_spread {
  /* within a pass (zero again after it) */
  double *arrival_Bps; /* per port: arrival rate (line rate at the NIC, FIFO shares downstream) */
  double *victim_cap;  /* per port u: rate of the paused link u (0: not paused) */
  double *backlog_B;   /* per port e: bytes a congested egress cannot drain */
  double *pg_growth;   /* per port u: growth of the ingress PG it feeds at a congested egress (B/s) */
  double *sw_growth;   /* per port u: growth of that egress's queue, the switch's shared use (B/s) */
  double *spread_on;   /* per port u: flows crossing it toward a congested egress e */
  double *spread_in;   /* per port e: the paused links feeding it */
  int32_t *spread_e;   /* per port u: the congested egress it feeds (-1: none) */
  /* kept across passes */
  double *onset_s;      /* per port u: date its pause starts in the current episode */
  uint64_t *onset_seen; /* per port u: the pass that last saw it paused (within a pass: seen) */
  uint8_t *was_paused;  /* per port u: the last pass that covered u found it paused */
  int32_t *port_flows;  /* per port: active flows entered (roce_spread_flow_enter) crossing it */
  uint64_t pass;        /* passes so far */
};

int roce_spread_init(struct roce_spread *s, int n_ports);
void roce_spread_fini(struct roce_spread *s);
/* The paused links and their rates for the given flows, whole components (every flow sharing a
 * port with one of them is among them: a pause and its victims share the paused link), from the
 * FIFO shares (roce_fifo.h) of each flow; arms a ROCE_TIMER_SPREAD (arg: the link) at the onset
 * of each new episode that starts later. A link's
 * episode goes on from the last pass that covered it (found it paused), until a pass finds it
 * not paused or its last flow leaves. */
void roce_spread_compute(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n);
/* A flow's cap given its cap without spreading (0: none): the rate of a paused link it crosses
 * toward an uncongested egress, if lower. */
double roce_spread_cap(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f, double cap);
/* End of the pass: the per-pass arrays back to zero on the flows' paths. */
void roce_spread_clear(struct roce_spread *s, struct fab_flow **flows, size_t n);
/* Whether a pass over these flows may find a pause: one of them crosses a saturated egress
 * (FIFO throttled), or one of its links was paused at the last pass that covered it. */
int roce_spread_needed(const struct roce_spread *s, struct fab_flow **flows, size_t n);
/* A flow takes part (once, before its first pass) and leaves (when it ends): a link none crosses
 * any more ends its episode; returns through *idle, if not NULL, whether the flow's links
 * became free of flows (bit h: path[h]). */
void roce_spread_flow_enter(struct roce_spread *s, const struct fab_flow *f);
void roce_spread_flow_leave(struct roce_spread *s, const struct fab_flow *f, unsigned *idle);
/* ROCE_TIMER_SPREAD fired for a link: the flows crossing it, whose components' caps change now
 * (the link's pause starts), or NULL (*count 0) if its episode ended since the timer was armed. */
struct fab_flow *const *roce_spread_onset_flows(const struct fabric *fab, const struct roce_spread *s, uint32_t port,
                                                int *count);

#endif
