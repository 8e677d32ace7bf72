/* RoCE algorithms without a fabric: DCQCN rate machine, RED marking, PFC thresholds, go-back-N,
 * and the parameters the model refuses. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "dcqcn.h"
#include "ecn_red.h"
#include "gbn.h"
#include "pfc.h"
#include "roce.h"
#include "roce_held_port.h"
#include "roce_internal.h"
#include "roce_loss.h"
#include "test_support.h"
#include "cunit_main.h"

#define G100_Bps 12.5e9 /* 100 Gb/s */

static const struct dcqcn_params g_paper = {
  1.0 / 256, 1.0, 55e-6, 55e-6, 10e6, 5, 40e6 / 8, 400e6 / 8, 1e6 / 8, 0, DCQCN_CLAMP_ALWAYS, 0, 0
};

static void test_dcqcn_cut_and_recovery(void)
{
  struct dcqcn_vars v;
  struct dcqcn_stats s = { 0 };
  dcqcn_init(&g_paper, &v, 12.5e9);
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, 12.5e9, 1); /* starts at line rate */
  CU_ASSERT(dcqcn_on_cnp(&g_paper, &v, &s, 0));
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, 12.5e9 * 0.5, 1); /* alpha = 1: RC (1 - 1/2) */
  CU_ASSERT_DOUBLE_EQUAL(v.rt_Bps, 12.5e9, 1);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, 1.0, 1e-12);
  for (int i = 0; i < 5; i++)
    dcqcn_on_rate_timer(&g_paper, &v, &s); /* fast recovery halves the gap each step */
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, 12.5e9 - 6.25e9 / 32, 1);
  CU_ASSERT_EQUAL(s.fast_recovery, 5); /* F = 5 fast-recovery steps, */
  CU_ASSERT_EQUAL(s.additive, 0);
  dcqcn_on_rate_timer(&g_paper, &v, &s);
  CU_ASSERT_EQUAL(s.additive, 1); /* then additive increase */
  dcqcn_on_alpha_timer(&g_paper, &v);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, 1 - 1.0 / 256, 1e-12);
  struct dcqcn_params nic = g_paper;
  nic.dec_interval_s = 4e-6;
  dcqcn_init(&nic, &v, 12.5e9);
  CU_ASSERT(dcqcn_on_cnp(&nic, &v, &s, 1e-6));
  CU_ASSERT(!dcqcn_on_cnp(&nic, &v, &s, 3e-6)); /* one cut per decrease interval */
  CU_ASSERT(dcqcn_on_cnp(&nic, &v, &s, 6e-6));
}

/* ConnectX firmware cut (ConnectX firmware defaults: CLAMP_TGT_RATE = 0, CLAMP_TGT_RATE_AFTER_TIME_INC = 1,
 * RPG_MIN_DEC_FAC = 50, per-window alpha): back-to-back cuts keep the target rate, so fast
 * recovery climbs back halfway to it at once; a cut after a timer increase clamps RT to RC. */
