/* State shared by the RoCEv2 plugin's files (not public: roce.h is). */
#ifndef SGFABRIC_ROCE_INTERNAL_H
#define SGFABRIC_ROCE_INTERNAL_H

#include <stdio.h>

#include "dcqcn.h"
#include "ecn_red.h"
#include "fabric.h"
#include "gbn.h"
#include "pfc.h"
#include "roce_fifo.h"
#include "roce_spread.h"

#define ROCE_UDP_DPORT 4791 /* IANA RoCEv2 */
#define ROCE_PKT_CE 0x1     /* fab_packet.flags: ECN congestion experienced */

/* In the order of the roce/dcqcn choices. paper-scaled: the paper's constants with the rate
 * steps and the byte counter scaled by NIC line rate / 40 Gb/s (docs/roce.md). */
enum roce_dcqcn_preset { ROCE_DCQCN_NIC = 0, ROCE_DCQCN_PAPER = 1, ROCE_DCQCN_OFF = 2, ROCE_DCQCN_PAPER_SCALED = 3 };

#define ROCE_PAPER_RATE_Bps (40e9 / 8) /* the SIGCOMM'15 testbed's 40 GbE, where the paper's constants hold */

/* Kinds of FAB_EV_MODEL events: arg = generation << 4 | kind for flow events (ptr: struct
 * roce_flow), arg = priority << 4 | kind for port events (ptr: struct roce_port). */
enum roce_event {
  ROCE_EV_PAUSE_ARRIVE,  /* a PAUSE reaches the upstream egress port */
  ROCE_EV_RESUME_ARRIVE, /* an XON reaches it */
  ROCE_EV_PAUSE_EXPIRE,  /* the pause time of the upstream egress port may be over */
  ROCE_EV_PAUSE_REFRESH, /* the ingress PG still in XOFF sends PAUSE again */
  ROCE_EV_CNP,           /* a CNP reaches the sender */
  ROCE_EV_NACK,          /* a NACK reaches the sender */
  ROCE_EV_RTO,           /* retransmission timer */
  ROCE_EV_ALPHA,         /* DCQCN alpha timer */
  ROCE_EV_RATE,          /* DCQCN rate-increase timer */
  ROCE_EV_FLUID,         /* flow fidelity: one step of the fluid DCQCN model (ptr: struct roce_state) */
  ROCE_EV_SPREAD,        /* flow fidelity: a pause onset is due, recompute the caps (ptr: struct roce_state) */
};

#define ROCE_FLUID_HIST 32 /* steps of history kept for the feedback delay tau* */

struct roce_config {
  struct pfc_params pfc;
  int headroom_mode;        /* 0 mlx5, 1 hpcc, 2 fixed */
  double headroom_fixed_B;
  double buffer_B;          /* shared buffer per switch */
  double frame_overhead_B;  /* wire bytes per packet beyond the payload (headers, FCS, preamble, IFG) */
  double lossy_alpha;       /* PFC off: egress queue limit alpha x free buffer (dynamic threshold) */
  int priority;             /* the lossless priority of RoCE traffic */
  int ecn_enabled;
  struct ecn_red_params ecn_ref;
  double ecn_ref_rate_Bps;
  int dcqcn_preset;         /* enum roce_dcqcn_preset */
  double dcqcn_scale;       /* paper-scaled: NIC line rate / 40 Gb/s (1 otherwise) */
  struct dcqcn_params dcqcn;
  double cnp_interval_s;    /* NP: at most one CNP per flow per interval (0: every mark) */
  int qps_per_conn;
  uint64_t ecmp_seed;
  double drop_rate;         /* per link traversal */
  double rto_s;
  long trace_flow;          /* flow id to trace, -1 none */
  int trace_port;           /* port to trace, -1 none */
  double trace_interval_s;
  int fluid;                /* flow fidelity: integrate the DCQCN fluid model in transients */
  double fluid_step_s;      /* its fixed integration step */
  int fluid_ode;            /* reaction point: 0 the dcqcn.c machine on expected marks, 1 the CoNEXT'16 ODE */
  double fluid_settle;      /* relative RC range over a window below which a transient ends */
};

/* Per topology port. The ingress side (pg) is used at switches: traffic arriving from this
 * port's peer. The egress side (pause) is the PAUSE state of this port as a transmitter. */
