/* The packet engine: every packet through every port.
 *
 * A port serialises one packet at a time at line rate. A GPU's NIC port pulls packets from its
 * flows in round robin (one MTU each, as a NIC interleaves QPs); a switch port serves its queues
 * (round robin over the queues a model allows). Each packet hop costs two calendar events: the
 * end of its transmission on the port, and its arrival at the next node.
 *
 * Switching (fabric/switching): with cut-through a switch may start forwarding once the head
 * arrived (plus the switch latency), but never finishes before the tail arrived; with
 * store-and-forward it waits for the tail. Uncongested, a transfer of S bytes over hops with
 * rates r and delays d therefore takes S/r + sum(d) + sum(switch latency) with cut-through,
 * plus, with store-and-forward, one full packet re-serialised at each further hop (the short last
 * packet follows the full one ahead of it). */
#include "fabric.h"
#include "check.h"
#include "failure.h"

#include <math.h>
#include <stdlib.h>

static void port_try_send(struct fabric *fab, int port);

static void queue_push(struct fab_port *fp, struct fab_packet *pkt)
{
  int q = pkt->queue;
  pkt->next = NULL;
  if (fp->tail[q])
    fp->tail[q]->next = pkt;
  else
    fp->head[q] = pkt;
  fp->tail[q] = pkt;
  fp->queued_bytes[q] += pkt->bytes;
  fp->total_queued += pkt->bytes;
  if (fp->total_queued > fp->peak_queued)
    fp->peak_queued = fp->total_queued;
}

static struct fab_packet *queue_pop(struct fab_port *fp, int q)
{
  struct fab_packet *pkt = fp->head[q];
  fp->head[q] = pkt->next;
  if (fp->head[q] == NULL)
    fp->tail[q] = NULL;
  fp->queued_bytes[q] -= pkt->bytes;
  fp->total_queued -= pkt->bytes;
  pkt->next = NULL;
  return pkt;
}

static void ring_insert(struct fab_port *fp, struct fab_flow *flow)
{
  if (fp->ring == NULL) {
    flow->ring_next = flow;
  } else {
    flow->ring_next = fp->ring->ring_next;
    fp->ring->ring_next = flow;
  }
  fp->ring = flow;
  flow->in_ring = 1;
}

/* Removes the flow that follows prev in the ring. */
static void ring_remove_after(struct fab_port *fp, struct fab_flow *prev)
{
  struct fab_flow *flow = prev->ring_next;
  if (flow == prev)
    fp->ring = NULL;
  else {
    prev->ring_next = flow->ring_next;
    if (fp->ring == flow)
      fp->ring = prev;
  }
  flow->in_ring = 0;
  flow->ring_next = NULL;
}

void fab_pkt_engine_forget_flow(struct fabric *fab, struct fab_flow *flow)
{
  struct fab_port *fp = &fab->ports[flow->path[0]];
  struct fab_flow *prev = fp->ring;
  if (prev == NULL)
    return;
  while (prev->ring_next != flow) {
    prev = prev->ring_next;
    if (prev == fp->ring)
      return; /* not in this ring */
  }
  ring_remove_after(fp, prev);
}

void fab_pkt_engine_start_flow(struct fabric *fab, struct fab_flow *flow)
{
  /* Transfers are whole bytes (fabric_post checks it): a fraction of a byte left over would
   * become a packet of 0 bytes that never completes the flow. */
  SGF_CHECK(flow->bytes == floor(flow->bytes) && flow->bytes > 0 && flow->bytes <= FAB_MAX_TRANSFER_BYTES,
            "flow %llu of %.17g bytes is not a whole number of bytes in 1..2^50", (unsigned long long)flow->id,
            flow->bytes);
  int port = flow->path[0];
  ring_insert(&fab->ports[port], flow);
  port_try_send(fab, port);
}

/* The NIC's next packet: the next flow of the ring that its pacing allows, or NULL (and then a
 * retry is scheduled at the earliest date a paced flow may send). */
