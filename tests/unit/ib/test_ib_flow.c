/* InfiniBand at flow fidelity against packet fidelity: congestion trees, and mean completion
 * times on the scenarios of test_ib_packet.c and a 128-GPU random permutation. */
#include "test_ib_support.h"
#include "cunit_main.h"

/* GPU 1 sends to A = GPU 0 (with GPUs 2..8: an incast) and an innocent flow to the idle GPU
 * B = GPU 9. Both of GPU 1's flows share its switch input buffer: the head-of-line packet for
 * A holds the innocent one back. */
static double innocent_fct(fab_fidelity fid, int with_incast)
{
  struct topo *t = fab_topo_single_switch(10, RATE, LINK_LAT, SWITCH_LAT);
  struct xfer x[9];
  int n = 0;
  x[n++] = (struct xfer){ .src = 1, .dst = 9, .bytes = 1e6 };
  if (with_incast)
    for (int i = 1; i <= 8; i++)
      x[n++] = (struct xfer){ .src = i, .dst = 0, .bytes = 4e6 };
  const char *cfg[] = { "ib/buffer-per-vl:32KiB", NULL };
  run_all(t, fid, cfg, x, n, NULL);
  fab_topo_free(t);
  return x[0].finish_s;
}

static void test_ib_congestion_tree_slows_innocent_flow(void)
{
  double alone = innocent_fct(FAB_FIDELITY_PACKET, 0);
  double packet = innocent_fct(FAB_FIDELITY_PACKET, 1);
  double flow_alone = innocent_fct(FAB_FIDELITY_FLOW, 0);
  double flow = innocent_fct(FAB_FIDELITY_FLOW, 1);
  double slow_packet = packet / alone, slow_flow = flow / flow_alone;
  fprintf(stderr,
          "\n    innocent 1 MB flow behind an 8->1 incast (shared input buffer): packet FCT %.2f us alone, %.2f us "
          "with incast (x%.2f); flow %.2f us / %.2f us (x%.2f, %+.2f%% vs packet)\n",
          alone * 1e6, packet * 1e6, slow_packet, flow_alone * 1e6, flow * 1e6, slow_flow,
          100 * (flow - packet) / packet);
  CU_ASSERT(slow_packet > 2); /* max-min alone would give it 7/8 of its NIC: x1.14 */
  CU_ASSERT(within(flow, packet, 0.10));
}

/* Flow fidelity simulates no credits, buffers or stalls: the per-port getters answer -1 (not a 0,
 * nor the initial credit), the whole-fabric stall time too; at packet fidelity they are measured. */
static void test_ib_flow_getters_say_not_modelled(void)
{
  for (int packet = 0; packet <= 1; packet++) {
    struct topo *t = fab_topo_single_switch(10, RATE, LINK_LAT, SWITCH_LAT);
    struct xfer x[4];
    for (int i = 0; i < 4; i++)
      x[i] = (struct xfer){ .src = i + 1, .dst = 0, .bytes = 1e6 };
    struct run r;
    run_begin(&r, t, packet ? FAB_FIDELITY_PACKET : FAB_FIDELITY_FLOW, NULL, x, 4);
    fabric_run(r.fab);
    int port = t->gpu_nic_port[1];
    double stall = sg_ib_get_credit_stall_time(r.fab), peak = sg_ib_get_port_peak_buffer(r.fab, port);
    int32_t credits = sg_ib_get_port_credits(r.fab, port, 0), held = sg_ib_get_port_buffered_blocks(r.fab, port, 0);
    if (packet) { /* an incast: stalls, a buffer that filled, every credit back at the end */
      CU_ASSERT(stall > 0 && peak > 0 && credits > 0);
      CU_ASSERT_EQUAL(held, 0);
    } else {
      CU_ASSERT(stall == -1 && peak == -1 && sg_ib_get_port_stall_time(r.fab, port) == -1);
      CU_ASSERT(credits == -1 && held == -1);
    }
    run_end(&r);
    fab_topo_free(t);
  }
}

