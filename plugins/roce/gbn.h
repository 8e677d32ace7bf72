/* Go-back-N of RoCEv2 reliable connections (IBTA Vol.1 9.7, RoCE NICs since Guo et al.,
 * SIGCOMM'16 "go-back-N instead of go-back-0"): the receiver accepts only the expected PSN,
 * discards anything else and NACKs the first out-of-order PSN once; the sender, on a NACK, goes
 * back to the NACKed PSN; a retransmission timeout covers a lost tail or a lost NACK. */
#ifndef SGFABRIC_GBN_H
#define SGFABRIC_GBN_H

#include <stdint.h>

enum gbn_verdict {
  GBN_ACCEPT,       /* the expected PSN: deliver */
  GBN_DUPLICATE,    /* already delivered: discard */
  GBN_OUT_OF_ORDER, /* a gap: discard (a NACK was already sent for this gap) */
  GBN_NACK,         /* a gap seen first: discard and NACK expected_psn */
};

struct gbn_rx {
  uint32_t expected_psn; /* next in-order PSN */
  uint8_t nack_sent;     /* a NACK for expected_psn is out */
};

struct gbn_tx {
  uint32_t next_new_psn; /* first PSN never sent */
  double rewind_s;       /* date of the last go-back (-1: none) */
  uint32_t rewind_psn;   /* PSN it went back to */
};

struct gbn_stats {
  uint64_t nacks;         /* NACKs sent */
  uint64_t discarded;     /* out-of-order and duplicate packets discarded */
  uint64_t timeouts;      /* go-backs after a retransmission timeout */
  double retransmitted_B; /* bytes sent again */
};

void gbn_rx_init(struct gbn_rx *rx);
enum gbn_verdict gbn_rx_receive(struct gbn_rx *rx, struct gbn_stats *s, uint32_t psn);
void gbn_tx_init(struct gbn_tx *tx);
/* The sender sends psn; returns 1 if it is a retransmission. */
int gbn_tx_on_send(struct gbn_tx *tx, struct gbn_stats *s, uint32_t psn, double bytes);
/* A NACK for psn, sent by the receiver at sent_s, arrives: returns 1 if the sender must go back
 * to psn (0 when a later go-back already covers it). */
int gbn_tx_on_nack(struct gbn_tx *tx, uint32_t psn, double sent_s, double now);

#endif
