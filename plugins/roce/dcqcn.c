/* DCQCN reaction point: the rate machine of dcqcn.h. */
#include "dcqcn.h"

#include <math.h>

static double clamp_rate(const struct dcqcn_params *p, const struct dcqcn_vars *v, double r)
{
  if (r > v->line_Bps)
    r = v->line_Bps;
  if (r < p->min_rate_Bps)
    r = p->min_rate_Bps;
  return r;
}

void dcqcn_init(const struct dcqcn_params *p, struct dcqcn_vars *v, double line_Bps)
{
  v->line_Bps = line_Bps;
  v->rc_Bps = line_Bps;
  v->rt_Bps = line_Bps;
  v->alpha = p->alpha_init;
  v->last_cut_s = -1;
  v->bytes_acc = 0;
  v->timer_count = 0;
  v->byte_count = 0;
  v->cnp_in_window = 0;
}

int dcqcn_on_cnp(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s, double now)
{
  s->cnps++;
  /* Per-window alpha (firmware): every CNP, cut or not, counts toward the window's update, and
   * the cut uses alpha as the last window left it. */
  if (p->alpha_per_window)
    v->cnp_in_window = 1;
  if (v->last_cut_s >= 0 && now - v->last_cut_s < p->dec_interval_s) {
    s->cuts_skipped++;
    return 0;
  }
  if (p->clamp == DCQCN_CLAMP_ALWAYS || (p->clamp == DCQCN_CLAMP_AFTER_TIMER && v->timer_count > 0))
    v->rt_Bps = v->rc_Bps;
  double factor = 1 - v->alpha / 2;
  if (factor < p->min_dec_factor) /* RPG_MIN_DEC_FAC: the deepest single cut */
    factor = p->min_dec_factor;
  v->rc_Bps = clamp_rate(p, v, v->rc_Bps * factor);
  if (!p->alpha_per_window)
    v->alpha = (1 - p->g) * v->alpha + p->g;
  v->last_cut_s = now;
  v->timer_count = 0;
  v->byte_count = 0;
  v->bytes_acc = 0;
  s->cuts++;
  return 1;
}

void dcqcn_on_alpha_timer(const struct dcqcn_params *p, struct dcqcn_vars *v)
{
  v->alpha = (1 - p->g) * v->alpha + (v->cnp_in_window ? p->g : 0);
  v->cnp_in_window = 0;
}

static void increase(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s)
{
  int hi = v->timer_count > v->byte_count ? v->timer_count : v->byte_count;
  int lo = v->timer_count < v->byte_count ? v->timer_count : v->byte_count;
  if (hi <= p->fast_recovery) { /* the first F events after a cut (QCN: F cycles of fast recovery) */
    s->fast_recovery++;
  } else if (lo > p->fast_recovery) {
    v->rt_Bps = clamp_rate(p, v, v->rt_Bps + (lo - p->fast_recovery) * p->rhai_Bps);
    s->hyper++;
  } else {
    v->rt_Bps = clamp_rate(p, v, v->rt_Bps + p->rai_Bps);
    s->additive++;
  }
  v->rc_Bps = clamp_rate(p, v, (v->rt_Bps + v->rc_Bps) / 2);
}

void dcqcn_on_rate_timer(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s)
{
  v->timer_count++;
  increase(p, v, s);
}

int dcqcn_on_bytes(const struct dcqcn_params *p, struct dcqcn_vars *v, struct dcqcn_stats *s, double bytes)
{
  int steps = 0;
  v->bytes_acc += bytes;
  while (p->byte_counter_B > 0 && v->bytes_acc >= p->byte_counter_B) {
    v->bytes_acc -= p->byte_counter_B;
    v->byte_count++;
    increase(p, v, s);
    steps++;
  }
  return steps;
}

int dcqcn_is_at_line_rate(const struct dcqcn_vars *v)
{
  return v->rc_Bps >= v->line_Bps * (1 - 1e-9) && v->rt_Bps >= v->line_Bps * (1 - 1e-9);
}

double dcqcn_fixed_point_p(const struct dcqcn_params *p, int n_flows, double capacity_Bps, double packet_B)
{
  double n = n_flows, c = capacity_Bps / packet_B, rai = p->rai_Bps / packet_B, b = p->byte_counter_B / packet_B;
  double term = 1 / b + n / (p->timer_s * c);
  return cbrt(rai * n * n / (p->alpha_interval_s * c * c) * term * term);
}
