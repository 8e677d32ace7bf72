/* The InfiniBand model's hooks (struct fab_model), counters, time series and public getters.
 *
 * Hooks used and why:
 *   init/fini        parameters (checked, errors name the parameter), per-port state, tables;
 *   flow_start       SL (the transfer's tag) -> VL; at flow fidelity under AR, one part per path;
 *   flow_path        the D-mod-K path (static) or, at flow fidelity under AR, the part's path;
 *   may_send         HCA injection waits for credits;
 *   on_arrive        switches take packets into their input buffers; HCAs free credits;
 *   next_packet      crossbar: VL arbitration and first-come service of input heads;
 *   on_transmit      credits consumed; on_tx_done: the buffer frees, credits return later;
 *   on_timer         credit returns, deferred kicks, series sampling;
 *   before_fill      flow fidelity: a component whose flows changed starts from its base caps
 *                    (credit window, input-port shares);
 *   on_rates         flow fidelity: credit window and congestion-tree caps;
 *   counters, series summary.json counters, ib_ports.csv and ib_series.csv;
 *   on_injected, on_deliver, flow_done, on_packet_lost   failures at packet fidelity: the RC
 *                    transport's PSNs, acknowledgements and timer (ib_transport.c);
 *   on_link_state    failures at packet fidelity: a link's credits reset and restored.
 * No SimGrid include: the model runs under CUnit with fabric_run(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib.h"
#include "ib_internal.h"
#include "check.h"

static int ib_init(struct fabric *fab, char *err, size_t errlen)
{
  struct ib_state *st = ib__state(fab);
  if (ib__params_load(&st->p, fab, err, errlen) != 0)
    return -1;
  const struct topo *t = fab->topo;
  st->stats.peak_buffer_port = -1;
  /* A stream of its own, so that AR's draws leave the fabric's other random choices as they were. */
  fab_rng_seed(&st->ar_rng, fab_rng_mix64(fab->seed ^ 0x49422d41522d7469ull)); /* "IB-AR-ti" */
  st->due_last_time = -1;
  st->ports = calloc((size_t)t->n_ports + 1, sizeof *st->ports);
  st->series_on = calloc((size_t)t->n_ports + 1, 1);
  if (st->ports == NULL || st->series_on == NULL || ib_lft_init(&st->lft, t) != 0 || ib__switch_init(fab, st) != 0) {
    snprintf(err, errlen, "ib: out of memory");
    return -1;
  }
  if (fab->fidelity == FAB_FIDELITY_FLOW) {
    size_t n = (size_t)t->n_ports + 1;
    st->port_sum = calloc(n, sizeof *st->port_sum);
    st->port_max = calloc(n, sizeof *st->port_max);
    st->nic_demand = calloc(n, sizeof *st->nic_demand);
    st->dst_source = malloc(((size_t)t->n_nodes + 1) * sizeof *st->dst_source);
    for (int v = 0; st->dst_source != NULL && v <= t->n_nodes; v++)
      st->dst_source[v] = -1;
    st->rates_time = -1;
    if (!st->port_sum || !st->port_max || !st->nic_demand || !st->dst_source ||
        ib_tree_init(&st->tree, t->n_ports, st->p.num_vls, (double)st->p.buffer_blocks * st->p.block_bytes) != 0) {
      snprintf(err, errlen, "ib: out of memory");
      return -1;
    }
  }
  if (st->p.series && fab->fidelity == FAB_FIDELITY_PACKET) {
    const char *sel = st->p.series_port;
    const char *arrow = strstr(sel, "->");
    int found = 0;
    for (int p = 0; p < t->n_ports; p++) {
      if (t->ports[p].is_nvlink)
        continue;
      const char *from = t->nodes[t->ports[p].node].name, *to = t->nodes[t->ports[p].peer_node].name;
      int on = !strcmp(sel, "all") || !strcmp(sel, from);
      if (arrow)
        on = strlen(from) == (size_t)(arrow - sel) && !strncmp(sel, from, strlen(from)) && !strcmp(arrow + 2, to);
      st->series_on[p] = (uint8_t)on;
      found += on;
    }
    if (!found) {
      snprintf(err, errlen, "ib/series-port: '%s' names no fabric port ('all', a node such as leaf0, or leaf0->spine1)",
               sel);
      return -1;
    }
    st->sampler_running = 1;
    fabric_timer_arm(fab, fab->now, IB_TIMER_SAMPLE, NULL, 0);
  }
  return 0;
}

