/* RoCEv2 at flow fidelity: the switch egresses DCQCN holds, measured on the packet model.
 *
 * Where the senders' DCQCN floor rates do not saturate a congested egress (roce_dcqcn_floor.h)
 * flow fidelity took DCQCN to hold its queue in the RED band and shared the port max-min, the
 * CoNEXT'16 fixed point, which keeps it busy. The packet model does not settle there with the
 * nic preset at 100 Gb/s: the senders cycle between an upper state (about 78% of the line rate
 * under continuous marking, the byte counter's increases cancelling the cuts) while the queue
 * climbs to PFC's XOFF, and the trapped state at the minimum rate, where the queue drains and
 * the port then idles until the rate timer brings them back (docs/roce.md, "Where DCQCN holds a
 * port, measured on the packet model"). Two to seven GPUs sending into a GPU of their own leaf
 * keep it busy 84-85% of the time.
 *
 * That cycle depends on every constant of the machine, the RED band, the PFC thresholds and the
 * buffer, so it is measured with the packet model itself rather than assumed: for each shape of
 * held port (roce_held_shape), senders into one GPU (into each of two GPUs of one switch where
 * two or more of the switch's egresses are held, as they share its buffer) for
 * ROCE_HELD_SPAN_S, with the run's RoCE parameters (one QP per connection, no traces), in
 * ROCE_HELD_PHASES phases of the port's age, each twice as long as the one before. For the first
 * ROCE_HELD_START_S the senders, started together at line rate, are cut in step and fall into
 * the trapped state together; later they may drift apart, and the port is busier (five senders
 * at 100 Gb/s over 100 ns links: 85% in the first 20 ms, 89% in the next 20, 98% and 97% in the
 * next 40 and 80; two senders stay at 83-84%; with 1 us links five stay in step too). A port held
 * for a few milliseconds (an expert all-to-all) sees the first phase, one held through a
 * data-parallel all-reduce the later ones as well, so flow fidelity gives a held port the phase
 * of its age, the time since it became held. Each phase gives a held port
 *  - its utilisation: its capacity at flow fidelity is that fraction of its payload rate;
 *  - the marks per packet sent through it, and the CNPs and DCQCN cuts per flow and second,
 *    from which the flows crossing it estimate their ECN marks, CNPs and cuts, and the PFC
 *    paused time per sender, from which the links feeding it estimate theirs (roce_flow_est.c). */
#ifndef SGFABRIC_ROCE_HELD_PORT_H
#define SGFABRIC_ROCE_HELD_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

#define ROCE_HELD_MAX_SENDERS 16
#define ROCE_HELD_MAX_PORTS 2             /* held egresses of one switch measured side by side */
#define ROCE_HELD_START_S 20e-3           /* the first phase: the senders in step */
#define ROCE_HELD_PHASES 4                /* the phases: [0, 20), [20, 40), [40, 80), [80, 160) ms of age */
#define ROCE_HELD_MIN_MESSAGE_B (1 << 20) /* smaller ring steps do not count as messages */
#define ROCE_HELD_MAX_RUNS 64             /* runs whose packet model is kept for their later phases */
#define ROCE_HELD_SPAN_S (ROCE_HELD_START_S * (1 << (ROCE_HELD_PHASES - 1)))
/* roce/flow-held-measure:fine and feeders: phases from 0.625 ms, each twice the one before, to the
 * same span ([0, 0.625), [0.625, 1.25), ... [80, 160) ms), but for a port that a flow chains to
 * another held port (roce_held_update); and the feeders of a port measured with them */
#define ROCE_HELD_FINE_PHASES 9
#define ROCE_HELD_FINE_START_S (ROCE_HELD_SPAN_S / (1 << (ROCE_HELD_FINE_PHASES - 1)))
#define ROCE_HELD_MAX_PHASES ROCE_HELD_FINE_PHASES /* the more of the two schedules */
#define ROCE_HELD_FEEDERS 6                        /* switch egresses feeding a port that its measure can run */
#define ROCE_HELD_FEEDER_FLOWS 5                   /* transfers through each of them */
/* A port that ring steps hold again within this of its release keeps its age. A ring's steps are
 * transfers of their own (coll/ring:steps), each posted when the one before has arrived; where a
 * port's steps end together it is released between them, yet its senders' restarts are as far
 * out of step after the gap as before it. Taking each step for a new holding measured the
 * start-up in step again at every step: Llama-3 8B on 1,024 GPUs of a 2:1 fat-tree at 100 Gb/s,
 * 1.7242 s against packet fidelity's 1.4861 s; with the age kept (and the steps measured as
 * messages) 1.4771 s (docs/validation-iterations.md, "At 1,024 GPUs and more"); with the age
 * kept for every flow, 1.4769-1.4791 s for gaps from 10 µs to 2.5 ms. The gap is the measure's finest
 * phase: a port idle for longer starts afresh. Other flows start a holding of their own (the
 * next bucket's pipelined ring edges, an all-to-all's transfers, which start together); keeping
 * the age for them too moved Mixtral at 400 Gb/s from +1.8 % to +2.3 % of packet fidelity. */
