/* The fabric: a topology, a calendar and two engines that move transfers across it.
 *
 *  - the packet engine moves every packet (MTU segments) through every port: NIC injection at
 *    line rate, per-port queues serialised at line rate, propagation delay, store-and-forward or
 *    cut-through switching, completion when the last byte arrives;
 *  - the flow engine moves fluid flows: max-min fair rates by progressive filling, recomputed
 *    when a flow starts or finishes, completion events scheduled from the rates.
 *
 * The engine is the "ideal" fabric (no flow control, unlimited buffers). A model (InfiniBand,
 * RoCEv2) extends it through the hooks of struct fab_model; a NULL hook keeps the ideal
 * behaviour. Nothing here includes SimGrid: sg_fabric.c drives a fabric from SimGrid's clock,
 * unit tests drive it with fabric_run(). */
#ifndef SGFABRIC_FABRIC_H
#define SGFABRIC_FABRIC_H

#include <stdint.h>
#include <stdio.h>

#include "heap.h"
#include "param.h"
#include "rng.h"
#include "route.h"
#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAB_MAX_QUEUES 8 /* queues per port: InfiniBand data VLs, Ethernet priorities */
#define FAB_MAX_TAGS 16  /* traffic classes counted separately (tp, pp, dp, ...) */
/* Largest transfer, in bytes (2^50 = 1 PiB): sizes stay exact in a double with room for sums of
 * many transfers, and a transfer that large already takes hours of simulated time at 400 Gb/s. */
#define FAB_MAX_TRANSFER_BYTES 1125899906842624.0
/* Latest date an input may set, in seconds (a transfer's start, a failure; 1e5 s, about 28
 * hours): a date is a double, which resolves t x 2^-52, 22 ps at 1e5 s against 82 ns for one
 * 4 KiB packet at 400 Gb/s; at 1e24 s (start_us 1e30) the resolution is 1e8 s and a whole
 * transfer rounds to no time at all. */
#define FAB_MAX_DATE_S 1e5

typedef enum { FAB_FIDELITY_PACKET, FAB_FIDELITY_FLOW } fab_fidelity;
typedef enum { FAB_SWITCHING_CUT_THROUGH, FAB_SWITCHING_STORE_AND_FORWARD } fab_switching;
typedef enum { FAB_ROUTING_ECMP, FAB_ROUTING_ADAPTIVE } fab_routing;

struct fabric;
struct fab_flow;

typedef void (*fab_done_fn)(struct fabric *fab, struct fab_flow *flow, void *ctx);

enum fab_flow_state { FLOW_PENDING, FLOW_ACTIVE, FLOW_DRAINED, FLOW_DONE };

