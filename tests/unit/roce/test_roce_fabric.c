/* RoCE fabric scenarios at packet and flow fidelity: DCQCN convergence, lossless PFC incast,
 * congestion spreading, ECMP collisions, go-back-N under loss, flow vs packet agreement. Each
 * prints its measured figures to stderr (docs/roce.md quotes them). */
#include "roce_held_port.h"
#include "roce_internal.h"
#include "test_roce_support.h"
#include "cunit_main.h"

#define G100 12.5e9
#define G400 50e9

/* 1. Two senders into one receiver at 100 Gb/s, paper preset: equal shares, queue near q*.
 * The second flow joins 1 ms after the first; 1 ms windows of each flow's delivered bytes over
 * 300 ms, several seeds (ECN marks are Bernoulli draws, so the rates keep a random wander of a
 * few percent around the fair share: docs/roce.md, Validation 1). Per seed: the last window
 * outside 10% of the fair share (in the band for the rest of the run; the last window when it
 * never settles), the fraction of windows in the band after 50 ms, flow 0's share and the mean
 * queue over the second half.
 * The last excursion is not a convergence time: the rate difference is a stationary random
 * wander (std 4-6% of the fair share, correlation time ~25 ms, an oscillation of ~100 ms), so
 * over 1.5 s runs the last excursion moves to 0.8-1.5 s for every seed while the shares stay
 * 0.494-0.513 (docs/roce.md, Validation 1). What converges is the share of the bytes each flow
 * delivered since the join: the convergence time reported is the last window at which that
 * share is more than 10% from the fair share, and every seed must be in the band for the last
 * third of the run, and hold equal shares within 10% over its second half. */
static void test_dcqcn_two_flows_converge(void)
{
  enum { SEEDS = 8, WINDOWS = 600 };
  const double second_start = 1e-3, w = 1e-3;
  struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  const char *cfg[] = { "roce/dcqcn:paper", NULL };
  struct dcqcn_params paper = { 1.0 / 256,          1, 55e-6, 55e-6, 10e6, 5, 40e6 / 8, 400e6 / 8, 1e6 / 8, 0,
                                DCQCN_CLAMP_ALWAYS, 0, 0 };
  double p_star = dcqcn_fixed_point_p(&paper, 2, G100, 4096);
  double kmin = 5e3 * G100 / 5e9, kmax = 200e3 * G100 / 5e9;
  double q_star = kmin + p_star / 0.01 * (kmax - kmin);
  double share_all = 0, q_all = 0, worst_fraction = 1, conv[SEEDS], reach[SEEDS];
  int converged_seeds = 0;
  fprintf(stderr, "\n");
  for (int seed = 1; seed <= SEEDS; seed++) {
    struct param_set *ps = roce_params_with(cfg);
    char err[256];
    struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, (uint64_t)seed, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
    struct fab_flow *f[2] = { fabric_post(fab, 0, 2, 40e9, 0, 0, NULL, NULL),
                              fabric_post(fab, 1, 2, 40e9, second_start, 0, NULL, NULL) };
    int port = t->ports[t->gpu_nic_port[2]].peer_port; /* switch -> receiver */
    fabric_advance(fab, second_start);
    const double base[2] = { f[0]->delivered, f[1]->delivered };
    double last[2] = { f[0]->delivered, f[1]->delivered }, last_out = 0, q_sum = 0, share = 0, conv_bytes = 0;
    int q_n = 0, share_n = 0, band_n = 0, in_band = 0;
    for (int k = 1; k <= WINDOWS; k++) {
      double now = second_start + k * w;
      for (int j = 1; j <= 20; j++) {
        fabric_advance(fab, now - w + j * w / 20);
        if (k > WINDOWS / 2) {
          q_sum += fab->ports[port].total_queued;
          q_n++;
        }
      }
      double r[2];
      for (int i = 0; i < 2; i++) {
        r[i] = (f[i]->delivered - last[i]) / w;
        last[i] = f[i]->delivered;
      }
      double fair = (r[0] + r[1]) / 2;
      int ok = fabs(r[0] - fair) <= 0.1 * fair; /* r[1] is as far on the other side */
      if (!ok)
        last_out = k * w;
      double got0 = f[0]->delivered - base[0], got1 = f[1]->delivered - base[1];
      if (fabs(got0 - (got0 + got1) / 2) > 0.1 * (got0 + got1) / 2) /* bytes since the join */
        conv_bytes = k * w;
      if (now >= 50e-3) {
        band_n++;
        in_band += ok;
      }
      if (k > WINDOWS / 2) {
        share += r[0] / (r[0] + r[1]);
        share_n++;
      }
    }
    conv[seed - 1] = last_out;
    reach[seed - 1] = conv_bytes;
    CU_ASSERT(conv_bytes < 2 * WINDOWS * w / 3);      /* every seed converges, */
    CU_ASSERT(fabs(share / share_n - 0.5) <= 0.05);   /* and holds equal shares within 10% */
    converged_seeds += last_out < (WINDOWS - 10) * w; /* in the band for the last 10 ms at least */
    double fraction = (double)in_band / band_n;
    fprintf(
        stderr,
        "  [dcqcn seed %d] bytes since the join within 10%% after %.0f ms; last 1 ms window outside 10%% at %.0f ms, "
        "%.0f%% of 1 ms windows within 10%% after 50 ms, share of flow 0 %.3f, mean queue %.1f KB\n",
        seed, conv_bytes * 1e3, last_out * 1e3, 100 * fraction, share / share_n, q_sum / q_n / 1e3);
    share_all += share / share_n / SEEDS;
    q_all += q_sum / q_n / SEEDS;
    if (fraction < worst_fraction)
      worst_fraction = fraction;
    fabric_free(fab);
    fab_param_set_free(ps);
  }
  double reach_max = 0, reach_mean = 0;
  for (int i = 0; i < SEEDS; i++) {
    reach_max = fmax(reach_max, reach[i]);
    reach_mean += reach[i] / SEEDS;
  }
  fprintf(stderr,
          "  [dcqcn] %d seeds: convergence (bytes since the join within 10%%) mean %.1f ms, worst %.0f ms; share of "
          "flow 0 %.3f; %.0f%% of windows within 10%% (worst seed); last excursion of the %.0f ms run at "
          "%.0f/%.0f/%.0f/%.0f/%.0f/%.0f/%.0f/%.0f ms (%d of %d seeds in the band for the last 10 ms); mean queue "
          "%.1f KB vs fluid q* %.1f KB (p* %.2e)\n",
          SEEDS, reach_mean * 1e3, reach_max * 1e3, share_all, 100 * worst_fraction, WINDOWS * w * 1e3, conv[0] * 1e3,
          conv[1] * 1e3, conv[2] * 1e3, conv[3] * 1e3, conv[4] * 1e3, conv[5] * 1e3, conv[6] * 1e3, conv[7] * 1e3,
          converged_seeds, SEEDS, q_all / 1e3, q_star / 1e3, p_star);
  CU_ASSERT(fabs(share_all - 0.5) < 0.02);
  CU_ASSERT(converged_seeds >= SEEDS / 2); /* the 10% convergence band met for the rest of the run by half the seeds */
  CU_ASSERT(worst_fraction > 0.75);
  CU_ASSERT(q_all > 0.75 * q_star && q_all < 1.25 * q_star);
  fab_topo_free(t);
}

/* 2. 16-to-1 incast without DCQCN: PFC makes it lossless; without PFC a small buffer drops and
 * go-back-N still delivers every byte. */
static void test_pfc_incast_lossless(void)
{
  struct topo *t = fab_topo_single_switch(17, G400, 100e-9, 300e-9);
  struct flow_def flows[16];
  for (int i = 0; i < 16; i++)
    flows[i] = (struct flow_def){ i + 1, 0, 2e6, 0 };
  struct run_result r;
  const char *on[] = { "roce/dcqcn:off", "roce/buffer:9MB", NULL };
  roce_run(t, FAB_FIDELITY_PACKET, 1, on, flows, 16, &r);
  fprintf(stderr, "\n  [pfc on]  drops %llu, pauses %llu, paused %.1f us, peak buffer %.0f KB, mean FCT %.1f us\n",
          (unsigned long long)r.drops, (unsigned long long)r.pauses, r.paused_s * 1e6, r.peak_buffer / 1e3,
          r.mean_fct * 1e6);
  CU_ASSERT_EQUAL(r.done, 16);
  CU_ASSERT_EQUAL(r.drops, 0);
  CU_ASSERT(r.pauses > 0);
  CU_ASSERT(r.paused_s > 0);
  const char *off[] = { "roce/dcqcn:off", "roce/pfc:off", "roce/buffer:200KB", NULL };
  roce_run(t, FAB_FIDELITY_PACKET, 1, off, flows, 16, &r);
  fprintf(stderr,
          "  [pfc off] drops %llu (buffer %llu), retransmitted %.0f KB, delivered %.0f of %.0f bytes, "
          "mean FCT %.1f us\n",
          (unsigned long long)r.drops, (unsigned long long)r.buffer_drops, r.retrans_B / 1e3, r.delivered, 32e6,
          r.mean_fct * 1e6);
  CU_ASSERT(r.drops > 0);
  CU_ASSERT_EQUAL(r.drops, r.buffer_drops + r.random_drops);
  CU_ASSERT_EQUAL(r.done, 16);
  CU_ASSERT_DOUBLE_EQUAL(r.delivered, 32e6, 0.5);
  CU_ASSERT(r.retrans_B > 0);
  fab_topo_free(t);
}

/* 2b. The hpcc headroom is what can arrive after XOFF (IEEE 802.1Qbb headroom annex): an 8-to-1
 * incast of 4 MB at 400 Gb/s on tiny-16 (DCQCN off, so PFC alone holds it) loses nothing. With
 * the former 3 x rate x delay (15 KB) it dropped 3,248 packets; a fixed headroom of 16,000 B,
 * a third under the computed 24,692 B, still drops. */
static void test_pfc_hpcc_headroom_lossless(void)
{
  struct platform *pl = load_shipped("tiny-16.xml");
  struct flow_def flows[8];
  for (int i = 0; i < 8; i++)
    flows[i] = (struct flow_def){ 8 + i, 0, 4194304, 0 };
  struct run_result r;
  const char *hpcc[] = { "roce/dcqcn:off", "roce/pfc-headroom:hpcc", NULL };
  roce_run(pl->topo, FAB_FIDELITY_PACKET, 1, hpcc, flows, 8, &r);
  fprintf(stderr, "\n  [hpcc headroom] drops %llu, pauses %llu, last FCT %.1f us\n", (unsigned long long)r.drops,
          (unsigned long long)r.pauses, r.max_fct * 1e6);
  CU_ASSERT_EQUAL(r.done, 8);
  CU_ASSERT_EQUAL(r.drops, 0);
  CU_ASSERT(r.pauses > 0);
  const char *small[] = { "roce/dcqcn:off", "roce/pfc-headroom:16000", NULL };
  roce_run(pl->topo, FAB_FIDELITY_PACKET, 1, small, flows, 8, &r);
  fprintf(stderr, "  [headroom 16000 B] drops %llu\n", (unsigned long long)r.drops);
  CU_ASSERT(r.drops > 0);
  CU_ASSERT_EQUAL(r.done, 8);
  platform_free(pl);
}

/* 2c. Lossy RoCE (PFC off) drops where shared-buffer ASICs drop: at the dynamic threshold of
 * Choudhury & Hahne (IEEE/ACM ToN 1998), a queue limited to alpha x the free buffer. A 2-into-1
 * incast (2 x 4 MB at 400 Gb/s, DCQCN off, 2 MB buffer): with alpha = 1 the congested queue
 * settles at B / 2 and drops there, the buffer never more than half full; with alpha = 64 the
 * queue may take 64/65 of the buffer, the former behaviour of dropping only when it is full. */
static void test_lossy_dynamic_threshold(void)
{
  struct topo *t = fab_topo_single_switch(3, G400, 1e-6, 300e-9);
  struct flow_def flows[] = { { 1, 0, 4e6, 0 }, { 2, 0, 4e6, 0 } };
  struct run_result r;
  const char *dt[] = { "roce/dcqcn:off", "roce/pfc:off", "roce/buffer:2MB", NULL };
  roce_run(t, FAB_FIDELITY_PACKET, 1, dt, flows, 2, &r);
  fprintf(stderr, "\n  [lossy, alpha 1] drops %llu, peak buffer %.0f KB of 2000 KB, last FCT %.1f us\n",
          (unsigned long long)r.drops, r.peak_buffer / 1e3, r.max_fct * 1e6);
  CU_ASSERT_EQUAL(r.done, 2);
  CU_ASSERT(r.buffer_drops > 0);
  CU_ASSERT(r.peak_buffer <= 1e6 + 2 * 4096); /* alpha / (1 + alpha) of the buffer, plus the frame in service */
  CU_ASSERT(r.peak_buffer > 1e6 - 2 * 4096);
  const char *full[] = { "roce/dcqcn:off", "roce/pfc:off", "roce/buffer:2MB", "roce/lossy-alpha:64", NULL };
  roce_run(t, FAB_FIDELITY_PACKET, 1, full, flows, 2, &r);
  fprintf(stderr, "  [lossy, alpha 64] drops %llu, peak buffer %.0f KB\n", (unsigned long long)r.drops,
          r.peak_buffer / 1e3);
  CU_ASSERT(r.buffer_drops > 0);
  CU_ASSERT(r.peak_buffer > 1.9e6);
  fab_topo_free(t);
}

