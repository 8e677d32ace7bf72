/* RoCEv2 at flow fidelity: PFC pause spreading (roce_spread.h).
 *
 * A switch egress whose arrival rate exceeds its capacity fills the ingress PGs feeding it past
 * XOFF, so each of those ingress links is paused for part of the time (only when the bytes the
 * egress cannot drain, sum over its flows of remaining x (1 - C / arrival), exceed the XOFF of an
 * empty switch); a flow that crosses such a link toward another, idle egress is throttled to the
 * FIFO share of the incast flows sharing that link (FIFO service of the paused link). The pause
 * is taken to hold for the whole transfer: the victim's unthrottled start, before XOFF is
 * reached, is missing. */
#include "roce_spread.h"

#include <math.h>
#include <stdlib.h>

#include "roce_fifo.h"
#include "roce_internal.h"

int roce_spread_init(struct roce_spread *s, int n_ports)
{
  size_t n = (size_t)n_ports + 1;
  s->arrival_Bps = calloc(n, sizeof(double));
  s->victim_cap = calloc(n, sizeof(double));
  s->backlog_B = calloc(n, sizeof(double));
  s->pg_growth = calloc(n, sizeof(double));
  s->sw_growth = calloc(n, sizeof(double));
  s->onset_s = calloc(n, sizeof(double));
  s->onset_seen = calloc(n, sizeof(uint64_t));
  s->was_paused = calloc(n, sizeof(uint8_t));
  s->port_flows = calloc(n, sizeof(int32_t));
  s->spread_on = calloc(n, sizeof(double));
  s->spread_in = calloc(n, sizeof(double));
  s->spread_e = malloc(n * sizeof(int32_t));
  if (!s->arrival_Bps || !s->victim_cap || !s->backlog_B || !s->pg_growth || !s->sw_growth || !s->onset_s ||
      !s->onset_seen || !s->was_paused || !s->port_flows || !s->spread_on || !s->spread_in || !s->spread_e)
    return -1;
  for (size_t p = 0; p < n; p++)
    s->spread_e[p] = -1;
  return 0;
}

void roce_spread_fini(struct roce_spread *s)
{
  free(s->arrival_Bps);
  free(s->victim_cap);
  free(s->backlog_B);
  free(s->pg_growth);
  free(s->sw_growth);
  free(s->onset_s);
  free(s->onset_seen);
  free(s->was_paused);
  free(s->port_flows);
  free(s->spread_on);
  free(s->spread_in);
  free(s->spread_e);
}

static double line_rate(const struct fabric *fab, const struct fab_flow *f)
{
  return fab->topo->ports[f->path[0]].rate_Bps;
}

/* A flow's arrival rate at hop h >= 1 under FIFO shares. */
static double fifo_in(const struct fab_flow *f, int h) { return roce_fifo_of(f)->in_Bps[h]; }

static int is_switch_port(const struct fabric *fab, int port)
{
  return fab->topo->nodes[fab->topo->ports[port].node].kind == TOPO_SWITCH;
}

/* The XOFF an ingress PG of an empty switch reaches: a congested egress pauses its inputs only
 * once the bytes it cannot drain (its backlog) exceed it. */
static double xoff_estimate(const struct fabric *fab, int node)
{
  const struct roce_state *rs = roce__state(fab);
  return pfc_xoff(&rs->cfg.pfc, rs->cfg.buffer_B - rs->switches[node].headroom_total_B);
}

/* Timed onset of a pause: a link u feeding a congested egress e is paused only once the ingress
 * PG it feeds at e's switch reaches XOFF. That PG grows at g (its flows' part of e's backlog
 * growth) while e's queue, which uses the shared buffer, grows at G = arrival - C; with
 * dynamic thresholds XOFF = alpha (B' - G t), so g t = alpha (B' - G t) gives
 * t = alpha B' / (g + alpha G), and t = XOFF / g with static ones. An episode starts the first
 * time a pass finds u paused and lasts while every later pass does; a ROCE_TIMER_SPREAD timer at
 * the onset, one per episode, recomputes the caps of u's component (roce_spread_onset_flows).
 * (Before: the victims were capped from the start of the incast, 22.1 Gb/s against 32.2 at
 * packet fidelity. And one timer at the earliest onset re-ran the pass over every active flow:
 * 72,269 such passes over 141 M flows in all on 10,240 GPUs, most of RoCE's CPU there.) */
static void spread_onsets(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  const struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  uint64_t pass = ++s->pass;
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h + 1 < flows[i]->hops; h++) {
      int u = flows[i]->path[h];
      if (s->victim_cap[u] <= 0 || s->onset_seen[u] == pass)
        continue;
      if (!s->was_paused[u] || s->onset_s[u] <= 0) { /* a new episode */
        int node = t->ports[flows[i]->path[h + 1]].node;
        double free_B = rs->cfg.buffer_B - rs->switches[node].headroom_total_B, g = s->pg_growth[u];
        double delay = rs->cfg.pfc.kind == PFC_STATIC
                           ? rs->cfg.pfc.xoff_B / g
                           : rs->cfg.pfc.alpha * free_B / (g + rs->cfg.pfc.alpha * s->sw_growth[u]);
        s->onset_s[u] = fab->now + (g > 0 && isfinite(delay) ? delay : 0);
        if (s->onset_s[u] > fab->now)
          fabric_timer_arm(fab, s->onset_s[u], ROCE_TIMER_SPREAD, NULL, (uint32_t)u);
      }
      s->onset_seen[u] = pass;
    }
  for (size_t i = 0; i < n; i++) /* what this pass found, for the next pass that covers each link */
    for (int h = 0; h < flows[i]->hops; h++)
      s->was_paused[flows[i]->path[h]] = s->victim_cap[flows[i]->path[h]] > 0;
}

