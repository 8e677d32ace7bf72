/* DCQCN reaction point (RP): the sender's rate machine (Zhu et al., "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015, section 3.1; restated in the CoNEXT'16 text
 * dcqcn-protocol.tex).
 *
 * On a CNP (at most one cut per dec_interval_s):
 *     RT <- RC;  RC <- RC (1 - alpha/2);  alpha <- (1 - g) alpha + g
 * Every alpha_interval_s without a CNP:  alpha <- (1 - g) alpha
 * ConnectX firmware variants (mlxconfig ROCE_CC parameter defaults; the same semantics as the HPCC ns-3
 * "Mellanox DCQCN" of rdma-hw.cc), selected by the parameters below, zero meaning the paper:
 *  - target clamp (CLAMP_TGT_RATE, CLAMP_TGT_RATE_AFTER_TIME_INC): RT <- RC at every cut (the
 *    paper, CLAMP_TGT_RATE = 1), only at a cut preceded by a timer-driven increase since the
 *    previous cut (firmware default 0/1: back-to-back cuts keep RT where the last recovery had
 *    it, so fast recovery (RT + RC)/2 climbs back at once), or never;
 *  - RPG_MIN_DEC_FAC: one cut leaves at least this percentage of RC;
 *  - alpha per window: alpha <- (1 - g) alpha + g once per alpha_interval_s in which a CNP
 *    arrived, (1 - g) alpha otherwise (firmware and HPCC UpdateAlphaMlx), instead of per CNP.
 * Rate increase, QCN style, on each expiry of the timer T and each B bytes sent (counters reset
 * by a cut); timer and bytes count the expiries since the cut, the current one included, so the
 * first F events after a cut are fast-recovery steps:
 *     max(timer, bytes) <= F         fast recovery   RC <- (RT + RC) / 2
 *     min(timer, bytes) > F          hyper increase  RT += i R_HAI (i = min - F);  RC <- (RT + RC)/2
 *     otherwise                      additive        RT += R_AI;  RC <- (RT + RC) / 2
 * RC and RT stay within [min_rate, line rate]; a flow starts at line rate (no slow start).
 *
 * Pure C: the caller owns the timers and the clock; the functions return what changed. */
#ifndef SGFABRIC_DCQCN_H
#define SGFABRIC_DCQCN_H

#include <stdint.h>

struct dcqcn_params {
  double g;                /* alpha EWMA gain */
  double alpha_init;       /* alpha of a new flow */
  double alpha_interval_s; /* tau': alpha decays once per interval without CNP */
  double timer_s;          /* T: rate-increase timer */
  double byte_counter_B;   /* B: rate-increase byte counter */
  int fast_recovery;       /* F: fast-recovery steps */
  double rai_Bps;          /* R_AI: additive increase step */
  double rhai_Bps;         /* R_HAI: hyper increase step */
  double min_rate_Bps;     /* floor of RC */
  double dec_interval_s;   /* at most one rate cut per interval (0: every CNP cuts) */
  int clamp;               /* enum dcqcn_clamp: when a cut sets RT <- RC */
  double min_dec_factor;   /* a cut leaves at least this fraction of RC (0: no bound) */
  int alpha_per_window;    /* 1: alpha rises once per alpha_interval_s with a CNP (firmware) */
};

enum dcqcn_clamp {
  DCQCN_CLAMP_ALWAYS = 0,      /* SIGCOMM'15: RT <- RC at every cut (CLAMP_TGT_RATE = 1) */
  DCQCN_CLAMP_AFTER_TIMER = 1, /* only after a timer increase since the last cut (firmware 0/1) */
  DCQCN_CLAMP_NEVER = 2,       /* RT is never lowered by a cut (CLAMP_TGT_RATE = 0, ..._TIME_INC = 0) */
};

struct dcqcn_vars {
  double line_Bps;   /* NIC line rate */
  double rc_Bps;     /* current rate */
  double rt_Bps;     /* target rate */
  double alpha;      /* congestion estimate */
  double last_cut_s; /* date of the last cut (-1: none) */
  double bytes_acc;  /* bytes sent since the byte counter last expired */
  int timer_count;   /* timer expiries since the last cut */
  int byte_count;    /* byte-counter expiries since the last cut */
  int cnp_in_window; /* alpha per window: a CNP arrived in the current alpha window */
};

struct dcqcn_stats {
  uint64_t cnps;          /* CNPs received */
  uint64_t cuts;          /* rate cuts applied */
  uint64_t cuts_skipped;  /* CNPs within dec_interval of a cut */
  uint64_t fast_recovery; /* fast-recovery steps */
  uint64_t additive;      /* additive-increase steps */
  uint64_t hyper;         /* hyper-increase steps */
};

void dcqcn_init(const struct dcqcn_params *p, struct dcqcn_vars *v, double line_Bps);
/* A CNP arrived at date now; returns 1 if the rate was cut. */
int dcqcn_on_cnp(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s, double now);
/* tau' passed without CNP (per-CNP alpha), or an alpha window ended (per-window alpha). */
void dcqcn_on_alpha_timer(const struct dcqcn_params *p, struct dcqcn_vars *v);
/* The rate-increase timer T expired. */
void dcqcn_on_rate_timer(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s);
/* bytes were sent; returns the number of increase steps the byte counter triggered. */
int dcqcn_on_bytes(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s, double bytes);
/* Whether the flow is back at line rate with nothing left to recover. */
int dcqcn_is_at_line_rate(const struct dcqcn_vars *v);

/* CoNEXT'16 fluid model fixed point for N flows at a bottleneck of capacity C (section 4):
 * p* = cbrt(R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2), with rates in packets/s and B in packets
 * (p is a per-packet probability), here converted from bytes with the packet size. */
double dcqcn_fixed_point_p(const struct dcqcn_params *p, int n_flows, double capacity_Bps, double packet_B);

#endif