/* tiny-16 under AR: an incast 0,1,2 -> 8 fills leaf2's input buffers from every spine, and
 * GPU 4 -> 9 crosses those buffers. The spines' arbiters serve their input ports in turn, so the
 * innocent flow (alone on leaf1's input) keeps its rate: the flow model must not throttle it. */
static void test_ib_congestion_tree_spares_flow_with_own_input(void)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  double fct[2];
  for (int fid = 0; fid < 2; fid++) {
    struct xfer x[4] = { { .src = 4, .dst = 9, .bytes = 1e6 },
                         { .src = 0, .dst = 8, .bytes = 4e6 },
                         { .src = 1, .dst = 8, .bytes = 4e6 },
                         { .src = 2, .dst = 8, .bytes = 4e6 } };
    run_all(p->topo, (fab_fidelity)fid, NULL, x, 4, NULL);
    fct[fid] = x[0].finish_s;
  }
  fprintf(stderr,
          "\n    tiny-16 AR, innocent 4->9 through leaf2's congested inputs: FCT packet %.2f us, flow %.2f us "
          "(%+.2f%%); alone 21.29 us\n",
          fct[0] * 1e6, fct[1] * 1e6, 100 * (fct[1] - fct[0]) / fct[0]);
  CU_ASSERT(within(fct[1], fct[0], 0.10));
  platform_free(p);
}

static double compare(const char *what, struct topo *t, const char *const *cfg, struct xfer *x, int n)
{
  double packet = run_all(t, FAB_FIDELITY_PACKET, cfg, x, n, NULL);
  double flow = run_all(t, FAB_FIDELITY_FLOW, cfg, x, n, NULL);
  double err = (flow - packet) / packet;
  fprintf(stderr, "    %-46s mean FCT packet %9.3f us, flow %9.3f us (%+.2f%%)\n", what, packet * 1e6, flow * 1e6,
          100 * err);
  return err;
}

