/* Min-heap of events keyed by (time, seq). */
#include "heap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (time, seq) as one unsigned 128-bit key: a non-negative double's bits order like the double,
 * so one integer comparison replaces two floating-point ones and their branches. */
__extension__ typedef unsigned __int128 event_key_t;

static inline event_key_t event_key(const struct fab_event *e)
{
  uint64_t bits;
  memcpy(&bits, &e->time, sizeof bits);
  return ((event_key_t)bits << 64) | e->seq;
}

static inline int event_before(const struct fab_event *a, const struct fab_event *b)
{
  return event_key(a) < event_key(b);
}

/* A 4-ary heap: half the depth of a binary one. The array is laid out so that the four children
 * of a node (indices 4i+1 .. 4i+4, 128 bytes) fill exactly two cache lines: the allocation is
 * 64-byte aligned and index 0 sits PAD slots past its start. Every slot from size to capacity
 * holds a sentinel that sorts after any real event, so a node always has four children to
 * compare and the smallest is chosen without data-dependent branches (the choice is random to
 * the branch predictor: a branchy loop mispredicted about once per level). */
#define ARITY 4
#define PAD 3
#define SPARE ARITY /* sentinel slots kept past the last event, so the children of any node exist */

static const struct fab_event sentinel = {.time = __builtin_inf(), .seq = UINT64_MAX};

void heap_init(struct fab_heap *h)
{
  h->items = NULL;
  h->size = 0;
  h->capacity = 0;
  h->next_seq = 0;
}

void heap_free(struct fab_heap *h)
{
  if (h->items)
    free(h->items - PAD);
  heap_init(h);
}

static void heap_grow(struct fab_heap *h)
{
  size_t capacity = h->capacity ? 2 * h->capacity : 1024;
  size_t bytes = (capacity + PAD) * sizeof(struct fab_event);
  struct fab_event *block = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (block == NULL) {
    fprintf(stderr, "sgfabric: out of memory growing the event heap to %zu events\n", capacity);
    abort();
  }
  struct fab_event *items = block + PAD;
  if (h->items) {
    memcpy(items, h->items, h->size * sizeof *items);
    free(h->items - PAD);
  }
  for (size_t i = h->size; i < capacity; i++)
    items[i] = sentinel;
  h->items = items;
  h->capacity = capacity;
}

uint64_t heap_push(struct fab_heap *h, double time, uint32_t type, uint32_t arg, void *ptr)
{
  return heap_push_seq(h, time, h->next_seq++, type, arg, ptr);
}

uint64_t heap_push_seq(struct fab_heap *h, double time, uint64_t seq, uint32_t type, uint32_t arg, void *ptr)
{
  if (h->size + SPARE >= h->capacity)
    heap_grow(h);
  struct fab_event ev = {.time = time, .seq = seq, .ptr = ptr, .type = type, .arg = arg};
  size_t i = h->size++;
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!event_before(&ev, &h->items[parent]))
      break;
    h->items[i] = h->items[parent];
    i = parent;
  }
  h->items[i] = ev;
  return ev.seq;
}

int heap_pop(struct fab_heap *h, struct fab_event *out)
{
  if (h->size == 0)
    return -1;
  struct fab_event *items = h->items;
  *out = items[0];
  size_t n = --h->size;
  struct fab_event last = items[n];
  items[n] = sentinel;
  if (n == 0)
    return 0;
  /* Move the hole down along the smallest children to a leaf, then bubble the last event up
   * from there (Wegener's bottom-up heapsort). The smallest of four children is a tournament of
   * two independent comparisons and a final one, each turned into a conditional move. */
  size_t i = 0;
  for (;;) {
    size_t first = ARITY * i + 1;
    if (first >= n)
      break;
    const struct fab_event *c = &items[first];
    event_key_t k0 = event_key(&c[0]), k1 = event_key(&c[1]), k2 = event_key(&c[2]), k3 = event_key(&c[3]);
    size_t a = k1 < k0;
    event_key_t ka = a ? k1 : k0;
    size_t b = 2 + (k3 < k2);
    event_key_t kb = k3 < k2 ? k3 : k2;
    size_t second = (size_t)0 - (size_t)(kb < ka); /* all ones when the second pair wins */
    size_t best = first + (a ^ ((a ^ b) & second));
    items[i] = items[best];
    i = best;
  }
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!event_before(&last, &items[parent]))
      break;
    items[i] = items[parent];
    i = parent;
  }
  items[i] = last;
  return 0;
}
