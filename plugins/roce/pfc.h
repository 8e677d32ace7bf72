/* Priority flow control (IEEE 802.1Qbb) at a switch ingress: per (ingress port, priority) group
 * accounting in a shared buffer, the XOFF/XON decision and the in-flight headroom.
 *
 * A packet arriving on an ingress PG is admitted to the shared pool while the PG holds less than
 * the XOFF threshold, then to the PG's headroom (bytes still arriving after PAUSE was sent), and
 * dropped beyond both (a misconfiguration: lossless needs headroom >= in-flight bytes). The PG
 * sends PAUSE when it uses headroom or its shared bytes reach XOFF, and RESUME once its headroom
 * is empty and its shared bytes are at or below XON, or it has no shared byte left (the escape
 * for an XON below zero).
 *   static:  XOFF and XON are fixed byte counts;
 *   dynamic: XOFF = alpha x (buffer - total headroom - shared used) (Choudhury-Hahne dynamic
 *            threshold as in the HPCC ns-3 switch-mmu.cc), XON = XOFF - resume offset.
 * Headroom per port (Linux mlx5e commit 0696d60853d5, "net/mlx5e: Receive buffer configuration";
 * the HPCC ns-3 simulator's 3 x rate x delay):
 *   mlx5:  (301 + 2.16 cable_m) x speed_Gbps + 2.72 MTU bytes (Linux mlx5e, commit 0696d60853d5),
 *          cable length from the propagation delay at 5 ns/m;
 *   hpcc:  3 x rate x link delay (HPCC ns-3 third.cc), but never less than what can arrive after
 *          the PG sent XOFF: the bytes on the link (one delay), those the upstream port sends while
 *          the PAUSE travels (one more delay), its response time, and two maximum frames (the one
 *          being sent when the PAUSE lands is not preempted, and the one that crossed XOFF)
 *          (IEEE 802.1Qbb informative annex on headroom: D-Max-Frame, D-Cable x 2, D-Resp; the
 *          same terms as the vendors' headroom formulas, e.g. Linux mlx5e). 3 x rate x delay
 *          alone lost packets: 15 KB at 400 Gb/s over 100 ns is under four 4 KB frames.
 * A PAUSE carries quanta of 512 bit times; the receiver of a PAUSE stops for quanta x 512 / rate
 * unless refreshed or resumed (XON is a PAUSE with quanta 0). */
#ifndef SGFABRIC_PFC_H
#define SGFABRIC_PFC_H

#include <stdint.h>

enum pfc_threshold_kind { PFC_STATIC = 0, PFC_DYNAMIC = 1 };
enum pfc_admit { PFC_ADMIT_DROP = 0, PFC_ADMIT_SHARED = 1, PFC_ADMIT_HEADROOM = 2 };

struct pfc_params {
  int enabled;            /* 0: lossy, a full buffer drops */
  int kind;               /* enum pfc_threshold_kind */
  double xoff_B, xon_B;   /* static thresholds */
  double alpha;           /* dynamic threshold factor */
  double resume_offset_B; /* dynamic: XON = XOFF - offset */
  double quanta;          /* pause quanta in a PAUSE frame (512 bit times each) */
};

struct pfc_pg {
  double shared_B;   /* bytes held in the shared pool */
  double headroom_B; /* bytes held in headroom */
  uint8_t is_xoff;   /* PAUSE sent and not resumed */
};

struct pfc_stats {
  uint64_t pause_sent;        /* PAUSE frames, refreshes included */
  uint64_t resume_sent;       /* XON frames */
  uint64_t headroom_overflow; /* drops with PFC on: headroom too small */
};

/* XOFF for a PG given the shared pool's free bytes. */
double pfc_xoff(const struct pfc_params *p, double shared_free_B);
/* The XOFF each of k PGs sits at when all k sit at it, given the shared pool's free bytes when
 * empty: dynamic thresholds X = alpha (free - k X), so alpha free / (1 + k alpha); static ones
 * fixed (the steady state a congestion tree's PGs reach, roce_spread.c). */
double pfc_xoff_of_k(const struct pfc_params *p, double shared_free_B, double k);
double pfc_xon(const struct pfc_params *p, double xoff_B);
/* Where a packet of bytes goes; updates the PG. */
enum pfc_admit pfc_admit(const struct pfc_params *p, struct pfc_pg *pg, double bytes, double xoff_B,
                         double headroom_size_B);
/* A packet left the buffer: headroom drains first. Returns the bytes taken from the shared pool. */
double pfc_release(struct pfc_pg *pg, double bytes);
int pfc_should_pause(const struct pfc_params *p, const struct pfc_pg *pg, double xoff_B);
int pfc_should_resume(const struct pfc_params *p, const struct pfc_pg *pg, double xoff_B);
/* Duration of a PAUSE of p->quanta at rate_Bps. */
double pfc_pause_time_s(const struct pfc_params *p, double rate_Bps);
double pfc_headroom_mlx5(double rate_Bps, double latency_s, double mtu_B);
/* What can arrive after XOFF: rate x (2 delay + response) + 2 frames. */
double pfc_headroom_inflight(double rate_Bps, double latency_s, double response_s, double frame_B);
/* max(3 x rate x delay, pfc_headroom_inflight). */
double pfc_headroom_hpcc(double rate_Bps, double latency_s, double response_s, double frame_B);

#endif
