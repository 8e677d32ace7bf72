/* The flow engine: fluid flows with max-min fair rates.
 *
 * Rates are computed by progressive filling (Bertsekas & Gallager, Data Networks, 6.5.2): raise
 * every unfrozen flow's rate together until a port saturates (or a flow reaches its model cap),
 * freeze the flows crossing it, repeat; a flow of share_weight w rises w times as fast (weighted
 * max-min: the parts of a transfer a model spread over several paths weigh 1/parts each, so
 * the transfer gets one share where they meet). The filling shares out what the links carry: a
 * flow whose model says only a fraction g of its bytes arrive (goodput_fraction: RoCE's go-back-N
 * sends some again) rises at w on the wire and delivers g times that, the bytes it resends
 * counted on its links (tx_bytes) like those it delivers. Rates change only when a flow starts
 * or drains, and only in the connected component (flows linked by shared ports) of the ports it
 * touched: a recomputation is scheduled once per date and visits just those components. A flow
 * whose rate is unchanged keeps its drain date; the others get a new one, moved in place in the
 * engine's heap of completions, which keeps one calendar event at its earliest date (a
 * component whose rates all move at every completion, an all-to-all under FIFO shares, would
 * otherwise leave a stale calendar event per flow and recomputation: 1.35 M events for 4,032
 * flows). A drained flow completes after its path's tail latency, the same latency the packet
 * engine gives an uncongested transfer. At flow fidelity the flows due within
 * fabric/flow-drain-tolerance of their age drain with the one due now: the completions of an
 * all-to-all under FIFO shares cluster within nanoseconds of each other, and each distinct date
 * was a recomputation of the whole component (2,425 for a 128-GPU all-to-all; 181 with a
 * tolerance of 1e-3). */
#include "fabric.h"
#include "check.h"
#include "radix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct port_flows {
  struct fab_flow **flows;
  int32_t *slots; /* each flow's engine slot, in the same order */
  int count, cap;
  double weight; /* the summed share_weight of its flows (their count when every weight is 1) */
};

/* A place in the heap of completions. The flow's key is copied beside it so that a sift compares
 * entries of one array instead of reading a flow struct per comparison (the cache miss of each was
 * most of the heap's cost with a hundred thousand parts of an all-to-all in it). */
struct due_entry {
  double due_s;
  uint64_t due_seq;
  struct fab_flow *flow;
  int32_t slot; /* the flow's engine slot: slot_due[slot] is this entry's place */
};

struct flow_engine {
  struct fab_flow **active; /* flows holding bandwidth */
  size_t n_active, cap_active;
  int recompute_pending;
  struct port_flows *on_port; /* per port: the active flows crossing it */
  size_t n_port_slots;
  uint32_t *port_visit; /* per port: last recomputation that visited it */
  uint32_t epoch;
  int *dirty; /* ports whose flow set changed since the last recomputation */
  int n_dirty;
  uint32_t *port_mark; /* per port: last fabric_flow_caps_changed_for that reached it */
  uint32_t mark;
  int *mark_queue; /* its breadth-first queue of ports */
  /* Per active flow, at its engine slot (a small number it keeps while active, reused after): the
   * stamps the walks over port flow lists test for every flow they meet, kept in arrays of
   * their own so that those walks read the lists and these arrays, not each flow's structure
   * (one cache miss per flow and port crossed: most of a recomputation of a large component). */
  uint32_t *slot_visit;    /* last recomputation that visited it */
  int32_t *slot_fill;      /* its index in that recomputation's component */
  uint32_t *slot_cap_mark; /* last fabric_flow_caps_changed_for that reached it */
  int32_t *slot_due;       /* the flow's place in the heap of completions (-1: none); kept here
                              rather than in the flow so that a sift writes no flow struct */
  int32_t *slot_free;      /* slots of flows that left, to reuse */
  size_t n_slots, cap_slots, n_slot_free;
  int flows_moved;      /* a flow started or drained since the last recomputation */
  int last_flows_moved; /* ... before the last recomputation */
  int in_before_fill;   /* the model's before_fill hook runs: its component's filling is to come */
  /* scratch of one recomputation */
  int *ports; /* ports of the component */
  int n_ports;
  struct fab_flow **flows; /* flows of the component */
  size_t n_flows, cap_flows;
  double *capacity_left; /* per port */
  double *capacity;      /* per port: what max-min shares out (the line rate by default) */
  int *unfrozen;         /* per port */
  double *weight_left;   /* per port: the summed share_weight of its unfrozen flows */
  double *new_rate;      /* per component flow */
  uint8_t *frozen;       /* per component flow */
  /* progressive filling's candidate bottlenecks: ports in a heap by (key, port), each once
   * (fill_pos: its place, -1 if absent; fill_share: its fair share; fill_key: the share it was
   * last placed at, never above fill_share: see refresh_top), capped flows in a sorted list */
  int32_t *fill_heap;
  size_t n_fill;
  int32_t *fill_pos;
  double *fill_share;
  double *fill_key;
  struct fill_entry *capped, *capped_tmp; /* per component flow */
  /* completions: flows with a rate, a 4-ary min-heap by (due_s, due_seq) */
  struct due_entry *due;
  size_t n_due, cap_due;
  uint64_t due_seq;           /* drain dates set so far: simultaneous drains go in this order */
  uint32_t due_gen;           /* the calendar event armed last; older ones are stale */
  double due_event_s;         /* its date, or -1 when none is armed */
  double drain_tolerance;     /* fabric/flow-drain-tolerance */
  struct due_entry *draining; /* scratch: the entries of the flows one drain event takes early */
  size_t n_draining, cap_draining;
};