static void ib_fini(struct fabric *fab)
{
  struct ib_state *st = ib__state(fab);
  ib_lft_free(&st->lft);
  ib__qp_free_all(st);
  if (st->ports)
    for (int p = 0; p < fab->topo->n_ports; p++)
      free(st->ports[p].due);
  free(st->ports);
  free(st->wait_pool);
  free(st->fifo_pool);
  free(st->port_sum);
  free(st->port_max);
  free(st->arrival);
  free(st->groups);
  free(st->keys);
  free(st->leave);
  free(st->unit_loads);
  free(st->crossings);
  free(st->cap_limit);
  free(st->held);
  ib_tree_fini(&st->tree);
  free(st->nic_demand);
  free(st->dst_source);
  free(st->legs);
  free(st->samples);
  free(st->series_on);
}

static void ib_flow_start(struct fabric *fab, struct fab_flow *flow)
{
  struct ib_state *st = ib__state(fab);
  flow->queue = st->p.sl2vl[flow->tag % IB_NUM_SLS];
  ib__flow_spread(fab, flow);
  ib__qp_start(fab, flow);
  if (st->p.series && !st->sampler_running && fab->fidelity == FAB_FIDELITY_PACKET) {
    st->sampler_running = 1;
    fabric_timer_arm(fab, fab->now, IB_TIMER_SAMPLE, NULL, 0);
  }
}

static void ib_flow_done(struct fabric *fab, struct fab_flow *flow) { ib__qp_done(fab, flow); }

static void port_name(const struct topo *t, int port, char *buf, size_t len)
{
  snprintf(buf, len, "%s->%s", t->nodes[t->ports[port].node].name, t->nodes[t->ports[port].peer_node].name);
}

static void ib_counters(struct fabric *fab, struct fab_counters *out)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  SGF_CHECK(fab->stats.drops == 0 || fab->failures != NULL, "ib: %llu packets dropped on a lossless fabric",
            (unsigned long long)fab->stats.drops);
  char name[64];
  double worst = 0;
  int worst_port = -1;
  for (int p = 0; p < t->n_ports; p++)
    if (st->ports[p].stall_s > worst) {
      worst = st->ports[p].stall_s;
      worst_port = p;
    }
  fabric_counter_text(out, "ib_routing", "%s", st->p.routing == IB_ROUTING_AR ? "ar" : "dmodk");
  /* Credits, buffers and per-packet AR exist at packet fidelity; the window, congestion-tree and
   * AR-imbalance caps are the flow model's stand-ins for them (ib_flow.c). */
  int packet = fab->fidelity == FAB_FIDELITY_PACKET;
  fabric_counter_real(out, "credit_stall_s", packet, st->stats.credit_stall_s);
  fabric_counter_real(out, "credit_stall_max_port_s", packet, worst);
  if (worst_port >= 0) {
    port_name(t, worst_port, name, sizeof name);
    fabric_counter_text(out, "credit_stall_max_at", "%s", name);
  }
  fabric_counter_count(out, "credit_updates", packet, st->stats.credit_updates);
  fabric_counter_real(out, "ib_peak_buffer_bytes", packet, st->stats.peak_buffer_bytes);
  if (st->stats.peak_buffer_port >= 0) {
    int p = st->stats.peak_buffer_port;
    fabric_counter_text(out, "ib_peak_buffer_at", "%s input from %s, VL %d", t->nodes[t->ports[p].peer_node].name,
                        t->nodes[t->ports[p].node].name, st->stats.peak_buffer_vl);
  }
  fabric_counter_real(out, "ib_buffer_per_vl_bytes", 1, st->p.buffer_bytes);
  fabric_counter_real(out, "ib_credit_per_vl_bytes", 1, (double)st->p.buffer_blocks * st->p.block_bytes);
  fabric_counter_count(out, "adaptive_routing_decisions", packet, st->stats.ar_decisions);
  fabric_counter_count(out, "adaptive_routing_deviations", packet, st->stats.ar_deviations);
  fabric_counter_count(out, "flow_window_caps", !packet, st->stats.window_caps);
  fabric_counter_count(out, "flow_congestion_tree_caps", !packet, st->stats.ct_caps);
  fabric_counter_count(out, "flow_ar_imbalance_updates", !packet, st->stats.ar_derates);
  if (fab->failures != NULL) {
    /* Only with a failure schedule: without one the counters are those of a lossless fabric. */
    fabric_counter_count(out, "credits_reset_blocks", packet, st->stats.credits_reset_blocks);
    fabric_counter_count(out, "credits_restored_blocks", packet, st->stats.credits_restored_blocks);
    fabric_counter_count(out, "transport_timeouts", packet, st->stats.transport_timeouts);
    fabric_counter_real(out, "retransmitted_bytes", packet, st->stats.transport_retransmitted_B);
  }
}