static void test_dcqcn_firmware_clamp(void)
{
  struct dcqcn_params nic = {
    1.0 / 256, 1.0, 55e-6, 300e-6, 32767, 1, 5e6 / 8, 50e6 / 8, 1e6 / 8, 4e-6, DCQCN_CLAMP_AFTER_TIMER, 0.5, 1
  };
  struct dcqcn_vars v;
  struct dcqcn_stats s = { 0 };
  const double line = 50e9;
  dcqcn_init(&nic, &v, line);
  for (int i = 0; i < 6; i++) /* six cuts 5 us apart, no increase in between */
    CU_ASSERT(dcqcn_on_cnp(&nic, &v, &s, i * 5e-6));
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, line / 64, 1); /* alpha = 1 (per window: not raised by a CNP) */
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, 1.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(v.rt_Bps, line, 1);                   /* no timer increase since the cuts: RT kept */
  dcqcn_on_bytes(&nic, &v, &s, 32767);                         /* F = 1: one fast-recovery step, */
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, (line + line / 64) / 2, 1); /* halfway back to the line rate */
  dcqcn_on_rate_timer(&nic, &v, &s);                           /* a timer increase (additive: one counter past F) */
  double rc = v.rc_Bps;
  CU_ASSERT(dcqcn_on_cnp(&nic, &v, &s, 1e-3));
  CU_ASSERT_DOUBLE_EQUAL(v.rt_Bps, rc, 1); /* a cut after a timer increase clamps RT <- RC */
  CU_ASSERT(dcqcn_on_cnp(&nic, &v, &s, 1e-3 + 5e-6));
  CU_ASSERT_DOUBLE_EQUAL(v.rt_Bps, rc, 1); /* and the next back-to-back cut keeps it */
  /* The paper's clamp from the same state lowers RT at every cut. */
  struct dcqcn_params paper_clamp = nic;
  paper_clamp.clamp = DCQCN_CLAMP_ALWAYS;
  dcqcn_init(&paper_clamp, &v, line);
  for (int i = 0; i < 6; i++)
    dcqcn_on_cnp(&paper_clamp, &v, &s, i * 5e-6);
  CU_ASSERT_DOUBLE_EQUAL(v.rt_Bps, line / 32, 1);
  dcqcn_on_bytes(&paper_clamp, &v, &s, 32767);
  CU_ASSERT(v.rc_Bps < line / 16);
  /* RPG_MIN_DEC_FAC bounds one cut; per-window alpha rises once per window with a CNP. */
  nic.min_dec_factor = 0.8;
  dcqcn_init(&nic, &v, line);
  dcqcn_on_cnp(&nic, &v, &s, 0);
  CU_ASSERT_DOUBLE_EQUAL(v.rc_Bps, 0.8 * line, 1);
  v.alpha = 0.5;
  dcqcn_on_cnp(&nic, &v, &s, 10e-6);
  dcqcn_on_cnp(&nic, &v, &s, 20e-6);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, 0.5, 1e-12);
  dcqcn_on_alpha_timer(&nic, &v);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, 0.5 * (1 - nic.g) + nic.g, 1e-12);
  dcqcn_on_alpha_timer(&nic, &v);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, (0.5 * (1 - nic.g) + nic.g) * (1 - nic.g), 1e-12);
}

