/* RoCEv2 at flow fidelity: the switch egresses DCQCN holds, measured on the packet model
 * (roce_held_port.h). */
#include "roce_held_port.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "param.h"
#include "roce.h"
#include "roce_internal.h"

int roce_held_init(struct roce_held *h, int n_ports)
{
  memset(h, 0, sizeof *h);
  h->port_entry = malloc(((size_t)n_ports + 1) * sizeof *h->port_entry);
  h->load_Bps = calloc((size_t)n_ports + 1, sizeof *h->load_Bps);
  h->last_load_Bps = calloc((size_t)n_ports + 1, sizeof *h->last_load_Bps);
  h->scale = malloc(((size_t)n_ports + 1) * sizeof *h->scale);
  h->ever_held = calloc((size_t)n_ports + 1, 1);
  h->marked = calloc((size_t)n_ports + 1, 1);
  h->depth = malloc((size_t)n_ports + 1);
  if (h->port_entry == NULL || h->load_Bps == NULL || h->last_load_Bps == NULL || h->scale == NULL ||
      h->ever_held == NULL || h->marked == NULL || h->depth == NULL)
    return -1;
  for (int p = 0; p <= n_ports; p++)
    h->scale[p] = 1;
  memset(h->depth, UINT8_MAX, (size_t)n_ports + 1);
  for (int p = 0; p <= n_ports; p++)
    h->port_entry[p] = -1;
  return 0;
}

void roce_held_fini(struct roce_held *h)
{
  free(h->entry);
  free(h->port_entry);
  free(h->load_Bps);
  free(h->last_load_Bps);
  free(h->scale);
  free(h->ever_held);
  free(h->marked);
  free(h->depth);
}

/* The run's parameters for the measuring fabric: every value as the run has it, but one QP per
 * connection (a sender is one reaction point) and no traces (the port names are not the run's). */
static struct param_set *measure_params(const struct fabric *fab, char *err, size_t errlen)
{
  struct param_set *ps = fab_param_set_new();
  if (fab->params == NULL)
    return ps; /* a fabric made without parameters: the defaults (one QP, no traces) */
  const char *names[1024];
  size_t n = fab_param_list_names(names, sizeof names / sizeof names[0]);
  for (size_t i = 0; i < n; i++) {
    const char *value = fab_param_get_text(fab->params, names[i]);
    if (!strcmp(names[i], "roce/qps-per-conn"))
      value = "1";
    else if (!strcmp(names[i], "roce/trace-flow") || !strcmp(names[i], "roce/trace-port"))
      value = "none";
    if (fab_param_set_text(ps, names[i], value, "roce_held_port", err, errlen) != 0) {
      fab_param_set_free(ps);
      return NULL;
    }
  }
  return ps;
}

struct measure_run {
  double last_done_s;
};

static void on_measured_flow_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)flow;
  struct measure_run *m = ctx;
  if (fab->now > m->last_done_s)
    m->last_done_s = fab->now;
}

/* The measuring platform: GPU 0 receives at rate_Bps, each sender sends at sender_Bps. Depth
 * 0: every GPU on one switch; depth 1: every GPU on a leaf of its own under one spine, so that
 * each sender's packets cross a switch egress of their own (its leaf's up-link) before the
 * congested port (the spine's down-link to GPU 0's leaf). */
static struct topo *measure_topo(int senders, int depth, double sender_Bps, double rate_Bps, double latency_s,
                                 double switch_latency_s)
{
  struct topo *t = fab_topo_new();
  char name[24];
  int top = fab_topo_add_node(t, depth ? "spine0" : "leaf0", TOPO_SWITCH, depth ? 2 : 1, -1, 0);
  for (int g = 0; g <= senders; g++) {
    double r = g == 0 ? rate_Bps : sender_Bps;
    int attach = top;
    if (depth) {
      snprintf(name, sizeof name, "leaf%d", g);
      attach = fab_topo_add_node(t, name, TOPO_SWITCH, 1, -1, 0);
      fab_topo_add_link(t, attach, top, r, latency_s, NULL, 0);
    }
    snprintf(name, sizeof name, "gpu%d", g);
    int gpu = fab_topo_add_node(t, name, TOPO_GPU, 0, g, 0);
    fab_topo_add_link(t, gpu, attach, r, latency_s, NULL, 0);
  }
  t->gpus_per_node = 1;
  t->switch_latency_s = switch_latency_s;
  char err[128];
  if (fab_topo_finalize(t, err, sizeof err) != 0) {
    fab_topo_free(t);
    return NULL;
  }
  return t;
}