/* 3. Congestion spreading: 3 local senders and 1 remote one (through the spine) into gpu0 under
 * leaf0; a victim from leaf1 to idle gpu1 under leaf0 shares the spine->leaf0 link with the
 * remote incast flow. Links at rate_Bps. */
static void spreading_case_at(double rate_Bps, fab_fidelity fid, const char *dcqcn, const char *pfc,
                              const char *flow_opt, double *victim_gbps, double *pauses)
{
  struct topo *t = leaf_spine(2, 5, 1, rate_Bps, 1e-6);
  struct flow_def flows[] = {
    { 2, 0, 2e6, 0 }, { 3, 0, 2e6, 0 }, { 4, 0, 2e6, 0 }, { 5, 0, 2e6, 0 }, { 6, 1, 2e6, 0 }
  };
  const char *cfg[] = { dcqcn, "roce/buffer:9MB", pfc, flow_opt, NULL };
  struct run_result r;
  roce_run(t, fid, 1, cfg, flows, 5, &r);
  *victim_gbps = 2e6 * 8 / r.fct[4] / 1e9;
  *pauses = (double)r.pauses;
  CU_ASSERT_EQUAL(r.done, 5);
  fab_topo_free(t);
}

static void spreading_case(fab_fidelity fid, const char *pfc, double *victim_gbps, double *pauses)
{
  spreading_case_at(G100, fid, "roce/dcqcn:off", pfc, NULL, victim_gbps, pauses);
}

static void test_pfc_congestion_spreading(void)
{
  double on, off, on_f, off_f, pauses, pauses_off;
  spreading_case(FAB_FIDELITY_PACKET, "roce/pfc:on", &on, &pauses);
  spreading_case(FAB_FIDELITY_PACKET, "roce/pfc:off", &off, &pauses_off);
  spreading_case(FAB_FIDELITY_FLOW, "roce/pfc:on", &on_f, &pauses);
  spreading_case(FAB_FIDELITY_FLOW, "roce/pfc:off", &off_f, &pauses);
  fprintf(stderr,
          "\n  [spreading] victim goodput packet: PFC on %.1f Gb/s, PFC off %.1f Gb/s; "
          "flow: PFC on %.1f, off %.1f Gb/s\n",
          on, off, on_f, off_f);
  CU_ASSERT(on < 0.8 * off); /* packet: the victim slows with PFC on, not with PFC off */
  CU_ASSERT(off > 40);
  /* flow: the victim slows with PFC on, by the packet model's criterion (the former bound,
   * 0.6, held the flow model below the packet model's own ratio, 32.2 / 49.2 = 0.65) */
  CU_ASSERT(on_f < 0.8 * off_f);
  CU_ASSERT(fabs(off_f - off) < 0.05 * off); /* flow vs packet, PFC off: FIFO shares (measured 0.0%) */
  CU_ASSERT(fabs(on_f - on) < 0.10 * on);    /* PFC on: measured 4.0% low (31% before the timed onset) */
}

/* 3a. Pause spreading is local: the caps of a component depend on its own flows only. Case 3's
 * incast and victim on leaves 0-1, alone and next to another congested incast with a victim on
 * leaves 2-3 (ports disjoint from case 3's: another component) whose pauses start and end at
 * other dates. Each pause's onset recomputes its own link's component only (roce_spread.h): the
 * other incast's onsets must not re-evaluate case 3's pause state. */
static void test_pfc_spreading_is_local(void)
{
  struct flow_def flows[] = {
    { 2, 0, 2e6, 0 },         { 3, 0, 2e6, 0 },         { 4, 0, 2e6, 0 },         { 5, 0, 2e6, 0 },
    { 6, 1, 2e6, 0 },         { 11, 10, 1.5e6, 50e-6 }, { 12, 10, 1.5e6, 50e-6 }, { 13, 10, 1.5e6, 50e-6 },
    { 15, 10, 1.5e6, 50e-6 }, { 16, 14, 1.5e6, 50e-6 },
  };
  const char *cfg[] = { "roce/dcqcn:off", "roce/buffer:9MB", "roce/pfc:on", NULL };
  struct run_result alone, other, beside;
  struct topo *t = leaf_spine(4, 5, 1, G100, 1e-6);
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows, 5, &alone);
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows + 5, 5, &other);
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows, 10, &beside);
  CU_ASSERT_EQUAL(alone.done, 5);
  CU_ASSERT_EQUAL(beside.done, 10);
  CU_ASSERT(other.est_paused_s > 0 && beside.est_paused_s > alone.est_paused_s); /* the other incast pauses too */
  /* The passes visit each component at its own events only: the two incasts side by side cost
   * what each costs alone (a whole-fabric pass at every onset would visit case 3's flows at the
   * other incast's onsets too). */
  fprintf(stderr, "\n  [spreading, local] cap passes visited %llu + %llu flows alone, %llu side by side",
          (unsigned long long)alone.pass_flows, (unsigned long long)other.pass_flows,
          (unsigned long long)beside.pass_flows);
  CU_ASSERT(alone.pass_flows > 0 && other.pass_flows > 0);
  CU_ASSERT_EQUAL(beside.pass_flows, alone.pass_flows + other.pass_flows);
  for (int i = 0; i < 5; i++) {
    fprintf(stderr, "%s flow %d: FCT %.9g s alone, %.9g s beside the other incast", i ? "," : ";", i, alone.fct[i],
            beside.fct[i]);
    CU_ASSERT(fabs(beside.fct[i] - alone.fct[i]) <= 1e-9 * alone.fct[i]);
  }
  fprintf(stderr, "\n");
  fab_topo_free(t);
}

/* 3c. A congestion tree: pauses climbing two hops. Leaf_spine(3, 5, 1): two senders under leaf0
 * (gpus 1, 2) and two under leaf1 (gpus 5, 6), 16 MB each into gpu0; leaf0->gpu0 pauses the
 * links feeding it, spine->leaf0 among them, which then drains at a third of the line rate while
 * the two leaf1 flows bring it half of it each: the spine's egress backs up and pauses
 * leaf1->spine in turn. At 2 ms a victim, gpu7 (leaf1) to gpu10 (leaf2), 1 MB, crosses
 * leaf1->spine toward the idle spine->leaf2: it never meets the congested port, yet PFC slows
 * it. Pause spreading one hop deep would leave it its FIFO share of leaf1->spine, a third of
 * the line rate (32.0 Gb/s at flow fidelity before the tree; docs/roce.md). */
static void tree_case(fab_fidelity fid, const char *queue_wait, double *victim_gbps, double *paused_s)
{
  struct topo *t = leaf_spine(3, 5, 1, G100, 1e-6);
  struct flow_def flows[] = {
    { 1, 0, 16e6, 0 }, { 2, 0, 16e6, 0 }, { 5, 0, 16e6, 0 }, { 6, 0, 16e6, 0 }, { 7, 10, 1e6, 2e-3 }
  };
  const char *cfg[] = { "roce/dcqcn:off", "roce/buffer:9MB", "roce/pfc:on", queue_wait, NULL };
  struct run_result r;
  roce_run(t, fid, 1, cfg, flows, 5, &r);
  *victim_gbps = 1e6 * 8 / r.fct[4] / 1e9;
  *paused_s = fid == FAB_FIDELITY_FLOW ? r.est_paused_s : r.paused_s;
  CU_ASSERT_EQUAL(r.done, 5);
  fab_topo_free(t);
}

/* The victim starts behind leaf1->spine's queue: leaf1's PGs from gpus 5 and 6, paused toward
 * it, each at its XOFF. At packet fidelity its first byte waits for that queue to drain at the
 * paused link's rate; flow fidelity adds that sojourn to its completion (roce/flow-queue-wait):
 * without it the victim's 1 MB took its FIFO share of the paused link from its first byte. */
static void test_pfc_congestion_tree(void)
{
  double pkt, flow, no_wait, pkt_paused, flow_paused, unused;
  tree_case(FAB_FIDELITY_PACKET, "roce/flow-queue-wait:on", &pkt, &pkt_paused);
  tree_case(FAB_FIDELITY_FLOW, "roce/flow-queue-wait:on", &flow, &flow_paused);
  tree_case(FAB_FIDELITY_FLOW, "roce/flow-queue-wait:off", &no_wait, &unused);
  fprintf(stderr,
          "\n  [congestion tree] victim two hops from the congested port: packet %.1f Gb/s, flow %.1f Gb/s "
          "(%.1f without the queue's sojourn; its FIFO share of leaf1->spine: 33.3); paused time, summed over "
          "ports: packet %.4f s, flow est. %.4f s\n",
          pkt, flow, no_wait, pkt_paused, flow_paused);
  CU_ASSERT(pkt < 15);                                          /* packet: the tree reaches the victim (9.5) */
  CU_ASSERT(no_wait < 20);                                      /* flow: so it does (16.2; 32.0 one hop deep) */
  CU_ASSERT(fabs(flow - pkt) < 0.2 * pkt);                      /* and the queue it starts behind (10.7) */
  CU_ASSERT(fabs(flow_paused - pkt_paused) < 0.1 * pkt_paused); /* 0.0167 against 0.0174 s (-26% one hop deep) */
}

/* 3d. A pause whose end moves later ends at its new date, an event of its own. Case 3 with
 * longer flows: three local 16 MB flows and one remote 1 MB flow into gpu0, a 16 MB victim from
 * gpu6 to gpu1 sharing spine->leaf0 with the remote flow. spine->leaf0 pauses from the start,
 * its end at the date the remote flow's bytes fit in the buffers after it. At 50 us a second
 * remote 1 MB flow (gpu7) joins it: the end moves later. The timer armed for the first end is
 * not moved (one per move stayed in the heap: docs/performance.md); when it fires at the first
 * date it arms the next at the new one, where the pause ends and frees the victim, with no flow
 * starting or ending then. Without that re-arm the victim stays throttled to the next flow event
 * (0.28 ms later here). */
static void test_pfc_pause_end_moves_later(void)
{
  struct topo *t = leaf_spine(2, 5, 1, G100, 1e-6);
  struct flow_def flows[] = { { 2, 0, 16e6, 0 }, { 3, 0, 16e6, 0 }, { 4, 0, 16e6, 0 },
                              { 5, 0, 1e6, 0 },  { 6, 1, 16e6, 0 }, { 7, 0, 1e6, 50e-6 } };
  const char *cfg[] = { "roce/dcqcn:off", "roce/buffer:9MB", "roce/pfc:on", NULL };
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct run_result r;
  memset(&r, 0, sizeof r);
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct fab_flow *victim = NULL;
  for (int i = 0; i < 6; i++) {
    struct fab_flow *f = fabric_post(fab, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_s, 0, rr_done, &r);
    if (i == 4)
      victim = f;
  }
  const struct roce_spread *sp = &roce__state(fab)->spread;
  fabric_advance(fab, 0); /* the flows at 0 start, spine->leaf0 pauses */
  fabric_advance(fab, fabric_next_time(fab));
  CU_ASSERT_FATAL(victim->state == FLOW_ACTIVE && victim->hops == 4);
  int link = victim->path[2]; /* spine -> leaf0 */
  CU_ASSERT_FATAL(sp->was_paused[link] && sp->has_victims[link]);
  double first_end = sp->end_s[link];
  fabric_advance(fab, 60e-6); /* gpu7's flow joins the remote one */
  CU_ASSERT(sp->end_s[link] > 2 * first_end);
  CU_ASSERT_EQUAL(sp->end_armed_s[link], first_end); /* lazy: the first timer stays */
  fabric_advance(fab, first_end);                    /* it fires: still paused, armed again at the end */
  double end = sp->end_s[link], throttled = victim->rate_Bps;
  CU_ASSERT(sp->was_paused[link]);
  CU_ASSERT(end > first_end && sp->end_armed_s[link] == end);
  while (sp->was_paused[link] && fabric_next_time(fab) >= 0) { /* to the pause's end */
    end = sp->end_s[link];
    fabric_advance(fab, fabric_next_time(fab));
  }
  fprintf(stderr,
          "\n  [pause end moves later] spine->leaf0: end %.1f us, then %.1f us once gpu7's flow joins; "
          "the pause ends at %.1f us (%d flows done), the victim %.2f -> %.2f Gb/s\n",
          first_end * 1e6, end * 1e6, fab->now * 1e6, r.done, throttled * 8 / 1e9, victim->rate_Bps * 8 / 1e9);
  CU_ASSERT_EQUAL(fab->now, end); /* at its end, an event of its own: no flow started or ended then */
  CU_ASSERT_EQUAL(r.done, 0);
  CU_ASSERT(victim->rate_Bps > 2 * throttled); /* freed (to its share of leaf1->spine, paused too) */
  fabric_run(fab);
  CU_ASSERT_EQUAL(r.done, 6);
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
}

