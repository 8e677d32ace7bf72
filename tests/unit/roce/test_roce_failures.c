/* RoCEv2 at packet fidelity under failures (failure.h): the frames a failed link loses leave the
 * switch buffers they were counted in, go-back-N sends them again, every byte arrives. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "failure.h"
#include "test_failures_support.h"
#include "test_roce_support.h"
#include "cunit_main.h"

#define G400 50e9

static struct fab_failures *schedule(const struct topo *t, const char *text)
{
  struct fab_failures *f = failures_from_text(t, text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  return f;
}

static void tally_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  double *bytes = ctx;
  *bytes += flow->bytes;
}

/* A 4-to-1 incast from leaf1 to GPU 0 on leaf0 (2 spines, DCQCN off: PFC holds the queues at the
 * spines' ports toward leaf0). spine0's link to leaf0 fails 20 us in, with frames queued for it,
 * and comes back up at 2 ms. The frames on it and queued for it are lost and counted; the buffer
 * and PFC accounting they held is released (at the end no switch holds a byte: a leaked byte
 * would show here, and a leaked pause would stop the run); go-back-N resends them (roce/rto,
 * 1 ms, after the last progress) and every byte arrives. */
static void test_incast_link_down_up(void)
{
  struct topo *t = leaf_spine(2, 4, 2, G400, 100e-9);
  const char *cfg[] = { "roce/dcqcn:off", "roce/buffer:2MB", NULL };
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  CU_ASSERT_FATAL(
      fabric_failures_install(fab, schedule(t, "time_us,action,target\n20,down,leaf0--spine0\n2000,up,leaf0--spine0\n"),
                              0, err, sizeof err) == 0);
  double bytes = 0;
  for (int i = 0; i < 4; i++)
    fabric_post(fab, 4 + i, 0, 2e6, 0, 0, tally_done, &bytes);
  fabric_advance(fab, 25e-6);
  const struct fab_fail_event *ev = &fab->failures->events[0];
  CU_ASSERT(ev->packets_dropped > 0);
  fabric_run(fab);
  fprintf(stderr, "\n  [roce incast, leaf0--spine0 down 20 us - 2 ms] %llu frames dropped, %.0f B resent, %.1f us\n",
          ev->packets_dropped, ev->bytes_retransmitted, fab->stats.last_delivery_s * 1e6);
  CU_ASSERT_EQUAL(bytes, 8e6);
  CU_ASSERT_EQUAL(fab->stats.bytes_delivered, 8e6);
  CU_ASSERT_EQUAL((double)fab->stats.drops, (double)(ev->packets_dropped + fab->failures->events[1].packets_dropped));
  CU_ASSERT(ev->bytes_retransmitted > 0);
  CU_ASSERT(sg_roce_get_retransmitted_bytes(fab) >= ev->bytes_retransmitted);
  CU_ASSERT(fab->stats.last_delivery_s > 1e-3); /* the lost frames waited for the retransmission timer */
  CU_ASSERT_EQUAL(sg_roce_get_buffer_used(fab), 0);
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
}

const char sgf_unit_suite[] = "roce_failures";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "incast_link_down_up", test_incast_link_down_up },
  { NULL, NULL },
};