static struct fab_packet *nic_next_packet(struct fabric *fab, int port)
{
  struct fab_port *fp = &fab->ports[port];
  if (fp->ring == NULL)
    return NULL;
  struct fab_flow *prev = fp->ring;
  struct fab_flow *start = prev->ring_next;
  struct fab_flow *flow = start;
  double earliest = -1;
  do {
    if (flow->next_tx_s <= fab->now) {
      /* The packet is built on the stack first: a model that refuses it (no credit, paused) then
       * costs nothing to undo, and the model kicks the port when the answer may change. */
      double left = flow->bytes - flow->injected;
      struct fab_packet next = { .flow = flow,
                                 .tail_s = fab->now,
                                 .seq = flow->next_seq,
                                 .bytes = (uint32_t)(left < fab->mtu ? left : fab->mtu),
                                 .node = fab->topo->ports[port].node,
                                 .in_port = -1,
                                 .queue = flow->queue };
      SGF_CHECK(next.bytes != 0, "flow %llu would inject a packet of 0 bytes (%.17g of %.17g sent)",
                (unsigned long long)flow->id, flow->injected, flow->bytes);
      if (fab->model->packet.may_send && !fab->model->packet.may_send(fab, port, next.queue, &next))
        return NULL;
      struct fab_packet *pkt = fabric_packet_alloc(fab);
      *pkt = next;
      flow->next_seq++;
      flow->injected += pkt->bytes;
      fab->stats.packets++;
      if (flow->injected >= flow->bytes)
        ring_remove_after(fp, prev);
      else
        fp->ring = flow; /* round robin: the next call starts after this flow */
      if (fab->model->packet.on_injected)
        fab->model->packet.on_injected(fab, flow, pkt);
      return pkt;
    }
    if (earliest < 0 || flow->next_tx_s < earliest)
      earliest = flow->next_tx_s;
    prev = flow;
    flow = flow->ring_next;
  } while (flow != start);
  if (earliest >= 0 && (fp->kick_s == 0 || earliest < fp->kick_s)) {
    fp->kick_s = earliest;
    fabric_schedule(fab, earliest, FAB_EV_KICK, (uint32_t)port, NULL);
  }
  return NULL;
}

/* The switch port's next packet: round robin over the queues whose head the model lets go. */
static struct fab_packet *switch_next_packet(struct fabric *fab, int port)
{
  struct fab_port *fp = &fab->ports[port];
  if (fab->model->packet.next_packet) {
    struct fab_packet *pkt = fab->model->packet.next_packet(fab, port);
    if (pkt)
      return pkt;
  }
  if (fp->total_queued <= 0)
    return NULL;
  for (int i = 0; i < FAB_MAX_QUEUES; i++) {
    int q = (fp->next_queue + i) % FAB_MAX_QUEUES;
    if (fp->head[q] == NULL)
      continue;
    if (fab->model->packet.may_send && !fab->model->packet.may_send(fab, port, q, fp->head[q]))
      continue;
    fp->next_queue = (uint8_t)((q + 1) % FAB_MAX_QUEUES);
    return queue_pop(fp, q);
  }
  return NULL;
}

