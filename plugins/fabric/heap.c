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

void heap_init(struct fab_heap *h)
{
  h->items = NULL;
  h->size = 0;
  h->capacity = 0;
  h->next_seq = 0;
}

void heap_free(struct fab_heap *h)
{
  free(h->items);
  heap_init(h);
}

/* A 4-ary heap: half the depth of a binary one, and the four children of a node share a cache
 * line or two, which matters because popping dominates the simulator's profile. */
#define ARITY 4

uint64_t heap_push(struct fab_heap *h, double time, uint32_t type, uint32_t arg, void *ptr)
{
  if (h->size == h->capacity) {
    size_t capacity = h->capacity ? 2 * h->capacity : 1024;
    struct fab_event *items = realloc(h->items, capacity * sizeof *items);
    if (items == NULL) {
      fprintf(stderr, "sgfabric: out of memory growing the event heap to %zu events\n", capacity);
      abort();
    }
    h->items = items;
    h->capacity = capacity;
  }
  struct fab_event ev = {.time = time, .seq = h->next_seq++, .ptr = ptr, .type = type, .arg = arg};
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
  *out = h->items[0];
  struct fab_event last = h->items[--h->size];
  size_t n = h->size;
  if (n == 0)
    return 0;
  /* Move the hole down along the smallest children to a leaf, then bubble the last event up
   * from there (Wegener's bottom-up heapsort): one comparison per child, no early exit tests. */
  size_t i = 0;
  for (;;) {
    size_t first = ARITY * i + 1;
    if (first >= n)
      break;
    size_t best = first;
    size_t end = first + ARITY < n ? first + ARITY : n;
    for (size_t c = first + 1; c < end; c++)
      if (event_before(&h->items[c], &h->items[best]))
        best = c;
    h->items[i] = h->items[best];
    i = best;
  }
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!event_before(&last, &h->items[parent]))
      break;
    h->items[i] = h->items[parent];
    i = parent;
  }
  h->items[i] = last;
  return 0;
}
