/* State shared by the RoCEv2 plugin's files (not public: roce.h is). */
#ifndef SGFABRIC_ROCE_INTERNAL_H
#define SGFABRIC_ROCE_INTERNAL_H

#include <stdio.h>

#include "dcqcn.h"
#include "roce_rp.h"
#include "ecn_red.h"
#include "fabric.h"
#include "gbn.h"
#include "pfc.h"
#include "roce_dcqcn_floor.h"
#include "roce_dcqcn_fluid.h"
#include "roce_fifo.h"
#include "roce_flow_est.h"
#include "roce_held_port.h"
#include "roce_loss.h"
#include "roce_spread.h"

#define ROCE_UDP_DPORT 4791 /* IANA RoCEv2 */
#define ROCE_PKT_CE 0x1     /* fab_packet.flags: ECN congestion experienced */

/* In the order of the roce/dcqcn choices. paper-scaled: the paper's constants with the rate
 * steps and the byte counter scaled by NIC line rate / 40 Gb/s (docs/roce.md). */
enum roce_dcqcn_preset { ROCE_DCQCN_NIC = 0, ROCE_DCQCN_PAPER = 1, ROCE_DCQCN_OFF = 2, ROCE_DCQCN_PAPER_SCALED = 3 };

#define ROCE_PAPER_RATE_Bps (40e9 / 8) /* the SIGCOMM'15 testbed's 40 GbE, where the paper's constants hold */

/* Timer kinds of the model (fabric_timer_arm). Port timers: ptr the struct roce_port, arg the
 * priority; flow timers: ptr the struct roce_flow, arg its generation; flow-fidelity timers:
 * no ptr, arg a port (SPREAD: the link paused; HELD_AGE: the held egress) or nothing. */
enum roce_timer {
  ROCE_TIMER_PAUSE_ARRIVE,  /* a PAUSE reaches the upstream egress port */
  ROCE_TIMER_RESUME_ARRIVE, /* an XON reaches it */
  ROCE_TIMER_PAUSE_EXPIRE,  /* the pause time of the upstream egress port may be over */
  ROCE_TIMER_PAUSE_REFRESH, /* the ingress PG still in XOFF sends PAUSE again */
  ROCE_TIMER_CNP,           /* a CNP reaches the sender */
  ROCE_TIMER_NACK,          /* a NACK reaches the sender */
  ROCE_TIMER_RTO,           /* retransmission timer */
  ROCE_TIMER_ALPHA,         /* DCQCN alpha timer */
  ROCE_TIMER_RATE,          /* DCQCN rate-increase timer */
  ROCE_TIMER_FLUID,         /* flow fidelity: one step of the fluid DCQCN model */
  ROCE_TIMER_SPREAD,        /* flow fidelity: a pause onset is due, recompute the caps */
  ROCE_TIMER_HELD_AGE,      /* flow fidelity: a phase of a held port is over (roce_held_port.h) */
};

