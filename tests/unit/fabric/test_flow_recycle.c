/* The flow engine's completions on recycled flow slots.
 *
 * Flows come from slabs and a finished flow's slot is reused by the next flow posted. Until the
 * engine kept its completions in a heap of their own (commit 9f33ea6), every rate change of a
 * flow scheduled a calendar event holding the flow's pointer and a version stamp (the count of
 * its rate changes), and an older event was ignored because its stamp no longer matched. A
 * recycled slot starts again at version 0, so an event left over from the slot's previous flow
 * matched the new flow once that one had changed rate as many times, and drained it then, with
 * bytes still to send: the flow finished early and its bytes were never carried. On a whole
 * Llama-3 8B iteration (64 GPUs, TP 8, PP 2, 2:1 leaves, RoCE, flow fidelity) 154 flows drained
 * early leaving 31 GB (15 % of the fabric's bytes) unsent, and the iteration came out at
 * 0.6215 s against 0.6897 s once fixed (docs/validation-iterations.md).
 *
 * Here flow A changes rate three times (start, a cap, the cap lifted), so a stale event with
 * stamp 2 outlives it; flow B is posted into A's slot and changes rate twice (start, a cap)
 * before that event's date. B must finish when its bytes are through, not at the stale date. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "test_support.h"
#include "cunit_main.h"

#define BYTES 50e6

struct recycle {
  struct fab_flow *a, *b;
  struct fab_flow *a_slot;
  double a_finish, b_finish, b_start, rate;
  int done;
};

static struct recycle R;

static void on_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  (void)ctx;
  if (flow == R.a && R.a_finish == 0) {
    R.a_finish = flow->finish_s;
    R.a = NULL; /* its slot is about to be freed */
  } else {
    R.b_finish = flow->finish_s;
    R.b_start = flow->post_s;
  }
  R.done++;
}

static void cap_a(struct fabric *fab, void *ctx)
{
  (void)ctx;
  R.rate = R.a->rate_Bps; /* A alone on its path: the line's payload rate */
  fabric_flow_set_cap(fab, R.a, 0.5 * R.rate);
}

static void uncap_a(struct fabric *fab, void *ctx)
{
  (void)ctx;
  fabric_flow_set_cap(fab, R.a, 0);
}

static void post_b(struct fabric *fab, void *ctx)
{
  (void)ctx;
  R.b = fabric_post(fab, 8, 0, BYTES, fab->now, 0, on_done, NULL);
}

static void cap_b(struct fabric *fab, void *ctx)
{
  (void)ctx;
  fabric_flow_set_cap(fab, R.b, 0.5 * R.rate);
}

static void test_stale_completion_on_recycled_slot(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *params = default_params();
  char err[256];
  struct fab_model model = fab_model_ideal;
  struct fabric *fab = fabric_new(p->topo, params, &model, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  memset(&R, 0, sizeof R);
  /* A at rate C until 0.2 ms, C/2 until 0.4 ms (its drain date then: 1.8 ms), C after: it
   * drains at about 1.1 ms. */
  R.a = R.a_slot = fabric_post(fab, 8, 0, BYTES, 0, 0, on_done, NULL);
  fabric_call_at(fab, 0.2e-3, cap_a, NULL);
  fabric_call_at(fab, 0.4e-3, uncap_a, NULL);
  /* B in A's slot from 1.2 ms, capped to C/2 at 1.3 ms: through at about 3.0 ms, after the
   * 1.8 ms date A's superseded rate had. */
  fabric_call_at(fab, 1.2e-3, post_b, NULL);
  fabric_call_at(fab, 1.3e-3, cap_b, NULL);
  fabric_run(fab);
  CU_ASSERT_EQUAL(R.done, 2);
  CU_ASSERT_TRUE(R.rate > 0);
  CU_ASSERT_PTR_EQUAL(R.b, R.a_slot); /* the case needs the recycled slot */
  CU_ASSERT_TRUE(R.a_finish > 1.0e-3 && R.a_finish < 1.2e-3);
  /* B's bytes at its rates: C from its start (after the NIC latency) to 1.3 ms, C/2 after;
   * its completion adds the path's tail latency, under a microsecond here. */
  double b_started = R.b_start + fab->nic_latency_s;
  double left = BYTES - R.rate * (1.3e-3 - b_started);
  double drained = 1.3e-3 + left / (0.5 * R.rate);
  CU_ASSERT_TRUE(R.b_finish >= drained - 1e-9);
  CU_ASSERT_TRUE(R.b_finish < drained + 2e-6);
  fabric_free(fab);
  fab_param_set_free(params);
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "flow_recycle";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "stale_completion_on_recycled_slot", test_stale_completion_on_recycled_slot },
  { NULL, NULL },
};
