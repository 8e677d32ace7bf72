/* RoCEv2 at flow fidelity: PFC pause spreading (roce_spread.h).
 *
 * A switch egress whose arrival rate exceeds its capacity fills the ingress PGs feeding it past
 * XOFF, so each of those ingress links is paused for part of the time (only when the bytes the
 * egress cannot drain, sum over its flows of remaining x (1 - C / arrival), less what the
 * buffers after it hold, exceed the XOFF of an empty switch); a flow that crosses such a link
 * toward another, idle egress is throttled to the FIFO share of the incast flows sharing that
 * link (FIFO service of the paused link). A link's pause starts once its PG reaches XOFF (its
 * timed onset) and ends once its flows' last bytes fit in the buffers from its PG on; the
 * victim's unthrottled start, before XOFF is reached, is missing.
 *
 * A paused link drains slower than its line rate, so the switch egress it leaves can back up in
 * turn and pause the links feeding that switch: PFC's congestion spreading, pauses climbing
 * hop by hop toward the senders and slowing flows that never cross the congested port (Zhu et
 * al., SIGCOMM'15, "Congestion Control for Large-Scale RDMA Deployments", section 2: the
 * victim flows of PFC). The pass runs in rounds: each round takes every egress's service rate
 * (its line rate, or the rate it drains at if it is a paused link) and finds the links paused;
 * the next round starts from the drains it found, until a round moves none that matters. A
 * link's drain depends on the egresses after it, so the rounds settle within a path's length. */
#include "roce_spread.h"

#include <math.h>
#include <stdlib.h>

#include "roce_fifo.h"
#include "roce_internal.h"
#include "check.h"

/* A port's round state clean: zero, own_e -1 (roce_spread_round). */
static void round_clear(struct roce_spread_round *r) { *r = (struct roce_spread_round){ .own_e = -1 }; }

int roce_spread_init(struct roce_spread *s, int n_ports, int n_nodes)
{
  size_t n = (size_t)n_ports + 1;
  s->round = calloc(n, sizeof *s->round);
  s->port = calloc(n, sizeof *s->port);
  s->flags = calloc(n, sizeof *s->flags);
  s->node_feeders = calloc((size_t)n_nodes + 1, sizeof(double));
  s->onset_s = calloc(n, sizeof(double));
  s->end_s = calloc(n, sizeof(double));
  s->end_armed_s = calloc(n, sizeof(double));
  s->onset_seen = calloc(n, sizeof(uint64_t));
  s->was_paused = calloc(n, sizeof(uint8_t));
  s->has_victims = calloc(n, sizeof(uint8_t));
  s->port_flows = calloc(n, sizeof(int32_t));
  if (!s->round || !s->port || !s->flags || !s->node_feeders || !s->onset_s || !s->end_s || !s->end_armed_s ||
      !s->onset_seen || !s->was_paused || !s->has_victims || !s->port_flows)
    return -1;
  for (size_t p = 0; p < n; p++)
    round_clear(&s->round[p]);
  return 0;
}

void roce_spread_fini(struct roce_spread *s)
{
  free(s->round);
  free(s->port);
  free(s->flags);
  free(s->covered.port);
  free(s->feeding.port);
  free(s->fed.port);
  free(s->drained.port);
  free(s->node_feeders);
  free(s->onset_s);
  free(s->end_s);
  free(s->end_armed_s);
  free(s->onset_seen);
  free(s->was_paused);
  free(s->has_victims);
  free(s->port_flows);
}

static void list_push(struct roce_spread_list *l, int port)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->port = sgf_xrealloc(l->port, l->cap * sizeof *l->port);
  }
  l->port[l->n++] = port;
}

