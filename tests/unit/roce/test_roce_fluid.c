/* Flow fidelity, fluid DCQCN (plugins/roce/roce_dcqcn_fluid.c): the CoNEXT'16 trajectory and fixed
 * point, flow against packet fidelity, incasts, and DCQCN off unchanged. Each test prints its
 * measured figures to stderr (docs/roce.md, "Flow fidelity: fluid DCQCN", quotes them). */
#include "roce_internal.h"
#include "test_roce_support.h"
#include "cunit_main.h"

#define G100 12.5e9

static const struct dcqcn_params g_paper = {
  1.0 / 256, 1, 55e-6, 55e-6, 10e6, 5, 40e6 / 8, 400e6 / 8, 1e6 / 8, 0, DCQCN_CLAMP_ALWAYS, 0, 0
};

/* q* of N flows at a 100 Gb/s port, paper preset (Kmin/Kmax scaled from 40 Gb/s). */
static double q_star(int n)
{
  double p = dcqcn_fixed_point_p(&g_paper, n, G100, 4096);
  double kmin = 5e3 * G100 / 5e9, kmax = 200e3 * G100 / 5e9;
  return kmin + p / 0.01 * (kmax - kmin);
}

struct incast {
  double q_mean, rate_min, rate_max, settle_s, marks_est, cnps_est, peak_q;
  uint64_t transients, steps;
};

/* n long flows into gpu n from t = 0, flow fidelity: the fluid queue and rates sampled every
 * 10 us over [horizon/2, horizon]. */
static void run_incast(int n, const char *fluid, double horizon, struct incast *out)
{
  struct topo *t = fab_topo_single_switch(n + 1, G100, 1e-6, 300e-9);
  const char *cfg[] = { "roce/dcqcn:paper", fluid, "roce/fluid-rp:ode", NULL };
  struct param_set *ps = roce_params_with(cfg);
  char err[256];
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct fab_flow *f[64];
  for (int i = 0; i < n; i++)
    f[i] = fabric_post(fab, i, n, 1e12, 0, 0, NULL, NULL);
  int port = t->ports[t->gpu_nic_port[n]].peer_port; /* switch -> receiver */
  double q_sum = 0;
  int q_n = 0;
  memset(out, 0, sizeof *out);
  out->rate_min = INFINITY;
  for (double now = 10e-6; now <= horizon + 1e-12; now += 10e-6) {
    fabric_advance(fab, now);
    if (now < horizon / 2)
      continue;
    q_sum += sg_roce_get_fluid_queue(fab, port);
    q_n++;
    for (int i = 0; i < n; i++) {
      out->rate_min = fmin(out->rate_min, f[i]->rate_Bps);
      out->rate_max = fmax(out->rate_max, f[i]->rate_Bps);
    }
  }
  const struct roce_state *rs = roce__state(fab);
  out->q_mean = q_sum / q_n;
  out->settle_s = rs->fluid.stats.settled ? rs->fluid.stats.last_settle_s : NAN;
  out->marks_est = rs->fluid.stats.marks_est;
  out->cnps_est = rs->fluid.stats.cnps_est;
  out->peak_q = rs->fluid.stats.peak_queue_B;
  out->transients = rs->fluid.stats.transients;
  out->steps = rs->fluid.stats.steps;
  fabric_free(fab);
  fab_param_set_free(ps);
  fab_topo_free(t);
}

/* (a)-(c): the CoNEXT'16 ODE reaction point (roce/fluid-rp:ode), as measured when it was the
 * only one (docs/roce.md); (e) compares the default machine reaction point with packet fidelity.
 * (a) 2 -> 1 at 100 Gb/s, paper preset: mean queue within 10% of q*, rates converge to C/2. */
