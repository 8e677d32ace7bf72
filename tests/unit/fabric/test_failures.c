/* Failures: routing around failed ports, a flow re-routed off a failed link with its bytes in
 * flight sent again, and the communicator timeout when no path is left. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "failure.h"
#include "test_failures_support.h"
#include "route.h"
#include "test_support.h"
#include "cunit_main.h"

static int link_id(const struct topo *t, const char *name)
{
  for (int l = 0; l < t->n_links; l++)
    if (strcmp(t->links[l].name, name) == 0)
      return l;
  return -1;
}

static void set_down(struct topo *t, int link, int down)
{
  if (t->route_down == NULL)
    t->route_down = calloc((size_t)t->n_ports + 1, 1);
  t->route_down[t->links[link].port[0]] = (uint8_t)down;
  t->route_down[t->links[link].port[1]] = (uint8_t)down;
  fab_topo_compute_downsets(t);
}

static int crosses(const struct topo *t, const int *path, int hops)
{
  for (int h = 0; h < hops; h++)
    if (t->route_down[path[h]])
      return 1;
  return 0;
}

/* Every pair of GPUs, many keys: the hashed path avoids the failed links and still arrives. */
static void check_all_paths(struct topo *t)
{
  int bad = 0, unreachable = 0;
  for (int s = 0; s < t->n_gpus; s++)
    for (int d = 0; d < t->n_gpus; d++) {
      if (s == d)
        continue;
      for (uint64_t key = 0; key < 8; key++) {
        int path[ROUTE_MAX_HOPS];
        int hops = fab_route_hashed_path(t, s, d, key * 0x9e3779b97f4a7c15ULL, 1, path, ROUTE_MAX_HOPS);
        if (hops < 0)
          unreachable++;
        else if (crosses(t, path, hops))
          bad++;
      }
    }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(unreachable, 0);
}

static void test_route_avoids_failed_links(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct topo *t = p->topo;
  /* An up-link of leaf0 and a down-link of spine2 toward leaf3: paths from leaf0 avoid spine1,
   * paths to leaf3 avoid spine2 (a leaf must not climb to a spine that cannot come down). */
  int a = link_id(t, "leaf0--spine1"), b = link_id(t, "leaf3--spine2");
  CU_ASSERT_FATAL(a >= 0 && b >= 0);
  set_down(t, a, 1);
  set_down(t, b, 1);
  check_all_paths(t);
  int cand[ROUTE_MAX_CANDIDATES];
  int leaf1 = fab_topo_find_node(t, "leaf1");
  int n = fab_route_candidates(t, leaf1, 12 /* on leaf3 */, cand, ROUTE_MAX_CANDIDATES);
  CU_ASSERT_EQUAL(n, 3);
  for (int i = 0; i < n; i++)
    CU_ASSERT_STRING_NOT_EQUAL(t->nodes[t->ports[cand[i]].peer_node].name, "spine2");
  /* Repaired: every up-port again. */
  set_down(t, a, 0);
  set_down(t, b, 0);
  CU_ASSERT_EQUAL(fab_route_candidates(t, leaf1, 12, cand, ROUTE_MAX_CANDIDATES), 4);
  /* A GPU's NIC link: no fabric path to or from it (its node's NVLink still works). */
  set_down(t, link_id(t, "gpu5--leaf1"), 1);
  int path[ROUTE_MAX_HOPS];
  CU_ASSERT_EQUAL(fab_route_hashed_path(t, 5, 12, 1, 1, path, ROUTE_MAX_HOPS), -1);
  CU_ASSERT_EQUAL(fab_route_hashed_path(t, 12, 5, 1, 1, path, ROUTE_MAX_HOPS), -1);
  CU_ASSERT_EQUAL(fab_route_hashed_path(t, 5, 6, 1, 1, path, ROUTE_MAX_HOPS), 2); /* NVLink */
  platform_free(p);
}

static void test_route_three_tiers(void)
{
  const char *opts[] = { "--gpus", "64", "--tiers", "3", "--radix", "8", "--gpus-per-node", "4" };
  struct platform *p = load_generated(opts, 8);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct topo *t = p->topo;
  /* Take down every link of one aggregation switch but one up-link: flows reach around it. */
  int agg = -1;
  for (int i = 0; i < t->n_nodes && agg < 0; i++)
    if (t->nodes[i].kind == TOPO_SWITCH && t->nodes[i].level == 2)
      agg = i;
  CU_ASSERT_FATAL(agg >= 0);
  const struct topo_node *n = &t->nodes[agg];
  int downs = 0;
  for (int q = n->first_port; q < n->first_port + n->port_count; q++)
    if (!t->ports[q].is_up || downs == 0) {
      set_down(t, t->ports[q].link, 1);
      downs++;
    }
  check_all_paths(t);
  platform_free(p);
}

struct done_rec {
  int n;
  double finish;
};

static void on_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct done_rec *r = ctx;
  r->n++;
  r->finish = flow->finish_s;
}

/* One 10 MB flow leaf0 -> leaf3; its spine link fails at 50 us. The ideal model learns at once:
 * the flow moves to another spine, resends what it had in flight, and arrives later by exactly
 * those bytes at its rate. */