void roce_spread_compute(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  const struct topo *t = fab->topo;
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h < flows[i]->hops; h++) /* arrival rates: the FIFO shares upstream of each hop */
      s->arrival_Bps[flows[i]->path[h]] += h == 0 ? line_rate(fab, flows[i]) : fifo_in(flows[i], h);
  for (size_t i = 0; i < n; i++)
    for (int h = 1; h < flows[i]->hops; h++) {
      int e = flows[i]->path[h];
      if (s->arrival_Bps[e] > t->ports[e].rate_Bps * (1 + 1e-9))
        s->backlog_B[e] += flows[i]->remaining * (1 - t->ports[e].rate_Bps / s->arrival_Bps[e]);
    }
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    for (int h = 1; h < f->hops; h++) {
      int e = f->path[h], u = f->path[h - 1];
      if (is_switch_port(fab, e) && s->arrival_Bps[e] > t->ports[e].rate_Bps * (1 + 1e-9) &&
          s->backlog_B[e] > xoff_estimate(fab, t->ports[e].node)) {
        /* the part of e's backlog this flow leaves in the ingress PG fed by u */
        s->pg_growth[u] += fifo_in(f, h) * (1 - t->ports[e].rate_Bps / s->arrival_Bps[e]);
        s->sw_growth[u] = s->arrival_Bps[e] - t->ports[e].rate_Bps;
        s->spread_on[u] += 1;
        if (s->spread_e[u] != e) {
          s->spread_e[u] = e;
          s->spread_in[e] += 1;
        }
      }
    }
  }
  /* Once paused, every ingress PG feeding e sits at XOFF, so e drains them alike: C_e / (links
   * feeding e) each. The FIFO at u's upstream egress then serves every flow on u at the rate
   * of its e-bound flows, C_e / (links feeding e) / (e-bound flows on u), victims included
   * (line-rate arrivals). (Before: the FIFO share of the incast flows without pauses, 14.3
   * Gb/s in test 3 where the packet model gives ~25.) */
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h < flows[i]->hops; h++) {
      int u = flows[i]->path[h], e = s->spread_e[u];
      if (e >= 0 && s->spread_on[u] > 0 && s->victim_cap[u] == 0)
        s->victim_cap[u] =
            fabric_port_payload_rate(fab, e) / s->spread_in[e] / s->spread_on[u]; /* payload, as caps are */
    }
  spread_onsets(fab, s, flows, n);
}

double roce_spread_cap(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f, double cap)
{
  const struct topo *t = fab->topo;
  for (int h = 0; h + 1 < f->hops; h++) {
    int u = f->path[h], next = f->path[h + 1];
    if (s->victim_cap[u] > 0 && fab->now >= s->onset_s[u] - 1e-12 &&
        s->arrival_Bps[next] <= t->ports[next].rate_Bps * (1 + 1e-9) && (cap == 0 || s->victim_cap[u] < cap))
      cap = s->victim_cap[u];
  }
  return cap;
}

void roce_spread_clear(struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h < flows[i]->hops; h++) {
      int p = flows[i]->path[h];
      s->arrival_Bps[p] = 0;
      s->victim_cap[p] = 0;
      s->backlog_B[p] = 0;
      s->pg_growth[p] = 0;
      s->sw_growth[p] = 0;
      s->spread_on[p] = 0;
      s->spread_in[p] = 0;
      s->spread_e[p] = -1;
    }
}

int roce_spread_needed(const struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (roce_fifo_of(flows[i])->marked_mask != 0)
      return 1;
    for (int h = 0; h < flows[i]->hops; h++)
      if (s->was_paused[flows[i]->path[h]])
        return 1;
  }
  return 0;
}

void roce_spread_flow_enter(struct roce_spread *s, const struct fab_flow *f)
{
  for (int h = 0; h < f->hops; h++)
    s->port_flows[f->path[h]]++;
}

void roce_spread_flow_leave(struct roce_spread *s, const struct fab_flow *f, unsigned *idle)
{
  unsigned free_links = 0;
  for (int h = 0; h < f->hops; h++) {
    int p = f->path[h];
    if (--s->port_flows[p] == 0) {
      s->was_paused[p] = 0; /* its episode ends with its last flow */
      s->onset_s[p] = 0;
      free_links |= 1u << h;
    }
  }
  if (idle != NULL)
    *idle = free_links;
}

struct fab_flow *const *roce_spread_onset_flows(const struct fabric *fab, const struct roce_spread *s, uint32_t port,
                                                int *count)
{
  *count = 0;
  /* The episode the timer was armed for goes on: a later pass that found the link no longer
   * paused, or its last flow leaving, ended it (a new episode arms its own timer). */
  if (!s->was_paused[port] || s->onset_s[port] != fab->now)
    return NULL;
  return fabric_port_flows(fab, (int)port, count);
}
