/* InfiniBand packet fidelity: credits per VL, switch input buffers, crossbar arbitration, routing.
 *
 * A packet that reaches a switch is routed at once (D-mod-K table or adaptive choice) and waits
 * in the input buffer of the link and VL it came through. That buffer's credits are what the
 * upstream port sees (IBTA 7.9); inside it, packets queue per output (ib/input-queue:voq, as
 * switch ASICs do) or in one FIFO (fifo, the textbook input-queued switch). An idle output port
 * serves the queues whose head packet goes out through it: VL arbitration first (IBTA 7.6.9),
 * then first come first served among the inputs, and only when the downstream buffer has
 * credits for the whole packet. Blocking arises by itself: a full input buffer stops its
 * upstream port for every flow it carries (congestion trees, victim flows), and with a FIFO a
 * blocked head also holds back the packets behind it. When a packet has left a buffer (the end
 * of its transmission at the next port; its arrival at a destination HCA), its blocks return to
 * the upstream port after the link delay and the flow-control processing.
 *
 * Credit returns are applied lazily: each one is kept in its port's list of returns due with the
 * place in the calendar order, (time, seq), that its event would have had (the sequence number
 * is reserved when the return is sent), and is applied when the port's credits are next looked
 * at, if it is due before the event being processed. A return only needs a calendar event when
 * its arrival can wake the port: the port is stalled for credits or a deferred kick is pending
 * for it. Then the first return due is scheduled with its reserved place (one at a time; the
 * port re-arms the next if it is still stalled). Every return is applied at the same place in
 * the order as with one event each, so results are those of an event per return, for about a
 * third fewer events. */
#include <stdio.h>
#include <stdlib.h>

#include "ib_internal.h"
#include "check.h"
#include "failure.h"

/* Queues of the input buffer fed by port: one per output of the receiving switch (VOQ), or one. */
static int queues_per_input(const struct ib_state *st, const struct topo *t, int port)
{
  const struct topo_node *peer = &t->nodes[t->ports[port].peer_node];
  return st->p.input_queue == IB_QUEUE_VOQ && peer->kind == TOPO_SWITCH ? peer->port_count : 1;
}

/* The queue of input in's buffer (one VL) that holds packets for output out. */
static inline struct ib_fifo *input_queue(const struct ib_state *st, const struct topo *t, int in, int vl, int out)
{
  int k = st->p.input_queue == IB_QUEUE_VOQ ? out - t->nodes[t->ports[out].node].first_port : 0;
  return &st->ports[in].in[vl][k];
}

int ib__switch_init(struct fabric *fab, struct ib_state *st)
{
  const struct topo *t = fab->topo;
  size_t slots = 0;
  for (int p = 0; p < t->n_ports; p++)
    slots += (size_t)t->nodes[t->ports[p].node].port_count * (size_t)st->p.num_vls;
  st->wait_pool = malloc((slots + 1) * sizeof *st->wait_pool);
  size_t queues = 0;
  for (int p = 0; p < t->n_ports; p++)
    queues += (size_t)queues_per_input(st, t, p) * (size_t)st->p.num_vls;
  st->fifo_pool = calloc(queues + 1, sizeof *st->fifo_pool);
  if (st->wait_pool == NULL || st->fifo_pool == NULL)
    return -1;
  size_t next_queue = 0;
  size_t used = 0;
  for (int p = 0; p < t->n_ports; p++) {
    struct ib_port *ip = &st->ports[p];
    ip->credited = !t->ports[p].is_nvlink;
    ip->stall_since = -1;
    int cap = t->nodes[t->ports[p].node].port_count;
    for (int v = 0; v < st->p.num_vls; v++) {
      ib_credit_init(&ip->credit[v], st->p.buffer_blocks);
      ip->in[v] = st->fifo_pool + next_queue;
      next_queue += (size_t)queues_per_input(st, t, p);
      ip->wait[v].slot = st->wait_pool + used;
      ip->wait[v].cap = cap;
      used += (size_t)cap;
    }
  }
  return 0;
}

