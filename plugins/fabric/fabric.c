/* The fabric core: creation, posting transfers, the calendar loop and the statistics. */
#include "fabric.h"
#include "failure.h"
#include "why.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "check.h"

const struct param_def fabric_params[] = {
  { "fabric/mtu", PARAM_INT, UNIT_BYTES, "4096", 256, 65536, NULL,
    "Largest payload of one packet; transfers are segmented into MTU packets",
    "IBTA Vol.1 MTU 4096; RoCEv2 over a 4200B+ Ethernet MTU" },
  { "fabric/switching", PARAM_ENUM, UNIT_NONE, "cut-through", 0, 0, "cut-through|store-and-forward",
    "Whether a switch forwards a packet once its head arrived or once all of it arrived",
    "data-centre switch ASICs cut through when the egress port is idle" },
  { "fabric/nic-latency", PARAM_REAL, UNIT_SECONDS, "500ns", 0, 1e-3, NULL,
    "Sender NIC processing delay added before a transfer's first packet", "SimAI topology templates: NIC 0.5us" },
  { "fabric/routing", PARAM_ENUM, UNIT_NONE, "ecmp", 0, 0, "ecmp|adaptive",
    "Ideal fabric's path choice: a per-flow hash, or per packet the least-queued minimal port",
    "ECMP: RFC 2992 hash-threshold; adaptive: least-loaded port as in IB AR" },
  { "fabric/link-stats", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL,
    "Write links.csv with the bytes and utilisation of every fabric link direction", "" },
  { "fabric/watchdog-events", PARAM_INT, UNIT_NONE, "50000000", 0, 2e9, NULL,
    "Livelock watchdog: stop with an error after this many events in a row at one simulated date, "
    "or (packet fidelity) without a byte delivered; 0 turns it off",
    "a 2-tier fabric delivers a packet every few events; 50 M is minutes of a stuck run" },
  { "fabric/flow-drain-tolerance", PARAM_REAL, UNIT_NONE, "0.001", 0, 0.1, NULL,
    "Flow fidelity: a flow due to drain within this fraction of its age of another's drain drains with it "
    "(one rate recomputation for the lot); 0 drains every flow at its exact date",
    "an all-to-all's completions cluster within ns; 1e-3 moves each FCT by at most 0.1 %" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void fabric_register_params(void) { fab_param_register(fabric_params); }

const struct fab_model fab_model_ideal = { .name = "ideal" };

/* The plugin-style selection: one model per process, as SimGrid runs one simulation per process. */
static const struct fab_model *g_plugin_model;
static int g_plugin_platform_loaded;

void fabric_plugin_select(const struct fab_model *model, const char *caller)
{
  /* A usage error of the calling program, not an internal one: its own message, then stop. */
  if (g_plugin_platform_loaded || (g_plugin_model != NULL && g_plugin_model != model)) {
    if (g_plugin_platform_loaded)
      fprintf(stderr, "%s: called after the platform was loaded; call it before sgf_load_platform()\n", caller);
    else
      fprintf(stderr, "%s: the %s fabric plugin was initialised already; a simulation has one fabric model\n", caller,
              g_plugin_model->name);
    abort();
  }
  g_plugin_model = model;
}

const struct fab_model *fabric_plugin_model(void) { return g_plugin_model; }
void fabric_plugin_mark_loaded(void) { g_plugin_platform_loaded = 1; }

#define SLAB_ITEMS 4096

static void *slab_alloc(struct fabric *fab, size_t item_size)
{
  if (fab->slab_count == fab->slab_capacity) {
    fab->slab_capacity = fab->slab_capacity ? 2 * fab->slab_capacity : 16;
    fab->slabs = sgf_xrealloc(fab->slabs, fab->slab_capacity * sizeof *fab->slabs);
  }
  void *slab = sgf_xcalloc(SLAB_ITEMS, item_size);
  fab->slabs[fab->slab_count++] = slab;
  return slab;
}

static struct fab_flow *flow_alloc(struct fabric *fab)
{
  if (fab->free_flows == NULL) {
    struct fab_flow *slab = slab_alloc(fab, sizeof(struct fab_flow));
    for (int i = SLAB_ITEMS - 1; i >= 0; i--) {
      slab[i].free_next = fab->free_flows;
      fab->free_flows = &slab[i];
    }
  }
  struct fab_flow *flow = fab->free_flows;
  fab->free_flows = flow->free_next;
  memset(flow, 0, sizeof *flow);
  flow->share_weight = 1;
  flow->goodput_fraction = 1;
  return flow;
}

struct fab_packet *fabric_packet_alloc(struct fabric *fab)
{
  if (fab->free_packets == NULL) {
    struct fab_packet *slab = slab_alloc(fab, sizeof(struct fab_packet));
    for (int i = SLAB_ITEMS - 1; i >= 0; i--) {
      slab[i].next = fab->free_packets;
      fab->free_packets = &slab[i];
    }
  }
  struct fab_packet *pkt = fab->free_packets;
  fab->free_packets = pkt->next;
  memset(pkt, 0, sizeof *pkt);
  return pkt;
}

void fabric_packet_free(struct fabric *fab, struct fab_packet *pkt)
{
  pkt->next = fab->free_packets;
  fab->free_packets = pkt;
}

struct fabric *fabric_new(struct topo *topo, const struct param_set *params, const struct fab_model *model,
                          fab_fidelity fidelity, uint64_t seed, char *err, size_t errlen)
{
  struct fabric *fab = calloc(1, sizeof *fab);
  if (fab == NULL)
    return NULL;
  fab->topo = topo;
  fab->params = params;
  fab->model = model ? model : &fab_model_ideal;
  fab->fidelity = fidelity;
  fab->seed = seed;
  fab->route_seed = seed;
  fab_rng_seed(&fab->rng, seed);
  fab_heap_init(&fab->events);
  fab->mtu = fab_param_get(params, "fabric/mtu");
  fab->switching = (fab_switching)fab_param_get_choice(params, "fabric/switching");
  fab->routing = (fab_routing)fab_param_get_choice(params, "fabric/routing");
  fab->nic_latency_s = fab_param_get(params, "fabric/nic-latency");
  fab->switch_latency_s = topo->switch_latency_s;
  fab->watchdog_events = (uint64_t)fab_param_get(params, "fabric/watchdog-events");
  fab->wd_date = -1;
  fab->free_timer = -1;
  fab->ports = calloc((size_t)topo->n_ports + 1, sizeof *fab->ports);
  /* The flow engine also carries NVLink transfers at packet fidelity (see flow_start). */
  fab->fe = fab_flow_engine_new(fab);
  if (fab->model->state_size > 0)
    fab->model_state = sgf_xcalloc(1, fab->model->state_size);
  if (fab->model->lifecycle.init && fab->model->lifecycle.init(fab, err, errlen) != 0) {
    fabric_free(fab);
    return NULL;
  }
  /* The model chose its framing (and maybe the MTU): flow capacities are payload rates. */
  fab_flow_engine_init_capacity(fab);
  return fab;
}

void fabric_free(struct fabric *fab)
{
  if (fab == NULL)
    return;
  if (fab->model && fab->model->lifecycle.fini)
    fab->model->lifecycle.fini(fab);
  free(fab->model_state);
  fab_flow_engine_free(fab->fe);
  fab_why_free(fab->why);
  fab_failures_free(fab->failures);
  free(fab->port_failed);
  free(fab->innet_trees);
  /* A stopped run (watchdog) leaves events behind: the timers' closures are in the slabs. */
  fab_heap_free(&fab->events);
  for (size_t i = 0; i < fab->slab_count; i++)
    free(fab->slabs[i]);
  free(fab->slabs);
  free(fab->timers);
  free(fab->ports);
  free(fab);
}

struct fab_call {
  void (*fn)(struct fabric *fab, void *ctx);
  void *ctx;
  struct fab_call *free_next;
};

void fabric_call_at(struct fabric *fab, double time, void (*fn)(struct fabric *fab, void *ctx), void *ctx)
{
  if (fab->free_calls == NULL) {
    struct fab_call *slab = slab_alloc(fab, sizeof(struct fab_call));
    for (int i = SLAB_ITEMS - 1; i >= 0; i--) {
      slab[i].free_next = fab->free_calls;
      fab->free_calls = &slab[i];
    }
  }
  struct fab_call *call = fab->free_calls;
  fab->free_calls = call->free_next;
  call->fn = fn;
  call->ctx = ctx;
  fabric_schedule(fab, time, FAB_EV_CALL, 0, call);
}

void fabric_schedule(struct fabric *fab, double time, uint32_t type, uint32_t arg, void *ptr)
{
  fab_heap_push(&fab->events, time, type, arg, ptr);
}

static uint32_t timer_slot(struct fabric *fab)
{
  if (fab->free_timer < 0) {
    if (fab->n_timers == fab->cap_timers) {
      SGF_CHECK(fab->cap_timers < (1u << 30), "more than 2^30 model timers pending");
      fab->cap_timers = fab->cap_timers ? 2 * fab->cap_timers : 64;
      fab->timers = sgf_xrealloc(fab->timers, fab->cap_timers * sizeof *fab->timers);
    }
    fab->timers[fab->n_timers] = (struct fab_timer){ .gen = 1, .free_next = -1 };
    fab->free_timer = (int32_t)fab->n_timers++;
  }
  uint32_t slot = (uint32_t)fab->free_timer;
  fab->free_timer = fab->timers[slot].free_next;
  return slot;
}

static fab_timer_id timer_new(struct fabric *fab, int kind, void *ptr, uint32_t arg, uint32_t *slot)
{
  *slot = timer_slot(fab);
  struct fab_timer *t = &fab->timers[*slot];
  t->ptr = ptr;
  t->arg = arg;
  t->kind = kind;
  t->armed = 1;
  t->cancelled = 0;
  return (uint64_t)t->gen << 32 | *slot;
}

fab_timer_id fabric_timer_arm(struct fabric *fab, double date, int kind, void *ptr, uint32_t arg)
{
  uint32_t slot;
  fab_timer_id id = timer_new(fab, kind, ptr, arg, &slot);
  fabric_schedule(fab, date, FAB_EV_TIMER, slot, NULL);
  return id;
}

fab_timer_id fabric_timer_arm_seq(struct fabric *fab, double date, uint64_t seq, int kind, void *ptr, uint32_t arg)
{
  uint32_t slot;
  fab_timer_id id = timer_new(fab, kind, ptr, arg, &slot);
  fab_heap_push_seq(&fab->events, date, seq, FAB_EV_TIMER, slot, NULL);
  return id;
}

/* The live slot of id, or NULL. */
static struct fab_timer *timer_of(const struct fabric *fab, fab_timer_id id)
{
  uint32_t slot = (uint32_t)id;
  if (id == 0 || slot >= fab->n_timers)
    return NULL;
  struct fab_timer *t = &fab->timers[slot];
  return t->armed && !t->cancelled && t->gen == (uint32_t)(id >> 32) ? t : NULL;
}

int fabric_timer_cancel(struct fabric *fab, fab_timer_id id)
{
  struct fab_timer *t = timer_of(fab, id);
  if (t == NULL)
    return 0;
  t->cancelled = 1;
  return 1;
}

int fabric_timer_pending(const struct fabric *fab, fab_timer_id id) { return timer_of(fab, id) != NULL; }

/* A timer's date came: its slot is freed first (the model may arm timers from on_timer), then the
 * model is called unless the timer was cancelled. */
static void timer_fire(struct fabric *fab, uint32_t slot)
{
  struct fab_timer *t = &fab->timers[slot];
  int cancelled = t->cancelled, kind = t->kind;
  void *ptr = t->ptr;
  uint32_t arg = t->arg;
  t->armed = 0;
  t->cancelled = 0;
  t->gen = t->gen == UINT32_MAX ? 1 : t->gen + 1;
  t->free_next = fab->free_timer;
  fab->free_timer = (int32_t)slot;
  fab->fired_kind = kind;
  fab->fired_arg = arg;
  if (!cancelled && fab->model->timers.on_timer)
    fab->model->timers.on_timer(fab, kind, ptr, arg);
}

/* A flow's hash key (ECMP path choice, adaptive-routing tie-breaks): its id and endpoints mixed. */
static uint64_t flow_key(uint64_t id, int src_gpu, int dst_gpu)
{
  return fab_rng_mix64(id ^ ((uint64_t)(unsigned)src_gpu << 40) ^ ((uint64_t)(unsigned)dst_gpu << 20));
}

void fabric_flow_renumber(struct fabric *fab, struct fab_flow *flow, uint64_t id)
{
  if (flow->id + 1 == fab->next_flow_id)
    fab->next_flow_id--; /* its number goes back to the sequence */
  flow->id = id;
  flow->key = flow_key(id, flow->src_gpu, flow->dst_gpu);
}

int fabric_bytes_valid(double bytes) { return bytes >= 0 && bytes <= FAB_MAX_TRANSFER_BYTES && bytes == floor(bytes); }

/* A new flow, pending from start_s (or now), with the next id of the sequence. */
static struct fab_flow *flow_posted(struct fabric *fab, int src_gpu, int dst_gpu, double bytes, double start_s, int tag,
                                    fab_done_fn on_done, void *ctx)
{
  struct fab_flow *flow = flow_alloc(fab);
  flow->id = fab->next_flow_id++;
  flow->src_gpu = src_gpu;
  flow->dst_gpu = dst_gpu;
  flow->tag = tag >= 0 && tag < FAB_MAX_TAGS ? tag : 0;
  flow->bytes = bytes;
  flow->post_s = start_s > fab->now ? start_s : fab->now;
  flow->on_done = on_done;
  flow->ctx = ctx;
  flow->state = FLOW_PENDING;
  flow->active_index = -1;
  return flow;
}

struct fab_flow *fabric_post(struct fabric *fab, int src_gpu, int dst_gpu, double bytes, double start_s, int tag,
                             fab_done_fn on_done, void *ctx)
{
  SGF_CHECK(fabric_bytes_valid(bytes),
            "transfer of %.17g bytes from GPU %d to GPU %d is not a whole number of bytes "
            "in 0..2^50",
            bytes, src_gpu, dst_gpu);
  struct fab_flow *flow = flow_posted(fab, src_gpu, dst_gpu, bytes, start_s, tag, on_done, ctx);
  flow->key = flow_key(flow->id, src_gpu, dst_gpu);
  fab->stats.flows_posted++;
  fabric_schedule(fab, flow->post_s + fab->nic_latency_s, FAB_EV_FLOW_START, 0, flow);
  return flow;
}

struct fab_flow *fabric_post_path(struct fabric *fab, int gpu, const int *ports, int hops, double bytes, double start_s,
                                  int tag, double cap_Bps, fab_done_fn on_done, void *ctx)
{
  const struct topo *t = fab->topo;
  SGF_CHECK(fabric_bytes_valid(bytes) && hops >= 1 && hops <= ROUTE_MAX_HOPS,
            "fixed-path transfer of %.17g bytes over %d hops", bytes, hops);
  for (int h = 0; h < hops; h++)
    SGF_CHECK(ports[h] >= 0 && ports[h] < t->n_ports &&
                  (h == 0 || t->ports[ports[h]].node == t->ports[ports[h - 1]].peer_node),
              "fixed path hop %d (port %d) does not follow the previous one", h, ports[h]);
  struct fab_flow *flow = flow_posted(fab, gpu, gpu, bytes, start_s, tag, on_done, ctx);
  flow->key = fab_rng_mix64(flow->id ^ ((uint64_t)(unsigned)gpu << 40) ^ ((uint64_t)(unsigned)ports[0] << 20));
  flow->fixed_path = 1;
  flow->hops = (uint8_t)hops;
  for (int h = 0; h < hops; h++)
    flow->path[h] = ports[h];
  flow->own_cap_Bps = cap_Bps > 0 ? cap_Bps : 0;
  fab->stats.flows_posted++;
  int from_gpu = t->nodes[t->ports[ports[0]].node].kind == TOPO_GPU;
  fabric_schedule(fab, flow->post_s + (from_gpu ? fab->nic_latency_s : 0), FAB_EV_FLOW_START, 0, flow);
  return flow;
}

/* A fabric_post_path transfer starts: the model sees it (its queue, its per-flow state), its path
 * and cap stay the caller's, and it rides the flow engine. */
static void fixed_flow_start(struct fabric *fab, struct fab_flow *flow)
{
  const struct topo *t = fab->topo;
  if (fab->model->lifecycle.flow_start)
    fab->model->lifecycle.flow_start(fab, flow);
  const struct topo_port *first = &t->ports[flow->path[0]];
  if (t->nodes[first->node].kind == TOPO_GPU)
    (first->is_nvlink ? fab->stats.nvlink_bytes : fab->stats.fabric_bytes)[flow->tag] += flow->bytes;
  fab->active_flows++;
  if (flow->bytes <= 0) {
    flow->delivered = flow->bytes;
    fabric_flow_finished(fab, flow);
    return;
  }
  fab_flow_engine_start_flow(fab, flow);
  if (fab->failures != NULL)
    fabric_failures_flow_started(fab, flow);
}

static void flow_start(struct fabric *fab, struct fab_flow *flow)
{
  const struct topo *t = fab->topo;
  flow->start_s = fab->now;
  flow->state = FLOW_ACTIVE;
  if (flow->fixed_path) {
    fixed_flow_start(fab, flow);
    return;
  }
  if (fab->model->lifecycle.flow_start)
    fab->model->lifecycle.flow_start(fab, flow);
  int hops = 0;
  if (flow->src_gpu != flow->dst_gpu)
    hops = fab->model->lifecycle.flow_path ? fab->model->lifecycle.flow_path(fab, flow)
                                           : fab_route_hashed_path(t, flow->src_gpu, flow->dst_gpu, flow->key,
                                                                   fab->route_seed, flow->path, ROUTE_MAX_HOPS);
  if (hops < 0 && fab->failures != NULL)
    hops = fabric_failures_route_fallback(fab, flow); /* no live path: the fault-free one, stalled */
  SGF_CHECK(hops >= 0, "no route from GPU %d to GPU %d", flow->src_gpu, flow->dst_gpu);
  flow->hops = (uint8_t)hops;
  if (fab->why && hops > 0 && flow->bytes > 0)
    fab_why_flow_start(fab, flow);
  double *counter = hops > 0 && t->ports[flow->path[0]].is_nvlink ? fab->stats.nvlink_bytes : fab->stats.fabric_bytes;
  if (hops > 0)
    counter[flow->tag] += flow->bytes;
  fab->active_flows++;
  if (hops == 0 || flow->bytes <= 0) {
    flow->delivered = flow->bytes;
    fabric_flow_finished(fab, flow);
    return;
  }
  /* Intra-node transfers ride the NVSwitch as fluid flows at either fidelity: the fabric's
   * mechanisms (credits, PFC, ECN) do not apply to NVLink, and 4 KB packets at 450 GB/s would
   * cost events without changing the answer. */
  if (fab->fidelity == FAB_FIDELITY_PACKET && !t->ports[flow->path[0]].is_nvlink)
    fab_pkt_engine_start_flow(fab, flow);
  else
    fab_flow_engine_start_flow(fab, flow);
  if (fab->failures != NULL)
    fabric_failures_flow_started(fab, flow);
}

struct fab_flow *fabric_flow_split(struct fabric *fab, struct fab_flow *flow, double bytes, uint64_t key)
{
  struct fab_flow *part = flow_alloc(fab);
  part->id = flow->id;
  part->key = key;
  part->src_gpu = flow->src_gpu;
  part->dst_gpu = flow->dst_gpu;
  part->tag = flow->tag;
  part->bytes = bytes;
  part->message_B = flow->message_B;
  part->ring_step = flow->ring_step;
  part->post_s = flow->post_s;
  part->state = FLOW_PENDING;
  part->active_index = -1;
  part->parent = flow;
  /* The whole keeps only its own share while it runs (its NIC injects that much); the parts'
   * bytes come back when every part is done. */
  flow->bytes -= bytes;
  flow->split_bytes += bytes;
  flow->parts_left++;
  flow_start(fab, part);
  return part;
}

void fabric_flow_finished(struct fabric *fab, struct fab_flow *flow)
{
  fab->wd_progress++;
  if (fab->why)
    fab_why_flow_end(fab, flow);
  flow->state = FLOW_DONE;
  flow->finish_s = fab->now;
  fab->active_flows--;
  if (flow->in_ring)
    fab_pkt_engine_forget_flow(fab, flow);
  if (fab->failures != NULL && fab->fidelity == FAB_FIDELITY_PACKET)
    fabric_failures_flow_finished(fab, flow);
  if (flow->parent) {
    struct fab_flow *whole = flow->parent;
    if (fab->model->lifecycle.flow_done)
      fab->model->lifecycle.flow_done(fab, flow);
    flow->free_next = fab->free_flows;
    fab->free_flows = flow;
    if (--whole->parts_left > 0 || whole->state != FLOW_DONE)
      return;
    flow = whole;
    flow->finish_s = fab->now;
  } else if (flow->parts_left > 0) {
    return;
  }
  flow->bytes += flow->split_bytes;
  flow->delivered = flow->bytes;
  fab->stats.flows_done++;
  fab->stats.bytes_delivered += flow->bytes;
  double fct = flow->finish_s - flow->post_s;
  fab->stats.fct_sum_s += fct;
  if (fct > fab->stats.fct_max_s)
    fab->stats.fct_max_s = fct;
  if (flow->finish_s > fab->stats.last_delivery_s)
    fab->stats.last_delivery_s = flow->finish_s;
  if (fab->model->lifecycle.flow_done)
    fab->model->lifecycle.flow_done(fab, flow);
  if (flow->on_done)
    flow->on_done(fab, flow, flow->ctx);
  flow->free_next = fab->free_flows;
  fab->free_flows = flow;
}

double fabric_path_tail_latency(const struct fabric *fab, const struct fab_flow *flow, double packet_bytes)
{
  const struct topo *t = fab->topo;
  double latency = 0;
  for (int h = 0; h < flow->hops; h++) {
    const struct topo_port *p = &t->ports[flow->path[h]];
    latency += p->latency_s;
    const struct topo_node *peer = &t->nodes[p->peer_node];
    if (peer->kind == TOPO_SWITCH)
      latency += fab->switch_latency_s;
    else if (peer->kind == TOPO_NVSWITCH)
      latency += t->nvswitch_latency_s;
    if (h > 0 && fab->switching == FAB_SWITCHING_STORE_AND_FORWARD && packet_bytes > 0)
      latency += (packet_bytes + (p->is_nvlink ? 0 : fab->frame_overhead_B)) / p->rate_Bps;
  }
  return latency;
}

static void dispatch(struct fabric *fab, const struct fab_event *ev)
{
  fab->stats.events++;
  switch (ev->type) {
  case FAB_EV_FLOW_START: flow_start(fab, ev->ptr); break;
  case FAB_EV_TX_DONE:
  case FAB_EV_ARRIVE:
  case FAB_EV_KICK: fab_pkt_engine_event(fab, ev); break;
  case FAB_EV_FLOW_DRAINED:
  case FAB_EV_FLOW_DONE:
  case FAB_EV_FLOW_RECOMPUTE: fab_flow_engine_event(fab, ev); break;
  case FAB_EV_CALL: {
    struct fab_call *call = ev->ptr;
    void (*fn)(struct fabric *, void *) = call->fn;
    void *ctx = call->ctx;
    call->free_next = fab->free_calls;
    fab->free_calls = call;
    fn(fab, ctx);
    break;
  }
  case FAB_EV_TIMER: timer_fire(fab, ev->arg); break;
  default: sgf_fatal(__FILE__, __LINE__, "unknown event type %u", ev->type);
  }
}

static const char *event_name(uint32_t type)
{
  static const char *const names[] = { "flow start",
                                       "end of a packet's transmission",
                                       "packet arrival",
                                       "port retry",
                                       "flow drained",
                                       "flow done",
                                       "rate recomputation",
                                       "model timer",
                                       "timer" };
  return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

/* Describes a port: link, direction, queues. */
static int describe_port(const struct fabric *fab, int port, char *out, size_t len)
{
  const struct topo *t = fab->topo;
  if (port < 0 || port >= t->n_ports)
    return snprintf(out, len, "port %d", port);
  const struct topo_port *tp = &t->ports[port];
  const struct fab_port *fp = &fab->ports[port];
  int n = snprintf(out, len, "port %d (%s->%s, link %s): %s, %.0f bytes queued (", port, t->nodes[tp->node].name,
                   t->nodes[tp->peer_node].name, t->links[tp->link].name, fp->busy ? "transmitting" : "idle",
                   fp->total_queued);
  for (int q = 0; q < FAB_MAX_QUEUES && n >= 0 && (size_t)n < len; q++)
    n += snprintf(out + n, len - (size_t)n, "%s%.0f", q ? " " : "queue bytes ", fp->queued_bytes[q]);
  if (n >= 0 && (size_t)n < len)
    n += snprintf(out + n, len - (size_t)n, ")");
  return n;
}

static int describe_flow(const struct fab_flow *f, char *out, size_t len)
{
  return snprintf(out, len, "flow %llu (GPU %d -> GPU %d, %.17g bytes, %.17g injected, %.17g delivered)",
                  (unsigned long long)f->id, f->src_gpu, f->dst_gpu, f->bytes, f->injected, f->delivered);
}

/* The watchdog fired on ev: the report names what the run was doing, and the fabric stops. */
static void watchdog_trip(struct fabric *fab, const struct fab_event *ev, const char *why)
{
  char what[512] = "";
  switch (ev->type) {
  case FAB_EV_TX_DONE:
  case FAB_EV_KICK: describe_port(fab, (int)ev->arg, what, sizeof what); break;
  case FAB_EV_ARRIVE: {
    const struct fab_packet *pkt = ev->ptr;
    int n = snprintf(what, sizeof what, "packet %u of %u bytes at node %s of ", pkt->seq, pkt->bytes,
                     fab->topo->nodes[pkt->node].name);
    if (n >= 0 && (size_t)n < sizeof what)
      describe_flow(pkt->flow, what + n, sizeof what - (size_t)n);
    break;
  }
  case FAB_EV_FLOW_START:
  case FAB_EV_FLOW_DONE: describe_flow(ev->ptr, what, sizeof what); break;
  case FAB_EV_FLOW_DRAINED: snprintf(what, sizeof what, "the flows that drain at this date"); break;
  case FAB_EV_TIMER: snprintf(what, sizeof what, "kind %d, argument %u", fab->fired_kind, fab->fired_arg); break;
  default: snprintf(what, sizeof what, "argument %u", ev->arg); break;
  }
  snprintf(fab->stall_msg, sizeof fab->stall_msg,
           "livelock: %llu events %s (fabric/watchdog-events = %llu) at simulated time %.17g s; last event: %s, %s; "
           "%llu flows active, %llu of %llu done, %zu events pending",
           (unsigned long long)fab->watchdog_events, why, (unsigned long long)fab->watchdog_events, fab->now,
           event_name(ev->type), what, (unsigned long long)fab->active_flows, (unsigned long long)fab->stats.flows_done,
           (unsigned long long)fab->stats.flows_posted, heap_size(&fab->events));
  fab->stalled = 1;
}

/* Counts the event just processed against the watchdog's two criteria: simulated time must move,
 * and at packet fidelity bytes must reach their destination (a packet loop can move time forward,
 * e.g. pauses and resumes that never let a packet through). Flow fidelity has no per-byte
 * progress between completions, so only the first criterion applies there. */
static void watchdog_count(struct fabric *fab, const struct fab_event *ev)
{
  if (fab->now != fab->wd_date) {
    fab->wd_date = fab->now;
    fab->wd_same_date = 0;
  }
  if (++fab->wd_same_date >= fab->watchdog_events) {
    watchdog_trip(fab, ev, "in a row at one simulated date");
    return;
  }
  if (fab->fidelity != FAB_FIDELITY_PACKET)
    return;
  if (fab->wd_progress != fab->wd_seen_progress) {
    fab->wd_seen_progress = fab->wd_progress;
    fab->wd_no_progress = 0;
  }
  if (++fab->wd_no_progress >= fab->watchdog_events)
    watchdog_trip(fab, ev, "without a byte delivered");
}

/* Whether an event is left, after asking the model for the events it held back when none is. */
static int have_event(struct fabric *fab)
{
  if (fab->stalled)
    return 0;
  if (heap_size(&fab->events) == 0 && fab->model->timers.on_idle)
    fab->model->timers.on_idle(fab);
  return heap_size(&fab->events) > 0;
}

double fabric_next_time(struct fabric *fab) { return have_event(fab) ? fab_heap_top_time(&fab->events) : -1; }

void fabric_advance(struct fabric *fab, double until)
{
  struct fab_event ev;
  while (have_event(fab) && fab_heap_pop_until(&fab->events, until, &ev) == 0) {
    if (ev.time > fab->now)
      fab->now = ev.time;
    fab->cur_seq = ev.seq;
    dispatch(fab, &ev);
    if (fab->watchdog_events > 0)
      watchdog_count(fab, &ev);
  }
}

void fabric_run(struct fabric *fab) { fabric_advance(fab, HUGE_VAL); }

int fabric_ended_too_late(double end_s, char *msg, size_t len)
{
  if (!(end_s > FAB_MAX_DATE_S))
    return 0;
  snprintf(msg, len,
           "end %.3g s into the simulation, later than %.0f s, where dates no longer time a packet (a double "
           "resolves t x 2^-52)",
           end_s, FAB_MAX_DATE_S);
  return 1;
}

double fabric_active_time(const struct fabric *fab)
{
  if (fab->stats.active_end_s > 0)
    return fab->stats.active_end_s;
  if (fab->stats.last_delivery_s > 0)
    return fab->stats.last_delivery_s;
  return fab->now > 0 ? fab->now : 1;
}

static struct fab_counter *counter_add(struct fab_counters *c, const char *name, int type, int modelled)
{
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->items = sgf_xrealloc(c->items, c->cap * sizeof *c->items);
  }
  struct fab_counter *k = &c->items[c->n++];
  memset(k, 0, offsetof(struct fab_counter, text) + 1);
  k->name = name;
  k->type = (uint8_t)type;
  k->modelled = modelled != 0;
  return k;
}

void fabric_counter_real(struct fab_counters *c, const char *name, int modelled, double value)
{
  counter_add(c, name, FAB_COUNTER_REAL, modelled)->value = value;
}

void fabric_counter_count(struct fab_counters *c, const char *name, int modelled, uint64_t count)
{
  counter_add(c, name, FAB_COUNTER_COUNT, modelled)->count = count;
}

void fabric_counter_text(struct fab_counters *c, const char *name, const char *fmt, ...)
{
  struct fab_counter *k = counter_add(c, name, FAB_COUNTER_TEXT, 1);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->text, sizeof k->text, fmt, ap);
  va_end(ap);
}

void fabric_counter_port_map(struct fab_counters *c, const char *name, const double *per_port, int rounded)
{
  struct fab_counter *k = counter_add(c, name, FAB_COUNTER_PORT_MAP, 1);
  k->per_port = per_port;
  k->rounded = rounded != 0;
}

void fabric_counters_free(struct fab_counters *c)
{
  free(c->items);
  memset(c, 0, sizeof *c);
}

void fabric_counters(struct fabric *fab, struct fab_counters *c)
{
  const struct fab_stats *s = &fab->stats;
  int packet = fab->fidelity == FAB_FIDELITY_PACKET;
  double fabric_total = 0, nvlink_total = 0;
  for (int i = 0; i < FAB_MAX_TAGS; i++) {
    fabric_total += s->fabric_bytes[i];
    nvlink_total += s->nvlink_bytes[i];
  }
  fabric_counter_count(c, "events", 1, s->events);
  /* Packets and queues exist only at packet fidelity; max-min rate rounds only at flow fidelity. */
  fabric_counter_count(c, "packets", packet, s->packets);
  fabric_counter_count(c, "packet_hops", packet, s->packet_hops);
  fabric_counter_count(c, "rate_updates", !packet, s->rate_updates);
  fabric_counter_real(c, "fabric_bytes", 1, fabric_total);
  fabric_counter_real(c, "nvlink_bytes", 1, nvlink_total);
  fabric_counter_real(c, "mean_fct_s", 1, s->flows_done ? s->fct_sum_s / (double)s->flows_done : 0.0);
  fabric_counter_real(c, "max_fct_s", 1, s->fct_max_s);
  /* Per-link figures are summarised here; links.csv has every direction. */
  const struct topo *t = fab->topo;
  double active = fabric_active_time(fab);
  double max_util = 0, sum_util = 0;
  int max_port = -1, counted = 0;
  for (int p = 0; p < t->n_ports; p++) {
    if (t->ports[p].is_nvlink)
      continue;
    double util = fab->ports[p].tx_bytes / (t->ports[p].rate_Bps * active);
    sum_util += util;
    counted++;
    if (util > max_util) {
      max_util = util;
      max_port = p;
    }
  }
  fabric_counter_real(c, "link_utilisation_mean", 1, counted ? sum_util / counted : 0.0);
  fabric_counter_real(c, "link_utilisation_max", 1, max_util);
  if (max_port >= 0)
    fabric_counter_text(c, "link_utilisation_max_at", "%s:%s->%s", t->links[t->ports[max_port].link].name,
                        t->nodes[t->ports[max_port].node].name, t->nodes[t->ports[max_port].peer_node].name);
  double peak = 0;
  int peak_port = -1;
  for (int p = 0; p < t->n_ports; p++)
    if (!t->ports[p].is_nvlink && fab->ports[p].peak_queued > peak) {
      peak = fab->ports[p].peak_queued;
      peak_port = p;
    }
  fabric_counter_real(c, "peak_queue_bytes", packet, peak);
  if (peak_port >= 0)
    fabric_counter_text(c, "peak_queue_at", "%s->%s", t->nodes[t->ports[peak_port].node].name,
                        t->nodes[t->ports[peak_port].peer_node].name);
  if (fab->model->lifecycle.counters)
    fab->model->lifecycle.counters(fab, c);
  fabric_counter_count(c, "drops", packet, s->drops);
}

/* A number as summary.json writes counters: an integral value as an integer, inf and NaN as
 * null. */
static void write_number(FILE *out, double value)
{
  if (value == floor(value) && fabs(value) < 9007199254740992.0) /* 2^53: exact as a double */
    fprintf(out, "%.0f", value);
  else
    fprintf(out, "%s", JSON_NUMBER(value));
}

static void write_port_map(FILE *out, const struct fabric *fab, const struct fab_counter *k)
{
  const struct topo *t = fab->topo;
  fprintf(out, "{");
  int first = 1;
  for (int p = 0; k->per_port != NULL && p < t->n_ports; p++) {
    double v = k->rounded ? round(k->per_port[p]) : k->per_port[p];
    if (v > 0) {
      /* Node names come from the platform file: escaped like any user text. */
      char port[512];
      snprintf(port, sizeof port, "%s->%s", t->nodes[t->ports[p].node].name, t->nodes[t->ports[p].peer_node].name);
      fprintf(out, "%s", first ? "" : ", ");
      json_write_string(out, port);
      fprintf(out, ": %s", JSON_NUMBER(v));
      first = 0;
    }
  }
  fprintf(out, "}");
}

void fabric_write_counters(struct fabric *fab, FILE *out, const char *indent)
{
  struct fab_counters c = { 0 };
  fabric_counters(fab, &c);
  for (size_t i = 0; i < c.n; i++) {
    const struct fab_counter *k = &c.items[i];
    fprintf(out, "%s", indent);
    json_write_string(out, k->name);
    fprintf(out, ": ");
    if (!k->modelled)
      fprintf(out, "null");
    else if (k->type == FAB_COUNTER_COUNT)
      fprintf(out, "%llu", (unsigned long long)k->count);
    else if (k->type == FAB_COUNTER_REAL)
      write_number(out, k->value);
    else if (k->type == FAB_COUNTER_TEXT)
      json_write_string(out, k->text);
    else
      write_port_map(out, fab, k);
    fprintf(out, i + 1 < c.n ? ",\n" : "\n");
  }
  fabric_counters_free(&c);
}

int fabric_write_links_csv(const struct fabric *fab, FILE *out)
{
  const struct topo *t = fab->topo;
  double sim_time = fabric_active_time(fab);
  fprintf(out, "link,from,to,rate_Bps,bytes,packets,utilisation,busy_s,peak_queue_bytes\n");
  for (int p = 0; p < t->n_ports; p++) {
    const struct topo_port *tp = &t->ports[p];
    const struct fab_port *fp = &fab->ports[p];
    /* a run that moved nothing has no active time: its links' utilisation is 0, not 0/0 */
    double utilisation = sim_time > 0 ? fp->tx_bytes / (tp->rate_Bps * sim_time) : 0;
    fprintf(out, "%s,%s,%s,%.17g,%.17g,", t->links[tp->link].name, t->nodes[tp->node].name,
            t->nodes[tp->peer_node].name, tp->rate_Bps, fp->tx_bytes);
    /* Packets, serialisation time and queues exist at packet fidelity only: at flow fidelity the
     * fields are empty (unknown), as summary.json's counters are null, never a 0 that would
     * read as an idle link (docs/outputs.md). */
    if (fab->fidelity == FAB_FIDELITY_PACKET)
      fprintf(out, "%llu,%.6f,%.17g,%.17g\n", (unsigned long long)fp->tx_packets, utilisation, fp->busy_s,
              fp->peak_queued);
    else
      fprintf(out, ",%.6f,,\n", utilisation);
  }
  return ferror(out) ? -1 : 0;
}
