/* Go-back-N receiver and sender of gbn.h. */
#include "gbn.h"

void gbn_rx_init(struct gbn_rx *rx)
{
  rx->expected_psn = 0;
  rx->nack_sent = 0;
}

enum gbn_verdict gbn_rx_receive(struct gbn_rx *rx, struct gbn_stats *s, uint32_t psn)
{
  if (psn == rx->expected_psn) {
    rx->expected_psn++;
    rx->nack_sent = 0;
    return GBN_ACCEPT;
  }
  s->discarded++;
  if (psn < rx->expected_psn)
    return GBN_DUPLICATE;
  if (rx->nack_sent)
    return GBN_OUT_OF_ORDER;
  rx->nack_sent = 1;
  s->nacks++;
  return GBN_NACK;
}

void gbn_tx_init(struct gbn_tx *tx)
{
  tx->next_new_psn = 0;
  tx->rewind_s = -1;
  tx->rewind_psn = 0;
}

int gbn_tx_on_send(struct gbn_tx *tx, struct gbn_stats *s, uint32_t psn, double bytes)
{
  if (psn < tx->next_new_psn) {
    s->retransmitted_B += bytes;
    return 1;
  }
  tx->next_new_psn = psn + 1;
  return 0;
}

int gbn_tx_on_nack(struct gbn_tx *tx, uint32_t psn, double sent_s, double now)
{
  if (tx->rewind_s >= 0 && tx->rewind_s >= sent_s && tx->rewind_psn <= psn)
    return 0;
  tx->rewind_s = now;
  tx->rewind_psn = psn;
  return 1;
}