static void due_push(struct ib_state *st, struct ib_port *ip, double time, uint64_t seq, int32_t blocks, int vl)
{
  if (ip->due_count == ip->due_cap) {
    uint32_t cap = ip->due_cap ? 2 * ip->due_cap : 16; /* a power of two: index masks */
    struct ib_credit_due *d = sgf_xmalloc(cap * sizeof *d);
    for (uint32_t i = 0; i < ip->due_count; i++)
      d[i] = ip->due[(ip->due_first + i) & (ip->due_cap - 1)];
    free(ip->due);
    ip->due = d;
    ip->due_first = 0;
    ip->due_cap = cap;
  }
  ip->due[(ip->due_first + ip->due_count) & (ip->due_cap - 1)] =
      (struct ib_credit_due){ .time = time, .seq = seq, .blocks = blocks, .vl = vl };
  ip->due_count++;
  st->due_total++;
  if (time >= st->due_last_time) {
    st->due_last_time = time;
    st->due_last_seq = seq;
  }
}

static void due_apply_first(struct ib_state *st, struct ib_port *ip)
{
  const struct ib_credit_due *d = &ip->due[ip->due_first];
  ib_credit_return(&ip->credit[d->vl], d->blocks);
  st->stats.credit_updates++;
  ip->due_first = (ip->due_first + 1) & (ip->due_cap - 1);
  ip->due_count--;
  st->due_total--;
}

void ib__credits_settle(struct fabric *fab, struct ib_state *st, int port)
{
  struct ib_port *ip = &st->ports[port];
  while (ip->due_count > 0 && fabric_before_now(fab, ip->due[ip->due_first].time, ip->due[ip->due_first].seq))
    due_apply_first(st, ip);
}

/* The port may be woken by its next credit return: schedule it (after settling). */
static void due_arm(struct fabric *fab, struct ib_state *st, int port)
{
  struct ib_port *ip = &st->ports[port];
  if (ip->due_armed || ip->due_count == 0)
    return;
  ib__credits_settle(fab, st, port);
  if (ip->due_count == 0)
    return;
  const struct ib_credit_due *d = &ip->due[ip->due_first];
  ip->due_armed = 1;
  fabric_timer_arm_seq(fab, d->time, d->seq, IB_TIMER_CREDIT, NULL, (uint32_t)port);
}

void ib__on_idle(struct fabric *fab)
{
  struct ib_state *st = ib__state(fab);
  if (st->due_total == 0)
    return;
  for (int p = 0; p < fab->topo->n_ports; p++)
    due_arm(fab, st, p);
}

static void waitq_push(struct ib_waitq *q, int32_t in_port)
{
  SGF_CHECK(q->count < q->cap, "ib: more waiting heads than inputs of the node");
  q->slot[(q->first + q->count) % q->cap] = in_port;
  q->count++;
}

static int32_t waitq_pop(struct ib_waitq *q)
{
  int32_t in_port = q->slot[q->first];
  q->first = (q->first + 1) % q->cap;
  q->count--;
  return in_port;
}

static void stall_begin(struct fabric *fab, struct ib_port *ip)
{
  if (ip->stall_since < 0)
    ip->stall_since = fab->now;
}

static void stall_end(struct fabric *fab, struct ib_state *st, struct ib_port *ip)
{
  if (ip->stall_since < 0)
    return;
  ip->stall_s += fab->now - ip->stall_since;
  st->stats.credit_stall_s += fab->now - ip->stall_since;
  ip->stall_since = -1;
}

/* Kicks a port from a dedicated event: a kick from inside another port's arbitration could
 * start a second transmission on a port the engine has not yet marked busy. */
static void kick_later(struct fabric *fab, struct ib_state *st, int port)
{
  if (st->ports[port].kick_pending)
    return;
  st->ports[port].kick_pending = 1;
  due_arm(fab, st, port); /* a return due at this date comes before the kick */
  fabric_timer_arm(fab, fab->now, IB_TIMER_KICK, NULL, (uint32_t)port);
}