static void test_ecn_red_profile(void)
{
  struct ecn_red_params ref = { 5e3, 200e3, 0.01 }, p;
  ecn_red_scale(&p, &ref, 5e9, 12.5e9);
  CU_ASSERT_DOUBLE_EQUAL(p.kmin_B, 12.5e3, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(ecn_red_probability(&p, 12e3), 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(ecn_red_probability(&p, (p.kmin_B + p.kmax_B) / 2), 0.005, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(ecn_red_probability(&p, 600e3), 1, 0);
}

static void test_pfc_pause_and_resume(void)
{
  struct pfc_params p = { 1, PFC_STATIC, 10e3, 6e3, 0, 0, 65535 };
  struct pfc_pg pg = { 0 };
  CU_ASSERT_EQUAL(pfc_admit(&p, &pg, 4e3, 10e3, 20e3), PFC_ADMIT_SHARED);
  CU_ASSERT_EQUAL(pfc_admit(&p, &pg, 4e3, 10e3, 20e3), PFC_ADMIT_SHARED);
  CU_ASSERT(!pfc_should_pause(&p, &pg, 10e3));
  CU_ASSERT_EQUAL(pfc_admit(&p, &pg, 4e3, 10e3, 20e3), PFC_ADMIT_HEADROOM);
  CU_ASSERT(pfc_should_pause(&p, &pg, 10e3));
  pg.is_xoff = 1;
  pfc_release(&pg, 4e3);
  CU_ASSERT(!pfc_should_resume(&p, &pg, 10e3)); /* 8 KB > XON */
  pfc_release(&pg, 4e3);
  CU_ASSERT(pfc_should_resume(&p, &pg, 10e3));
  /* 400G, 5 m cable (25 ns), MTU 4096: (301 + 10.8) x 400 + 11141 = 135.9 KB */
  CU_ASSERT_DOUBLE_EQUAL(pfc_headroom_mlx5(50e9, 25e-9, 4096), 311.8 * 400 + 2.72 * 4096, 1);
  /* 65535 quanta at 100 Gb/s: 335.5 us */
  CU_ASSERT_DOUBLE_EQUAL(pfc_pause_time_s(&p, 12.5e9), 335.5e-6, 0.1e-6);
  struct pfc_params d = { 1, PFC_DYNAMIC, 0, 0, 0.125, 3e3, 65535 };
  CU_ASSERT_DOUBLE_EQUAL(pfc_xoff(&d, 8e6), 1e6, 1e-6);
}

/* Resume escape (HPCC ns-3 switch-mmu.cc CheckShouldResume): with the buffer nearly full the
 * dynamic XOFF falls under the 3 KB resume offset, so XON is negative; a paused PG whose shared
 * bytes are all gone must still resume, or it stays paused for ever (its PAUSE refreshed while
 * nothing of its own is left to release). */
static void test_pfc_resume_escape(void)
{
  struct pfc_params d = { 1, PFC_DYNAMIC, 0, 0, 0.125, 3e3, 65535 };
  struct pfc_pg pg = { .shared_B = 4096, .headroom_B = 0, .is_xoff = 1 };
  double xoff = pfc_xoff(&d, 16e3); /* 2 KB of free shared buffer x 1/8 */
  CU_ASSERT_DOUBLE_EQUAL(xoff, 2e3, 1e-9);
  CU_ASSERT(pfc_xon(&d, xoff) < 0);
  CU_ASSERT(!pfc_should_resume(&d, &pg, xoff)); /* still holds shared bytes, above XON */
  pfc_release(&pg, 4096);
  CU_ASSERT_DOUBLE_EQUAL(pg.shared_B, 0, 0);
  CU_ASSERT(pfc_should_resume(&d, &pg, xoff)); /* the escape: nothing left in the shared pool */
  pg.headroom_B = 1000;
  CU_ASSERT(!pfc_should_resume(&d, &pg, xoff)); /* but never with headroom in use */
}

/* What can arrive after XOFF (IEEE 802.1Qbb informative headroom annex: two cable delays, the
 * response time and two maximum frames). 400 Gb/s, 100 ns links, 130 ns switch: 50e9 x 330 ns
 * + 2 x 4096 = 24,692 B, above HPCC's 3 x rate x delay = 15 KB, which lost packets; a 10 us link
 * keeps HPCC's larger value. */
static void test_pfc_headroom_inflight(void)
{
  CU_ASSERT_DOUBLE_EQUAL(pfc_headroom_inflight(50e9, 100e-9, 130e-9, 4096), 16500 + 8192, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(pfc_headroom_hpcc(50e9, 100e-9, 130e-9, 4096), 24692, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(pfc_headroom_hpcc(50e9, 10e-6, 130e-9, 4096), 3 * 50e9 * 10e-6, 1e-6);
}

static void test_gbn_nack_once_and_go_back(void)
{
  struct gbn_rx rx;
  struct gbn_tx tx;
  struct gbn_stats s = { 0 };
  gbn_rx_init(&rx);
  gbn_tx_init(&tx);
  CU_ASSERT_EQUAL(gbn_rx_receive(&rx, &s, 0), GBN_ACCEPT);
  CU_ASSERT_EQUAL(gbn_rx_receive(&rx, &s, 2), GBN_NACK); /* PSN 1 lost */
  CU_ASSERT_EQUAL(gbn_rx_receive(&rx, &s, 3), GBN_OUT_OF_ORDER);
  CU_ASSERT_EQUAL(rx.expected_psn, 1);
  CU_ASSERT(gbn_tx_on_nack(&tx, 1, 1e-6, 2e-6));
  CU_ASSERT(!gbn_tx_on_nack(&tx, 1, 1.5e-6, 2.5e-6)); /* an older NACK for a covered PSN */
  CU_ASSERT_EQUAL(gbn_rx_receive(&rx, &s, 1), GBN_ACCEPT);
  CU_ASSERT_EQUAL(gbn_rx_receive(&rx, &s, 1), GBN_DUPLICATE);
  for (uint32_t i = 0; i < 4; i++)
    gbn_tx_on_send(&tx, &s, i, 100);
  gbn_tx_on_send(&tx, &s, 1, 100);
  CU_ASSERT_DOUBLE_EQUAL(s.retransmitted_B, 100, 0);
}

/* Each bad value is refused with the parameter's name, by the parameter layer or by init. */
static void refused(const char *const *cfg, const char *name)
{
  sg_roce_plugin_init();
  struct param_set *ps = fab_param_set_new();
  struct topo *t = fab_topo_single_switch(2, 12.5e9, 1e-6, 300e-9);
  char err[256] = "";
  int failed = 0;
  for (int i = 0; cfg[i] && !failed; i++)
    failed = fab_param_set_cfg(ps, cfg[i], err, sizeof err) != 0;
  if (!failed) {
    struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
    failed = fab == NULL;
    fabric_free(fab);
  }
  fprintf(stderr, "  refused: %s\n", err);
  CU_ASSERT(failed);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, name));
  fab_topo_free(t);
  fab_param_set_free(ps);
}

/* The bytes sent in vain per timeout (roce_loss.h): the timeouts of an expected packet lost again
 * (n P^2 of n P^2 + m P) send the rest of the message, uniform over it, stopped by the timer:
 * half a message when the timer lets a whole one go, L - L^2 / 2M when it stops it first; a
 * message's lost tail sends nothing. */
static void test_gbn_stall_bytes(void)
{
  const double p = 0.02, n = 1000, m = 1, again = n * p * p / (n * p * p + m * p);
  CU_ASSERT_DOUBLE_EQUAL(roce_loss_stall_bytes(p, n, m, 4e6, 50e6), again * 2e6, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(roce_loss_stall_bytes(p, n, m, 100e6, 50e6), again * (50e6 - 50e6 * 50e6 / 200e6), 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(roce_loss_stall_bytes(p, 1, 1000, 4096, 50e6), 1 * p * p / (p * p + 1000 * p) * 2048, 1e-9);
  CU_ASSERT_EQUAL(roce_loss_stall_bytes(0, n, m, 4e6, 50e6), 0);
}

static void test_roce_bad_parameters_refused(void)
{
  refused((const char *const[]){ "roce/ecn-kmin:300KB", "roce/ecn-kmax:200KB", NULL }, "roce/ecn-kmin");
  refused((const char *const[]){ "roce/ecn-pmax:1.5", NULL }, "roce/ecn-pmax");
  refused((const char *const[]){ "roce/pfc-threshold:static", "roce/pfc-xoff:50KB", "roce/pfc-xon:60KB", NULL },
          "roce/pfc-xon");
  refused((const char *const[]){ "roce/pfc-headroom:1000", NULL }, "roce/pfc-headroom");
  refused((const char *const[]){ "roce/dcqcn:fancy", NULL }, "roce/dcqcn");
  refused((const char *const[]){ "roce/dcqcn-rai:fast", NULL }, "roce/dcqcn-rai");
  refused((const char *const[]){ "roce/dcqcn-clamp-target:maybe", NULL }, "roce/dcqcn-clamp-target");
  refused((const char *const[]){ "roce/dcqcn-min-dec-factor:120", NULL }, "roce/dcqcn-min-dec-factor");
  refused((const char *const[]){ "roce/dcqcn-alpha-update:sometimes", NULL }, "roce/dcqcn-alpha-update");
  /* Text parameters with a unit are range-checked when set, like the numeric ones. */
  refused((const char *const[]){ "roce/dcqcn-rai:1e300TBps", NULL }, "roce/dcqcn-rai");
  refused((const char *const[]){ "roce/dcqcn-rhai:1000Tbps", NULL }, "roce/dcqcn-rhai");
  refused((const char *const[]){ "roce/dcqcn-byte-counter:1e300TB", NULL }, "roce/dcqcn-byte-counter");
  refused((const char *const[]){ "roce/dcqcn-timer:2h", NULL }, "roce/dcqcn-timer");
  refused((const char *const[]){ "roce/dcqcn-g:2", NULL }, "roce/dcqcn-g");
  refused((const char *const[]){ "roce/pfc-headroom:-1KB", NULL }, "roce/pfc-headroom");
}

/* The configuration a roce fabric reads from cfg (a NULL-terminated --cfg list) on a two-GPU switch
 * at rate_Bps. */
static struct roce_config config_of(const char *const *cfg, double rate_Bps)
{
  sg_roce_plugin_init();
  struct param_set *ps = fab_param_set_new();
  struct topo *t = fab_topo_single_switch(2, rate_Bps, 1e-6, 300e-9);
  char err[256] = "";
  for (int i = 0; cfg && cfg[i]; i++)
    CU_ASSERT_EQUAL_FATAL(fab_param_set_cfg(ps, cfg[i], err, sizeof err), 0);
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct roce_config c = roce__state(fab)->cfg;
  fabric_free(fab);
  fab_topo_free(t);
  fab_param_set_free(ps);
  return c;
}

/* ConnectX firmware's alpha EWMA (NVIDIA's DCQCN parameter list for ConnectX, MLNX_OFED docs):
 * DCE_TCP_RTT = 1 us is the alpha window and DCE_TCP_G = 1019 keeps 1019/1024 of alpha per
 * window, so a new sample weighs 5/1024. With the former 55 us and 1/256, alpha stayed near 1
 * over an incast and every cut halved the rate; with the firmware's values alpha decays to
 * 1019/1024^100 = 0.61 in 100 us without CNP. */
static void test_dcqcn_nic_alpha_firmware(void)
{
  struct roce_config c = config_of(NULL, 50e9);
  CU_ASSERT_DOUBLE_EQUAL(c.dcqcn.g, 5.0 / 1024, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(c.dcqcn.alpha_interval_s, 1e-6, 1e-15);
  CU_ASSERT_EQUAL(c.dcqcn.alpha_per_window, 1);
  CU_ASSERT_DOUBLE_EQUAL(c.dcqcn.alpha_init, 1023.0 / 1024, 1e-15);
  struct dcqcn_vars v;
  struct dcqcn_stats s = { 0 };
  dcqcn_init(&c.dcqcn, &v, 50e9);
  CU_ASSERT(dcqcn_on_cnp(&c.dcqcn, &v, &s, 0));
  dcqcn_on_alpha_timer(&c.dcqcn, &v); /* the window with the CNP: (1019 alpha + 5) / 1024 */
  double expect = (1019 * (1023.0 / 1024) + 5) / 1024;
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, expect, 1e-12);
  for (int i = 0; i < 100; i++) /* 100 windows (100 us) without CNP */
    dcqcn_on_alpha_timer(&c.dcqcn, &v);
  CU_ASSERT_DOUBLE_EQUAL(v.alpha, expect * pow(1019.0 / 1024, 100), 1e-12);
  CU_ASSERT(v.alpha < 0.62 && v.alpha > 0.60);
}

/* paper-scaled at 400 Gb/s: the SIGCOMM'15 constants (40 GbE) with R_AI, R_HAI and the byte
 * counter times 10, the timers and g unchanged; a user value still wins over the preset. */
static void test_dcqcn_paper_scaled(void)
{
  struct roce_config paper = config_of((const char *const[]){ "roce/dcqcn:paper", NULL }, 50e9);
  struct roce_config scaled = config_of((const char *const[]){ "roce/dcqcn:paper-scaled", NULL }, 50e9);
  CU_ASSERT_DOUBLE_EQUAL(paper.dcqcn.rai_Bps, 40e6 / 8, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn_scale, 10, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.rai_Bps, 400e6 / 8, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.rhai_Bps, 4000e6 / 8, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.byte_counter_B, 100e6, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.timer_s, paper.dcqcn.timer_s, 0);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.alpha_interval_s, paper.dcqcn.alpha_interval_s, 0);
  CU_ASSERT_DOUBLE_EQUAL(scaled.dcqcn.g, paper.dcqcn.g, 0);
  CU_ASSERT_EQUAL(scaled.dcqcn.clamp, paper.dcqcn.clamp);
  CU_ASSERT_EQUAL(scaled.fluid, paper.fluid);
  struct roce_config at40 = config_of((const char *const[]){ "roce/dcqcn:paper-scaled", NULL }, 5e9);
  CU_ASSERT_DOUBLE_EQUAL(at40.dcqcn.rai_Bps, paper.dcqcn.rai_Bps, 1e-6); /* 40 GbE: the paper itself */
  struct roce_config set =
      config_of((const char *const[]){ "roce/dcqcn:paper-scaled", "roce/dcqcn-rai:80Mbps", NULL }, 50e9);
  CU_ASSERT_DOUBLE_EQUAL(set.dcqcn.rai_Bps, 80e6 / 8, 1e-6);
}

/* DCQCN's floor: the mean rate of a reaction point marked on every packet (a CNP at most every
 * roce/cnp-interval, 2 us of feedback). With the ConnectX constants a cut leaves at least half
 * the rate and every 32 KB sent halves the distance to the unclamped target (the line rate): a
 * 100 Gb/s sender sends 1.5 byte-counter periods per 4 us CNP interval and is driven to the
 * 1 Mb/s floor, a 400 Gb/s one sends 6 and keeps over 90% of its rate, so DCQCN alone cannot
 * hold even two 400 Gb/s senders on one port. The paper preset's 10 MB byte counter and 55 us
 * timer recover far more slowly: held at every rate. Without the rate increases (byte counter
 * and timer out of reach) the nic machine at 400 Gb/s falls below 0.1% (not to the 1 Mb/s
 * minimum: its per-window alpha decays between the sparse CNPs of a slow sender, and the cuts
 * with it). */
static void test_dcqcn_floor_rate(void)
{
  const double rates[] = { 12.5e9, 25e9, 50e9, 100e9 };
  double nic[4], paper[4];
  fprintf(stderr, "\n");
  for (int i = 0; i < 4; i++) {
    struct roce_config n = config_of(NULL, rates[i]);
    struct roce_config p = config_of((const char *const[]){ "roce/dcqcn:paper", NULL }, rates[i]);
    nic[i] = roce_dcqcn_floor_fraction(&n.dcqcn, rates[i], 4096, 4178, n.cnp_interval_s, 2e-6);
    paper[i] = roce_dcqcn_floor_fraction(&p.dcqcn, rates[i], 4096, 4178, p.cnp_interval_s, 2e-6);
    fprintf(stderr, "  [floor] %.0f Gb/s: nic %.4f, paper %.4f of the line rate\n", rates[i] * 8e-9, nic[i], paper[i]);
    CU_ASSERT(paper[i] < 0.05);
    CU_ASSERT_DOUBLE_EQUAL(nic[i], roce_dcqcn_floor_fraction(&n.dcqcn, rates[i], 4096, 4178, n.cnp_interval_s, 2e-6),
                           0); /* deterministic */
  }
  CU_ASSERT(nic[0] < 0.02);
  CU_ASSERT(nic[2] > 0.8 && nic[2] <= 1);
  CU_ASSERT(nic[3] > nic[2]);
  struct roce_config slow =
      config_of((const char *const[]){ "roce/dcqcn-byte-counter:100GB", "roce/dcqcn-timer:1s", NULL }, 50e9);
  double floor = roce_dcqcn_floor_fraction(&slow.dcqcn, 50e9, 4096, 4178, slow.cnp_interval_s, 2e-6);
  fprintf(stderr, "  [floor] no increase: %.3g of the line rate (minimum rate %.3g)\n", floor,
          slow.dcqcn.min_rate_Bps / 50e9);
  CU_ASSERT(floor < 1e-3); /* the increases are what keep the 400 Gb/s floor high */
  struct roce_floor_cache cache = { 0 };
  double a = roce_dcqcn_floor_cached(&cache, &slow.dcqcn, 50e9, 4096, 4178, slow.cnp_interval_s, 2e-6);
  double b = roce_dcqcn_floor_cached(&cache, &slow.dcqcn, 50e9, 4096, 4178, slow.cnp_interval_s, 2e-6);
  CU_ASSERT(a == floor && b == floor && cache.n == 1);
}

/* The packet-level measure of a port DCQCN holds (roce_held_port.h), nic preset, 100 Gb/s, 1 us
 * links. Two line-rate senders straight from their NICs (depth 0) keep the port busy ~85% of the
 * time (the upper and trapped states), with most packets marked and their links paused now and
 * then; behind a switch egress each (depth 1) the queues upstream hold more and the port idles
 * less (~94%); a load of 1.5 (two senders at 75 Gb/s) leaves the senders room to recover and the
 * port nearly busy. The same shape measures the same; one for which no platform can be built is
 * refused with its reason. (First phase; the later ones: test_roce_fabric held_port_ages.) */
static void test_held_port_measure_shapes(void)
{
  sg_roce_plugin_init();
  struct param_set *ps = fab_param_set_new();
  struct topo *t = fab_topo_single_switch(2, G100_Bps, 1e-6, 300e-9);
  char err[256] = "";
  struct fabric *fab = fabric_new(t, ps, roce_model(), FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct roce_held_shape two = { .rate_Bps = G100_Bps, .latency_s = 1e-6, .load = 2, .senders = 2, .ports = 1 };
  struct roce_held_shape behind = two, light = two;
  behind.depth = 1;
  light.load = 1.5;
  struct roce_held_profile a, a2, b, c;
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, &two, &a, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, &two, &a2, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, &behind, &b, err, sizeof err), 0);
  CU_ASSERT_EQUAL_FATAL(roce_held_measure(fab, &light, &c, err, sizeof err), 0);
  fprintf(stderr,
          "\n  [held port] 2 senders: utilisation %.4f, marks/packet %.3f, CNPs %.0f/s, paused %.4f; behind a "
          "switch %.4f; load 1.5 %.4f\n",
          a.phase[0].utilisation, a.phase[0].marked_fraction, a.phase[0].cnps_per_flow_s, a.phase[0].paused_fraction,
          b.phase[0].utilisation, c.phase[0].utilisation);
  CU_ASSERT(a.phase[0].utilisation > 0.8 && a.phase[0].utilisation < 0.9);
  CU_ASSERT(a.phase[0].marked_fraction > 0.8 && a.phase[0].cnps_per_flow_s > 0 && a.phase[0].cuts_per_flow_s > 0 &&
            a.phase[0].paused_fraction > 0);
  CU_ASSERT(memcmp(&a, &a2, sizeof a) == 0); /* deterministic */
  CU_ASSERT(b.phase[0].utilisation > a.phase[0].utilisation + 0.04);
  CU_ASSERT(c.phase[0].utilisation > 0.98);
  /* a shape no platform can be built for (links of no rate) is refused with a reason */
  struct roce_held_shape none = two;
  none.rate_Bps = 0;
  err[0] = 0;
  CU_ASSERT_EQUAL(roce_held_measure(fab, &none, &c, err, sizeof err), -1);
  CU_ASSERT(err[0] != 0);
  fabric_free(fab);
  fab_topo_free(t);
  fab_param_set_free(ps);
}

/* A QP's reaction point carries over to its next transfer (roce_rp.h): the state a transfer
 * leaves below line rate comes back with the expiries of the idle time applied as the timers
 * would have fired them one by one (the alpha windows of 1 us in bulk), once; a QP that ended
 * at line rate, or recovered to it while idle, gives its next transfer a fresh reaction point. */
static void one_by_one(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf, double now)
{
  for (;;) {
    if (rf->alpha_armed && rf->alpha_due_s <= now && (!rf->rate_armed || rf->alpha_due_s <= rf->rate_due_s))
      roce_rp_alpha_expiry(p, rf);
    else if (rf->rate_armed && rf->rate_due_s <= now)
      roce_rp_rate_expiry(p, s, rf);
    else
      break;
  }
}

static void cut_flow(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf, double now)
{
  memset(rf, 0, sizeof *rf);
  dcqcn_init(p, &rf->cc, 50e9);
  CU_ASSERT_FATAL(roce_rp_cut(p, s, rf, now));
  rf->alpha_armed = rf->rate_armed = 1; /* as the packet model arms them after a cut */
}

static void test_qp_rp_carries_over(void)
{
  struct roce_config c = config_of(NULL, 50e9);
  const struct dcqcn_params *p = &c.dcqcn;
  struct dcqcn_stats s = { 0 };
  struct roce_qp_rps m = { 0 };
  struct roce_flow a, ref, b;
  cut_flow(p, &s, &a, 0);
  roce_rp_cut(p, &s, &a, 5.5e-6); /* a second cut 5.5 us later (dates off the 1 us windows') */
  roce_qp_rp_save(&m, 7, &a);
  ref = a;
  one_by_one(p, &s, &ref, 650.5e-6); /* rate expiries at 305.5 and 605.5 us, 650 alpha windows */
  memset(&b, 0, sizeof b);
  dcqcn_init(p, &b.cc, 50e9);
  CU_ASSERT_EQUAL(roce_qp_rp_restore(&m, 7, p, &s, &b, 650.5e-6), 1);
  CU_ASSERT_EQUAL(b.cc.timer_count, 2);
  CU_ASSERT_EQUAL(b.cc.timer_count, ref.cc.timer_count);
  CU_ASSERT_DOUBLE_EQUAL(b.cc.rc_Bps, ref.cc.rc_Bps, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(b.cc.rt_Bps, ref.cc.rt_Bps, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(b.cc.alpha, ref.cc.alpha, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(b.rate_due_s, 905.5e-6, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(b.alpha_due_s, 651e-6, 1e-12);
  CU_ASSERT(b.cc.rc_Bps < 0.9 * 50e9); /* still limited */
  memset(&b, 0, sizeof b);
  dcqcn_init(p, &b.cc, 50e9);
  CU_ASSERT_EQUAL(roce_qp_rp_restore(&m, 7, p, &s, &b, 700e-6), 0); /* taken over once */
  CU_ASSERT_EQUAL(roce_qp_rp_restore(&m, 8, p, &s, &b, 700e-6), 0); /* a QP never seen */
  CU_ASSERT_DOUBLE_EQUAL(b.cc.rc_Bps, 50e9, 1e-3);
  /* recovered while idle (1 s): released, a fresh reaction point */
  cut_flow(p, &s, &a, 0);
  roce_qp_rp_save(&m, 9, &a);
  CU_ASSERT_EQUAL(roce_qp_rp_restore(&m, 9, p, &s, &b, 1.0), 0);
  CU_ASSERT_DOUBLE_EQUAL(b.cc.rc_Bps, 50e9, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(b.cc.alpha, p->alpha_init, 1e-15);
  CU_ASSERT_EQUAL(b.rate_armed, 0);
  /* a transfer that ended at line rate leaves nothing; many QPs (the table grows) */
  memset(&a, 0, sizeof a);
  dcqcn_init(p, &a.cc, 50e9);
  roce_qp_rp_save(&m, 10, &a);
  CU_ASSERT_EQUAL(roce_qp_rp_restore(&m, 10, p, &s, &b, 1e-6), 0);
  for (uint64_t k = 100; k < 3100; k++) {
    cut_flow(p, &s, &a, 0);
    roce_qp_rp_save(&m, k, &a);
  }
  int restored = 0;
  for (uint64_t k = 100; k < 3100; k++) {
    memset(&b, 0, sizeof b);
    dcqcn_init(p, &b.cc, 50e9);
    restored += roce_qp_rp_restore(&m, k, p, &s, &b, 10e-6);
  }
  CU_ASSERT_EQUAL(restored, 3000);
  roce_qp_rps_free(&m);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "roce_units";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "dcqcn_cut_and_recovery", test_dcqcn_cut_and_recovery },
  { "dcqcn_firmware_clamp", test_dcqcn_firmware_clamp },
  { "ecn_red_profile", test_ecn_red_profile },
  { "pfc_pause_and_resume", test_pfc_pause_and_resume },
  { "pfc_resume_escape", test_pfc_resume_escape },
  { "pfc_headroom_inflight", test_pfc_headroom_inflight },
  { "gbn_nack_once_and_go_back", test_gbn_nack_once_and_go_back },
  { "gbn_stall_bytes", test_gbn_stall_bytes },
  { "roce_bad_parameters_refused", test_roce_bad_parameters_refused },
  { "dcqcn_nic_alpha_firmware", test_dcqcn_nic_alpha_firmware },
  { "dcqcn_paper_scaled", test_dcqcn_paper_scaled },
  { "dcqcn_floor_rate", test_dcqcn_floor_rate },
  { "held_port_measure_shapes", test_held_port_measure_shapes },
  { "qp_rp_carries_over", test_qp_rp_carries_over },
  { NULL, NULL },
};
