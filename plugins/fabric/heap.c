/* Min-heap of events keyed by (time, seq). */
#include "heap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (time, seq) as one unsigned 128-bit key: a non-negative double's bits order like the double,
 * so one integer comparison replaces two floating-point ones and their branches. */
__extension__ typedef unsigned __int128 event_key_t;

static inline event_key_t key_of(const struct fab_heap_key *k)
{
  return ((event_key_t)k->time_bits << 64) | k->seq;
}

/* A 4-ary heap: half the depth of a binary one. The key array is laid out so that the four
 * children of a node (indices 4i+1 .. 4i+4, 64 bytes of keys) fill exactly one cache line: the
 * allocation is 64-byte aligned and index 0 sits PAD slots past its start. Every key slot from
 * size to capacity holds a sentinel that sorts after any real event, so a node always has four
 * children to compare and the smallest is chosen without data-dependent branches (the choice is
 * random to the branch predictor: a branchy loop mispredicted about once per level). */
#define ARITY 4
#define PAD 3
#define SPARE ARITY /* sentinel slots kept past the last event, so the children of any node exist */

static const struct fab_heap_key sentinel = {.seq = UINT64_MAX, .time_bits = UINT64_MAX};

void heap_init(struct fab_heap *h)
{
  h->keys = NULL;
  h->vals = NULL;
  h->size = 0;
  h->capacity = 0;
  h->next_seq = 0;
}

void heap_free(struct fab_heap *h)
{
  if (h->keys)
    free(h->keys - PAD);
  free(h->vals);
  heap_init(h);
}

static void heap_grow(struct fab_heap *h)
{
  size_t capacity = h->capacity ? 2 * h->capacity : 1024;
  size_t bytes = (capacity + PAD) * sizeof(struct fab_heap_key);
  struct fab_heap_key *block = aligned_alloc(64, (bytes + 63) / 64 * 64);
  struct fab_heap_val *vals = realloc(h->vals, capacity * sizeof *vals);
  if (block == NULL || vals == NULL) {
    fprintf(stderr, "sgfabric: out of memory growing the event heap to %zu events\n", capacity);
    abort();
  }
  struct fab_heap_key *keys = block + PAD;
  if (h->keys) {
    memcpy(keys, h->keys, h->size * sizeof *keys);
    free(h->keys - PAD);
  }
  for (size_t i = h->size; i < capacity; i++)
    keys[i] = sentinel;
  h->keys = keys;
  h->vals = vals;
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
  struct fab_heap_key key = {.seq = seq};
  memcpy(&key.time_bits, &time, sizeof time);
  event_key_t k = key_of(&key);
  struct fab_heap_key *keys = h->keys;
  struct fab_heap_val *vals = h->vals;
  size_t i = h->size++;
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!(k < key_of(&keys[parent])))
      break;
    keys[i] = keys[parent];
    vals[i] = vals[parent];
    i = parent;
  }
  keys[i] = key;
  vals[i] = (struct fab_heap_val){.ptr = ptr, .type = type, .arg = arg};
  return seq;
}

int heap_pop(struct fab_heap *h, struct fab_event *out)
{
  if (h->size == 0)
    return -1;
  struct fab_heap_key *keys = h->keys;
  struct fab_heap_val *vals = h->vals;
  memcpy(&out->time, &keys[0].time_bits, sizeof out->time);
  out->seq = keys[0].seq;
  out->ptr = vals[0].ptr;
  out->type = vals[0].type;
  out->arg = vals[0].arg;
  size_t n = --h->size;
  struct fab_heap_key last = keys[n];
  struct fab_heap_val last_val = vals[n];
  keys[n] = sentinel;
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
    const struct fab_heap_key *c = &keys[first];
    event_key_t k0 = key_of(&c[0]), k1 = key_of(&c[1]), k2 = key_of(&c[2]), k3 = key_of(&c[3]);
    size_t a = k1 < k0;
    event_key_t ka = a ? k1 : k0;
    size_t b = 2 + (k3 < k2);
    event_key_t kb = k3 < k2 ? k3 : k2;
    size_t second = (size_t)0 - (size_t)(kb < ka); /* all ones when the second pair wins */
    size_t best = first + (a ^ ((a ^ b) & second));
    keys[i] = keys[best];
    vals[i] = vals[best];
    i = best;
  }
  event_key_t k = key_of(&last);
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!(k < key_of(&keys[parent])))
      break;
    keys[i] = keys[parent];
    vals[i] = vals[parent];
    i = parent;
  }
  keys[i] = last;
  vals[i] = last_val;
  return 0;
}
