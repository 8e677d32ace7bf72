/* InfiniBand credit accounting (IBTA Vol. 1, 7.9), with its conservation invariants asserted. */
#include "ib_credit.h"

#include <stdio.h>
#include <stdlib.h>

void ib_credit_init(struct ib_credit *c, int32_t max_blocks)
{
  c->free_blocks = max_blocks;
  c->max_blocks = max_blocks;
}

void ib_credit_consume(struct ib_credit *c, int32_t blocks)
{
  if (blocks > c->free_blocks) {
    fprintf(stderr, "sgfabric: ib: internal error: %d blocks sent with %d credits\n", blocks, c->free_blocks);
    abort();
  }
  c->free_blocks -= blocks;
}

void ib_credit_return(struct ib_credit *c, int32_t blocks)
{
  c->free_blocks += blocks;
  if (c->free_blocks > c->max_blocks) {
    fprintf(stderr, "sgfabric: ib: internal error: %d credits for a %d-block buffer\n", c->free_blocks,
            c->max_blocks);
    abort();
  }
}
