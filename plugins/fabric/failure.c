/* Failures mid-run: the schedule, links going down and up, re-routing after the model's recovery
 * delay, the communicator timeout (failure.h). */
#include "failure.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fabric.h"
#include "json_out.h"
#include "text_input.h"

/* ---- the schedule file ---------------------------------------------------------------------- */

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* The links a target names: a link id, or a node (all its fabric links; NVLink never fails
 * here). Returns their count (links written to *out, allocated), or -1 with a message. */
static int target_links(const struct topo *t, const char *target, int **out, char *msg, size_t msglen)
{
  *out = NULL;
  for (int l = 0; l < t->n_links; l++)
    if (strcmp(t->links[l].name, target) == 0) {
      if (t->ports[t->links[l].port[0]].is_nvlink) {
        snprintf(msg, msglen, "'%s' is an NVLink link: only fabric links fail", target);
        return -1;
      }
      *out = sgf_xmalloc(sizeof(int));
      (*out)[0] = l;
      return 1;
    }
  int node = fab_topo_find_node(t, target);
  if (node < 0) {
    snprintf(msg, msglen, "'%s' is neither a link id (as 'leaf0--spine1') nor a node of the platform", target);
    return -1;
  }
  const struct topo_node *n = &t->nodes[node];
  int count = 0;
  *out = sgf_xmalloc(sizeof(int) * (size_t)(n->port_count > 0 ? n->port_count : 1));
  for (int p = n->first_port; p < n->first_port + n->port_count; p++)
    if (!t->ports[p].is_nvlink)
      (*out)[count++] = t->ports[p].link;
  if (count == 0) {
    free(*out);
    *out = NULL;
    snprintf(msg, msglen, "node '%s' has no fabric link", target);
    return -1;
  }
  return count;
}