#define ROCE_HELD_GAP_S ROCE_HELD_FINE_START_S

/* What the packet model showed at a held port over one phase of the measure. */
struct roce_held_phase {
  double utilisation;     /* bytes served over the payload rate x time, in (0, 1] */
  double marked_fraction; /* of the packets the port served */
  double cnps_per_flow_s, cuts_per_flow_s;
  double paused_fraction; /* per sender: link-time paused by PFC over time, at most 1 */
  /* the senders into the measured port(s) and each one's rate over the phase, over their mean,
   * ascending: DCQCN does not share a held port equally (roce_held_flow_cap) */
  int senders;
  double share[ROCE_HELD_MAX_PORTS * ROCE_HELD_MAX_SENDERS];
};

/* A measure: phase k covers the port's age from ROCE_HELD_START_S x 2^(k-1) (0 for the first)
 * to ROCE_HELD_START_S x 2^k, the last one every age after (ROCE_HELD_FINE_* for a shape with
 * fine phases). Once a phase that ends at 20 ms of age or later keeps the port busy (99%) the
 * later ones are that phase again: the senders are past their start-up in step, nothing is left
 * for them to gain, and the later phases are not run. */
struct roce_held_profile {
  struct roce_held_phase phase[ROCE_HELD_MAX_PHASES];
};

/* What a measure depends on: the port's rate and link delay, its load (its flows' NIC shares,
 * less what overloaded ports upstream keep, over its rate; to a quarter below 2, a half below 4,
 * a whole number above, at most ROCE_HELD_MAX_SENDERS), the senders that load stands for (the
 * load rounded, at least 2, each sending at load x rate / senders), whether they reach it
 * through a switch egress of their own (depth 1) or straight from their NICs (0), whether
 * other held egresses of its switch share the buffer with it (ports: 1, or ROCE_HELD_MAX_PORTS
 * when that many are held, itself included; the measure runs that many such ports side by side
 * on one switch), and the size of the messages its pipelined ring edges stand for (message_B:
 * the geometric mean of theirs weighed by their bytes, to half an octave, steps under
 * ROCE_HELD_MIN_MESSAGE_B left out; 0, one message per sender, where none is left or a sender
 * would not finish one in the measure's span). Each message is a flow of its own
 * at packet fidelity, and a new flow starts its DCQCN state afresh at the line rate: five
 * senders at 100 Gb/s sending 4 MiB messages back to back, their restarts out of step, keep a
 * port busy 99% of the first 20 ms, 85% with one flow each. */
struct roce_held_shape {
  double rate_Bps, latency_s, load, message_B;
  int senders, depth, ports;
  /* roce/flow-held-measure:fine and feeders. fine: the phases of ROCE_HELD_FINE_* (not for a port
   * chained to another held port by a flow and measured with its load). feeders > 0 (feeders only): the port
   * is measured with the switch egresses that feed it, not with load-thinned senders (the
   * packet model keeps a port whose flows come through held egresses busier or idler than its
   * load says: docs/roce.md, "Measured with its feeders"); feeder f carries to_port[f] of the
   * port's transfers and elsewhere[f] others, each from a GPU of its own at the line rate,
   * starting start_10us[f][k] after the first of them (tens of µs, the port's ones first). */
  int fine, feeders;
  int8_t to_port[ROCE_HELD_FEEDERS], elsewhere[ROCE_HELD_FEEDERS];
  int16_t start_10us[ROCE_HELD_FEEDERS][ROCE_HELD_FEEDER_FLOWS];
};

struct roce_held_sim;

