/* DCQCN reaction point of a RoCE flow: timers around the rate machine (roce_rp.h). */
#include "roce_rp.h"

#include <math.h>

#include "roce_internal.h"

int roce_rp_cut(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf, double now)
{
  /* An idle alpha timer (the flow was at line rate) still decayed alpha meanwhile. */
  if (!rf->alpha_armed && rf->alpha_due_s > 0 && now > rf->alpha_due_s)
    rf->cc.alpha *= pow(1 - p->g, floor((now - rf->alpha_due_s) / p->alpha_interval_s) + 1);
  if (!dcqcn_on_cnp(p, &rf->cc, s, now))
    return 0;
  /* Per-CNP alpha decays tau' after the last cut; per-window alpha (firmware) keeps its period
   * and only starts it when the timer was idle. */
  if (!p->alpha_per_window || !rf->alpha_armed)
    rf->alpha_due_s = now + p->alpha_interval_s;
  rf->rate_due_s = now + p->timer_s;
  return 1;
}

void roce_rp_alpha_expiry(const struct dcqcn_params *p, struct roce_flow *rf)
{
  dcqcn_on_alpha_timer(p, &rf->cc);
  rf->alpha_due_s += p->alpha_interval_s;
  rf->alpha_armed = !dcqcn_is_at_line_rate(&rf->cc);
}

int roce_rp_rate_expiry(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf)
{
  int raise = !dcqcn_is_at_line_rate(&rf->cc);
  if (raise)
    dcqcn_on_rate_timer(p, &rf->cc, s);
  rf->rate_due_s += p->timer_s;
  rf->rate_armed = !dcqcn_is_at_line_rate(&rf->cc);
  return raise;
}