static void test_fluid_two_flows_fixed_point(void)
{
  struct incast r, off;
  run_incast(2, "roce/fluid:on", 60e-3, &r);
  run_incast(2, "roce/fluid:off", 60e-3, &off);
  fprintf(stderr,
          "\n  [fluid 2->1] mean queue %.1f KB vs q* %.1f KB, rates %.2f..%.2f Gb/s (C/2 = 50), settled at "
          "%.2f ms, peak queue %.0f KB, marks est %.0f, CNPs est %.0f, %llu steps; fluid off: queue %.1f KB\n",
          r.q_mean / 1e3, q_star(2) / 1e3, r.rate_min * 8e-9, r.rate_max * 8e-9, r.settle_s * 1e3, r.peak_q / 1e3,
          r.marks_est, r.cnps_est, (unsigned long long)r.steps, off.q_mean / 1e3);
  /* Target not met yet (docs/roce.md): the line-rate start over-reduces, the fluid queue settles
   * empty at sum RC = C instead of q*. Asserted: what the mechanism does today. */
  CU_ASSERT(!isnan(r.settle_s));
  /* C is the payload rate: 100 Gb/s x 4096 / (4096 + 82) with RoCEv2 framing (IEEE 802.3 cl. 3-4,
   * IBTA Annex A17), 2% under the line rate since packets carry their headers. */
  const double c = G100 * 4096 / 4178;
  CU_ASSERT(fabs(r.rate_min - c / 2) < 0.01 * c / 2 && fabs(r.rate_max - c / 2) < 0.01 * c / 2);
  CU_ASSERT(r.marks_est > 0 && r.cnps_est > 0);
  CU_ASSERT(r.peak_q > r.q_mean); /* the line-rate start overshoots */
  CU_ASSERT(off.q_mean == 0);     /* without the fluid model there is no queue */
}

/* (b) 2 -> 1 with 20 MB each, paper preset: flow against packet mean FCT (packet: mean of 3
 * seeds). Max-min alone misses the start-up over-reduction. */
static void test_fluid_flow_matches_packet(void)
{
  struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct flow_def flows[] = { { 0, 2, 20e6, 0 }, { 1, 2, 20e6, 0 } };
  const char *cfg[] = { "roce/dcqcn:paper", "roce/fluid:on", "roce/fluid-rp:ode", NULL };
  const char *cfg_off[] = { "roce/dcqcn:paper", "roce/fluid:off", NULL };
  struct run_result p, f, m;
  double packet = 0;
  for (uint64_t s = 1; s <= 3; s++) {
    roce_run(t, FAB_FIDELITY_PACKET, s, cfg, flows, 2, &p);
    packet += p.mean_fct / 3;
  }
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg, flows, 2, &f);
  roce_run(t, FAB_FIDELITY_FLOW, 1, cfg_off, flows, 2, &m);
  double gap = fabs(f.mean_fct - packet) / packet, gap_mm = fabs(m.mean_fct - packet) / packet;
  fprintf(stderr,
          "\n  [fluid (ode) flow vs packet] 2->1 20 MB paper: packet %.1f us (3 seeds), flow fluid %.1f us (%.1f%%), "
          "max-min only %.1f us (%.1f%%)\n",
          packet * 1e6, f.mean_fct * 1e6, 100 * gap, m.mean_fct * 1e6, 100 * gap_mm);
  /* Target (gap <= 5%, better than max-min) not met yet: docs/roce.md. Asserted: the fluid
   * model slows the start-up (over-reduction) while max-min does not. */
  CU_ASSERT(f.mean_fct > m.mean_fct);
  fab_topo_free(t);
}

/* (c) 10- and 64-flow incasts: steady-state queue against q*, convergence time. */
static void test_fluid_incasts(void)
{
  const int sizes[] = { 10, 64 };
  fprintf(stderr, "\n");
  for (int k = 0; k < 2; k++) {
    struct incast r;
    int n = sizes[k];
    run_incast(n, "roce/fluid:on", 60e-3, &r);
    double qs = q_star(n);
    fprintf(stderr,
            "  [fluid %d->1] mean queue %.1f KB vs q* %.1f KB (%+.1f%%), rates %.3f..%.3f Gb/s (C/N = %.3f), "
            "settled at %.2f ms, peak queue %.0f KB, %llu steps\n",
            n, r.q_mean / 1e3, qs / 1e3, 100 * (r.q_mean - qs) / qs, r.rate_min * 8e-9, r.rate_max * 8e-9, 100.0 / n,
            r.settle_s * 1e3, r.peak_q / 1e3, (unsigned long long)r.steps);
    CU_ASSERT(fabs(r.rate_max - r.rate_min) < 0.02 * G100 / n);
    CU_ASSERT(r.peak_q > 0 && r.steps > 0);
  }
}

