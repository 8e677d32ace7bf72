/* RoCEv2 at flow fidelity: estimates of marks, CNPs, cuts and paused time (roce_flow_est.h). */
#include "roce_flow_est.h"

#include <math.h>
#include <stdlib.h>

#include "roce_internal.h"

int roce_est_init(struct roce_est *e, int n_ports)
{
  e->port_marks = calloc((size_t)n_ports + 1, sizeof(double));
  e->port_paused_s = calloc((size_t)n_ports + 1, sizeof(double));
  e->spread.fraction = calloc((size_t)n_ports + 1, sizeof(double));
  e->spread.since_s = calloc((size_t)n_ports + 1, sizeof(double));
  e->port_held = calloc((size_t)n_ports + 1, 1);
  e->port_held_now = calloc((size_t)n_ports + 1, 1);
  e->port_held_since_s = calloc((size_t)n_ports + 1, sizeof(double));
  e->port_held_s = calloc((size_t)n_ports + 1, sizeof(double));
  e->held_feed.fraction = calloc((size_t)n_ports + 1, sizeof(double));
  e->held_feed.since_s = calloc((size_t)n_ports + 1, sizeof(double));
  e->port_pause_want = calloc((size_t)n_ports + 1, sizeof(double));
  return e->port_marks && e->port_paused_s && e->spread.fraction && e->spread.since_s && e->port_held &&
                 e->port_held_now && e->port_held_since_s && e->port_held_s && e->held_feed.fraction &&
                 e->held_feed.since_s && e->port_pause_want
             ? 0
             : -1;
}

void roce_est_fini(struct roce_est *e)
{
  free(e->port_marks);
  free(e->port_paused_s);
  free(e->spread.fraction);
  free(e->spread.since_s);
  free(e->port_held);
  free(e->port_held_now);
  free(e->port_held_since_s);
  free(e->port_held_s);
  free(e->held_feed.fraction);
  free(e->held_feed.since_s);
  free(e->port_pause_want);
}

/* The flow's rates since its last update, up to now. */
static void flow_accumulate(struct roce_est *e, const struct fab_flow *f, struct roce_est_flow *ef, double now)
{
  double dt = now - ef->since_s;
  ef->since_s = now;
  if (dt <= 0 || (ef->marked_mask == 0 && ef->held_mask == 0))
    return;
  double packets = ef->packets_per_s * dt;
  for (int h = 1; h < f->hops; h++) {
    double marks = ef->marked_mask & (1u << h) ? packets : ef->held_mask & (1u << h) ? packets * ef->held_marks[h] : 0;
    e->port_marks[f->path[h]] += marks;
    e->marks += marks;
  }
  e->cnps += ef->cnps_per_s * dt;
  e->cuts += ef->cuts_per_s * dt;
}

void roce_est_flow_update(struct fabric *fab, struct roce_est *e, struct fab_flow *f)
{
  struct roce_flow *rf = f->model_data;
  if (rf == NULL)
    return;
  const struct roce_config *c = &roce__state(fab)->cfg;
  struct roce_est_flow *ef = &rf->est;
  flow_accumulate(e, f, ef, fab->now);
  ef->marked_mask = rf->line_port >= 0 ? rf->fifo.marked_mask : 0;
  ef->packets_per_s = fab_flow_wire_rate(f) / fab->mtu; /* go-back-N's resent packets are marked too */
  ef->cnps_per_s = ef->cuts_per_s = 0;
  /* The held ports it crosses: the marks, CNPs and cuts the packet model measured there. */
  ef->held_mask = 0;
  struct roce_held *measured = &roce__state(fab)->held;
  for (int h = 1; measured->measures > 0 && rf->line_port >= 0 && h < f->hops; h++) {
    const struct roce_held_phase *held = roce_held_of(fab, measured, f->path[h]);
    if (held == NULL || (ef->marked_mask & (1u << h)))
      continue;
    ef->held_mask |= (uint8_t)(1u << h);
    ef->held_marks[h] = (float)held->marked_fraction;
    ef->cnps_per_s = fmax(ef->cnps_per_s, fmin(held->cnps_per_flow_s, ef->packets_per_s));
    ef->cuts_per_s = fmax(ef->cuts_per_s, fmin(held->cuts_per_flow_s, ef->cnps_per_s));
  }
  if (ef->marked_mask == 0)
    return;
  /* Every packet marked: a CNP per packet, at most one per CNP interval (NP); a cut per CNP, at
   * most one per decrease interval (RP, dcqcn.c). */
  double cnps = c->cnp_interval_s > 0 ? fmin(ef->packets_per_s, 1 / c->cnp_interval_s) : ef->packets_per_s;
  ef->cnps_per_s = fmax(ef->cnps_per_s, cnps);
  ef->cuts_per_s = fmax(ef->cuts_per_s, c->dcqcn.dec_interval_s > 0 ? fmin(cnps, 1 / c->dcqcn.dec_interval_s) : cnps);
}

