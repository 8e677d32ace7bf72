/* The calendar orders events by time, then by insertion order. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "heap.h"
#include "rng.h"
#include "cunit_main.h"

static void test_heap_orders_by_time(void)
{
  struct fab_heap h;
  fab_heap_init(&h);
  struct fab_rng r;
  fab_rng_seed(&r, 42);
  for (int i = 0; i < 10000; i++)
    fab_heap_push(&h, fab_rng_uniform(&r), 0, (uint32_t)i, NULL);
  struct fab_event ev;
  double last = -1;
  int count = 0;
  while (heap_pop(&h, &ev) == 0) {
    CU_ASSERT(ev.time >= last);
    last = ev.time;
    count++;
  }
  CU_ASSERT_EQUAL(count, 10000);
  fab_heap_free(&h);
}

static void test_heap_breaks_ties_by_insertion(void)
{
  struct fab_heap h;
  fab_heap_init(&h);
  /* Interleave two dates so that the heap's internal moves would scramble equal keys. */
  for (int i = 0; i < 1000; i++)
    fab_heap_push(&h, (i % 2) ? 1.0 : 2.0, 0, (uint32_t)i, NULL);
  struct fab_event ev;
  int last_odd = -1, last_even = -1;
  for (int i = 0; i < 500; i++) {
    CU_ASSERT_EQUAL(heap_pop(&h, &ev), 0);
    CU_ASSERT_EQUAL(ev.time, 1.0);
    CU_ASSERT(ev.arg % 2 == 1 && (int)ev.arg > last_odd);
    last_odd = (int)ev.arg;
  }
  for (int i = 0; i < 500; i++) {
    CU_ASSERT_EQUAL(heap_pop(&h, &ev), 0);
    CU_ASSERT_EQUAL(ev.time, 2.0);
    CU_ASSERT(ev.arg % 2 == 0 && (int)ev.arg > last_even);
    last_even = (int)ev.arg;
  }
  CU_ASSERT_EQUAL(heap_pop(&h, &ev), -1);
  fab_heap_free(&h);
}

/* A simulation-like load: events pushed a little after the date of the last one popped (dense
 * and sparse phases, exact ties, some dated in the past), popped in (time, seq) order, through
 * the calendar's changes of bucket width; compared with a sorted reference of the same keys. */
static void test_heap_order_under_changing_density(void)
{
  struct fab_heap h;
  fab_heap_init(&h);
  struct fab_rng r;
  fab_rng_seed(&r, 9);
  double now = 0, last_time = -1;
  uint64_t last_seq = 0;
  long popped = 0, bad = 0;
  for (long step = 0; step < 600000; step++) {
    int dense = (step / 100000) % 2 == 0; /* phases of 100k steps: gaps of ns or of ms */
    double scale = dense ? 1e-9 : 1e-3;
    int pushes = (int)fab_rng_below(&r, 3);
    for (int i = 0; i < pushes || heap_size(&h) == 0; i++) {
      double u = fab_rng_uniform(&r);
      double t = u < 0.2 ? now : u < 0.25 ? now - scale : now + scale * 100 * fab_rng_uniform(&r);
      if (t < 0)
        t = 0;
      fab_heap_push(&h, t, 0, 0, NULL);
      if (i >= pushes)
        break;
    }
    struct fab_event ev;
    CU_ASSERT_EQUAL_FATAL(heap_pop(&h, &ev), 0);
    /* never earlier than an event pushed before it was popped: keys of pops only grow, except
     * for events dated in the past (scheduled after the pop that passed their date) */
    if (ev.time > last_time || (ev.time == last_time && ev.seq > last_seq) || ev.time < now)
      ;
    else
      bad++;
    if (ev.time >= now) {
      last_time = ev.time;
      last_seq = ev.seq;
    }
    if (ev.time > now)
      now = ev.time;
    popped++;
  }
  CU_ASSERT_EQUAL(bad, 0);
  /* The rest comes out in exact key order. */
  struct fab_event ev;
  double t = -1;
  uint64_t q = 0;
  while (heap_pop(&h, &ev) == 0) {
    CU_ASSERT(ev.time > t || (ev.time == t && ev.seq > q));
    t = ev.time;
    q = ev.seq;
  }
  CU_ASSERT(popped == 600000);
  fab_heap_free(&h);
}