/* (d) DCQCN off: the fluid model never applies, so roce/fluid:on gives the same FCTs as
 * roce/fluid:off, bit for bit, on an incast, a staggered incast and a congestion tree. */
static void same_with_and_without_fluid(struct topo *t, const char *const *cfg, const struct flow_def *flows, int n)
{
  const char *with[8], *without[8];
  int k = 0;
  for (; cfg[k]; k++)
    with[k] = without[k] = cfg[k];
  with[k] = "roce/fluid:on";
  without[k] = "roce/fluid:off";
  with[k + 1] = without[k + 1] = NULL;
  static struct run_result a, b;
  roce_run(t, FAB_FIDELITY_FLOW, 1, with, flows, n, &a);
  roce_run(t, FAB_FIDELITY_FLOW, 1, without, flows, n, &b);
  for (int i = 0; i < n; i++) {
    CU_ASSERT(a.fct[i] > 0);
    CU_ASSERT_EQUAL(a.fct[i], b.fct[i]);
  }
}

static void test_fluid_dcqcn_off_unchanged(void)
{
  struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct flow_def two[] = { { 0, 2, 20e6, 0 }, { 1, 2, 20e6, 0 } };
  const char *off[] = { "roce/dcqcn:off", NULL };
  same_with_and_without_fluid(t, off, two, 2);
  fab_topo_free(t);

  t = fab_topo_single_switch(17, 50e9, 100e-9, 300e-9);
  struct flow_def staggered[16];
  for (int i = 0; i < 16; i++)
    staggered[i] = (struct flow_def){ i + 1, 0, 1e6, i * 1e-6 };
  const char *buffer[] = { "roce/dcqcn:off", "roce/buffer:9MB", NULL };
  same_with_and_without_fluid(t, buffer, staggered, 16);
  fab_topo_free(t);

  t = leaf_spine(2, 5, 1, G100, 1e-6);
  struct flow_def tree[] = { { 2, 0, 2e6, 0 }, { 3, 0, 2e6, 0 }, { 4, 0, 2e6, 0 }, { 5, 0, 2e6, 0 }, { 6, 1, 2e6, 0 } };
  const char *pfc_on[] = { "roce/dcqcn:off", "roce/buffer:9MB", "roce/pfc:on", NULL };
  const char *pfc_off[] = { "roce/dcqcn:off", "roce/buffer:9MB", "roce/pfc:off", NULL };
  same_with_and_without_fluid(t, pfc_on, tree, 5);
  same_with_and_without_fluid(t, pfc_off, tree, 5);
  fab_topo_free(t);
  fprintf(stderr, "\n  [fluid, dcqcn off] FCTs bit for bit the same with roce/fluid on and off\n");
}

/* (e) Flow fidelity with the machine reaction point against packet fidelity, mean FCT, both
 * presets: 2 -> 1 and 16 -> 1 at 100 Gb/s (packet: mean of 3 seeds), and 8 x 4 MB into gpu0 of
 * tiny-16 (400 Gb/s). The paper preset is asserted within 5%; the nic preset is printed only:
 * its synchronised fluid flows oscillate between a queue past Kmax and an idle link, where the
 * packet model's flows drift apart and keep the link busy (docs/roce.md). */
struct cmp_case {
  const char *name;
  int n;
  double bytes;
};

static double packet_mean(struct topo *t, const char *const *cfg, const struct flow_def *flows, int n, int seeds)
{
  static struct run_result r;
  double m = 0;
  for (int s = 1; s <= seeds; s++) {
    roce_run(t, FAB_FIDELITY_PACKET, (uint64_t)s, cfg, flows, n, &r);
    m += r.mean_fct / seeds;
  }
  return m;
}