/* A candidate bottleneck: a port at its current fair share, or a flow at its model cap. */
struct fill_entry {
  double share;
  int32_t id; /* port >= 0, or -1 - (component index of a capped flow) */
};

struct flow_engine *fab_flow_engine_new(struct fabric *fab)
{
  struct flow_engine *fe = calloc(1, sizeof *fe);
  size_t n = (size_t)fab->topo->n_ports + 1;
  fe->n_port_slots = n;
  fe->on_port = calloc(n, sizeof *fe->on_port);
  fe->port_visit = calloc(n, sizeof(uint32_t));
  fe->dirty = calloc(n, sizeof(int));
  fe->ports = calloc(n, sizeof(int));
  fe->capacity_left = calloc(n, sizeof(double));
  fe->capacity = calloc(n, sizeof(double));
  for (int p = 0; fe->capacity != NULL && p < fab->topo->n_ports; p++)
    fe->capacity[p] = fab->topo->ports[p].rate_Bps;
  fe->unfrozen = calloc(n, sizeof(int));
  fe->weight_left = calloc(n, sizeof(double));
  fe->port_mark = calloc(n, sizeof(uint32_t));
  fe->mark_queue = calloc(n, sizeof(int));
  fe->fill_heap = calloc(n, sizeof(int32_t));
  fe->fill_pos = malloc(n * sizeof(int32_t));
  fe->fill_share = calloc(n, sizeof(double));
  fe->fill_key = calloc(n, sizeof(double));
  for (size_t p = 0; fe->fill_pos != NULL && p < n; p++)
    fe->fill_pos[p] = -1;
  fe->due_event_s = -1;
  /* packet fidelity is the reference: its NVLink flows drain exactly */
  if (fab->fidelity == FAB_FIDELITY_FLOW)
    fe->drain_tolerance = fab_param_get(fab->params, "fabric/flow-drain-tolerance");
  return fe;
}