/* A transfer of bytes from one GPU to another. */
struct fab_flow {
  uint64_t id;  /* posting order, from 0 */
  uint64_t key; /* routing key: ECMP hashes it (a model may fold a QP's UDP port in) */
  int src_gpu, dst_gpu;
  int tag;                      /* traffic class for accounting, < FAB_MAX_TAGS */
  uint8_t state;                /* enum fab_flow_state */
  uint8_t hops;                 /* ports on the path */
  uint8_t queue;                /* queue (VL / priority) its packets use */
  uint8_t in_ring;              /* packet engine: linked in its NIC's injection ring */
  uint8_t conn;                 /* the connection between its two GPUs it goes over (a collective's
                                 * channel, 0 by default): a model may give each its own QPs */
  uint8_t ring_step;            /* one step of a ring moved step by step (coll/ring:steps), posted
                                 * when the step before it has arrived: its sender's steps are one
                                 * chain of messages */
  int32_t path[ROUTE_MAX_HOPS]; /* egress ports, source NIC first */
  double bytes;                 /* size */
  double message_B;             /* the messages it stands for, each a flow of its own at packet
                                 * fidelity (a pipelined ring edge: one step's chunk; a ring step:
                                 * its own bytes); 0: one message, the whole transfer */
  double post_s;                /* when the sender posted it */
  double start_s;               /* when injection began (post + NIC latency) */
  double finish_s;              /* when its last byte arrived */
  fab_done_fn on_done;
  void *ctx;
  /* packet engine */
  double injected;   /* bytes handed to the NIC */
  double delivered;  /* bytes arrived at the destination */
  double next_tx_s;  /* pacing: earliest date of its next packet (models set it) */
  uint32_t next_seq; /* sequence number of the next packet */
  struct fab_flow *ring_next;
  /* flow engine */
  double rate_Bps;                  /* current max-min rate */
  double rate_cap_Bps;              /* a model's limit on this flow's rate (0: none) */
  double standing_cap_Bps;          /* a model's limit that holds for the flow's path (InfiniBand:
                                     * its credit window; 0: none), set with the path: what
                                     * rate_cap_Bps starts from when the model recomputes it */
  double base_cap_Bps;              /* a model's limit that holds until the flows of the flow's
                                     * component change (InfiniBand: the credit window, lowered
                                     * by the switches' input-port shares; 0: none) */
  double share_weight;              /* its weight in max-min (1; a part of a transfer a model
                                     * spread over P paths: 1/P, so that where the parts meet,
                                     * at the NIC, the transfer gets one flow's share) */
  double goodput_fraction;          /* of the bytes it puts on its links, the part delivered (1; a
                                     * model's losses lower it: RoCE's go-back-N sends some again).
                                     * rate_Bps and the caps are what it delivers; its links carry
                                     * rate_Bps / goodput_fraction, and max-min shares that out */
  double extra_latency_s;           /* a model's delay added after draining (e.g. a standing queue it met) */
  double remaining;                 /* bytes not yet drained at the current rate */
  double last_s;                    /* date remaining was last brought up to date */
  int32_t engine_slot;              /* flow engine: its slot while active (-1: none) */
  int32_t port_pos[ROUTE_MAX_HOPS]; /* flow engine: its index in each path port's flow list */
  int32_t active_index;             /* position in the active set */
  void *model_data;                 /* per-flow state of the model */
  struct fab_flow *free_next;
  /* split transfers (fabric_flow_split) */
  struct fab_flow *parent; /* a part: the flow it was carved from (NULL otherwise) */
  uint32_t parts_left;     /* a split flow: parts not finished yet */
  double split_bytes;      /* a split flow: bytes its parts carry (added back when all are done) */
  /* "why" accounting (why.h; only when fab->why is set) */
  uint32_t call;        /* the collective instance it belongs to (fabric_new_call), 0: none */
  uint8_t why_flags;    /* why.c's marks */
  uint8_t spread;       /* a model spread the transfer evenly over its minimal paths (InfiniBand's
                            * adaptive routing at flow fidelity): its parts share links by design,
                            * they are no hashing collision */
  uint8_t fixed_path;   /* posted with fabric_post_path: its path is the caller's, not routed */
  uint8_t held_hop;     /* a model's note of the hop where base_cap_Bps holds the flow back
                         * (InfiniBand: the last switch output whose input-port shares scaled it) */
  uint8_t fail_stalled; /* failures: it crosses a failed link (or found no live path) */
  int32_t stall_link;   /* failures: the link it is stalled on */
  double stall_s;       /* failures: since when it has made no progress (packet fidelity: its last
                         * delivery) */
  int32_t fail_index;   /* failures, packet fidelity: its place in the failures' list of packet flows */
  double own_cap_Bps;   /* fabric_post_path's cap (0: none): applied on top of the model's
                            * rate_cap_Bps, which a model rewrites at will */
};

/* The rate the flow engine holds a flow to (0: none): the lower of the model's cap and the
 * poster's. */
static inline double fab_flow_cap(const struct fab_flow *f)
{
  double a = f->rate_cap_Bps, b = f->own_cap_Bps;
  return a > 0 && (b <= 0 || a < b) ? a : b;
}

/* What a flow's links carry: its rate over its goodput fraction (the two are equal without loss). */
static inline double fab_flow_wire_rate(const struct fab_flow *f) { return f->rate_Bps / f->goodput_fraction; }

/* One packet in flight. */
struct fab_packet {
  struct fab_packet *next; /* queue link */
  struct fab_flow *flow;
  double tail_s; /* date its tail is available at the node it is at (cut-through) */
  uint32_t seq;  /* packet number within the flow */
  uint32_t bytes;
  int32_t node;       /* node it is at or travelling to */
  int32_t in_port;    /* the peer's egress port it arrived through (-1 at the source) */
  uint8_t hop;        /* index of the next egress port on the flow's path */
  uint8_t queue;      /* VL / priority */
  uint8_t flags;      /* model bits (ECN CE, ...) */
  uint8_t link_epoch; /* failures: the epoch of the link it was last sent on (failure.h) */
  int32_t out_port;   /* egress port a model chose for it at its current node (models that keep packets) */
};

/* Per-port state of the packet engine and per-port statistics of both engines. */
struct fab_port {
  struct fab_packet *head[FAB_MAX_QUEUES], *tail[FAB_MAX_QUEUES];
  double queued_bytes[FAB_MAX_QUEUES];
  double total_queued;   /* bytes waiting in all queues */
  struct fab_flow *ring; /* NIC ports: flows with bytes to inject (circular, last inserted) */
  double kick_s;         /* a pacing retry is scheduled at this date (0: none) */
  uint8_t busy;
  uint8_t next_queue;  /* round-robin position among queues */
  uint8_t cur_queue;   /* the packet being transmitted: its queue, */
  uint32_t cur_bytes;  /* its size */
  int32_t cur_in_port; /* and the port it arrived through (-1: injected here) */
  /* statistics */
  double tx_bytes;    /* bytes transmitted */
  double busy_s;      /* time spent transmitting */
  double peak_queued; /* largest total_queued seen */
  uint64_t tx_packets;
};