void roce_est_flow_end(struct fabric *fab, struct roce_est *e, struct fab_flow *f)
{
  struct roce_flow *rf = f->model_data;
  if (rf == NULL)
    return;
  /* It stopped sending when it drained, the path's tail latency before it ended (flow_engine.c) */
  double largest_packet = f->bytes < fab->mtu ? f->bytes : fab->mtu;
  double drained = fab->now - fabric_path_tail_latency(fab, f, largest_packet) - f->extra_latency_s;
  flow_accumulate(e, f, &rf->est, fmax(drained, rf->est.since_s));
}

/* The total paused time of these links up to now, at the sum of their fractions. */
static void pauses_accumulate(struct roce_est *e, struct roce_est_paused *ps, double now)
{
  double dt = now - ps->sum_since_s;
  ps->sum_since_s = now;
  if (dt > 0)
    e->paused_s += ps->sum * dt;
}

/* Link p's paused time up to now, then its new fraction. */
static void link_set(struct roce_est *e, struct roce_est_paused *ps, int p, double fraction, double now)
{
  if (ps->fraction[p] > 0)
    e->port_paused_s[p] += ps->fraction[p] * (now - ps->since_s[p]);
  ps->since_s[p] = now;
  ps->sum += fraction - ps->fraction[p];
  ps->fraction[p] = fraction;
}

void roce_est_pauses(struct fabric *fab, struct roce_est *e, const struct roce_spread *s, struct fab_flow **flows,
                     size_t n)
{
  pauses_accumulate(e, &e->spread, fab->now);
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h + 1 < flows[i]->hops; h++) {
      int u = flows[i]->path[h];
      /* u is paused while the PG it feeds sits at XOFF: the part of the time its congested
       * egress cannot serve what arrives */
      double fraction = roce_spread_pause_fraction(fab, s, u);
      if (fraction != e->spread.fraction[u])
        link_set(e, &e->spread, u, fraction, fab->now);
    }
}

void roce_est_link_idle(struct fabric *fab, struct roce_est *e, int port)
{
  if (e->spread.fraction[port] == 0)
    return;
  pauses_accumulate(e, &e->spread, fab->now);
  link_set(e, &e->spread, port, 0, fab->now);
}

/* Port p is held from now on (or no longer). */
static void held_set(struct roce_est *e, int p, int held, double now)
{
  if (e->port_held[p])
    e->port_held_s[p] += now - e->port_held_since_s[p];
  e->port_held_since_s[p] = now;
  e->port_held[p] = (uint8_t)held;
}