/* 3b. The same with DCQCN on (nic preset). Flow fidelity's senders inject at their DCQCN floor
 * rate (roce_dcqcn_floor.h): at 100 Gb/s the firmware's machine under continuous marking falls
 * below 1% of the line rate, DCQCN holds every port, FIFO shares and spreading do not bind and
 * the victim keeps at least its max-min share, as the packet model's victim keeps its rate
 * (DCQCN cuts the incast before PFC spreads); the incast's held egress, at the utilisation the
 * packet model measures there (roce_held_port.h), leaves the victim a little more. At 400 Gb/s the floor is above 90% of the line rate: DCQCN
 * cannot hold the incast's egress, PFC pauses spread as with DCQCN off, and the victim is
 * throttled at both fidelities. The first assertion fails without the floor (the victim was
 * throttled to 30.9 Gb/s at 100 Gb/s), the third without FIFO shares and spreading under DCQCN. */
static void test_dcqcn_on_fifo_and_spreading(void)
{
  double pkt100, flow100, maxmin100, pkt400, flow400, nospread400, maxmin400, pauses;
  spreading_case_at(G100, FAB_FIDELITY_PACKET, "roce/dcqcn:nic", "roce/pfc:on", NULL, &pkt100, &pauses);
  spreading_case_at(G100, FAB_FIDELITY_FLOW, "roce/dcqcn:nic", "roce/pfc:on", NULL, &flow100, &pauses);
  spreading_case_at(G100, FAB_FIDELITY_FLOW, "roce/dcqcn:nic", "roce/pfc:on", "roce/flow-fifo:off", &maxmin100,
                    &pauses);
  spreading_case_at(G400, FAB_FIDELITY_PACKET, "roce/dcqcn:nic", "roce/pfc:on", NULL, &pkt400, &pauses);
  spreading_case_at(G400, FAB_FIDELITY_FLOW, "roce/dcqcn:nic", "roce/pfc:on", NULL, &flow400, &pauses);
  spreading_case_at(G400, FAB_FIDELITY_FLOW, "roce/dcqcn:nic", "roce/pfc:on", "roce/flow-spreading:off", &nospread400,
                    &pauses);
  spreading_case_at(G400, FAB_FIDELITY_FLOW, "roce/dcqcn:nic", "roce/pfc:on", "roce/flow-fifo:off", &maxmin400,
                    &pauses);
  fprintf(stderr,
          "\n  [DCQCN nic, spreading] victim goodput, 100 Gb/s: packet %.1f, flow %.1f, max-min %.1f Gb/s; "
          "400 Gb/s: packet %.1f, flow %.1f, flow without spreading %.1f, max-min %.1f Gb/s\n",
          pkt100, flow100, maxmin100, pkt400, flow400, nospread400, maxmin400);
  CU_ASSERT(flow100 >= maxmin100 * (1 - 1e-6));     /* DCQCN holds: nothing throttles the victim below max-min */
  CU_ASSERT(fabs(flow100 - pkt100) < 0.1 * pkt100); /* measured -6.7% (max-min -11%) */
  CU_ASSERT(flow400 < 0.9 * nospread400);           /* DCQCN cannot hold: pauses spread */
  CU_ASSERT(pkt400 < 0.8 * maxmin400);              /* and the packet model's victim is throttled too */
  CU_ASSERT(fabs(flow400 - pkt400) < 0.25 * pkt400);
}

/* 3b'. FIFO shares are of line rates and are applied as payload rates (times MTU / (MTU +
 * framing)), as the flow engine's capacities are. GPU 0 sends a long flow to GPU 4, whose NIC
 * link GPU 6 also feeds at line rate, and a 16 MB flow to GPU 5, uncongested: GPU 0's NIC serves
 * its two queue pairs round robin, so the second flow's FIFO share is half of GPU 0's line,
 * that is half of its payload rate P (RoCEv2 framing: 82 B per 4096 B payload): alone it takes
 * latency + S/P, beside the congested flow latency + 2S/P. Applied as a line rate, the cap let it
 * run 2 % faster than its share (12.8 us early on 659 us). */
static void test_fifo_shares_as_payload(void)
{
  const char *cfg[] = { "roce/dcqcn:off", "roce/pfc:on", NULL };
  struct topo *t = leaf_spine(2, 4, 2, G400, 1e-6);
  struct flow_def alone[] = { { 0, 5, 16e6, 0 } };
  struct flow_def shared[] = { { 0, 5, 16e6, 0 }, { 0, 4, 256e6, 0 }, { 6, 4, 256e6, 0 } };
  struct run_result a, b;
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, alone, 1, &a);
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, shared, 3, &b);
  double payload_Bps = G400 * 4096 / (4096 + 82);
  double expected = a.fct[0] + 16e6 / payload_Bps; /* latency + 2S/P */
  fprintf(stderr,
          "\n  [FIFO shares as payload] FCT alone %.3f us, beside a congested flow %.3f us, expected "
          "%.3f us\n",
          1e6 * a.fct[0], 1e6 * b.fct[0], 1e6 * expected);
  CU_ASSERT(fabs(b.fct[0] - expected) < 1e-3 * expected);
  fab_topo_free(t);
}

/* 3c. Flow fidelity estimates what it does not count: an 8-to-1 incast of 4 MB flows at 400 Gb/s
 * (nic preset, where DCQCN cannot hold the port): every packet through the congested egress
 * marked, a CNP per flow per CNP interval, a cut per CNP, the links feeding the egress paused
 * for the part it cannot serve. Measured against the packet model's counts (docs/roce.md);
 * each assertion fails without its estimate (flow.estimated, the marks, CNPs, cuts, pauses). */
static void test_flow_estimates_track_packet(void)
{
  struct topo *t = fab_topo_single_switch(9, G400, 1e-6, 300e-9);
  struct flow_def flows[8];
  for (int i = 0; i < 8; i++)
    flows[i] = (struct flow_def){ i + 1, 0, 4e6, 0 };
  struct run_result pkt, flow, maxmin;
  roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, 8, &pkt);
  roce_run(t, FAB_FIDELITY_FLOW, 1, NULL, flows, 8, &flow);
  const char *off[] = { "roce/flow-fifo:off", NULL };
  roce_run(t, FAB_FIDELITY_FLOW, 1, off, flows, 8, &maxmin);
  fprintf(stderr,
          "\n  [estimates, 8 x 4 MB at 400 Gb/s] packet / flow estimate: ECN marks %llu / %.0f, CNPs %llu / "
          "%.0f, cuts - / %.0f, paused %.1f / %.1f us (summed over ports)\n",
          (unsigned long long)pkt.marks, flow.est_marks, (unsigned long long)pkt.cnps, flow.est_cnps, flow.est_cuts,
          pkt.paused_s * 1e6, flow.est_paused_s * 1e6);
  fprintf(stderr, "  packet: peak buffer %.0f KB, mean FCT %.1f us, last %.1f us; flow: mean %.1f, last %.1f us\n",
          pkt.peak_buffer / 1e3, pkt.mean_fct * 1e6, pkt.max_fct * 1e6, flow.mean_fct * 1e6, flow.max_fct * 1e6);
  CU_ASSERT(!pkt.estimated && flow.estimated && !maxmin.estimated);
  CU_ASSERT(flow.est_marks > 0.6 * pkt.marks && flow.est_marks < 1.6 * pkt.marks);
  CU_ASSERT(flow.est_cnps > 0.6 * pkt.cnps && flow.est_cnps < 1.6 * pkt.cnps);
  CU_ASSERT(flow.est_cuts > 0 && flow.est_cuts <= flow.est_cnps);
  /* The pauses are not estimated well here: spreading pauses the eight NIC links from the timed
   * onset (46 us) to the end, 4.2 ms summed, where the packet model pauses them 0.12 ms in all and
   * loses throughput instead (its last flow ends at 916 us, 1.4 x the drain time; docs/roce.md).
   * On tiny-16 it is +38%, on whole iterations -20% to +14% (docs/validation-iterations.md). */
  CU_ASSERT(flow.est_paused_s > 0 && pkt.paused_s > 0);
  fab_topo_free(t);
}

static double rel(double a, double b) { return fabs(a - b) / b; }

/* 3d. A port DCQCN holds, measured on the packet model (roce_held_port.h): two GPUs send 40 MB
 * each into a third at 100 Gb/s with the nic preset. The floors leave DCQCN room, so no FIFO pass
 * marks the port, but the packet model does not settle at the CoNEXT'16 fixed point: the senders
 * cycle between the upper and the trapped state and the port idles ~15% of the time. Flow
 * fidelity with the held-port model ends within 5% of the packet model and estimates its marks,
 * CNPs and pauses; with it off (max-min, the port kept busy) it is over 10% early and estimates
 * none. The measure's phases (roce/flow-held-measure:fine, the default: from 0.625 ms, each twice
 * the one before) are run as the port reaches them, each phase after the first one recomputation. */
static void test_held_port_measured(void)
{
  struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct flow_def flows[2] = { { 1, 0, 40e6, 0 }, { 2, 0, 40e6, 0 } };
  struct run_result pkt, held, maxmin;
  roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, 2, &pkt);
  roce_run(t, FAB_FIDELITY_FLOW, 1, NULL, flows, 2, &held);
  const char *off[] = { "roce/flow-held-ports:off", NULL };
  roce_run(t, FAB_FIDELITY_FLOW, 1, off, flows, 2, &maxmin);
  fprintf(stderr,
          "\n  [held port, 2 x 40 MB at 100 Gb/s] last FCT: packet %.3f ms, flow %.3f ms, held-ports off %.3f ms; "
          "marks %llu / %.0f, CNPs %llu / %.0f, paused %.1f / %.1f us\n",
          pkt.max_fct * 1e3, held.max_fct * 1e3, maxmin.max_fct * 1e3, (unsigned long long)pkt.marks, held.est_marks,
          (unsigned long long)pkt.cnps, held.est_cnps, pkt.paused_s * 1e6, held.est_paused_s * 1e6);
  CU_ASSERT(rel(held.max_fct, pkt.max_fct) < 0.05);
  CU_ASSERT(maxmin.max_fct < 0.9 * pkt.max_fct);
  CU_ASSERT(held.est_marks > 0.6 * pkt.marks && held.est_marks < 1.6 * pkt.marks);
  CU_ASSERT(held.est_cnps > 0.6 * pkt.cnps && held.est_cnps < 1.6 * pkt.cnps);
  CU_ASSERT(held.est_paused_s > 0.5 * pkt.paused_s && held.est_paused_s < 2 * pkt.paused_s);
  CU_ASSERT(maxmin.est_marks == 0 && maxmin.est_paused_s == 0);
  CU_ASSERT_EQUAL(held.held_measures, 1);
  uint64_t reached = 1; /* the phases whose start the port, held from t = 0, lived to see */
  while (reached < ROCE_HELD_FINE_PHASES && held.max_fct > ROCE_HELD_FINE_START_S * (1 << (reached - 1)))
    reached++;
  CU_ASSERT_EQUAL(held.held_phases, reached);
  CU_ASSERT_EQUAL(maxmin.held_measures, 0);
  /* The filling that follows the flows' start takes the held port's capacity, and the port is
   * released once no flow crosses it: holding it costs a recomputation per later phase only. */
  fprintf(stderr, "  phases run %llu; recomputations: %llu (%llu with held ports off)\n",
          (unsigned long long)held.held_phases, (unsigned long long)held.recomputations,
          (unsigned long long)maxmin.recomputations);
  CU_ASSERT_EQUAL(held.recomputations, maxmin.recomputations + reached - 1);
  fab_topo_free(t);
}

/* The measure flow fidelity makes of this shape on platform t (the run's parameters, seed 1), made
 * again; *payload_Bps: the receiving port's payload rate. */
static void measure_again(struct topo *t, const struct roce_held_shape *shape, struct roce_held_profile *m,
                          double *payload_Bps)
{
  struct param_set *ps = roce_params_with(NULL);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, shape, m, err, sizeof err), 0);
  *payload_Bps = fabric_port_payload_rate(fab, t->ports[t->gpu_nic_port[0]].peer_port);
  fabric_free(fab);
  fab_param_set_free(ps);
}

/* When a held port carrying `bytes` from age 0 is done, its capacity following the measure's
 * phases (phases: how many of them apply; 1: the first one throughout). */
static double end_by_phases(const struct roce_held_profile *m, int phases, double bytes, double payload_Bps)
{
  double left = bytes, end = 0;
  for (int k = 0; k < phases; k++) {
    double len = k + 1 < phases ? ROCE_HELD_START_S * (k ? 1 << (k - 1) : 1) : HUGE_VAL;
    double served = m->phase[k].utilisation * payload_Bps;
    if (left <= served * len)
      return end + left / served;
    left -= served * len;
    end += len;
  }
  return end;
}