static void credit_return_later(struct fabric *fab, struct ib_state *st, int port, int vl, uint32_t bytes)
{
  if (fabric_port_down(fab, port))
    return; /* the flow-control packet would cross a dead link: the credits were voided (ib__link_state) */
  int32_t blocks = ib__packet_blocks(&st->p, bytes);
  double when = fab->now + fab->topo->ports[port].latency_s + st->p.credit_delay_s;
  struct ib_port *ip = &st->ports[port];
  due_push(st, ip, when, fabric_reserve_seq(fab), blocks, vl);
  if (ip->stall_since >= 0 || ip->kick_pending)
    due_arm(fab, st, port);
}

int ib__may_send(struct fabric *fab, int port, int queue, const struct fab_packet *pkt)
{
  struct ib_state *st = ib__state(fab);
  struct ib_port *ip = &st->ports[port];
  if (!ip->credited)
    return 1;
  ib__credits_settle(fab, st, port);
  if (ib_credit_has(&ip->credit[queue], ib__packet_blocks(&st->p, pkt->bytes)))
    return 1;
  stall_begin(fab, ip);
  due_arm(fab, st, port);
  return 0;
}

/* Load of a candidate output: bytes waiting here for it plus bytes it sent that still occupy
 * the downstream buffer (credits not yet returned). */
static double port_load(struct fabric *fab, struct ib_state *st, int port, int vl)
{
  ib__credits_settle(fab, st, port);
  const struct ib_port *ip = &st->ports[port];
  const struct ib_credit *c = &ip->credit[vl];
  return ip->out_load + (double)(c->max_blocks - c->free_blocks) * st->p.block_bytes;
}

static int route_at_switch(struct fabric *fab, struct ib_state *st, int node, const struct fab_packet *pkt)
{
  const struct topo *t = fab->topo;
  int cand[ROUTE_MAX_CANDIDATES];
  int n = fab_route_candidates(t, node, pkt->flow->dst_gpu, cand, ROUTE_MAX_CANDIDATES);
  if (n == 0 && fab->failures != NULL)
    return -1; /* failures: no live port toward the destination */
  SGF_CHECK(n > 0, "ib: no route at %s toward GPU %d", t->nodes[node].name, pkt->flow->dst_gpu);
  int table = ib_lft_pick(&st->lft, t, node, pkt->flow->dst_gpu, cand, n);
  if (n == 1 || st->p.routing == IB_ROUTING_DMODK)
    return cand[table];
  st->stats.ar_decisions++;
  double best_load = port_load(fab, st, cand[table], pkt->queue);
  if (best_load <= st->p.ar_threshold_bytes)
    return cand[table];
  /* The least-loaded candidate. Loads count whole packets and credit blocks, so under saturation
   * equal loads are common. Keeping the table's port on a tie keeps each input on its table port
   * unless that port is fuller; an input whose table port few transfers share then stays there
   * while the inputs of crowded table ports overflow onto it, and the output's round robin gives
   * it a smaller share than theirs (test "AR ties share a saturated leaf": 1.4x the FCT). With
   * ib/ar-ties random a tie is a uniform draw among the tied ports (reservoir sampling: the k-th
   * tied port replaces the pick with probability 1/k). */
  int best = table, tied = 1;
  for (int i = 0; i < n; i++) {
    if (i == table)
      continue;
    double load = port_load(fab, st, cand[i], pkt->queue);
    if (load < best_load) {
      best_load = load;
      best = i;
      tied = 1;
    } else if (load == best_load && st->p.ar_ties == IB_AR_TIES_RANDOM) {
      tied++;
      if (fab_rng_below(&st->ar_rng, (uint64_t)tied) == 0)
        best = i;
    }
  }
  if (best != table)
    st->stats.ar_deviations++;
  return cand[best];
}

