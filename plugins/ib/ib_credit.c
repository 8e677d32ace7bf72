/* InfiniBand credit accounting (IBTA Vol. 1, 7.9), with its conservation invariants asserted. */
#include "ib_credit.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

void ib_credit_init(struct ib_credit *c, int32_t max_blocks)
{
  c->free_blocks = max_blocks;
  c->max_blocks = max_blocks;
}

void ib_credit_consume(struct ib_credit *c, int32_t blocks)
{
  SGF_CHECK(blocks <= c->free_blocks, "ib: %d blocks sent with %d credits", blocks, c->free_blocks);
  c->free_blocks -= blocks;
}

void ib_credit_return(struct ib_credit *c, int32_t blocks)
{
  c->free_blocks += blocks;
  SGF_CHECK(c->free_blocks <= c->max_blocks, "ib: %d credits for a %d-block buffer", c->free_blocks, c->max_blocks);
}

int32_t ib_credit_reset(struct ib_credit *c)
{
  int32_t voided = c->max_blocks - c->free_blocks;
  c->free_blocks = 0;
  return voided;
}

void ib_credit_restore(struct ib_credit *c, int32_t blocks)
{
  SGF_CHECK(c->free_blocks == 0 && blocks >= 0 && blocks <= c->max_blocks,
            "ib: %d credits restored on a link holding %d of %d", blocks, c->free_blocks, c->max_blocks);
  c->free_blocks = blocks;
}