/* A held port ages (roce_held_port.h): five GPUs sending 60 MB each into a sixth at 100 Gb/s
 * over 100 ns links fall into DCQCN's trapped state in step for their first 20 ms, and the port
 * idles ~15% of that time; later they drift apart and it idles less. Flow fidelity with load
 * measures (roce/flow-held-measure:load, in phases from 20 ms) gives the port
 * the measure's first phase for 20 ms after it became held, and its second phase after: the
 * last flow ends where that arithmetic says, and with the packet model (the first phase held
 * throughout would end it later). The later phases are run when the port reaches them, going on
 * with the measure's packet model where the phase before stopped: they give what a measure of
 * every phase at once gives (measure_again). */
static void test_held_port_ages(void)
{
  const int n = 5;
  const double bytes = 200e6;
  const char *load[] = { "roce/flow-held-measure:load", NULL };
  struct topo *t = fab_topo_single_switch(n + 1, G100, 1e-7, 300e-9);
  struct flow_def flows[5];
  for (int i = 0; i < n; i++)
    flows[i] = (struct flow_def){ i + 1, 0, bytes, 0 };
  struct run_result pkt, flow;
  roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, n, &pkt);
  roce_run(t, FAB_FIDELITY_FLOW, 1, load, flows, n, &flow);
  struct roce_held_shape shape = { .rate_Bps = G100, .latency_s = 1e-7, .load = n, .senders = n, .ports = 1 };
  struct roce_held_profile m;
  double payload;
  measure_again(t, &shape, &m, &payload);
  /* the last flow's end by the measure's phases, and by its first phase held throughout */
  double by_age = end_by_phases(&m, ROCE_HELD_PHASES, n * bytes, payload);
  double first_only = end_by_phases(&m, 1, n * bytes, payload);
  fprintf(stderr,
          "\n  [held port ages, 5 x 200 MB at 100 Gb/s, 100 ns links] utilisation by phase %.3f %.3f %.3f %.3f; last "
          "FCT: packet %.3f ms, flow %.3f ms (by the phases %.3f ms, the first throughout %.3f ms)\n",
          m.phase[0].utilisation, m.phase[1].utilisation, m.phase[2].utilisation, m.phase[3].utilisation,
          pkt.max_fct * 1e3, flow.max_fct * 1e3, by_age * 1e3, first_only * 1e3);
  CU_ASSERT(m.phase[1].utilisation > m.phase[0].utilisation + 0.03);
  CU_ASSERT(rel(flow.max_fct, by_age) < 0.005);
  CU_ASSERT(rel(flow.max_fct, pkt.max_fct) < 0.02);
  CU_ASSERT(rel(first_only, pkt.max_fct) > 0.03);
  CU_ASSERT_EQUAL(flow.held_measures, 1);
  CU_ASSERT_EQUAL(flow.held_phases, ROCE_HELD_PHASES);
  /* With no measure's packet model kept, each later phase starts the measure again and runs it to
   * where it stopped before running on (1 + 2 + 2 + 2 stretches run): the same figures, the same
   * end. */
  struct param_set *ps = roce_params_with(load);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  roce__state(fab)->held.max_runs = 0;
  struct run_result again;
  memset(&again, 0, sizeof again);
  for (int i = 0; i < n; i++)
    fabric_post(fab, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_s, 0, rr_done, &again);
  fabric_run(fab);
  uint64_t phases = 0;
  CU_ASSERT_EQUAL(sg_roce_get_held_measures(fab, &phases), 1);
  CU_ASSERT_EQUAL(phases, 1 + 2 + 2 + 2);
  for (int i = 0; i < n; i++)
    CU_ASSERT_EQUAL(again.fct[i], flow.fct[i]);
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
}

/* A held port fed through held egresses (roce/flow-held-measure:feeders, roce_held_port.c,
 * feeders_of): four leaves of four GPUs under one spine at 100 Gb/s, the spine's down-link to
 * leaf 0 carrying three 4 MB transfers, two of them from leaf 1 (its up-link held too) and one
 * from leaf 2, whose up-link also carries a transfer to leaf 3. The load measure sees the
 * down-link at load 1.5 (its arrivals thinned by the up-links' shares), which two senders keep
 * busy, and ends the transfers early; the packet model's port idles behind the cuts of both
 * egresses (tiny16-33 of docs/validation.md part 5 at 100 Gb/s, docs/roce.md). The feeders
 * measure runs the down-link with its two feeders and their transfers: -5.5 % against -19.0 %
 * (the up-links, chained to the down-link by their transfers, measured with their loads in the
 * coarse phases; in fine ones -7.5 %, and -18.1 % with fine phases but no feeders). Started
 * 150 us apart the transfers mostly miss each other at packet fidelity, which the feeders measure
 * follows from their start dates: +0.4 % (-0.1 % with the up-links in fine phases, +15.9 % without
 * the feeders, +18.2 % with every start date taken as the first). */
static void test_held_port_feeders(void)
{
  struct topo *t = leaf_spine(4, 4, 1, G100, 1e-6);
  const char *feeders[] = { "roce/flow-held-measure:feeders", NULL };
  const char *by_load[] = { "roce/flow-held-measure:load", NULL };
  for (int staggered = 0; staggered <= 1; staggered++) {
    double gap = staggered ? 150e-6 : 0;
    struct flow_def flows[4] = { { 4, 0, 4e6, 0 }, { 5, 1, 4e6, gap }, { 8, 2, 4e6, 2 * gap }, { 9, 12, 4e6, 0 } };
    struct run_result pkt, load, fed;
    roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, 4, &pkt);
    roce_run(t, FAB_FIDELITY_FLOW, 1, by_load, flows, 4, &load);
    roce_run(t, FAB_FIDELITY_FLOW, 1, feeders, flows, 4, &fed);
    fprintf(stderr,
            "\n  [held port fed through held egresses, %s] mean FCT: packet %.1f us, flow: load %.1f us (%+.1f%%), "
            "feeders %.1f us (%+.1f%%); measures %llu / %llu\n",
            staggered ? "starts 150 us apart" : "starts together", pkt.mean_fct * 1e6, load.mean_fct * 1e6,
            100 * (load.mean_fct / pkt.mean_fct - 1), fed.mean_fct * 1e6, 100 * (fed.mean_fct / pkt.mean_fct - 1),
            (unsigned long long)load.held_measures, (unsigned long long)fed.held_measures);
    CU_ASSERT(fed.held_measures > 0);
    if (!staggered) {
      CU_ASSERT(rel(load.mean_fct, pkt.mean_fct) > 0.15);
      CU_ASSERT(rel(fed.mean_fct, pkt.mean_fct) < 0.10);
    } else {
      CU_ASSERT(rel(fed.mean_fct, pkt.mean_fct) < 0.03);
    }
  }
  /* The fine phases: two senders into one port of a switch keep it busy while the queue climbs to
   * XOFF, the first phases, and then fall into the trapped state together. A busy phase stands for
   * the later ones only from 20 ms of age on, so the first ones do not hide the trap. */
  struct topo *one = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct roce_held_shape fine = { .rate_Bps = G100, .latency_s = 1e-6, .load = 2, .senders = 2, .ports = 1, .fine = 1 };
  struct roce_held_profile m;
  double payload;
  measure_again(one, &fine, &m, &payload);
  double lowest = 1;
  for (int k = 1; k < ROCE_HELD_FINE_PHASES; k++)
    lowest = fmin(lowest, m.phase[k].utilisation);
  fprintf(stderr,
          "  [fine phases, 2 senders at 100 Gb/s] utilisation %.3f in [0, 0.625) ms, %.3f at the lowest after\n",
          m.phase[0].utilisation, lowest);
  CU_ASSERT(m.phase[0].utilisation >= 0.99);
  CU_ASSERT(lowest < 0.95);
  fab_topo_free(one);
  fab_topo_free(t);
}

/* Unequal shares at a held port (roce/flow-held-shares, roce_held_port.c, roce_held_flow_cap): ten
 * senders into one GPU of a switch at 100 Gb/s, started 5 us apart. The packet model's senders
 * end unequally (its measure of the port sees senders far under the mean); with `spread` flow
 * fidelity's oldest flows, capped under the mean, end last and the newest first, where `equal`
 * ends them together. */
static void test_held_port_shares(void)
{
  enum { N = 10 };
  struct topo *t = fab_topo_single_switch(N + 1, G100, 1e-6, 300e-9);
  struct flow_def flows[N];
  for (int i = 0; i < N; i++)
    flows[i] = (struct flow_def){ i + 1, 0, 32e6, i * 5e-6 };
  const char *spread[] = { "roce/flow-held-shares:spread", NULL }, *equal[] = { "roce/flow-held-shares:equal", NULL };
  struct run_result pkt, sp, eq;
  roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, N, &pkt);
  roce_run(t, FAB_FIDELITY_FLOW, 1, spread, flows, N, &sp);
  roce_run(t, FAB_FIDELITY_FLOW, 1, equal, flows, N, &eq);
  double lo[3] = { HUGE_VAL, HUGE_VAL, HUGE_VAL }, hi[3] = { 0, 0, 0 };
  const struct run_result *r[3] = { &pkt, &sp, &eq };
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < N; i++) {
      lo[k] = fmin(lo[k], r[k]->fct[i]);
      hi[k] = fmax(hi[k], r[k]->fct[i]);
    }
  fprintf(stderr,
          "\n  [held port shares, 10 x 32 MB at 100 Gb/s] FCT from first to last end: packet %.3f-%.3f ms, "
          "spread %.3f-%.3f ms (oldest %.3f, newest %.3f), equal %.3f-%.3f ms\n",
          lo[0] * 1e3, hi[0] * 1e3, lo[1] * 1e3, hi[1] * 1e3, sp.fct[0] * 1e3, sp.fct[N - 1] * 1e3, lo[2] * 1e3,
          hi[2] * 1e3);
  CU_ASSERT_EQUAL(sp.done, N);
  CU_ASSERT(hi[0] / lo[0] > 1.1);  /* the packet model's unequal shares */
  CU_ASSERT(hi[2] / lo[2] < 1.01); /* equal: together */
  CU_ASSERT(hi[1] / lo[1] > 1.05); /* spread: apart, */
  CU_ASSERT(sp.fct[0] == hi[1]);   /* the oldest last */
  CU_ASSERT(sp.fct[N - 1] < sp.fct[0] * 0.95);
  /* the measure's shares: every sender's rate over the mean, ascending */
  struct roce_held_shape shape = { .rate_Bps = G100, .latency_s = 1e-6, .load = N, .senders = N, .ports = 1 };
  struct roce_held_profile m;
  double payload;
  measure_again(t, &shape, &m, &payload);
  double sum = 0;
  CU_ASSERT_EQUAL(m.phase[0].senders, N);
  for (int i = 0; i < N; i++) {
    sum += m.phase[0].share[i];
    if (i > 0)
      CU_ASSERT(m.phase[0].share[i] >= m.phase[0].share[i - 1]);
  }
  CU_ASSERT_DOUBLE_EQUAL(sum, N, 1e-9);
  fprintf(stderr, "  the measure's lowest share by phase: %.3f %.3f %.3f %.3f\n", m.phase[0].share[0],
          m.phase[1].share[0], m.phase[2].share[0], m.phase[3].share[0]);
  CU_ASSERT(fmin(m.phase[0].share[0], m.phase[1].share[0]) < 0.9);
  fab_topo_free(t);
}

/* A shape measured in both schedules, fine and coarse (roce_held_port.c, struct roce_held_sim), is
 * one packet run: two senders into one GPU of a switch at 100 Gb/s. The fine phases to 20 ms of
 * age run it that far, and the coarse first phase ([0, 20) ms) then runs nothing more and is what
 * a measure of its own gives, to the bit; the coarse second phase runs it on to 40 ms, and the
 * fine phase over the same ages is the same figures. */
