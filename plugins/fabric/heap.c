/* The calendar: events keyed by (time, seq), in a calendar queue for the near future and a
 * 4-ary min-heap for the rest.
 *
 * Near part: a ring of nb buckets of width w. Bucket k (absolute index, k = floor(time / w))
 * holds its events in a list sorted by key; only buckets cur .. cur + nb - 1 are in the ring, so
 * each ring slot holds one bucket. An event dated before bucket cur (scheduled in the past of
 * the scan) goes to bucket cur, ahead of the others by its key. Popping takes the head of the
 * first non-empty bucket, or the far heap's top when that one comes first: both are compared
 * by their exact keys, so the order is exactly (time, seq) whatever w is; w only decides how
 * much work a pop and a push take. It is re-estimated from the dates of the events popped (four
 * mean gaps), and the near part rebuilt when it is off by more than a factor of two: the
 * events of a packet run are dense (tens per simulated nanosecond) and almost all within a
 * few microseconds of now, so most of them go to short lists, pushed and popped in O(1), instead
 * of six levels of a heap of thousands of events. */
#include "heap.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (time, seq) as one unsigned 128-bit key: a non-negative double's bits order like the double,
 * so one integer comparison replaces two floating-point ones and their branches. */
__extension__ typedef unsigned __int128 event_key_t;

static inline event_key_t key_of(const struct fab_heap_key *k) { return ((event_key_t)k->time_bits << 64) | k->seq; }

static inline double key_time(const struct fab_heap_key *k)
{
  double time;
  memcpy(&time, &k->time_bits, sizeof time);
  return time;
}

/* ---- far part: a 4-ary heap ----
 * The key array is laid out so that the four children of a node (indices 4i+1 .. 4i+4, 64 bytes
 * of keys) fill exactly one cache line: the allocation is 64-byte aligned and index 0 sits PAD
 * slots past its start. Every key slot from far_size to capacity holds a sentinel that sorts
 * after any real event, so a node always has four children to compare and the smallest is
 * chosen without data-dependent branches. */
#define ARITY 4
#define PAD 3
#define SPARE ARITY

static const struct fab_heap_key sentinel = { .seq = UINT64_MAX, .time_bits = UINT64_MAX };

static void far_grow(struct fab_heap *h)
{
  size_t capacity = h->capacity ? 2 * h->capacity : 1024;
  size_t bytes = (capacity + PAD) * sizeof(struct fab_heap_key);
  struct fab_heap_key *block = aligned_alloc(64, (bytes + 63) / 64 * 64);
  struct fab_heap_val *vals = realloc(h->vals, capacity * sizeof *vals);
  SGF_CHECK(block != NULL && vals != NULL, "out of memory growing the event heap to %zu events", capacity);
  struct fab_heap_key *keys = block + PAD;
  if (h->keys) {
    memcpy(keys, h->keys, h->far_size * sizeof *keys);
    free(h->keys - PAD);
  }
  for (size_t i = h->far_size; i < capacity; i++)
    keys[i] = sentinel;
  h->keys = keys;
  h->vals = vals;
  h->capacity = capacity;
}

static void far_push(struct fab_heap *h, struct fab_heap_key key, struct fab_heap_val val)
{
  if (h->far_size + SPARE >= h->capacity)
    far_grow(h);
  event_key_t k = key_of(&key);
  struct fab_heap_key *keys = h->keys;
  struct fab_heap_val *vals = h->vals;
  size_t i = h->far_size++;
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!(k < key_of(&keys[parent])))
      break;
    keys[i] = keys[parent];
    vals[i] = vals[parent];
    i = parent;
  }
  keys[i] = key;
  vals[i] = val;
}

/* Removes the far heap's top (it must not be empty). */
static void far_pop(struct fab_heap *h)
{
  struct fab_heap_key *keys = h->keys;
  struct fab_heap_val *vals = h->vals;
  size_t n = --h->far_size;
  struct fab_heap_key last = keys[n];
  struct fab_heap_val last_val = vals[n];
  keys[n] = sentinel;
  if (n == 0)
    return;
  /* Move the hole down along the smallest children to a leaf, then bubble the last event up
   * from there (Wegener's bottom-up heapsort); the smallest of four children is a tournament
   * turned into conditional moves. */
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
}

