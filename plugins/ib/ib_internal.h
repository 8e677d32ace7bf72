/* State shared by the files of the InfiniBand model (not public: ib.h is). */
#ifndef SGFABRIC_IB_INTERNAL_H
#define SGFABRIC_IB_INTERNAL_H

#include <stdint.h>

#include "fabric.h"
#include "ib_credit.h"
#include "ib_lft.h"
#include "ib_tree.h"
#include "ib_vlarb.h"

/* Most credit a port can advertise per VL (IBTA Vol.1 7.9.4: 12-bit FCCL/FCTBS, modulo 4,096). */
#define IB_MAX_CREDIT_BLOCKS 2048

typedef enum { IB_ROUTING_DMODK, IB_ROUTING_AR } ib_routing;
typedef enum { IB_QUEUE_VOQ, IB_QUEUE_FIFO } ib_input_queue;
/* Which port adaptive routing takes among equally loaded least-loaded ones (packet fidelity). */
typedef enum { IB_AR_TIES_RANDOM, IB_AR_TIES_TABLE } ib_ar_ties;

/* The run's configuration, read from the ib/ parameters (read-only after init). */
struct ib_params {
  uint32_t mtu_bytes;          /* packet payload, IBTA MTU */
  uint32_t block_bytes;        /* credit unit (64) */
  uint32_t header_bytes;       /* LRH + BTH + ICRC + VCRC of every packet (26) */
  int32_t buffer_blocks;       /* credit advertised per VL per input port, in blocks (<= 2,048 unless long-haul) */
  double buffer_bytes;         /* the receive buffer per VL it comes from (ib/buffer-per-vl, whole blocks) */
  int long_haul;               /* lift the 2,048-block cap */
  int num_vls;                 /* data VLs, 1..8 */
  uint8_t sl2vl[IB_NUM_SLS];   /* SL -> VL */
  struct ib_vlarb_table vlarb; /* arbitration tables of every output port */
  double credit_delay_s;       /* flow-control packet processing added to the link delay */
  ib_routing routing;          /* static D-mod-K tables or adaptive routing */
  ib_input_queue input_queue;  /* input buffer organisation: per-output queues or one FIFO */
  double ar_threshold_bytes;   /* AR keeps the table's port while its load is at most this */
  ib_ar_ties ar_ties;          /* AR among equally loaded ports: a seeded draw, or the table's port first */
  int ar_paths;                /* flow fidelity: most minimal paths an AR flow is spread over */
  double ar_imbalance;         /* flow fidelity: AR throughput loss of a busy, many-destination leaf */
  int input_shares;            /* flow fidelity: switch outputs share among their input ports */
  int tree_growth;             /* flow fidelity: congestion trees reach a buffer once they filled it */
  int unit_pace;               /* flow fidelity: a unit's flows held by two outputs move at one pace */
  int series;                  /* sample ib_series.csv */
  double series_interval_s;    /* sampling period */
  char series_port[96];        /* "all", a node name or "node->peer" */
  double transport_timeout_s;  /* failures: RC local ACK timeout, 4.096 us x 2^ib/transport-timeout */
  int transport_retries;       /* failures: retries after a timeout before the QP fails */
};

/* Counters of a run (summary.json). */
struct ib_stats {
  double credit_stall_s;    /* port-seconds with a packet ready and no credit for it */
  double peak_buffer_bytes; /* largest occupancy of one input buffer (one VL) */
  int peak_buffer_port;     /* the port feeding it (-1: none) */
  int peak_buffer_vl;
  uint64_t ar_decisions;   /* packets routed adaptively at a switch with several ports */
  uint64_t ar_deviations;  /* ... that left by another port than the D-mod-K table's */
  uint64_t credit_updates; /* flow-control credit returns */
  uint64_t ct_caps;        /* flow fidelity: flows capped as congestion-tree victims */
  uint64_t window_caps;    /* flow fidelity: flows capped by the credit window */
  uint64_t ar_derates;     /* flow fidelity: NIC capacities set for the AR imbalance */
  /* failures, packet fidelity */
  uint64_t credits_reset_blocks;    /* credits of failed links' ports voided when they went down */
  uint64_t credits_restored_blocks; /* credits advertised again when they came back up */
  uint64_t transport_timeouts;      /* RC local ACK timeouts that went back to the last acknowledged PSN */
  double transport_retransmitted_B; /* bytes sent again after them */
};

