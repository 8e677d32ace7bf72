/* Model timers (fabric_timer_arm, fabric_timer_cancel): what a model relies on.
 *
 *  - timers fire in (date, arming order), whatever order they were armed in, with the kind, ptr
 *    and arg they were armed with;
 *  - a cancelled timer never fires, whether it is cancelled long before its date or by another
 *    timer of the same date; cancelling a fired, a cancelled or a stale id does nothing;
 *  - an id stays stale after its slot is reused by a new timer;
 *  - a timer armed with a reserved sequence number takes the place that number gives it. */
#include <CUnit/Basic.h>
#include <string.h>

#include "test_support.h"
#include "cunit_main.h"

enum test_timer { T_RECORD, T_CANCEL_OTHER, T_REARM };

#define MAX_FIRED 64
static struct {
  int n;
  int kind[MAX_FIRED];
  uint32_t arg[MAX_FIRED];
  double at[MAX_FIRED];
  void *ptr[MAX_FIRED];
  fab_timer_id victim; /* T_CANCEL_OTHER cancels it */
  int cancel_result;
} R;

static void on_timer(struct fabric *fab, int kind, void *ptr, uint32_t arg)
{
  CU_ASSERT_FATAL(R.n < MAX_FIRED);
  R.kind[R.n] = kind;
  R.arg[R.n] = arg;
  R.at[R.n] = fab->now;
  R.ptr[R.n] = ptr;
  R.n++;
  if (kind == T_CANCEL_OTHER)
    R.cancel_result = fabric_timer_cancel(fab, R.victim);
  else if (kind == T_REARM && arg < 3)
    fabric_timer_arm(fab, fab->now + 1e-6, T_REARM, ptr, arg + 1);
}

static const struct fab_model timer_model = { .name = "timers", .timers.on_timer = on_timer };