void roce_est_held(struct fabric *fab, struct roce_est *e, const double *load_Bps, struct fab_flow **flows, size_t n)
{
  int n_ports;
  const int *ports = fabric_recomputed_ports(fab, &n_ports);
  for (int k = 0; k < n_ports; k++)
    e->port_held_now[ports[k]] = 0;
  /* A port its senders cannot oversubscribe (one flow at its NIC's line rate, QPs of one NIC, or
   * flows an overloaded port upstream already thins out) builds no queue, whatever max-min says
   * of its saturation: the loads are those the held-port measure decides by, so that a port it
   * leaves alone is not counted held without a measure.
   * A flow below its cap is limited by max-min at a saturated port of its path: where the
   * offered load exceeds the port and no FIFO pass marks the flow, DCQCN holds that port's queue (at
   * its fixed point, in the RED band). (Caps are shares of line rates, a port's capacity its
   * payload rate: a flow at its cap less the framing is at its cap.) */
  for (size_t i = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    const struct roce_flow *rf = f->model_data;
    if (rf == NULL || rf->line_port < 0 || f->rate_Bps <= 0 || rf->fifo.marked_mask != 0)
      continue; /* a marked flow: PFC and FIFO service set its rate, not DCQCN */
    for (int h = 1; h < f->hops; h++) {
      int p = f->path[h];
      const struct topo_port *tp = &fab->topo->ports[p];
      if (tp->is_nvlink || !fabric_port_saturated(fab, p) || load_Bps[p] <= tp->rate_Bps * (1 + 1e-9))
        continue;
      double payload = fabric_port_capacity(fab, p) / tp->rate_Bps;
      if (f->rate_cap_Bps == 0 || f->rate_Bps < f->rate_cap_Bps * payload * (1 - 1e-6))
        e->port_held_now[p] = 1;
    }
  }
  for (int k = 0; k < n_ports; k++) {
    int p = ports[k];
    if (e->port_held_now[p] != e->port_held[p])
      held_set(e, p, e->port_held_now[p], fab->now);
  }
  /* The links feeding a held port the packet model measured are paused for its measured
   * fraction of the time (a link feeding several: the largest); the other links of the
   * recomputed components are not, as far as held ports go. */
  struct roce_held *measured = &roce__state(fab)->held;
  if (measured->measures == 0)
    return; /* no port measured: none paused as a held port's feeder */
  for (size_t i = 0; i < n; i++)
    for (int h = 1; h < flows[i]->hops; h++) {
      int p = flows[i]->path[h];
      const struct roce_held_phase *m = e->port_held_now[p] ? roce_held_of(fab, measured, p) : NULL;
      if (m != NULL && m->paused_fraction > e->port_pause_want[flows[i]->path[h - 1]])
        e->port_pause_want[flows[i]->path[h - 1]] = m->paused_fraction;
    }
  pauses_accumulate(e, &e->held_feed, fab->now);
  for (int k = 0; k < n_ports; k++) {
    int u = ports[k];
    if (e->port_pause_want[u] != e->held_feed.fraction[u])
      link_set(e, &e->held_feed, u, e->port_pause_want[u], fab->now);
    e->port_pause_want[u] = 0;
  }
}

double roce_est_held_total(const struct fabric *fab, const struct roce_est *e, const uint8_t *measured)
{
  double total = 0;
  for (int p = 0; p < fab->topo->n_ports; p++)
    if (measured == NULL || !measured[p])
      total += e->port_held_s[p];
  return total;
}

void roce_est_flush(struct fabric *fab, struct roce_est *e)
{
  size_t n;
  struct fab_flow **active = fabric_active_flows(fab, &n);
  for (size_t i = 0; i < n; i++) {
    struct roce_flow *rf = active[i]->model_data;
    if (rf != NULL)
      flow_accumulate(e, active[i], &rf->est, fab->now);
  }
  pauses_accumulate(e, &e->spread, fab->now);
  pauses_accumulate(e, &e->held_feed, fab->now);
  for (int p = 0; p < fab->topo->n_ports; p++) {
    if (e->spread.fraction[p] > 0)
      link_set(e, &e->spread, p, e->spread.fraction[p], fab->now);
    if (e->held_feed.fraction[p] > 0)
      link_set(e, &e->held_feed, p, e->held_feed.fraction[p], fab->now);
    if (e->port_held[p])
      held_set(e, p, 1, fab->now);
  }
}
