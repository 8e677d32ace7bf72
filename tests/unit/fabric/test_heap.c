/* The calendar orders events by time, then by insertion order. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "heap.h"
#include "rng.h"

static void test_heap_orders_by_time(void)
{
  struct fab_heap h;
  heap_init(&h);
  struct fab_rng r;
  rng_seed(&r, 42);
  for (int i = 0; i < 10000; i++)
    heap_push(&h, rng_uniform(&r), 0, (uint32_t)i, NULL);
  struct fab_event ev;
  double last = -1;
  int count = 0;
  while (heap_pop(&h, &ev) == 0) {
    CU_ASSERT(ev.time >= last);
    last = ev.time;
    count++;
  }
  CU_ASSERT_EQUAL(count, 10000);
  heap_free(&h);
}

static void test_heap_breaks_ties_by_insertion(void)
{
  struct fab_heap h;
  heap_init(&h);
  /* Interleave two dates so that the heap's internal moves would scramble equal keys. */
  for (int i = 0; i < 1000; i++)
    heap_push(&h, (i % 2) ? 1.0 : 2.0, 0, (uint32_t)i, NULL);
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
  heap_free(&h);
}

static void test_rng_same_seed_same_draws(void)
{
  struct fab_rng a, b, c;
  rng_seed(&a, 7);
  rng_seed(&b, 7);
  rng_seed(&c, 8);
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = rng_next(&a);
    CU_ASSERT_EQUAL(x, rng_next(&b));
    differ += x != rng_next(&c);
  }
  CU_ASSERT(differ > 90);
  for (int i = 0; i < 1000; i++)
    CU_ASSERT(rng_below(&a, 5) < 5);
}

int main(void)
{
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("heap", NULL, NULL);
  CU_add_test(s, "heap_orders_by_time", test_heap_orders_by_time);
  CU_add_test(s, "heap_breaks_ties_by_insertion", test_heap_breaks_ties_by_insertion);
  CU_add_test(s, "rng_same_seed_same_draws", test_rng_same_seed_same_draws);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failures = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures != 0;
}