int roce_held_measure(const struct fabric *fab, const struct roce_held_shape *shape, struct roce_held_steady *out,
                      char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  int senders = shape->senders;
  struct topo *t = measure_topo(senders, shape->depth, shape->load * shape->rate_Bps / senders, shape->rate_Bps,
                                shape->latency_s, fab->switch_latency_s);
  struct param_set *ps = t ? measure_params(fab, err, errlen) : NULL;
  struct fabric *m = ps ? fabric_new(t, ps, roce_model(), FAB_FIDELITY_PACKET, fab->seed, err, errlen) : NULL;
  if (m == NULL) {
    fab_param_set_free(ps);
    fab_topo_free(t);
    return -1;
  }
  /* Every sender one flow into GPU 0, together ROCE_HELD_SPAN_S of the port at its payload
   * rate: with the nic preset at 100 Gb/s ten cycles of the upper and trapped states. */
  double payload_Bps = fabric_port_payload_rate(m, t->ports[t->gpu_nic_port[0]].peer_port);
  double bytes = floor(ROCE_HELD_SPAN_S * payload_Bps / senders);
  struct measure_run run = { 0 };
  for (int g = 1; g <= senders; g++)
    fabric_post(m, g, 0, bytes, 0, 0, on_measured_flow_done, &run);
  fabric_run(m);
  const struct roce_state *rs = roce__state(m);
  double packets = senders * ceil(bytes / m->mtu);
  /* Marks at the congested port, and at depth 1 at the up-links its pauses back up too. */
  double marks = (double)(rs->stats.ecn.marked_forced + rs->stats.ecn.marked_prob);
  int ok = !fabric_stalled(m) && run.last_done_s > 0;
  if (ok) {
    out->utilisation = fmin(1, senders * bytes / payload_Bps / run.last_done_s);
    out->marked_fraction = marks / packets;
    out->cnps_per_flow_s = (double)rs->stats.cnps_sent / senders / run.last_done_s;
    out->cuts_per_flow_s = (double)rs->stats.dcqcn.cuts / senders / run.last_done_s;
    /* every pause of the run (all ended), at depth 1 those of the leaves' up-links too */
    out->paused_fraction = fmin(1, rs->stats.paused_s / senders / run.last_done_s);
  } else {
    snprintf(err, errlen, "the packet model did not complete %d flows into one port", senders);
  }
  fabric_free(m);
  fab_param_set_free(ps);
  fab_topo_free(t);
  return ok ? 0 : -1;
}

/* The cache's entry for this port shape, measured on a miss; -1 if it cannot be measured (the
 * port is then shared max-min, as without this model, and the shape is not tried again). */
static int32_t entry_of(const struct fabric *fab, struct roce_held *h, const struct roce_held_shape *shape)
{
  for (size_t i = 0; i < h->n; i++)
    if (!memcmp(&h->entry[i].shape, shape, sizeof *shape))
      return h->entry[i].steady.utilisation > 0 ? (int32_t)i : -1;
  struct roce_held_steady steady;
  char err[256] = "";
  if (roce_held_measure(fab, shape, &steady, err, sizeof err) != 0) {
    fprintf(stderr,
            "sgfabric: roce: a port DCQCN holds (%d senders) could not be measured on the packet model (%s): "
            "it is shared max-min, its marks not estimated\n",
            shape->senders, err);
    steady.utilisation = 0; /* remembered as not measurable */
  } else {
    h->measures++;
  }
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 16;
    h->entry = sgf_xrealloc(h->entry, h->cap * sizeof *h->entry);
  }
  h->entry[h->n].shape = *shape;
  h->entry[h->n].steady = steady;
  h->n++;
  return steady.utilisation > 0 ? (int32_t)h->n - 1 : -1;
}

/* The flow's RoCE state if it leaves a NIC (not an NVLink transfer), else NULL. */
static const struct roce_flow *nic_flow(const struct fab_flow *f)
{
  const struct roce_flow *rf = f->model_data;
  return rf != NULL && rf->line_port >= 0 ? rf : NULL;
}

/* The loads of the component's ports without congestion control: each flow brings its NIC
 * share, less what the overloaded ports upstream of it keep back (a FIFO share, as
 * roce_fifo.c: C / load of their arrivals); a few Jacobi sweeps, paths being short. Returns
 * whether a port is overloaded or was held: otherwise no port can be held now (the sweeps only
 * lower loads) and none has a capacity to give back. */
