/* DCQCN reaction point of a RoCE flow: timers around the rate machine (roce_rp.h). */
#include "roce_rp.h"

#include <math.h>
#include <stdlib.h>

#include "check.h"
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

static struct roce_qp_rp *qp_slot(struct roce_qp_rps *m, uint64_t key, int insert)
{
  if (insert && (m->n + 1) * 2 > m->cap) {
    struct roce_qp_rps grown = { .cap = m->cap ? m->cap * 2 : 1024 };
    grown.slots = sgf_xcalloc(grown.cap, sizeof *grown.slots);
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].used)
        *qp_slot(&grown, m->slots[i].key, 1) = m->slots[i];
    grown.n = m->n;
    free(m->slots);
    *m = grown;
  }
  if (m->cap == 0)
    return NULL;
  size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
  while (m->slots[i].used && m->slots[i].key != key)
    i = (i + 1) & (m->cap - 1);
  if (!m->slots[i].used && !insert)
    return NULL;
  return &m->slots[i];
}

void roce_qp_rp_save(struct roce_qp_rps *m, uint64_t key, const struct roce_flow *rf)
{
  int at_line = dcqcn_is_at_line_rate(&rf->cc);
  struct roce_qp_rp *e = qp_slot(m, key, !at_line);
  if (e == NULL)
    return;
  if (!e->used) {
    e->used = 1;
    e->key = key;
    m->n++;
  }
  e->cc = rf->cc;
  e->alpha_due_s = rf->alpha_due_s;
  e->rate_due_s = rf->rate_due_s;
  e->left = !at_line;
}

int roce_qp_rp_restore(struct roce_qp_rps *m, uint64_t key, const struct dcqcn_params *p, struct dcqcn_stats *s,
                       struct roce_flow *rf, double now)
{
  struct roce_qp_rp *e = qp_slot(m, key, 0);
  if (e == NULL || !e->left)
    return 0;
  double line_Bps = rf->cc.line_Bps;
  rf->cc = e->cc;
  rf->cc.line_Bps = line_Bps;
  rf->alpha_due_s = e->alpha_due_s;
  rf->rate_due_s = e->rate_due_s;
  rf->alpha_armed = rf->rate_armed = 1;
  /* The expiries of the idle time in date order; a run of alpha expiries before the next rate
   * expiry decays alpha at once (one expiry first, which closes a window that saw a CNP). */
  for (;;) {
    int alpha_next =
        rf->alpha_armed && rf->alpha_due_s <= now && (!rf->rate_armed || rf->alpha_due_s <= rf->rate_due_s);
    if (alpha_next) {
      roce_rp_alpha_expiry(p, rf);
      double until = rf->rate_armed && rf->rate_due_s < now ? rf->rate_due_s : now;
      if (rf->alpha_armed && rf->alpha_due_s <= until) {
        double k = floor((until - rf->alpha_due_s) / p->alpha_interval_s) + 1;
        rf->cc.alpha *= pow(1 - p->g, k);
        rf->alpha_due_s += k * p->alpha_interval_s;
      }
    } else if (rf->rate_armed && rf->rate_due_s <= now) {
      roce_rp_rate_expiry(p, s, rf);
    } else {
      break;
    }
  }
  e->left = 0;                          /* taken over: the QP's state lives in rf until it ends */
  if (dcqcn_is_at_line_rate(&rf->cc)) { /* recovered while idle: the limiter was released */
    dcqcn_init(p, &rf->cc, line_Bps);
    rf->alpha_due_s = rf->rate_due_s = 0;
    rf->alpha_armed = rf->rate_armed = 0;
    return 0;
  }
  return 1;
}

void roce_qp_rps_free(struct roce_qp_rps *m)
{
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}