static void test_ib_flow_matches_packet(void)
{
  fprintf(stderr, "\n");
  static struct xfer x[128];
  /* 1: incast */
  struct topo *t = fab_topo_single_switch(9, RATE, LINK_LAT, SWITCH_LAT);
  for (int i = 0; i < 8; i++)
    x[i] = (struct xfer){ .src = 1 + i, .dst = 0, .bytes = 2e6 };
  const char *small[] = { "ib/buffer-per-vl:32KiB", NULL };
  CU_ASSERT(fabs(compare("1 incast 8->1, 2 MB, 32 KiB/VL", t, small, x, 8)) <= 0.05);
  fab_topo_free(t);
  /* 2: credit window */
  t = fab_topo_single_switch(2, RATE, 10e-6, SWITCH_LAT);
  x[0] = (struct xfer){ .src = 0, .dst = 1, .bytes = 16e6 };
  const char *window[] = { "ib/buffer-per-vl:256KiB", "ib/long-haul:on", NULL }; /* 10 us: long-haul */
  CU_ASSERT(fabs(compare("2 credit window, 10 us links, 256 KiB/VL", t, window, x, 1)) <= 0.05);
  const char *bdp[] = { "ib/buffer-per-vl:2MiB", "ib/long-haul:on", NULL };
  CU_ASSERT(fabs(compare("2 credit window, 10 us links, 2 MiB/VL", t, bdp, x, 1)) <= 0.05);
  fab_topo_free(t);
  /* 4: routing on ft2-128 */
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct ib_lft lft;
  ib_lft_init(&lft, p->topo);
  int by_rank[128];
  for (int g = 0; g < 128; g++)
    by_rank[lft.rank[g]] = g;
  ib_lft_free(&lft);
  for (int r = 0; r < 128; r++)
    x[r] = (struct xfer){ .src = by_rank[r], .dst = by_rank[(r + 13) % 128], .bytes = 4e6 };
  const char *dmodk[] = { "ib/routing:dmodk", NULL };
  CU_ASSERT(fabs(compare("4 ft2-128 shift 13, 4 MB, D-mod-K", p->topo, dmodk, x, 128)) <= 0.05);
  int perm[128];
  random_permutation(128, 7, perm);
  for (int i = 0; i < 128; i++)
    x[i] = (struct xfer){ .src = i, .dst = perm[i], .bytes = 4e6 };
  CU_ASSERT(fabs(compare("4 ft2-128 random permutation, 4 MB, D-mod-K", p->topo, dmodk, x, 128)) <= 0.05);
  /* 128-GPU random permutations under the default routing (AR): seed 3 is the core engine test's
   * permutation, the others are neither it nor the ones ib/ar-imbalance was fitted on
   * (docs/ib.md). Without the imbalance term flow fidelity is 1.8-4.3% faster than packet here
   * with framing (4-9% before it), inside the 5% bound: the term's own test below is what fails
   * when it is removed. */
  for (uint64_t seed = 3; seed <= 6; seed++) {
    random_permutation(128, seed, perm);
    for (int i = 0; i < 128; i++)
      x[i] = (struct xfer){ .src = i, .dst = perm[i], .bytes = 4e6 };
    char what[64];
    snprintf(what, sizeof what, "ft2-128 random permutation %d, 4 MB, AR", (int)seed);
    CU_ASSERT(fabs(compare(what, p->topo, NULL, x, 128)) <= 0.05);
  }
  /* The same shift under AR: every leaf busy, but each sends to one or two leaves, so per-packet
   * AR keeps the even spread and the term must stay small. */
  for (int r = 0; r < 128; r++)
    x[r] = (struct xfer){ .src = by_rank[r], .dst = by_rank[(r + 13) % 128], .bytes = 4e6 };
  CU_ASSERT(fabs(compare("ft2-128 shift 13, 4 MB, AR", p->topo, NULL, x, 128)) <= 0.05);
  platform_free(p);
}

/* Mean FCT at flow fidelity of the inter-leaf transfers of leaf `leaf` (ft2-128: leaf of GPU g is
 * (g / 64) * 8 + g % 8) and of the others. */
static void leaf_means(const struct xfer *x, int n, int leaf, double *of_leaf, double *others)
{
  double sum[2] = { 0, 0 };
  int count[2] = { 0, 0 };
  for (int i = 0; i < n; i++) {
    int src_leaf = x[i].src / 64 * 8 + x[i].src % 8, dst_leaf = x[i].dst / 64 * 8 + x[i].dst % 8;
    if (src_leaf == dst_leaf || x[i].src / 8 == x[i].dst / 8)
      continue;
    int k = src_leaf == leaf ? 0 : 1;
    sum[k] += x[i].finish_s - x[i].start_s;
    count[k]++;
  }
  *of_leaf = count[0] ? sum[0] / count[0] : 0;
  *others = count[1] ? sum[1] / count[1] : 0;
}

/* The flow engine's recomputations of a run of the transfers x at flow fidelity. */
static uint64_t recomputations(struct topo *t, const char *const *cfg, struct xfer *x, int n)
{
  struct run r;
  run_begin(&r, t, FAB_FIDELITY_FLOW, cfg, x, n);
  fabric_run(r.fab);
  uint64_t updates = r.fab->stats.rate_updates;
  run_end(&r);
  return updates;
}

/* The AR imbalance at flow fidelity (ib_flow.c): leaf 0's 8 GPUs each send 4 MB to a different
 * leaf. With those leaves idle otherwise, nothing is lost (per-packet AR loses nothing there
 * either); once every other leaf also sends to them, leaf 0 is full, sends to 8 leaves that others
 * load too, and its flows lose ib/ar-imbalance of their rate (Erlang C = 1, diversity 1).
 * `paths` (NULL: the default) is an ib/ar-paths setting: below the 8 spines a transfer is not
 * spread over them but takes one path, and per-packet AR still sends its packets over every
 * spine, so the term applies alike. */
