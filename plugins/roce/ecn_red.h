/* ECN marking at a switch egress queue, RED style (RFC 3168 CE codepoint; DCQCN's CP,
 * Zhu et al. SIGCOMM'15 section 3.1, as Linux include/net/red.h without averaging):
 *     p(q) = 0                               q <= Kmin
 *     p(q) = Pmax (q - Kmin) / (Kmax - Kmin)  Kmin < q <= Kmax
 *     p(q) = 1                               q > Kmax
 * q is the instantaneous egress queue of the packet's priority, sampled at dequeue (HPCC ns-3
 * switch-node.cc marks at dequeue). Kmin/Kmax scale linearly with the port rate. */
#ifndef SGFABRIC_ECN_RED_H
#define SGFABRIC_ECN_RED_H

#include <stdint.h>

struct ecn_red_params {
  double kmin_B; /* no marking at or below */
  double kmax_B; /* mark everything above */
  double pmax;   /* probability at Kmax */
};

struct ecn_stats {
  uint64_t marked_prob;   /* marked in the linear region */
  uint64_t marked_forced; /* marked above Kmax */
};

/* Parameters of a port of rate rate_Bps from thresholds given at ref_rate_Bps. */
void ecn_red_scale(struct ecn_red_params *out, const struct ecn_red_params *ref, double ref_rate_Bps, double rate_Bps);
double ecn_red_probability(const struct ecn_red_params *p, double queue_B);
/* Decides with the uniform draw u in [0,1); returns 1 to mark. */
int ecn_red_mark(const struct ecn_red_params *p, struct ecn_stats *s, double queue_B, double u);

#endif