/* A rate on port p's wire as the payload it carries (framing: fabric_port_payload_rate). */
static double payload_of(const struct fabric *fab, int p, double wire_Bps)
{
  return wire_Bps * fabric_port_payload_rate(fab, p) / fab->topo->ports[p].rate_Bps;
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
 * once the bytes it cannot drain (its backlog), less what the buffers after it hold, exceed it. */
static double xoff_estimate(const struct fabric *fab, int node)
{
  const struct roce_state *rs = roce__state(fab);
  return pfc_xoff(&rs->cfg.pfc, rs->cfg.buffer_B - rs->switches[node].headroom_total_B);
}

/* The XOFF each of a switch's k paused ingress PGs sits at (pfc_xoff_of_k). */
static double xoff_of_paused(const struct fabric *fab, int node, double k)
{
  const struct roce_state *rs = roce__state(fab);
  return pfc_xoff_of_k(&rs->cfg.pfc, rs->cfg.buffer_B - rs->switches[node].headroom_total_B, k);
}

/* The rate an egress serves at: its line rate, or less if it is a paused link. */
static double service_rate(const struct fabric *fab, const struct roce_spread *s, int p)
{
  double rate = fab->topo->ports[p].rate_Bps, drain = s->port[p].drain_Bps;
  return drain > 0 && drain < rate ? drain : rate;
}

/* Whether egress p backs up: more arrives than it serves. */
static int backs_up(const struct fabric *fab, const struct roce_spread *s, int p)
{
  return s->port[p].arrival_Bps > service_rate(fab, s, p) * (1 + 1e-9);
}

/* The bytes egress e cannot drain: what its flows have left, in the part of their arrival it
 * cannot serve. */
static double backlog(const struct fabric *fab, const struct roce_spread *s, int e)
{
  return s->port[e].remaining_B * (1 - service_rate(fab, s, e) / s->port[e].arrival_Bps);
}

/* Whether egress e, backing up, leaves its switch more to hold than an empty switch's XOFF: its
 * backlog less what the buffers after it hold of it. */
static int fills_its_switch(const struct fabric *fab, const struct roce_spread *s, int e)
{
  return backs_up(fab, s, e) && is_switch_port(fab, e) &&
         backlog(fab, s, e) - s->port[e].held_below > xoff_estimate(fab, fab->topo->ports[e].node);
}

/* Timed onset of a pause: a link u feeding a congested egress e is paused only once the ingress
 * PG it feeds at e's switch reaches XOFF. That PG grows at g (its flows' part of e's backlog
 * growth) while e's queue, which uses the shared buffer, grows at G = arrival - C; with
 * dynamic thresholds XOFF = alpha (B' - G t), so g t = alpha (B' - G t) gives
 * t = alpha B' / (g + alpha G), and t = XOFF / g with static ones. Where e is itself a paused
 * link its backlog builds only from e's own onset, so u's count starts there. An episode starts
 * the first time a pass finds u paused and lasts while every later pass does; a
 * ROCE_TIMER_SPREAD timer at the onset, one per episode, recomputes the caps of u's component
 * (roce_spread_timer_flows). (Before: the victims were capped from the start of the incast,
 * 22.1 Gb/s against 32.2 at packet fidelity. And one timer at the earliest onset re-ran the
 * pass over every active flow: 72,269 such passes over 141 M flows in all on 10,240 GPUs, most
 * of RoCE's CPU there.) */
static void episode_onset(struct fabric *fab, struct roce_spread *s, int u, uint64_t pass)
{
  if (s->onset_seen[u] == pass)
    return;
  s->onset_seen[u] = pass; /* before the recursion: a pause never feeds back on itself */
  if (s->was_paused[u] && s->onset_s[u] > 0)
    return; /* its episode goes on */
  const struct roce_state *rs = roce__state(fab);
  const struct roce_spread_round *r = &s->round[u];
  int e = r->own_e, node = fab->topo->ports[e].node;
  double start = fab->now;
  if (s->flags[e] & ROCE_SPREAD_PAUSED) { /* e is a paused link: the tree's next level down */
    episode_onset(fab, s, e, pass);
    start = fmax(start, s->onset_s[e]);
  }
  double free_B = rs->cfg.buffer_B - rs->switches[node].headroom_total_B, g = r->pg_growth;
  double delay = rs->cfg.pfc.kind == PFC_STATIC ? rs->cfg.pfc.xoff_B / g
                                                : rs->cfg.pfc.alpha * free_B / (g + rs->cfg.pfc.alpha * r->sw_growth);
  s->onset_s[u] = start + (g > 0 && isfinite(delay) ? delay : 0);
  if (s->onset_s[u] > fab->now)
    fabric_timer_arm(fab, s->onset_s[u], ROCE_TIMER_SPREAD, NULL, (uint32_t)u);
}

static void spread_onsets(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  uint64_t pass = ++s->pass;
  for (size_t i = 0; i < s->covered.n; i++)
    if (s->flags[s->covered.port[i]] & ROCE_SPREAD_PAUSED)
      episode_onset(fab, s, s->covered.port[i], pass);
  for (size_t i = 0; i < s->covered.n; i++) { /* what this pass found, for the next pass that covers each link */
    int p = s->covered.port[i];
    s->was_paused[p] = (s->flags[p] & ROCE_SPREAD_PAUSED) != 0;
    s->has_victims[p] = 0;
  }
  for (size_t i = 0; i < n; i++)
    for (int h = 0; h + 1 < flows[i]->hops; h++) {
      int u = flows[i]->path[h];
      if (!(s->flags[u] & ROCE_SPREAD_PAUSED))
        continue;
      int e = s->round[u].own_e;
      if (!backs_up(fab, s, flows[i]->path[h + 1]))
        s->has_victims[u] = 1;
      if (s->flags[e] & ROCE_SPREAD_PAUSED) /* u's caps follow e's drain: e's end changes them */
        s->has_victims[e] = 1;
    }
}

/* The round state the last round wrote back to clean: its links feeding congested egresses (and
 * their paused flags) and the egresses they fed, with their switches' feeder counts. */
static void round_start(const struct fabric *fab, struct roce_spread *s)
{
  for (size_t i = 0; i < s->fed.n; i++) {
    int e = s->fed.port[i];
    s->round[e].feeders = 0;
    s->node_feeders[fab->topo->ports[e].node] = 0;
  }
  s->fed.n = 0;
  for (size_t i = 0; i < s->feeding.n; i++) {
    int u = s->feeding.port[i];
    round_clear(&s->round[u]);
    s->flags[u] &= (uint8_t)~ROCE_SPREAD_PAUSED;
  }
  s->feeding.n = 0;
}

/* Link u's drain and downstream holding for the next round, and so whether it fills its switch;
 * returns whether the next round can find other pauses: they moved and u fills its switch, now
 * or before. (A round reads an egress's service rate and holding only where it fills: if no such
 * egress moved, the next round would find what this one found. A paused link backs up by
 * definition but need not fill its switch: on 2,048 GPUs nearly every pass ends after its first
 * round.) */
static int drain_set(const struct fabric *fab, struct roce_spread *s, int u, double drain, double held)
{
  struct roce_spread_port *p = &s->port[u];
  if (drain == p->drain_Bps && held == p->held_below)
    return 0;
  p->drain_Bps = drain;
  p->held_below = held;
  int filled = s->flags[u] & ROCE_SPREAD_FILLS, fills = fills_its_switch(fab, s, u);
  s->flags[u] = (uint8_t)((s->flags[u] & ~ROCE_SPREAD_FILLS) | (fills ? ROCE_SPREAD_FILLS : 0));
  return filled || fills;
}

/* One round: the links paused given each egress's service rate, their victims' caps and the
 * rates they drain at. Returns whether a link that fills its switch (this round or the next)
 * had its drain or downstream holding moved: the next round can then find other pauses. */
static int pause_round(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  const struct topo *t = fab->topo;
  round_start(fab, s);
  /* The links feeding the congested egresses that fill their switch: the bytes each link's
   * e-bound flows have left, the rate they drain at, and what they leave in its PG there. */
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    for (int h = 1; h < f->hops; h++) {
      int e = f->path[h], u = f->path[h - 1];
      if (!(s->flags[e] & ROCE_SPREAD_FILLS))
        continue;
      struct roce_spread_round *r = &s->round[u];
      double c = service_rate(fab, s, e);
      if (r->bound_flows == 0)
        list_push(&s->feeding, u);
      r->own_B += f->remaining;
      r->own_Bps += roce_fifo_of(f)->share_Bps;
      /* the part of e's backlog this flow leaves in the ingress PG fed by u (its growth, for the
       * onset if u is paused) */
      r->pg_growth += fifo_in(f, h) * (1 - c / s->port[e].arrival_Bps);
      r->sw_growth = s->port[e].arrival_Bps - c;
      r->bound_flows += 1;
      if (r->own_e != e) {
        r->own_e = e;
        if (s->round[e].feeders == 0)
          list_push(&s->fed, e);
        s->round[e].feeders += 1;
        s->node_feeders[t->ports[e].node] += 1;
      }
    }
  }
  /* A link is paused while its flows have more left than the buffers from its PG on hold: its
   * PG at e's switch (at XOFF among the switch's paused PGs) and its part of what the buffers
   * after e hold. Once its sender's last bytes fit there, it sends them and the pause ends (its
   * end date: spread_ends).
   * Once paused, every ingress PG feeding e with bytes in its switch drains alike: C_e / (links
   * feeding e) each, C_e its service rate. The FIFO at u's upstream egress then serves every
   * flow on u at the rate of its e-bound flows, C_e / (links feeding e) / (e-bound flows on u),
   * victims included (line-rate arrivals), so u drains at that rate times its flows. (Before:
   * the FIFO share of the incast flows without pauses, 14.3 Gb/s in test 3 where the packet
   * model gives ~25.) */
  for (size_t i = 0; i < s->feeding.n; i++) {
    int u = s->feeding.port[i];
    struct roce_spread_round *r = &s->round[u];
    int e = r->own_e, node = t->ports[e].node;
    double feeders = s->round[e].feeders, xoff = xoff_of_paused(fab, node, s->node_feeders[node]);
    r->excess_B = r->own_B - xoff - s->port[e].held_below / feeders;
    if (!(r->excess_B > fab->mtu)) /* not paused */
      continue;
    double per_flow = service_rate(fab, s, e) / feeders / r->bound_flows; /* on the wire */
    r->victim_cap = payload_of(fab, u, per_flow);                         /* caps: payload */
    r->next_drain = per_flow * s->port[u].flows_on;
    /* u's PG at e's switch holds its XOFF, and u its part of what e's own PG holds on */
    r->next_held = xoff + s->port[e].held_below / feeders;
    s->flags[u] |= ROCE_SPREAD_PAUSED;
  }
  /* A link whose drain or downstream holding moved may pause more links (or fewer) next round,
   * if it fills its switch: the links paused last round and no longer go back to their line
   * rate, those paused now take their drains */
  int moved = 0;
  for (size_t i = 0; i < s->drained.n; i++) {
    int u = s->drained.port[i];
    if (!(s->flags[u] & ROCE_SPREAD_PAUSED))
      moved |= drain_set(fab, s, u, 0, 0);
  }
  s->drained.n = 0;
  for (size_t i = 0; i < s->feeding.n; i++) {
    int u = s->feeding.port[i];
    const struct roce_spread_round *r = &s->round[u];
    if (!(s->flags[u] & ROCE_SPREAD_PAUSED))
      continue;
    moved |= drain_set(fab, s, u, r->next_drain, r->next_held);
    list_push(&s->drained, u);
  }
  return moved;
}

