/* RED-style ECN marking of ecn_red.h. */
#include "ecn_red.h"

void ecn_red_scale(struct ecn_red_params *out, const struct ecn_red_params *ref, double ref_rate_Bps, double rate_Bps)
{
  double k = ref_rate_Bps > 0 ? rate_Bps / ref_rate_Bps : 1;
  out->kmin_B = ref->kmin_B * k;
  out->kmax_B = ref->kmax_B * k;
  out->pmax = ref->pmax;
}

double ecn_red_probability(const struct ecn_red_params *p, double queue_B)
{
  if (queue_B <= p->kmin_B)
    return 0;
  if (queue_B > p->kmax_B)
    return 1;
  return p->pmax * (queue_B - p->kmin_B) / (p->kmax_B - p->kmin_B);
}

int ecn_red_mark(const struct ecn_red_params *p, struct ecn_stats *s, double queue_B, double u)
{
  if (queue_B > p->kmax_B) {
    s->marked_forced++;
    return 1;
  }
  if (u < ecn_red_probability(p, queue_B)) {
    s->marked_prob++;
    return 1;
  }
  return 0;
}