int ib__on_arrive(struct fabric *fab, int node, struct fab_packet *pkt)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  int in = pkt->in_port;
  int vl = pkt->queue;
  struct ib_port *ip = &st->ports[in];
  if (!ip->credited || t->nodes[node].kind == TOPO_NVSWITCH)
    return FAB_ARRIVE_FORWARD;
  if (t->nodes[node].kind == TOPO_GPU) {
    /* The HCA consumes the packet as it arrives: its receive buffer frees at once. */
    credit_return_later(fab, st, in, vl, pkt->bytes);
    return FAB_ARRIVE_FORWARD;
  }
  int out = route_at_switch(fab, st, node, pkt);
  if (fab->failures != NULL && (out < 0 || fabric_port_down(fab, out))) {
    /* Failures: routed to a dead link before the subnet manager knew, or no live way on. The
     * switch discards it at its input: the buffer space it would have taken is free at once. */
    credit_return_later(fab, st, in, vl, pkt->bytes);
    fabric_failures_packet_lost(fab, out >= 0 ? out : fabric_failures_dead_end_port(fab, pkt), pkt, 0);
    return FAB_ARRIVE_TAKEN;
  }
  pkt->out_port = out;
  pkt->next = NULL;
  struct ib_fifo *f = input_queue(st, t, in, vl, out);
  int was_empty = f->head == NULL;
  if (f->tail)
    f->tail->next = pkt;
  else
    f->head = pkt;
  f->tail = pkt;
  ip->occupancy[vl] += pkt->bytes;
  ip->occ_blocks[vl] += ib__packet_blocks(&st->p, pkt->bytes);
  SGF_CHECK(!(ip->occupancy[vl] > (double)ip->credit[vl].max_blocks * st->p.block_bytes),
            "ib: input buffer above its size at %s", t->nodes[node].name);
  if (ip->occupancy[vl] > ip->peak_occupancy)
    ip->peak_occupancy = ip->occupancy[vl];
  if (ip->occupancy[vl] > st->stats.peak_buffer_bytes) {
    st->stats.peak_buffer_bytes = ip->occupancy[vl];
    st->stats.peak_buffer_port = in;
    st->stats.peak_buffer_vl = vl;
  }
  st->ports[out].out_load += pkt->bytes;
  if (was_empty) {
    waitq_push(&st->ports[out].wait[vl], in);
    fabric_port_kick(fab, out);
  }
  return FAB_ARRIVE_TAKEN;
}

struct fab_packet *ib__next_packet(struct fabric *fab, int port)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  if (t->nodes[t->ports[port].node].kind != TOPO_SWITCH)
    return NULL;
  struct ib_port *op = &st->ports[port];
  ib__credits_settle(fab, st, port);
  uint32_t eligible = 0;
  int waiting = 0;
  for (int v = 0; v < st->p.num_vls; v++) {
    struct ib_waitq *q = &op->wait[v];
    if (q->count == 0)
      continue;
    waiting = 1;
    const struct fab_packet *head = input_queue(st, t, q->slot[q->first], v, port)->head;
    if (ib_credit_has(&op->credit[v], ib__packet_blocks(&st->p, head->bytes)))
      eligible |= 1u << v;
  }
  if (eligible == 0) {
    if (waiting) {
      stall_begin(fab, op);
      due_arm(fab, st, port);
    }
    return NULL;
  }
  int vl = ib_vlarb_pick(&st->p.vlarb, &op->arb, eligible);
  if (vl < 0) {
    due_arm(fab, st, port); /* heads wait: a credit return must still wake the port */
    return NULL;
  }
  int in = waitq_pop(&op->wait[vl]);
  struct ib_fifo *f = input_queue(st, t, in, vl, port);
  struct fab_packet *pkt = f->head;
  f->head = pkt->next;
  if (f->head == NULL)
    f->tail = NULL;
  pkt->next = NULL;
  ib_vlarb_charge(&st->p.vlarb, &op->arb, pkt->bytes);
  op->out_load -= pkt->bytes;
  if (f->head) {
    int next_out = st->p.input_queue == IB_QUEUE_VOQ ? port : f->head->out_port;
    waitq_push(&st->ports[next_out].wait[vl], in);
    if (next_out != port)
      kick_later(fab, st, next_out);
  }
  return pkt;
}

