/* InfiniBand at packet fidelity: lossless incast, credit window, routing, VL arbitration and
 * parameter checks. Each test prints its measured figures to stderr. */
#include "test_ib_support.h"
#include "cunit_main.h"

/* 8 senders to 1 receiver through one switch with small buffers (8 packets per VL). */
static void test_ib_incast_is_lossless_and_fair(void)
{
  struct topo *t = fab_topo_single_switch(9, RATE, LINK_LAT, SWITCH_LAT);
  struct xfer x[8];
  for (int i = 0; i < 8; i++)
    x[i] = (struct xfer){ .src = 1 + i, .dst = 0, .bytes = 2e6 };
  const char *cfg[] = { "ib/buffer-per-vl:32KiB", NULL };
  struct run r;
  run_begin(&r, t, FAB_FIDELITY_PACKET, cfg, x, 8);
  int down = t->ports[t->gpu_nic_port[0]].peer_port;
  const struct fab_port *fp = &r.fab->ports[down];
  double peak = 0;
  for (int p = 0; p < t->n_ports; p++)
    if (sg_ib_get_port_peak_buffer(r.fab, p) > peak)
      peak = sg_ib_get_port_peak_buffer(r.fab, p);
  fabric_run(r.fab);
  double first = INFINITY, last = 0;
  for (int i = 0; i < 8; i++) {
    if (x[i].start_s < first)
      first = x[i].start_s;
    if (x[i].finish_s > last)
      last = x[i].finish_s;
  }
  double util = fp->tx_bytes / (RATE * (last - first));
  for (int p = 0; p < t->n_ports; p++)
    if (sg_ib_get_port_peak_buffer(r.fab, p) > peak)
      peak = sg_ib_get_port_peak_buffer(r.fab, p);
  run_end(&r);
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < 8; i++) {
    double share = throughput(&x[i]) / (RATE / 8);
    lo = share < lo ? share : lo;
    hi = share > hi ? share : hi;
    CU_ASSERT(within(throughput(&x[i]), RATE / 8, 0.05));
  }
  fprintf(stderr,
          "\n    incast 8->1, 2 MB each, 32 KiB/VL: drops %llu, receiver link %.2f%% busy, sender share %.4f..%.4f of "
          "1/8, credit_stall_s %.3e, peak buffer %.0f B\n",
          (unsigned long long)r.drops, 100 * util, lo, hi, r.stall_s, peak);
  CU_ASSERT(util >= 0.95);
  CU_ASSERT(r.stall_s > 0);
  CU_ASSERT(peak <= 32768);
  fab_topo_free(t);
}

/* Steady rate of one flow between two dates. */
static double steady_rate(struct topo *t, const char *const *cfg, double bytes, fab_fidelity fid)
{
  struct xfer x = { .src = 0, .dst = 1, .bytes = bytes };
  struct run r;
  run_begin(&r, t, fid, cfg, &x, 1);
  if (fid == FAB_FIDELITY_FLOW) {
    run_end(&r);
    return bytes / (x.finish_s - x.start_s - 2 * 10e-6 - SWITCH_LAT);
  }
  fabric_advance(r.fab, 100e-6);
  struct fab_flow *f = NULL;
  /* the only flow: the NIC ring holds it while it injects */
  f = r.fab->ports[t->gpu_nic_port[0]].ring;
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  double d1 = f->delivered, t1 = r.fab->now;
  fabric_advance(r.fab, 4.1e-3);
  double d2 = f->delivered, t2 = r.fab->now;
  run_end(&r);
  return (d2 - d1) / (t2 - t1);
}

