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
 * held port (roce_held_shape), senders into one GPU for ROCE_HELD_SPAN_S of the port, with the
 * run's RoCE parameters (one QP per connection, no traces). The measure gives a held port
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
#define ROCE_HELD_SPAN_S 20e-3

struct roce_held_steady {
  double utilisation;     /* bytes served over the payload rate x time, in (0, 1] */
  double marked_fraction; /* of the packets the port served */
  double cnps_per_flow_s, cuts_per_flow_s;
  double paused_fraction; /* per sender: link-time paused by PFC over time, at most 1 */
};

/* What a measure depends on: the port's rate and link delay, its load (its flows' NIC shares,
 * less what overloaded ports upstream keep, over its rate; in quarters, at most
 * ROCE_HELD_MAX_SENDERS), the senders that load stands for (the load rounded, at least 2, each
 * sending at load x rate / senders) and whether they reach it through a switch egress of their
 * own (depth 1) or straight from their NICs (0). */
struct roce_held_shape {
  double rate_Bps, latency_s, load;
  int senders, depth;
};

struct roce_held {
  struct {
    struct roce_held_shape shape;
    struct roce_held_steady steady;
  } * entry; /* the measures so far */
  size_t n, cap;
  int32_t *port_entry;     /* per port: its measure while held (-1: not held) */
  uint8_t *ever_held;      /* per port: held at some point of the run */
  double *load_Bps;        /* scratch, per port: a sweep's load (0 between calls) */
  double *last_load_Bps;   /* per port: the last sweep's load */
  double *scale;           /* per port: the fraction of its arrivals it passes on, C / load (<= 1) */
  uint8_t *marked, *depth; /* scratch, per port: a FIFO pass marks it; the fewest switch egresses its
                              flows cross before it (0 and UINT8_MAX between calls) */
  uint64_t measures;       /* packet-level runs made (the cache's misses) */
};

int roce_held_init(struct roce_held *h, int n_ports);
void roce_held_fini(struct roce_held *h);
/* Before a recomputation fills these flows (FIFO shares known, DCQCN on): which switch egresses
 * DCQCN holds (their flows' NIC shares exceed the port, no FIFO pass marks them), each one's
 * capacity set to its measured utilisation of its payload rate, the others' put back. */
void roce_held_update(struct fabric *fab, struct roce_held *h, struct fab_flow **flows, size_t n);
/* The measure of port p while held, or NULL. */
const struct roce_held_steady *roce_held_of(const struct roce_held *h, int port);
/* One packet-level measure (uncached): 0, or -1 with a message in err when the packet model
 * could not be set up. */
int roce_held_measure(const struct fabric *fab, const struct roce_held_shape *shape, struct roce_held_steady *out,
                      char *err, size_t errlen);

#endif