/* Interleaved pushes and pops with clustered dates (ties): every event comes out exactly once.
 * Then the same keys, pushed in reverse order with their sequence numbers (fab_heap_push_seq), come
 * out in the order of a sort of the (time, seq) keys. */
static int cmp_key(const void *a, const void *b)
{
  const struct fab_event *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_heap_matches_sorted_reference(void)
{
  enum { N = 300000 };
  struct fab_event *ref = malloc(N * sizeof *ref);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
  struct fab_heap h;
  fab_heap_init(&h);
  struct fab_rng r;
  fab_rng_seed(&r, 11);
  int n = 0, out = 0, bad = 0;
  struct fab_event ev;
  /* interleaved: push two, pop one, with dates clustered on a few values (ties) */
  while (n < N) {
    for (int i = 0; i < 2 && n < N; i++) {
      double t = (double)(n / 8) * 1e-10 + (double)fab_rng_below(&r, 4) * 3e-9;
      ref[n].time = t;
      ref[n].seq = fab_heap_push(&h, t, 0, (uint32_t)n, NULL);
      n++;
    }
    CU_ASSERT_EQUAL_FATAL(heap_pop(&h, &ev), 0);
    out++;
  }
  while (heap_pop(&h, &ev) == 0)
    out++;
  CU_ASSERT_EQUAL(out, N);
  /* the same keys, pushed largest first with their own sequence numbers */
  fab_heap_free(&h);
  fab_heap_init(&h);
  qsort(ref, N, sizeof *ref, cmp_key);
  for (int i = 0; i < N; i++)
    fab_heap_push_seq(&h, ref[N - 1 - i].time, ref[N - 1 - i].seq, 0, 0, NULL);
  for (int i = 0; i < N; i++) {
    CU_ASSERT_EQUAL_FATAL(heap_pop(&h, &ev), 0);
    bad += ev.time != ref[i].time || ev.seq != ref[i].seq;
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(heap_pop(&h, &ev), -1);
  fab_heap_free(&h);
  free(ref);
}

/* Completions rescheduled within rounding of one date land, out of order, in one bucket ahead
 * of a later event: past a few nodes of sorted walk they go to the far heap (an insertion
 * stays O(log n) instead of O(bucket)), and the pops keep the exact (time, seq) order. */
static void test_heap_crowded_bucket_uses_far_part(void)
{
  enum { N = 20000 };
  struct fab_heap h;
  fab_heap_init(&h);
  struct fab_rng r;
  fab_rng_seed(&r, 5);
  /* dates in the calendar's ring (1 ns buckets until the first width estimate) */
  fab_heap_push(&h, 4.0001e-6 + 5e-10, 0, 0, NULL); /* later, same bucket: no append at the tail */
  for (int i = 0; i < N; i++)
    fab_heap_push(&h, 4.0001e-6 + (double)fab_rng_below(&r, 64) * 1e-20, 0, (uint32_t)i + 1, NULL);
  CU_ASSERT(h.far_size > N / 2);
  struct fab_event ev, last = { .time = -1 };
  int count = 0, bad = 0;
  while (heap_pop(&h, &ev) == 0) {
    bad += ev.time < last.time || (ev.time == last.time && ev.seq < last.seq);
    last = ev;
    count++;
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(count, N + 1);
  CU_ASSERT_EQUAL(last.arg, 0);
  fab_heap_free(&h);
}

static void test_rng_same_seed_same_draws(void)
{
  struct fab_rng a, b, c;
  fab_rng_seed(&a, 7);
  fab_rng_seed(&b, 7);
  fab_rng_seed(&c, 8);
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = fab_rng_next(&a);
    CU_ASSERT_EQUAL(x, fab_rng_next(&b));
    differ += x != fab_rng_next(&c);
  }
  CU_ASSERT(differ > 90);
  for (int i = 0; i < 1000; i++)
    CU_ASSERT(fab_rng_below(&a, 5) < 5);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "heap";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "heap_orders_by_time", test_heap_orders_by_time },
  { "heap_breaks_ties_by_insertion", test_heap_breaks_ties_by_insertion },
  { "heap_order_under_changing_density", test_heap_order_under_changing_density },
  { "heap_matches_sorted_reference", test_heap_matches_sorted_reference },
  { "heap_crowded_bucket_uses_far_part", test_heap_crowded_bucket_uses_far_part },
  { "rng_same_seed_same_draws", test_rng_same_seed_same_draws },
  { NULL, NULL },
};
