/* The traces of roce/trace-flow and roce/trace-port: rows of a series sampled at most once per
 * roce/trace-interval, written out by roce_model.c at the end of the run. Both fidelities and the
 * fluid model add rows here, below the files that decide what to trace. */
#include "roce_internal.h"
#include "check.h"

void roce__series_add(struct roce_series *s, double t, double a, double b, double c, double interval)
{
  if (s->n > 0 && t - s->last_s < interval)
    return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->rows = sgf_xrealloc(s->rows, s->cap * sizeof *s->rows);
  }
  s->rows[s->n++] = (struct roce_trace_row){ t, a, b, c };
  s->last_s = t;
}

/* roce/trace-flow: the reaction point's state now, if rf is the flow traced (at flow fidelity
 * the fluid model calls it after each step). The parameter is tested first: it is on the
 * per-packet and per-step paths, and untraced runs then read no flow. */
void roce__trace_flow(struct fabric *fab, const struct roce_flow *rf)
{
  struct roce_state *rs = roce__state(fab);
  if (rs->cfg.trace_flow >= 0 && rf->flow->parent == NULL && (long)rf->flow->id == rs->cfg.trace_flow)
    roce__series_add(&rs->flow_series, fab->now, rf->cc.rc_Bps, rf->cc.rt_Bps, rf->cc.alpha, rs->cfg.trace_interval_s);
}