static void test_held_runs_shared(void)
{
  struct topo *one = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct roce_held_shape fine;
  memset(&fine, 0, sizeof fine); /* the cache compares shapes bytewise */
  fine.rate_Bps = G100;
  fine.latency_s = 1e-6;
  fine.load = 2;
  fine.senders = 2;
  fine.ports = 1;
  fine.fine = 1;
  struct roce_held_shape coarse = fine;
  coarse.fine = 0;
  struct param_set *ps = roce_params_with(NULL);
  char err[256] = "";
  struct fabric *fab = fabric_new(one, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct roce_held *h = &roce__state(fab)->held;
  double bytes = 0, len = ROCE_HELD_FINE_START_S;
  for (int k = 0; k <= 5; k++) { /* fine phase 5 ends at 20 ms */
    const struct roce_held_phase *ph = roce_held_shape_phase(fab, h, &fine, k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
    bytes += ph->utilisation * len;
    len = k == 0 ? len : 2 * len;
  }
  uint64_t phases_fine = h->phases_run;
  const struct roce_held_phase *first = roce_held_shape_phase(fab, h, &coarse, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(first);
  CU_ASSERT_EQUAL(h->measures, 1);
  CU_ASSERT_EQUAL(h->phases_run, phases_fine);
  /* the mean of the fine phases, but for what a busy one lost to its cap at 1 (a packet counted on
   * one side of a boundary) */
  CU_ASSERT(first->utilisation >= bytes / ROCE_HELD_START_S - 1e-12);
  CU_ASSERT(first->utilisation < bytes / ROCE_HELD_START_S + 1e-4);
  struct roce_held_profile alone;
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, &coarse, &alone, err, sizeof err), 0);
  CU_ASSERT(first->utilisation == alone.phase[0].utilisation);
  CU_ASSERT(first->marked_fraction == alone.phase[0].marked_fraction);
  CU_ASSERT(first->paused_fraction == alone.phase[0].paused_fraction);
  const struct roce_held_phase *second = roce_held_shape_phase(fab, h, &coarse, 1);
  CU_ASSERT_EQUAL(h->phases_run, phases_fine + 1);
  const struct roce_held_phase *fine6 = roce_held_shape_phase(fab, h, &fine, 6);
  CU_ASSERT_EQUAL(h->phases_run, phases_fine + 1);
  CU_ASSERT(second->utilisation == alone.phase[1].utilisation && fine6->utilisation == second->utilisation);
  CU_ASSERT(second->cuts_per_flow_s == fine6->cuts_per_flow_s);
  fprintf(stderr,
          "  [one run, two schedules] coarse [0, 20) ms %.6f (the fine phases' mean %.6f), [20, 40) ms %.4f; "
          "measures %llu\n",
          first->utilisation, bytes / ROCE_HELD_START_S, second->utilisation, (unsigned long long)h->measures);
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(one);
}

/* Held ports share their switch's buffer (roce_held_port.c, held_ports_beside): two groups of
 * five GPUs on one switch at 100 Gb/s over 100 ns links, each sending 40 MB to a GPU of the
 * switch. With both receivers' ports held, PFC's dynamic thresholds fall as the buffer fills and
 * each port idles more than alone; flow fidelity measures the two side by side, and the last flow
 * ends 2.8% before the packet model's (whose flows end unequally), where the measure of one port
 * alone would end it 6.8% early. */
static void test_held_ports_share_a_switch(void)
{
  const int n = 5;
  const double bytes = 40e6;
  struct topo *t = fab_topo_single_switch(2 * (n + 1), G100, 1e-7, 300e-9);
  struct flow_def flows[10];
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < n; i++)
      flows[g * n + i] = (struct flow_def){ g * (n + 1) + i + 1, g * (n + 1), bytes, 0 };
  struct run_result pkt, flow;
  roce_run(t, FAB_FIDELITY_PACKET, 1, NULL, flows, 2 * n, &pkt);
  roce_run(t, FAB_FIDELITY_FLOW, 1, NULL, flows, 2 * n, &flow);
  struct roce_held_shape alone = { .rate_Bps = G100, .latency_s = 1e-7, .load = n, .senders = n, .ports = 1 };
  struct roce_held_shape beside = alone;
  beside.ports = 2;
  struct roce_held_profile one, two;
  double payload;
  measure_again(t, &alone, &one, &payload);
  measure_again(t, &beside, &two, &payload);
  double alone_s = end_by_phases(&one, ROCE_HELD_PHASES, n * bytes, payload);
  double beside_s = end_by_phases(&two, ROCE_HELD_PHASES, n * bytes, payload);
  fprintf(stderr,
          "\n  [two held ports on one switch, 2 x 5 x 40 MB at 100 Gb/s] utilisation alone %.3f, side by side %.3f; "
          "last FCT: packet %.3f ms, flow %.3f ms (alone %.3f ms, side by side %.3f ms)\n",
          one.phase[0].utilisation, two.phase[0].utilisation, pkt.max_fct * 1e3, flow.max_fct * 1e3, alone_s * 1e3,
          beside_s * 1e3);
  CU_ASSERT(two.phase[0].utilisation < one.phase[0].utilisation - 0.02);
  CU_ASSERT(rel(flow.max_fct, beside_s) < 0.005);
  CU_ASSERT(rel(flow.max_fct, pkt.max_fct) < 0.04); /* the packet model's flows end unequally */
  CU_ASSERT(rel(alone_s, pkt.max_fct) > rel(flow.max_fct, pkt.max_fct) + 0.03);
  fab_topo_free(t);
}

/* A sender of back-to-back messages at packet fidelity: the next one is posted when the last
 * has arrived, as a pipelined ring edge's steps are at packet fidelity. */
struct message_chain {
  int src, dst, left;
  double message_B, end_s;
  double step_B; /* > 0: each message is a ring step of coll/ring:steps (fab_flow.ring_step, message_B its bytes) */
};

static void mark_step(struct fab_flow *f, double step_B)
{
  f->message_B = step_B;
  f->ring_step = step_B > 0;
}

static void next_message(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  struct message_chain *c = ctx;
  c->end_s = flow->finish_s;
  if (--c->left > 0)
    mark_step(fabric_post(fab, c->src, c->dst, c->message_B, fab->now, 0, next_message, c), c->step_B);
}

/* The last end of n senders into GPU 0 (sender i is GPU i + 1), each sending `messages`
 * messages of message_B back to back, a message posted when the one before has arrived.
 * ring_steps: every message a flow of its own marked as a ring step (as coll/ring:steps posts
 * them), the first ones sent together. Otherwise the senders' restarts are out of step, as those
 * of unrelated rings (sender i first sends (i + 1) / n of a message), each message a flow of its
 * own at packet fidelity, and at flow fidelity one transfer per sender that stands for them
 * (fab_flow.message_B = stands_for; 0: one message). *origin, if asked: the latest age origin
 * of a port held in the run (-1 if none, or at packet fidelity). */
static double chains_end(struct topo *t, fab_fidelity fid, int n, int messages, double message_B, int ring_steps,
                         double stands_for, double *origin)
{
  struct param_set *ps = roce_params_with(NULL);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, ps, roce_model(), fid, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct message_chain chain[8];
  for (int i = 0; i < n; i++) {
    double first = round(message_B * (i + 1) / n);
    if (ring_steps) {
      chain[i] = (struct message_chain){ i + 1, 0, messages, message_B, 0, message_B };
      mark_step(fabric_post(fab, i + 1, 0, message_B, 0, 0, next_message, &chain[i]), message_B);
    } else if (fid == FAB_FIDELITY_PACKET) {
      chain[i] = (struct message_chain){ i + 1, 0, messages + 1, message_B, 0, 0 };
      fabric_post(fab, i + 1, 0, first, 0, 0, next_message, &chain[i]);
    } else {
      chain[i] = (struct message_chain){ i + 1, 0, 1, message_B, 0, 0 };
      fabric_post(fab, i + 1, 0, first + messages * message_B, 0, 0, next_message, &chain[i])->message_B = stands_for;
    }
  }
  fabric_run(fab);
  double end = 0;
  for (int i = 0; i < n; i++) {
    CU_ASSERT_EQUAL(chain[i].left, 0);
    end = fmax(end, chain[i].end_s);
  }
  const struct roce_held *h = &roce__state(fab)->held;
  if (fid == FAB_FIDELITY_FLOW && !ring_steps) { /* measures of ring-edge messages have the fine phases too */
    size_t with_messages = 0;
    for (size_t e = 0; e < h->n; e++) {
      CU_ASSERT(h->entry[e].shape.fine);
      with_messages += h->entry[e].shape.message_B > 0;
    }
    CU_ASSERT_EQUAL(with_messages > 0, stands_for >= ROCE_HELD_MIN_MESSAGE_B);
  }
  if (origin != NULL) {
    *origin = -1;
    for (int p = 0; fid == FAB_FIDELITY_FLOW && p < t->n_ports; p++)
      if (h->ever_held[p])
        *origin = fmax(*origin, h->held_since_s[p]);
  }
  fabric_free(fab);
  fab_param_set_free(ps);
  return end;
}

/* A held port's flows that stand for several messages (pipelined ring edges: a step each) are
 * measured sending such messages back to back (roce_held_port.h; steps of a few packets are
 * not, the measure's senders idling between them): each message is a flow of its
 * own at packet fidelity and starts its DCQCN state afresh at the line rate, which keeps a port
 * DCQCN holds busier than one long flow does. Five GPUs each sending ten 4 MB messages into a
 * sixth at 100 Gb/s, their restarts out of step: flow fidelity with the transfers standing for
 * their messages ends within 1.5% of the packet model (the measure's senders restarting in step
 * end it 2.9% late), where taking each transfer for one message ends it over 5% late. */
static void test_held_port_messages(void)
{
  const int n = 5, messages = 10;
  const double message_B = 4194304;
  struct topo *t = fab_topo_single_switch(n + 1, G100, 1e-7, 300e-9);
  double pkt = chains_end(t, FAB_FIDELITY_PACKET, n, messages, message_B, 0, 0, NULL);
  double by_messages = chains_end(t, FAB_FIDELITY_FLOW, n, messages, message_B, 0, message_B, NULL);
  double one_message = chains_end(t, FAB_FIDELITY_FLOW, n, messages, message_B, 0, 0, NULL);
  /* steps of a few packets are not measured as messages (ROCE_HELD_MIN_MESSAGE_B) */
  double small_steps = chains_end(t, FAB_FIDELITY_FLOW, n, messages, message_B, 0, 16384, NULL);
  struct roce_held_shape shape = { .rate_Bps = G100, .latency_s = 1e-7, .load = n, .senders = n, .ports = 1 };
  struct roce_held_profile long_flows, restarts;
  double payload;
  measure_again(t, &shape, &long_flows, &payload);
  shape.message_B = message_B;
  measure_again(t, &shape, &restarts, &payload);
  fprintf(stderr,
          "\n  [held port, 5 x 10 messages of 4 MiB at 100 Gb/s] utilisation in the first 20 ms: one message %.3f, "
          "4 MiB messages %.3f; last end: packet %.3f ms, flow %.3f ms (each transfer one message %.3f ms)\n",
          long_flows.phase[0].utilisation, restarts.phase[0].utilisation, pkt * 1e3, by_messages * 1e3,
          one_message * 1e3);
  CU_ASSERT(restarts.phase[0].utilisation > long_flows.phase[0].utilisation + 0.05);
  CU_ASSERT(rel(by_messages, pkt) < 0.015); /* senders restarting in step in the measure: +2.9% */
  CU_ASSERT(rel(one_message, pkt) > rel(by_messages, pkt) + 0.05);
  CU_ASSERT_DOUBLE_EQUAL(small_steps, one_message, 1e-12);
  fab_topo_free(t);
}

/* A ring's steps as transfers of their own (coll/ring:steps): four GPUs each sending ten 4 MiB
 * messages back to back into a fifth at 100 Gb/s, started together, each message a ring step. At
 * flow fidelity the four share the port equally, so each round of messages ends together and the
 * held port is released between rounds; ring steps hold it again within ROCE_HELD_GAP_S, so it
 * keeps its age (its origin stays the first holding's), and its measure sends such messages,
 * each restarting DCQCN at line rate. The last end comes 1.6% before the packet model's. Measured
 * with one long flow per sender instead, the later phases of the age (the senders trapped
 * together) would end it 14.8% late; resetting the age at every round instead ends it +0.2%
 * here, where the rounds last 1.3 ms and see the first phases only (on 1,024 GPUs it was 16%
 * late: ROCE_HELD_GAP_S). */
static void test_held_port_ring_steps(void)
{
  const int n = 4, messages = 10;
  const double message_B = 4194304;
  struct topo *t = fab_topo_single_switch(n + 1, G100, 1e-7, 300e-9);
  double origin;
  double pkt = chains_end(t, FAB_FIDELITY_PACKET, n, messages, message_B, 1, 0, NULL);
  double steps = chains_end(t, FAB_FIDELITY_FLOW, n, messages, message_B, 1, 0, &origin);
  double round_s = n * message_B / G100;
  fprintf(stderr,
          "\n  [held port, ring steps: 4 x 10 messages of 4 MiB at 100 Gb/s] last end: packet %.3f ms, flow %.3f ms "
          "(%+.1f%%); latest age origin %.3f ms (a round: %.3f ms)\n",
          pkt * 1e3, steps * 1e3, 100 * (steps / pkt - 1), origin * 1e3, round_s * 1e3);
  CU_ASSERT(origin >= 0 && origin < round_s); /* held from the first round on, through every release */
  CU_ASSERT(rel(steps, pkt) < 0.03);
  fab_topo_free(t);
}

/* coll/ring:auto asks the model whether rings move step by step at flow fidelity (roce_model.c,
 * dcqcn_can_hold): RoCE with the nic preset says yes where DCQCN can hold a port (50 and 100 Gb/s:
 * the floor rate is 0.2 % of the line rate at 100), no where PFC governs congested ports (200 and 400 Gb/s:
 * 90 % and 95 %), with DCQCN or the held-port measure off, under the fluid model (paper preset)
 * and at packet fidelity, where rings move in steps anyway. */
