/* RoCEv2 at flow fidelity: PFC pause spreading (roce_spread.c). A switch egress whose arrival
 * rate exceeds its capacity pauses the ingress links feeding it; a flow crossing such a link
 * toward another, idle egress (a victim) is throttled to the rate the paused link drains at.
 * A paused link drains slower than its line rate, so the switch egress it leaves can back up
 * in turn and pause the links feeding that switch: the pause climbs the tree hop by hop, up to
 * the senders' NICs (a congestion tree). */
#ifndef SGFABRIC_ROCE_SPREAD_H
#define SGFABRIC_ROCE_SPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

/* Per port, within one round of a pass: clean (zero, own_e -1) outside a pass, and within one
 * at the start of each round for the ports the last round wrote (the lists below), so that a
 * round costs its flows' hops and the ports it finds congested, not every port of the pass. */
struct roce_spread_round {
  double victim_cap;  /* link u: the rate, payload, of a flow on it once paused (0: not paused) */
  double pg_growth;   /* link u: the growth of the ingress PG it feeds at own_e (B/s) */
  double sw_growth;   /* link u: the growth of own_e's queue, the switch's shared use (B/s) */
  double bound_flows; /* link u: its flows bound for own_e */
  double own_B;       /* link u feeding a congested egress e: the bytes its e-bound flows have left,
                        which its PG at e's switch and the buffers after it must hold */
  double own_Bps;     /* link u: the rate those flows drain at (their FIFO shares) */
  double excess_B;    /* link u: own_B beyond what those buffers hold (paused while > 1 MTU) */
  double feeders;     /* egress e: the links feeding it with e-bound flows */
  double next_drain;  /* link u: its drain_Bps and held_below as this round finds them */
  double next_held;
  int32_t own_e; /* link u: the congested egress (or paused link) its own_B is bound for, the
                       one it is paused toward if paused (-1: none) */
};

/* Per port, within a pass (roce_spread.flags; one byte each, read at every hop of every flow). */
enum {
  ROCE_SPREAD_FILLS = 1,  /* egress: it backs up and fills its switch (fills_its_switch), given the
                             drains the last round found */
  ROCE_SPREAD_PAUSED = 2, /* link: paused in the current round (its victim_cap is set) */
};

/* Per port, within a pass (zero again after it). */
struct roce_spread_port {
  double arrival_Bps; /* arrival rate (line rate at the NIC, FIFO shares downstream) */
  double flows_on;    /* the pass's flows crossing it */
  double remaining_B; /* the bytes they have left */
  double drain_Bps;   /* a paused link: the rate it drains at, which the switch egress it leaves
                         cannot exceed (0: not paused) */
  double held_below;  /* a paused link: the bytes of its flows the buffers after it hold (the PG
                         it feeds at XOFF, and its part of what is held further on) */
  double queue_B;     /* a switch egress: the bytes queued for it in its switch, the PGs of the
                         links paused toward it, each at its XOFF from its onset on */
};

struct roce_spread {
  struct roce_spread_round *round; /* per port */
  struct roce_spread_port *port;   /* per port */
  uint8_t *flags;                  /* per port: ROCE_SPREAD_* (zero outside a pass) */
  /* lists of ports: the ports the pass's flows cross, each once (covered); those whose round state
   * the current round wrote: links feeding a congested egress (own_e set), egresses with
   * feeders, and links paused (their drain set for the next round) */
  struct roce_spread_list {
    int32_t *port;
    size_t n, cap;
  } covered, feeding, fed, drained;
  double *node_feeders; /* per switch, within a round: the links feeding its congested egresses,
                           whose PGs share its buffer */
  /* kept across passes, per port */
  double *onset_s;      /* date its pause starts in the current episode */
  double *end_s;        /* date its e-bound flows' bytes fit in the buffers after it, when its
                           pause ends (a ROCE_TIMER_SPREAD then, end_armed_s; 0: none) */
  double *end_armed_s;  /* date of the end timer armed last, until it fires (0: none): an end that
                           moves later re-arms from it, not at each pass */
  uint64_t *onset_seen; /* the pass that last saw it paused (within a pass: seen) */
  uint8_t *was_paused;  /* the last pass that covered it found it paused */
  uint8_t *has_victims; /* that pass found flows whose caps its end changes: flows it throttles
                           (victims), or links paused toward it */
  int32_t *port_flows;  /* active flows entered (roce_spread_flow_enter) crossing it */
  uint64_t pass;        /* passes so far */
};

int roce_spread_init(struct roce_spread *s, int n_ports, int n_nodes);
void roce_spread_fini(struct roce_spread *s);
/* The paused links and their rates for the given flows, whole components (every flow sharing a
 * port with one of them is among them: a pause and its victims share the paused link), from the
 * FIFO shares (roce_fifo.h) of each flow; arms a ROCE_TIMER_SPREAD (arg: the link) at the onset
 * of each new episode that starts later, and at the date each paused link's flows will fit in
 * the buffers after it (its end). A link's episode goes on from the last pass that covered it
 * (found it paused), until a pass finds it not paused or its last flow leaves. */
void roce_spread_compute(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n);
/* The part of the time link u is paused (0 before its episode's onset, or not paused): the
 * part of what arrives at the egress it feeds that that egress cannot drain. */
double roce_spread_pause_fraction(const struct fabric *fab, const struct roce_spread *s, int u);
/* A flow's cap given its cap without spreading (0: none): the rate of a paused link it crosses
 * toward an uncongested egress, if lower. */
double roce_spread_cap(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f, double cap);
/* The time a flow starting now, at rate_Bps (payload), waits behind the queues standing on its
 * path: at each switch egress it crosses, what the links paused toward that egress hold in its
 * switch (their PGs at XOFF), drained at the egress's service rate. Flow fidelity shares the
 * rates out from the flow's first byte, where its first byte leaves behind those queues (their
 * sojourn time); the egress is work-conserving, so a flow that outlasts the queue's owners
 * ends when the egress has served every byte its flows have left, as it does at flow fidelity:
 * the wait is at most what separates the flow's end at its rate from that makespan. */
double roce_spread_queue_wait(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f,
                              double rate_Bps);
/* End of the pass: the per-pass and per-round state of its ports back to clean. */
void roce_spread_clear(const struct fabric *fab, struct roce_spread *s);
/* Whether a pass over these flows may find a pause: one of them crosses a saturated egress
 * (FIFO throttled), or one of its links was paused at the last pass that covered it. */
int roce_spread_needed(const struct roce_spread *s, struct fab_flow **flows, size_t n);
/* A flow takes part (once, before its first pass) and leaves (when it ends): a link none crosses
 * any more ends its episode; returns through *idle, if not NULL, whether the flow's links
 * became free of flows (bit h: path[h]). */
void roce_spread_flow_enter(struct roce_spread *s, const struct fab_flow *f);
void roce_spread_flow_leave(struct roce_spread *s, const struct fab_flow *f, unsigned *idle);
/* ROCE_TIMER_SPREAD fired for a link: the flows crossing it, whose components' caps change now
 * (the link's pause starts, or ends with victims to free), or NULL (*count 0) if its episode
 * ended since the timer was armed, if it ends with no victim on it, or if its end moved later
 * (the timer is then armed again at that date): no cap changes then, and *idle (if not NULL)
 * says that only the link's paused time stops now. */
struct fab_flow *const *roce_spread_timer_flows(struct fabric *fab, struct roce_spread *s, uint32_t port, int *count,
                                                int *idle);

#endif