static void port_try_send(struct fabric *fab, int port)
{
  struct fab_port *fp = &fab->ports[port];
  if (fp->busy || fabric_port_down(fab, port))
    return; /* a failed link carries nothing */
  const struct topo *t = fab->topo;
  const struct topo_port *tp = &t->ports[port];
  int is_source = t->nodes[tp->node].kind == TOPO_GPU;
  struct fab_packet *pkt = is_source ? nic_next_packet(fab, port) : switch_next_packet(fab, port);
  if (pkt == NULL)
    return;
  if (fab->model->packet.on_transmit)
    fab->model->packet.on_transmit(fab, port, pkt);
  /* Framing: the wire carries the payload plus the fabric's per-packet overhead (headers, CRCs,
   * and on Ethernet preamble and inter-frame gap), fab->frame_overhead_B. */
  double serialise = (pkt->bytes + fab->frame_overhead_B) / tp->rate_Bps;
  double end = fab->now + serialise;
  if (end < pkt->tail_s)
    end = pkt->tail_s; /* cut-through cannot outrun the tail still arriving */
  fp->busy = 1;
  fp->cur_queue = pkt->queue;
  fp->cur_bytes = pkt->bytes;
  fp->cur_in_port = pkt->in_port;
  fp->busy_s += end - fab->now;
  fp->tx_bytes += pkt->bytes;
  fp->tx_packets++;
  fab->stats.packet_hops++;

  const struct topo_node *peer = &t->nodes[tp->peer_node];
  double node_latency = peer->kind == TOPO_SWITCH     ? fab->switch_latency_s
                        : peer->kind == TOPO_NVSWITCH ? t->nvswitch_latency_s
                                                      : 0;
  double head_arrival = fab->now + tp->latency_s;
  double tail_arrival = end + tp->latency_s;
  double ready;
  if (peer->kind == TOPO_GPU)
    ready = tail_arrival;
  else if (fab->switching == FAB_SWITCHING_CUT_THROUGH)
    ready = head_arrival + node_latency;
  else
    ready = tail_arrival + node_latency;
  pkt->tail_s = tail_arrival + node_latency;
  pkt->in_port = port;
  if (fab->failures != NULL)
    fabric_failures_stamp(fab, pkt, port);
  pkt->node = tp->peer_node;
  pkt->hop++;
  fabric_schedule(fab, end, FAB_EV_TX_DONE, (uint32_t)port, NULL);
  fabric_schedule(fab, ready, FAB_EV_ARRIVE, 0, pkt);
}

/* Adaptive choice of the ideal fabric: the candidate with the least queued bytes, ties broken by
 * the flow's hash so that equal ports share the load. */
static int least_queued(const struct fabric *fab, const struct fab_packet *pkt, const int *cand, int n)
{
  int best = (int)route_pick(pkt->flow->key + pkt->seq, fab->route_seed, pkt->node, n);
  double best_load = fab->ports[cand[best]].total_queued + (fab->ports[cand[best]].busy ? 1 : 0);
  for (int i = 0; i < n; i++) {
    double load = fab->ports[cand[i]].total_queued + (fab->ports[cand[i]].busy ? 1 : 0);
    if (load < best_load) {
      best_load = load;
      best = i;
    }
  }
  return best;
}

int fabric_route_packet(struct fabric *fab, struct fab_packet *pkt)
{
  const struct topo *t = fab->topo;
  const struct fab_flow *flow = pkt->flow;
  if (t->nodes[pkt->node].kind == TOPO_SWITCH && fab->routing == FAB_ROUTING_ADAPTIVE) {
    int cand[ROUTE_MAX_CANDIDATES];
    int n = fab_route_candidates(t, pkt->node, flow->dst_gpu, cand, ROUTE_MAX_CANDIDATES);
    if (n == 0 && fab->failures != NULL)
      return -1; /* failures: no live port toward the destination */
    return cand[n <= 1 ? 0 : least_queued(fab, pkt, cand, n)];
  }
  if (fab->failures != NULL && (pkt->hop >= flow->hops || t->ports[flow->path[pkt->hop]].node != pkt->node)) {
    /* The flow was moved to another path (failures) while this packet was on the old one: it
     * goes on from where it is, by the same hash as the flow's path. */
    int cand[ROUTE_MAX_CANDIDATES];
    int n = fab_route_candidates(t, pkt->node, flow->dst_gpu, cand, ROUTE_MAX_CANDIDATES);
    return n > 0 ? cand[route_pick(flow->key, fab->route_seed, pkt->node, n)] : -1;
  }
  return flow->path[pkt->hop];
}