struct roce_port {
  struct pfc_pg pg[FAB_MAX_QUEUES];
  double headroom_B;                 /* ingress headroom per PG */
  struct ecn_red_params ecn;         /* egress marking at this port's rate */
  double paused_until[FAB_MAX_QUEUES];/* egress: paused until this date (0: not) */
  double pause_start_s[FAB_MAX_QUEUES];
  uint8_t is_paused[FAB_MAX_QUEUES];
  uint8_t expire_armed[FAB_MAX_QUEUES];
  uint8_t refresh_armed[FAB_MAX_QUEUES];
  uint64_t pauses_received;
  double paused_s;                    /* total paused time of this egress port */
};

struct roce_switch {
  double used_B;        /* bytes in the buffer */
  double shared_used_B; /* of which in the shared pool */
  double headroom_total_B;
  double peak_B;
};

struct roce_flow {
  struct fab_flow *flow;
  uint32_t gen;             /* bumped at reuse: stale events compare it */
  int32_t line_port;        /* NIC port */
  struct dcqcn_vars cc;
  struct gbn_rx rx;
  struct gbn_tx tx;
  double last_cnp_s;        /* NP: last CNP sent (-1: none) */
  double nack_sent_s;       /* the NACK in flight: when sent, */
  uint32_t nack_psn;        /* and for which PSN */
  double alpha_due_s, rate_due_s;
  uint8_t alpha_armed, rate_armed, rto_armed;
  double progress_s;        /* retransmission timer's origin: the last ACK that advanced the window
                               (acceptance + reverse path), or the send of the first packet
                               outstanding after none was */
  double ack_delay_s;       /* reverse-path latency of its ACKs (-1: not computed yet) */
  int32_t inflight;         /* packets in the network */
  double last_trace_s;
  double last_tx_s;         /* NIC pacing: date and size of the flow's last packet */
  double last_tx_B;
  /* flow fidelity, fluid DCQCN (roce_fluid.c); cc holds RC, RT, alpha */
  double fl_rc_hist[ROCE_FLUID_HIST]; /* ode: RC at the last steps, for RC(t - tau*); machine: the
                                         departure rate (FIFO service) at the last steps */
  double fl_marks;          /* machine: expected marks since the NP could last send a CNP */
  double fl_win_bytes;      /* machine: bytes sent in the current settle window */
  double fl_prev_mean;      /* machine: mean rate over the previous settle window (-1: none) */
  uint32_t fl_cuts_win;     /* machine: rate cuts in the current settle window */
  double fl_base_cap_Bps;   /* its cap without the fluid model (loss; 0: none) */
  double fl_nic_share_Bps;  /* line rate / flows sharing its NIC: its arrival rate bound */
  double fl_scale;          /* FIFO service / sending rate at its transient ports (last step) */
  double fl_rc_min, fl_rc_max; /* RC range over the current settle window */
  uint8_t fl_lag;           /* tau* in steps */
  uint8_t fl_seen;          /* on_rates has seen it */
  uint8_t fl_in;            /* crosses a bottleneck in transient */
  struct roce_fifo_flow fifo; /* flow fidelity, FIFO shares (roce_fifo.c) */
  double fl_loss_cap_Bps;   /* flow fidelity: its go-back-N goodput cap (0: none; -1: not computed yet) */
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
  double fl_marks_est;     /* flow fidelity: integral of p x arrival / MTU at transient ports */
  double fl_cnps_est;      /* flow fidelity: integral of the CNP rate (at most one per flow per tau) */
  double fl_peak_queue_B;  /* flow fidelity: largest fluid queue */
  uint64_t fl_transients;  /* bottlenecks that entered a transient */
  uint64_t fl_settled;     /* transients that settled */
  uint64_t fl_steps;       /* fluid integration steps */
  double fl_transient_s;   /* summed duration of the settled transients */
  double fl_last_settle_s; /* date the last transient settled */
  uint64_t drops_buffer;
  uint64_t drops_random;
  double paused_s;
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
  /* flow fidelity */
  struct roce_fifo fifo;     /* FIFO shares (roce_fifo.c) */
  struct roce_spread spread; /* PFC pause spreading (roce_spread.c) */
  struct fab_flow **fl_changed; /* roce_flow.c: the flows whose cap a pass changed */
  size_t fl_changed_cap;
  double *fl_demand;     /* fluid: per port, arrival at line rate of the flows crossing it */
  double *fl_victim_cap; /* fluid: per NIC port, its flows */
  /* flow fidelity, fluid DCQCN (roce_fluid.c) */
  struct roce_fluid_port *fl_ports; /* bottlenecks in transient */
  size_t fl_n_ports, fl_cap_ports;
  int32_t *fl_slot;      /* per port: its index in fl_ports (-1: not in transient) */
  double *fl_q_settled;  /* per port: standing queue its last transient left (fixed point q*) */
  uint32_t *fl_sig_n, *fl_cur_n;   /* per port: flows crossing it, at the last check and now */
  uint64_t *fl_sig_sum, *fl_cur_sum; /* per port: sum of their ids, at the last check and now */
  struct roce_flow **fl_flows;      /* flows crossing a bottleneck in transient */
  uint32_t *fl_gens;                /* their generations */
  size_t fl_n_flows, fl_cap_flows;
  uint64_t fl_starts, fl_last_starts; /* flows started (flow_start), at the last check */
  size_t fl_last_n;      /* active flows at the last check */
  uint64_t fl_step;      /* steps since the start */
  uint64_t fl_window_start; /* step that opened the current settle window */
  int fl_armed;          /* a step is scheduled */
};

