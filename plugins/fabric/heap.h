/* The fabric's calendar: events ordered by (time, insertion sequence); a calendar queue for the
 * near future and a 4-ary min-heap for the rest (heap.c).
 *
 * The sequence number makes the order of simultaneous events the order in which they were
 * scheduled, so two runs with the same inputs process events in the same order (libuv's timer
 * heap breaks ties the same way). Events are small values, not allocations. */
#ifndef SGFABRIC_HEAP_H
#define SGFABRIC_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fab_event {
  double time;   /* simulated date, seconds */
  uint64_t seq;  /* insertion order, breaks ties */
  void *ptr;     /* the object the event acts on (packet, flow, ...) */
  uint32_t type; /* what happens; interpreted by the engine that scheduled it */
  uint32_t arg;  /* a small argument (port index, version stamp, ...) */
};

/* The heap keeps keys and payloads in two parallel arrays: choosing among children reads only
 * keys, 16 bytes each (the four children of a node share one cache line). */
struct fab_heap_key {
  uint64_t seq;       /* low half of the 128-bit key */
  uint64_t time_bits; /* high half: the date's bits (non-negative doubles order like their bits) */
};
struct fab_heap_val {
  void *ptr;
  uint32_t type;
  uint32_t arg;
};

/* An event of the calendar's near part: a node of a bucket's list, sorted by key. */
struct fab_cq_node {
  struct fab_heap_key key;
  struct fab_heap_val val;
  struct fab_cq_node *next;
};

struct fab_heap {
  /* near part (calendar queue): bucket k of the ring holds, sorted by key, the events whose
   * date falls in [k w, (k+1) w) for k in [cur, cur + nb); later ones wait in the far part */
  struct fab_cq_node **bucket, **tail;
  uint64_t *occupied;      /* one bit per ring slot: its bucket holds events */
  size_t nb;               /* buckets, a power of two */
  uint64_t cur;            /* absolute index of the first bucket that may hold events */
  double width, inv_width; /* w and 1/w, seconds */
  size_t near_size;
  struct fab_cq_node *free_nodes;
  void **slabs;
  size_t n_slabs;
  uint64_t pops, check_pops; /* the width is re-estimated every few pops */
  double check_time;
  /* far part: a 4-ary heap of keys and payloads in parallel arrays */
  struct fab_heap_key *keys;
  struct fab_heap_val *vals;
  size_t far_size;
  size_t capacity;
  uint64_t next_seq;
};

void fab_heap_init(struct fab_heap *h);
void fab_heap_free(struct fab_heap *h);
/* Schedules an event; returns its sequence number. */
uint64_t fab_heap_push(struct fab_heap *h, double time, uint32_t type, uint32_t arg, void *ptr);
/* Takes the next sequence number without scheduling anything: an event that may never be needed
 * keeps the place in the order it would have had, and fab_heap_push_seq schedules it later. */
static inline uint64_t heap_reserve_seq(struct fab_heap *h) { return h->next_seq++; }
/* Schedules an event with a sequence number taken earlier by heap_reserve_seq. */
uint64_t fab_heap_push_seq(struct fab_heap *h, double time, uint64_t seq, uint32_t type, uint32_t arg, void *ptr);
/* Removes the earliest event into *out if it is dated <= until; returns 0, or -1 (empty, or
 * the earliest event is later). */
int fab_heap_pop_until(struct fab_heap *h, double until, struct fab_event *out);
/* Removes the earliest event into *out; returns 0, or -1 when empty. */
static inline int heap_pop(struct fab_heap *h, struct fab_event *out) { return fab_heap_pop_until(h, HUGE_VAL, out); }
/* The date of the earliest event; the heap must not be empty. */
double fab_heap_top_time(struct fab_heap *h);
static inline size_t heap_size(const struct fab_heap *h) { return h->near_size + h->far_size; }

#ifdef __cplusplus
}
#endif

#endif