/* A FIFO of packets: an input buffer (one upstream port, one VL) at a switch. */
struct ib_fifo {
  struct fab_packet *head, *tail;
};

/* Inputs whose head packet waits for an output port and VL, first come first served. */
struct ib_waitq {
  int32_t *slot; /* circular, capacity cap */
  int32_t cap, first, count;
};

/* A credit return on its way back to a port: the blocks become free at (time, seq), the place a
 * calendar event would have had (ib_switch.c applies them lazily). */
struct ib_credit_due {
  double time;
  uint64_t seq;
  int32_t blocks;
  int32_t vl;
};

/* Per port (the egress side of one link direction) and the input buffer it feeds. */
struct ib_port {
  struct ib_credit credit[IB_MAX_VLS];    /* the downstream input buffer's free blocks per VL */
  struct ib_fifo *in[IB_MAX_VLS];         /* packets received through this port, waiting at the peer switch:
                                           one FIFO, or one per output of the peer (VOQ) */
  double occupancy[IB_MAX_VLS];           /* bytes held in that input buffer, arrival to departure */
  int32_t occ_blocks[IB_MAX_VLS];         /* the same in credit blocks (failures: what a link that comes back
                                           * up advertises is the buffer less these) */
  double out_load;                        /* bytes in this node's input buffers routed to this port */
  struct ib_waitq wait[IB_MAX_VLS];       /* inputs of this node whose head goes out here */
  struct ib_vlarb_state arb;              /* VL arbitration of this output */
  double stall_since;                     /* start of the current credit stall, -1 when none */
  double stall_s;                         /* credit stall time of this port */
  double peak_occupancy;                  /* largest occupancy of the buffer it feeds (any VL) */
  uint8_t credited;                       /* an InfiniBand link (not NVLink) */
  uint8_t kick_pending;                   /* a deferred kick is scheduled */
  uint8_t due_armed;                      /* the first credit return due is in the calendar */
  uint32_t due_first, due_count, due_cap; /* credit returns due, in (time, seq) order (circular) */
  struct ib_credit_due *due;
};

struct ar_leg;
struct ib_qp;

/* One flow crossing one switch input buffer (upstream port, VL), or, for the input-port
 * arbiter (ib_arbiter.c), one switch output. */
struct crossing {
  uint64_t buffer; /* port x num_vls + VL (the arbiter: the output port) */
  uint64_t unit;   /* what the upstream port's arbiter serves in turn: at a NIC the transfer
                    * (CROSSING_NIC_UNIT | its id: the parts of a spread transfer are one), at a
                    * switch the input port it came in by */
  int32_t flow;    /* index in the component */
  int32_t blocked; /* the flow's bottleneck is further downstream (the arbiter: the hop) */
};

#define CROSSING_NIC_UNIT (UINT64_C(1) << 63)

/* The input-port arbiter's scratch (ib_arbiter.c): the units one upstream arbiter serves in
 * turn (input ports, or an HCA's transfers), and crossings keyed for grouping into them. */
struct upstream_group {
  size_t lo, hi;         /* its crossings */
  double demand, weight; /* what arrives of them; its weight in the round robin */
};
struct upstream_key {
  uint64_t key;
  size_t index;
};

/* The congestion-tree pass's scratch (ib_flow.c): one unit's crossings of one buffer, the rate
 * and weight of its blocked flows and its weight in all. */
struct unit_load {
  size_t begin, end;
  double blocked, blocked_weight, weight;
};

struct ib_sample {
  double time_s;
  int32_t port;
  int32_t credits;
  double buffer_bytes;
};

