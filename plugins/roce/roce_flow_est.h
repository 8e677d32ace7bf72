/* RoCEv2 at flow fidelity: estimates of the counters that only packet fidelity counts (ECN
 * marks, CNPs, DCQCN rate cuts, PFC paused time), per port and in total, from the state of the
 * flow-level mechanisms (roce_flow_est.c). They are written as *_est: estimates, not counts.
 *
 *  - a switch egress that DCQCN cannot hold (its flows' floor rates still saturate it, the FIFO
 *    pass's `marked_mask`) keeps its queue above Kmax, where RED marks every packet: each packet
 *    a flow sends through it is one mark;
 *  - the NP returns at most one CNP per roce/cnp-interval for a marked flow, and the RP cuts at
 *    most once per roce/dcqcn-dec-interval: a marked flow of rate r sends min(r / MTU,
 *    1 / cnp-interval) CNPs per second and gets min(that, 1 / dec-interval) cuts;
 *  - a link that pause spreading finds paused (roce_spread.c) is paused for the part of the time
 *    its congested egress cannot serve, 1 - C / arrival, until a pass finds it not paused or its
 *    last flow leaves.
 *  - a switch egress DCQCN holds, measured on the packet model (roce_held_port.h, on by
 *    default), marks its measured fraction of the packets crossing it, its flows get its
 *    measured CNPs and cuts per second (at most one CNP per packet), and the links feeding it
 *    are paused for its measured paused fraction of the time.
 * Rates hold between two recomputations of the flow engine, so each estimate is a sum of rate x
 * the time it held. The time each switch egress spends held by DCQCN is reported too (a port
 * that max-min saturates, a flow below its cap has it as bottleneck, and that no FIFO pass
 * marks), and apart the held time of ports that were not measured (roce/flow-held-ports off):
 * there the mark and CNP estimates miss DCQCN's marks and are lower bounds. */
#ifndef SGFABRIC_ROCE_FLOW_EST_H
#define SGFABRIC_ROCE_FLOW_EST_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"
#include "roce_spread.h"

/* Per flow (in struct roce_flow): the rates in effect since since_s. */
struct roce_est_flow {
  double since_s;
  double packets_per_s; /* packets sent (each a mark at each marked hop) */
  double cnps_per_s;
  double cuts_per_s;
  uint8_t marked_mask;              /* the hops that mark (bit h: the egress path[h]) */
  uint8_t held_mask;                /* the hops DCQCN holds (roce_held_port.h), */
  float held_marks[ROUTE_MAX_HOPS]; /* and the marks per packet sent there */
};

/* Links paused for a part of the time: per link the part since since_s; their sum, since
 * sum_since_s. Pause spreading and the held ports each keep one (a link can be in both). */
struct roce_est_paused {
  double *fraction, *since_s;
  double sum, sum_since_s;
};

struct roce_est {
  double marks, cnps, cuts, paused_s; /* totals so far */
  double *port_marks;                 /* per port */
  double *port_paused_s;              /* per port */
  /* per link: the part of the time it is paused as the last spreading pass that covered it
   * found (0 once no flow crosses it) */
  struct roce_est_paused spread;
  /* per port: held by DCQCN (saturated, unmarked) since port_held_since_s; time held so far */
  uint8_t *port_held, *port_held_now;
  double *port_held_since_s;
  double *port_held_s;
  /* per link: the part of the time it is paused feeding a held port (its measure's paused
   * fraction) */
  struct roce_est_paused held_feed;
  double *port_pause_want; /* scratch of roce_est_held, 0 between calls */
};

int roce_est_init(struct roce_est *e, int n_ports);
void roce_est_fini(struct roce_est *e);
/* The flow's rate or marking changed (it was recomputed): its estimates up to now, then its new
 * rates. */
void roce_est_flow_update(struct fabric *fab, struct roce_est *e, struct fab_flow *f);
/* The flow ends: its estimates up to now. */
void roce_est_flow_end(struct fabric *fab, struct roce_est *e, struct fab_flow *f);
/* A spreading pass over these flows ended (before roce_spread_clear): the links they cross are
 * paused from now on for the part of the time this pass found (0: not paused). */
void roce_est_pauses(struct fabric *fab, struct roce_est *e, const struct roce_spread *s, struct fab_flow **flows,
                     size_t n);
/* No flow crosses this link any more: it is not paused from now on. */
void roce_est_link_idle(struct fabric *fab, struct roce_est *e, int port);
/* After a recomputation (DCQCN on): which of its ports DCQCN holds from now on. load_Bps: per
 * port, what its flows offer it without congestion control, less what overloaded ports upstream
 * keep back (roce_held.last_load_Bps, the loads the held-port measure decides by). */
void roce_est_held(struct fabric *fab, struct roce_est *e, const double *load_Bps, struct fab_flow **flows, size_t n);
/* The time ports were held by DCQCN, in total; only those for which measured(port) is 0 when
 * measured is not NULL (the ports whose marks were not estimated). */
double roce_est_held_total(const struct fabric *fab, const struct roce_est *e, const uint8_t *measured);
/* Up to now for the flows still active, the paused links and the held ports (before writing the
 * counters). */
void roce_est_flush(struct fabric *fab, struct roce_est *e);

#endif