static void test_rings_in_steps(void)
{
  static const struct {
    double rate_Bps;
    const char *cfg;
    fab_fidelity fid;
    int steps;
  } cases[] = {
    { G100, NULL, FAB_FIDELITY_FLOW, 1 },
    { G100 / 2, NULL, FAB_FIDELITY_FLOW, 1 },
    { 25e9, NULL, FAB_FIDELITY_FLOW, 0 },
    { 50e9, NULL, FAB_FIDELITY_FLOW, 0 },
    { G100, "roce/dcqcn:off", FAB_FIDELITY_FLOW, 0 },
    { G100, "roce/flow-held-ports:off", FAB_FIDELITY_FLOW, 0 },
    { G100, "roce/dcqcn:paper", FAB_FIDELITY_FLOW, 0 },
    { G100, NULL, FAB_FIDELITY_PACKET, 0 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct topo *t = fab_topo_single_switch(4, cases[i].rate_Bps, 1e-7, 300e-9);
    const char *cfg[] = { cases[i].cfg, NULL };
    struct param_set *ps = roce_params_with(cases[i].cfg ? cfg : NULL);
    char err[256] = "";
    struct fabric *fab = fabric_new(t, ps, roce_model(), cases[i].fid, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab->model->flow.rings_in_steps);
    CU_ASSERT_EQUAL(fab->model->flow.rings_in_steps(fab) != 0, cases[i].steps);
    fabric_free(fab);
    fab_param_set_free(ps);
    fab_topo_free(t);
  }
}

/* A held port's message is its ring edges' geometric mean weighed by their bytes
 * (roce_held_port.c, held_message): four GPUs sending 40 MiB in steps of 4 MiB and a fifth 3 MiB
 * in steps of 1 MiB into a sixth at 100 Gb/s are measured with 4 MiB messages, where the plain
 * mean of the five would give 2.8 MiB (half an octave below). */
static void test_held_port_message_weighed(void)
{
  struct topo *t = fab_topo_single_switch(6, G100, 1e-7, 300e-9);
  struct param_set *ps = roce_params_with(NULL);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  for (int i = 1; i <= 5; i++) {
    struct fab_flow *f = fabric_post(fab, i, 0, i < 5 ? 40 * 1048576.0 : 3 * 1048576.0, 0, 0, NULL, NULL);
    f->message_B = i < 5 ? 4 * 1048576.0 : 1048576.0;
  }
  fabric_run(fab);
  const struct roce_held *h = &roce__state(fab)->held;
  fprintf(stderr, "\n  [held port message] %zu shapes measured, the first with %.0f B messages at load %.2f\n", h->n,
          h->n ? h->entry[0].shape.message_B : 0, h->n ? h->entry[0].shape.load : 0);
  CU_ASSERT(h->n >= 1);
  for (size_t i = 0; i < h->n; i++)
    CU_ASSERT_DOUBLE_EQUAL(h->entry[i].shape.message_B, 4 * 1048576.0, 0);
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
}

/* Exact E[max load] of n balls in n bins: P(max <= m) = n!/n^n [x^n] (sum_{k<=m} x^k/k!)^n. */
static double expected_max_occupancy(int n)
{
  double e = 0, prev = 0;
  for (int m = 1; m <= n; m++) {
    double poly[65] = { 1 };
    for (int b = 0; b < n; b++) {
      double next[65] = { 0 };
      for (int i = 0; i <= n; i++) {
        double fact = 1;
        for (int k = 0; k <= m && i + k <= n; k++) {
          if (k > 0)
            fact *= k;
          next[i + k] += poly[i] / fact;
        }
      }
      memcpy(poly, next, sizeof poly);
    }
    double p = poly[n];
    for (int i = 1; i <= n; i++)
      p *= (double)i / n;
    e += m * (p - prev);
    prev = p;
  }
  return e;
}

/* Runs GPU i -> GPU n + i (i < n, bytes[i] each, all at 0) with DCQCN off and one more --cfg
 * value; writes the bytes each up-link of leaf0 sent into tx (at most 16), returns their count. */
static int leaf0_uplink_bytes(struct topo *t, int n, const double *bytes, const char *extra, uint64_t seed,
                              fab_fidelity fid, double *tx)
{
  const char *cfg[] = { "roce/dcqcn:off", extra, NULL };
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct fabric *fab = fabric_new(t, ps, roce_model(), fid, seed, err, sizeof err);
  for (int i = 0; i < n; i++)
    fabric_post(fab, i, n + i, bytes[i], 0, 0, NULL, NULL);
  fabric_run(fab);
  const struct topo_node *l = &t->nodes[fab_topo_find_node(t, "leaf0")];
  int up = 0;
  for (int p = l->first_port; p < l->first_port + l->port_count && up < 16; p++)
    if (t->ports[p].is_up)
      tx[up++] = fab->ports[p].tx_bytes;
  fabric_free(fab);
  fab_param_set_free(ps);
  return up;
}

static double ecmp_imbalance(struct topo *t, int n, const char *qps, int seeds, fab_fidelity fid)
{
  double bytes[16], tx[16], sum = 0;
  for (int i = 0; i < n; i++)
    bytes[i] = 64 * 4096;
  for (int s = 1; s <= seeds; s++) {
    int up = leaf0_uplink_bytes(t, n, bytes, qps, (uint64_t)s, fid, tx);
    double max = 0, total = 0;
    for (int k = 0; k < up; k++) {
      total += tx[k];
      max = fmax(max, tx[k]);
    }
    sum += max / (total / n);
  }
  return sum / seeds;
}

/* 4. N flows over N equal-cost uplinks: max/mean link load as balls into bins; QPs spread it. */
static void test_ecmp_collisions_balls_into_bins(void)
{
  const int n = 8, seeds = 200;
  struct topo *t = leaf_spine(2, n, n, G100, 1e-6);
  double expected = expected_max_occupancy(n);
  double one = ecmp_imbalance(t, n, "roce/qps-per-conn:1", seeds, FAB_FIDELITY_PACKET);
  double eight = ecmp_imbalance(t, n, "roce/qps-per-conn:8", seeds, FAB_FIDELITY_PACKET);
  double one_flow = ecmp_imbalance(t, n, "roce/qps-per-conn:1", seeds, FAB_FIDELITY_FLOW);
  fprintf(stderr,
          "\n  [ecmp] %d flows on %d uplinks, %d seeds: mean max/mean load %.3f (balls-into-bins %.3f), "
          "8 QPs per connection %.3f, flow fidelity %.3f\n",
          n, n, seeds, one, expected, eight, one_flow);
  CU_ASSERT(fabs(one - expected) < 0.1 * expected);
  CU_ASSERT(eight < one - 0.5);
  CU_ASSERT_DOUBLE_EQUAL(one_flow, one, 1e-9); /* the same paths at both fidelities */
  fab_topo_free(t);
}

/* Up-links of leaf0 that carried bytes when GPU 0 sends n transfers to GPU n, transfer i over
 * connection conn_step * i (a collective's channel i). */
static int uplinks_used_by_connections(struct topo *t, int n, int conn_step, fab_fidelity fid)
{
  const char *cfg[] = { "roce/dcqcn:off", NULL };
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct fabric *fab = fabric_new(t, ps, roce_model(), fid, 1, err, sizeof err);
  for (int i = 0; i < n; i++)
    fabric_post(fab, 0, n, 16 * 4096, 0, 0, NULL, NULL)->conn = (uint8_t)(conn_step * i);
  fabric_run(fab);
  const struct topo_node *l = &t->nodes[fab_topo_find_node(t, "leaf0")];
  int used = 0;
  for (int p = l->first_port; p < l->first_port + l->port_count; p++)
    used += t->ports[p].is_up && fab->ports[p].tx_bytes > 0;
  fabric_free(fab);
  fab_param_set_free(ps);
  return used;
}

/* 4b. A collective's channels are connections of their own (NCCL connects each channel with its
 * own QPs): between the same two GPUs they hash to paths of their own, where transfers over one
 * connection keep one path. */
static void test_ecmp_channels_are_connections(void)
{
  const int n = 8;
  struct topo *t = leaf_spine(2, n, n, G100, 1e-6);
  for (int fid = 0; fid < 2; fid++) {
    fab_fidelity f = fid ? FAB_FIDELITY_PACKET : FAB_FIDELITY_FLOW;
    int one = uplinks_used_by_connections(t, n, 0, f), own = uplinks_used_by_connections(t, n, 1, f);
    fprintf(stderr, "\n  [ecmp] 8 transfers GPU 0 -> 8 (%s): one connection %d up-link(s), eight %d\n",
            fid ? "packet" : "flow", one, own);
    CU_ASSERT_EQUAL(one, 1);
    CU_ASSERT(own >= 3);
  }
  fab_topo_free(t);
}

/* The up-links of leaf0 that N flows of leaf0 take, as one number: flow i sends i + 1 packets'
 * worth, and each up-link's bytes weigh its index. */
static double uplink_signature(struct topo *t, int n, const char *ecmp_seed, uint64_t run_seed, fab_fidelity fid)
{
  double bytes[16], tx[16], signature = 0;
  for (int i = 0; i < n; i++)
    bytes[i] = (i + 1) * 4096.0;
  int up = leaf0_uplink_bytes(t, n, bytes, ecmp_seed, run_seed, fid, tx);
  for (int k = 0; k < up; k++)
    signature += (k + 1) * tx[k];
  return signature;
}

/* roce/ecmp-seed sets both halves of ECMP, the QP numbers the NICs hash and the switches' hash
 * seed, so the paths stay while the run's seed (RED marks, drops) changes; left at 0 it follows
 * the run's seed. Before the switches took it, their hash kept the run's seed and the paths moved
 * with it. */
static void test_ecmp_seed_holds_the_paths(void)
{
  const int n = 8;
  struct topo *t = leaf_spine(2, n, n, G100, 1e-6);
  for (int packet = 0; packet <= 1; packet++) {
    fab_fidelity fid = packet ? FAB_FIDELITY_PACKET : FAB_FIDELITY_FLOW;
    double held = uplink_signature(t, n, "roce/ecmp-seed:7", 1, fid);
    int held_moved = 0, free_moved = 0;
    for (uint64_t seed = 2; seed <= 8; seed++) {
      held_moved += uplink_signature(t, n, "roce/ecmp-seed:7", seed, fid) != held;
      free_moved +=
          uplink_signature(t, n, "roce/ecmp-seed:0", seed, fid) != uplink_signature(t, n, "roce/ecmp-seed:0", 1, fid);
    }
    CU_ASSERT_EQUAL(held_moved, 0);
    CU_ASSERT(free_moved > 0);
  }
  fab_topo_free(t);
}

/* 5. One long flow under random loss with go-back-N. */
static void test_gbn_goodput_under_loss(void)
{
  struct topo *t = fab_topo_single_switch(2, G400, 2e-6, 300e-9);
  const char *rates[] = { "0", "1e-5", "1e-4", "1e-3", "1e-2" };
  struct flow_def f = { 0, 1, 32e6, 0 };
  double prev = INFINITY, at_1e3 = 0;
  fprintf(stderr, "\n");
  for (int i = 0; i < 5; i++) {
    char drop[64];
    snprintf(drop, sizeof drop, "roce/drop-rate:%s", rates[i]);
    const char *cfg[] = { "roce/dcqcn:off", drop, NULL };
    struct run_result r, rf;
    roce_run(t, FAB_FIDELITY_PACKET, 7, cfg, &f, 1, &r);
    roce_run(t, FAB_FIDELITY_FLOW, 7, cfg, &f, 1, &rf);
    double goodput = f.bytes / r.fct[0] / G400;
    double p = atof(rates[i]), rtt = 2 * (2 * 2e-6 + 300e-9), w = ceil(G400 * rtt / 4096) + 1;
    double path = 1 - pow(1 - p, 2), model = (1 - path) / (1 + path * w);
    fprintf(stderr,
            "  [loss %-5s] goodput %.3f of line rate (go-back-N model %.3f, flow fidelity %.3f), "
            "drops %llu, retransmitted %.1f MB, timeouts %.0f (flow fidelity %.0f)\n",
            rates[i], goodput, model, f.bytes / rf.fct[0] / G400, (unsigned long long)r.drops, r.retrans_B / 1e6,
            r.timeouts, rf.timeouts);
    CU_ASSERT_EQUAL(r.done, 1);
    CU_ASSERT(goodput <= prev + 1e-9);
    prev = goodput;
    if (i == 3)
      at_1e3 = goodput;
  }
  CU_ASSERT(at_1e3 < 0.9);
  fab_topo_free(t);
}

/* 5b. The retransmission timer counts from the last progress (the last ACK that advanced the
 * window, IBTA Vol.1 ch. 9 local ACK timeout), not periodically from the flow's start. A flow of 8
 * packets whose last packet alone is lost (no later packet, so no NACK): its retransmission
 * leaves exactly rto after the ACK of packet 7 reached the sender, i.e. its completion is the
 * lossless one plus rto plus one round trip (ACK back, retransmission out). The seed with that
 * loss is searched for among the first 400 (deterministic). A periodic timer from the start
 * retransmits at start + rto, about 1.5 us earlier here. */
static void test_rto_from_last_progress(void)
{
  const double lat = 1e-6, sw = 300e-9, rto = 100e-6;
  struct topo *t = fab_topo_single_switch(2, G400, lat, sw);
  struct flow_def f = { 0, 1, 8 * 4096, 0 };
  struct run_result clean, r;
  const char *none[] = { "roce/dcqcn:off", "roce/rto:100us", NULL };
  roce_run(t, FAB_FIDELITY_PACKET, 1, none, &f, 1, &clean);
  const char *lossy[] = { "roce/dcqcn:off", "roce/rto:100us", "roce/drop-rate:0.05", NULL };
  int found = 0;
  for (uint64_t seed = 1; seed <= 400 && !found; seed++) {
    roce_run(t, FAB_FIDELITY_PACKET, seed, lossy, &f, 1, &r);
    found = r.random_drops == 1 && r.retrans_B == 4096; /* the tail packet only */
  }
  CU_ASSERT_FATAL(found);
  const double path = 2 * lat + sw; /* one way: two links and the switch (cut-through) */
  fprintf(stderr, "\n  [tail loss] FCT %.4f us, lossless %.4f us, expected lossless + rto + 2 x %.2f us\n",
          r.fct[0] * 1e6, clean.fct[0] * 1e6, path * 1e6);
  CU_ASSERT_EQUAL(r.done, 1);
  CU_ASSERT_DOUBLE_EQUAL(r.fct[0], clean.fct[0] + rto + 2 * path, 1e-12);
  fab_topo_free(t);
}

/* Eight transfers of `bytes` on one switch of 16 GPUs, GPU i to GPU i + 8: each alone on its two
 * links (the loss tests' traffic, where go-back-N alone sets the pace). */
static void eight_alone(struct flow_def f[8], double bytes)
{
  for (int i = 0; i < 8; i++)
    f[i] = (struct flow_def){ i, i + 8, bytes, 0 };
}

/* 5c. Go-back-N timeouts at flow fidelity (roce_loss.h). Eight 4 MB transfers, each alone on its
 * two links, at 1e-2 per link: the receiver NACKs a PSN once, so the expected packet lost again
 * after its go-back, or the last packet lost, waits for the 1 ms timer. Over 8 seeds (64
 * transfers) the timeouts flow fidelity draws and their expected number come within 40 % of
 * those the packet model counts, and so does the mean FCT with drawn timeouts; without them
 * (roce/flow-timeouts:off, the goodput cap alone) the mean FCT is less than half the packet
 * model's. The expected count is what the formula gives: with roce/flow-timeouts:mean a
 * transfer's FCT grows by exactly that many timeouts when roce/rto grows by 1 ms. */
static void test_gbn_timeouts_at_flow_fidelity(void)
{
  struct topo *t = fab_topo_single_switch(16, G400, 1e-6, 300e-9);
  struct flow_def f[8];
  eight_alone(f, 4e6);
  const char *drawn[] = { "roce/dcqcn:off", "roce/drop-rate:1e-2", NULL };
  const char *mean[] = { "roce/dcqcn:off", "roce/drop-rate:1e-2", "roce/flow-timeouts:mean", NULL };
  const char *off[] = { "roce/dcqcn:off", "roce/drop-rate:1e-2", "roce/flow-timeouts:off", NULL };
  double t_packet = 0, t_drawn = 0, t_mean = 0, fct_packet = 0, fct_drawn = 0, fct_off = 0;
  struct run_result r;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    roce_run(t, FAB_FIDELITY_PACKET, seed, drawn, f, 8, &r);
    CU_ASSERT_EQUAL(r.done, 8);
    t_packet += r.timeouts;
    fct_packet += r.mean_fct / 8;
    roce_run(t, FAB_FIDELITY_FLOW, seed, drawn, f, 8, &r);
    t_drawn += r.timeouts;
    fct_drawn += r.mean_fct / 8;
    roce_run(t, FAB_FIDELITY_FLOW, seed, mean, f, 8, &r);
    t_mean += r.timeouts;
    roce_run(t, FAB_FIDELITY_FLOW, seed, off, f, 8, &r);
    fct_off += r.mean_fct / 8;
  }
  fprintf(stderr,
          "\n  [go-back-N timeouts, 64 x 4 MB at 1e-2] packet %.0f, flow drawn %.0f, expected %.1f; mean FCT packet "
          "%.1f us, flow %.1f us (without timeouts %.1f us)\n",
          t_packet, t_drawn, t_mean, fct_packet * 1e6, fct_drawn * 1e6, fct_off * 1e6);
  CU_ASSERT(t_packet >= 10);
  CU_ASSERT(fabs(t_drawn - t_packet) <= 0.4 * t_packet);
  CU_ASSERT(fabs(t_mean - t_packet) <= 0.4 * t_packet);
  CU_ASSERT(fabs(fct_drawn - fct_packet) <= 0.4 * fct_packet);
  CU_ASSERT(fct_off < 0.5 * fct_packet);
  /* the expected count, through the FCT's slope in roce/rto */
  const char *mean_2ms[] = { "roce/dcqcn:off", "roce/drop-rate:1e-2", "roce/flow-timeouts:mean", "roce/rto:2ms", NULL };
  struct run_result r2;
  roce_run(t, FAB_FIDELITY_FLOW, 1, mean, f, 1, &r);
  roce_run(t, FAB_FIDELITY_FLOW, 1, mean_2ms, f, 1, &r2);
  double p = 1 - pow(1 - 1e-2, 2), packets = ceil(4e6 / 4096);
  double expected = (packets * p * p + p) / (1 - p);
  CU_ASSERT_DOUBLE_EQUAL((r2.fct[0] - r.fct[0]) / 1e-3, expected, 1e-9 * expected);
  fab_topo_free(t);
}

