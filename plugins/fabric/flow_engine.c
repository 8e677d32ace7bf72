/* The flow engine: fluid flows with max-min fair rates.
 *
 * Rates are computed by progressive filling (Bertsekas & Gallager, Data Networks, 6.5.2): raise
 * every unfrozen flow's rate together until a port saturates (or a flow reaches its model cap),
 * freeze the flows crossing it, repeat. Rates change only when a flow starts or drains, so a
 * recomputation is scheduled once per date however many flows start or end at that date. A flow
 * whose rate is unchanged keeps its scheduled completion; the others get a new one (older ones
 * are ignored through the flow's version stamp). A drained flow completes after its path's tail
 * latency, the same latency the packet engine gives an uncongested last packet. */
#include "fabric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct flow_engine {
  struct fab_flow **active; /* flows holding bandwidth */
  size_t n_active, cap_active;
  int recompute_pending;
  /* scratch for progressive filling, indexed by port */
  double *capacity_left;
  int *unfrozen;
  int *first;   /* CSR: flows crossing port p are flow_of[first[p] .. first[p+1]) */
  int *fill;
  struct fab_flow **flow_of;
  size_t flow_of_cap;
  int *used_ports;
  int n_used;
  uint8_t *frozen;
  size_t frozen_cap;
};

struct flow_engine *flow_engine_new(struct fabric *fab)
{
  struct flow_engine *fe = calloc(1, sizeof *fe);
  int n = fab->topo->n_ports;
  fe->capacity_left = calloc((size_t)n + 1, sizeof(double));
  fe->unfrozen = calloc((size_t)n + 1, sizeof(int));
  fe->first = calloc((size_t)n + 2, sizeof(int));
  fe->fill = calloc((size_t)n + 1, sizeof(int));
  fe->used_ports = calloc((size_t)n + 1, sizeof(int));
  return fe;
}

void flow_engine_free(struct flow_engine *fe)
{
  if (fe == NULL)
    return;
  free(fe->active);
  free(fe->capacity_left);
  free(fe->unfrozen);
  free(fe->first);
  free(fe->fill);
  free(fe->flow_of);
  free(fe->used_ports);
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
  const struct topo *t = fab->topo;
  for (int h = 0; h < flow->hops; h++)
    fab->ports[flow->path[h]].tx_bytes += flow->bytes;
  (void)t;
  request_recompute(fab);
}

struct fab_flow **fabric_active_flows(const struct fabric *fab, size_t *count)
{
  *count = fab->fe ? fab->fe->n_active : 0;
  return fab->fe ? fab->fe->active : NULL;
}

void fabric_flow_caps_changed(struct fabric *fab)
{
  if (fab->fe)
    request_recompute(fab);
}

static void remove_active(struct flow_engine *fe, struct fab_flow *flow)
{
  size_t i = (size_t)flow->active_index;
  struct fab_flow *last = fe->active[--fe->n_active];
  fe->active[i] = last;
  last->active_index = (int32_t)i;
  flow->active_index = -1;
}

void flow_engine_recompute(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  const struct topo *t = fab->topo;
  size_t n = fe->n_active;
  fab->stats.rate_updates++;
  if (n == 0)
    return;
  /* Bring every flow's remaining bytes up to now under its old rate. */
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->active[i];
    f->remaining -= f->rate_Bps * (fab->now - f->last_s);
    if (f->remaining < 0)
      f->remaining = 0;
    f->last_s = fab->now;
  }
  /* Ports in use and how many flows cross each (CSR index of flows per port). */
  fe->n_used = 0;
  size_t crossings = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->active[i];
    for (int h = 0; h < f->hops; h++) {
      int p = f->path[h];
      if (fe->unfrozen[p] == 0)
        fe->used_ports[fe->n_used++] = p;
      fe->unfrozen[p]++;
      crossings++;
    }
  }
  if (crossings > fe->flow_of_cap) {
    fe->flow_of_cap = crossings * 2;
    fe->flow_of = realloc(fe->flow_of, fe->flow_of_cap * sizeof *fe->flow_of);
  }
  if (n > fe->frozen_cap) {
    fe->frozen_cap = n * 2;
    fe->frozen = realloc(fe->frozen, fe->frozen_cap);
  }
  memset(fe->frozen, 0, n);
  int offset = 0;
  for (int u = 0; u < fe->n_used; u++) {
    int p = fe->used_ports[u];
    fe->first[p] = offset;
    fe->fill[p] = offset;
    offset += fe->unfrozen[p];
    fe->capacity_left[p] = t->ports[p].rate_Bps;
  }
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->active[i];
    for (int h = 0; h < f->hops; h++)
      fe->flow_of[fe->fill[f->path[h]]++] = f;
  }
  /* Progressive filling. */
  size_t left = n;
  double *new_rate = malloc(n * sizeof(double));
  while (left > 0) {
    double share = INFINITY;
    for (int u = 0; u < fe->n_used; u++) {
      int p = fe->used_ports[u];
      if (fe->unfrozen[p] > 0) {
        double s = fe->capacity_left[p] / fe->unfrozen[p];
        if (s < share)
          share = s;
      }
    }
    for (size_t i = 0; i < n; i++)
      if (!fe->frozen[i] && fe->active[i]->rate_cap_Bps > 0 && fe->active[i]->rate_cap_Bps < share)
        share = fe->active[i]->rate_cap_Bps;
    if (share < 0)
      share = 0;
    double tolerance = share * 1e-9;
    size_t frozen_now = 0;
    for (size_t i = 0; i < n; i++) {
      struct fab_flow *f = fe->active[i];
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
      new_rate[i] = share;
      frozen_now++;
    }
    for (size_t i = 0; i < n; i++) {
      if (fe->frozen[i] != 2)
        continue;
      fe->frozen[i] = 1;
      struct fab_flow *f = fe->active[i];
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
  for (int u = 0; u < fe->n_used; u++)
    fe->unfrozen[fe->used_ports[u]] = 0;
  /* New completion dates for flows whose rate changed. */
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->active[i];
    if (new_rate[i] == f->rate_Bps)
      continue;
    f->rate_Bps = new_rate[i];
    f->version++;
    if (f->rate_Bps > 0)
      fabric_schedule(fab, fab->now + f->remaining / f->rate_Bps, FAB_EV_FLOW_DRAINED, f->version, f);
  }
  free(new_rate);
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
    fabric_schedule(fab, fab->now + fabric_path_tail_latency(fab, f, largest_packet), FAB_EV_FLOW_DONE, 0, f);
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