/* What on_arrive decides for a packet that reached a node. */
enum fab_arrive {
  FAB_ARRIVE_DROP = 0,    /* the model dropped it (buffer full, random loss): counted in drops */
  FAB_ARRIVE_FORWARD = 1, /* the engine routes it and queues it at its egress port */
  FAB_ARRIVE_TAKEN = 2,   /* the model keeps it (e.g. in an input buffer) and hands it to an
                              egress port later through next_packet */
};

/* Counters (summary.json's "counters" object) as data: the core's and the model's are gathered in
 * a struct fab_counters, then written by the core. */
enum fab_counter_type {
  FAB_COUNTER_REAL,     /* value: an integral one is written as an integer */
  FAB_COUNTER_COUNT,    /* count */
  FAB_COUNTER_TEXT,     /* text, written as a JSON string (a port's or a link's name, a mode) */
  FAB_COUNTER_PORT_MAP, /* per_port: {"node->peer": value, ...} over the ports whose value > 0 */
};
struct fab_counter {
  const char *name; /* its member name (a string that outlives the writing: a literal) */
  uint8_t type;     /* enum fab_counter_type */
  uint8_t modelled; /* 0: not modelled at this fidelity, written null (not a 0 that reads as
                     * "none happened") */
  uint8_t rounded;  /* FAB_COUNTER_PORT_MAP: values rounded to integers */
  double value;
  uint64_t count;
  const double *per_port; /* FAB_COUNTER_PORT_MAP: one value per port, NULL: an empty map */
  char text[512];
};
struct fab_counters {
  struct fab_counter *items;
  size_t n, cap;
};
void fabric_counter_real(struct fab_counters *c, const char *name, int modelled, double value);
void fabric_counter_count(struct fab_counters *c, const char *name, int modelled, uint64_t count);
void fabric_counter_text(struct fab_counters *c, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* per_port must stay valid until the counters are written (the model's state, not its stack). */
void fabric_counter_port_map(struct fab_counters *c, const char *name, const double *per_port, int rounded);

/* What on_tx_done learns of the packet that finished leaving a port. */
struct fab_tx_done {
  int queue;      /* its queue (VL / priority) */
  uint32_t bytes; /* its payload */
  int in_port;    /* the peer's egress port it arrived through (-1: injected at this port) */
};

/* A fabric model: a descriptor of hooks in four groups (docs/ARCHITECTURE.md, "Writing a
 * model"). Every hook is optional; a NULL hook keeps the core's (ideal) behaviour. */
struct fab_model {
  const char *name;
  /* Bytes of per-fabric state the model needs (as a Linux qdisc's priv_size): the core allocates
   * them zeroed before init and frees them after fini; the model reaches them through
   * fabric_model_priv(). 0: no state. */
  size_t state_size;

  /* The fabric's and the flows' lives, and the results. */
  struct {
    /* Called once when the fabric is created; returns 0 or -1 with a message naming the
     * parameter (fini is called then too). */
    int (*init)(struct fabric *fab, char *err, size_t errlen);
    void (*fini)(struct fabric *fab);
    /* A flow is about to start: set key, queue, rate cap, pacing, model_data. */
    void (*flow_start)(struct fabric *fab, struct fab_flow *flow);
    void (*flow_done)(struct fabric *fab, struct fab_flow *flow);
    /* Called after flow_start for a flow between two GPUs: writes the flow's egress ports into
     * flow->path (its routing, e.g. forwarding tables) and returns the hop count, or -1 when
     * unreachable. NULL: the core's hashed up-down path. */
    int (*flow_path)(struct fabric *fab, struct fab_flow *flow);
    /* Failures (failure.h): the delay, in seconds, from a link going down (up: 1) to the routing
     * using the change. NULL: 0 (the routing knows at once). */
    double (*recovery_delay)(struct fabric *fab, int up);
    /* The model's counters, appended to out with fabric_counter_*() in the order summary.json's
     * "counters" object lists them (after the core's own, before "drops"). The core writes them. */
    void (*counters)(struct fabric *fab, struct fab_counters *out);
    /* Writes the time series the user asked for (CSV files) into the results directory:
     * open(ctx, "name.csv") gives a file to write and close; returns 0 or -1. */
    int (*series)(struct fabric *fab, FILE *(*open)(void *ctx, const char *name), void *ctx);
  } lifecycle;

  /* Packet engine (packet fidelity, fabric links). */
  struct {
    /* May the packet at the head of (port, queue) be transmitted now? (credits, PFC pause) When
     * it says no, the model calls fabric_port_kick(port) once the answer may have changed. */
    int (*may_send)(struct fabric *fab, int port, int queue, const struct fab_packet *pkt);
    /* A switch port is idle and the model keeps packets itself (FAB_ARRIVE_TAKEN): return the
     * next packet to transmit on port, removed from the model's buffers, or NULL. Its out port
     * must be port; the engine calls on_transmit next. */
    struct fab_packet *(*next_packet)(struct fabric *fab, int port);
    /* Transmission starts (dequeue): ECN marking, credit consumption. */
    void (*on_transmit)(struct fabric *fab, int port, struct fab_packet *pkt);
    /* A packet finished its transmission on port: it has left this node's buffer. tx describes
     * it (the packet itself is on its way, or already arrived and recycled). */
    void (*on_tx_done)(struct fabric *fab, int port, const struct fab_tx_done *tx);
    /* A packet reached a node (switch or destination GPU); returns an enum fab_arrive. */
    int (*on_arrive)(struct fabric *fab, int node, struct fab_packet *pkt);
    /* A packet reached its destination GPU: the model updates flow->delivered (in-order bytes).
     * NULL: every packet counts. */
    void (*on_deliver)(struct fabric *fab, struct fab_packet *pkt);
    /* The NIC handed a new packet of this flow to its port: pacing (next_tx_s), PSN bookkeeping. */
    void (*on_injected)(struct fabric *fab, struct fab_flow *flow, struct fab_packet *pkt);
    /* Failures at packet fidelity (failure.h). A link went down (up: 1): the model drops the
     * packets it holds for the link's two egress ports (fabric_failures_packet_lost) and resets,
     * or on up restores, what it accounts per link (InfiniBand's credits). NULL: nothing held. */
    void (*on_link_state)(struct fabric *fab, int link, int up);
    /* Failures at packet fidelity: a packet was lost to a failed link, on the wire (queued 0) or
     * queued at a switch egress port (queued 1: still counted in that switch's buffer). The model
     * releases what it accounted for it; its transport learns of the loss only by its own timers.
     * The fabric frees the packet after the call. */
    void (*on_packet_lost)(struct fabric *fab, int port, struct fab_packet *pkt, int queued);
  } packet;

  /* Flow engine (flow fidelity, and NVLink transfers at either). */
  struct {
    /* A recomputation is about to share out the bandwidth of a component (its flows:
     * fabric_recomputed_flows, bytes left up to date): the model may set their rate_cap_Bps
     * directly, and the filling that follows applies them. Caps that depend only on the
     * component's flows belong here: set after the filling (on_rates), they would need a second
     * recomputation of the same component at the same date. */
    void (*before_fill)(struct fabric *fab);
    /* Rates were recomputed (max-min under the caps): the model may inspect the active flows
     * (fabric_active_flows) and change caps, then call fabric_flow_caps_changed(). */
    void (*on_rates)(struct fabric *fab);
    /* coll/ring:auto at flow fidelity: nonzero if rings are to move step by step, not as one
     * pipelined transfer per edge, because a mechanism of the model acts on the steps (RoCE's
     * held ports, docs/roce.md "Ring steps"). NULL: pipelined. */
    int (*rings_in_steps)(const struct fabric *fab);
  } flow;

  /* Time (both fidelities). */
  struct {
    /* A timer the model armed (fabric_timer_arm) is due and was not cancelled: kind is one of
     * the model's own timer kinds, ptr and arg what it armed it with. */
    void (*on_timer)(struct fabric *fab, int kind, void *ptr, uint32_t arg);
    /* The calendar is empty: the model arms the timers it held back (e.g. credit returns it
     * applies lazily, fabric_timer_arm_seq with their reserved sequence numbers), so that the
     * run ends where it would have ended had they been scheduled all along. */
    void (*on_idle)(struct fabric *fab);
  } timers;
};

/* Why a model dropped a packet (fabric_count_drop). */
enum fab_drop_reason {
  FAB_DROP_BUFFER, /* no room for it in the switch's buffer (or its PFC headroom) */
  FAB_DROP_RANDOM, /* lost on the link (a model's loss rate) */
  FAB_DROP_REASONS,
};

struct fab_stats {
  uint64_t events;      /* calendar events processed */
  uint64_t packets;     /* packets injected */
  uint64_t packet_hops; /* packet transmissions on any port */
  uint64_t flows_posted, flows_done;
  uint64_t rate_updates;     /* flow engine: max-min recomputations */
  uint64_t flows_recomputed; /* flow engine: flows those recomputations visited (their components' sizes) */
  double bytes_delivered;
  double fabric_bytes[FAB_MAX_TAGS]; /* bytes injected into the fabric (NIC ports) per tag */
  double nvlink_bytes[FAB_MAX_TAGS]; /* bytes moved over NVLink per tag */
  double fct_sum_s, fct_max_s;
  double last_delivery_s;   /* when the last flow completed: the end of the fabric's activity */
  double active_end_s;      /* set by a caller whose run ends elsewhere (a workload's iteration); 0: unset */
  double flow_wire_extra_B; /* flow engine: bytes its links carried beyond what flows delivered
                              (goodput fractions below 1, fabric_flow_count_wire_extra: a model's
                              estimate of resent bytes) */
  uint64_t drops;
  uint64_t drops_by[FAB_DROP_REASONS]; /* of which, per reason the model gave (fabric_count_drop) */
};

struct fabric {
  struct topo *topo;
  const struct param_set *params;
  const struct fab_model *model;
  void *model_state; /* the model's state_size bytes, owned by the core (fabric_model_priv) */
  fab_fidelity fidelity;
  fab_switching switching;
  fab_routing routing;
  double mtu;
  double frame_overhead_B; /* wire bytes of a packet beyond its payload (headers, CRCs, preamble,
                              inter-frame gap): a model sets it in init; 0 (ideal) by default */
  double nic_latency_s;
  double switch_latency_s; /* cut-through latency of a switch: the platform's, a model may override it */
  uint64_t seed;
  uint64_t route_seed; /* the switches' ECMP hash seed: the run's seed unless a model sets it in
                          init (RoCE: roce/ecmp-seed), so that paths can be held while the other
                          random draws change with the seed */
  struct fab_rng rng;
  struct fab_heap events;
  double now;
  uint64_t cur_seq; /* sequence number of the event being processed: with now, its place in the order */
  struct fab_port *ports;
  struct fab_stats stats;
  uint64_t next_flow_id;
  struct fab_flow *free_flows;
  struct fab_packet *free_packets;
  struct fab_call *free_calls; /* fabric_call_at's closures, recycled (from the slabs) */
  /* The model's timers (fabric_timer_arm): one slot per timer in the calendar, freed when its
   * event is processed; a slot's generation tells a live id from a stale one. */
  struct fab_timer *timers;
  uint32_t n_timers, cap_timers;
  int32_t free_timer; /* first free slot, -1: none */
  int32_t fired_kind; /* the timer being (or last) dispatched: its kind and arg, */
  uint32_t fired_arg; /* for the watchdog's report */
  void **slabs;
  size_t slab_count, slab_capacity;
  struct flow_engine *fe;
  uint64_t active_flows;
  uint32_t next_call;  /* the last collective instance id given (fabric_new_call) */
  struct fab_why *why; /* NULL, or the per-link accounting of the "why" reports (why.h) */
  /* In-network reduction (the collectives' SHARP trees): per node, the trees running through it,
   * allocated by the collectives on first use, freed with the fabric; and the collectives. */
  int *innet_trees;
  int innet_active;
  /* Watchdog (fabric/watchdog-events): a run that processes that many events in a row at one
   * simulated date, or, at packet fidelity, without delivering a byte, is a livelock. The fabric
   * then stops (its calendar reads as empty) and says why in stall_msg. */
  uint64_t watchdog_events;  /* threshold, 0: off */
  double wd_date;            /* date of the current run of same-date events */
  uint64_t wd_same_date;     /* events processed at wd_date */
  uint64_t wd_progress;      /* bumped when bytes reach a destination in order or a flow ends */
  uint64_t wd_seen_progress; /* wd_progress when wd_no_progress was last reset */
  uint64_t wd_no_progress;   /* packet fidelity: events since the last progress */
  int stalled;               /* the watchdog fired: no event is processed any more */
  /* Failures (failure.h): NULL unless a schedule was installed. */
  struct fab_failures *failures;
  uint8_t *port_failed; /* per port: its link is down (capacity 0) */
  char stall_msg[1024];
};

/* Calendar event types of the engines. Models do not schedule events: they arm timers
 * (fabric_timer_arm), which the calendar carries as FAB_EV_TIMER. */
enum {
  FAB_EV_FLOW_START,
  FAB_EV_TX_DONE,
  FAB_EV_ARRIVE,
  FAB_EV_KICK,
  FAB_EV_FLOW_DRAINED,
  FAB_EV_FLOW_DONE,
  FAB_EV_FLOW_RECOMPUTE,
  FAB_EV_TIMER, /* a model timer (arg: its slot) */
  FAB_EV_CALL,  /* fabric_call_at */
};

/* The core's parameter table ("fabric/..."); registered by fabric_register_params(). */
extern const struct param_def fabric_params[];
void fabric_register_params(void);

/* The ideal model: no flow control, unlimited buffers. */
extern const struct fab_model fab_model_ideal;

/* SimGrid plugin style (sg_ib_plugin_init(), sg_roce_plugin_init()): the model a plugin's init
 * selected for the platform sgf_load_platform() loads next. Selecting after the platform is
 * loaded, or a second model, prints why on stderr and aborts, as SimGrid's xbt_assert does: it is
 * a programming error that no later call could repair. fabric_plugin_model() is NULL until a
 * plugin selects one; fabric_plugin_mark_loaded() is the loader's. */
void fabric_plugin_select(const struct fab_model *model, const char *caller);
const struct fab_model *fabric_plugin_model(void);
void fabric_plugin_mark_loaded(void);

/* Creates a fabric over topo (which it does not own). Returns NULL with a message in err. */
struct fabric *fabric_new(struct topo *topo, const struct param_set *params, const struct fab_model *model,
                          fab_fidelity fidelity, uint64_t seed, char *err, size_t errlen);
void fabric_free(struct fabric *fab);
/* Whether bytes is a transfer size the fabric moves: a whole number in 0..FAB_MAX_TRANSFER_BYTES. */
int fabric_bytes_valid(double bytes);

/* Posts a transfer that starts at start_s (>= fabric time). on_done is called when its last byte
 * arrives; the flow is recycled when on_done returns. bytes must be a whole number in
 * 0..FAB_MAX_TRANSFER_BYTES (fabric_bytes_valid): the readers refuse other sizes, a caller passing
 * one is a bug and aborts with a message. */
struct fab_flow *fabric_post(struct fabric *fab, int src_gpu, int dst_gpu, double bytes, double start_s, int tag,
                             fab_done_fn on_done, void *ctx);

/* Gives the flow fabric_post just returned the id (and so the hash key) id instead of the next
 * number of the sequence, which goes back to it: background traffic posted beside a job must not
 * shift the ids, and so the ECMP paths and tie-breaks, of the job's flows. id must be unique
 * and outside the sequence (e.g. above 2^62). */
void fabric_flow_renumber(struct fabric *fab, struct fab_flow *flow, uint64_t id);

/* Posts a transfer along an explicit path of hops (1..ROUTE_MAX_HOPS) egress ports, consecutive
 * on the topology, that need not end at a GPU: the legs of an in-network reduction (a NIC up to
 * its leaf, a switch up to its parent in an aggregation tree, an NVSwitch down to a GPU). gpu
 * names the GPU on whose behalf it moves (src_gpu = dst_gpu = gpu: the model's flow_start sees
 * a transfer that does not leave the node, so it neither splits it into queue pairs nor paths
 * nor congestion-controls it). It rides the flow engine at either fidelity, capped at cap_Bps
 * (0: none), and pays the NIC latency only when its first port leaves a GPU. The fabric's byte
 * counters (fabric_bytes, nvlink_bytes) count it only when it leaves a GPU: they count what the
 * GPUs inject. */
struct fab_flow *fabric_post_path(struct fabric *fab, int gpu, const int *ports, int hops, double bytes, double start_s,
                                  int tag, double cap_Bps, fab_done_fn on_done, void *ctx);

/* A new collective instance id (1, 2, ...): the caller sets it as the call of the instance's flows,
 * so that the "why" accounting (why.h) knows which transfers belong to one collective. */
static inline uint32_t fabric_new_call(struct fabric *fab) { return ++fab->next_call; }
/* The model's state: model->state_size zeroed bytes allocated before its init, freed after its
 * fini (NULL when state_size is 0). */
static inline void *fabric_model_priv(const struct fabric *fab) { return fab->model_state; }
/* Date of the next event, or -1 when idle. */
double fabric_next_time(struct fabric *fab);
/* Processes every event dated <= until; the clock stays at the last event processed. */
void fabric_advance(struct fabric *fab, double until);
/* Processes events until none is left (tests and flow-only runs). */
void fabric_run(struct fabric *fab);
/* Whether the watchdog stopped the fabric (a livelock); its report, naming the date, the event,
 * the port or flow it acted on and the queues, is then fabric_stall_message(). */
static inline int fabric_stalled(const struct fabric *fab) { return fab->stalled; }
static inline const char *fabric_stall_message(const struct fabric *fab) { return fab->stall_msg; }

/* Calls fn(fab, ctx) at date time (a timer for the layers above the fabric: collectives). */
void fabric_call_at(struct fabric *fab, double time, void (*fn)(struct fabric *fab, void *ctx), void *ctx);
/* Schedules an engine event (the engines' own; a model arms timers instead). */
void fabric_schedule(struct fabric *fab, double time, uint32_t type, uint32_t arg, void *ptr);

/* Model timers. A model declares its own timer kinds (an enum) and arms a timer with a kind and
 * the operands it needs (ptr, arg); when the date comes, the core calls the model's on_timer
 * with them. Timers take their place in the calendar's order like any event: (date, sequence
 * number), the sequence number taken when the timer is armed, so simultaneous timers fire in
 * the order they were armed. A cancelled timer never fires; its calendar entry is dropped when
 * its date comes (lazy deletion: it is still counted among the events processed, and the clock
 * still reaches its date). */
typedef uint64_t fab_timer_id; /* 0: no timer */
struct fab_timer {
  void *ptr;
  uint32_t arg;
  int32_t kind;
  uint32_t gen;      /* bumped when the slot is freed: ids of earlier timers go stale */
  uint8_t armed;     /* in the calendar */
  uint8_t cancelled; /* fabric_timer_cancel: dropped when its date comes */
  int32_t free_next; /* free list of slots */
};
/* Arms a timer at date (>= fab->now in practice; an earlier date fires at once, in order). */
fab_timer_id fabric_timer_arm(struct fabric *fab, double date, int kind, void *ptr, uint32_t arg);
/* Arms a timer at the place (date, seq) in the order with a sequence number reserved earlier
 * (fabric_reserve_seq): for a model that handles some of its timers lazily. */
fab_timer_id fabric_timer_arm_seq(struct fabric *fab, double date, uint64_t seq, int kind, void *ptr, uint32_t arg);
/* Cancels a pending timer: it will not fire. Returns 1, or 0 when id is 0, has fired, or was
 * cancelled already (so cancelling is always safe). */
int fabric_timer_cancel(struct fabric *fab, fab_timer_id id);
/* Whether id is armed and neither fired nor cancelled. */
int fabric_timer_pending(const struct fabric *fab, fab_timer_id id);
/* Takes the sequence number an event scheduled now would get, without scheduling it: a model that
 * handles some of its timers lazily keeps (time, seq) as their place in the order, compares it
 * with the current event's (now, cur_seq) and arms them with fabric_timer_arm_seq only when
 * something must happen at that place. */
static inline uint64_t fabric_reserve_seq(struct fabric *fab) { return heap_reserve_seq(&fab->events); }
/* Whether an event placed at (time, seq) comes before the event being processed. */
static inline int fabric_before_now(const struct fabric *fab, double time, uint64_t seq)
{
  return time < fab->now || (time == fab->now && seq < fab->cur_seq);
}
/* Whether (time, seq) is the event being processed or one before it. */
static inline int fabric_at_or_before_now(const struct fabric *fab, double time, uint64_t seq)
{
  return time < fab->now || (time == fab->now && seq <= fab->cur_seq);
}
/* A port's packet-engine state and statistics, read-only: what a model reads of the queues
 * (bytes queued per queue and in all, the peak) without reaching into the engine's array. */
static inline const struct fab_port *fabric_port_view(const struct fabric *fab, int port) { return &fab->ports[port]; }
/* Events in the calendar (engines' and timers', cancelled ones until their date). */
static inline size_t fabric_pending_events(const struct fabric *fab) { return heap_size(&fab->events); }
/* Packet engine, from on_arrive before it returns FAB_ARRIVE_DROP: counts the drop under its
 * reason (the engine counts it in stats.drops). */
static inline void fabric_count_drop(struct fabric *fab, enum fab_drop_reason reason) { fab->stats.drops_by[reason]++; }
/* Packet engine: (re)tries transmission on a port, e.g. after credits returned or a pause ended. */
void fabric_port_kick(struct fabric *fab, int port);
/* Packet engine: the sender goes back to packet seq (go-back-N): bytes from there are injected
 * again. */
void fabric_flow_rewind(struct fabric *fab, struct fab_flow *flow, uint32_t seq);
/* From a model's flow_start: carves bytes off flow into a part that starts now with its own routing
 * key (e.g. one more QP of a connection, taking its own ECMP path). The model's flow_start is called
 * for the part too (part->parent set). The flow completes, once, when it and all its parts have;
 * its on_done then sees the whole size. */
struct fab_flow *fabric_flow_split(struct fabric *fab, struct fab_flow *flow, double bytes, uint64_t key);
/* Packet engine: the packet's egress port at its current node (from the flow's path, or the
 * routing choice); used by models that keep packets themselves. */
int fabric_route_packet(struct fabric *fab, struct fab_packet *pkt);
/* Flow engine: caps may have changed anywhere; every active flow is recomputed. A model that
 * knows which flows it changed calls fabric_flow_caps_changed_for or fabric_flow_set_cap
 * instead. */
void fabric_flow_caps_changed(struct fabric *fab);
/* Flow engine: the model wrote the rate_cap_Bps of these n flows; only their components are
 * recomputed (once, at the current date), with the same rates and completion dates as
 * fabric_flow_caps_changed gives. On a fabric of many components (a permutation, rings, an
 * incast beside other traffic) that visits a few flows instead of all of them. */
void fabric_flow_caps_changed_for(struct fabric *fab, struct fab_flow *const *flows, size_t n);
/* Flow engine: sets one flow's rate cap; only its component is recomputed. */
void fabric_flow_set_cap(struct fabric *fab, struct fab_flow *flow, double cap_Bps);
/* Flow engine: sets a flow's goodput fraction (fab_flow), its bytes so far counted at the old
 * one. Like rate_cap_Bps it takes effect at the next recomputation of the flow's component: a
 * model sets both together, before a filling or before fabric_flow_caps_changed_for. Returns
 * whether it changed. */
int fabric_flow_set_goodput(struct fabric *fab, struct fab_flow *flow, double fraction);
/* Flow engine: bytes a flow's links carried beyond what it delivered, other than its goodput
 * fraction's (a model's estimate: RoCE's go-back-N sending in vain before a timeout), counted on
 * every port of its path (tx_bytes) and in stats.flow_wire_extra_B. */
void fabric_flow_count_wire_extra(struct fabric *fab, const struct fab_flow *flow, double bytes);
/* Flow engine: the capacity max-min shares out on a port, its line rate unless a model lowered it
 * for an effect of its own (IB's adaptive-routing imbalance); returns whether it changed. Set from
 * before_fill for a port of the component about to be filled, that filling takes it; otherwise a
 * change recomputes the port's component if flows cross it. */
int fabric_port_set_capacity(struct fabric *fab, int port, double rate_Bps);
double fabric_port_capacity(const struct fabric *fab, int port);
/* Framing (fab->frame_overhead_B): the rate at which a fabric port carries payload when its
 * packets are full MTUs, line rate x MTU / (MTU + overhead); NVLink ports carry no framing. The
 * flow engine shares this out (its default port capacity). */
double fabric_port_payload_rate(const struct fabric *fab, int port);
/* Flow engine: how many active flows cross a port (its load, for routing choices). */
int fabric_port_flow_count(const struct fabric *fab, int port);
/* Flow engine, from on_rates: whether the recomputation just done followed a flow starting or
 * draining (1), or only cap or capacity changes (0): in the latter case the flow set of every
 * port is what the previous on_rates saw. */
int fabric_recompute_followed_flow_change(const struct fabric *fab);
/* Flow engine: the flows currently holding bandwidth. */
struct fab_flow **fabric_active_flows(const struct fabric *fab, size_t *count);
/* Flow engine, from on_rates: the ports of the component just recomputed (those left without a
 * flow included), and whether one of them is saturated (max-min gave out its capacity). */
const int *fabric_recomputed_ports(const struct fabric *fab, int *count);
int fabric_port_saturated(const struct fabric *fab, int port);
/* Flow engine, from on_rates: the flows whose rates were just recomputed (the component of the
 * ports that changed; no flow outside it shares a port with one inside). */
struct fab_flow **fabric_recomputed_flows(const struct fabric *fab, size_t *count);

/* The fabric's counters, the core's then the model's, the last one "drops" (0 or null), into c
 * (which the caller frees: fabric_counters_free). */
void fabric_counters(struct fabric *fab, struct fab_counters *c);
void fabric_counters_free(struct fab_counters *c);
/* Writes summary.json's "counters" members, one per line, indent first, no trailing comma. */
void fabric_write_counters(struct fabric *fab, FILE *out, const char *indent);
/* The time over which link utilisation is taken: stats.active_end_s when the caller set it (the
 * iteration time of a workload), else the last delivery (a timer still pending after it, e.g. a
 * retransmission timeout, is not activity), or the clock if nothing was delivered. */
double fabric_active_time(const struct fabric *fab);
/* Whether a simulation that ended at end_s ran past FAB_MAX_DATE_S, where its dates no longer
 * time a packet; if so, msg completes "the <subject> " ("end ... s into the simulation, ..."). */
int fabric_ended_too_late(double end_s, char *msg, size_t len);
/* Writes links.csv: one row per direction of each fabric link. */
int fabric_write_links_csv(const struct fabric *fab, FILE *out);

/* Internal to the engines. */
void fab_pkt_engine_start_flow(struct fabric *fab, struct fab_flow *flow);
/* A finished flow leaves its NIC's injection ring (go-back-N may have put it back). */
void fab_pkt_engine_forget_flow(struct fabric *fab, struct fab_flow *flow);
void fab_pkt_engine_event(struct fabric *fab, const struct fab_event *ev);
struct flow_engine *fab_flow_engine_new(struct fabric *fab);
/* Sets every port's capacity to its payload rate (after the model's init chose the framing). */
void fab_flow_engine_init_capacity(struct fabric *fab);
void fab_flow_engine_free(struct flow_engine *fe);
void fab_flow_engine_start_flow(struct fabric *fab, struct fab_flow *flow);
void fab_flow_engine_event(struct fabric *fab, const struct fab_event *ev);
void fab_flow_engine_recompute(struct fabric *fab);
/* Failures: the active flows crossing a port; a port's capacity must be looked at again; a flow's
 * bytes left brought up to the current date; a flow moved onto another path. */
struct fab_flow *const *fabric_port_flows(const struct fabric *fab, int port, int *count);
void fab_flow_engine_touch_port(struct fabric *fab, int port);
void fab_flow_engine_sync(struct fabric *fab, struct fab_flow *f);
void fab_flow_engine_reroute(struct fabric *fab, struct fab_flow *f, const int *path, int hops);
void fabric_flow_finished(struct fabric *fab, struct fab_flow *flow);
struct fab_packet *fabric_packet_alloc(struct fabric *fab);
void fabric_packet_free(struct fabric *fab, struct fab_packet *pkt);
/* Latency from the last byte leaving the source until it reaches the destination on an idle path:
 * propagation, switch latencies and, store-and-forward, the re-serialisation at every further hop
 * of the packet that paces the train (the largest one). */
double fabric_path_tail_latency(const struct fabric *fab, const struct fab_flow *flow, double packet_bytes);

#ifdef __cplusplus
}
#endif

#endif
