/* InfiniBand at flow fidelity: what the passes over a component's switch-buffer crossings share
 * (ib_flow.c's congestion trees, ib_tree.c's growth, ib_arbiter.c's input-port shares): their
 * scratch arrays, the sort that groups crossings by buffer and unit, and one pace per upstream
 * queue. Below all three, so that none of them depends on another for these. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ib_internal.h"
#include "check.h"
#include "radix.h"

void *ib__scratch_reserve(void *buf, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return buf;
  free(buf);
  *cap = 2 * need;
  buf = sgf_xmalloc(*cap * size);
  return buf;
}

static inline unsigned crossing_byte(const struct crossing *c, int b)
{
  return (unsigned)((b < 8 ? c->unit >> (8 * b) : c->buffer >> (8 * (b - 8))) & 0xff);
}

/* Groups the crossings by buffer and by unit within a buffer, each group's flows staying in the
 * order they were listed (ascending index: the grants sum their rates in that order). Only the
 * grouping matters to the caps (minima over groups), so a stable sort on (buffer, unit) is
 * exact: an LSD radix sort on their 16 bytes, skipping the bytes all crossings share. qsort's
 * calls through a pointer took 40 % of the CPU of IB flow runs with large all-to-all
 * components. tmp has room for m. */
void ib__sort_crossings(struct crossing *a, struct crossing *tmp, size_t m)
{
  if (m < 64) { /* insertion sort: stable, and cheaper than the byte counts for a few */
    for (size_t i = 1; i < m; i++) {
      struct crossing x = a[i];
      size_t j = i;
      for (; j > 0 && (a[j - 1].buffer > x.buffer || (a[j - 1].buffer == x.buffer && a[j - 1].unit > x.unit)); j--)
        a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  static size_t count[16][256]; /* 32 KiB: off the actors' small stacks */
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < m; i++)
    for (int b = 0; b < 16; b++)
      count[b][crossing_byte(&a[i], b)]++;
  struct crossing *from = a, *to = tmp;
  for (int b = 0; b < 16; b++) {
    if (count[b][crossing_byte(&a[0], b)] == m)
      continue; /* every crossing has this byte */
    radix_counts_to_offsets(count[b]);
    for (size_t i = 0; i < m; i++)
      to[count[b][crossing_byte(&from[i], b)]++] = from[i];
    struct crossing *swap = from;
    from = to;
    to = swap;
  }
  if (from != a)
    memcpy(a, from, m * sizeof *a);
}

/* One unit's blocked flows in a full buffer just before their bottlenecks, held by two congested
 * outputs or more: they wait in one queue upstream (the upstream port's queue for the link into
 * this buffer), whose head goes when the buffer frees a credit, whatever output it is for. So they
 * leave it at one pace per unit of weight, the slowest one's: the flows of a less congested output
 * are held back by the credits the other trees hold. Only at the last level before the outputs:
 * further up, which flows wait in a queue depends on how far each tree has grown, and the rule
 * applied there put the 3-tier held-out patterns at +4.0 % on the mean instead of -1.9 %.
 * (tiny-16: 8 -> 6, 10 -> 6, 9 -> 4 and 11 -> 7 from leaf 2, 15 -> 4 from leaf 3, every transfer
 * spread over the four spines: leaf 1's input buffers from the spines hold packets for GPUs 4, 6
 * and 7, and leaf 2's four transfers end together at 209-216 us at packet fidelity; 220-222 us
 * with the rule, 162-192 us without: tests/integration/ib_unit_pace.sh.) */
double ib__unit_pace(struct fab_flow *const *flows, const int32_t *held, const struct crossing *c, size_t begin,
                     size_t end, int nvl)
{
  double pace = INFINITY;
  int first_root = -1, roots = 1;
  for (size_t k = begin; k < end; k++) {
    if (!ib__last_level(flows, held, c, k, nvl))
      continue;
    const struct fab_flow *f = flows[c[k].flow];
    int root = f->path[held[c[k].flow]];
    if (first_root < 0)
      first_root = root;
    else if (root != first_root)
      roots = 2;
    pace = fmin(pace, f->rate_Bps / f->share_weight);
  }
  return roots < 2 ? INFINITY : pace;
}