/* One flow over 10 us links: buffer/RTT below the bandwidth-delay product, line rate above. */
static void test_ib_credit_window_limits_long_links(void)
{
  struct topo *t = fab_topo_single_switch(2, RATE, 10e-6, SWITCH_LAT);
  /* A packet is 4096 B of payload + 26 B of LRH, BTH, ICRC and VCRC (IBTA Vol.1 ch. 7): 4,122 B
   * on the wire, 65 credit blocks, so a window of C blocks holds floor(C / 65) packets. */
  double rtt = 2 * 10e-6 + SWITCH_LAT + 4122 / RATE + 256e-9;
  /* 10 us is 2 km of fibre: beyond 2,048 blocks of credit only a long-haul link advertises its
   * buffer (IBTA Vol.1 7.9.4, 12-bit FCCL/FCTBS). */
  const char *small[] = { "ib/buffer-per-vl:256KiB", "ib/long-haul:on", NULL };
  const char *large[] = { "ib/buffer-per-vl:2MiB", "ib/long-haul:on", NULL };
  double expect = floor(4096 / 65) * 4096 / rtt; /* 256 KiB = 4,096 blocks: 63 packets */
  double got_small = steady_rate(t, small, 64e6, FAB_FIDELITY_PACKET);
  double got_large = steady_rate(t, large, 64e6, FAB_FIDELITY_PACKET);
  /* Without the long-haul option the 2 MiB buffer advertises 2,048 blocks = 128 KiB. */
  const char *capped[] = { "ib/buffer-per-vl:2MiB", NULL };
  double got_capped = steady_rate(t, capped, 64e6, FAB_FIDELITY_PACKET);
  double got_capped_flow = steady_rate(t, capped, 64e6, FAB_FIDELITY_FLOW);
  double capped_window = floor(2048 / 65) * 4096; /* 2,048 blocks: 31 packets */
  fprintf(stderr, "\n    2 MiB/VL without ib/long-haul: %.3f GB/s packet, %.3f GB/s flow (2,048 blocks/RTT %.3f GB/s)",
          got_capped / 1e9, got_capped_flow / 1e9, capped_window / rtt / 1e9);
  CU_ASSERT(within(got_capped, capped_window / rtt, 0.02));
  CU_ASSERT(within(got_capped_flow, capped_window / rtt, 0.02));
  fprintf(
      stderr,
      "\n    10 us links, BDP %.0f B: 256 KiB/VL -> %.3f GB/s (buffer/RTT %.3f GB/s, %+.2f%%); 2 MiB/VL -> %.3f GB/s "
      "(%.2f%% of line)\n",
      RATE * rtt, got_small / 1e9, expect / 1e9, 100 * (got_small - expect) / expect, got_large / 1e9,
      100 * got_large / RATE);
  CU_ASSERT(within(got_small, expect, 0.02));
  CU_ASSERT(within(got_large, RATE, 0.02));
  fab_topo_free(t);
}

static void shift_flows(const struct topo *t, int shift, double bytes, struct xfer *x)
{
  struct ib_lft lft;
  CU_ASSERT_EQUAL_FATAL(ib_lft_init(&lft, t), 0);
  int by_rank[1024];
  for (int g = 0; g < t->n_gpus; g++)
    by_rank[lft.rank[g]] = g;
  for (int r = 0; r < t->n_gpus; r++)
    x[r] = (struct xfer){ .src = by_rank[r], .dst = by_rank[(r + shift) % t->n_gpus], .bytes = bytes };
  ib_lft_free(&lft);
}

/* Throughput of the transfers that cross the fabric (NVLink ones aside), as fractions of the line rate. */
static void summarise(const struct xfer *x, int n, double *mean, double *min)
{
  *mean = 0;
  *min = INFINITY;
  int counted = 0;
  for (int i = 0; i < n; i++) {
    if (x[i].src / 8 == x[i].dst / 8)
      continue;
    double f = throughput(&x[i]) / RATE;
    *mean += f;
    counted++;
    if (f < *min)
      *min = f;
  }
  *mean /= counted;
}

/* Full-bisection fat-tree (ft2-128): D-mod-K carries a shift at line rate; on random
 * permutations static tables collide and adaptive routing does not. */