/* The end of each paused link's episode: the date its e-bound flows' bytes, draining at their
 * FIFO shares, fit in the buffers from its PG on; a ROCE_TIMER_SPREAD then recomputes its
 * component, whose pass finds it no longer paused. A pass that moves the date earlier arms
 * another timer; one that moves it later leaves it to the timer armed, which arms the next when
 * it fires (roce_spread_timer_flows). */
static void spread_ends(struct fabric *fab, struct roce_spread *s)
{
  for (size_t i = 0; i < s->covered.n; i++) {
    int u = s->covered.port[i];
    if (!(s->flags[u] & ROCE_SPREAD_PAUSED))
      continue;
    const struct roce_spread_round *r = &s->round[u];
    if (r->own_Bps <= 0)
      continue;
    double end = fab->now + r->excess_B / r->own_Bps;
    if (!isfinite(end) || end <= fab->now || end == s->end_s[u])
      continue;
    s->end_s[u] = end;
    /* An end that moved later is left to the timer already armed, which arms the next at the
     * date then current: every pass moves the ends of its paused links, and a timer armed at
     * each move stayed in the event heap until its date (706 MB resident against 434 MB on
     * 10,240 GPUs with 4 QPs per connection, docs/performance.md). */
    double armed = s->end_armed_s[u];
    if (armed > fab->now && armed <= end)
      continue;
    s->end_armed_s[u] = end;
    fabric_timer_arm(fab, end, ROCE_TIMER_SPREAD, NULL, (uint32_t)u);
  }
}