static int port_loads(const struct fabric *fab, struct roce_held *h, struct fab_flow **flows, size_t n)
{
  int any = 0;
  const struct topo *t = fab->topo;
  for (int sweep = 0; sweep < ROUTE_MAX_HOPS; sweep++) {
    for (size_t i = 0; i < n; i++) {
      const struct roce_flow *rf = nic_flow(flows[i]);
      if (rf == NULL)
        continue;
      double a = roce_fifo_nic_share(&rf->fifo);
      for (int k = 1; k < flows[i]->hops; k++) {
        int p = flows[i]->path[k];
        if (sweep == 0) { /* the first sweep passes every arrival on whole */
          h->scale[p] = 1;
          h->last_load_Bps[p] = 0;
          any |= h->port_entry[p] >= 0;
        }
        h->load_Bps[p] += a;
        if (h->scale[p] < 1)
          a *= h->scale[p];
      }
    }
    /* each port once (a flow brings it a positive share, so 0 says "done this sweep") */
    int moved = 0;
    for (size_t i = 0; i < n; i++)
      for (int k = 1; k < flows[i]->hops; k++) {
        int p = flows[i]->path[k];
        if (h->load_Bps[p] == 0)
          continue;
        double c = t->ports[p].rate_Bps, scale = h->load_Bps[p] > c ? c / h->load_Bps[p] : 1;
        moved |= fabs(scale - h->scale[p]) > 1e-9;
        any |= scale < 1;
        h->scale[p] = scale;
        h->last_load_Bps[p] = h->load_Bps[p];
        h->load_Bps[p] = 0;
      }
    if (!moved)
      break;
  }
  return any;
}

void roce_held_update(struct fabric *fab, struct roce_held *h, struct fab_flow **flows, size_t n)
{
  const struct topo *t = fab->topo;
  if (!port_loads(fab, h, flows, n))
    return; /* the common case of a component no port of which oversubscribes */
  /* A port a FIFO pass marks is one PFC governs; the fewest switch egresses a flow crosses before
   * a port decide the measuring platform's depth. */
  for (size_t i = 0; i < n; i++) {
    const struct roce_flow *rf = nic_flow(flows[i]);
    if (rf == NULL)
      continue;
    for (int k = 1; k < flows[i]->hops; k++) {
      int p = flows[i]->path[k];
      if ((rf->fifo.marked_mask >> k) & 1)
        h->marked[p] = 1;
      if (k - 1 < h->depth[p])
        h->depth[p] = (uint8_t)(k - 1);
    }
  }
  for (size_t i = 0; i < n; i++) {
    const struct roce_flow *rf = nic_flow(flows[i]);
    if (rf == NULL)
      continue;
    for (int k = 1; k < flows[i]->hops; k++) {
      int p = flows[i]->path[k];
      if (h->depth[p] == UINT8_MAX)
        continue; /* decided already */
      const struct topo_port *tp = &t->ports[p];
      double load = h->last_load_Bps[p] / tp->rate_Bps;
      int32_t e = -1;
      if (!tp->is_nvlink && !h->marked[p] && t->nodes[tp->node].kind == TOPO_SWITCH && load > 1 + 1e-9) {
        struct roce_held_shape shape;
        memset(&shape, 0, sizeof shape); /* padding too: the cache compares shapes bytewise */
        shape.load = fmin(round(load * 4) / 4, ROCE_HELD_MAX_SENDERS); /* in quarters: few shapes */
        shape.senders = (int)fmax(2, round(shape.load));
        shape.depth = h->depth[p] > 0;
        shape.rate_Bps = tp->rate_Bps;
        shape.latency_s = tp->latency_s;
        e = entry_of(fab, h, &shape);
      }
      h->port_entry[p] = e;
      h->depth[p] = UINT8_MAX;
      h->marked[p] = 0;
      double payload = fabric_port_payload_rate(fab, p);
      fabric_port_set_capacity(fab, p, e >= 0 ? h->entry[e].steady.utilisation * payload : payload);
      if (e >= 0)
        h->ever_held[p] = 1;
    }
  }
}

const struct roce_held_steady *roce_held_of(const struct roce_held *h, int port)
{
  return h->port_entry[port] >= 0 ? &h->entry[h->port_entry[port]].steady : NULL;
}
