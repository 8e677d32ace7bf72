/* The step every LSD radix sort of the plugins shares (flow_engine.c's caps, ib_flow.c's buffer
 * crossings and AR legs, roce_fifo.c's components): a pass counts its entries per byte value,
 * then each count becomes the place where the first entry of that value goes. */
#ifndef SGFABRIC_RADIX_H
#define SGFABRIC_RADIX_H

#include <stddef.h>

/* count[d]: how many entries have byte value d -> the index of the first of them in the output. */
static inline void radix_counts_to_offsets(size_t count[256])
{
  size_t pos = 0;
  for (int d = 0; d < 256; d++) {
    size_t k = count[d];
    count[d] = pos;
    pos += k;
  }
}

#endif