static struct fabric *new_fabric(struct topo **t, struct param_set **params)
{
  char err[256];
  *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  *params = default_params();
  struct fabric *fab = fabric_new(*t, *params, &timer_model, FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  memset(&R, 0, sizeof R);
  return fab;
}

static void free_fabric(struct fabric *fab, struct topo *t, struct param_set *params)
{
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

static void test_timers_order_and_operands(void)
{
  struct topo *t;
  struct param_set *params;
  struct fabric *fab = new_fabric(&t, &params);
  static int object;
  fabric_timer_arm(fab, 3e-6, T_RECORD, NULL, 30);
  fabric_timer_arm(fab, 1e-6, T_RECORD, &object, 10);
  fabric_timer_arm(fab, 3e-6, T_RECORD, NULL, 31); /* same date: after the one armed before it */
  fabric_timer_arm(fab, 2e-6, T_RECORD, NULL, 20);
  fabric_run(fab);
  CU_ASSERT_EQUAL_FATAL(R.n, 4);
  uint32_t want[] = { 10, 20, 30, 31 };
  for (int i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(R.arg[i], want[i]);
  CU_ASSERT_PTR_EQUAL(R.ptr[0], &object);
  CU_ASSERT_DOUBLE_EQUAL(R.at[0], 1e-6, 1e-18);
  CU_ASSERT_DOUBLE_EQUAL(R.at[3], 3e-6, 1e-18);
  CU_ASSERT_EQUAL(fab->stats.events, 4);
  free_fabric(fab, t, params);
}

static void test_timers_cancel(void)
{
  struct topo *t;
  struct param_set *params;
  struct fabric *fab = new_fabric(&t, &params);
  fab_timer_id a = fabric_timer_arm(fab, 1e-6, T_RECORD, NULL, 1);
  fab_timer_id b = fabric_timer_arm(fab, 2e-6, T_RECORD, NULL, 2);
  fab_timer_id c = fabric_timer_arm(fab, 3e-6, T_RECORD, NULL, 3);
  CU_ASSERT(a != 0 && b != 0 && c != 0 && a != b && b != c);
  CU_ASSERT(fabric_timer_pending(fab, b));
  CU_ASSERT_EQUAL(fabric_timer_cancel(fab, b), 1);
  CU_ASSERT(!fabric_timer_pending(fab, b));
  CU_ASSERT_EQUAL(fabric_timer_cancel(fab, b), 0); /* twice: nothing more */
  CU_ASSERT_EQUAL(fabric_timer_cancel(fab, 0), 0); /* no timer */
  fabric_run(fab);
  CU_ASSERT_EQUAL_FATAL(R.n, 2);
  CU_ASSERT_EQUAL(R.arg[0], 1);
  CU_ASSERT_EQUAL(R.arg[1], 3);
  CU_ASSERT_EQUAL(fabric_timer_cancel(fab, a), 0); /* fired */
  CU_ASSERT(!fabric_timer_pending(fab, c));
  free_fabric(fab, t, params);
}

/* A timer cancels another one due at the same date, after it in the order: that one is dropped. */
static void test_timers_cancel_same_date(void)
{
  struct topo *t;
  struct param_set *params;
  struct fabric *fab = new_fabric(&t, &params);
  fabric_timer_arm(fab, 1e-6, T_CANCEL_OTHER, NULL, 0);
  R.victim = fabric_timer_arm(fab, 1e-6, T_RECORD, NULL, 7);
  fabric_timer_arm(fab, 1e-6, T_RECORD, NULL, 8);
  fabric_run(fab);
  CU_ASSERT_EQUAL(R.cancel_result, 1);
  CU_ASSERT_EQUAL_FATAL(R.n, 2);
  CU_ASSERT_EQUAL(R.kind[0], T_CANCEL_OTHER);
  CU_ASSERT_EQUAL(R.arg[1], 8);
  free_fabric(fab, t, params);
}

/* Timers armed from on_timer, one slot reused over and over: an old id never cancels a new timer. */
static void test_timers_stale_id(void)
{
  struct topo *t;
  struct param_set *params;
  struct fabric *fab = new_fabric(&t, &params);
  fab_timer_id first = fabric_timer_arm(fab, 1e-6, T_REARM, NULL, 0);
  fabric_advance(fab, 1e-6); /* fired; the next one (arg 1) reuses nothing yet */
  CU_ASSERT_EQUAL(R.n, 1);
  fab_timer_id later = fabric_timer_arm(fab, 5e-6, T_RECORD, NULL, 99); /* may take first's slot */
  CU_ASSERT_EQUAL(fabric_timer_cancel(fab, first), 0);
  CU_ASSERT(fabric_timer_pending(fab, later));
  fabric_run(fab);
  CU_ASSERT_EQUAL_FATAL(R.n, 5); /* arg 0..3 of the chain, then 99 */
  for (uint32_t i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(R.arg[i], i);
  CU_ASSERT_EQUAL(R.arg[4], 99);
  free_fabric(fab, t, params);
}

/* A timer armed later with a sequence number reserved earlier comes before the timers of the same
 * date armed in between. */
static void test_timers_reserved_seq(void)
{
  struct topo *t;
  struct param_set *params;
  struct fabric *fab = new_fabric(&t, &params);
  uint64_t seq = fabric_reserve_seq(fab);
  fabric_timer_arm(fab, 1e-6, T_RECORD, NULL, 2);
  fabric_timer_arm_seq(fab, 1e-6, seq, T_RECORD, NULL, 1);
  fabric_run(fab);
  CU_ASSERT_EQUAL_FATAL(R.n, 2);
  CU_ASSERT_EQUAL(R.arg[0], 1);
  CU_ASSERT_EQUAL(R.arg[1], 2);
  free_fabric(fab, t, params);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "timers";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "timers_order_and_operands", test_timers_order_and_operands },
  { "timers_cancel", test_timers_cancel },
  { "timers_cancel_same_date", test_timers_cancel_same_date },
  { "timers_stale_id", test_timers_stale_id },
  { "timers_reserved_seq", test_timers_reserved_seq },
  { NULL, NULL },
};
