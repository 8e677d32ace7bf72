/* InfiniBand link-level credit accounting for one data VL of one link direction.
 *
 * IBTA Vol. 1, 7.9 (flow control): the receiver advertises its free buffer per data VL in
 * 64-byte blocks (FCCL); the sender transmits a packet only when the blocks it occupies fit in
 * the advertised space, so no packet is ever dropped for want of buffer. Credits come back when
 * the packet leaves the receiver's buffer, one flow-control packet later.
 *
 *   blocks(packet) = ceil(bytes / block_bytes)
 *   has_credit     = free_blocks >= blocks(packet)
 *   consume:  free_blocks -= blocks   (never below 0)
 *   return:   free_blocks += blocks   (never above the buffer)
 *
 * Only ib_credit_consume and ib_credit_return change free_blocks, and around a link failure
 * ib_credit_reset (the link went down: every credit it held is void) and ib_credit_restore (it
 * came back up: the receiver advertises its free buffer again). */
#ifndef SGFABRIC_IB_CREDIT_H
#define SGFABRIC_IB_CREDIT_H

#include <stdint.h>

struct ib_credit {
  int32_t free_blocks; /* blocks the receiver can still accept */
  int32_t max_blocks;  /* the receiver's buffer for this VL, in blocks */
};

/* Blocks a packet of bytes occupies (IBTA: 64-byte blocks). */
static inline int32_t ib_credit_blocks(uint32_t bytes, uint32_t block_bytes)
{
  return (int32_t)((bytes + block_bytes - 1) / block_bytes);
}

void ib_credit_init(struct ib_credit *c, int32_t max_blocks);
/* Whether a packet of blocks fits in the receiver's free buffer. */
static inline int ib_credit_has(const struct ib_credit *c, int32_t blocks) { return c->free_blocks >= blocks; }
/* The packet starts on the wire: its blocks are taken. Aborts if it would go negative. */
void ib_credit_consume(struct ib_credit *c, int32_t blocks);
/* The packet left the receiver's buffer: its blocks come back. Aborts above the buffer size. */
void ib_credit_return(struct ib_credit *c, int32_t blocks);

/* The link went down: the credits outstanding are void, none free. Returns the blocks voided
 * (the buffer less what was free). */
int32_t ib_credit_reset(struct ib_credit *c);
/* The link came back up with blocks free in the receiver's buffer (0..max): they are the
 * credits. Aborts unless the credits were reset before. */
void ib_credit_restore(struct ib_credit *c, int32_t blocks);

#endif