static int ib_write_series(struct fabric *fab, FILE *(*open)(void *ctx, const char *name), void *ctx)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  char name[64];
  FILE *f = open(ctx, "ib_ports.csv");
  if (f == NULL)
    return -1;
  fprintf(f, "port,from,to,credit_stall_s,peak_buffer_bytes,free_credits_end\n");
  for (int p = 0; p < t->n_ports; p++) {
    if (!st->ports[p].credited)
      continue;
    int32_t credits = 0;
    for (int v = 0; v < st->p.num_vls; v++)
      credits += st->ports[p].credit[v].free_blocks;
    port_name(t, p, name, sizeof name);
    fprintf(f, "%s,%s,%s,%.17g,%.17g,%d\n", name, t->nodes[t->ports[p].node].name, t->nodes[t->ports[p].peer_node].name,
            st->ports[p].stall_s, st->ports[p].peak_occupancy, credits);
  }
  int failed = ferror(f);
  if (fclose(f) != 0 || failed)
    return -1;
  if (!st->p.series)
    return 0;
  f = open(ctx, "ib_series.csv");
  if (f == NULL)
    return -1;
  fprintf(f, "time_s,port,buffer_bytes,free_credits\n");
  for (size_t i = 0; i < st->n_samples; i++) {
    port_name(t, st->samples[i].port, name, sizeof name);
    fprintf(f, "%.12g,%s,%.17g,%d\n", st->samples[i].time_s, name, st->samples[i].buffer_bytes, st->samples[i].credits);
  }
  failed = ferror(f);
  return fclose(f) != 0 || failed ? -1 : 0;
}

/* Failures: the subnet manager re-sweeps the fabric and uploads new forwarding tables (a delay
 * that grows with the number of switches), or the switches route around the link themselves. */
static double ib__recovery_delay(struct fabric *fab, int up)
{
  (void)up;
  if (fab_param_get_choice(fab->params, "ib/failover") == 1)
    return fab_param_get(fab->params, "ib/ar-recovery");
  int switches = 0;
  for (int i = 0; i < fab->topo->n_nodes; i++)
    switches += fab->topo->nodes[i].kind == TOPO_SWITCH;
  return fab_param_get(fab->params, "ib/sm-sweep-base") +
         switches * fab_param_get(fab->params, "ib/sm-sweep-per-switch");
}