static void check_ar_imbalance(const char *paths)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  static struct xfer x[128];
  int n = 0;
  for (int j = 0; j < 8; j++) /* leaf 0 = rail 0 of nodes 0..7 -> rail j of node 8 + j (leaf 8 + j) */
    x[n++] = (struct xfer){ .src = 8 * j, .dst = 8 * (8 + j) + j, .bytes = 4e6 };
  double alone_on, alone_off, unused;
  const char *on[] = { paths, NULL }, *off[] = { "ib/ar-imbalance:0", paths, NULL };
  run_all(p->topo, FAB_FIDELITY_FLOW, on, x, n, NULL);
  leaf_means(x, n, 0, &alone_on, &unused);
  run_all(p->topo, FAB_FIDELITY_FLOW, off, x, n, NULL);
  leaf_means(x, n, 0, &alone_off, &unused);
  /* Load leaves 8..15 from leaves 1..7 too: GPU 8k + r (node k, rail r: leaf r) sends to leaf 8 + m,
   * m = (k + r) % 8 (rail m of nodes 8..15), at its GPU of node 8 + (m + r) % 8. Every GPU of
   * leaves 8..15 receives one transfer, and every leaf sends to 8 leaves. */
  for (int r = 1; r < 8; r++)
    for (int k = 0; k < 8; k++) {
      int m = (k + r) % 8;
      x[n++] = (struct xfer){ .src = 8 * k + r, .dst = 8 * (8 + (m + r) % 8) + m, .bytes = 4e6 };
    }
  double busy_on, busy_off, others_on, others_off;
  run_all(p->topo, FAB_FIDELITY_FLOW, on, x, n, NULL);
  leaf_means(x, n, 0, &busy_on, &others_on);
  run_all(p->topo, FAB_FIDELITY_FLOW, off, x, n, NULL);
  leaf_means(x, n, 0, &busy_off, &others_off);
  fprintf(stderr,
          "\n    %s: leaf 0 -> 8 idle leaves: %.2f us (%.2f us without the term); -> 8 loaded leaves: %.2f us "
          "(%.2f us without, x%.4f)\n",
          paths ? paths : "spread", alone_on * 1e6, alone_off * 1e6, busy_on * 1e6, busy_off * 1e6, busy_on / busy_off);
  CU_ASSERT(within(alone_on, alone_off, 1e-9));
  /* the shipped default of ib/ar-imbalance, so that a refit does not need the test edited */
  struct param_set *defaults = ib_params_with(NULL);
  double imbalance = fab_param_get(defaults, "ib/ar-imbalance");
  fab_param_set_free(defaults);
  CU_ASSERT(imbalance > 0);
  /* 80 us of 4 MB at (1 - ib/ar-imbalance) x 400 Gb/s */
  CU_ASSERT(within(busy_on - 1e-6, (busy_off - 1e-6) / (1 - imbalance), 0.01));
  /* The derate follows from the flows, so the filling after they start or drain takes it: it costs
   * no second recomputation of their component (from on_rates it cost one at every date a NIC's
   * capacity moved). */
  uint64_t updates_on = recomputations(p->topo, on, x, n), updates_off = recomputations(p->topo, off, x, n);
  fprintf(stderr, "    recomputations: %llu (%llu without the term)\n", (unsigned long long)updates_on,
          (unsigned long long)updates_off);
  CU_ASSERT_EQUAL(updates_on, updates_off);
  platform_free(p);
}

static void test_ib_ar_imbalance_derates_busy_diverse_leaf(void) { check_ar_imbalance(NULL); }

/* The same with transfers left whole (ib/ar-paths below the spine count; in a job, transfers with
 * fewer packets than paths, e.g. the 64 KB messages of an all-to-all across 1,024 GPUs). Before the
 * term counted them, such an all-to-all was 5.4 % faster at flow fidelity than at packet fidelity
 * (docs/validation.md). */
