/* The packet and flow engines of the ideal fabric against analytic completion times, and
 * against each other. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "rng.h"
#include "test_support.h"
#include "cunit_main.h"

#define RATE 50e9 /* 400Gbps */
#define LINK_LAT 100e-9
#define SWITCH_LAT 130e-9
#define NIC_LAT 500e-9

struct record {
  double fct[2048];
  int n;
};

static void record_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct record *r = ctx;
  r->fct[flow->id] = flow->finish_s - flow->post_s;
  r->n++;
}

struct flow_spec {
  int src, dst;
  double bytes, start_s;
};

static double run_flows(struct platform *p, fab_fidelity fidelity, const char *cfg, const struct flow_spec *flows,
                        int n, struct record *r)
{
  struct param_set *params = default_params();
  char err[256];
  if (cfg)
    CU_ASSERT_EQUAL_FATAL(fab_param_set_cfg(params, cfg, err, sizeof err), 0);
  struct fabric *fab = fabric_new(p->topo, params, &fab_model_ideal, fidelity, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  memset(r, 0, sizeof *r);
  for (int i = 0; i < n; i++)
    fabric_post(fab, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_s, 0, record_done, r);
  fabric_run(fab);
  CU_ASSERT_EQUAL(r->n, n);
  CU_ASSERT_EQUAL(fab->stats.drops, 0);
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += r->fct[i];
  fabric_free(fab);
  fab_param_set_free(params);
  return sum / n;
}

static int within(double value, double expected, double tolerance)
{
  return fabs(value - expected) <= tolerance * fabs(expected);
}

/* gpu0 -> gpu8 on tiny-16: gpu0-leaf0-spine-leaf2-gpu8, 4 links, 3 switches. */
static void test_engine_single_flow_analytic(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const double S = 1e6;
  struct flow_spec f = { 0, 8, S, 0 };
  struct record r;
  double cut_through = S / RATE + NIC_LAT + 4 * LINK_LAT + 3 * SWITCH_LAT;
  double packet = run_flows(p, FAB_FIDELITY_PACKET, NULL, &f, 1, &r);
  CU_ASSERT(within(packet, cut_through, 0.01));
  CU_ASSERT(within(packet, cut_through, 1e-9)); /* the model is exact, not merely close */
  double flow = run_flows(p, FAB_FIDELITY_FLOW, NULL, &f, 1, &r);
  CU_ASSERT(within(flow, cut_through, 1e-9));
  /* Store-and-forward: the packet train is paced by its full 4096-byte packets, each re-serialised
   * at 3 more hops; the short last packet (576 B) follows the one before it. */
  double store_forward = cut_through + 3 * 4096 / RATE;
  packet = run_flows(p, FAB_FIDELITY_PACKET, "fabric/switching:store-and-forward", &f, 1, &r);
  CU_ASSERT(within(packet, store_forward, 1e-9));
  flow = run_flows(p, FAB_FIDELITY_FLOW, "fabric/switching:store-and-forward", &f, 1, &r);
  CU_ASSERT(within(flow, store_forward, 1e-9));
  platform_free(p);
}

static void test_engine_two_flows_share_receiver(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const double S = 4e6;
  struct flow_spec one = { 8, 0, S, 0 };
  struct flow_spec two[2] = { { 8, 0, S, 0 }, { 12, 0, S, 0 } };
  struct record r;
  for (int fid = 0; fid < 2; fid++) {
    double alone = run_flows(p, (fab_fidelity)fid, NULL, &one, 1, &r);
    double shared = run_flows(p, (fab_fidelity)fid, NULL, two, 2, &r);
    double latency = alone - S / RATE;
    CU_ASSERT(within(r.fct[0] - latency, 2 * (alone - latency), 0.01));
    CU_ASSERT(within(r.fct[1] - latency, 2 * (alone - latency), 0.01));
    CU_ASSERT(within(shared, 2 * S / RATE + latency, 0.01));
  }
  platform_free(p);
}

static void test_engine_flow_matches_packet_on_incast(void)
{
  /* 8 senders and 1 receiver on one switch. */
  struct platform p = { .topo = fab_topo_single_switch(9, RATE, LINK_LAT, SWITCH_LAT) };
  struct flow_spec f[8];
  for (int i = 0; i < 8; i++)
    f[i] = (struct flow_spec){ 1 + i, 0, 16e6, 0 };
  struct record r;
  double packet = run_flows(&p, FAB_FIDELITY_PACKET, NULL, f, 8, &r);
  for (int i = 0; i < 8; i++) /* every sender gets 1/8 of the receiver's link */
    CU_ASSERT(within(r.fct[i], 8 * 16e6 / RATE, 0.01));
  double flow = run_flows(&p, FAB_FIDELITY_FLOW, NULL, f, 8, &r);
  fprintf(stderr, "\n    8-to-1 incast, 16 MB: mean FCT packet %.3f us, flow %.3f us (%+.2f%%)\n", packet * 1e6,
          flow * 1e6, 100 * (flow - packet) / packet);
  CU_ASSERT(within(flow, packet, 0.05));
  CU_ASSERT(within(packet, 8 * 16e6 / RATE, 0.01)); /* the receiver's link is the bottleneck */
  fab_topo_free(p.topo);
}

static int make_permutation(int n, uint64_t seed, struct flow_spec *f, double bytes)
{
  int perm[2048];
  struct fab_rng rng;
  fab_rng_seed(&rng, seed);
  fab_rng_derangement(&rng, n, perm);
  for (int i = 0; i < n; i++)
    f[i] = (struct flow_spec){ i, perm[i], bytes, 0 };
  return n;
}

static void test_engine_flow_matches_packet_on_permutation(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  static struct flow_spec f[128];
  int n = make_permutation(128, 3, f, 4e6);
  static struct record r1, r2;
  double packet = run_flows(p, FAB_FIDELITY_PACKET, NULL, f, n, &r1);
  double flow = run_flows(p, FAB_FIDELITY_FLOW, NULL, f, n, &r2);
  fprintf(stderr, "\n    128-GPU permutation, 4 MB: mean FCT packet %.3f us, flow %.3f us (%+.2f%%)\n", packet * 1e6,
          flow * 1e6, 100 * (flow - packet) / packet);
  CU_ASSERT(within(flow, packet, 0.05));
  platform_free(p);
}

/* Five GPUs on one switch, the ideal model at flow fidelity: the rate tests' fabric. */
struct one_switch {
  struct topo *topo;
  struct param_set *params;
  struct fabric *fab;
};

static struct fabric *one_switch_open(struct one_switch *s)
{
  char err[128];
  s->topo = fab_topo_single_switch(5, RATE, LINK_LAT, SWITCH_LAT);
  s->params = default_params();
  s->fab = fabric_new(s->topo, s->params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s->fab);
  return s->fab;
}

/* Runs the fabric to the end, checks that its `flows` transfers completed, frees it all. */
static void one_switch_close(struct one_switch *s, uint64_t flows)
{
  fabric_run(s->fab);
  CU_ASSERT_EQUAL(s->fab->stats.flows_done, flows);
  fabric_free(s->fab);
  fab_param_set_free(s->params);
  fab_topo_free(s->topo);
}

/* Posts a 1 GB transfer for each (source, destination) pair at date 0, into flows[]. */
static void post_pairs(struct fabric *fab, const int (*pairs)[2], int n, struct fab_flow **flows)
{
  for (int i = 0; i < n; i++)
    flows[i] = fabric_post(fab, pairs[i][0], pairs[i][1], 1e9, 0, 0, NULL, NULL);
}

static void test_engine_max_min_rates(void)
{
  /* Single switch: a, b, c -> gpu3 share gpu3's link (1/3 each); d = gpu2 -> gpu4 shares gpu2's
   * NIC with c and gets what c leaves: 2/3 of the line rate. */
  struct one_switch s;
  struct fabric *fab = one_switch_open(&s);
  static const int pairs[][2] = { { 0, 3 }, { 1, 3 }, { 2, 3 }, { 2, 4 } };
  struct fab_flow *f[4];
  post_pairs(fab, pairs, 4, f);
  struct fab_flow *a = f[0], *b = f[1], *c = f[2], *d = f[3];
  fabric_advance(fab, 1e-3);
  CU_ASSERT(within(a->rate_Bps, RATE / 3, 1e-9));
  CU_ASSERT(within(b->rate_Bps, RATE / 3, 1e-9));
  CU_ASSERT(within(c->rate_Bps, RATE / 3, 1e-9));
  CU_ASSERT(within(d->rate_Bps, 2 * RATE / 3, 1e-9));
  one_switch_close(&s, 4);
}

/* Weighted max-min: a flow of weight w gets w times a port's fair share. On one switch, a (weight
 * 1) and b, c (1/2 each: two parts of one transfer) leave gpu0: a gets half its NIC, b and c a
 * quarter each; d (1/2) shares gpu4's port with b and c and gets what they leave; e (1/2, capped
 * at a tenth of the line rate) freezes at its cap, which binds at the level cap / weight. */
static void test_engine_weighted_max_min(void)
{
  struct one_switch s;
  struct fabric *fab = one_switch_open(&s);
  static const int pairs[][2] = { { 0, 3 }, { 0, 4 }, { 0, 4 }, { 1, 4 }, { 2, 3 } };
  struct fab_flow *f[5];
  post_pairs(fab, pairs, 5, f);
  struct fab_flow *a = f[0], *b = f[1], *c = f[2], *d = f[3], *e = f[4];
  b->share_weight = c->share_weight = d->share_weight = e->share_weight = 0.5; /* before they start */
  e->own_cap_Bps = RATE / 10;
  fabric_advance(fab, 1e-3);
  CU_ASSERT(within(a->rate_Bps, RATE / 2, 1e-12));
  CU_ASSERT(within(b->rate_Bps, RATE / 4, 1e-12));
  CU_ASSERT(within(c->rate_Bps, RATE / 4, 1e-12));
  CU_ASSERT(within(d->rate_Bps, RATE / 2, 1e-12));
  CU_ASSERT_EQUAL(e->rate_Bps, RATE / 10);
  one_switch_close(&s, 5);
}

/* Goodput fractions: the filling shares out what the links carry. On one switch a (goodput
 * fraction 1/2: half of what it sends is sent again) and b leave gpu0 and get half of its NIC on
 * the wire each, so a delivers a quarter of the line rate; c (fraction 1/2, capped at a tenth of
 * the line rate delivered) takes a fifth of gpu1's NIC and of gpu2's port, and d, beside it on
 * both, the rest. Each NIC port carries what its flows deliver plus a's and c's resent bytes
 * (tx_bytes), also in the run's total (flow_wire_extra_B). Counting what flows deliver instead,
 * a would get half the line rate and d 0.9. */
static void test_engine_goodput_fraction(void)
{
  struct one_switch s;
  struct fabric *fab = one_switch_open(&s);
  static const int pairs[][2] = { { 0, 3 }, { 0, 4 }, { 1, 2 }, { 1, 2 } };
  struct fab_flow *f[4];
  post_pairs(fab, pairs, 4, f);
  struct fab_flow *a = f[0], *b = f[1], *c = f[2], *d = f[3];
  CU_ASSERT_EQUAL(fabric_flow_set_goodput(fab, a, 0.5), 1);
  CU_ASSERT_EQUAL(fabric_flow_set_goodput(fab, a, 0.5), 0); /* unchanged */
  fabric_flow_set_goodput(fab, c, 0.5);
  c->own_cap_Bps = RATE / 10;
  fabric_advance(fab, 1e-3);
  CU_ASSERT(within(a->rate_Bps, RATE / 4, 1e-12));
  CU_ASSERT(within(fab_flow_wire_rate(a), RATE / 2, 1e-12));
  CU_ASSERT(within(b->rate_Bps, RATE / 2, 1e-12));
  CU_ASSERT(within(c->rate_Bps, RATE / 10, 1e-12));
  CU_ASSERT(within(d->rate_Bps, RATE * 4 / 5, 1e-12));
  /* at a fraction of 1/2 a flow resends what it delivers: a and c, since they started (rates
   * unchanged: none drains within 2 ms). A flow of its own, gpu3 to gpu0, brings the clock there. */
  fabric_post(fab, 3, 0, 1e6, 2e-3, 0, NULL, NULL);
  fabric_advance(fab, 2.1e-3); /* its start, after the NIC's latency */
  CU_ASSERT(fab->now >= 2e-3);
  fabric_flow_set_goodput(fab, a, 1); /* counts a's bytes so far at 1/2 */
  fabric_flow_set_goodput(fab, c, 1);
  double resent_a = a->rate_Bps * (fab->now - a->start_s), resent_c = c->rate_Bps * (fab->now - c->start_s);
  CU_ASSERT(resent_a > 0 && resent_c > 0);
  CU_ASSERT(within(fab->stats.flow_wire_extra_B, resent_a + resent_c, 1e-9));
  CU_ASSERT(within(fab->ports[a->path[0]].tx_bytes, 2e9 + resent_a, 1e-9));
  CU_ASSERT(within(fab->ports[c->path[0]].tx_bytes, 2e9 + resent_c, 1e-9));
  one_switch_close(&s, 5);
}

/* Progressive filling reaches the weighted max-min allocation under caps: on a 2-tier fat-tree,
 * 400 transfers between random GPUs (NVLink and fabric paths), of weights 1, 1/2 and 1/3, a third
 * of them capped at 1-50 % of the line rate. Checked on the rates, not against another filling:
 * every port within its capacity, every flow at its cap or with a bottleneck, a saturated port
 * of its path where no flow gets more per unit of weight (Bertsekas & Gallager, "Data Networks",
 * 1992, section 6.5.2). The heap that orders the candidate bottlenecks keeps stale keys as lower
 * bounds (flow_engine.c, refresh_top): freezing in a wrong order breaks the bottleneck test. */
static void test_engine_max_min_random(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *params = default_params();
  char err[256];
  struct fabric *fab = fabric_new(p->topo, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  enum { N = 400 };
  static struct fab_flow *f[N];
  static const double weights[] = { 1, 0.5, 1.0 / 3 };
  struct fab_rng rng;
  fab_rng_seed(&rng, 7);
  int capped = 0;
  for (int i = 0; i < N; i++) {
    int src = (int)fab_rng_below(&rng, 128), dst = (int)fab_rng_below(&rng, 127);
    dst += dst >= src; /* any GPU but src */
    f[i] = fabric_post(fab, src, dst, 1e9, 0, 0, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f[i]);
    f[i]->share_weight = weights[fab_rng_below(&rng, 3)];
    if (fab_rng_below(&rng, 3) == 0) {
      f[i]->own_cap_Bps = RATE * (0.01 + 0.49 * fab_rng_uniform(&rng));
      capped++;
    }
  }
  fabric_advance(fab, 1e-3); /* every rate set, none drained (1 GB at 1 % of 400 Gb/s: 2 s) */
  CU_ASSERT(capped > N / 5);
  int at_cap = 0, bottlenecked = 0, ports_over = 0;
  for (int port = 0; port < p->topo->n_ports; port++) {
    int count;
    struct fab_flow *const *on = fabric_port_flows(fab, port, &count);
    double sum = 0;
    for (int k = 0; k < count; k++)
      sum += on[k]->rate_Bps;
    ports_over += sum > fabric_port_capacity(fab, port) * (1 + 1e-9);
  }
  CU_ASSERT_EQUAL(ports_over, 0);
  for (int i = 0; i < N; i++) {
    CU_ASSERT(f[i]->rate_Bps > 0);
    if (f[i]->own_cap_Bps > 0) {
      CU_ASSERT(f[i]->rate_Bps <= f[i]->own_cap_Bps * (1 + 1e-12));
      if (f[i]->rate_Bps >= f[i]->own_cap_Bps * (1 - 1e-9)) {
        at_cap++;
        continue;
      }
    }
    int found = 0;
    for (int h = 0; h < f[i]->hops && !found; h++) {
      int count;
      struct fab_flow *const *on = fabric_port_flows(fab, f[i]->path[h], &count);
      double sum = 0, best = 0;
      for (int k = 0; k < count; k++) {
        sum += on[k]->rate_Bps;
        best = fmax(best, on[k]->rate_Bps / on[k]->share_weight);
      }
      found = sum >= fabric_port_capacity(fab, f[i]->path[h]) * (1 - 1e-9) &&
              f[i]->rate_Bps / f[i]->share_weight >= best * (1 - 1e-9);
    }
    bottlenecked += found;
  }
  CU_ASSERT_EQUAL(at_cap + bottlenecked, N);
  CU_ASSERT(at_cap > 0 && bottlenecked > 0);
  fabric_run(fab);
  CU_ASSERT_EQUAL(fab->stats.flows_done, (uint64_t)N);
  fabric_free(fab);
  fab_param_set_free(params);
  platform_free(p);
}

static void test_engine_same_seed_same_result(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  static struct flow_spec f[128];
  int n = make_permutation(128, 11, f, 1e6);
  static struct record r1, r2;
  for (int fid = 0; fid < 2; fid++) {
    run_flows(p, (fab_fidelity)fid, NULL, f, n, &r1);
    run_flows(p, (fab_fidelity)fid, NULL, f, n, &r2);
    CU_ASSERT_EQUAL(memcmp(r1.fct, r2.fct, sizeof(double) * (size_t)n), 0);
  }
  platform_free(p);
}

/* Runs the flows on one switch of 16 GPUs at flow fidelity with the given drain tolerance;
 * fct[i] receives flow i's completion time. Returns the rate recomputations. */
static uint64_t run_with_drain_tolerance(double tolerance, const struct flow_spec *flows, int n, double *fct)
{
  struct topo *t = fab_topo_single_switch(16, RATE, LINK_LAT, SWITCH_LAT);
  struct param_set *params = default_params();
  char cfg[64], err[128];
  snprintf(cfg, sizeof cfg, "fabric/flow-drain-tolerance:%g", tolerance);
  CU_ASSERT_EQUAL_FATAL(fab_param_set_cfg(params, cfg, err, sizeof err), 0);
  struct fabric *fab = fabric_new(t, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct record r;
  memset(&r, 0, sizeof r);
  for (int i = 0; i < n; i++)
    fabric_post(fab, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_s, 0, record_done, &r);
  fabric_run(fab);
  CU_ASSERT_EQUAL(r.n, n);
  memcpy(fct, r.fct, (size_t)n * sizeof *fct);
  uint64_t recomputations = fab->stats.rate_updates;
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
  return recomputations;
}

/* Eight flows on disjoint links of one switch; flows 0-6 due within 0.06 % of each other,
 * flow 7 1 % later. */
static uint64_t drain_cluster(double tolerance, double fct[8])
{
  struct flow_spec f[8];
  for (int i = 0; i < 8; i++)
    f[i] = (struct flow_spec){ i, 8 + i, 10e6 * (i < 7 ? 1 + 1e-4 * i : 1.01), 0 };
  return run_with_drain_tolerance(tolerance, f, 8, fct);
}

static void test_engine_drain_tolerance(void)
{
  /* fabric/flow-drain-tolerance: the flows due within 0.1 % of their age of the first drain with
   * it, in one recomputation, each at most 0.1 % early; a flow due later keeps its exact date. */
  double exact[8], merged[8];
  uint64_t n_exact = drain_cluster(0, exact);
  uint64_t n_merged = drain_cluster(1e-3, merged);
  CU_ASSERT_EQUAL(n_exact, 1 + 8);  /* the start, then one per drain date */
  CU_ASSERT_EQUAL(n_merged, 1 + 2); /* the start, flows 0-6 together, flow 7 */
  for (int i = 0; i < 7; i++) {
    CU_ASSERT(merged[i] <= exact[i]);
    CU_ASSERT(merged[i] >= (1 - 1e-3) * exact[i]);
    CU_ASSERT_DOUBLE_EQUAL(merged[i], merged[0], 1e-15);
  }
  CU_ASSERT_DOUBLE_EQUAL(merged[7], exact[7], 1e-15);
}

/* A: 10 MB from t = 0; C: 50 ns of bytes more than A, from t = 0; B: 1 us of bytes, posted so
 * that it is due 50 ns after A. */
static void drain_old_and_young(double tolerance, double fct[3])
{
  double a_drain = NIC_LAT + 10e6 / RATE;
  const struct flow_spec f[3] = { { 0, 3, 10e6, 0 },                                         /* A */
                                  { 1, 4, 10e6 + 50e-9 * RATE, 0 },                          /* C */
                                  { 2, 5, 1e-6 * RATE, a_drain + 50e-9 - 1e-6 - NIC_LAT } }; /* B */
  run_with_drain_tolerance(tolerance, f, 3, fct);
}

static void test_engine_drain_tolerance_is_per_flow(void)
{
  /* C, as old as A and due 50 ns (0.025 % of its age) after it, drains with A; B, due as soon
   * after A but only 1 us old (50 ns is 5 % of its age), keeps its exact date. */
  double exact[3], merged[3];
  drain_old_and_young(0, exact);
  drain_old_and_young(1e-3, merged);
  CU_ASSERT_DOUBLE_EQUAL(merged[0], exact[0], 1e-15);
  CU_ASSERT(merged[1] < exact[1] - 40e-9 && merged[1] >= (1 - 1e-3) * exact[1]);
  CU_ASSERT_DOUBLE_EQUAL(merged[2], exact[2], 1e-15);
}

/* Max-min rates of the flows of a single switch by progressive filling, written plainly: flow
 * k crosses port up[k] (its sender's link) and down[k] (its receiver's), each of capacity
 * cap_port; a flow with cap[k] > 0 takes no more than that. active[k] selects the flows. */
static void reference_max_min(int n, const int *up, const int *down, const double *cap, const int *active,
                              double cap_port, double *rate)
{
  double left[32];
  int count[32];
  static int frozen[2048];
  for (int q = 0; q < 32; q++) {
    left[q] = cap_port;
    count[q] = 0;
  }
  int unfrozen = 0;
  for (int k = 0; k < n; k++) {
    frozen[k] = !active[k];
    rate[k] = 0;
    if (active[k]) {
      count[up[k]]++;
      count[16 + down[k]]++;
      unfrozen++;
    }
  }
  while (unfrozen > 0) {
    double level = INFINITY;
    for (int q = 0; q < 32; q++)
      if (count[q] > 0)
        level = fmin(level, left[q] / count[q]);
    for (int k = 0; k < n; k++)
      if (!frozen[k] && cap[k] > 0)
        level = fmin(level, cap[k]);
    for (int k = 0; k < n; k++) {
      if (frozen[k])
        continue;
      int at_port = count[up[k]] > 0 && left[up[k]] / count[up[k]] <= level * (1 + 1e-12);
      at_port |= left[16 + down[k]] / count[16 + down[k]] <= level * (1 + 1e-12);
      if (!at_port && !(cap[k] > 0 && cap[k] <= level * (1 + 1e-12)))
        continue;
      rate[k] = level;
      frozen[k] = 1;
      unfrozen--;
    }
    for (int q = 0; q < 32; q++) {
      left[q] = cap_port;
      count[q] = 0;
    }
    for (int k = 0; k < n; k++) {
      if (!active[k])
        continue;
      left[up[k]] -= rate[k];
      left[16 + down[k]] -= rate[k];
      if (!frozen[k]) {
        count[up[k]]++;
        count[16 + down[k]]++;
      }
    }
  }
}

static void test_engine_completions_match_reference(void)
{
  /* 1,200 flows of random sizes, start dates and caps through one switch (more than the heap of
   * completions first holds), at flow fidelity with exact drain dates, against a plain
   * event-by-event max-min written here: every flow's completion time is the reference's drain
   * plus one constant latency. A heap of completions that drained a flow out of its turn would
   * change the rates of every flow after it. */
  enum { N = 1200, G = 16 };
  static struct flow_spec f[N];
  static int up[N], down[N], active[N], done[N];
  static double cap[N], remaining[N], rate[N], drain[N];
  struct fab_rng rng;
  fab_rng_seed(&rng, 12);
  for (int k = 0; k < N; k++) {
    up[k] = (int)fab_rng_below(&rng, G);
    down[k] = (int)fab_rng_below(&rng, G - 1);
    down[k] += down[k] >= up[k];
    f[k] =
        (struct flow_spec){ up[k], down[k], floor(1e5 + 4e6 * fab_rng_uniform(&rng)), 400e-6 * fab_rng_uniform(&rng) };
    cap[k] = fab_rng_below(&rng, 3) == 0 ? RATE * (0.02 + 0.3 * fab_rng_uniform(&rng)) : 0;
  }
  struct topo *t = fab_topo_single_switch(G, RATE, LINK_LAT, SWITCH_LAT);
  struct param_set *params = default_params();
  char err[128];
  CU_ASSERT_EQUAL_FATAL(fab_param_set_cfg(params, "fabric/flow-drain-tolerance:0", err, sizeof err), 0);
  struct fabric *fab = fabric_new(t, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  static struct record r;
  memset(&r, 0, sizeof r);
  double port_rate = INFINITY, port_rate_max = 0; /* every link of the switch: one capacity */
  for (int port = 0; port < t->n_ports; port++) {
    port_rate = fmin(port_rate, fabric_port_capacity(fab, port));
    port_rate_max = fmax(port_rate_max, fabric_port_capacity(fab, port));
  }
  CU_ASSERT_EQUAL_FATAL(port_rate, port_rate_max);
  for (int k = 0; k < N; k++) {
    struct fab_flow *flow = fabric_post(fab, f[k].src, f[k].dst, f[k].bytes, f[k].start_s, 0, record_done, &r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(flow);
    flow->own_cap_Bps = cap[k];
  }
  fabric_run(fab);
  CU_ASSERT_EQUAL_FATAL(r.n, N);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
  /* The reference: a flow sends from its start plus the NIC's latency until its last byte. */
  double now = 0;
  int left = N;
  for (int k = 0; k < N; k++)
    remaining[k] = f[k].bytes;
  while (left > 0) {
    for (int k = 0; k < N; k++)
      active[k] = !done[k] && f[k].start_s + NIC_LAT <= now;
    reference_max_min(N, up, down, cap, active, port_rate, rate);
    double next = INFINITY;
    for (int k = 0; k < N; k++) {
      if (active[k])
        next = fmin(next, now + remaining[k] / rate[k]);
      else if (!done[k])
        next = fmin(next, f[k].start_s + NIC_LAT);
    }
    for (int k = 0; k < N; k++) {
      if (!active[k])
        continue;
      remaining[k] -= rate[k] * (next - now);
      if (remaining[k] <= 1e-9 * f[k].bytes) {
        done[k] = 1;
        drain[k] = next;
        left--;
      }
    }
    now = next;
  }
  double lo = INFINITY, hi = -INFINITY;
  for (int k = 0; k < N; k++) {
    double latency = r.fct[k] - (drain[k] - f[k].start_s);
    lo = fmin(lo, latency);
    hi = fmax(hi, latency);
  }
  CU_ASSERT(lo > 0);
  CU_ASSERT(hi - lo < 1e-9); /* 1 ns against completions of 0.1-10 ms */
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "engine";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "weighted max-min", test_engine_weighted_max_min },
  { "goodput fraction", test_engine_goodput_fraction },
  { "engine_single_flow_analytic", test_engine_single_flow_analytic },
  { "engine_two_flows_share_receiver", test_engine_two_flows_share_receiver },
  { "engine_flow_matches_packet_on_incast", test_engine_flow_matches_packet_on_incast },
  { "engine_flow_matches_packet_on_permutation", test_engine_flow_matches_packet_on_permutation },
  { "engine_max_min_rates", test_engine_max_min_rates },
  { "engine_max_min_random", test_engine_max_min_random },
  { "engine_same_seed_same_result", test_engine_same_seed_same_result },
  { "engine_drain_tolerance", test_engine_drain_tolerance },
  { "engine_drain_tolerance_is_per_flow", test_engine_drain_tolerance_is_per_flow },
  { "engine_completions_match_reference", test_engine_completions_match_reference },
  { NULL, NULL },
};