/* ---- near part: the calendar queue ---- */
#define NEAR_BUCKETS 8192  /* a power of two */
#define CHECK_POPS 65536   /* pops between two estimates of the width */
#define INITIAL_WIDTH 1e-9 /* seconds, until the first estimate */
#define SLAB_NODES 4096
#define NEAR_MAX_WALK 32 /* nodes a sorted insertion walks before using the far heap */

static struct fab_cq_node *node_alloc(struct fab_heap *h)
{
  if (h->free_nodes == NULL) {
    struct fab_cq_node *slab = malloc(SLAB_NODES * sizeof *slab);
    void **slabs = realloc(h->slabs, (h->n_slabs + 1) * sizeof *slabs);
    SGF_CHECK(slab != NULL && slabs != NULL, "out of memory growing the event calendar");
    h->slabs = slabs;
    h->slabs[h->n_slabs++] = slab;
    for (int i = SLAB_NODES - 1; i >= 0; i--) {
      slab[i].next = h->free_nodes;
      h->free_nodes = &slab[i];
    }
  }
  struct fab_cq_node *n = h->free_nodes;
  h->free_nodes = n->next;
  return n;
}

/* Puts an event in the near part if its bucket is in the ring, else in the far heap. */
static void place(struct fab_heap *h, double time, uint64_t seq, struct fab_heap_val val)
{
  struct fab_heap_key key = { .seq = seq };
  memcpy(&key.time_bits, &time, sizeof time);
  double x = time * h->inv_width;
  if (!(x < (double)(h->cur + h->nb))) {
    far_push(h, key, val);
    return;
  }
  uint64_t abs = x < (double)h->cur ? h->cur : (uint64_t)x;
  size_t slot = abs & (h->nb - 1);
  event_key_t k = ((event_key_t)key.time_bits << 64) | seq;
  struct fab_cq_node *n = node_alloc(h);
  n->key = key;
  n->val = val;
  struct fab_cq_node *tail = h->tail[slot];
  if (tail == NULL)
    h->occupied[slot / 64] |= (uint64_t)1 << (slot % 64);
  if (tail == NULL || key_of(&tail->key) < k) {
    /* the usual case: after every event of the bucket (a later sequence number) */
    n->next = NULL;
    if (tail)
      tail->next = n;
    else
      h->bucket[slot] = n;
    h->tail[slot] = n;
  } else {
    /* A bounded walk: a burst of events in the middle of one crowded bucket (a flow run's
     * completions rescheduled within rounding of one date, all in the current bucket) would
     * make each insertion O(bucket); past a few nodes the event goes to the far heap instead.
     * Both parts are compared by exact keys, so the order of events is the same. */
    struct fab_cq_node **link = &h->bucket[slot];
    int steps = 0;
    while (key_of(&(*link)->key) < k) {
      if (++steps > NEAR_MAX_WALK) {
        n->next = h->free_nodes;
        h->free_nodes = n;
        far_push(h, key, val);
        return;
      }
      link = &(*link)->next;
    }
    n->next = *link;
    *link = n;
  }
  h->near_size++;
}

/* The near part's first bucket that holds events (h->cur moves to it); NULL when empty. The
 * occupancy bitmap finds it in a few word reads however sparse the ring is. */
static struct fab_cq_node *near_first(struct fab_heap *h)
{
  if (h->near_size == 0)
    return NULL;
  size_t mask = h->nb - 1;
  size_t slot = h->cur & mask;
  if (h->bucket[slot] == NULL) {
    size_t words = h->nb / 64, w = slot / 64;
    uint64_t bits = h->occupied[w] & (~(uint64_t)0 << (slot % 64));
    size_t steps = 0;
    while (bits == 0) {
      w = (w + 1) & (words - 1);
      bits = h->occupied[w];
      SGF_CHECK(++steps <= words, "event calendar lost its events");
    }
    size_t found = w * 64 + (size_t)__builtin_ctzll(bits);
    h->cur += (found - slot) & mask;
    slot = found;
  }
  return h->bucket[slot];
}