static void test_ib_ar_imbalance_counts_unspread_transfers(void) { check_ar_imbalance("ib/ar-paths:4"); }

/* An HCA serves its queue pairs in turn, whatever paths adaptive routing sends their packets on:
 * GPU 0 of ft2-128 sends 8 MB to GPU 8 on its own leaf (one path) and 8 MB to GPU 64 on leaf 8
 * (spread over the 8 spines at flow fidelity). Both get half the NIC and end together at either
 * fidelity; unweighted max-min gave the spread transfer 8 of the NIC's 9 shares (it ended at 56 %
 * of the other's time). */
static void test_ib_spread_transfer_takes_one_share_of_its_nic(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct xfer x[2] = { { .src = 0, .dst = 8, .bytes = 8e6 }, { .src = 0, .dst = 64, .bytes = 8e6 } };
  double packet[2], flow[2];
  run_all(p->topo, FAB_FIDELITY_PACKET, NULL, x, 2, NULL);
  for (int i = 0; i < 2; i++)
    packet[i] = x[i].finish_s;
  run_all(p->topo, FAB_FIDELITY_FLOW, NULL, x, 2, NULL);
  for (int i = 0; i < 2; i++)
    flow[i] = x[i].finish_s;
  fprintf(stderr, "\n    same leaf / spread: packet %.2f / %.2f us, flow %.2f / %.2f us\n", packet[0] * 1e6,
          packet[1] * 1e6, flow[0] * 1e6, flow[1] * 1e6);
  CU_ASSERT(within(flow[1], flow[0], 0.005));
  for (int i = 0; i < 2; i++)
    CU_ASSERT(within(flow[i], packet[i], 0.02));
  platform_free(p);
}

/* Adaptive routing at flow fidelity spreads a transfer over the 8 spines of ft2-128 only when it
 * has at least 8 packets to spread; a shorter one takes one least-loaded path. */