static void test_ib_routing_dmodk_shift_and_ar_permutation(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct topo *t = p->topo;
  static struct xfer x[128];
  const char *dmodk[] = { "ib/routing:dmodk", NULL };
  const char *ar[] = { "ib/routing:ar", NULL };
  double mean, min;
  shift_flows(t, 13, 4e6, x);
  run_all(t, FAB_FIDELITY_PACKET, dmodk, x, 128, NULL);
  summarise(x, 128, &mean, &min);
  fprintf(stderr, "\n    ft2-128 shift 13, 4 MB, D-mod-K: min %.2f%%, mean %.2f%% of line rate\n", 100 * min,
          100 * mean);
  CU_ASSERT(min >= 0.95);
  /* Random permutations: link loads of the static paths, then both routings. */
  struct ib_lft lft;
  ib_lft_init(&lft, t);
  int perm[128];
  random_permutation(128, 7, perm);
  int *load = calloc((size_t)t->n_ports, sizeof *load);
  int max_load = 0;
  for (int i = 0; i < 128; i++) {
    int path[ROUTE_MAX_HOPS];
    int hops = ib_lft_path(&lft, t, i, perm[i], path, ROUTE_MAX_HOPS);
    for (int h = 0; h < hops; h++)
      if (++load[path[h]] > max_load)
        max_load = load[path[h]];
  }
  free(load);
  ib_lft_free(&lft);
  for (int i = 0; i < 128; i++)
    x[i] = (struct xfer){ .src = i, .dst = perm[i], .bytes = 4e6 };
  run_all(t, FAB_FIDELITY_PACKET, dmodk, x, 128, NULL);
  double s_mean, s_min;
  summarise(x, 128, &s_mean, &s_min);
  run_all(t, FAB_FIDELITY_PACKET, ar, x, 128, NULL);
  double a_mean, a_min;
  summarise(x, 128, &a_mean, &a_min);
  fprintf(stderr,
          "    ft2-128 random permutation, 4 MB: D-mod-K most flows on one link %d, throughput min %.2f%% mean "
          "%.2f%%; AR min %.2f%% mean %.2f%% of line rate\n",
          max_load, 100 * s_min, 100 * s_mean, 100 * a_min, 100 * a_mean);
  CU_ASSERT(max_load > 1);
  CU_ASSERT(s_min < 0.9);
  CU_ASSERT(a_mean >= 0.90);
  CU_ASSERT(a_mean > s_mean);
  platform_free(p);
}

/* Two VLs weighted 1:3 share the receiver's link. */
static void test_ib_vl_arbitration_shares_one_to_three(void)
{
  struct topo *t = fab_topo_single_switch(3, RATE, LINK_LAT, SWITCH_LAT);
  struct xfer x[2] = { { .src = 1, .dst = 0, .tag = 0, .bytes = 8e6 }, { .src = 2, .dst = 0, .tag = 1, .bytes = 8e6 } };
  const char *cfg[] = { "ib/num-vls:2", "ib/vlarb-low:0:64,1:192", NULL };
  struct run r;
  run_begin(&r, t, FAB_FIDELITY_PACKET, cfg, x, 2);
  fabric_advance(r.fab, 20e-6);
  struct fab_flow *f0 = r.fab->ports[t->gpu_nic_port[1]].ring, *f1 = r.fab->ports[t->gpu_nic_port[2]].ring;
  CU_ASSERT_PTR_NOT_NULL_FATAL(f0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f1);
  double a0 = f0->delivered, a1 = f1->delivered;
  fabric_advance(r.fab, 140e-6);
  double b0 = f0->delivered - a0, b1 = f1->delivered - a1;
  run_end(&r);
  fprintf(stderr, "\n    VL0:VL1 weighted 64:192 on one congested link: %.2f GB/s : %.2f GB/s = 1:%.3f\n",
          b0 / 120e-6 / 1e9, b1 / 120e-6 / 1e9, b1 / b0);
  CU_ASSERT(within(b1 / b0, 3, 0.05));
  CU_ASSERT(within((b0 + b1) / 120e-6, RATE, 0.02));
  /* Without weights the link splits evenly: the 1:3 comes from the tables. */
  const char *even[] = { "ib/num-vls:2", NULL };
  run_begin(&r, t, FAB_FIDELITY_PACKET, even, x, 2);
  fabric_advance(r.fab, 20e-6);
  f0 = r.fab->ports[t->gpu_nic_port[1]].ring;
  f1 = r.fab->ports[t->gpu_nic_port[2]].ring;
  a0 = f0->delivered;
  a1 = f1->delivered;
  fabric_advance(r.fab, 140e-6);
  b0 = f0->delivered - a0;
  b1 = f1->delivered - a1;
  run_end(&r);
  CU_ASSERT(within(b1 / b0, 1, 0.05));
  fab_topo_free(t);
}