struct roce_held {
  struct {
    struct roce_held_shape shape;
    struct roce_held_profile profile;
    int measured; /* its phases known so far (all of them once they are) */
    int32_t sim;  /* its packet run (sim) while phases are left to measure, else -1 */
  } * entry;      /* the measures so far, one per shape */
  size_t n, cap;
  struct roce_held_sim *sim; /* the packet runs, one per shape but for its schedule (fine) */
  size_t n_sims, cap_sims;
  int32_t *port_entry;          /* per port: its measure while held (-1: not held) */
  uint8_t *ever_held;           /* per port: held at some point of the run */
  double *held_since_s;         /* per port: the date it became held (its age's origin) */
  double *released_s;           /* per port: the date it was last released (-inf: never) */
  fab_timer_id *age_timer;      /* per port while held: the end of its phase (ROCE_TIMER_HELD_AGE) */
  double *load_Bps;             /* scratch, per port: a sweep's load (0 between calls) */
  double *last_load_Bps;        /* per port: the last sweep's load */
  double *scale;                /* per port: the fraction of its arrivals it passes on, C / load (<= 1) */
  uint8_t *marked, *depth;      /* scratch, per port: a FIFO pass marks it; the fewest switch egresses its
                              flows cross before it (0 and UINT8_MAX between calls) */
  double *message_log2;         /* scratch, per port: its ring edges' sum of bytes x log2(message) (0 between calls) */
  double *message_bytes;        /* scratch, per port: those edges' bytes (0 between calls) */
  uint8_t *decided, *candidate; /* scratch, per port: an update looked at it; it is to be held */
  uint8_t *chained;             /* scratch, per port: a flow crosses it and another port to be held */
  uint8_t *ring_steps;          /* scratch, per port: a ring step (fab_flow.ring_step) crosses it */
  int *decided_list;            /* scratch: the ports an update looks at */
  /* scratch for roce_held_rank: per held port, its NIC flows' (start date, id) in that order,
   * from rank_off[p] (rank_len[p] of them) in rank_buf; ranked[p] the pass that filled it */
  struct roce_held_age {
    double start_s;
    uint64_t id;
  } * rank_buf;
  size_t rank_n, rank_cap;
  uint32_t *rank_off, *rank_len;
  uint64_t *ranked, rank_pass;
  uint64_t measures;       /* packet-level runs made (sims) */
  uint64_t phases_run;     /* stretches of them run to a phase's end (a restarted run's catch-up one more) */
  uint64_t uses;           /* phases asked for so far: the clock of the runs' last use */
  int live_runs, max_runs; /* runs keeping their packet model; at most (ROCE_HELD_MAX_RUNS) */
};

/* How held ports are measured (roce/flow-held-measure): not at all (roce/flow-held-ports off:
 * only the loads); with their load; with their load, in fine phases where that was validated (a
 * port that no flow chains to another held port); as fine, and
 * the ports fed through switch egresses with those egresses (feeders). */
enum roce_held_measure {
  ROCE_HELD_MEASURE_OFF,
  ROCE_HELD_MEASURE_LOAD,
  ROCE_HELD_MEASURE_FINE,
  ROCE_HELD_MEASURE_FEEDERS
};

int roce_held_init(struct roce_held *h, int n_ports);
void roce_held_fini(struct roce_held *h);
/* Before a recomputation fills these flows (FIFO shares known, DCQCN on): the loads of their ports
 * (last_load_Bps), and unless measure is ROCE_HELD_MEASURE_OFF which switch egresses DCQCN holds
 * (their flows' NIC shares, less what overloaded ports upstream keep back, exceed the port; no
 * FIFO pass marks them), each one's capacity set to its measured utilisation of its payload
 * rate, the others' put back, for the filling about to run (the flows' component must be the one
 * it fills). */
void roce_held_update(struct fabric *fab, struct roce_held *h, struct fab_flow **flows, size_t n,
                      enum roce_held_measure measure);
/* The phase of its measure port p is in at the current date while held (by its age), or NULL; a
 * phase no held port had reached is run now. */
const struct roce_held_phase *roce_held_of(const struct fabric *fab, struct roce_held *h, int port);
/* A flow ended: the held ports it leaves without flows are released (their age ends unless ring
 * steps hold them again within ROCE_HELD_GAP_S; other flows start a holding of their own). */
void roce_held_flow_gone(struct fabric *fab, struct roce_held *h, const struct fab_flow *flow);
/* A held port's phase is over (its ROCE_TIMER_HELD_AGE timer): its capacity becomes the next
 * phase's utilisation, which recomputes its component. */
void roce_held_aged(struct fabric *fab, struct roce_held *h, int port);
/* Phase k of the cached measure of a shape, its run made or run on if no held port had reached
 * it; NULL if the shape cannot be measured. */
const struct roce_held_phase *roce_held_shape_phase(const struct fabric *fab, struct roce_held *h,
                                                    const struct roce_held_shape *shape, int k);
/* roce/flow-held-shares:spread. Before the caps of these flows are set: their held ports' flows
 * in the order they started (the pass's scratch), for roce_held_flow_cap. */
void roce_held_rank(const struct fabric *fab, struct roce_held *h, struct fab_flow *const *flows, size_t n);
/* The cap the held ports on the flow's path give it (0: none): at each, its NIC flows take the
 * spread of rates the port's measure saw among its senders, the oldest the lowest (a sender the
 * trapped state holds does not finish its message), those at or above the mean left to share the
 * rest max-min. roce_held_rank must have ranked the flow's ports in this pass. */
double roce_held_flow_cap(const struct fabric *fab, struct roce_held *h, const struct fab_flow *f);
/* One packet-level measure (uncached): 0, or -1 with a message in err when the packet model
 * could not be set up or carried nothing in a phase. */
int roce_held_measure(const struct fabric *fab, const struct roce_held_shape *shape, struct roce_held_profile *out,
                      char *err, size_t errlen);

#endif
