/* The livelock watchdog (fabric/watchdog-events) on models that livelock on purpose:
 *
 *  - a model that never lets a packet leave and retries at the same date forever: time stands
 *    still, the watchdog stops the run after the threshold, at that date, naming the NIC port;
 *  - a model that never lets a packet leave and retries a nanosecond later forever: time moves
 *    but no byte is delivered, the watchdog stops it too;
 *  - the ideal model on the same transfer: delivered, the watchdog silent;
 *  - 0 turns the watchdog off (the same-date livelock then runs past the threshold, and is stopped
 *    here by a bound in the test model instead).
 * Without the watchdog, fabric_run would never return on the first two. */
#include <CUnit/Basic.h>
#include <string.h>

#include "test_support.h"
#include "cunit_main.h"

static long g_retries, g_retry_limit;
static double g_retry_delay;

static int refuse(struct fabric *fab, int port, int queue, const struct fab_packet *pkt)
{
  (void)port, (void)queue, (void)pkt;
  if (g_retry_limit == 0 || g_retries < g_retry_limit)
    fabric_timer_arm(fab, fab->now + g_retry_delay, 0, NULL, (uint32_t)port);
  g_retries++;
  return 0;
}

static void retry(struct fabric *fab, int kind, void *ptr, uint32_t arg)
{
  (void)kind, (void)ptr;
  fabric_port_kick(fab, (int)arg);
}

static const struct fab_model livelock_model = { .name = "livelock",
                                                 .packet.may_send = refuse,
                                                 .timers.on_timer = retry };

/* Runs one 1 MB transfer from GPU 0 to GPU 1 with the watchdog at threshold; returns the fabric. */
static struct fabric *run_one(const struct fab_model *model, const char *threshold, struct topo *t,
                              struct param_set **params)
{
  char err[256];
  *params = default_params();
  CU_ASSERT_EQUAL_FATAL(fab_param_set_text(*params, "fabric/watchdog-events", threshold, "test", err, sizeof err), 0);
  struct fabric *fab = fabric_new(t, *params, model, FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  g_retries = 0;
  fabric_post(fab, 0, 1, 1e6, 0, 0, NULL, NULL);
  fabric_run(fab);
  return fab;
}

static void test_watchdog_same_date(void)
{
  struct topo *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  struct param_set *params;
  g_retry_delay = 0;
  g_retry_limit = 0;
  struct fabric *fab = run_one(&livelock_model, "1000", t, &params);
  fprintf(stderr, "\n    %s", fabric_stall_message(fab));
  CU_ASSERT(fabric_stalled(fab));
  CU_ASSERT(g_retries >= 999 && g_retries <= 1001); /* stopped at the threshold, not later */
  CU_ASSERT_DOUBLE_EQUAL(fab->now, 500e-9, 1e-15);  /* the flow's start: nic latency */
  CU_ASSERT(strstr(fabric_stall_message(fab), "livelock: 1000 events in a row at one simulated date") != NULL);
  CU_ASSERT(strstr(fabric_stall_message(fab), "model timer") != NULL);
  CU_ASSERT(strstr(fabric_stall_message(fab), "0 of 1 done") != NULL);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

static void test_watchdog_no_delivery(void)
{
  struct topo *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  struct param_set *params;
  g_retry_delay = 1e-9;
  g_retry_limit = 0;
  struct fabric *fab = run_one(&livelock_model, "5000", t, &params);
  fprintf(stderr, "\n    %s", fabric_stall_message(fab));
  CU_ASSERT(fabric_stalled(fab));
  CU_ASSERT(fab->now > 4e-6); /* time moved on: ~5000 retries of 1 ns */
  CU_ASSERT(strstr(fabric_stall_message(fab), "5000 events without a byte delivered") != NULL);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

static void test_watchdog_silent_on_progress(void)
{
  struct topo *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  struct param_set *params;
  /* 1 MB = 245 packets, two hops each: a few events between deliveries. */
  struct fabric *fab = run_one(&fab_model_ideal, "20", t, &params);
  CU_ASSERT(!fabric_stalled(fab));
  CU_ASSERT_EQUAL(fab->stats.flows_done, 1);
  CU_ASSERT_EQUAL(fab->stats.bytes_delivered, 1e6);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

static void test_watchdog_off(void)
{
  struct topo *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  struct param_set *params;
  g_retry_delay = 0;
  g_retry_limit = 200000; /* the test's own bound: the model gives up after that many retries */
  struct fabric *fab = run_one(&livelock_model, "0", t, &params);
  CU_ASSERT(!fabric_stalled(fab));
  CU_ASSERT(g_retries > 200000);
  CU_ASSERT_EQUAL(fab->stats.flows_done, 0);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "watchdog";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "watchdog_same_date", test_watchdog_same_date },
  { "watchdog_no_delivery", test_watchdog_no_delivery },
  { "watchdog_silent_on_progress", test_watchdog_silent_on_progress },
  { "watchdog_off", test_watchdog_off },
  { NULL, NULL },
};
