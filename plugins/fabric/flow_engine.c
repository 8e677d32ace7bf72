/* The flow engine: fluid flows with max-min fair rates.
 *
 * Rates are computed by progressive filling (Bertsekas & Gallager, Data Networks, 6.5.2): raise
 * every unfrozen flow's rate together until a port saturates (or a flow reaches its model cap),
 * freeze the flows crossing it, repeat. Rates change only when a flow starts or drains, and only
 * in the connected component (flows linked by shared ports) of the ports it touched: a
 * recomputation is scheduled once per date and visits just those components. A flow whose rate
 * is unchanged keeps its scheduled completion; the others get a new one (older ones are ignored
 * through the flow's version stamp). A drained flow completes after its path's tail latency, the
 * same latency the packet engine gives an uncongested transfer. */
#include "fabric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct port_flows {
  struct fab_flow **flows;
  int count, cap;
};

struct flow_engine {
  struct fab_flow **active; /* flows holding bandwidth */
  size_t n_active, cap_active;
  int recompute_pending;
  struct port_flows *on_port; /* per port: the active flows crossing it */
  size_t n_port_slots;
  uint32_t *port_visit;       /* per port: last recomputation that visited it */
  uint32_t epoch;
  int *dirty;                 /* ports whose flow set changed since the last recomputation */
  int n_dirty;
  /* scratch of one recomputation */
  int *ports;                 /* ports of the component */
  int n_ports;
  struct fab_flow **flows;    /* flows of the component */
  size_t n_flows, cap_flows;
  double *capacity_left;      /* per port */
  int *unfrozen;              /* per port */
  double *new_rate;           /* per component flow */
  uint8_t *frozen;            /* per component flow */
};

struct flow_engine *flow_engine_new(struct fabric *fab)
{
  struct flow_engine *fe = calloc(1, sizeof *fe);
  size_t n = (size_t)fab->topo->n_ports + 1;
  fe->n_port_slots = n;
  fe->on_port = calloc(n, sizeof *fe->on_port);
  fe->port_visit = calloc(n, sizeof(uint32_t));
  fe->dirty = calloc(n, sizeof(int));
  fe->ports = calloc(n, sizeof(int));
  fe->capacity_left = calloc(n, sizeof(double));
  fe->unfrozen = calloc(n, sizeof(int));
  return fe;
}

void flow_engine_free(struct flow_engine *fe)
{
  if (fe == NULL)
    return;
  free(fe->active);
  for (size_t p = 0; p < fe->n_port_slots; p++)
    free(fe->on_port[p].flows);
  free(fe->on_port);
  free(fe->port_visit);
  free(fe->dirty);
  free(fe->ports);
  free(fe->flows);
  free(fe->capacity_left);
  free(fe->unfrozen);
  free(fe->new_rate);
  free(fe->frozen);
  free(fe);
}

static void request_recompute(struct fabric *fab)
{
  if (fab->fe->recompute_pending)
    return;
  fab->fe->recompute_pending = 1;
  fabric_schedule(fab, fab->now, FAB_EV_FLOW_RECOMPUTE, 0, NULL);
}

static void mark_dirty(struct flow_engine *fe, int port)
{
  if (fe->port_visit[port] == fe->epoch + 1)
    return;
  fe->port_visit[port] = fe->epoch + 1; /* "dirty for the next recomputation" */
  fe->dirty[fe->n_dirty++] = port;
}

void flow_engine_start_flow(struct fabric *fab, struct fab_flow *flow)
{
  struct flow_engine *fe = fab->fe;
  if (fe->n_active == fe->cap_active) {
    fe->cap_active = fe->cap_active ? 2 * fe->cap_active : 1024;
    fe->active = realloc(fe->active, fe->cap_active * sizeof *fe->active);
  }
  flow->active_index = (int32_t)fe->n_active;
  fe->active[fe->n_active++] = flow;
  flow->remaining = flow->bytes;
  flow->last_s = fab->now;
  flow->rate_Bps = 0;
  for (int h = 0; h < flow->hops; h++) {
    int p = flow->path[h];
    struct port_flows *pf = &fe->on_port[p];
    if (pf->count == pf->cap) {
      pf->cap = pf->cap ? 2 * pf->cap : 4;
      pf->flows = realloc(pf->flows, (size_t)pf->cap * sizeof *pf->flows);
    }
    flow->port_pos[h] = pf->count;
    pf->flows[pf->count++] = flow;
    fab->ports[p].tx_bytes += flow->bytes;
    mark_dirty(fe, p);
  }
  request_recompute(fab);
}