static const struct fab_model ib_model_ops = {
  .name = "ib",
  .state_size = sizeof(struct ib_state),
  .lifecycle = { .init = ib_init,
                 .fini = ib_fini,
                 .flow_start = ib_flow_start,
                 .flow_done = ib_flow_done,
                 .flow_path = ib__flow_path,
                 .recovery_delay = ib__recovery_delay,
                 .counters = ib_counters,
                 .series = ib_write_series },
  .packet = { .may_send = ib__may_send,
              .next_packet = ib__next_packet,
              .on_transmit = ib__on_transmit,
              .on_tx_done = ib__on_tx_done,
              .on_arrive = ib__on_arrive,
              .on_deliver = ib__on_deliver,
              .on_injected = ib__on_injected,
              .on_link_state = ib__link_state,
              .on_packet_lost = ib__on_packet_lost },
  .flow = { .before_fill = ib__before_fill, .on_rates = ib__on_rates },
  .timers = { .on_timer = ib__on_timer, .on_idle = ib__on_idle },
};

const struct fab_model *ib_model(void) { return &ib_model_ops; }

static int g_ib_initialized; /* the one plugin-wide global: sg_ib_plugin_init() was called */

void sg_ib_plugin_init(void)
{
  fabric_plugin_select(&ib_model_ops, "sg_ib_plugin_init");
  if (g_ib_initialized)
    return;
  g_ib_initialized = 1;
  fabric_register_params();
  ib_register_params();
}

const struct fab_model *sg_ib_selected_model(void) { return g_ib_initialized ? &ib_model_ops : NULL; }

static const struct ib_state *state_of(const struct fabric *fab)
{
  return fab && fab->model == &ib_model_ops ? fabric_model_priv(fab) : NULL;
}

/* The state behind the per-port getters: credits, input buffers and their stalls exist at packet
 * fidelity only (flow fidelity's caps stand for them), so at flow fidelity those getters answer
 * -1, as the link-handle ones do, rather than a 0 or an initial credit never simulated. */
static const struct ib_state *port_state_of(const struct fabric *fab, int port)
{
  const struct ib_state *st = state_of(fab);
  return st && fab->fidelity == FAB_FIDELITY_PACKET && port >= 0 && port < fab->topo->n_ports ? st : NULL;
}

double sg_ib_get_credit_stall_time(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? (fab->fidelity == FAB_FIDELITY_PACKET ? st->stats.credit_stall_s : -1) : 0;
}

double sg_ib_get_port_stall_time(const struct fabric *fab, int port)
{
  const struct ib_state *st = port_state_of(fab, port);
  return st ? st->ports[port].stall_s : -1;
}

double sg_ib_get_port_peak_buffer(const struct fabric *fab, int port)
{
  const struct ib_state *st = port_state_of(fab, port);
  return st ? st->ports[port].peak_occupancy : -1;
}

int32_t sg_ib_get_port_credits(const struct fabric *fab, int port, int vl)
{
  const struct ib_state *st = port_state_of(fab, port);
  return st && vl >= 0 && vl < st->p.num_vls ? st->ports[port].credit[vl].free_blocks : -1;
}

uint64_t sg_ib_get_credits_reset_blocks(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? st->stats.credits_reset_blocks : 0;
}

uint64_t sg_ib_get_credits_restored_blocks(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? st->stats.credits_restored_blocks : 0;
}

uint64_t sg_ib_get_transport_timeouts(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? st->stats.transport_timeouts : 0;
}

double sg_ib_get_retransmitted_bytes(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? st->stats.transport_retransmitted_B : 0;
}

int32_t sg_ib_get_port_buffered_blocks(const struct fabric *fab, int port, int vl)
{
  const struct ib_state *st = port_state_of(fab, port);
  return st && vl >= 0 && vl < st->p.num_vls ? st->ports[port].occ_blocks[vl] : -1;
}

uint64_t sg_ib_get_ar_decisions(const struct fabric *fab)
{
  const struct ib_state *st = state_of(fab);
  return st ? st->stats.ar_decisions : 0;
}