static void packet_arrive(struct fabric *fab, struct fab_packet *pkt)
{
  const struct topo *t = fab->topo;
  struct fab_flow *flow = pkt->flow;
  if (fab->failures != NULL && fabric_failures_lost_on_wire(fab, pkt)) {
    fabric_failures_packet_lost(fab, pkt->in_port, pkt, 0); /* its link failed under it */
    return;
  }
  int verdict = fab->model->packet.on_arrive ? fab->model->packet.on_arrive(fab, pkt->node, pkt) : FAB_ARRIVE_FORWARD;
  if (verdict == FAB_ARRIVE_DROP) {
    fab->stats.drops++;
    fabric_packet_free(fab, pkt);
    return;
  }
  if (verdict == FAB_ARRIVE_TAKEN)
    return;
  if (t->nodes[pkt->node].kind == TOPO_GPU) {
    double before = flow->delivered;
    if (fab->model->packet.on_deliver)
      fab->model->packet.on_deliver(fab, pkt);
    else
      flow->delivered += pkt->bytes;
    if (flow->delivered > before) {
      fab->wd_progress++; /* in-order bytes reached the destination (the watchdog's progress) */
      if (fab->failures != NULL)
        flow->stall_s = fab->now; /* the communicator timeout counts from the last progress */
    }
    fabric_packet_free(fab, pkt);
    if (flow->delivered >= flow->bytes && flow->state == FLOW_ACTIVE)
      fabric_flow_finished(fab, flow);
    return;
  }
  int port = fabric_route_packet(fab, pkt);
  if (fab->failures != NULL && (port < 0 || fabric_port_down(fab, port))) {
    /* Routed to a dead link before the routing knew, or no live way on. */
    fabric_failures_packet_lost(fab, port >= 0 ? port : fabric_failures_dead_end_port(fab, pkt), pkt, 0);
    return;
  }
  queue_push(&fab->ports[port], pkt);
  port_try_send(fab, port);
}

void fab_pkt_engine_flush_port(struct fabric *fab, int port)
{
  struct fab_port *fp = &fab->ports[port];
  for (int q = 0; q < FAB_MAX_QUEUES; q++)
    while (fp->head[q] != NULL)
      fabric_failures_packet_lost(fab, port, queue_pop(fp, q), 1);
}

void fabric_flow_rewind(struct fabric *fab, struct fab_flow *flow, uint32_t seq)
{
  double offset = (double)seq * fab->mtu;
  if (offset >= flow->injected)
    return;
  flow->injected = offset;
  flow->next_seq = seq;
  if (!flow->in_ring && flow->state == FLOW_ACTIVE) {
    int port = flow->path[0];
    ring_insert(&fab->ports[port], flow);
    port_try_send(fab, port);
  }
}

void fabric_port_kick(struct fabric *fab, int port) { port_try_send(fab, port); }

void fab_pkt_engine_event(struct fabric *fab, const struct fab_event *ev)
{
  switch (ev->type) {
  case FAB_EV_TX_DONE: {
    struct fab_port *fp = &fab->ports[ev->arg];
    fp->busy = 0;
    if (fab->model->packet.on_tx_done) {
      const struct fab_tx_done tx = { .queue = fp->cur_queue, .bytes = fp->cur_bytes, .in_port = fp->cur_in_port };
      fab->model->packet.on_tx_done(fab, (int)ev->arg, &tx);
    }
    port_try_send(fab, (int)ev->arg);
    break;
  }
  case FAB_EV_ARRIVE: packet_arrive(fab, ev->ptr); break;
  case FAB_EV_KICK: {
    struct fab_port *fp = &fab->ports[ev->arg];
    if (fp->kick_s <= fab->now)
      fp->kick_s = 0;
    port_try_send(fab, (int)ev->arg);
    break;
  }
  default: sgf_fatal(__FILE__, __LINE__, "unknown packet event type %u", (unsigned)ev->type);
  }
}