/* 5d. Go-back-N's window includes the standing queue (roce_loss.h): four 8 MB transfers into one
 * GPU through one switch, DCQCN off, 1e-3 per link. PFC holds each ingress PG at its dynamic
 * threshold, so the egress queue stands at about 10 MB (9.9 MB at packet fidelity, 10.7 MB from
 * the thresholds), and a lost packet's NACK returns after the flow's share of it has been sent
 * again: 16 go-backs cost 29 MB at packet fidelity, where a round trip's window would cost
 * 0.1 MB. Flow fidelity with the queue in the window lands within [-20 %, +35 %] of packet
 * fidelity's mean FCT (+26 % here: the queue drains at the end, which the standing estimate
 * does not follow); with a round trip's window alone it was 42 % short. The bytes it estimates
 * were resent (retransmitted_bytes_est) are within [-30 %, +50 %] of those the packet model
 * resends, and its ECN marks estimate counts the resent packets too: 17,123 against the packet
 * model's 14,191 marks (7,813 when it counted only the delivered ones, as without loss). */
static void test_gbn_window_counts_the_queue(void)
{
  struct topo *t = fab_topo_single_switch(16, G400, 100e-9, 130e-9);
  struct flow_def f[4];
  for (int i = 0; i < 4; i++)
    f[i] = (struct flow_def){ i + 1, 0, 8e6, 0 };
  const char *lossy[] = { "roce/dcqcn:off", "roce/drop-rate:1e-3", NULL };
  const char *lossless[] = { "roce/dcqcn:off", NULL };
  struct run_result packet, flow, clean;
  roce_run(t, FAB_FIDELITY_PACKET, 1, lossy, f, 4, &packet);
  roce_run(t, FAB_FIDELITY_FLOW, 1, lossy, f, 4, &flow);
  roce_run(t, FAB_FIDELITY_FLOW, 1, lossless, f, 4, &clean);
  fprintf(stderr,
          "\n  [go-back-N window, 4 x 8 MB incast at 1e-3] mean FCT packet %.1f us, flow %.1f us, lossless %.1f us; "
          "resent %.1f MB, flow estimate %.1f MB; marks %llu, flow estimate %.0f\n",
          packet.mean_fct * 1e6, flow.mean_fct * 1e6, clean.mean_fct * 1e6, packet.retrans_B / 1e6,
          flow.retrans_B / 1e6, (unsigned long long)packet.marks, flow.est_marks);
  CU_ASSERT_EQUAL(packet.done, 4);
  CU_ASSERT(packet.mean_fct > 1.5 * clean.mean_fct); /* the queue's worth of every go-back */
  CU_ASSERT(flow.mean_fct > 0.8 * packet.mean_fct);
  CU_ASSERT(flow.mean_fct < 1.35 * packet.mean_fct);
  /* what the goodput fractions say was sent again: 38.1 MB against 28.9 MB resent (the same +32 %
   * as the FCT's, and for the same reason) */
  CU_ASSERT(flow.retrans_B > 0.7 * packet.retrans_B);
  CU_ASSERT(flow.retrans_B < 1.5 * packet.retrans_B);
  CU_ASSERT_FATAL(flow.estimated);
  CU_ASSERT(flow.est_marks > 0.8 * (double)packet.marks);
  CU_ASSERT(flow.est_marks < 1.5 * (double)packet.marks);
  fab_topo_free(t);
}

/* 5e. What go-back-N resends, flow fidelity's estimate (retransmitted_bytes_est) against the
 * packet model's count: eight 16 MB transfers, each alone on its two links, at 1e-2 per link,
 * over 4 seeds. Besides each go-back's window (the goodput fraction), a sender whose expected
 * packet is lost again goes on sending the rest of its message in vain until its timer fires
 * (roce_loss_stall_bytes): about half a message per timeout here, as much as the windows'
 * (0.02 x 16 MB / (2 x 4096 B x 57 packets) = 0.69 of them). With both the estimate comes within
 * 30 % of the count (935 MB against 1,076 MB, 42 timeouts drawn against 59 counted); with the
 * windows alone it was 603 MB, 44 % short. */
static void test_gbn_resent_bytes_estimate(void)
{
  struct topo *t = fab_topo_single_switch(16, G400, 1e-6, 300e-9);
  struct flow_def f[8];
  eight_alone(f, 16e6);
  const char *lossy[] = { "roce/dcqcn:off", "roce/drop-rate:1e-2", NULL };
  double packet = 0, flow = 0, timeouts_packet = 0, timeouts_flow = 0;
  struct run_result r;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    roce_run(t, FAB_FIDELITY_PACKET, seed, lossy, f, 8, &r);
    CU_ASSERT_EQUAL(r.done, 8);
    packet += r.retrans_B;
    timeouts_packet += r.timeouts;
    roce_run(t, FAB_FIDELITY_FLOW, seed, lossy, f, 8, &r);
    flow += r.retrans_B;
    timeouts_flow += r.timeouts;
  }
  fprintf(stderr,
          "\n  [resent bytes, 32 x 16 MB at 1e-2] packet %.1f MB (%.0f timeouts), flow estimate %.1f MB (%.0f)\n",
          packet / 1e6, timeouts_packet, flow / 1e6, timeouts_flow);
  CU_ASSERT(timeouts_packet >= 10);
  CU_ASSERT(fabs(flow - packet) <= 0.3 * packet);
  fab_topo_free(t);
}

/* Framing: every 4096-byte payload carries Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4
 * bytes, and the wire adds preamble/SFD 8 and the inter-frame gap 12 (IEEE 802.3 clauses 3-4,
 * IBTA Vol.1 Annex A17): 82 bytes, so one flow at 400 Gb/s has a goodput of 50 GB/s x 4096 /
 * 4178, at both fidelities, to 0.1% (default DCQCN: one flow is never marked). Goodput = the
 * extra bytes over the extra time of a 32 MiB flow over a 16 MiB one (latencies cancel). */
static double roce_goodput(fab_fidelity fid, const char *const *cfg)
{
  struct topo *t = fab_topo_single_switch(2, G400, 1e-6, 300e-9);
  struct run_result r;
  double fct[2];
  for (int i = 0; i < 2; i++) {
    struct flow_def f = { 0, 1, (i + 1) * 16.0 * 1048576, 0 };
    roce_run(t, fid, 1, cfg, &f, 1, &r);
    CU_ASSERT_EQUAL(r.done, 1);
    fct[i] = r.fct[0];
  }
  fab_topo_free(t);
  return 16.0 * 1048576 / (fct[1] - fct[0]);
}

static void test_framing_goodput(void)
{
  const double expect = G400 * 4096 / 4178;
  double packet = roce_goodput(FAB_FIDELITY_PACKET, NULL), flow = roce_goodput(FAB_FIDELITY_FLOW, NULL);
  const char *bare[] = { "roce/frame-overhead:0", NULL };
  double packet_bare = roce_goodput(FAB_FIDELITY_PACKET, bare);
  fprintf(stderr,
          "\n  [framing] one flow at 400 Gb/s: goodput %.4f GB/s packet, %.4f GB/s flow (4096/4178 of line: "
          "%.4f); no framing %.4f GB/s\n",
          packet / 1e9, flow / 1e9, expect / 1e9, packet_bare / 1e9);
  CU_ASSERT(rel(packet, expect) <= 1e-3);
  CU_ASSERT(rel(flow, expect) <= 1e-3);
  CU_ASSERT(rel(packet_bare, G400) <= 1e-3);
}