struct ib_state {
  struct ib_params p;
  struct ib_stats stats;
  struct ib_port *ports;
  int32_t *wait_pool;
  struct ib_fifo *fifo_pool;
  struct ib_lft lft;
  struct fab_rng ar_rng; /* packet fidelity: AR's draws among equally loaded ports (ib/ar-ties random) */
  /* flow fidelity */
  double *port_sum;           /* scratch: sum of rates per port */
  double *port_max;           /* scratch: largest rate per unit of max-min weight, per port */
  struct crossing *crossings; /* scratch: flows crossing switch input buffers */
  size_t cap_crossings;
  double *cap_limit; /* scratch: per active flow, its new cap */
  size_t cap_limits;
  struct ar_leg *legs; /* scratch: spread parts, by source and destination leaf */
  size_t cap_legs;
  double *nic_demand;  /* scratch: per NIC port, the line-rate demand of its spread parts */
  int32_t *dst_source; /* scratch: per node, -1 or the one source leaf sending to it, -2 several */
  double *arrival;     /* scratch: per component flow and hop, its arrival rate (ib_arbiter.c) */
  size_t cap_arrival;
  struct upstream_group *groups; /* scratch: one output's input ports and upstream arbiters' units (ib_arbiter.c) */
  size_t cap_groups;
  struct upstream_key *keys; /* scratch: one output's crossings keyed by an upstream port */
  size_t cap_keys;
  double *leave; /* scratch: per arbiter crossing, what leaves the output (ib_arbiter.c) */
  size_t cap_leave;
  struct unit_load *unit_loads; /* scratch: one buffer's units in the congestion-tree pass (ib_flow.c) */
  size_t cap_unit_loads;
  int32_t *held; /* scratch: per component flow, the hop it is held back at (-1: none) */
  size_t cap_held;
  struct ib_tree tree; /* the congestion trees' growth (ib_tree.c) */
  double rates_time;   /* date of the last congestion-tree pass */
  int rates_rounds;    /* passes at that date */
  /* time series */
  struct ib_sample *samples;
  size_t n_samples, cap_samples;
  uint8_t *series_on; /* per port: sampled */
  int sampler_running;
  /* credit returns not yet applied, all ports; the latest one's place in the order */
  uint64_t due_total;
  double due_last_time;
  uint64_t due_last_seq;
  /* failures, packet fidelity: every RC transport state made (freed at fini), a generation count */
  struct ib_qp *qps;
  uint32_t qp_gen;
};

/* Timer kinds of the model (fabric_timer_arm; the port in arg for the first two). */
enum ib_timer {
  IB_TIMER_CREDIT = 1,     /* the first credit return due at a port, at its reserved place */
  IB_TIMER_KICK = 2,       /* a deferred kick of a port */
  IB_TIMER_SAMPLE = 3,     /* ib_series.csv sampling */
  IB_TIMER_QP_TIMEOUT = 4, /* failures: an RC QP's transport timer (its struct ib_qp in ptr) */
  IB_TIMER_TREE = 5,       /* flow fidelity: a congestion tree reaches a buffer (arg: the buffer, ib_tree.h) */
};

static inline struct ib_state *ib__state(const struct fabric *fab) { return fabric_model_priv(fab); }

/* Flow fidelity: the index of the switch input buffer (one per VL) that the port `port` feeds. */
static inline uint64_t ib__buffer(int port, int num_vls, int vl)
{
  return (uint64_t)port * (uint64_t)num_vls + (uint64_t)vl;
}

/* Flow fidelity: whether crossing k (of a component's flows, held[i] the hop whose buffer flow i
 * fills) is a blocked flow in the buffer just before its bottleneck output. */
static inline int ib__last_level(struct fab_flow *const *flows, const int32_t *held, const struct crossing *c, size_t k,
                                 int nvl)
{
  const struct fab_flow *f = flows[c[k].flow];
  return c[k].blocked && ib__buffer(f->path[held[c[k].flow] - 1], nvl, f->queue) == c[k].buffer;
}

/* Credit blocks of a packet of payload bytes: the whole packet, headers and CRCs included, is
 * buffered (IBTA Vol.1 7.9). */
static inline int32_t ib__packet_blocks(const struct ib_params *p, uint32_t payload)
{
  return ib_credit_blocks(payload + p->header_bytes, p->block_bytes);
}