struct fab_flow **fabric_recomputed_flows(const struct fabric *fab, size_t *count)
{
  *count = fab->fe ? fab->fe->n_flows : 0;
  return fab->fe ? fab->fe->flows : NULL;
}

struct fab_flow **fabric_active_flows(const struct fabric *fab, size_t *count)
{
  *count = fab->fe ? fab->fe->n_active : 0;
  return fab->fe ? fab->fe->active : NULL;
}

void fabric_flow_caps_changed(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  if (fe == NULL)
    return;
  /* A cap can change anywhere: every port with flows is revisited. */
  for (size_t i = 0; i < fe->n_active; i++)
    for (int h = 0; h < fe->active[i]->hops; h++)
      mark_dirty(fe, fe->active[i]->path[h]);
  request_recompute(fab);
}

void fabric_flow_set_cap(struct fabric *fab, struct fab_flow *flow, double cap_Bps)
{
  struct flow_engine *fe = fab->fe;
  flow->rate_cap_Bps = cap_Bps;
  if (fe == NULL || flow->active_index < 0)
    return;
  for (int h = 0; h < flow->hops; h++)
    mark_dirty(fe, flow->path[h]);
  request_recompute(fab);
}

static void remove_active(struct flow_engine *fe, struct fab_flow *flow)
{
  size_t i = (size_t)flow->active_index;
  struct fab_flow *last = fe->active[--fe->n_active];
  fe->active[i] = last;
  last->active_index = (int32_t)i;
  flow->active_index = -1;
  for (int h = 0; h < flow->hops; h++) {
    int p = flow->path[h];
    struct port_flows *pf = &fe->on_port[p];
    int pos = flow->port_pos[h];
    struct fab_flow *moved = pf->flows[--pf->count];
    pf->flows[pos] = moved;
    if (moved != flow)
      for (int k = 0; k < moved->hops; k++)
        if (moved->path[k] == p) {
          moved->port_pos[k] = pos;
          break;
        }
    mark_dirty(fe, p);
  }
}

/* The flows and ports connected to the dirty ports (breadth first over port -> flows -> ports). */
static void collect_component(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  uint32_t epoch = ++fe->epoch; /* equals the dirty mark: dirty ports count as visited */
  fe->n_ports = 0;
  fe->n_flows = 0;
  for (int i = 0; i < fe->n_dirty; i++)
    fe->ports[fe->n_ports++] = fe->dirty[i];
  fe->n_dirty = 0;
  for (int head = 0; head < fe->n_ports; head++) {
    const struct port_flows *pf = &fe->on_port[fe->ports[head]];
    for (int k = 0; k < pf->count; k++) {
      struct fab_flow *f = pf->flows[k];
      if (f->visit == epoch)
        continue;
      f->visit = epoch;
      if (fe->n_flows == fe->cap_flows) {
        fe->cap_flows = fe->cap_flows ? 2 * fe->cap_flows : 1024;
        fe->flows = realloc(fe->flows, fe->cap_flows * sizeof *fe->flows);
        fe->new_rate = realloc(fe->new_rate, fe->cap_flows * sizeof *fe->new_rate);
        fe->frozen = realloc(fe->frozen, fe->cap_flows);
      }
      fe->flows[fe->n_flows++] = f;
      for (int h = 0; h < f->hops; h++) {
        int p = f->path[h];
        if (fe->port_visit[p] != epoch) {
          fe->port_visit[p] = epoch;
          fe->ports[fe->n_ports++] = p;
        }
      }
    }
  }
}

