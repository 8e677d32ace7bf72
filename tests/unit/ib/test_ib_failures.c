/* InfiniBand at packet fidelity under failures (failure.h, ib_transport.c, ib_switch.c): the
 * credits of a link that goes down and comes back up, the RC transport's retransmission of the
 * packets a failed link lost, and the QP that runs out of retries. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "failure.h"
#include "test_failures_support.h"
#include "test_ib_support.h"
#include "cunit_main.h"

struct tally {
  int done;
  double bytes;
};

static void tally_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct tally *t = ctx;
  t->done++;
  t->bytes += flow->bytes;
}

static struct fab_failures *schedule(const struct topo *t, const char *text)
{
  struct fab_failures *f = failures_from_text(t, text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  return f;
}

/* A packet-fidelity InfiniBand fabric on tiny-16 with the schedule text installed (timeout_s:
 * the communicator timeout), GPUs 0-3 (leaf0) each sending bytes to GPUs 12-15 (leaf3). */
static struct fabric *setup(struct platform *p, const char *const *cfg, struct param_set **set, const char *text,
                            double timeout_s, double bytes, struct tally *tally)
{
  *set = ib_params_with(cfg);
  char err[256] = "";
  struct fabric *fab = fabric_new(p->topo, *set, ib_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
  if (fab == NULL)
    fprintf(stderr, "%s\n", err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  CU_ASSERT_FATAL(fabric_failures_install(fab, schedule(p->topo, text), timeout_s, err, sizeof err) == 0);
  memset(tally, 0, sizeof *tally);
  for (int i = 0; i < 4; i++)
    fabric_post(fab, i, 12 + i, bytes, 0, 0, tally_done, tally);
  return fab;
}

static int link_id(const struct topo *t, const char *name)
{
  for (int l = 0; l < t->n_links; l++)
    if (strcmp(t->links[l].name, name) == 0)
      return l;
  return -1;
}

/* Credits of a fabric port: free + held in the buffer it feeds must be the whole buffer when
 * nothing is on the wire, and after the run everything is back. */
static void check_all_credits_back(struct fabric *fab)
{
  const struct topo *t = fab->topo;
  int bad = 0;
  for (int p = 0; p < t->n_ports; p++) {
    if (t->ports[p].is_nvlink)
      continue;
    if (sg_ib_get_port_credits(fab, p, 0) != 1024 || sg_ib_get_port_buffered_blocks(fab, p, 0) != 0) {
      fprintf(stderr, "\n    port %d: %d free, %d buffered", p, sg_ib_get_port_credits(fab, p, 0),
              sg_ib_get_port_buffered_blocks(fab, p, 0));
      bad++;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
}

/* leaf0--spine1 goes down 10 us into four 2 MB transfers that cross it (D-mod-K: some of them
 * use spine1), and comes back up at 3 ms. While it is down its two ports hold no credit; the
 * credits they held are counted as reset; when it is up again they advertise the buffer less
 * what it still holds; at the end every port has its 1,024 blocks (64 KiB / 64 B) again and
 * every byte arrived, the lost packets sent again after the local ACK timeout (2^8 x 4.096 us).
 * A credit returned twice would abort in ib_credit_return (above the buffer size); a credit
 * leaked would leave a port below 1,024. */
static void test_credits_down_up(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const char *cfg[] = { "ib/routing:dmodk", "ib/transport-timeout:8", NULL };
  struct param_set *set;
  struct tally tally;
  struct fabric *fab =
      setup(p, cfg, &set, "time_us,action,target\n10,down,leaf0--spine1\n3000,up,leaf0--spine1\n", 0, 2e6, &tally);
  int l = link_id(p->topo, "leaf0--spine1");
  CU_ASSERT_FATAL(l >= 0);
  int up = p->topo->links[l].port[0], down = p->topo->links[l].port[1];
  fabric_advance(fab, 20e-6);
  CU_ASSERT_EQUAL(sg_ib_get_port_credits(fab, up, 0), 0);
  CU_ASSERT_EQUAL(sg_ib_get_port_credits(fab, down, 0), 0);
  CU_ASSERT(sg_ib_get_credits_reset_blocks(fab) > 0);
  CU_ASSERT(fab->stats.drops > 0);
  fabric_advance(fab, 3000.5e-6);
  /* Up again: what each direction's receiver advertises (its buffer less what it holds). */
  CU_ASSERT(sg_ib_get_credits_restored_blocks(fab) > 0);
  CU_ASSERT_EQUAL(sg_ib_get_port_credits(fab, up, 0) + sg_ib_get_port_buffered_blocks(fab, up, 0) <= 1024, 1);
  fabric_run(fab);
  CU_ASSERT_EQUAL(tally.done, 4);
  CU_ASSERT_EQUAL(tally.bytes, 8e6);
  CU_ASSERT_EQUAL(fab->stats.bytes_delivered, 8e6);
  CU_ASSERT_EQUAL(fabric_failures_job_failed(fab->failures), -1);
  CU_ASSERT(sg_ib_get_transport_timeouts(fab) > 0);
  CU_ASSERT(sg_ib_get_retransmitted_bytes(fab) > 0);
  const struct fab_fail_event *ev = &fab->failures->events[0];
  CU_ASSERT(ev->packets_dropped > 0);
  CU_ASSERT_EQUAL((double)fab->stats.drops, (double)ev->packets_dropped);
  CU_ASSERT(ev->bytes_retransmitted > 0);
  CU_ASSERT_EQUAL(ev->bytes_retransmitted, sg_ib_get_retransmitted_bytes(fab));
  check_all_credits_back(fab);
  fabric_free(fab);
  fab_param_set_free(set);
  platform_free(p);
}

/* The link stays down; the subnet manager's update (ib/failover:ar, 1 ms) moves the D-mod-K
 * paths off it. The transfers that lost packets resend them once their timer (1.05 ms after the
 * last acknowledgement) fires: every byte arrives, later than without the failure. */
static void test_retransmission_after_reroute(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const char *cfg[] = { "ib/routing:dmodk", "ib/transport-timeout:8", "ib/failover:ar", NULL };
  struct param_set *set;
  struct tally tally;
  struct fabric *fab = setup(p, cfg, &set, "time_us,action,target\n10,down,leaf0--spine1\n", 0, 2e6, &tally);
  fabric_run(fab);
  CU_ASSERT_EQUAL(tally.done, 4);
  CU_ASSERT_EQUAL(fab->stats.bytes_delivered, 8e6);
  const struct fab_fail_event *ev = &fab->failures->events[0];
  CU_ASSERT(ev->packets_dropped > 0);
  CU_ASSERT(ev->flows_rerouted > 0);
  CU_ASSERT(ev->bytes_retransmitted > 0);
  double timeout = 4.096e-6 * 256;
  CU_ASSERT(fab->stats.last_delivery_s > timeout); /* without the failure: about 170 us */
  CU_ASSERT(fab->stats.last_delivery_s < 3 * timeout);
  fabric_free(fab);
  fab_param_set_free(set);
  platform_free(p);
}

/* GPU 0's NIC link goes down for good and no communicator timeout is set: its QP times out 1 +
 * ib/transport-retry times (8 x 2^8 x 4.096 us from its last acknowledgement) and goes to the
 * error state, which fails the job. */
static void test_retry_count_exceeded(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const char *cfg[] = { "ib/transport-timeout:8", NULL };
  struct param_set *set;
  struct tally tally;
  struct fabric *fab = setup(p, cfg, &set, "time_us,action,target\n10,down,gpu0\n", 0, 2e6, &tally);
  fabric_run(fab);
  CU_ASSERT_EQUAL(tally.done, 3);
  double failed = fabric_failures_job_failed(fab->failures);
  double timeout = 4.096e-6 * 256;
  CU_ASSERT(failed > 10e-6 + 8 * timeout - 1e-6 && failed < 10e-6 + 8 * timeout + 5e-6);
  CU_ASSERT(strstr(fab->failures->job_failed_msg, "retry count exceeded") != NULL);
  CU_ASSERT_EQUAL(sg_ib_get_transport_timeouts(fab), 7);
  fabric_free(fab);
  fab_param_set_free(set);
  platform_free(p);
}

const char sgf_unit_suite[] = "ib_failures";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "credits_down_up", test_credits_down_up },
  { "retransmission_after_reroute", test_retransmission_after_reroute },
  { "retry_count_exceeded", test_retry_count_exceeded },
  { NULL, NULL },
};
