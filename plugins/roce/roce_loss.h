/* RoCEv2 at flow fidelity: go-back-N under random loss (roce_loss.c).
 *
 * The packet model loses each packet on each fabric link with probability p (roce/drop-rate);
 * its receiver accepts only the expected PSN and NACKs a gap once (gbn.h), and the sender goes
 * back to the NACKed PSN or, with no progress for roce/rto, to the first unacknowledged one. A
 * flow-fidelity transfer keeps what that costs it:
 *
 *  - a goodput cap: each loss of the expected packet wastes the window sent before its NACK
 *    returns, so the transfer delivers (1 - P) / (1 + P W) of what it sends (P the path's loss
 *    probability per packet, W the window in packets);
 *  - retransmission timeouts: the receiver NACKs a PSN once, so the expected packet lost again
 *    after its go-back leaves only the timer, and so does a message's last packet lost with
 *    nothing behind it to reveal the gap. Each costs roce/rto plus a round trip (the ACK that
 *    starts the timer, the retransmission), a wait added after the transfer drains (it holds no
 *    link meanwhile). The count is drawn per transfer (Poisson, from the run's seed and the
 *    transfer's QP) or taken at its mean (roce/flow-timeouts). */
#ifndef SGFABRIC_ROCE_LOSS_H
#define SGFABRIC_ROCE_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

/* roce/flow-timeouts, in its choices' order */
enum roce_flow_timeouts { ROCE_TIMEOUTS_DRAWN, ROCE_TIMEOUTS_MEAN, ROCE_TIMEOUTS_OFF };

/* The probability that a packet is lost on a path of fabric_hops lossy links. */
double roce_loss_path_probability(double p_link, int fabric_hops);
/* Go-back-N's goodput over the sent rate, (1 - P) / (1 + P W), for a path loss P and a window
 * of W packets (what the flow has in flight: roce_loss_window). */
double roce_loss_goodput_factor(double p_path, double window_pkts);
/* The expected number of retransmission timeouts of a transfer of `packets` packets in `messages`
 * messages (each with a tail of its own): packets P^2 / (1 - P) (the expected packet lost again,
 * and again, after its NACK) + messages P / (1 - P) (a message's last packet lost, and its
 * retransmission). Infinite when P = 1. */
double roce_loss_expected_timeouts(double p_path, double packets, double messages);
/* The bytes a sender sends in vain per retransmission timeout, on average. A timeout of the
 * expected packet lost again after its go-back (packets P^2 of the expected count) leaves the
 * sender going on with the rest of the message, all discarded by the receiver, until the timer
 * fires: min(rest, stall_B), stall_B what it sends in roce/rto, the rest uniform over a message
 * of message_B bytes; a message's lost tail (messages P) sends nothing more. */
double roce_loss_stall_bytes(double p_path, double packets, double messages, double message_B, double stall_B);
/* The window a loss wastes depends on the bytes in flight, and where PFC governs a switch
 * egress (a FIFO pass marks it: roce_fifo.h) its standing queue holds most of them: the pass's
 * state, per port. */
struct roce_loss {
  double *queue_B;     /* per port: the standing queue of a PFC-governed egress (0: none) */
  int32_t *feeders;    /* per port: its distinct upstream links, counted in a pass */
  int32_t *sw_pgs;     /* per node: the distinct ingress links feeding its PFC-governed egresses */
  int32_t *sw_feeders; /* per node: its egresses' feeders summed */
  int64_t *pairs;      /* scratch: (egress or switch, upstream link) of the marked crossings */
  size_t pairs_cap;
  int32_t *touched; /* the egresses given a queue, cleared at the end of the pass */
  size_t n_touched, touched_cap;
};

int roce_loss_init(struct roce_loss *s, int n_ports, int n_nodes);
void roce_loss_fini(struct roce_loss *s);
/* The standing queues of the PFC-governed egresses the flows cross (whole components, after the
 * FIFO pass). Each of the K ingress links feeding a switch's PFC-governed egresses fills its
 * ingress PG to the PFC threshold, the K PGs sharing the switch's buffer B' (the buffer less its
 * headroom): with dynamic thresholds X = alpha (B' - K X), so they hold K alpha B' / (1 + K alpha)
 * (with static ones K XOFF, at most B'); an egress fed by k of the links holds its part
 * k / (sum of the egresses' k) of it. Without PFC an egress fills to its own lossy threshold,
 * alpha_l B / (1 + alpha_l). */
void roce_loss_queues(struct fabric *fab, struct roce_loss *s, struct fab_flow **flows, size_t n);
/* The go-back-N window of a flow, in packets: what it sends at rate_Bps (its throughput) over a
 * round trip and the drain times of the standing queues on its path (Little's law: its bytes in
 * flight), all of which a loss sends again. */
double roce_loss_window(const struct fabric *fab, const struct roce_loss *s, const struct fab_flow *f, double rate_Bps,
                        double rtt_s);
/* End of the pass: the queues back to zero. */
void roce_loss_clear(const struct fabric *fab, struct roce_loss *s);
/* A Poisson draw of mean `mean` from a stream of its own (stream: any 64-bit value naming the
 * transfer, mixed with the run's seed by the caller): the same stream gives the same count. */
double roce_loss_draw_timeouts(double mean, uint64_t stream);

#endif