static void compare_case(struct topo *t, const char *preset, const struct flow_def *flows, int n, const char *name,
                         double *gap_fluid, double *gap_mm)
{
  char pre[64];
  snprintf(pre, sizeof pre, "roce/dcqcn:%s", preset);
  /* max-min: no fluid model and no held-port measure (roce/flow-held-measure:fine, the default,
   * measures the paper preset's 16 -> 1 port and ends it within 1%, docs/roce.md "Fine phases") */
  const char *on[] = { pre, "roce/fluid:on", NULL };
  const char *off[] = { pre, "roce/fluid:off", "roce/flow-held-ports:off", NULL };
  static struct run_result f, m;
  double packet = packet_mean(t, on, flows, n, 3);
  roce_run(t, FAB_FIDELITY_FLOW, 1, on, flows, n, &f);
  roce_run(t, FAB_FIDELITY_FLOW, 1, off, flows, n, &m);
  *gap_fluid = (f.mean_fct - packet) / packet;
  *gap_mm = (m.mean_fct - packet) / packet;
  fprintf(stderr,
          "  [fluid vs packet] %-18s %-5s packet %9.1f us (3 seeds), fluid %9.1f us (%+.1f%%), max-min %9.1f us "
          "(%+.1f%%)\n",
          name, preset, packet * 1e6, f.mean_fct * 1e6, 100 * *gap_fluid, m.mean_fct * 1e6, 100 * *gap_mm);
}

/* 8 x 4 MiB from leaves 2 and 3 of tiny-16 (GPUs 8-15) into gpu0, all at t = 0. */
static void tiny16_incast(struct flow_def eight[8])
{
  for (int i = 0; i < 8; i++)
    eight[i] = (struct flow_def){ 8 + i, 0, 4194304, 0 };
}

static void test_fluid_vs_packet_incasts(void)
{
  static const char *const presets[] = { "paper", "nic" };
  fprintf(stderr, "\n");
  for (int k = 0; k < 2; k++) {
    double gf, gm;
    struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
    struct flow_def two[] = { { 0, 2, 20e6, 0 }, { 1, 2, 20e6, 0 } };
    compare_case(t, presets[k], two, 2, "2->1 20 MB", &gf, &gm);
    if (k == 0) /* paper: the machine tracks packet fidelity (measured +0.1%; ode +17.8%) */
      CU_ASSERT(fabs(gf) < 0.05);
    fab_topo_free(t);
    t = fab_topo_single_switch(17, G100, 1e-6, 300e-9);
    struct flow_def sixteen[16];
    for (int i = 0; i < 16; i++)
      sixteen[i] = (struct flow_def){ i, 16, 4e6, 0 };
    compare_case(t, presets[k], sixteen, 16, "16->1 4 MB", &gf, &gm);
    if (k == 0) /* paper: the deep start-up cuts and the R_AI climb (measured 0.0%; max-min -47%) */
      CU_ASSERT(fabs(gf) < 0.05 && fabs(gm) > 0.3);
    fab_topo_free(t);
    struct platform *pl = load_shipped("tiny-16.xml");
    struct flow_def eight[8];
    tiny16_incast(eight);
    compare_case(pl->topo, presets[k], eight, 8, "tiny-16 8->1 4 MB", &gf, &gm);
    platform_free(pl);
  }
}

/* (f) roce/fluid:auto (the default) integrates the fluid model with the paper preset and not
 * with nic: 16 -> 1 at 100 Gb/s, flow fidelity, mean FCT bit for bit that of on and off. */