void fab_flow_engine_free(struct flow_engine *fe)
{
  if (fe == NULL)
    return;
  free(fe->active);
  for (size_t p = 0; p < fe->n_port_slots; p++) {
    free(fe->on_port[p].flows);
    free(fe->on_port[p].slots);
  }
  free(fe->slot_visit);
  free(fe->slot_fill);
  free(fe->slot_cap_mark);
  free(fe->slot_due);
  free(fe->slot_free);
  free(fe->on_port);
  free(fe->port_visit);
  free(fe->dirty);
  free(fe->ports);
  free(fe->flows);
  free(fe->capacity_left);
  free(fe->capacity);
  free(fe->unfrozen);
  free(fe->weight_left);
  free(fe->port_mark);
  free(fe->mark_queue);
  free(fe->new_rate);
  free(fe->frozen);
  free(fe->fill_heap);
  free(fe->fill_pos);
  free(fe->fill_share);
  free(fe->fill_key);
  free(fe->capped);
  free(fe->capped_tmp);
  free(fe->due);
  free(fe->draining);
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

/* Puts flow on the flow list of the port of its hop h. */
static void port_list_add(struct flow_engine *fe, struct fab_flow *flow, int h)
{
  struct port_flows *pf = &fe->on_port[flow->path[h]];
  if (pf->count == pf->cap) {
    pf->cap = pf->cap ? 2 * pf->cap : 4;
    pf->flows = sgf_xrealloc(pf->flows, (size_t)pf->cap * sizeof *pf->flows);
    pf->slots = sgf_xrealloc(pf->slots, (size_t)pf->cap * sizeof *pf->slots);
  }
  flow->port_pos[h] = pf->count;
  pf->slots[pf->count] = flow->engine_slot;
  pf->flows[pf->count++] = flow;
  pf->weight += flow->share_weight;
  mark_dirty(fe, flow->path[h]);
}

/* Takes flow off the flow list of the port of its hop h (the list's last flow takes its place). */
static void port_list_remove(struct flow_engine *fe, struct fab_flow *flow, int h)
{
  int p = flow->path[h];
  struct port_flows *pf = &fe->on_port[p];
  int pos = flow->port_pos[h];
  struct fab_flow *moved = pf->flows[--pf->count];
  pf->flows[pos] = moved;
  pf->slots[pos] = pf->slots[pf->count];
  if (moved != flow)
    for (int k = 0; k < moved->hops; k++)
      if (moved->path[k] == p) {
        moved->port_pos[k] = pos;
        break;
      }
  /* an empty port's weight is exactly 0, whatever the rounding of the parts' 1/P that came and went */
  pf->weight = pf->count > 0 ? pf->weight - flow->share_weight : 0;
  mark_dirty(fe, p);
}

/* A slot for a flow entering the active set: one a flow left, or a new one. */
static int32_t slot_take(struct flow_engine *fe)
{
  if (fe->n_slot_free > 0) {
    int32_t slot = fe->slot_free[--fe->n_slot_free];
    fe->slot_due[slot] = -1;
    return slot;
  }
  if (fe->n_slots == fe->cap_slots) {
    size_t cap = fe->cap_slots ? 2 * fe->cap_slots : 1024;
    fe->slot_visit = sgf_xrealloc(fe->slot_visit, cap * sizeof *fe->slot_visit);
    fe->slot_fill = sgf_xrealloc(fe->slot_fill, cap * sizeof *fe->slot_fill);
    fe->slot_cap_mark = sgf_xrealloc(fe->slot_cap_mark, cap * sizeof *fe->slot_cap_mark);
    fe->slot_due = sgf_xrealloc(fe->slot_due, cap * sizeof *fe->slot_due);
    fe->slot_free = sgf_xrealloc(fe->slot_free, cap * sizeof *fe->slot_free);
    fe->cap_slots = cap;
  }
  /* stamps of 0: no recomputation or caps walk has the number 0 (both count from 1) */
  fe->slot_visit[fe->n_slots] = 0;
  fe->slot_cap_mark[fe->n_slots] = 0;
  fe->slot_due[fe->n_slots] = -1;
  return (int32_t)fe->n_slots++;
}

void fab_flow_engine_start_flow(struct fabric *fab, struct fab_flow *flow)
{
  struct flow_engine *fe = fab->fe;
  flow->engine_slot = slot_take(fe);
  if (fe->n_active == fe->cap_active) {
    fe->cap_active = fe->cap_active ? 2 * fe->cap_active : 1024;
    fe->active = sgf_xrealloc(fe->active, fe->cap_active * sizeof *fe->active);
  }
  flow->active_index = (int32_t)fe->n_active;
  fe->active[fe->n_active++] = flow;
  flow->remaining = flow->bytes;
  flow->last_s = fab->now;
  flow->rate_Bps = 0;
  for (int h = 0; h < flow->hops; h++) {
    port_list_add(fe, flow, h);
    fab->ports[flow->path[h]].tx_bytes += flow->bytes;
  }
  fe->flows_moved = 1;
  request_recompute(fab);
}

int fabric_port_flow_count(const struct fabric *fab, int port) { return fab->fe ? fab->fe->on_port[port].count : 0; }

struct fab_flow **fabric_recomputed_flows(const struct fabric *fab, size_t *count)
{
  *count = fab->fe ? fab->fe->n_flows : 0;
  return fab->fe ? fab->fe->flows : NULL;
}

const int *fabric_recomputed_ports(const struct fabric *fab, int *count)
{
  *count = fab->fe ? fab->fe->n_ports : 0;
  return fab->fe ? fab->fe->ports : NULL;
}

int fabric_port_saturated(const struct fabric *fab, int port)
{
  const struct flow_engine *fe = fab->fe;
  return fe != NULL && fe->capacity_left[port] <= 1e-9 * fe->capacity[port];
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

double fabric_port_payload_rate(const struct fabric *fab, int port)
{
  const struct topo_port *tp = &fab->topo->ports[port];
  if (tp->is_nvlink || fab->frame_overhead_B <= 0)
    return tp->rate_Bps;
  return tp->rate_Bps * fab->mtu / (fab->mtu + fab->frame_overhead_B);
}

void fab_flow_engine_init_capacity(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  for (int p = 0; fe != NULL && fe->capacity != NULL && p < fab->topo->n_ports; p++)
    fe->capacity[p] = fabric_port_payload_rate(fab, p);
}

int fabric_recompute_followed_flow_change(const struct fabric *fab) { return fab->fe ? fab->fe->last_flows_moved : 0; }

void fabric_flow_count_wire_extra(struct fabric *fab, const struct fab_flow *f, double bytes)
{
  for (int h = 0; h < f->hops; h++)
    fab->ports[f->path[h]].tx_bytes += bytes;
  fab->stats.flow_wire_extra_B += bytes;
}

/* What a flow's links carried beyond what it delivered: the bytes a model's goodput fraction
 * below 1 says it sent again (RoCE's go-back-N). */
static void count_wire_extra(struct fabric *fab, const struct fab_flow *f, double delivered)
{
  if (f->goodput_fraction >= 1 || delivered <= 0)
    return;
  fabric_flow_count_wire_extra(fab, f, delivered * (1 / f->goodput_fraction - 1));
}

/* Brings a flow's bytes left up to the current date at its rate since the last update. */
static void flow_progress(struct fabric *fab, struct fab_flow *f)
{
  double before = f->remaining;
  f->remaining -= f->rate_Bps * (fab->now - f->last_s);
  if (f->remaining < 0)
    f->remaining = 0;
  f->last_s = fab->now;
  count_wire_extra(fab, f, before - f->remaining);
}

/* Brings every active flow's bytes left up to the current date, as a recomputation does for the
 * flows it visits. */
static void bring_flows_up_to_date(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  for (size_t i = 0; i < fe->n_active; i++)
    flow_progress(fab, fe->active[i]);
}

void fabric_flow_caps_changed_for(struct fabric *fab, struct fab_flow *const *flows, size_t n)
{
  struct flow_engine *fe = fab->fe;
  if (fe == NULL || n == 0)
    return;
  /* The bytes left of every flow are brought up to date, as fabric_flow_caps_changed's full
   * recomputation does: models read them (RoCE's PFC spreading sums them into backlogs), and a
   * flow's bytes left depend, in the last bits, on the dates they were updated at. A few
   * operations per active flow, against progressive filling's O(crossings x log ports). */
  bring_flows_up_to_date(fab);
  /* Only the components of these flows can change: no flow outside them shares a port with
   * them, and the flows of the other components keep their caps, hence their rates. Their
   * ports are found breadth first, then marked dirty in the order fabric_flow_caps_changed
   * marks them (active flows in order, each path in order): the recomputation then visits the
   * flows of each component in the same order and schedules their completions in the same
   * order, which keeps the order of simultaneous events, hence the results, bit-identical. */
  uint32_t mark = ++fe->mark;
  if (mark == 0) { /* wrapped: older stamps could match */
    memset(fe->port_mark, 0, fe->n_port_slots * sizeof *fe->port_mark);
    if (fe->n_slots > 0)
      memset(fe->slot_cap_mark, 0, fe->n_slots * sizeof *fe->slot_cap_mark);
    mark = fe->mark = 1;
  }
  int queued = 0;
  for (size_t i = 0; i < n; i++)
    if (flows[i]->active_index >= 0 && fe->slot_cap_mark[flows[i]->engine_slot] != mark) {
      fe->slot_cap_mark[flows[i]->engine_slot] = mark;
      for (int h = 0; h < flows[i]->hops; h++) {
        int p = flows[i]->path[h];
        if (fe->port_mark[p] != mark) {
          fe->port_mark[p] = mark;
          fe->mark_queue[queued++] = p;
        }
      }
    }
  for (int head = 0; head < queued; head++) {
    const struct port_flows *pf = &fe->on_port[fe->mark_queue[head]];
    for (int k = 0; k < pf->count; k++) {
      if (fe->slot_cap_mark[pf->slots[k]] == mark)
        continue;
      fe->slot_cap_mark[pf->slots[k]] = mark;
      struct fab_flow *f = pf->flows[k];
      for (int h = 0; h < f->hops; h++) {
        int p = f->path[h];
        if (fe->port_mark[p] != mark) {
          fe->port_mark[p] = mark;
          fe->mark_queue[queued++] = p;
        }
      }
    }
  }
  for (size_t i = 0; i < fe->n_active; i++) {
    const struct fab_flow *f = fe->active[i];
    if (f->hops > 0 && fe->port_mark[f->path[0]] == mark)
      for (int h = 0; h < f->hops; h++)
        mark_dirty(fe, f->path[h]);
  }
  request_recompute(fab);
}

int fabric_port_set_capacity(struct fabric *fab, int port, double rate_Bps)
{
  struct flow_engine *fe = fab->fe;
  if (fe == NULL || fe->capacity[port] == rate_Bps)
    return 0;
  fe->capacity[port] = rate_Bps;
  /* From before_fill, a port of the component about to be filled: that filling takes it. A port
   * no flow crosses shares nothing out. */
  int taken = fe->in_before_fill && fe->port_visit[port] == fe->epoch;
  if (!taken && fe->on_port[port].count > 0) {
    mark_dirty(fe, port);
    request_recompute(fab);
  }
  return 1;
}

double fabric_port_capacity(const struct fabric *fab, int port)
{
  return fab->fe ? fab->fe->capacity[port] : fab->topo->ports[port].rate_Bps;
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

int fabric_flow_set_goodput(struct fabric *fab, struct fab_flow *flow, double fraction)
{
  if (flow->goodput_fraction == fraction)
    return 0;
  if (fab->fe != NULL && flow->active_index >= 0)
    flow_progress(fab, flow);
  flow->goodput_fraction = fraction;
  return 1;
}

static void remove_active(struct flow_engine *fe, struct fab_flow *flow)
{
  size_t i = (size_t)flow->active_index;
  struct fab_flow *last = fe->active[--fe->n_active];
  fe->active[i] = last;
  last->active_index = (int32_t)i;
  flow->active_index = -1;
  for (int h = 0; h < flow->hops; h++)
    port_list_remove(fe, flow, h);
  fe->slot_free[fe->n_slot_free++] = flow->engine_slot; /* room: one per slot ever made */
  flow->engine_slot = -1;
  fe->flows_moved = 1;
}

/* ---- failures (failure.c) ---- */

struct fab_flow *const *fabric_port_flows(const struct fabric *fab, int port, int *count)
{
  *count = fab->fe ? fab->fe->on_port[port].count : 0;
  return fab->fe ? fab->fe->on_port[port].flows : NULL;
}

void fab_flow_engine_touch_port(struct fabric *fab, int port)
{
  mark_dirty(fab->fe, port);
  request_recompute(fab);
}

void fab_flow_engine_sync(struct fabric *fab, struct fab_flow *f) { flow_progress(fab, f); }

void fab_flow_engine_reroute(struct fabric *fab, struct fab_flow *f, const int *path, int hops)
{
  struct flow_engine *fe = fab->fe;
  fab_flow_engine_sync(fab, f);
  for (int h = 0; h < f->hops; h++) /* off its old ports */
    port_list_remove(fe, f, h);
  f->hops = (uint8_t)hops;
  for (int h = 0; h < hops; h++) { /* onto its new ones */
    f->path[h] = path[h];
    port_list_add(fe, f, h);
    fab->ports[path[h]].tx_bytes += f->remaining;
  }
  fe->flows_moved = 1;
  request_recompute(fab);
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
  fe->last_flows_moved = fe->flows_moved;
  fe->flows_moved = 0;
  for (int head = 0; head < fe->n_ports; head++) {
    const struct port_flows *pf = &fe->on_port[fe->ports[head]];
    for (int k = 0; k < pf->count; k++) {
      int32_t slot = pf->slots[k];
      if (fe->slot_visit[slot] == epoch)
        continue;
      fe->slot_visit[slot] = epoch;
      fe->slot_fill[slot] = (int32_t)fe->n_flows;
      struct fab_flow *f = pf->flows[k];
      if (fe->n_flows == fe->cap_flows) {
        fe->cap_flows = fe->cap_flows ? 2 * fe->cap_flows : 1024;
        fe->flows = sgf_xrealloc(fe->flows, fe->cap_flows * sizeof *fe->flows);
        fe->new_rate = sgf_xrealloc(fe->new_rate, fe->cap_flows * sizeof *fe->new_rate);
        fe->frozen = sgf_xrealloc(fe->frozen, fe->cap_flows);
        fe->capped = sgf_xrealloc(fe->capped, fe->cap_flows * sizeof *fe->capped);
        fe->capped_tmp = sgf_xrealloc(fe->capped_tmp, fe->cap_flows * sizeof *fe->capped_tmp);
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

/* The bits of an entry's share: positive doubles order like their bits. */
static uint64_t share_bits(const struct fill_entry *e)
{
  uint64_t bits;
  memcpy(&bits, &e->share, sizeof bits);
  return bits;
}

/* Sorts n capped-flow entries by (share, id), given in decreasing id order: a stable LSD radix
 * sort on the bits of the share, a byte at a time, passes whose byte is the same for every entry
 * skipped (caps share most of their high bits). Linear, against qsort's n log n calls through a
 * pointer, which cost more than the filling itself on an all-to-all. tmp holds n entries. */
static void sort_capped(struct fill_entry *a, struct fill_entry *tmp, size_t n)
{
  if (n <= 32) { /* few caps, the common case: a stable insertion sort on the same key, where the
                  * radix passes' 8 x 256 counters cost more than the entries */
    for (size_t i = 1; i < n; i++) {
      struct fill_entry e = a[i];
      uint64_t key = share_bits(&e);
      size_t j = i;
      for (; j > 0 && share_bits(&a[j - 1]) > key; j--)
        a[j] = a[j - 1];
      a[j] = e;
    }
    return;
  }
  for (int shift = 0; shift < 64; shift += 8) {
    size_t count[256] = { 0 };
    for (size_t i = 0; i < n; i++)
      count[(share_bits(&a[i]) >> shift) & 0xFF]++;
    if (count[(share_bits(&a[0]) >> shift) & 0xFF] == n)
      continue; /* one byte value: the order stays (n > 32 here) */
    radix_counts_to_offsets(count);
    for (size_t i = 0; i < n; i++)
      tmp[count[(share_bits(&a[i]) >> shift) & 0xFF]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
}

/* ---- the heap of ports by fair share: each port once, its key moved in place ---- */

static int port_before(const struct flow_engine *fe, int32_t a, int32_t b)
{
  return fe->fill_key[a] < fe->fill_key[b] || (fe->fill_key[a] == fe->fill_key[b] && a < b);
}

static void port_place(struct flow_engine *fe, int32_t p, size_t i)
{
  fe->fill_heap[i] = p;
  fe->fill_pos[p] = (int32_t)i;
}

static void port_sift_up(struct flow_engine *fe, size_t i)
{
  int32_t p = fe->fill_heap[i];
  while (i > 0 && port_before(fe, p, fe->fill_heap[(i - 1) / 2])) {
    port_place(fe, fe->fill_heap[(i - 1) / 2], i);
    i = (i - 1) / 2;
  }
  port_place(fe, p, i);
}

static void port_sift_down(struct flow_engine *fe, size_t i)
{
  int32_t p = fe->fill_heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= fe->n_fill)
      break;
    if (c + 1 < fe->n_fill && port_before(fe, fe->fill_heap[c + 1], fe->fill_heap[c]))
      c++;
    if (!port_before(fe, fe->fill_heap[c], p))
      break;
    port_place(fe, fe->fill_heap[c], i);
    i = c;
  }
  port_place(fe, p, i);
}

/* Port p enters the heap at its fair share. */
static void port_insert(struct flow_engine *fe, int32_t p, double share)
{
  fe->fill_share[p] = fe->fill_key[p] = share;
  port_place(fe, p, fe->n_fill++);
  port_sift_up(fe, (size_t)fe->fill_pos[p]);
}

/* Port p's fair share is now share. Progressive filling only raises shares: a flow frozen at
 * level r <= every share of its path leaves (C - r) / (w - 1) >= C / w at each. So the heap
 * keeps the key a port was placed at, a lower bound of its share, and refresh_top re-places a
 * port when it reaches the top with a stale key, instead of a sift per port of every flow
 * frozen (most of a recomputation when nearly every flow is capped: an all-to-all under FIFO
 * shares or the fluid model). Only a share that rounding left below its key moves up now. */
static void port_set_share(struct flow_engine *fe, int32_t p, double share)
{
  fe->fill_share[p] = share;
  if (share < fe->fill_key[p]) {
    fe->fill_key[p] = share;
    port_sift_up(fe, (size_t)fe->fill_pos[p]);
  }
}

/* Brings the heap's top to its share: with every key at most its port's share, the top is then
 * the port of least (share, port), the one an eagerly sifted heap would have on top, so the
 * ports and caps freeze in the same order and the rates come out bit for bit the same. */
static void refresh_top(struct flow_engine *fe)
{
  while (fe->n_fill > 0) {
    int32_t top = fe->fill_heap[0];
    /* compared as bits, so that a share that is not a number cannot keep the loop going */
    if (memcmp(&fe->fill_key[top], &fe->fill_share[top], sizeof(double)) == 0)
      return;
    fe->fill_key[top] = fe->fill_share[top];
    port_sift_down(fe, 0);
  }
}

static void port_remove(struct flow_engine *fe, int32_t p)
{
  size_t i = (size_t)fe->fill_pos[p];
  fe->fill_pos[p] = -1;
  int32_t last = fe->fill_heap[--fe->n_fill];
  if (last == p)
    return;
  port_place(fe, last, i);
  if (i > 0 && port_before(fe, last, fe->fill_heap[(i - 1) / 2]))
    port_sift_up(fe, i);
  else
    port_sift_down(fe, i);
}

/* Freezes component flow i at rate: its ports lose that much capacity and one unfrozen flow,
 * and their new shares become candidates (but for the bottleneck being frozen, bottleneck, out
 * of the heap, whose flows all freeze at its share). */
static void freeze(struct flow_engine *fe, size_t i, double rate, int bottleneck)
{
  struct fab_flow *f = fe->flows[i];
  fe->frozen[i] = 1;
  fe->new_rate[i] = rate;
  double wire = rate / f->goodput_fraction; /* what its links carry */
  for (int h = 0; h < f->hops; h++) {
    int p = f->path[h];
    fe->capacity_left[p] -= wire;
    fe->weight_left[p] -= f->share_weight;
    if (--fe->unfrozen[p] > 0 && p != bottleneck)
      port_set_share(fe, p, fe->capacity_left[p] / fe->weight_left[p]);
    else if (fe->fill_pos[p] >= 0)
      port_remove(fe, p);
  }
}

/* ---- the heap of completions ---- */

/* The key (due_s, due_seq) is a total order (due_seq is unique), so the flows leave the heap in
 * the same order whatever its shape. Four children per node: half the depth of a binary heap,
 * and the four keys of a sift's step are adjacent. */
#define DUE_ARITY 4

static int due_before(const struct due_entry *a, const struct due_entry *b)
{
  return a->due_s < b->due_s || (a->due_s == b->due_s && a->due_seq < b->due_seq);
}

static void due_place(struct flow_engine *fe, struct due_entry e, size_t i)
{
  fe->due[i] = e;
  fe->slot_due[e.slot] = (int32_t)i;
}

static void due_sift_up(struct flow_engine *fe, size_t i)
{
  struct due_entry e = fe->due[i];
  while (i > 0 && due_before(&e, &fe->due[(i - 1) / DUE_ARITY])) {
    due_place(fe, fe->due[(i - 1) / DUE_ARITY], i);
    i = (i - 1) / DUE_ARITY;
  }
  due_place(fe, e, i);
}

static void due_sift_down(struct flow_engine *fe, size_t i)
{
  struct due_entry e = fe->due[i];
  for (;;) {
    size_t first = DUE_ARITY * i + 1;
    if (first >= fe->n_due)
      break;
    size_t end = first + DUE_ARITY < fe->n_due ? first + DUE_ARITY : fe->n_due, c = first;
    for (size_t k = first + 1; k < end; k++)
      if (due_before(&fe->due[k], &fe->due[c]))
        c = k;
    if (!due_before(&fe->due[c], &e))
      break;
    due_place(fe, fe->due[c], i);
    i = c;
  }
  due_place(fe, e, i);
}

/* Restores the heap at i after its entry changed or was replaced. */
static void due_fix(struct flow_engine *fe, size_t i)
{
  if (i > 0 && due_before(&fe->due[i], &fe->due[(i - 1) / DUE_ARITY]))
    due_sift_up(fe, i);
  else
    due_sift_down(fe, i);
}

/* Takes the flow's entry out, the last one in its place; returns that place, where the heap may
 * now be out of order (n_due when nothing moved). */
static size_t due_take(struct flow_engine *fe, struct fab_flow *f)
{
  size_t i = (size_t)fe->slot_due[f->engine_slot];
  fe->slot_due[f->engine_slot] = -1;
  struct due_entry last = fe->due[--fe->n_due];
  if (last.flow == f)
    return fe->n_due;
  due_place(fe, last, i);
  return i;
}

static void due_remove(struct flow_engine *fe, struct fab_flow *f)
{
  size_t i = due_take(fe, f);
  if (i < fe->n_due)
    due_fix(fe, i);
}

/* Gives the flow its new date, in its place or at the end; returns that place, where the heap
 * may now be out of order. */
static size_t due_put(struct flow_engine *fe, struct fab_flow *f, double date)
{
  /* the sequence number: the order separate calendar events would have had */
  struct due_entry e = { date, ++fe->due_seq, f, f->engine_slot };
  int32_t place = fe->slot_due[f->engine_slot];
  if (place >= 0) {
    fe->due[place] = e;
    return (size_t)place;
  }
  if (fe->n_due == fe->cap_due) {
    fe->cap_due = fe->cap_due ? 2 * fe->cap_due : 1024;
    fe->due = sgf_xrealloc(fe->due, fe->cap_due * sizeof *fe->due);
  }
  due_place(fe, e, fe->n_due);
  return fe->n_due++;
}

/* Restores the heap after many entries changed in place: bottom-up (Floyd), O(entries) where a
 * sift per change costs O(changes x log entries). */
static void due_heapify(struct flow_engine *fe)
{
  if (fe->n_due < 2)
    return;
  for (size_t i = (fe->n_due - 2) / DUE_ARITY + 1; i-- > 0;) /* from the last parent up */
    due_sift_down(fe, i);
}

/* One calendar event at the earliest completion: a new one when the earliest comes before the
 * one armed (the older becomes stale); one armed too early finds nothing due and re-arms. */
static void due_arm(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  if (fe->n_due == 0)
    return;
  double first = fe->due[0].due_s;
  if (fe->due_event_s >= 0 && fe->due_event_s <= first)
    return;
  fe->due_event_s = first;
  fabric_schedule(fab, first, FAB_EV_FLOW_DRAINED, ++fe->due_gen, NULL);
}

void fab_flow_engine_recompute(struct fabric *fab)
{
  struct flow_engine *fe = fab->fe;
  fab->stats.rate_updates++;
  collect_component(fab);
  size_t n = fe->n_flows;
  fab->stats.flows_recomputed += n;
  if (n == 0)
    return;
  for (size_t i = 0; i < n; i++)
    flow_progress(fab, fe->flows[i]);
  if (fab->model->flow.before_fill) {
    fe->in_before_fill = 1;
    fab->model->flow.before_fill(fab);
    fe->in_before_fill = 0;
  }
  for (int u = 0; u < fe->n_ports; u++) {
    int p = fe->ports[u];
    fe->capacity_left[p] = fab->port_failed != NULL && fab->port_failed[p] ? 0 : fe->capacity[p];
    fe->unfrozen[p] = fe->on_port[p].count;
    /* weighted max-min: a flow of weight w gets w times a port's fair share, the capacity left
     * over the weights of the flows not yet frozen (with every weight 1: over their count) */
    fe->weight_left[p] = fe->on_port[p].weight;
  }
  memset(fe->frozen, 0, n);
  /* Progressive filling over the component, bottleneck by bottleneck: a heap holds every port at
   * its fair share (capacity left / flows not yet frozen), a sorted list every capped flow at
   * its cap; the smallest of the two heads freezes its flows, which lowers the capacity and the
   * count of the ports they cross and moves their new shares in the heap (each port is in it
   * once, at its current share). O(crossings x log ports) rather than one scan of the
   * component per bottleneck level. The caps never move, so they are sorted once rather than
   * pushed through a heap, and a port's share moves in place rather than being pushed again
   * (under FIFO shares nearly every flow is capped, and a lazy heap of caps and superseded
   * shares, 4 entries per flow, was most of a recomputation). Both are ordered by (share, id),
   * a flow's id (-1 - its index) before any port's, so the flows freeze in the order one lazy
   * heap of both gave. */
  fe->n_fill = 0;
  for (int u = 0; u < fe->n_ports; u++) {
    int p = fe->ports[u];
    if (fe->unfrozen[p] > 0)
      port_insert(fe, p, fe->capacity_left[p] / fe->weight_left[p]);
  }
  size_t n_capped = 0, next_capped = 0;
  for (size_t i = n; i-- > 0;) { /* decreasing index: increasing id; a cap binds at the level cap / (weight x
                                  * goodput fraction), where its wire rate reaches the cap's */
    const struct fab_flow *f = fe->flows[i];
    if (fab_flow_cap(f) > 0)
      fe->capped[n_capped++] =
          (struct fill_entry){ fab_flow_cap(f) / (f->share_weight * f->goodput_fraction), -1 - (int32_t)i };
  }
  sort_capped(fe->capped, fe->capped_tmp, n_capped);
  size_t left = n;
  while (left > 0 && (fe->n_fill > 0 || next_capped < n_capped)) {
    struct fill_entry e;
    refresh_top(fe);
    if (next_capped < n_capped &&
        (fe->n_fill == 0 || fe->capped[next_capped].share <= fe->fill_share[fe->fill_heap[0]])) {
      e = fe->capped[next_capped++]; /* a flow's id sorts before any port's at an equal share */
    } else {
      e = (struct fill_entry){ fe->fill_share[fe->fill_heap[0]], fe->fill_heap[0] };
      port_remove(fe, e.id);
    }
    if (e.id < 0) {
      size_t i = (size_t)(-1 - e.id);
      if (!fe->frozen[i]) {
        freeze(fe, i, fab_flow_cap(fe->flows[i]), -1);
        left--;
      }
      continue;
    }
    int p = e.id;
    double share = e.share > 0 ? e.share : 0;
    const struct port_flows *pf = &fe->on_port[p];
    for (int k = 0; k < pf->count; k++) {
      size_t i = (size_t)fe->slot_fill[pf->slots[k]];
      if (!fe->frozen[i]) {
        freeze(fe, i, share * pf->flows[k]->share_weight * pf->flows[k]->goodput_fraction, p);
        left--;
      }
    }
  }
  SGF_CHECK(left == 0, "%zu flows of the component cross none of its ports", left);
  /* New drain dates for flows whose rate changed: each sifted into the heap, or, when the
   * component is a good part of the heap, all put in place and the heap rebuilt once (O(heap),
   * no more than the recomputation's own walk). The keys are the same either way (dates and
   * sequence numbers in this order), and so is the order the flows drain in. */
  int rebuild = n > 64 && n > fe->n_due / 8;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = fe->flows[i];
    if (fe->new_rate[i] == f->rate_Bps)
      continue;
    f->rate_Bps = fe->new_rate[i];
    if (f->rate_Bps > 0) {
      size_t place = due_put(fe, f, fab->now + f->remaining / f->rate_Bps);
      if (!rebuild)
        due_fix(fe, place);
    } else if (fe->slot_due[f->engine_slot] >= 0) {
      size_t place = due_take(fe, f);
      if (!rebuild && place < fe->n_due)
        due_fix(fe, place);
    }
  }
  if (rebuild)
    due_heapify(fe);
  due_arm(fab);
}

/* A drained flow leaves the active set; it completes after its path's tail latency. */
static void flow_drained(struct fabric *fab, struct fab_flow *f)
{
  count_wire_extra(fab, f, f->remaining); /* the last bytes, at the rate since the last update */
  f->remaining = 0;
  f->state = FLOW_DRAINED;
  remove_active(fab->fe, f);
  /* Store-and-forward, the train's largest packet sets the pace of the last hops. */
  double largest_packet = f->bytes < fab->mtu ? f->bytes : fab->mtu;
  fabric_schedule(fab, fab->now + fabric_path_tail_latency(fab, f, largest_packet) + f->extra_latency_s,
                  FAB_EV_FLOW_DONE, 0, f);
}

/* Collects into fe->draining the entries of the heap's subtree at i that are nearly due. */
static void collect_nearly_due(struct flow_engine *fe, size_t i, double now, double horizon)
{
  if (i >= fe->n_due || fe->due[i].due_s > horizon)
    return; /* a heap: the whole subtree is later */
  const struct due_entry *e = &fe->due[i];
  if (e->due_s - now <= fe->drain_tolerance * (e->due_s - e->flow->start_s)) {
    if (fe->n_draining == fe->cap_draining) {
      fe->cap_draining = fe->cap_draining ? 2 * fe->cap_draining : 256;
      fe->draining = sgf_xrealloc(fe->draining, fe->cap_draining * sizeof *fe->draining);
    }
    fe->draining[fe->n_draining++] = *e;
  }
  for (size_t c = DUE_ARITY * i + 1; c <= DUE_ARITY * i + DUE_ARITY; c++)
    collect_nearly_due(fe, c, now, horizon);
}

static int cmp_due(const void *a, const void *b)
{
  const struct due_entry *x = a, *y = b;
  return due_before(x, y) ? -1 : due_before(y, x) ? 1 : 0;
}

/* The flows due within fabric/flow-drain-tolerance of their age drain with the ones due now, in
 * the order of their dates: one recomputation for the lot. A flow started at t0 and due at d
 * qualifies when d - now <= tol (d - t0), and only within tol x the age of the oldest flow
 * drained now: that bounds the heap's walk (bounded by d <= now / (1 - tol) alone, it visited
 * every flow due in the next 3 ms of a 3 s iteration at each drain: 8 % of a 10,240-GPU run). */
static void drain_nearly_due(struct fabric *fab, double oldest_age_s)
{
  struct flow_engine *fe = fab->fe;
  fe->n_draining = 0;
  collect_nearly_due(fe, 0, fab->now, fab->now + fe->drain_tolerance * oldest_age_s);
  if (fe->n_draining > 1) /* qsort's base must not be NULL, even for zero elements (C11 7.22.5) */
    qsort(fe->draining, fe->n_draining, sizeof *fe->draining, cmp_due);
  for (size_t k = 0; k < fe->n_draining; k++) {
    due_remove(fe, fe->draining[k].flow);
    flow_drained(fab, fe->draining[k].flow);
    request_recompute(fab);
  }
}

void fab_flow_engine_event(struct fabric *fab, const struct fab_event *ev)
{
  struct flow_engine *fe = fab->fe;
  switch (ev->type) {
  case FAB_EV_FLOW_RECOMPUTE:
    fe->recompute_pending = 0;
    fab_flow_engine_recompute(fab);
    if (fab->model->flow.on_rates)
      fab->model->flow.on_rates(fab);
    break;
  case FAB_EV_FLOW_DRAINED:
    if (ev->arg != fe->due_gen)
      break; /* stale: an earlier completion was armed since */
    fe->due_event_s = -1;
    /* every flow due now, in the order their dates were set */
    double oldest_age_s = 0;
    while (fe->n_due > 0 && fe->due[0].due_s <= fab->now) {
      struct fab_flow *f = fe->due[0].flow;
      if (fab->now - f->start_s > oldest_age_s)
        oldest_age_s = fab->now - f->start_s;
      due_remove(fe, f);
      flow_drained(fab, f);
      request_recompute(fab);
    }
    if (fe->drain_tolerance > 0 && oldest_age_s > 0)
      drain_nearly_due(fab, oldest_age_s);
    due_arm(fab);
    break;
  case FAB_EV_FLOW_DONE: {
    struct fab_flow *f = ev->ptr;
    f->delivered = f->bytes;
    fabric_flow_finished(fab, f);
    break;
  }
  default: sgf_fatal(__FILE__, __LINE__, "unknown flow event type %u", ev->type);
  }
}
