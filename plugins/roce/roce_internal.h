/* State shared by the RoCEv2 plugin's files (not public: roce.h is). */
#ifndef SGFABRIC_ROCE_INTERNAL_H
#define SGFABRIC_ROCE_INTERNAL_H

#include <stdio.h>

#include "dcqcn.h"
#include "ecn_red.h"
#include "fabric.h"
#include "gbn.h"
#include "pfc.h"

#define ROCE_UDP_DPORT 4791 /* IANA RoCEv2 */
#define ROCE_PKT_CE 0x1     /* fab_packet.flags: ECN congestion experienced */

enum roce_dcqcn_preset { ROCE_DCQCN_NIC = 0, ROCE_DCQCN_PAPER = 1, ROCE_DCQCN_OFF = 2 };

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
};

struct roce_config {
  struct pfc_params pfc;
  int headroom_mode;        /* 0 mlx5, 1 hpcc, 2 fixed */
  double headroom_fixed_B;
  double buffer_B;          /* shared buffer per switch */
  int priority;             /* the lossless priority of RoCE traffic */
  int ecn_enabled;
  struct ecn_red_params ecn_ref;
  double ecn_ref_rate_Bps;
  int dcqcn_preset;         /* enum roce_dcqcn_preset */
  struct dcqcn_params dcqcn;
  double cnp_interval_s;    /* NP: at most one CNP per flow per interval (0: every mark) */
  int qps_per_conn;
  uint64_t ecmp_seed;
  double drop_rate;         /* per link traversal */
  double rto_s;
  long trace_flow;          /* flow id to trace, -1 none */
  int trace_port;           /* port to trace, -1 none */
  double trace_interval_s;
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
  double last_progress;     /* delivered at the last RTO check */
  int32_t inflight;         /* packets in the network */
  double last_trace_s;
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
  double *fl_demand;     /* per port: sum of sender line rates crossing it */
  double *fl_victim_cap; /* per port: rate of the paused ingress flows crossing it (0: none) */
  double *fl_backlog;    /* per port: bytes a congested egress cannot drain */
  double *fl_scratch;    /* per active flow and hop: its arrival rate at the hop (FIFO shares) */
  double *fl_fifo;       /* per active flow: its FIFO share after its last hop */
  size_t fl_cap;         /* flows the two arrays hold */
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

void roce__flow_rates(struct fabric *fab);
double roce__loss_goodput_factor(double p_link, int hops, double window_pkts);

#endif