static void test_fluid_auto_follows_preset(void)
{
  struct topo *t = fab_topo_single_switch(17, G100, 1e-6, 300e-9);
  struct flow_def sixteen[16];
  for (int i = 0; i < 16; i++)
    sixteen[i] = (struct flow_def){ i, 16, 4e6, 0 };
  static const char *const presets[] = { "paper", "nic" };
  for (int k = 0; k < 2; k++) {
    char pre[64];
    snprintf(pre, sizeof pre, "roce/dcqcn:%s", presets[k]);
    const char *dflt[] = { pre, NULL }, *on[] = { pre, "roce/fluid:on", NULL },
               *off[] = { pre, "roce/fluid:off", NULL };
    static struct run_result d, f, m;
    roce_run(t, FAB_FIDELITY_FLOW, 1, dflt, sixteen, 16, &d);
    roce_run(t, FAB_FIDELITY_FLOW, 1, on, sixteen, 16, &f);
    roce_run(t, FAB_FIDELITY_FLOW, 1, off, sixteen, 16, &m);
    fprintf(stderr, "%s  [fluid auto] %-5s default %.1f us, on %.1f us, off %.1f us\n", k ? "" : "\n", presets[k],
            d.mean_fct * 1e6, f.mean_fct * 1e6, m.mean_fct * 1e6);
    CU_ASSERT(f.mean_fct != m.mean_fct); /* the fluid model matters here */
    CU_ASSERT(d.mean_fct == (k == 0 ? f.mean_fct : m.mean_fct));
  }
  fab_topo_free(t);
}

/* (g) A draining queue serves its flows in FIFO shares whatever else they cross: 8 x 4 MiB into
 * gpu0 of tiny-16 (paper preset, flow fidelity), where the ECMP paths of some senders meet on a
 * leaf up-link that carries them at exactly its capacity (in transient, no queue). That link set a
 * scale of 1 on its flows, which held them to their sending rate while gpu0's queue drained, so
 * the other flows took the drain and ended 24 % earlier (4,661 against 6,106 us); every flow now
 * ends together (the senders are alike), and the mean is within 15 % of the packet model's
 * (+7.1 % against 3 seeds since the PFC bound counts ingress ports, test (i); +27.6 % before it,
 * +68.7 % before the drain shares, docs/roce.md). */
static void test_fluid_drain_shares(void)
{
  struct platform *pl = load_shipped("tiny-16.xml");
  struct flow_def eight[8];
  tiny16_incast(eight);
  const char *paper[] = { "roce/dcqcn:paper", NULL };
  static struct run_result f;
  roce_run(pl->topo, FAB_FIDELITY_FLOW, 1, paper, eight, 8, &f);
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < 8; i++) {
    lo = fmin(lo, f.fct[i]);
    hi = fmax(hi, f.fct[i]);
  }
  double packet = packet_mean(pl->topo, paper, eight, 8, 3), gap = (f.mean_fct - packet) / packet;
  fprintf(stderr, "\n  [fluid drain shares] tiny-16 8->1 paper: flows end in %.1f..%.1f us, mean %+.1f%% vs packet\n",
          lo * 1e6, hi * 1e6, 100 * gap);
  CU_ASSERT_EQUAL(f.done, 8);
  CU_ASSERT(hi - lo < 0.01 * hi);
  CU_ASSERT(fabs(gap) < 0.15);
  platform_free(pl);
}

/* (h) roce/fluid-marks:random draws each flow's ECN marks: RED marks every packet independently,
 * so two flows of one bottleneck get their CNPs at dates of their own and drift apart, as at
 * packet fidelity. 2 -> 1, 20 MB each at 100 Gb/s, paper preset, seeds 1-8: with the marks at
 * their expected positions (mean, the default) both flows end together whatever the seed, always
 * at the same date; drawn, their ends differ and move with the seed, the same seed gives the same
 * FCTs bit for bit, and the mean over the seeds is the packet model's: measured 3,550.7 us at
 * packet fidelity (seed 6 alone 5,079.9 us), 3,551.9 us drawn, 3,343.6 us at the expected
 * positions (-5.8%). */