static void expect_refused(const char *cfg, const char *name)
{
  struct topo *t = fab_topo_single_switch(2, RATE, LINK_LAT, SWITCH_LAT);
  const char *list[] = { cfg, NULL };
  struct param_set *set = ib_params_with(list);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, set, ib_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
  fprintf(stderr, "    --cfg=%s -> %s\n", cfg, err);
  CU_ASSERT_PTR_NULL(fab);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, name));
  fabric_free(fab);
  fab_param_set_free(set);
  fab_topo_free(t);
}

static void test_ib_bad_parameters_are_refused(void)
{
  fprintf(stderr, "\n");
  expect_refused("ib/buffer-per-vl:0", "ib/buffer-per-vl");
  expect_refused("ib/buffer-per-vl:32", "ib/buffer-per-vl");
  expect_refused("ib/credit-block:0", "ib/credit-block");
  expect_refused("ib/buffer-per-vl:2048", "ib/buffer-per-vl");
  expect_refused("ib/num-vls:9", "ib/num-vls");
  expect_refused("ib/num-vls:0", "ib/num-vls");
  expect_refused("ib/vlarb-low:0:64,3:64", "ib/vlarb-low");
  expect_refused("ib/vlarb-high:5:10", "ib/vlarb-high");
  expect_refused("ib/sl2vl:0,4", "ib/sl2vl");
  expect_refused("ib/mtu:3000", "ib/mtu");
  /* Keyword-or-duration parameters are checked when set, before any fabric exists. */
  fabric_register_params();
  ib_register_params();
  struct param_set *set = fab_param_set_new();
  char err[256];
  const char *bad[] = { "ib/switch-latency:fast", "ib/switch-latency:2ms", "ib/nic-latency:1e300h", NULL };
  for (int i = 0; bad[i]; i++) {
    CU_ASSERT_EQUAL(fab_param_set_cfg(set, bad[i], err, sizeof err), -1);
    fprintf(stderr, "    --cfg=%s -> %s\n", bad[i], err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i][3] == 's' ? "ib/switch-latency" : "ib/nic-latency"));
  }
  fab_param_set_free(set);
}

/* Framing (IBTA Vol.1 ch. 7): every 4096-byte payload travels with LRH 8 + BTH 12 + ICRC 4 + VCRC
 * 2 = 26 bytes, so one flow at 400 Gb/s has a goodput of 50 GB/s x 4096 / 4122, at both
 * fidelities, to 0.1%. Goodput = the extra bytes over the extra time of a 32 MiB flow over a
 * 16 MiB one (latencies cancel). With ib/frame-overhead:0 it is the line rate. */
static double ib_goodput(fab_fidelity fid, const char *const *cfg)
{
  struct topo *t = fab_topo_single_switch(2, RATE, LINK_LAT, SWITCH_LAT);
  double fct[2];
  for (int i = 0; i < 2; i++) {
    struct xfer x = { .src = 0, .dst = 1, .bytes = (i + 1) * 16.0 * 1048576 };
    struct run r;
    run_begin(&r, t, fid, cfg, &x, 1);
    run_end(&r);
    fct[i] = x.finish_s - x.start_s;
  }
  fab_topo_free(t);
  return 16.0 * 1048576 / (fct[1] - fct[0]);
}

