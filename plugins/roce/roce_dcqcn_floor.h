/* DCQCN's floor rate: the mean rate a reaction point keeps when every packet it sends is marked
 * (the switch queue above Kmax, RED's p = 1), the most that congestion control can slow it.
 *
 * It decides, at flow fidelity, whether DCQCN holds a congested port: if the flows crossing a
 * switch egress still bring more than its capacity when each sends at its floor rate, no
 * amount of marking drains the queue, which climbs to PFC's XOFF, and the port is governed by
 * PFC (FIFO service and pause spreading, roce_fifo.c and roce_spread.c), as without congestion
 * control. Otherwise DCQCN holds the queue within the RED band and the port is shared as the
 * CoNEXT'16 fixed point shares it, max-min.
 *
 * Why a floor and not a fixed point: with ConnectX's firmware constants (byte counter 32 KB,
 * one fast-recovery step, no target clamp after a cut, a cut at most every 4 us) a 400 Gb/s
 * sender sends ~6 byte-counter periods between two CNPs, each halving its distance to the line
 * rate, and keeps ~93% of it under continuous marking; at 100 Gb/s it keeps under 1% (docs/roce.md,
 * "DCQCN's floor rate"). */
#ifndef SGFABRIC_ROCE_DCQCN_FLOOR_H
#define SGFABRIC_ROCE_DCQCN_FLOOR_H

#include "dcqcn.h"

/* The mean sending rate, as a fraction of the line rate line_Bps, of one reaction point that
 * receives a CNP for every packet it sends (payload_B of payload, wire_B on the wire), at most
 * one per cnp_interval_s (0: every packet), feedback_s after the packet left. The packet model's
 * own rate machine and timers (dcqcn.c, roce_rp.c) run for a fixed span of simulated time; the
 * mean is taken over its second half. Deterministic, and cheap: at most 4 million packets, a few
 * 10^5 with the shipped presets. */
double roce_dcqcn_floor_fraction(const struct dcqcn_params *p, double line_Bps, double payload_B, double wire_B,
                                 double cnp_interval_s, double feedback_s);

/* The fractions a run needs, one per (line rate, feedback delay): a fabric has few of each (one
 * NIC rate, one delay per path length). */
struct roce_floor_cache {
  struct {
    double line_Bps, feedback_s, fraction;
  } entry[32];
  int n;
};

double roce_dcqcn_floor_cached(struct roce_floor_cache *cache, const struct dcqcn_params *p, double line_Bps,
                               double payload_B, double wire_B, double cnp_interval_s, double feedback_s);

#endif