struct roce_config {
  struct pfc_params pfc;
  int headroom_mode; /* 0 mlx5, 1 hpcc, 2 fixed */
  double headroom_fixed_B;
  double buffer_B;         /* shared buffer per switch */
  double frame_overhead_B; /* wire bytes per packet beyond the payload (headers, FCS, preamble, IFG) */
  double lossy_alpha;      /* PFC off: egress queue limit alpha x free buffer (dynamic threshold) */
  int priority;            /* the lossless priority of RoCE traffic */
  int ecn_enabled;
  struct ecn_red_params ecn_ref;
  double ecn_ref_rate_Bps;
  int dcqcn_preset;   /* enum roce_dcqcn_preset */
  double dcqcn_scale; /* paper-scaled: NIC line rate / 40 Gb/s (1 otherwise) */
  struct dcqcn_params dcqcn;
  double cnp_interval_s; /* NP: at most one CNP per flow per interval (0: every mark) */
  int qps_per_conn;
  int qp_rate_kept; /* packet fidelity: a QP's RP state outlives its transfers (roce_rp.h) */
  uint64_t ecmp_seed;
  double drop_rate; /* per link traversal */
  double rto_s;
  int flow_timeouts; /* flow fidelity: enum roce_flow_timeouts (roce_loss.h) */
  long trace_flow;   /* flow id to trace, -1 none */
  int trace_port;    /* port to trace, -1 none */
  double trace_interval_s;
  int fluid;              /* flow fidelity: integrate the DCQCN fluid model in transients */
  double fluid_step_s;    /* its fixed integration step */
  int fluid_ode;          /* reaction point: 0 the dcqcn.c machine on expected marks, 1 the CoNEXT'16 ODE */
  int fluid_random_marks; /* machine: each flow's next mark drawn (1) or at its expected position (0) */
  double fluid_settle;    /* relative RC range over a window below which a transient ends */
  int flow_fifo;          /* flow fidelity without the fluid model: FIFO shares (roce_fifo.c) */
  int flow_spread;        /* and PFC pause spreading (roce_spread.c) */
  int flow_queue_wait;    /* and the sojourn of a starting flow in the queues spreading stands */
  /* and the DCQCN-held ports measured on the packet model, and how (roce_held_port.c;
   * roce/flow-held-ports, roce/flow-held-measure; 0: off) */
  enum roce_held_measure flow_held;
  int flow_held_spread; /* measured, and their flows take the spread of rates the measure saw (roce/flow-held-shares) */
};

/* Per topology port. The ingress side (pg) is used at switches: traffic arriving from this
 * port's peer. The egress side (pause) is the PAUSE state of this port as a transmitter. */
struct roce_port {
  struct pfc_pg pg[FAB_MAX_QUEUES];
  double headroom_B;                   /* ingress headroom per PG */
  struct ecn_red_params ecn;           /* egress marking at this port's rate */
  double paused_until[FAB_MAX_QUEUES]; /* egress: paused until this date (0: not) */
  double pause_start_s[FAB_MAX_QUEUES];
  uint8_t is_paused[FAB_MAX_QUEUES];
  uint8_t expire_armed[FAB_MAX_QUEUES];
  uint8_t refresh_armed[FAB_MAX_QUEUES];
  uint64_t pauses_received;
  double paused_s; /* total paused time of this egress port */
};

struct roce_switch {
  double used_B;        /* bytes in the buffer */
  double shared_used_B; /* of which in the shared pool */
  double headroom_total_B;
  double peak_B;
};

/* roce_flow.spread_entered */
enum { ROCE_SPREAD_ENTERED_NOW = 1, ROCE_SPREAD_ENTERED = 2 };

struct roce_flow {
  struct fab_flow *flow;
  uint32_t gen;      /* bumped at reuse: stale events compare it */
  int32_t line_port; /* NIC port */
  struct dcqcn_vars cc;
  struct gbn_rx rx;
  struct gbn_tx tx;
  double last_cnp_s;  /* NP: last CNP sent (-1: none) */
  double nack_sent_s; /* the NACK in flight: when sent, */
  uint32_t nack_psn;  /* and for which PSN */
  double alpha_due_s, rate_due_s;
  uint8_t alpha_armed, rate_armed, rto_armed;
  fab_timer_id rto_timer, alpha_timer, rate_timer; /* the pending ones, cancelled when the flow ends */
  double progress_s;  /* retransmission timer's origin: the last ACK that advanced the window
                               (acceptance + reverse path), or the send of the first packet
                               outstanding after none was */
  double ack_delay_s; /* reverse-path latency of its ACKs (-1: not computed yet) */
  int32_t inflight;   /* packets in the network */
  double last_trace_s;
  double last_tx_s; /* NIC pacing: date and size of the flow's last packet */
  double last_tx_B;
  struct roce_fluid_flow fluid; /* flow fidelity, fluid DCQCN (roce_dcqcn_fluid.c); cc holds RC, RT, alpha */
  struct roce_fifo_flow fifo;   /* flow fidelity, FIFO shares (roce_fifo.c) */
  struct roce_est_flow est;     /* flow fidelity, estimated marks and CNPs (roce_flow_est.c) */
  uint8_t spread_entered;       /* flow fidelity: counted on its links by pause spreading (ROCE_SPREAD_ENTERED*) */
  double fl_loss_path;          /* flow fidelity: its path's loss per packet (roce_loss.h; -1: not computed yet) */
  struct roce_flow *free_next;
};