void flow_engine_recompute(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  const struct topo *t = fab->topo;
  fab->stats.rate_updates++;
  collect_component(fab);
  size_t n = fe->n_flows;
  if (n == 0)
    return;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->flows[i];
    f->remaining -= f->rate_Bps * (fab->now - f->last_s);
    if (f->remaining < 0)
      f->remaining = 0;
    f->last_s = fab->now;
  }
  for (int u = 0; u < fe->n_ports; u++) {
    int p = fe->ports[u];
    fe->capacity_left[p] = t->ports[p].rate_Bps;
    fe->unfrozen[p] = fe->on_port[p].count;
  }
  memset(fe->frozen, 0, n);
  /* Progressive filling over the component. */
  size_t left = n;
  while (left > 0) {
    double share = INFINITY;
    for (int u = 0; u < fe->n_ports; u++) {
      int p = fe->ports[u];
      if (fe->unfrozen[p] > 0) {
        double s = fe->capacity_left[p] / fe->unfrozen[p];
        if (s < share)
          share = s;
      }
    }
    for (size_t i = 0; i < n; i++)
      if (!fe->frozen[i] && fe->flows[i]->rate_cap_Bps > 0 && fe->flows[i]->rate_cap_Bps < share)
        share = fe->flows[i]->rate_cap_Bps;
    if (share < 0)
      share = 0;
    double tolerance = share * 1e-9;
    size_t frozen_now = 0;
    for (size_t i = 0; i < n; i++) {
      struct fab_flow *f = fe->flows[i];
      if (fe->frozen[i])
        continue;
      int freeze = f->rate_cap_Bps > 0 && f->rate_cap_Bps <= share + tolerance;
      for (int h = 0; h < f->hops && !freeze; h++) {
        int p = f->path[h];
        if (fe->capacity_left[p] / fe->unfrozen[p] <= share + tolerance)
          freeze = 1;
      }
      if (!freeze)
        continue;
      fe->frozen[i] = 2; /* frozen in this round; its ports are charged below */
      fe->new_rate[i] = share;
      frozen_now++;
    }
    for (size_t i = 0; i < n; i++) {
      if (fe->frozen[i] != 2)
        continue;
      fe->frozen[i] = 1;
      struct fab_flow *f = fe->flows[i];
      for (int h = 0; h < f->hops; h++) {
        int p = f->path[h];
        fe->capacity_left[p] -= share;
        fe->unfrozen[p]--;
      }
    }
    if (frozen_now == 0)
      abort(); /* cannot happen: the minimum share always freezes a flow */
    left -= frozen_now;
  }
  /* New completion dates for flows whose rate changed. */
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->flows[i];
    if (fe->new_rate[i] == f->rate_Bps)
      continue;
    f->rate_Bps = fe->new_rate[i];
    f->version++;
    if (f->rate_Bps > 0)
      fabric_schedule(fab, fab->now + f->remaining / f->rate_Bps, FAB_EV_FLOW_DRAINED, f->version, f);
  }
}

void flow_engine_event(struct fabric *fab, const struct fab_event *ev)
{
  struct flow_engine *fe = fab->fe;
  switch (ev->type) {
  case FAB_EV_FLOW_RECOMPUTE:
    fe->recompute_pending = 0;
    flow_engine_recompute(fab);
    if (fab->model->on_rates)
      fab->model->on_rates(fab);
    break;
  case FAB_EV_FLOW_DRAINED: {
    struct fab_flow *f = ev->ptr;
    if (f->version != ev->arg || f->state != FLOW_ACTIVE)
      break;
    f->remaining = 0;
    f->state = FLOW_DRAINED;
    remove_active(fe, f);
    /* Store-and-forward, the train's largest packet sets the pace of the last hops. */
    double largest_packet = f->bytes < fab->mtu ? f->bytes : fab->mtu;
    fabric_schedule(fab, fab->now + fabric_path_tail_latency(fab, f, largest_packet) + f->extra_latency_s, FAB_EV_FLOW_DONE, 0, f);
    request_recompute(fab);
    break;
  }
  case FAB_EV_FLOW_DONE: {
    struct fab_flow *f = ev->ptr;
    f->delivered = f->bytes;
    fabric_flow_finished(fab, f);
    break;
  }
  default:
    abort();
  }
}