static void test_flow_rerouted(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *params = default_params();
  char err[256];
  double finish[2];
  double retx = 0;
  for (int fail = 0; fail < 2; fail++) {
    struct fabric *fab = fabric_new(p->topo, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
    struct done_rec r = { 0, 0 };
    struct fab_flow *fl = fabric_post(fab, 0, 12, 10e6, 0, 0, on_done, &r);
    fabric_advance(fab, 10e-6);
    CU_ASSERT_EQUAL_FATAL(fl->hops, 4);
    if (fail) {
      char text[256];
      snprintf(text, sizeof text, "time_us,action,target\n50,down,%s\n",
               p->topo->links[p->topo->ports[fl->path[1]].link].name);
      struct fab_failures *f = failures_from_text(p->topo, text);
      CU_ASSERT_PTR_NOT_NULL_FATAL(f);
      CU_ASSERT_EQUAL_FATAL(fabric_failures_install(fab, f, 1.0, err, sizeof err), 0);
    }
    fabric_run(fab);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_FALSE(fabric_stalled(fab));
    finish[fail] = r.finish;
    if (fail) {
      const struct fab_fail_event *ev = &fab->failures->events[0];
      CU_ASSERT_EQUAL(ev->flows_affected, 1);
      CU_ASSERT_EQUAL(ev->flows_rerouted, 1);
      CU_ASSERT_DOUBLE_EQUAL(ev->recovered_s, 50e-6, 1e-12);
      CU_ASSERT(ev->bytes_retransmitted > 0);
      retx = ev->bytes_retransmitted;
      CU_ASSERT_EQUAL(fab->stats.bytes_delivered, 10e6);
    }
    fabric_free(fab);
    free(p->topo->route_down);
    p->topo->route_down = NULL;
    fab_topo_compute_downsets(p->topo);
  }
  double rate = p->topo->ports[p->topo->gpu_nic_port[0]].rate_Bps;
  fprintf(stderr, "\n    finish %.3f us, with the failure %.3f us, %.0f bytes resent", finish[0] * 1e6, finish[1] * 1e6,
          retx);
  CU_ASSERT_DOUBLE_EQUAL(finish[1] - finish[0], retx / rate, 1e-9);
  fab_param_set_free(params);
  platform_free(p);
}

/* The NIC link of the sender fails: no path; the timeout fails the job at failure + timeout,
 * naming the transfer and the link. With the link back before the timeout the flow finishes. */
static void test_no_path_timeout(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *params = default_params();
  char err[256];
  for (int repaired = 0; repaired < 2; repaired++) {
    struct fabric *fab = fabric_new(p->topo, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
    struct done_rec r = { 0, 0 };
    fabric_post(fab, 0, 12, 10e6, 0, 0, on_done, &r);
    struct fab_failures *f =
        failures_from_text(p->topo, repaired ? "time_us,action,target\n50,down,gpu0\n1000,up,gpu0\n"
                                             : "time_us,action,target\n50,down,gpu0--leaf0\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL_FATAL(fabric_failures_install(fab, f, 2e-3, err, sizeof err), 0);
    fabric_run(fab);
    if (!repaired) {
      CU_ASSERT_EQUAL(r.n, 0);
      CU_ASSERT(fabric_stalled(fab));
      CU_ASSERT_DOUBLE_EQUAL(fabric_failures_job_failed(fab->failures), 50e-6 + 2e-3, 1e-12);
      CU_ASSERT_PTR_NOT_NULL(
          strstr(fabric_stall_message(fab),
                 "transfer GPU 0 -> GPU 12 made no progress since 0.000050 s (link gpu0--leaf0 down"));
      CU_ASSERT_EQUAL(fab->failures->events[0].flows_unroutable, 1);
    } else {
      CU_ASSERT_EQUAL(r.n, 1);
      CU_ASSERT(r.finish > 1e-3);
      CU_ASSERT(fabric_failures_job_failed(fab->failures) < 0);
    }
    fabric_free(fab);
    free(p->topo->route_down);
    p->topo->route_down = NULL;
    fab_topo_compute_downsets(p->topo);
  }
  fab_param_set_free(params);
  platform_free(p);
}

static void test_schedule_errors(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const char *bad[] = { "time,action,target\n1,down,gpu0\n",
                        "time_us,action,target\n-1,down,gpu0\n",
                        "time_us,action,target\n1,off,gpu0\n",
                        "time_us,action,target\n1,down,leaf9--spine0\n",
                        "time_us,action,target\n1,down,gpu0--nvs0\n",
                        "time_us,action,target\n",
                        "time_us,action,target\n1,down\n" };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct fab_failures *f = failures_from_text(p->topo, bad[i]);
    CU_ASSERT_PTR_NULL(f);
    fab_failures_free(f);
  }
  platform_free(p);
}

const char sgf_unit_suite[] = "failures";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "route_avoids_failed_links", test_route_avoids_failed_links },
  { "route_three_tiers", test_route_three_tiers },
  { "flow_rerouted", test_flow_rerouted },
  { "no_path_timeout", test_no_path_timeout },
  { "schedule_errors", test_schedule_errors },
  { NULL, NULL },
};