struct roce_trace_row {
  double t, a, b, c;
};

struct roce_series {
  struct roce_trace_row *rows;
  size_t n, cap;
  double last_s;
};

struct roce_stats {
  struct pfc_stats pfc;
  struct ecn_stats ecn;
  struct dcqcn_stats dcqcn;
  struct gbn_stats gbn;
  uint64_t cnps_sent;
  double paused_s;
  uint64_t flow_pass_flows; /* flow fidelity: flows the cap passes visited (roce_flow.c) */
  double timeouts_est;      /* flow fidelity: go-back-N timeouts taken (roce_loss.h) */
};

struct roce_state {
  struct roce_config cfg;
  struct roce_port *ports;
  struct roce_switch *switches; /* by node id */
  struct roce_flow *free_flows;
  struct roce_flow **blocks;
  size_t n_blocks;
  struct fab_rng rng;
  struct roce_stats stats;
  struct roce_series flow_series, port_series;
  struct roce_qp_rps qp_rps; /* packet fidelity: the RP state a QP's last transfer left (roce_rp.c) */
  /* flow fidelity */
  struct roce_fifo fifo;        /* FIFO shares (roce_fifo.c) */
  struct roce_spread spread;    /* PFC pause spreading (roce_spread.c) */
  struct roce_loss loss;        /* go-back-N under loss: the standing queues of a pass (roce_loss.c) */
  struct fab_flow **fl_changed; /* roce_flow.c: the flows whose cap a pass changed */
  size_t fl_changed_cap;
  struct roce_dcqcn_fluid fluid;  /* fluid DCQCN (roce_dcqcn_fluid.c) */
  struct roce_floor_cache floors; /* DCQCN floor fractions (roce_dcqcn_floor.c) */
  struct roce_est est;            /* estimated counters (roce_flow_est.c) */
  struct roce_held held;          /* DCQCN-held ports (roce_held_port.c) */
  int rings_in_steps;             /* coll/ring:auto moves rings step by step (roce_model.c) */
  double *peak_queue;             /* per port: the engine's peak queue, for the counters */
  double *port_paused;            /* per port: its paused time at packet fidelity, for the counters */
};

static inline struct roce_state *roce__state(const struct fabric *fab) { return fabric_model_priv(fab); }

int roce__config_read(struct roce_config *c, const struct fabric *fab, char *err, size_t errlen);
uint64_t roce__qp_key(const struct roce_config *c, uint64_t run_seed, int src, int dst, int qp);

void roce__switch_init(struct fabric *fab);
int roce__switch_arrive(struct fabric *fab, int node, struct fab_packet *pkt);
void roce__switch_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx);
void roce__switch_lost(struct fabric *fab, int port, const struct fab_packet *pkt);
void roce__switch_transmit(struct fabric *fab, int port, struct fab_packet *pkt);
int roce__may_send(struct fabric *fab, int port, int queue);
void roce__port_timer(struct fabric *fab, struct roce_port *rp, int kind, int prio);
/* roce_trace.c: a row of a series (at most one per interval), and flow rf's reaction point if it
 * is the flow roce/trace-flow names. */
void roce__series_add(struct roce_series *s, double t, double a, double b, double c, double interval);
void roce__trace_flow(struct fabric *fab, const struct roce_flow *rf);
/* Flow fidelity: the caps of FIFO shares, pause spreading, loss and the fluid model, and the
 * estimates that follow the rates. When it is called: */
enum roce_flow_when {
  ROCE_BEFORE_FILL, /* before_fill: the caps of the component about to be recomputed */
  ROCE_AFTER_FILL,  /* on_rates: its rates are known (estimates; the fluid model's caps) */
};
void roce__flow_rates(struct fabric *fab, enum roce_flow_when when);

/* After roce__switch_init: whether every switch's PFC headroom (per port, times its ports) leaves
 * a shared pool in roce/buffer; 0, or -1 with a message naming the parameters and values. */
int roce__check_headroom(const struct fabric *fab, const struct roce_state *rs, char *err, size_t errlen);

#endif