void ib__on_transmit(struct fabric *fab, int port, struct fab_packet *pkt)
{
  struct ib_state *st = ib__state(fab);
  struct ib_port *ip = &st->ports[port];
  if (!ip->credited)
    return;
  ib__credits_settle(fab, st, port);
  ib_credit_consume(&ip->credit[pkt->queue], ib__packet_blocks(&st->p, pkt->bytes));
  stall_end(fab, st, ip);
}

void ib__on_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx)
{
  struct ib_state *st = ib__state(fab);
  int in = tx->in_port;
  if (in < 0 || !st->ports[in].credited || fab->topo->nodes[fab->topo->ports[port].node].kind != TOPO_SWITCH)
    return;
  st->ports[in].occupancy[tx->queue] -= tx->bytes;
  st->ports[in].occ_blocks[tx->queue] -= ib__packet_blocks(&st->p, tx->bytes);
  credit_return_later(fab, st, in, tx->queue, tx->bytes);
}

/* ---- failures at packet fidelity ---------------------------------------------------------- */

/* A packet waiting in input in's buffer (VL vl) for output out, whose link went down, is lost:
 * it leaves the buffer, whose credits go back upstream (if that link lives). */
static void drop_waiting(struct fabric *fab, struct ib_state *st, int in, int vl, int out, struct fab_packet *pkt)
{
  st->ports[in].occupancy[vl] -= pkt->bytes;
  st->ports[in].occ_blocks[vl] -= ib__packet_blocks(&st->p, pkt->bytes);
  st->ports[out].out_load -= pkt->bytes;
  credit_return_later(fab, st, in, vl, pkt->bytes);
  fabric_failures_packet_lost(fab, out, pkt, 1);
}

/* Every packet waiting at out's switch to leave through out is dropped; an input whose head
 * changed waits for its new head's output. */
static void drop_waiting_for(struct fabric *fab, struct ib_state *st, int out)
{
  const struct topo *t = fab->topo;
  const struct topo_node *n = &t->nodes[t->ports[out].node];
  if (n->kind != TOPO_SWITCH)
    return;
  for (int v = 0; v < st->p.num_vls; v++) {
    st->ports[out].wait[v].first = 0;
    st->ports[out].wait[v].count = 0; /* every head it held goes out through out: dropped below */
    for (int q = n->first_port; q < n->first_port + n->port_count; q++) {
      int in = t->ports[q].peer_port;
      if (!st->ports[in].credited)
        continue;
      for (int k = 0; k < queues_per_input(st, t, in); k++) {
        struct ib_fifo *f = &st->ports[in].in[v][k];
        int head_was_out = f->head != NULL && f->head->out_port == out;
        struct fab_packet *pkt = f->head;
        f->head = f->tail = NULL;
        while (pkt != NULL) {
          struct fab_packet *next = pkt->next;
          pkt->next = NULL;
          if (pkt->out_port == out)
            drop_waiting(fab, st, in, v, out, pkt);
          else {
            if (f->tail)
              f->tail->next = pkt;
            else
              f->head = pkt;
            f->tail = pkt;
          }
          pkt = next;
        }
        if (head_was_out && f->head != NULL) {
          waitq_push(&st->ports[f->head->out_port].wait[v], in);
          kick_later(fab, st, f->head->out_port);
        }
      }
    }
  }
}

/* A link goes down or comes back up (fab_model.packet.on_link_state). Down: for each direction,
 * the packets waiting to go out on it are lost, and the credits its sender holds for the buffer
 * beyond are void: those of packets lost on the wire, of packets still in that buffer (their
 * returns would cross the dead link) and of returns already on their way back. They are counted
 * in credits_reset_blocks. Up: link training re-initialises flow control (IBTA Vol.1 7.9.4,
 * FCCL sent at initialisation): the sender's credits become what the receiver advertises, its
 * buffer less what it still holds (whose credits return as it drains, over the live link). No
 * credit is leaked or counted twice: ib_credit_return still aborts above the buffer's size. */