static void test_fluid_marks_drawn(void)
{
  enum { SEEDS = 8 };
  struct topo *t = fab_topo_single_switch(3, G100, 1e-6, 300e-9);
  struct flow_def two[] = { { 0, 2, 20e6, 0 }, { 1, 2, 20e6, 0 } };
  const char *drawn[] = { "roce/dcqcn:paper", "roce/fluid-marks:random", NULL }, *mean[] = { "roce/dcqcn:paper", NULL };
  static struct run_result r, again;
  double packet = packet_mean(t, drawn, two, 2, SEEDS), drawn_mean = 0, first_mean = -1;
  int apart = 0, seed_moves = 0, mean_apart = 0, mean_moves = 0;
  for (uint64_t s = 1; s <= SEEDS; s++) {
    roce_run(t, FAB_FIDELITY_FLOW, s, drawn, two, 2, &r);
    drawn_mean += r.mean_fct / SEEDS;
    apart += fabs(r.fct[0] - r.fct[1]) > 1e-3 * r.max_fct;
    if (first_mean < 0)
      first_mean = r.mean_fct;
    seed_moves += r.mean_fct != first_mean;
    roce_run(t, FAB_FIDELITY_FLOW, s, drawn, two, 2, &again);
    CU_ASSERT(again.fct[0] == r.fct[0] && again.fct[1] == r.fct[1]); /* deterministic */
  }
  double expected = 0;
  for (uint64_t s = 1; s <= SEEDS; s++) {
    roce_run(t, FAB_FIDELITY_FLOW, s, mean, two, 2, &r);
    if (s == 1)
      expected = r.mean_fct;
    mean_apart += fabs(r.fct[0] - r.fct[1]) > 1e-3 * r.max_fct;
    mean_moves += r.mean_fct != expected;
  }
  fprintf(stderr,
          "\n  [fluid marks] 2->1 20 MB paper, seeds 1-%d: packet %.1f us, drawn %.1f us (%+.1f%%; flows apart on %d "
          "seeds), expected positions %.1f us (%+.1f%%; apart on %d)\n",
          SEEDS, packet * 1e6, drawn_mean * 1e6, 100 * (drawn_mean - packet) / packet, apart, expected * 1e6,
          100 * (expected - packet) / packet, mean_apart);
  CU_ASSERT(mean_apart == 0 && mean_moves == 0);
  CU_ASSERT(apart >= SEEDS / 2 && seed_moves > 0);
  CU_ASSERT(fabs(drawn_mean - packet) < 0.02 * packet);
  CU_ASSERT(fabs(drawn_mean - packet) < fabs(expected - packet));
  fab_topo_free(t);
}

/* (i) The fluid queue stops growing where PFC pauses its ingress links, and PFC keeps one
 * threshold per ingress port (and priority), not per flow: 8 x 4 MiB into gpu0 of tiny-16 (paper
 * preset) arrive on the 4 spine links of leaf 0. The bound is the most the queue holds, so the
 * fluid queue's peak is checked against the packet model's largest peak switch buffer over seeds
 * 1-3 (it varies with the seed). Measured: packet
 * peaks 9.50 MB on seed 1 (8.06 MB on average), fluid 10.27 MB (+8%); with one threshold per
 * flow (8), as before, 12.80 MB (+35%). */
static void test_fluid_pfc_bound_per_ingress_port(void)
{
  struct platform *pl = load_shipped("tiny-16.xml");
  struct flow_def eight[8];
  tiny16_incast(eight);
  const char *cfg[] = { "roce/dcqcn:paper", NULL };
  static struct run_result r;
  double packet_peak = 0;
  for (uint64_t s = 1; s <= 3; s++) {
    roce_run(pl->topo, FAB_FIDELITY_PACKET, s, cfg, eight, 8, &r);
    packet_peak = fmax(packet_peak, r.peak_buffer);
  }
  roce_run(pl->topo, FAB_FIDELITY_FLOW, 1, cfg, eight, 8, &r);
  double fluid_peak = r.fluid_peak_queue;
  fprintf(stderr,
          "\n  [fluid PFC bound] tiny-16 8->1 paper: fluid queue peak %.2f MB, packet buffer peak %.2f MB (largest of "
          "seeds 1-3; %+.1f%%)\n",
          fluid_peak / 1e6, packet_peak / 1e6, 100 * (fluid_peak - packet_peak) / packet_peak);
  CU_ASSERT(fabs(fluid_peak - packet_peak) < 0.15 * packet_peak);
  CU_ASSERT_EQUAL(r.done, 8);
  platform_free(pl);
}