/* The queue each switch egress holds: the PG of every link paused toward it, once its pause
 * has started, at the XOFF of the switch's paused PGs (the value pause_round's holding uses). */
static void spread_queues(const struct fabric *fab, struct roce_spread *s)
{
  for (size_t i = 0; i < s->feeding.n; i++) {
    int u = s->feeding.port[i], e = s->round[u].own_e, node = fab->topo->ports[e].node;
    if ((s->flags[u] & ROCE_SPREAD_PAUSED) && fab->now >= s->onset_s[u] - 1e-12)
      s->port[e].queue_B += xoff_of_paused(fab, node, s->node_feeders[node]);
  }
}

void roce_spread_compute(struct fabric *fab, struct roce_spread *s, struct fab_flow **flows, size_t n)
{
  int longest = 0;
  s->covered.n = 0;
  for (size_t i = 0; i < n; i++) {
    if (flows[i]->hops > longest)
      longest = flows[i]->hops;
    for (int h = 0; h < flows[i]->hops; h++) { /* arrival rates: the FIFO shares upstream of each hop */
      struct roce_spread_port *p = &s->port[flows[i]->path[h]];
      if (p->flows_on == 0) {
        list_push(&s->covered, flows[i]->path[h]);
      }
      p->arrival_Bps += h == 0 ? line_rate(fab, flows[i]) : fifo_in(flows[i], h);
      p->flows_on += 1;
      p->remaining_B += flows[i]->remaining;
    }
  }
  for (size_t i = 0; i < s->covered.n; i++) /* which egresses fill their switch at line rate */
    if (fills_its_switch(fab, s, s->covered.port[i]))
      s->flags[s->covered.port[i]] = ROCE_SPREAD_FILLS;
  /* A drain depends on the egresses downstream: the rounds settle within a path's length (the
   * buffers' shares, which a switch's other feeders move, may not settle: the rounds stop there
   * whatever) */
  for (int round = 0; round <= longest && pause_round(fab, s, flows, n); round++)
    ;
  spread_onsets(fab, s, flows, n);
  spread_ends(fab, s);
  spread_queues(fab, s);
}