/* Rebuilds the near part with a new width: every near event is placed again. */
static void rebuild(struct fab_heap *h, double width, double now)
{
  struct fab_cq_node *all = NULL;
  for (size_t i = 0; i < h->nb; i++) {
    struct fab_cq_node *n = h->bucket[i];
    while (n) {
      struct fab_cq_node *next = n->next;
      n->next = all;
      all = n;
      n = next;
    }
    h->bucket[i] = NULL;
    h->tail[i] = NULL;
  }
  memset(h->occupied, 0, h->nb / 64 * sizeof *h->occupied);
  h->near_size = 0;
  if (now * (1 / width) > 0x1p50)
    width = now * 0x1p-50; /* bucket indices stay far below 2^64 */
  h->width = width;
  h->inv_width = 1 / width;
  double x = now * h->inv_width;
  h->cur = x > 0 ? (uint64_t)x : 0;
  while (all) {
    struct fab_cq_node *next = all->next;
    place(h, key_time(&all->key), all->key.seq, all->val);
    all->next = h->free_nodes;
    h->free_nodes = all;
    all = next;
  }
}

void fab_heap_init(struct fab_heap *h)
{
  memset(h, 0, sizeof *h);
  h->nb = NEAR_BUCKETS;
  h->bucket = calloc(h->nb, sizeof *h->bucket);
  h->tail = calloc(h->nb, sizeof *h->tail);
  h->occupied = calloc(h->nb / 64, sizeof *h->occupied);
  SGF_CHECK(h->bucket != NULL && h->tail != NULL && h->occupied != NULL, "out of memory creating the event calendar");
  h->width = INITIAL_WIDTH;
  h->inv_width = 1 / INITIAL_WIDTH;
  h->check_time = -1;
}

void fab_heap_free(struct fab_heap *h)
{
  if (h->keys)
    free(h->keys - PAD);
  free(h->vals);
  for (size_t i = 0; i < h->n_slabs; i++)
    free(h->slabs[i]);
  free(h->slabs);
  free(h->bucket);
  free(h->tail);
  free(h->occupied);
  memset(h, 0, sizeof *h);
}

uint64_t fab_heap_push(struct fab_heap *h, double time, uint32_t type, uint32_t arg, void *ptr)
{
  return fab_heap_push_seq(h, time, h->next_seq++, type, arg, ptr);
}

uint64_t fab_heap_push_seq(struct fab_heap *h, double time, uint64_t seq, uint32_t type, uint32_t arg, void *ptr)
{
  place(h, time, seq, (struct fab_heap_val){ .ptr = ptr, .type = type, .arg = arg });
  return seq;
}

/* The earliest event's key: the near part's first (*near set) or the far heap's top (*near
 * NULL). The heap must not be empty. */
static const struct fab_heap_key *first_key(struct fab_heap *h, struct fab_cq_node **near)
{
  struct fab_cq_node *n = near_first(h);
  if (n == NULL || (h->far_size > 0 && key_of(&h->keys[0]) < key_of(&n->key))) {
    *near = NULL;
    return &h->keys[0];
  }
  *near = n;
  return &n->key;
}

double fab_heap_top_time(struct fab_heap *h)
{
  struct fab_cq_node *n;
  return key_time(first_key(h, &n));
}

int fab_heap_pop_until(struct fab_heap *h, double until, struct fab_event *out)
{
  if (heap_size(h) == 0)
    return -1;
  struct fab_cq_node *n;
  if (key_time(first_key(h, &n)) > until)
    return -1;
  if (n == NULL) {
    out->time = key_time(&h->keys[0]);
    out->seq = h->keys[0].seq;
    out->ptr = h->vals[0].ptr;
    out->type = h->vals[0].type;
    out->arg = h->vals[0].arg;
    far_pop(h);
  } else {
    out->time = key_time(&n->key);
    out->seq = n->key.seq;
    out->ptr = n->val.ptr;
    out->type = n->val.type;
    out->arg = n->val.arg;
    size_t slot = h->cur & (h->nb - 1);
    h->bucket[slot] = n->next;
    if (n->next == NULL) {
      h->tail[slot] = NULL;
      h->occupied[slot / 64] &= ~((uint64_t)1 << (slot % 64));
    }
    n->next = h->free_nodes;
    h->free_nodes = n;
    h->near_size--;
  }
  /* Every CHECK_POPS pops: four mean gaps between popped dates as the width. */
  if (++h->pops - h->check_pops >= CHECK_POPS) {
    if (h->check_time >= 0 && out->time > h->check_time) {
      double width = 4 * (out->time - h->check_time) / (double)(h->pops - h->check_pops);
      if (width > 2 * h->width || width < 0.5 * h->width)
        rebuild(h, width, out->time);
    }
    h->check_pops = h->pops;
    h->check_time = out->time;
  }
  return 0;
}