/* (j) Loss with the fluid model: the fluid rates are what the senders send, go-back-N's goodput
 * factor (a round trip's window at line rate) the part of it delivered, and the retransmission
 * timeouts are drawn as without it (docs/roce.md, "Loss at flow fidelity"). One 32 MB flow and a
 * 2 -> 1 of 16 MB each through one 400 Gb/s switch, paper preset, against packet fidelity.
 * Measured at 1e-3 per link: one flow packet 894.5 us, flow 797.5 us (-10.8 %; lossless 657.6 us
 * at both); two flows mean 995.9 and 1032.9 us (+3.7 %). At 1e-2 the packet model waits for 9
 * timeouts, flow fidelity draws 2 (10.9 against 4.1 ms: the same gap as with DCQCN off,
 * gbn_goodput_under_loss). Without the factor the fluid flows would end as if nothing were lost. */
static void test_fluid_under_loss(void)
{
  struct topo *t = fab_topo_single_switch(3, 50e9, 2e-6, 300e-9);
  const char *rates[] = { "0", "1e-3", "1e-2" };
  struct flow_def one[] = { { 0, 2, 32e6, 0 } }, two[] = { { 0, 2, 16e6, 0 }, { 1, 2, 16e6, 0 } };
  static struct run_result p1[3], f1[3], p2[3], f2[3]; /* 32 KB each: off the stack */
  for (int i = 0; i < 3; i++) {
    char drop[64];
    snprintf(drop, sizeof drop, "roce/drop-rate:%s", rates[i]);
    const char *cfg[] = { "roce/dcqcn:paper", drop, NULL };
    roce_run(t, FAB_FIDELITY_PACKET, 7, cfg, one, 1, &p1[i]);
    roce_run(t, FAB_FIDELITY_FLOW, 7, cfg, one, 1, &f1[i]);
    roce_run(t, FAB_FIDELITY_PACKET, 7, cfg, two, 2, &p2[i]);
    roce_run(t, FAB_FIDELITY_FLOW, 7, cfg, two, 2, &f2[i]);
    fprintf(stderr,
            "\n  [fluid under loss %-4s] one flow: packet %.1f us, flow %.1f us (timeouts %.0f / %.0f); "
            "2 -> 1 mean: packet %.1f us, flow %.1f us",
            rates[i], p1[i].fct[0] * 1e6, f1[i].fct[0] * 1e6, p1[i].timeouts, f1[i].timeouts, p2[i].mean_fct * 1e6,
            f2[i].mean_fct * 1e6);
    CU_ASSERT(f1[i].done == 1 && f2[i].done == 2);
  }
  fprintf(stderr, "\n");
  CU_ASSERT(f2[0].fluid_peak_queue > 0); /* the fluid model ran */
  CU_ASSERT(fabs(f1[0].fct[0] - p1[0].fct[0]) < 0.01 * p1[0].fct[0]);
  CU_ASSERT(f1[1].fct[0] > 1.1 * f1[0].fct[0]); /* the goodput factor: 1.21 x lossless */
  CU_ASSERT(fabs(f1[1].fct[0] - p1[1].fct[0]) < 0.15 * p1[1].fct[0]);
  CU_ASSERT(f2[1].mean_fct > 1.1 * f2[0].mean_fct);
  CU_ASSERT(fabs(f2[1].mean_fct - p2[1].mean_fct) < 0.10 * p2[1].mean_fct);
  CU_ASSERT(f1[2].timeouts > 0 && f1[2].fct[0] > f1[1].fct[0]); /* timeouts drawn */
  fab_topo_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "roce_fluid";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "fluid_two_flows_fixed_point", test_fluid_two_flows_fixed_point },
  { "fluid_flow_matches_packet", test_fluid_flow_matches_packet },
  { "fluid_incasts", test_fluid_incasts },
  { "fluid_dcqcn_off_unchanged", test_fluid_dcqcn_off_unchanged },
  { "fluid_vs_packet_incasts", test_fluid_vs_packet_incasts },
  { "fluid_auto_follows_preset", test_fluid_auto_follows_preset },
  { "fluid_drain_shares", test_fluid_drain_shares },
  { "fluid_marks_drawn", test_fluid_marks_drawn },
  { "fluid_pfc_bound_per_ingress_port", test_fluid_pfc_bound_per_ingress_port },
  { "fluid_under_loss", test_fluid_under_loss },
  { NULL, NULL },
};