static void test_ib_framing_goodput(void)
{
  const double expect = RATE * 4096 / 4122;
  double packet = ib_goodput(FAB_FIDELITY_PACKET, NULL), flow = ib_goodput(FAB_FIDELITY_FLOW, NULL);
  const char *bare[] = { "ib/frame-overhead:0", NULL };
  double packet_bare = ib_goodput(FAB_FIDELITY_PACKET, bare);
  fprintf(stderr,
          "\n    one flow at 400 Gb/s: goodput %.4f GB/s packet, %.4f GB/s flow (4096/4122 of line: %.4f); "
          "no framing %.4f GB/s\n",
          packet / 1e9, flow / 1e9, expect / 1e9, packet_bare / 1e9);
  CU_ASSERT(fabs(packet - expect) <= 1e-3 * expect);
  CU_ASSERT(fabs(flow - expect) <= 1e-3 * expect);
  CU_ASSERT(fabs(packet_bare - RATE) <= 1e-3 * RATE);
}

/* Eight transfers of 8 MB from the GPUs of one leaf of a 2:1 tree (10 GPUs, 5 up-links) to eight
 * GPUs of the next leaf. The forwarding tables (D-mod-K by destination) put two of them on each of
 * three up-links and one on each of the other two, and the up-links are saturated: loads are
 * equal often. Keeping the table's port on a tie leaves the two lone transfers on their own
 * port while the others overflow onto it too, and the round robin there gives them less (1.3-1.4x
 * the FCT of the others); a draw among the tied ports gives all eight the same share, as flow
 * fidelity does. */
static void test_ib_ar_ties_share_a_saturated_leaf(void)
{
  const char *opts[] = { "--gpus", "64", "--radix", "16", "--oversubscription", "2" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct xfer x[8];
  double spread[3], fct[3][8];
  const char *random[] = { "ib/ar-ties:random", NULL }, *table[] = { "ib/ar-ties:table", NULL };
  const char *const *cfg[3] = { random, table, NULL };
  fab_fidelity fid[3] = { FAB_FIDELITY_PACKET, FAB_FIDELITY_PACKET, FAB_FIDELITY_FLOW };
  for (int c = 0; c < 3; c++) {
    for (int i = 0; i < 8; i++)
      x[i] = (struct xfer){ .src = 42 + i, .dst = 50 + i, .bytes = 8e6 };
    run_all(p->topo, fid[c], cfg[c], x, 8, NULL);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < 8; i++) {
      fct[c][i] = x[i].finish_s - x[i].start_s;
      lo = fmin(lo, fct[c][i]);
      hi = fmax(hi, fct[c][i]);
    }
    spread[c] = hi / lo;
  }
  fprintf(stderr,
          "\n    2:1 leaf, 8 x 8 MB up: slowest / fastest FCT %.3f (ties drawn), %.3f (table's port kept), "
          "%.3f (flow); GPU 45 and 46 (lone on their table ports): %.1f and %.1f us drawn, %.1f and %.1f us kept, "
          "flow %.1f us\n",
          spread[0], spread[1], spread[2], 1e6 * fct[0][3], 1e6 * fct[0][4], 1e6 * fct[1][3], 1e6 * fct[1][4],
          1e6 * fct[2][3]);
  CU_ASSERT(spread[0] < 1.05);
  CU_ASSERT(spread[1] > 1.25);
  CU_ASSERT(fct[1][3] > 1.25 * fct[1][0] && fct[1][4] > 1.25 * fct[1][0]);
  for (int i = 0; i < 8; i++)
    CU_ASSERT(within(fct[0][i], fct[2][i], 0.03));
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "ib_packet";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "incast is lossless and fair", test_ib_incast_is_lossless_and_fair },
  { "credit window limits long links", test_ib_credit_window_limits_long_links },
  { "D-mod-K shift, AR permutation", test_ib_routing_dmodk_shift_and_ar_permutation },
  { "VL arbitration shares 1:3", test_ib_vl_arbitration_shares_one_to_three },
  { "bad parameters are refused", test_ib_bad_parameters_are_refused },
  { "framing goodput", test_ib_framing_goodput },
  { "AR ties share a saturated leaf", test_ib_ar_ties_share_a_saturated_leaf },
  { NULL, NULL },
};