void ib__link_state(struct fabric *fab, int link, int up)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  for (int e = 0; e < 2; e++) {
    int p = t->links[link].port[e];
    struct ib_port *ip = &st->ports[p];
    if (!ip->credited)
      continue;
    if (up) {
      for (int v = 0; v < st->p.num_vls; v++) {
        int32_t blocks = ip->credit[v].max_blocks - ip->occ_blocks[v];
        ib_credit_restore(&ip->credit[v], blocks);
        st->stats.credits_restored_blocks += (uint64_t)blocks;
      }
      continue;
    }
    ib__credits_settle(fab, st, p);
    for (int v = 0; v < st->p.num_vls; v++)
      st->stats.credits_reset_blocks += (uint64_t)ib_credit_reset(&ip->credit[v]);
    st->due_total -= ip->due_count;
    ip->due_count = 0;
    ip->due_first = 0;
    stall_end(fab, st, ip);
    drop_waiting_for(fab, st, p);
  }
}

void ib__sample(struct fabric *fab)
{
  struct ib_state *st = ib__state(fab);
  const struct topo *t = fab->topo;
  for (int p = 0; p < t->n_ports; p++) {
    if (!st->series_on[p])
      continue;
    if (st->n_samples == st->cap_samples) {
      st->cap_samples = st->cap_samples ? 2 * st->cap_samples : 4096;
      st->samples = sgf_xrealloc(st->samples, st->cap_samples * sizeof *st->samples);
    }
    struct ib_sample *s = &st->samples[st->n_samples++];
    s->time_s = fab->now;
    s->port = p;
    s->credits = 0;
    s->buffer_bytes = 0;
    ib__credits_settle(fab, st, p);
    for (int v = 0; v < st->p.num_vls; v++) {
      s->credits += st->ports[p].credit[v].free_blocks;
      s->buffer_bytes += st->ports[p].occupancy[v];
    }
  }
  /* Calendar events left: those scheduled, and the credit returns due after this one. */
  if (fab->active_flows > 0 || fabric_pending_events(fab) > 0 ||
      (st->due_total > 0 && !fabric_before_now(fab, st->due_last_time, st->due_last_seq)))
    fabric_timer_arm(fab, fab->now + st->p.series_interval_s, IB_TIMER_SAMPLE, NULL, 0);
  else
    st->sampler_running = 0;
}

void ib__on_timer(struct fabric *fab, int kind, void *ptr, uint32_t arg)
{
  struct ib_state *st = ib__state(fab);
  switch (kind) {
  case IB_TIMER_CREDIT: {
    /* The first return due at this port, scheduled at its place: it and any before it apply. */
    struct ib_port *ip = &st->ports[arg];
    ip->due_armed = 0;
    while (ip->due_count > 0 && fabric_at_or_before_now(fab, ip->due[ip->due_first].time, ip->due[ip->due_first].seq))
      due_apply_first(st, ip);
    fabric_port_kick(fab, (int)arg);
    break;
  }
  case IB_TIMER_KICK:
    st->ports[arg].kick_pending = 0;
    fabric_port_kick(fab, (int)arg);
    break;
  case IB_TIMER_SAMPLE: ib__sample(fab); break;
  case IB_TIMER_QP_TIMEOUT: ib__qp_timeout(fab, ptr); break;
  case IB_TIMER_TREE: {
    /* A congestion tree has filled this buffer: the caps of its component, now with its victims. */
    int count;
    struct fab_flow *const *flows = ib_tree_reached_flows(fab, &st->tree, arg, &count);
    fabric_flow_caps_changed_for(fab, flows, (size_t)count);
    break;
  }
  default: sgf_fatal(__FILE__, __LINE__, "ib: unknown timer kind %d", kind);
  }
}