double roce_spread_pause_fraction(const struct fabric *fab, const struct roce_spread *s, int u)
{
  if (!(s->flags[u] & ROCE_SPREAD_PAUSED) || fab->now < s->onset_s[u] - 1e-12)
    return 0;
  int e = s->round[u].own_e;
  return fmax(0, 1 - service_rate(fab, s, e) / s->port[e].arrival_Bps);
}

double roce_spread_cap(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f, double cap)
{
  for (int h = 0; h + 1 < f->hops; h++) {
    int u = f->path[h], next = f->path[h + 1];
    if (!(s->flags[u] & ROCE_SPREAD_PAUSED))
      continue;
    double victim_cap = s->round[u].victim_cap;
    if (fab->now >= s->onset_s[u] - 1e-12 && !backs_up(fab, s, next) && (cap == 0 || victim_cap < cap))
      cap = victim_cap;
  }
  return cap;
}

double roce_spread_queue_wait(const struct fabric *fab, const struct roce_spread *s, const struct fab_flow *f,
                              double rate_Bps)
{
  double wait = 0, alone_s = f->remaining / rate_Bps;
  for (int h = 1; h < f->hops; h++) {
    int x = f->path[h];
    if (s->port[x].queue_B <= 0)
      continue;
    double c = payload_of(fab, x, service_rate(fab, s, x)); /* the queue and the bytes left count payload */
    /* The egress serves every byte its flows have left by the makespan: the flow cannot end later
     * than that, whatever the order, and it can wait for the queue only up to it */
    double makespan_s = s->port[x].remaining_B / c;
    if (alone_s < makespan_s)
      wait += fmin(s->port[x].queue_B / c, makespan_s - alone_s);
  }
  return wait;
}

void roce_spread_clear(const struct fabric *fab, struct roce_spread *s)
{
  round_start(fab, s); /* the last round's state */
  s->drained.n = 0;
  for (size_t i = 0; i < s->covered.n; i++) {
    s->port[s->covered.port[i]] = (struct roce_spread_port){ 0 };
    s->flags[s->covered.port[i]] = 0;
  }
  s->covered.n = 0;
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
      s->end_s[p] = 0;
      free_links |= 1u << h;
    }
  }
  if (idle != NULL)
    *idle = free_links;
}

struct fab_flow *const *roce_spread_timer_flows(struct fabric *fab, struct roce_spread *s, uint32_t port, int *count,
                                                int *idle)
{
  *count = 0;
  if (idle != NULL)
    *idle = 0;
  if (s->end_armed_s[port] == fab->now) { /* the end timer: armed again if the end moved later */
    s->end_armed_s[port] = 0;
    if (s->was_paused[port] && s->end_s[port] > fab->now) {
      s->end_armed_s[port] = s->end_s[port];
      fabric_timer_arm(fab, s->end_s[port], ROCE_TIMER_SPREAD, NULL, port);
    }
  }
  /* The episode the timer was armed for goes on: a later pass that found the link no longer
   * paused, or its last flow leaving, ended it (a new episode arms its own timer). */
  if (!s->was_paused[port] || (s->onset_s[port] != fab->now && s->end_s[port] != fab->now))
    return NULL;
  /* An end that frees no victim changes no cap: the flows on the link are all bound for the
   * congested egress, whose FIFO shares they keep (a recomputation of a large component at
   * every end cost as much as the rest of the pass: twice the CPU on a Mixtral EP 8 iteration). */
  if (s->end_s[port] == fab->now && s->onset_s[port] != fab->now && !s->has_victims[port]) {
    if (idle != NULL)
      *idle = 1;
    return NULL;
  }
  return fabric_port_flows(fab, (int)port, count);
}