/* A switch egress port whose flows are integrated by the fluid model. */
struct roce_fluid_port {
  int32_t port;
  double capacity_Bps;
  double q_B;            /* fluid queue */
  double arrival_Bps;    /* sum of the arrival rates of its flows (last step) */
  double p_hist[ROCE_FLUID_HIST]; /* marking probability at the last steps */
  uint64_t enter_step;
  double enter_s;
  double q_min, q_max;   /* range over the current settle window */
  int at_line;           /* settle check: not at the fixed point, every flow back at its NIC share */
  double win_served;     /* machine: bytes served in the current settle window */
  uint32_t n_flows;      /* fluid flows crossing it (last step) */
  uint8_t held;          /* PFC holds its senders: the queue is at the PFC bound and oversubscribed */
  double win_q;          /* machine: integral of the queue over the current settle window */
  double win_arr;        /* machine: bytes that arrived in the current settle window */
};

static inline struct roce_state *roce__state(const struct fabric *fab) { return fab->model_state; }

int roce__config_read(struct roce_config *c, const struct fabric *fab, char *err, size_t errlen);
uint64_t roce__qp_key(const struct roce_config *c, uint64_t run_seed, int src, int dst, int qp);

void roce__switch_init(struct fabric *fab);
int roce__switch_arrive(struct fabric *fab, int node, struct fab_packet *pkt);
void roce__switch_tx_done(struct fabric *fab, int port);
void roce__switch_transmit(struct fabric *fab, int port, struct fab_packet *pkt);
int roce__may_send(struct fabric *fab, int port, int queue);
void roce__port_event(struct fabric *fab, struct roce_port *rp, int kind, int prio);
void roce__series_add(struct roce_series *s, double t, double a, double b, double c, double interval);
/* Flow fidelity: the caps of FIFO shares, pause spreading, loss and the fluid model. From
 * on_rates (after_recompute 1) the FIFO shares of the flows just recomputed are redone; from a
 * timer of the model (0), those of every active flow. */
void roce__flow_rates(struct fabric *fab, int after_recompute);
double roce__loss_goodput_factor(double p_link, int hops, double window_pkts);

int roce__fluid_init(struct fabric *fab);
/* After roce__switch_init: whether every switch's PFC headroom (per port, times its ports) leaves
 * a shared pool in roce/buffer; 0, or -1 with a message naming the parameters and values. */
int roce__check_headroom(const struct fabric *fab, const struct roce_state *rs, char *err, size_t errlen);
void roce__fluid_fini(struct fabric *fab);
/* on_rates with DCQCN on: returns 0 when the set of active flows did not change since the last
 * call (the recomputation came from a cap: nothing to redo). */
int roce__fluid_flows_changed(struct fabric *fab);
/* The flow set changed: enter transients at oversubscribed ports, list the fluid flows. */
void roce__fluid_detect(struct fabric *fab, struct fab_flow **flows, size_t n);
/* The cap of a flow given its cap without the fluid model. */
double roce__fluid_cap(const struct fabric *fab, const struct fab_flow *flow, double base_cap);
void roce__fluid_step(struct fabric *fab);
double roce__fluid_queue(const struct fabric *fab, int port);

#endif