struct fab_failures *fab_failures_load(const char *path, const struct topo *t, char *err, size_t errlen)
{
  FILE *in = text_input_open(path, "failure schedule", err, errlen);
  if (in == NULL)
    return NULL;
  struct fab_failures *f = sgf_xcalloc(1, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", path);
  f->job_failed_s = -1;
  f->check_s = -1;
  struct text_input ti;
  text_input_init(&ti, in, path, 4096);
  int cap = 0, header = 0, rc;
  char *line;
  size_t len;
  while ((rc = text_input_line(&ti, &line, &len, err, errlen)) == 1) {
    char *s = trim(line);
    if (*s == '\0' || *s == '#')
      continue;
    if (!header) {
      char *h = s;
      for (char *c = h; *c; c++)
        if (*c == ' ' || *c == '\t')
          memmove(c, c + 1, strlen(c)), c--;
      if (strcmp(h, "time_us,action,target") != 0) {
        snprintf(err, errlen, "%s:%d: the header must be 'time_us,action,target'", path, ti.line);
        goto fail;
      }
      header = 1;
      continue;
    }
    char *c1 = strchr(s, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (c1 == NULL || c2 == NULL || strchr(c2 + 1, ',') != NULL) {
      snprintf(err, errlen, "%s:%d: expected 3 fields time_us,action,target", path, ti.line);
      goto fail;
    }
    *c1 = *c2 = '\0';
    char *time_text = trim(s), *action = trim(c1 + 1), *target = trim(c2 + 1), *end;
    errno = 0;
    double time_us = strtod(time_text, &end);
    if (*time_text == '\0' || *end != '\0' || errno != 0 || !isfinite(time_us) || time_us < 0 ||
        strpbrk(time_text, "xXnN") != NULL) {
      snprintf(err, errlen, "%s:%d: time_us '%s' is not a non-negative decimal number of microseconds", path, ti.line,
               time_text);
      goto fail;
    }
    if (text_date_us_too_late(time_us, path, ti.line, "time_us", time_text, err, errlen))
      goto fail;
    int up;
    if (strcmp(action, "down") == 0)
      up = 0;
    else if (strcmp(action, "up") == 0)
      up = 1;
    else {
      snprintf(err, errlen, "%s:%d: action '%s' is not down or up", path, ti.line, action);
      goto fail;
    }
    if (strlen(target) >= sizeof f->events[0].target) {
      snprintf(err, errlen, "%s:%d: target '%.40s...' is too long", path, ti.line, target);
      goto fail;
    }
    int *links;
    char msg[256];
    int n = target_links(t, target, &links, msg, sizeof msg);
    if (n < 0) {
      snprintf(err, errlen, "%s:%d: %s", path, ti.line, msg);
      goto fail;
    }
    if (f->n_events == cap) {
      cap = cap ? 2 * cap : 8;
      f->events = sgf_xrealloc(f->events, (size_t)cap * sizeof *f->events);
    }
    struct fab_fail_event *ev = &f->events[f->n_events++];
    memset(ev, 0, sizeof *ev);
    ev->time_s = time_us / 1e6;
    ev->up = up;
    snprintf(ev->target, sizeof ev->target, "%s", target);
    ev->line = ti.line;
    ev->links = links;
    ev->n_links = n;
    ev->recovered_s = -1;
  }
  if (rc < 0)
    goto fail;
  if (!header) {
    snprintf(err, errlen, "%s: empty failure schedule (expected the header time_us,action,target)", path);
    goto fail;
  }
  if (f->n_events == 0) {
    snprintf(err, errlen, "%s:%d: no event after the header", path, ti.line);
    goto fail;
  }
  text_input_free(&ti);
  fclose(in);
  return f;
fail:
  text_input_free(&ti);
  fclose(in);
  fab_failures_free(f);
  return NULL;
}

void fab_failures_free(struct fab_failures *f)
{
  if (f == NULL)
    return;
  for (int i = 0; i < f->n_events; i++)
    free(f->events[i].links);
  free(f->events);
  free(f->link_down);
  free(f->link_event);
  free(f->fault_free_downset);
  free(f->port_epoch);
  free(f->pkt_flows);
  free(f);
}

/* ---- during the run ------------------------------------------------------------------------ */

/* The first port of the flow's path whose link is down, or -1. */
static int failed_hop(const struct fabric *fab, const int32_t *path, int hops)
{
  for (int h = 0; h < hops; h++)
    if (fab->port_failed[path[h]])
      return path[h];
  return -1;
}

static void timeout_check(struct fabric *fab, void *ctx);

static void arm_check(struct fabric *fab, double date)
{
  struct fab_failures *f = fab->failures;
  if (f->timeout_s <= 0 || (f->check_s >= 0 && f->check_s <= date))
    return;
  f->check_s = date;
  fabric_call_at(fab, date, timeout_check, (void *)(uintptr_t)++f->check_gen);
}

static void stall(struct fabric *fab, struct fab_flow *flow, int port)
{
  if (flow->fail_stalled)
    return;
  flow->fail_stalled = 1;
  flow->stall_s = fab->now;
  flow->stall_link = fab->topo->ports[port].link;
  int ev = fab->failures->link_event[flow->stall_link];
  if (ev >= 0)
    fab->failures->events[ev].flows_affected++; /* at the failure, or started on the dead link since */
  arm_check(fab, fab->now + fab->failures->timeout_s);
}

static void timeout_check(struct fabric *fab, void *ctx)
{
  struct fab_failures *f = fab->failures;
  if ((uintptr_t)ctx != f->check_gen)
    return; /* superseded by an earlier check */
  f->check_s = -1;
  size_t n;
  struct fab_flow **active = fabric_active_flows(fab, &n);
  double oldest = -1;
  const struct fab_flow *culprit = NULL;
  for (size_t i = 0; i < n; i++)
    if (active[i]->fail_stalled && (oldest < 0 || active[i]->stall_s < oldest)) {
      oldest = active[i]->stall_s;
      culprit = active[i];
    }
  /* Packet fidelity: a flow that met a failure is watched until it ends; stall_s is its last
   * delivery, so the timeout counts from its last progress. */
  for (size_t i = 0; i < f->n_pkt_flows; i++)
    if (f->pkt_flows[i]->fail_stalled && (oldest < 0 || f->pkt_flows[i]->stall_s < oldest)) {
      oldest = f->pkt_flows[i]->stall_s;
      culprit = f->pkt_flows[i];
    }
  if (culprit == NULL)
    return;
  if (oldest + f->timeout_s > fab->now * (1 + 1e-12)) {
    arm_check(fab, oldest + f->timeout_s);
    return;
  }
  f->job_failed_s = fab->now;
  snprintf(f->job_failed_msg, sizeof f->job_failed_msg,
           "job failed at %.6f s: transfer GPU %d -> GPU %d made no progress since %.6f s (link %s down; "
           "coll/timeout %g s)",
           fab->now, culprit->src_gpu, culprit->dst_gpu, culprit->stall_s, fab->topo->links[culprit->stall_link].name,
           f->timeout_s);
  snprintf(fab->stall_msg, sizeof fab->stall_msg, "%s", f->job_failed_msg);
  fab->stalled = 1; /* no event is processed any more: the run ends here */
}

/* The routing learnt of an event: every flow still crossing a failed link takes a live path if it
 * has one. */
static void reroute_stalled(struct fabric *fab, struct fab_fail_event *ev)
{
  const struct topo *t = fab->topo;
  size_t n;
  struct fab_flow **active = fabric_active_flows(fab, &n);
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *fl = active[i];
    int bad = failed_hop(fab, fl->path, fl->hops);
    if (bad < 0) {
      fl->fail_stalled = 0;
      continue;
    }
    if (fl->fixed_path || fl->src_gpu == fl->dst_gpu)
      continue; /* an in-network reduction leg keeps its tree */
    int32_t old_path[ROUTE_MAX_HOPS];
    int old_hops = fl->hops;
    double old_cap = fl->rate_cap_Bps, old_standing = fl->standing_cap_Bps;
    memcpy(old_path, fl->path, sizeof old_path);
    int hops = fab->model->lifecycle.flow_path ? fab->model->lifecycle.flow_path(fab, fl)
                                               : fab_route_hashed_path(t, fl->src_gpu, fl->dst_gpu, fl->key,
                                                                       fab->route_seed, fl->path, ROUTE_MAX_HOPS);
    int32_t new_path[ROUTE_MAX_HOPS];
    memcpy(new_path, fl->path, sizeof new_path);
    memcpy(fl->path, old_path, sizeof old_path);
    fl->hops = (uint8_t)old_hops;
    if (hops <= 0 || failed_hop(fab, new_path, hops) >= 0) {
      fl->rate_cap_Bps = old_cap;
      fl->standing_cap_Bps = old_standing;
      ev->flows_unroutable++;
      continue; /* no live path: it waits, stalled */
    }
    int np[ROUTE_MAX_HOPS];
    for (int h = 0; h < hops; h++)
      np[h] = new_path[h];
    fab_flow_engine_reroute(fab, fl, np, hops);
    fl->fail_stalled = 0;
    ev->flows_rerouted++;
  }
}

/* Packet fidelity: the flow met a failure on link (a packet lost, or its NIC link down): the
 * communicator timeout watches it from its last delivery (stall_s) until it ends. */
static void watch(struct fabric *fab, struct fab_flow *flow, int link)
{
  struct fab_failures *f = fab->failures;
  if (flow->fail_stalled)
    return;
  flow->fail_stalled = 1;
  flow->stall_link = link;
  int ev = f->link_event[link];
  if (ev >= 0)
    f->events[ev].flows_affected++;
  double due = flow->stall_s + f->timeout_s;
  arm_check(fab, due > fab->now ? due : fab->now);
}

/* Packet fidelity, the routing learnt of an event: a flow whose path crosses a failed link takes
 * a live one if it has one (the model's routing, with the flow's own hash); its packets still on
 * the old path go on from where they are (fabric_route_packet). Under per-packet routing
 * (adaptive) the switches already choose among live ports once the down-sets are updated. */
static void reroute_packet_flows(struct fabric *fab, struct fab_fail_event *ev)
{
  const struct topo *t = fab->topo;
  struct fab_failures *f = fab->failures;
  for (size_t i = 0; i < f->n_pkt_flows; i++) {
    struct fab_flow *fl = f->pkt_flows[i];
    if (fl->fixed_path || fl->src_gpu == fl->dst_gpu || failed_hop(fab, fl->path, fl->hops) < 0)
      continue;
    int32_t old_path[ROUTE_MAX_HOPS];
    int old_hops = fl->hops;
    memcpy(old_path, fl->path, sizeof old_path);
    int hops = fab->model->lifecycle.flow_path ? fab->model->lifecycle.flow_path(fab, fl)
                                               : fab_route_hashed_path(t, fl->src_gpu, fl->dst_gpu, fl->key,
                                                                       fab->route_seed, fl->path, ROUTE_MAX_HOPS);
    if (hops <= 0 || hops > ROUTE_MAX_HOPS || fl->path[0] != old_path[0] || failed_hop(fab, fl->path, hops) >= 0) {
      memcpy(fl->path, old_path, sizeof old_path); /* no live path: it keeps its own and waits */
      fl->hops = (uint8_t)old_hops;
      ev->flows_unroutable++;
      continue;
    }
    fl->hops = (uint8_t)hops;
    ev->flows_rerouted++;
  }
}

static void recover(struct fabric *fab, void *ctx)
{
  struct fab_fail_event *ev = ctx;
  struct topo *t = fab->topo;
  for (int i = 0; i < ev->n_links; i++)
    for (int e = 0; e < 2; e++) {
      int p = t->links[ev->links[i]].port[e];
      t->route_down[p] = fab->port_failed[p];
    }
  fab_topo_compute_downsets(t);
  ev->recovered_s = fab->now;
  reroute_stalled(fab, ev);
  if (fab->fidelity == FAB_FIDELITY_PACKET)
    reroute_packet_flows(fab, ev);
}

/* The bytes a flow had in flight on the path it loses: a round trip of its rate (what the
 * sender posted and has not seen acknowledged: InfiniBand's transport and RoCE's go-back-N send
 * it again), at most what it had sent. */
static double in_flight(const struct fabric *fab, const struct fab_flow *fl)
{
  double rtt = 2 * fabric_path_tail_latency(fab, fl, fab->mtu);
  double sent = fl->bytes - fl->remaining;
  double b = floor(fl->rate_Bps * rtt);
  return b < sent ? b : (sent > 0 ? floor(sent) : 0);
}

/* Packet fidelity: link l goes down (up: 1). Down: both directions stop at once; the packets
 * on its wires are lost when they arrive (the epoch), those queued for its egress ports now;
 * the model drops what it holds for them and resets its per-link state; a flow whose NIC link
 * it is can send nothing and is watched. Up: the ports transmit again at once. */
static void packet_link_state(struct fabric *fab, int l, int up)
{
  struct fab_failures *f = fab->failures;
  const struct topo *t = fab->topo;
  for (int e = 0; e < 2; e++) {
    int p = t->links[l].port[e];
    fab->port_failed[p] = (uint8_t)!up;
    if (!up) {
      f->port_epoch[p]++;
      fab_pkt_engine_flush_port(fab, p);
    }
  }
  if (fab->model->packet.on_link_state)
    fab->model->packet.on_link_state(fab, l, up);
  for (size_t i = 0; !up && i < f->n_pkt_flows; i++) {
    struct fab_flow *fl = f->pkt_flows[i];
    if (fl->hops > 0 && (t->ports[fl->path[0]].link == l || t->ports[fl->path[fl->hops - 1]].link == l))
      watch(fab, fl, l);
  }
  for (int e = 0; up && e < 2; e++)
    fabric_port_kick(fab, t->links[l].port[e]);
}

static void apply(struct fabric *fab, void *ctx)
{
  struct fab_fail_event *ev = ctx;
  struct fab_failures *f = fab->failures;
  const struct topo *t = fab->topo;
  ev->applied = 1;
  for (int i = 0; i < ev->n_links; i++) {
    int l = ev->links[i];
    if (f->link_down[l] == !ev->up)
      continue; /* already in that state */
    f->link_down[l] = !ev->up;
    if (!ev->up)
      f->link_event[l] = (int)(ev - f->events);
    if (fab->fidelity == FAB_FIDELITY_PACKET)
      packet_link_state(fab, l, ev->up);
    for (int e = 0; e < 2; e++) {
      int p = t->links[l].port[e];
      fab->port_failed[p] = (uint8_t)!ev->up;
      int count;
      struct fab_flow *const *flows = fabric_port_flows(fab, p, &count);
      for (int k = 0; k < count; k++) {
        struct fab_flow *fl = flows[k];
        if (!ev->up) {
          if (fl->fail_stalled)
            continue;
          fab_flow_engine_sync(fab, fl);
          double lost = fl->rate_Bps > 0 ? in_flight(fab, fl) : 0;
          fl->remaining += lost;
          ev->bytes_retransmitted += lost;
          stall(fab, fl, p);
        } else if (fl->fail_stalled && failed_hop(fab, fl->path, fl->hops) < 0) {
          fl->fail_stalled = 0; /* its path is whole again: it resumes */
        }
      }
      fab_flow_engine_touch_port(fab, p);
    }
  }
  ev->delay_s = fab->model->lifecycle.recovery_delay ? fab->model->lifecycle.recovery_delay(fab, ev->up) : 0;
  fabric_call_at(fab, fab->now + ev->delay_s, recover, ev);
}

int fabric_failures_install(struct fabric *fab, struct fab_failures *f, double timeout_s, char *err, size_t errlen)
{
  (void)err;
  (void)errlen;
  struct topo *t = fab->topo;
  f->timeout_s = timeout_s;
  f->link_down = sgf_xcalloc((size_t)t->n_links, sizeof(int));
  f->link_event = sgf_xmalloc((size_t)(t->n_links > 0 ? t->n_links : 1) * sizeof(int));
  for (int l = 0; l < t->n_links; l++)
    f->link_event[l] = -1;
  size_t words = (size_t)t->n_nodes * t->downset_words;
  f->fault_free_downset = sgf_xmalloc(words * sizeof(uint64_t));
  memcpy(f->fault_free_downset, t->downset, words * sizeof(uint64_t));
  if (t->route_down == NULL)
    t->route_down = sgf_xcalloc((size_t)t->n_ports + 1, 1);
  fab->port_failed = sgf_xcalloc((size_t)t->n_ports + 1, 1);
  f->port_epoch = sgf_xcalloc((size_t)t->n_ports + 1, 1);
  fab->failures = f;
  for (int i = 0; i < f->n_events; i++)
    fabric_call_at(fab, f->events[i].time_s, apply, &f->events[i]);
  return 0;
}

int fabric_failures_route_fallback(struct fabric *fab, struct fab_flow *flow)
{
  struct topo *t = fab->topo;
  struct fab_failures *f = fab->failures;
  size_t words = (size_t)t->n_nodes * t->downset_words;
  uint64_t *live = t->downset;
  uint8_t *down = t->route_down;
  t->downset = f->fault_free_downset;
  t->route_down = NULL;
  int hops =
      fab_route_hashed_path(t, flow->src_gpu, flow->dst_gpu, flow->key, fab->route_seed, flow->path, ROUTE_MAX_HOPS);
  t->downset = live;
  t->route_down = down;
  (void)words;
  return hops;
}

void fabric_failures_flow_started(struct fabric *fab, struct fab_flow *flow)
{
  const struct topo *t = fab->topo;
  struct fab_failures *f = fab->failures;
  if (flow->state == FLOW_ACTIVE && fab->fidelity == FAB_FIDELITY_PACKET && flow->active_index < 0 && flow->hops > 0 &&
      !t->ports[flow->path[0]].is_nvlink) {
    /* A packet flow: listed for the timeout and the re-routing; its NIC link may be down. */
    if (f->n_pkt_flows == f->cap_pkt_flows) {
      f->cap_pkt_flows = f->cap_pkt_flows ? 2 * f->cap_pkt_flows : 256;
      f->pkt_flows = sgf_xrealloc(f->pkt_flows, f->cap_pkt_flows * sizeof *f->pkt_flows);
    }
    flow->fail_index = (int32_t)f->n_pkt_flows;
    f->pkt_flows[f->n_pkt_flows++] = flow;
    flow->stall_s = fab->now;
    int first = t->ports[flow->path[0]].link, last = t->ports[flow->path[flow->hops - 1]].link;
    if (f->link_down[first] || f->link_down[last])
      watch(fab, flow, f->link_down[first] ? first : last);
    return;
  }
  if (flow->state != FLOW_ACTIVE || flow->active_index < 0)
    return;
  int bad = failed_hop(fab, flow->path, flow->hops);
  if (bad >= 0)
    stall(fab, flow, bad);
}

void fabric_failures_flow_finished(struct fabric *fab, struct fab_flow *flow)
{
  struct fab_failures *f = fab->failures;
  int32_t i = flow->fail_index;
  if (i < 0 || (size_t)i >= f->n_pkt_flows || f->pkt_flows[i] != flow)
    return;
  struct fab_flow *last = f->pkt_flows[--f->n_pkt_flows];
  f->pkt_flows[i] = last;
  last->fail_index = i;
  flow->fail_index = -1;
}

/* ---- packet fidelity ----------------------------------------------------------------------- */

void fabric_failures_stamp(const struct fabric *fab, struct fab_packet *pkt, int port)
{
  pkt->link_epoch = fab->failures->port_epoch[port];
}

int fabric_failures_lost_on_wire(const struct fabric *fab, const struct fab_packet *pkt)
{
  int in = pkt->in_port;
  return in >= 0 && (fab->port_failed[in] || pkt->link_epoch != fab->failures->port_epoch[in]);
}

void fabric_failures_packet_lost(struct fabric *fab, int port, struct fab_packet *pkt, int queued)
{
  struct fab_failures *f = fab->failures;
  int link = fab->topo->ports[port].link;
  int ev = f->link_event[link];
  fab->stats.drops++;
  if (ev >= 0) {
    f->events[ev].packets_dropped++;
    f->events[ev].bytes_dropped += pkt->bytes;
  }
  if (pkt->flow->state == FLOW_ACTIVE)
    watch(fab, pkt->flow, link);
  if (fab->model->packet.on_packet_lost)
    fab->model->packet.on_packet_lost(fab, port, pkt, queued);
  fabric_packet_free(fab, pkt);
}

int fabric_failures_dead_end_port(const struct fabric *fab, const struct fab_packet *pkt)
{
  const struct topo *t = fab->topo;
  return t->ports[t->gpu_nic_port[pkt->flow->dst_gpu]].peer_port;
}

void fabric_failures_retransmitted(struct fabric *fab, const struct fab_flow *flow, double bytes)
{
  struct fab_failures *f = fab->failures;
  if (!flow->fail_stalled)
    return; /* a retransmission for another cause (a buffer drop) */
  int ev = f->link_event[flow->stall_link];
  if (ev >= 0)
    f->events[ev].bytes_retransmitted += bytes;
}

void fabric_failures_fail_job(struct fabric *fab, const char *msg)
{
  struct fab_failures *f = fab->failures;
  if (f->job_failed_s >= 0)
    return;
  f->job_failed_s = fab->now;
  snprintf(f->job_failed_msg, sizeof f->job_failed_msg, "%s", msg);
  snprintf(fab->stall_msg, sizeof fab->stall_msg, "%s", f->job_failed_msg);
  fab->stalled = 1; /* no event is processed any more: the run ends here */
}

/* ---- summary.json --------------------------------------------------------------------------- */

void fabric_failures_write_json(const struct fabric *fab, FILE *out, const char *indent)
{
  const struct fab_failures *f = fab->failures;
  if (f == NULL)
    return;
  /* Packets exist at packet fidelity only: null at flow fidelity, never 0. */
  int packet = fab->fidelity == FAB_FIDELITY_PACKET;
  double total_retx = 0, total_dropped_B = 0;
  unsigned long long affected = 0, rerouted = 0, dropped = 0;
  char num[2][32];
  fprintf(out, "%s\"failures\": {\n%s  \"schedule\": ", indent, indent);
  const char *base = strrchr(f->path, '/'); /* its name: the manifest has the file and its hash */
  json_write_string(out, base ? base + 1 : f->path);
  fprintf(out, ",\n%s  \"communicator_timeout_s\": %s,\n%s  \"events\": [\n", indent,
          f->timeout_s > 0 ? JSON_NUMBER(f->timeout_s) : "null", indent);
  for (int i = 0; i < f->n_events; i++) {
    const struct fab_fail_event *ev = &f->events[i];
    total_retx += ev->bytes_retransmitted;
    affected += ev->flows_affected;
    rerouted += ev->flows_rerouted;
    dropped += ev->packets_dropped;
    total_dropped_B += ev->bytes_dropped;
    int applied = ev->applied;
    fprintf(out, "%s    {\"time_s\": %s, \"action\": \"%s\", \"target\": ", indent, JSON_NUMBER(ev->time_s),
            ev->up ? "up" : "down");
    json_write_string(out, ev->target);
    snprintf(num[0], sizeof num[0], "%llu", ev->packets_dropped);
    snprintf(num[1], sizeof num[1], "%.0f", ev->bytes_dropped);
    fprintf(out,
            ", \"line\": %d, \"links\": %d, \"applied\": %s, \"recovery_delay_s\": %s, \"recovered_at_s\": %s, "
            "\"time_to_recover_s\": %s, \"flows_affected\": %llu, \"flows_rerouted\": %llu, "
            "\"flows_without_path\": %llu, \"packets_dropped\": %s, \"bytes_dropped\": %s, "
            "\"bytes_retransmitted\": %s}%s\n",
            ev->line, ev->n_links, applied ? "true" : "false", applied ? JSON_NUMBER(ev->delay_s) : "null",
            ev->recovered_s >= 0 ? JSON_NUMBER(ev->recovered_s) : "null",
            ev->recovered_s >= 0 ? JSON_NUMBER(ev->recovered_s - ev->time_s) : "null", ev->flows_affected,
            ev->flows_rerouted, ev->flows_unroutable, packet ? num[0] : "null", packet ? num[1] : "null",
            JSON_NUMBER(ev->bytes_retransmitted), i + 1 < f->n_events ? "," : "");
  }
  snprintf(num[0], sizeof num[0], "%llu", dropped);
  snprintf(num[1], sizeof num[1], "%.0f", total_dropped_B);
  fprintf(out,
          "%s  ],\n%s  \"flows_affected\": %llu,\n%s  \"flows_rerouted\": %llu,\n%s  \"packets_dropped\": %s,\n"
          "%s  \"bytes_dropped\": %s,\n%s  \"bytes_retransmitted\": %s\n%s},\n",
          indent, indent, affected, indent, rerouted, indent, packet ? num[0] : "null", indent,
          packet ? num[1] : "null", indent, JSON_NUMBER(total_retx), indent);
  fprintf(out, "%s\"job_failed_at_s\": %s,\n", indent, f->job_failed_s >= 0 ? JSON_NUMBER(f->job_failed_s) : "null");
}

void fabric_failures_print(const struct fabric *fab, FILE *out, const char *prefix)
{
  const struct fab_failures *f = fab->failures;
  if (f == NULL)
    return;
  for (int i = 0; i < f->n_events; i++) {
    const struct fab_fail_event *ev = &f->events[i];
    if (!ev->applied)
      continue;
    fprintf(out, "%s%s %s at %.6f s: recovery delay %.6f s, ", prefix, ev->target, ev->up ? "up" : "down", ev->time_s,
            ev->delay_s);
    if (ev->recovered_s >= 0)
      fprintf(out, "routes updated at %.6f s", ev->recovered_s);
    else
      fprintf(out, "routes not updated before the end");
    fprintf(out, ", %llu flows affected, %llu re-routed, %llu without a path, %.0f bytes retransmitted",
            ev->flows_affected, ev->flows_rerouted, ev->flows_unroutable, ev->bytes_retransmitted);
    if (fab->fidelity == FAB_FIDELITY_PACKET)
      fprintf(out, ", %llu packets (%.0f bytes) dropped", ev->packets_dropped, ev->bytes_dropped);
    fprintf(out, "\n");
  }
}