static void test_ib_ar_spreads_transfers_of_enough_packets(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct param_set *defaults = ib_params_with(NULL);
  double mtu = fab_param_get(defaults, "fabric/mtu");
  fab_param_set_free(defaults);
  for (int packets = 7; packets <= 8; packets++) {
    struct xfer x = { .src = 0, .dst = 64, .bytes = packets * mtu };
    struct run r;
    run_begin(&r, p->topo, FAB_FIDELITY_FLOW, NULL, &x, 1);
    fabric_advance(r.fab, r.fab->nic_latency_s + 1e-9); /* just after it started */
    size_t n;
    struct fab_flow **active = fabric_active_flows(r.fab, &n);
    const struct fab_flow *whole = NULL;
    for (size_t i = 0; whole == NULL && i < n; i++)
      if (active[i]->parent == NULL)
        whole = active[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
    CU_ASSERT_EQUAL(whole->spread, packets >= 8);
    CU_ASSERT_EQUAL(whole->parts_left, packets >= 8 ? 7 : 0);
    CU_ASSERT(within(whole->share_weight, packets >= 8 ? 1.0 / 8 : 1, 1e-12));
    run_end(&r);
  }
  platform_free(p);
}

/* Three leaves under one spine: leaf0 with GPUs 0-3, leaf1 with GPU 4, leaf2 with GPUs 5-9; every
 * link 400 Gb/s. */
static struct topo *uneven_leaves(void)
{
  struct topo *t = fab_topo_new();
  int spine = fab_topo_add_node(t, "spine0", TOPO_SWITCH, 2, 0, 0);
  static const int first[] = { 0, 4, 5, 10 };
  char name[24];
  for (int l = 0; l < 3; l++) {
    snprintf(name, sizeof name, "leaf%d", l);
    int leaf = fab_topo_add_node(t, name, TOPO_SWITCH, 1, l, 0);
    fab_topo_add_link(t, leaf, spine, RATE, LINK_LAT, NULL, 0);
    for (int g = first[l]; g < first[l + 1]; g++) {
      snprintf(name, sizeof name, "gpu%d", g);
      fab_topo_add_link(t, fab_topo_add_node(t, name, TOPO_GPU, 0, g, 0), leaf, RATE, LINK_LAT, NULL, 0);
    }
  }
  t->gpus_per_node = 1;
  t->switch_latency_s = SWITCH_LAT;
  char err[128];
  CU_ASSERT_EQUAL_FATAL(fab_topo_finalize(t, err, sizeof err), 0);
  return t;
}

/* The spine's output to leaf2 serves its two input ports in turn: leaf1's one transfer gets half
 * of it, leaf0's four share the other half (packet fidelity's arbiter). Max-min among the five
 * transfers gave each a fifth: the one from leaf1 took 2.5 times too long
 * (ib/flow-input-shares:off). */
static void test_ib_switch_output_serves_inputs_in_turn(void)
{
  struct topo *t = uneven_leaves();
  struct xfer x[5];
  for (int i = 0; i < 4; i++)
    x[i] = (struct xfer){ .src = i, .dst = 5 + i, .bytes = 8e6 };
  x[4] = (struct xfer){ .src = 4, .dst = 9, .bytes = 8e6 };
  double packet[5], flow[5], maxmin[5];
  const char *off[] = { "ib/flow-input-shares:off", NULL };
  run_all(t, FAB_FIDELITY_PACKET, NULL, x, 5, NULL);
  for (int i = 0; i < 5; i++)
    packet[i] = x[i].finish_s;
  run_all(t, FAB_FIDELITY_FLOW, NULL, x, 5, NULL);
  for (int i = 0; i < 5; i++)
    flow[i] = x[i].finish_s;
  run_all(t, FAB_FIDELITY_FLOW, off, x, 5, NULL);
  for (int i = 0; i < 5; i++)
    maxmin[i] = x[i].finish_s;
  fprintf(
      stderr,
      "\n    leaf0 -> leaf2 / leaf1 -> leaf2: packet %.1f / %.1f us, flow %.1f / %.1f us (max-min only %.1f / %.1f)\n",
      packet[0] * 1e6, packet[4] * 1e6, flow[0] * 1e6, flow[4] * 1e6, maxmin[0] * 1e6, maxmin[4] * 1e6);
  for (int i = 0; i < 5; i++)
    CU_ASSERT(within(flow[i], packet[i], 0.05));
  CU_ASSERT(maxmin[4] > 1.5 * packet[4]);
  fab_topo_free(t);
}

/* Runs x[0..n) on tiny-16 (4 GPUs per leaf, 4 spines, AR) at both fidelities: finish times. */
static void tiny16_both(struct xfer *x, int n, double *packet, double *flow)
{
  struct platform *p = load_shipped("tiny-16.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  run_all(p->topo, FAB_FIDELITY_PACKET, NULL, x, n, NULL);
  for (int i = 0; i < n; i++)
    packet[i] = x[i].finish_s;
  run_all(p->topo, FAB_FIDELITY_FLOW, NULL, x, n, NULL);
  for (int i = 0; i < n; i++)
    flow[i] = x[i].finish_s;
  platform_free(p);
}

/* tiny-16: GPUs 0, 1, 2 (leaf0) and 4 (leaf1) send 4 MB each to GPU 9, and 4 sends 4 MB to 12.
 * Every spine brings a part of each into leaf2 by the same input port, so the split among them is
 * made before, at the spines, which serve leaf0's port and leaf1's in turn: 4 -> 9 gets half of
 * GPU 9's link while 4 -> 12 beside it lasts. Shared in proportion to the arrivals at leaf2 it got
 * a quarter, as if it had come in with the three (364 us against 168 us at packet fidelity). */
static void test_ib_congested_output_shares_follow_upstream_arbiters(void)
{
  struct xfer x[5] = { { .src = 4, .dst = 9, .bytes = 4e6 },
                       { .src = 4, .dst = 12, .bytes = 4e6 },
                       { .src = 0, .dst = 9, .bytes = 4e6 },
                       { .src = 1, .dst = 9, .bytes = 4e6 },
                       { .src = 2, .dst = 9, .bytes = 4e6 } };
  double packet[5], flow[5];
  tiny16_both(x, 5, packet, flow);
  fprintf(stderr,
          "\n    leaf1 -> 9 / leaf1 -> 12 / leaf0 -> 9: packet %.1f / %.1f / %.1f us, flow %.1f / %.1f / %.1f us\n",
          packet[0] * 1e6, packet[1] * 1e6, packet[2] * 1e6, flow[0] * 1e6, flow[1] * 1e6, flow[2] * 1e6);
  for (int i = 0; i < 5; i++)
    CU_ASSERT(within(flow[i], packet[i], 0.05));
}

/* tiny-16: GPUs 4 and 5 (leaf1) and 0-3 (leaf0) send 4 MB each to GPU 8, and 4 also sends 4 MB to
 * 12. At GPU 8's link 4 -> 8 is held below its NIC's share, so it fills the buffers up to GPU 4's
 * HCA, which alternates its two transfers: 4 -> 12 keeps pace with 4 -> 8, in the spines' input
 * buffers too, where both come in by leaf1's port from GPU 4. Capped there at the port's grant
 * shared among the two, 4 -> 12 took 364 us against 312 us at packet fidelity. */
static void test_ib_victim_keeps_pace_with_its_units_blocked_flow(void)
{
  struct xfer x[7] = { { .src = 4, .dst = 12, .bytes = 4e6 }, { .src = 4, .dst = 8, .bytes = 4e6 },
                       { .src = 5, .dst = 8, .bytes = 4e6 },  { .src = 0, .dst = 8, .bytes = 4e6 },
                       { .src = 1, .dst = 8, .bytes = 4e6 },  { .src = 2, .dst = 8, .bytes = 4e6 },
                       { .src = 3, .dst = 8, .bytes = 4e6 } };
  double packet[7], flow[7];
  tiny16_both(x, 7, packet, flow);
  fprintf(stderr, "\n    4 -> 12 beside 4 -> 8 in a 6-to-1: packet %.1f / %.1f us, flow %.1f / %.1f us\n",
          packet[0] * 1e6, packet[1] * 1e6, flow[0] * 1e6, flow[1] * 1e6);
  CU_ASSERT(within(flow[0], packet[0], 0.05));
  CU_ASSERT(within(flow[1], packet[1], 0.05));
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "ib_flow";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "congestion tree slows an innocent flow", test_ib_congestion_tree_slows_innocent_flow },
  { "flow fidelity's getters say what it does not model", test_ib_flow_getters_say_not_modelled },
  { "congestion tree spares a flow with its own input", test_ib_congestion_tree_spares_flow_with_own_input },
  { "AR imbalance derates a busy leaf sending to loaded leaves", test_ib_ar_imbalance_derates_busy_diverse_leaf },
  { "AR imbalance counts transfers AR leaves whole", test_ib_ar_imbalance_counts_unspread_transfers },
  { "flow fidelity matches packet fidelity", test_ib_flow_matches_packet },
  { "a spread transfer takes one share of its NIC", test_ib_spread_transfer_takes_one_share_of_its_nic },
  { "AR spreads transfers of enough packets", test_ib_ar_spreads_transfers_of_enough_packets },
  { "a switch output serves its input ports in turn", test_ib_switch_output_serves_inputs_in_turn },
  { "a congested output's shares follow the upstream arbiters",
    test_ib_congested_output_shares_follow_upstream_arbiters },
  { "a victim keeps pace with its unit's blocked flow", test_ib_victim_keeps_pace_with_its_units_blocked_flow },
  { NULL, NULL },
};