/* 6. Flow fidelity against packet fidelity: mean FCT within 5%. */
static void test_flow_matches_packet(void)
{
  struct run_result p, f;
  fprintf(stderr, "\n");
  {
    struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
    struct flow_def flows[] = { { 0, 2, 250e6, 0 }, { 1, 2, 250e6, 0 } };
    const char *cfg[] = { "roce/dcqcn:paper", NULL };
    roce_run(t, FAB_FIDELITY_PACKET, 1, cfg, flows, 2, &p);
    roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows, 2, &f);
    fprintf(stderr, "  [flow vs packet] 2-to-1 DCQCN: packet %.1f us, flow %.1f us (%.1f%%)\n", p.mean_fct * 1e6,
            f.mean_fct * 1e6, 100 * rel(f.mean_fct, p.mean_fct));
    CU_ASSERT(rel(f.mean_fct, p.mean_fct) < 0.05);
    fab_topo_free(t);
  }
  {
    struct topo *t = fab_topo_single_switch(17, G400, 100e-9, 300e-9);
    struct flow_def flows[16];
    for (int i = 0; i < 16; i++)
      flows[i] = (struct flow_def){ i + 1, 0, 1e6, 0 };
    const char *cfg[] = { "roce/dcqcn:off", "roce/buffer:9MB", NULL };
    roce_run(t, FAB_FIDELITY_PACKET, 1, cfg, flows, 16, &p);
    roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows, 16, &f);
    fprintf(stderr, "  [flow vs packet] 16-to-1 PFC incast: packet %.1f us, flow %.1f us (%.1f%%)\n", p.mean_fct * 1e6,
            f.mean_fct * 1e6, 100 * rel(f.mean_fct, p.mean_fct));
    CU_ASSERT(rel(f.mean_fct, p.mean_fct) < 0.05);
    fab_topo_free(t);
  }
  {
    struct topo *t = leaf_spine(2, 8, 8, G100, 1e-6);
    struct flow_def flows[8];
    for (int i = 0; i < 8; i++)
      flows[i] = (struct flow_def){ i, 8 + i, 4e6, 0 };
    const char *cfg[] = { "roce/dcqcn:off", NULL };
    double worst = 0;
    for (uint64_t s = 1; s <= 5; s++) {
      roce_run(t, FAB_FIDELITY_PACKET, s, cfg, flows, 8, &p);
      roce_run(t, FAB_FIDELITY_FLOW, s, cfg, flows, 8, &f);
      if (rel(f.mean_fct, p.mean_fct) > worst)
        worst = rel(f.mean_fct, p.mean_fct);
    }
    fprintf(stderr, "  [flow vs packet] ECMP 8 flows, DCQCN off, 5 seeds: worst mean-FCT gap %.1f%%\n", 100 * worst);
    CU_ASSERT(worst < 0.05);
    fab_topo_free(t);
  }
  {
    struct platform *pl = load_shipped("ft2-128.xml");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pl);
    struct flow_def flows[128];
    struct fab_rng rng;
    fab_rng_seed(&rng, 42);
    int perm[128];
    for (int i = 0; i < 128; i++)
      perm[i] = i;
    for (int i = 127; i > 0; i--) {
      int j = (int)fab_rng_below(&rng, (uint64_t)i + 1), tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
    }
    for (int i = 0; i < 128; i++)
      flows[i] = (struct flow_def){ i, perm[i], 4e6, 0 };
    const char *cfg[] = { "roce/dcqcn:off", NULL };
    roce_run(pl->topo, FAB_FIDELITY_PACKET, 1, cfg, flows, 128, &p);
    roce_run(pl->topo, FAB_FIDELITY_FLOW, 1, cfg, flows, 128, &f);
    fprintf(stderr,
            "  [flow vs packet] 128-GPU permutation, DCQCN off: packet %.1f us, flow %.1f us (%.1f%%), "
            "marks %llu\n",
            p.mean_fct * 1e6, f.mean_fct * 1e6, 100 * rel(f.mean_fct, p.mean_fct), (unsigned long long)p.marks);
    CU_ASSERT(rel(f.mean_fct, p.mean_fct) < 0.05); /* measured 3.4% with FIFO shares (5.4% with max-min) */
    platform_free(pl);
  }
}

/* 7. nic preset recovery: 8 x 4 MB into gpu0 of tiny-16 (400 Gb/s; every sender behind the
 * spines) at packet fidelity. With the firmware's target clamp (RT kept through back-to-back
 * cuts) the bottleneck stays busy; with the paper's clamp (RT <- RC at every cut, the model
 * before the firmware semantics) the rates are cut once per 4 us to near the minimum and climb
 * back at R_AI = 5 Mb/s per step: the link was 98% idle for ~35 ms. */
static void test_nic_incast_recovers(void)
{
  struct platform *pl = load_shipped("tiny-16.xml");
  struct flow_def flows[8];
  for (int i = 0; i < 8; i++)
    flows[i] = (struct flow_def){ 8 + i, 0, 4194304, 0 };
  const double ideal = 8 * 4194304 / 50e9;
  struct run_result r;
  const char *nic[] = { "roce/dcqcn:nic", NULL };
  roce_run(pl->topo, FAB_FIDELITY_PACKET, 1, nic, flows, 8, &r);
  fprintf(stderr, "\n  [nic incast] mean FCT %.1f us, last %.1f us, bottleneck utilisation %.3f, CNPs %llu\n",
          r.mean_fct * 1e6, r.max_fct * 1e6, ideal / r.max_fct, (unsigned long long)r.cnps);
  CU_ASSERT_EQUAL(r.done, 8);
  CU_ASSERT(ideal / r.max_fct > 0.9); /* measured 0.998 */
  const char *clamped[] = { "roce/dcqcn:nic", "roce/dcqcn-clamp-target:on", NULL };
  roce_run(pl->topo, FAB_FIDELITY_PACKET, 1, clamped, flows, 8, &r);
  fprintf(stderr, "  [nic incast, clamp-target on] mean FCT %.1f us, last %.1f us, utilisation %.3f\n",
          r.mean_fct * 1e6, r.max_fct * 1e6, ideal / r.max_fct);
  CU_ASSERT(ideal / r.max_fct < 0.1); /* the deep-cut collapse the firmware clamp avoids (0.018) */
  platform_free(pl);
  /* NIC re-pacing: 16 x 4 MB into one 100 Gb/s port. Cuts take some senders to a few Mb/s; the
   * gap after their last packet must follow the rate as it recovers, or a packet sent at 1 Mb/s
   * holds its flow for 33 ms (the last flow ended after about 60 ms before re-pacing). */
  struct topo *t = fab_topo_single_switch(17, G100, 1e-6, 300e-9);
  struct flow_def sixteen[16];
  for (int i = 0; i < 16; i++)
    sixteen[i] = (struct flow_def){ i, 16, 4e6, 0 };
  roce_run(t, FAB_FIDELITY_PACKET, 1, nic, sixteen, 16, &r);
  const double drain = 16 * 4e6 / G100;
  fprintf(stderr, "  [nic incast 16->1, 100 Gb/s] mean FCT %.1f us, last %.1f us, %.2f x the drain time\n",
          r.mean_fct * 1e6, r.max_fct * 1e6, r.max_fct / drain);
  CU_ASSERT_EQUAL(r.done, 16);
  CU_ASSERT(r.max_fct < 2 * drain);
  fab_topo_free(t);
}

/* 8. A QP keeps its reaction point across its transfers (roce/rp-per-qp, roce_rp.h): four
 * senders send eight 2 MB messages each into one receiver, back to back on one QP (nic preset,
 * 400 Gb/s, 1 us links, packet fidelity). With rp-per-qp on every message after a sender's
 * first starts at the rate the QP's last message left, below line rate here; with the default
 * (off) every message restarts at line rate, refills the queue and is cut afresh. Measured: the
 * first messages end in DCQCN's trapped state (1.3-3.4 MB/s), so with the rates kept the second
 * ones start there and the receiver's link idles until the rate timers lift them: the last
 * message ends at 1,570.7 us against 1,310.6 us (616 CNPs against 857). */
enum { CHAIN_SENDERS = 4, CHAIN_MESSAGES = 8 };
struct chain {
  struct fab_flow *cur[CHAIN_SENDERS];
  int left[CHAIN_SENDERS], sampled[CHAIN_SENDERS], first[CHAIN_SENDERS];
  double end_s;
};

static void chain_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  struct chain *c = ctx;
  int s = flow->src_gpu;
  c->end_s = fab->now;
  c->cur[s] = --c->left[s] > 0 ? fabric_post(fab, s, CHAIN_SENDERS, 2e6, fab->now, 0, chain_done, c) : NULL;
  c->sampled[s] = c->first[s] = 0;
}

/* Runs the chains; returns how many later messages started below 99% of line rate (of
 * CHAIN_SENDERS x (CHAIN_MESSAGES - 1)), with the CNPs and the end date. */
static int chain_run(const char *const *cfg, uint64_t *cnps, double *end_s)
{
  struct topo *t = fab_topo_single_switch(CHAIN_SENDERS + 1, G400, 1e-6, 300e-9);
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct chain c = { 0 };
  for (int s = 0; s < CHAIN_SENDERS; s++) {
    c.left[s] = CHAIN_MESSAGES;
    c.first[s] = 1;
    c.cur[s] = fabric_post(fab, s, CHAIN_SENDERS, 2e6, 0, 0, chain_done, &c);
  }
  int below = 0, busy = 1;
  for (double now = 0.5e-6; busy; now += 0.5e-6) {
    fabric_advance(fab, now); /* a CNP needs two link delays: none in 0.5 us */
    busy = 0;
    for (int s = 0; s < CHAIN_SENDERS; s++) {
      double rc, rt, alpha;
      if (c.cur[s] == NULL)
        continue;
      busy = 1;
      if (!c.sampled[s] && c.cur[s]->state == FLOW_ACTIVE && sg_roce_get_flow_rate(c.cur[s], &rc, &rt, &alpha) == 0) {
        c.sampled[s] = 1;
        below += !c.first[s] && rc < 0.99 * G400;
      }
    }
  }
  *cnps = sg_roce_get_cnps(fab);
  *end_s = c.end_s;
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
  return below;
}

static void test_qp_keeps_its_rate(void)
{
  uint64_t cnps_kept, cnps_fresh;
  double end_kept, end_fresh;
  int below_kept = chain_run((const char *const[]){ "roce/rp-per-qp:on", NULL }, &cnps_kept, &end_kept);
  int below_fresh = chain_run(NULL, &cnps_fresh, &end_fresh); /* the default: off */
  fprintf(stderr,
          "\n  [rp per qp] later messages starting below line rate: %d of %d kept, %d fresh; CNPs %llu kept, %llu "
          "fresh; last message ends at %.1f us kept, %.1f us fresh\n",
          below_kept, CHAIN_SENDERS * (CHAIN_MESSAGES - 1), below_fresh, (unsigned long long)cnps_kept,
          (unsigned long long)cnps_fresh, end_kept * 1e6, end_fresh * 1e6);
  CU_ASSERT_EQUAL(below_fresh, 0);
  CU_ASSERT(below_kept >= CHAIN_SENDERS * (CHAIN_MESSAGES - 1) / 2);
  CU_ASSERT(cnps_kept < cnps_fresh);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "roce_fabric";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "dcqcn_two_flows_converge", test_dcqcn_two_flows_converge },
  { "pfc_incast_lossless", test_pfc_incast_lossless },
  { "pfc_hpcc_headroom_lossless", test_pfc_hpcc_headroom_lossless },
  { "lossy_dynamic_threshold", test_lossy_dynamic_threshold },
  { "pfc_congestion_spreading", test_pfc_congestion_spreading },
  { "pfc_spreading_is_local", test_pfc_spreading_is_local },
  { "pfc_congestion_tree", test_pfc_congestion_tree },
  { "pfc_pause_end_moves_later", test_pfc_pause_end_moves_later },
  { "dcqcn_on_fifo_and_spreading", test_dcqcn_on_fifo_and_spreading },
  { "fifo_shares_as_payload", test_fifo_shares_as_payload },
  { "flow_estimates_track_packet", test_flow_estimates_track_packet },
  { "held_port_measured", test_held_port_measured },
  { "held_port_messages", test_held_port_messages },
  { "held_port_ring_steps", test_held_port_ring_steps },
  { "rings_in_steps", test_rings_in_steps },
  { "held_port_message_weighed", test_held_port_message_weighed },
  { "held_port_ages", test_held_port_ages },
  { "held_port_feeders", test_held_port_feeders },
  { "held_ports_share_a_switch", test_held_ports_share_a_switch },
  { "held_runs_shared", test_held_runs_shared },
  { "held_port_shares", test_held_port_shares },
  { "ecmp_collisions_balls_into_bins", test_ecmp_collisions_balls_into_bins },
  { "ecmp_channels_are_connections", test_ecmp_channels_are_connections },
  { "ecmp_seed_holds_the_paths", test_ecmp_seed_holds_the_paths },
  { "gbn_goodput_under_loss", test_gbn_goodput_under_loss },
  { "rto_from_last_progress", test_rto_from_last_progress },
  { "gbn_timeouts_at_flow_fidelity", test_gbn_timeouts_at_flow_fidelity },
  { "gbn_window_counts_the_queue", test_gbn_window_counts_the_queue },
  { "gbn_resent_bytes_estimate", test_gbn_resent_bytes_estimate },
  { "framing_goodput", test_framing_goodput },
  { "flow_matches_packet", test_flow_matches_packet },
  { "nic_incast_recovers", test_nic_incast_recovers },
  { "qp_keeps_its_rate", test_qp_keeps_its_rate },
  { NULL, NULL },
};