int ib__params_load(struct ib_params *p, struct fabric *fab, char *err, size_t errlen);

/* ib_switch.c: the packet fidelity mechanisms. */
int ib__switch_init(struct fabric *fab, struct ib_state *st);
int ib__may_send(struct fabric *fab, int port, int queue, const struct fab_packet *pkt);
struct fab_packet *ib__next_packet(struct fabric *fab, int port);
void ib__on_transmit(struct fabric *fab, int port, struct fab_packet *pkt);
void ib__on_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx);
int ib__on_arrive(struct fabric *fab, int node, struct fab_packet *pkt);
void ib__on_timer(struct fabric *fab, int kind, void *ptr, uint32_t arg);
void ib__sample(struct fabric *fab);
void ib__on_idle(struct fabric *fab);
/* Applies the credit returns of port due before the current event. */
void ib__credits_settle(struct fabric *fab, struct ib_state *st, int port);

/* ib_switch.c, failures at packet fidelity: a link goes down (drops what waits for its ports,
 * voids their credits) or comes back up (credits advertised again). */
void ib__link_state(struct fabric *fab, int link, int up);

/* ib_transport.c: the RC transport's recovery of lost packets (failures at packet fidelity). */
void ib__qp_start(struct fabric *fab, struct fab_flow *flow);
void ib__qp_done(struct fabric *fab, struct fab_flow *flow);
void ib__qp_free_all(struct ib_state *st);
void ib__on_injected(struct fabric *fab, struct fab_flow *flow, struct fab_packet *pkt);
void ib__on_deliver(struct fabric *fab, struct fab_packet *pkt);
void ib__on_packet_lost(struct fabric *fab, int port, struct fab_packet *pkt, int queued);
void ib__qp_timeout(struct fabric *fab, struct ib_qp *qp);

/* ib_flow.c: the flow fidelity counterparts and the path of a flow. */
int ib__flow_path(struct fabric *fab, struct fab_flow *flow);
/* Under AR, splits a starting flow into one part per minimal path. */
void ib__flow_spread(struct fabric *fab, struct fab_flow *flow);
void ib__before_fill(struct fabric *fab);
/* Flow fidelity: the caps that the switches' round robin among input ports sets on the n flows
 * of a component (ib_arbiter.c), in cap[] (INFINITY: none), and for each capped flow the hop of
 * the last output where more than IB_FILL_MARGIN more of it arrives than leaves its last hop in
 * its held_hop (0: none; the buffers before it fill with the flow). They depend on the flows and
 * their paths, not on the rates max-min gave them. */
void ib__input_share_caps(struct fabric *fab, struct ib_state *st, struct fab_flow **flows, size_t n, double *cap);
void ib__on_rates(struct fabric *fab);
/* Parts a flow was spread over under AR at flow fidelity (its model_data), 1 otherwise. */
static inline int ib__flow_parts(const struct fab_flow *flow)
{
  return flow->model_data ? (int)(uintptr_t)flow->model_data : 1;
}
/* Throughput the credit window allows a flow on its path (0: the line rate). For a part, the
 * window of the first and last hops is shared with the other parts. */
double ib__window_cap(const struct fabric *fab, const struct fab_flow *flow);
/* Scratch array `buf` (capacity *cap items of `size` bytes), or a larger one that replaces it
 * when it holds fewer than `need`: the contents are not kept (ib_crossing.c). */
void *ib__scratch_reserve(void *buf, size_t *cap, size_t need, size_t size);
/* Sorts crossings by (buffer, unit), stable (ib_crossing.c). tmp has room for m. */
void ib__sort_crossings(struct crossing *a, struct crossing *tmp, size_t m);
/* Flow fidelity, one pace per upstream queue: the pace per unit of max-min weight of a unit's
 * crossings [begin, end) of one buffer when its blocked flows waiting there, just before their
 * bottlenecks, are held by two outputs or more; INFINITY otherwise (ib_crossing.c). */
double ib__unit_pace(struct fab_flow *const *flows, const int32_t *held, const struct crossing *c, size_t begin,
                     size_t end, int nvl);

#endif
