/* RoCEv2 at flow fidelity: the switch egresses DCQCN holds, measured on the packet model
 * (roce_held_port.h). */
#include "roce_held_port.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "param.h"
#include "roce_internal.h"

static void sims_free(struct roce_held *h);

int roce_held_init(struct roce_held *h, int n_ports)
{
  memset(h, 0, sizeof *h);
  h->port_entry = malloc(((size_t)n_ports + 1) * sizeof *h->port_entry);
  h->load_Bps = calloc((size_t)n_ports + 1, sizeof *h->load_Bps);
  h->last_load_Bps = calloc((size_t)n_ports + 1, sizeof *h->last_load_Bps);
  h->scale = malloc(((size_t)n_ports + 1) * sizeof *h->scale);
  h->ever_held = calloc((size_t)n_ports + 1, 1);
  h->held_since_s = calloc((size_t)n_ports + 1, sizeof *h->held_since_s);
  h->released_s = malloc(((size_t)n_ports + 1) * sizeof *h->released_s);
  h->age_timer = calloc((size_t)n_ports + 1, sizeof *h->age_timer);
  h->decided = calloc((size_t)n_ports + 1, 1);
  h->candidate = calloc((size_t)n_ports + 1, 1);
  h->chained = calloc((size_t)n_ports + 1, 1);
  h->ring_steps = calloc((size_t)n_ports + 1, 1);
  h->decided_list = malloc(((size_t)n_ports + 1) * sizeof *h->decided_list);
  h->marked = calloc((size_t)n_ports + 1, 1);
  h->depth = malloc((size_t)n_ports + 1);
  h->message_log2 = calloc((size_t)n_ports + 1, sizeof *h->message_log2);
  h->message_bytes = calloc((size_t)n_ports + 1, sizeof *h->message_bytes);
  h->rank_off = calloc((size_t)n_ports + 1, sizeof *h->rank_off);
  h->rank_len = calloc((size_t)n_ports + 1, sizeof *h->rank_len);
  h->ranked = calloc((size_t)n_ports + 1, sizeof *h->ranked);
  if (h->rank_off == NULL || h->rank_len == NULL || h->ranked == NULL || h->port_entry == NULL || h->load_Bps == NULL ||
      h->last_load_Bps == NULL || h->scale == NULL || h->ever_held == NULL || h->held_since_s == NULL ||
      h->released_s == NULL || h->age_timer == NULL || h->decided == NULL || h->candidate == NULL ||
      h->chained == NULL || h->ring_steps == NULL || h->decided_list == NULL || h->marked == NULL || h->depth == NULL ||
      h->message_log2 == NULL || h->message_bytes == NULL)
    return -1;
  memset(h->depth, UINT8_MAX, (size_t)n_ports + 1);
  h->max_runs = ROCE_HELD_MAX_RUNS;
  for (int p = 0; p <= n_ports; p++) {
    h->scale[p] = 1;
    h->port_entry[p] = -1;
    h->released_s[p] = -INFINITY;
  }
  return 0;
}

void roce_held_fini(struct roce_held *h)
{
  sims_free(h);
  free(h->entry);
  free(h->port_entry);
  free(h->load_Bps);
  free(h->last_load_Bps);
  free(h->scale);
  free(h->ever_held);
  free(h->held_since_s);
  free(h->released_s);
  free(h->age_timer);
  free(h->decided);
  free(h->candidate);
  free(h->chained);
  free(h->ring_steps);
  free(h->decided_list);
  free(h->marked);
  free(h->depth);
  free(h->message_log2);
  free(h->message_bytes);
  free(h->rank_buf);
  free(h->rank_off);
  free(h->rank_len);
  free(h->ranked);
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

/* The measuring fabric's totals at a date: the two phases are their differences. */
struct measure_point {
  double date_s, delivered_B, marks, cnps, cuts, paused_s;
  double all_delivered_B; /* by every sender, the port's and (a feeders measure) the others */
  double sender_B[ROCE_HELD_MAX_PORTS * ROCE_HELD_MAX_SENDERS]; /* by each sender into the port(s) */
};

/* A sender of the measure: one flow into its receiver at a time, each message posted when the
 * one before it has arrived (message_B 0: a single flow, longer than the measure). */
struct measure_sender {
  int src, dst;
  double message_B;
  double done_B;         /* bytes of its messages that arrived whole */
  struct fab_flow *flow; /* the message on its way */
};

static void measure_next_message(struct fabric *m, struct fab_flow *flow, void *ctx)
{
  struct measure_sender *s = ctx;
  s->done_B += flow->bytes;
  s->flow = fabric_post(m, s->src, s->dst, s->message_B, m->now, 0, measure_next_message, s);
}

/* senders[0, n) send into the measured port(s), senders[n, all) elsewhere. */
static void measure_point_at(struct fabric *m, const struct measure_sender *senders, int n, int all, double date,
                             struct measure_point *pt)
{
  fabric_advance(m, date);
  const struct roce_state *rs = roce__state(m);
  pt->date_s = date;
  pt->delivered_B = pt->all_delivered_B = 0;
  for (int i = 0; i < all; i++) {
    double b = senders[i].done_B + senders[i].flow->delivered;
    pt->all_delivered_B += b;
    if (i < n) {
      pt->delivered_B += b;
      pt->sender_B[i] = b;
    }
  }
  pt->marks = (double)(rs->stats.ecn.marked_forced + rs->stats.ecn.marked_prob);
  pt->cnps = (double)rs->stats.cnps_sent;
  pt->cuts = (double)rs->stats.dcqcn.cuts;
  /* the pauses ended, and those still running up to the date */
  pt->paused_s = rs->stats.paused_s;
  for (int p = 0; p < m->topo->n_ports; p++)
    for (int q = 0; q < FAB_MAX_QUEUES; q++)
      if (rs->ports[p].is_paused[q])
        pt->paused_s += date - rs->ports[p].pause_start_s[q];
}

/* One phase, from the totals at its start and end; -1 if the port carried nothing in it. The
 * signals are the whole measure's, per flow (its `flows`, every sender) and per packet sent: in
 * a feeders measure they are those of the feeders' transfers too; the shares are those of its
 * `senders` into the measured port(s). */
static int measure_phase(const struct measure_point *from, const struct measure_point *to, int flows, int senders,
                         double payload_Bps, double mtu, struct roce_held_phase *out)
{
  double dt = to->date_s - from->date_s, bytes = to->delivered_B - from->delivered_B;
  if (!(bytes > 0))
    return -1;
  out->senders = senders;
  for (int i = 0; i < senders; i++) { /* an insertion sort: at most 32 */
    double x = (to->sender_B[i] - from->sender_B[i]) / (bytes / senders);
    int j = i;
    for (; j > 0 && out->share[j - 1] > x; j--)
      out->share[j] = out->share[j - 1];
    out->share[j] = x;
  }
  out->utilisation = fmin(1, bytes / payload_Bps / dt);
  out->marked_fraction = (to->marks - from->marks) / ((to->all_delivered_B - from->all_delivered_B) / mtu);
  out->cnps_per_flow_s = (to->cnps - from->cnps) / flows / dt;
  out->cuts_per_flow_s = (to->cuts - from->cuts) / flows / dt;
  /* every pause, at depth 1 those of the leaves' up-links too */
  out->paused_fraction = fmin(1, (to->paused_s - from->paused_s) / flows / dt);
  return 0;
}

/* A measuring platform t, finished: one GPU per node, the run's switch latency; NULL (t freed)
 * with a message in err if it cannot be. */
static struct topo *measure_topo_done(struct topo *t, double switch_latency_s, char *err, size_t errlen)
{
  t->gpus_per_node = 1;
  t->switch_latency_s = switch_latency_s;
  if (fab_topo_finalize(t, err, errlen) != 0) {
    fab_topo_free(t);
    return NULL;
  }
  return t;
}

/* The measuring platform: `ports` receivers, each with `senders` GPUs sending to it; a receiver
 * takes rate_Bps, each sender sends at sender_Bps. Depth 0: every GPU on one switch; depth 1:
 * every GPU on a leaf of its own under one spine, so that each sender's packets cross a switch
 * egress of their own (its leaf's up-link) before the congested port (the spine's down-link to
 * the receiver's leaf). GPU g x (senders + 1) is group g's receiver, the senders follow it. */
static struct topo *measure_topo(int ports, int senders, int depth, double sender_Bps, double rate_Bps,
                                 double latency_s, double switch_latency_s, char *err, size_t errlen)
{
  struct topo *t = fab_topo_new();
  char name[24];
  int top = fab_topo_add_node(t, depth ? "spine0" : "leaf0", TOPO_SWITCH, depth ? 2 : 1, -1, 0);
  for (int g = 0; g < ports * (senders + 1); g++) {
    double r = g % (senders + 1) == 0 ? rate_Bps : sender_Bps;
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
  return measure_topo_done(t, switch_latency_s, err, errlen);
}

/* A measure's packet-level fabric, kept between phases so that a later phase is run only when a
 * held port reaches that age. It goes on from where it stopped, so a phase measured late gives
 * the figures a measure of every phase at once gives. */
struct roce_held_run {
  struct topo *t;
  struct param_set *ps;
  struct fabric *m;
  struct measure_sender sender[ROCE_HELD_MAX_PORTS * ROCE_HELD_MAX_SENDERS]; /* callbacks point in here */
  int at;                       /* the boundary (below) the model has run to */
  int flows;                    /* the senders into the measured port(s), sender[0, flows) */
  int all;                      /* every sender: flows, then a feeders measure's others */
  struct roce_held_shape shape; /* a copy: the cache's runs move when it grows */
  double payload_Bps;
};

/* The dates a measure's packet model stops at: boundary 0 is its start, boundary b > 0 the end of
 * fine phase b - 1 (ROCE_HELD_FINE_START_S x 2^(b - 1)). The coarse phases end among them (20 ms
 * x 2^k is fine phase k + 5's end, to the bit: the two schedules differ by powers of two), so a
 * shape measured in either schedule is one packet run, and each phase is the difference of the
 * run's totals at two boundaries. */
#define ROCE_HELD_BOUNDARIES (ROCE_HELD_FINE_PHASES + 1)
#define COARSE_FIRST_END (ROCE_HELD_FINE_PHASES - ROCE_HELD_PHASES + 1) /* the boundary at 20 ms */

/* One packet run of a shape, shared by the cache's entries of that shape in both schedules
 * (shapes that differ only in `fine`): the totals at the boundaries it has reached, and its
 * packet model while an entry still has phases to measure (at most max_runs are kept: a dropped
 * one is started again, and run to where it was, when a port needs a later boundary). */
struct roce_held_sim {
  struct roce_held_shape shape;                     /* fine 0: the schedule is the entries' */
  struct measure_point point[ROCE_HELD_BOUNDARIES]; /* the totals at boundaries 0 .. reached */
  int reached;
  int stalled_from;          /* the first boundary reached stalled (none: BOUNDARIES) */
  int flows, all;            /* as the run's */
  double capacity_Bps, mtu;  /* the measured ports' payload rate, together; the MTU */
  struct roce_held_run *run; /* NULL once dropped */
  int open;                  /* entries of it with phases left to measure */
  uint64_t last_use;         /* when one of them last asked for a phase (uses) */
};

static void run_free(struct roce_held_run *r)
{
  if (r == NULL)
    return;
  fabric_free(r->m);
  fab_param_set_free(r->ps);
  fab_topo_free(r->t);
  free(r);
}

static void sims_free(struct roce_held *h)
{
  for (size_t i = 0; i < h->n_sims; i++)
    run_free(h->sim[i].run);
  free(h->sim);
}

static double boundary_s(int b) { return b == 0 ? 0 : ROCE_HELD_FINE_START_S * (1 << (b - 1)); }

/* The boundary phase k of a shape ends at (it starts at the one before's end, or at 0). */
static int phase_last_boundary(const struct roce_held_shape *shape, int k)
{
  return shape->fine ? k + 1 : COARSE_FIRST_END + k;
}

static int phase_first_boundary(const struct roce_held_shape *shape, int k)
{
  return k == 0 ? 0 : phase_last_boundary(shape, k - 1);
}

/* A shape's phases: how many, and the age at which phase k ends. */
static int shape_phases(const struct roce_held_shape *shape)
{
  return shape->fine ? ROCE_HELD_FINE_PHASES : ROCE_HELD_PHASES;
}

static double phase_end_s(const struct roce_held_shape *shape, int k)
{
  return boundary_s(phase_last_boundary(shape, k));
}

/* The measuring platform of a feeders shape: the port is a top switch's down-link to the leaf of
 * GPU 0, its receiver; each feeder is a leaf's up-link to the top switch, and the leaf holds a
 * GPU per transfer through it, each at the line rate; a transfer bound elsewhere goes to a GPU
 * alone on a leaf of its own (nothing past the top switch slows it). Every link at the port's
 * rate and delay. */
static struct topo *feeders_topo(const struct roce_held_shape *shape, double switch_latency_s, int *src, int *dst,
                                 char *err, size_t errlen)
{
  struct topo *t = fab_topo_new();
  char name[32];
  double rate = shape->rate_Bps, latency = shape->latency_s;
  int top = fab_topo_add_node(t, "spine0", TOPO_SWITCH, 2, -1, 0);
  int leaf = fab_topo_add_node(t, "leaf0", TOPO_SWITCH, 1, -1, 0);
  fab_topo_add_link(t, leaf, top, rate, latency, NULL, 0);
  fab_topo_add_link(t, fab_topo_add_node(t, "gpu0", TOPO_GPU, 0, 0, 0), leaf, rate, latency, NULL, 0);
  int gpus = 1, n = 0;
  for (int f = 0; f < shape->feeders; f++) {
    snprintf(name, sizeof name, "leaf%d", f + 1);
    int feeder = fab_topo_add_node(t, name, TOPO_SWITCH, 1, -1, 0);
    fab_topo_add_link(t, feeder, top, rate, latency, NULL, 0);
    for (int k = 0; k < shape->to_port[f] + shape->elsewhere[f]; k++, n++) {
      snprintf(name, sizeof name, "gpu%d", gpus);
      fab_topo_add_link(t, fab_topo_add_node(t, name, TOPO_GPU, 0, gpus, 0), feeder, rate, latency, NULL, 0);
      src[n] = gpus++;
      dst[n] = 0;
      if (k >= shape->to_port[f]) {
        snprintf(name, sizeof name, "leaf%d.%d", f + 1, k);
        int other = fab_topo_add_node(t, name, TOPO_SWITCH, 1, -1, 0);
        fab_topo_add_link(t, other, top, rate, latency, NULL, 0);
        snprintf(name, sizeof name, "gpu%d", gpus);
        fab_topo_add_link(t, fab_topo_add_node(t, name, TOPO_GPU, 0, gpus, 0), other, rate, latency, NULL, 0);
        dst[n] = gpus++;
      }
    }
  }
  return measure_topo_done(t, switch_latency_s, err, errlen);
}

/* The packet model of run r on its platform r->t (which it takes), with the run's parameters;
 * *bytes: a transfer longer than the whole span could carry. NULL with a message in err. */
static struct roce_held_run *run_fabric(const struct fabric *fab, struct roce_held_run *r, double *bytes, char *err,
                                        size_t errlen)
{
  r->ps = r->t ? measure_params(fab, err, errlen) : NULL;
  /* the run's own model, RoCE's, taken from its fabric rather than from roce_model(): this file
   * stays below roce_model.c, which calls it */
  r->m = r->ps ? fabric_new(r->t, r->ps, fab->model, FAB_FIDELITY_PACKET, fab->seed, err, errlen) : NULL;
  if (r->m == NULL) {
    run_free(r);
    return NULL;
  }
  /* the ports' capacity, together, is what their utilisation is of */
  r->payload_Bps = fabric_port_payload_rate(r->m, r->t->ports[r->t->gpu_nic_port[0]].peer_port);
  *bytes = ceil(ROCE_HELD_SPAN_S * r->payload_Bps / r->m->mtu + 1) * r->m->mtu;
  return r;
}

/* The measuring fabric of a feeders shape: every transfer one flow, longer than the span, from
 * its start date; the port's transfers are the first senders, the others follow them. */
static struct roce_held_run *feeders_run_start(const struct fabric *fab, const struct roce_held_shape *shape, char *err,
                                               size_t errlen)
{
  struct roce_held_run *r = sgf_xcalloc(1, sizeof *r);
  int src[ROCE_HELD_FEEDERS * ROCE_HELD_FEEDER_FLOWS], dst[ROCE_HELD_FEEDERS * ROCE_HELD_FEEDER_FLOWS];
  double bytes;
  r->shape = *shape;
  r->t = feeders_topo(shape, fab->switch_latency_s, src, dst, err, errlen);
  if ((r = run_fabric(fab, r, &bytes, err, errlen)) == NULL)
    return NULL;
  struct fabric *m = r->m;
  for (int pass = 0; pass < 2; pass++) /* the port's transfers, then the others */
    for (int f = 0, n = 0; f < shape->feeders; f++)
      for (int k = 0; k < shape->to_port[f] + shape->elsewhere[f]; k++, n++) {
        if ((k < shape->to_port[f]) != (pass == 0))
          continue;
        struct measure_sender *sd = &r->sender[r->all++];
        *sd = (struct measure_sender){ .src = src[n], .dst = dst[n] };
        sd->flow = fabric_post(m, sd->src, sd->dst, bytes, shape->start_10us[f][k] * 10e-6, 0, NULL, NULL);
        if (pass == 0)
          r->flows++;
      }
  return r;
}

/* The measuring fabric of a shape, its senders posted; NULL with a message in err. */
static struct roce_held_run *run_start(const struct fabric *fab, const struct roce_held_shape *shape, char *err,
                                       size_t errlen)
{
  if (shape->feeders > 0)
    return feeders_run_start(fab, shape, err, errlen);
  struct roce_held_run *r = sgf_xcalloc(1, sizeof *r);
  int senders = shape->senders, ports = shape->ports;
  r->shape = *shape;
  r->flows = r->all = ports * senders;
  r->t = measure_topo(ports, senders, shape->depth, shape->load * shape->rate_Bps / senders, shape->rate_Bps,
                      shape->latency_s, fab->switch_latency_s, err, errlen);
  double bytes;
  if ((r = run_fabric(fab, r, &bytes, err, errlen)) == NULL)
    return NULL;
  struct fabric *m = r->m;
  /* Every sender sends its messages back to back into its receiver, or one flow, more than it
   * could send alone in the whole span, so that all of them still send when the measure stops. */
  for (int g = 0; g < ports; g++)
    for (int i = 1; i <= senders; i++) {
      struct measure_sender *s = &r->sender[g * senders + i - 1];
      *s = (struct measure_sender){ .src = g * (senders + 1) + i,
                                    .dst = g * (senders + 1),
                                    .message_B = shape->message_B };
      /* the senders' first messages are 1/n, 2/n, ... n/n of one, so that their restarts spread
       * over a message's time, as those of unrelated rings do, rather than coming in step */
      double first = fmax(1, round(shape->message_B * i / senders / m->mtu)) * m->mtu;
      s->flow = shape->message_B > 0 ? fabric_post(m, s->src, s->dst, first, 0, 0, measure_next_message, s)
                                     : fabric_post(m, s->src, s->dst, bytes, 0, 0, NULL, NULL);
    }
  return r;
}

/* Starts the packet model of s (from its start: a dropped model is run again from there);
 * -1 with a message in err if it cannot be set up. */
static int sim_start(const struct fabric *fab, struct roce_held_sim *s, char *err, size_t errlen)
{
  if ((s->run = run_start(fab, &s->shape, err, errlen)) == NULL)
    return -1;
  s->flows = s->run->flows;
  s->all = s->run->all;
  s->capacity_Bps = s->shape.ports * s->run->payload_Bps;
  s->mtu = s->run->m->mtu;
  return 0;
}

/* Runs the model of s on to boundary b (past s->reached), keeping the totals at every boundary
 * on the way; a model started again first runs to where the last one stopped (the same run: the
 * same totals). Returns the stretches run: 1, or 2 with that catch-up. */
static int sim_advance(struct roce_held_sim *s, int b)
{
  struct roce_held_run *r = s->run;
  int stretches = 1;
  if (r->at < s->reached) {
    struct measure_point again;
    measure_point_at(r->m, r->sender, r->flows, r->all, boundary_s(s->reached), &again);
    stretches++;
  }
  for (int i = s->reached + 1; i <= b; i++) {
    measure_point_at(r->m, r->sender, r->flows, r->all, boundary_s(i), &s->point[i]);
    if (s->stalled_from == ROCE_HELD_BOUNDARIES && fabric_stalled(r->m))
      s->stalled_from = i;
  }
  s->reached = r->at = b;
  return stretches;
}

/* Phase k of a shape from the totals of its run s (which must have reached its end); -1 with a
 * message in err if the port carried nothing in it or the packet model had stalled. */
static int sim_phase(const struct roce_held_sim *s, const struct roce_held_shape *shape, int k,
                     struct roce_held_phase *out, char *err, size_t errlen)
{
  int from = phase_first_boundary(shape, k), to = phase_last_boundary(shape, k);
  if (measure_phase(&s->point[from], &s->point[to], s->all, s->flows, s->capacity_Bps, s->mtu, out) == 0 &&
      s->stalled_from > to)
    return 0;
  snprintf(err, errlen, "the packet model did not carry %d flows through %d port(s)", s->flows, s->shape.ports);
  return -1;
}

/* A phase that keeps the port busy: nothing is left for the senders to gain, so the later phases
 * are that one again and are not run; only once it ends past the senders' start-up in step (the
 * first ROCE_HELD_START_S of the port's age), whose first milliseconds keep a port busy while
 * the queue climbs, before the senders fall into DCQCN's trapped state. */
static int phase_busy(const struct roce_held_shape *shape, int k, const struct roce_held_phase *phase)
{
  return phase->utilisation >= 0.99 && phase_end_s(shape, k) >= ROCE_HELD_START_S * (1 - 1e-9);
}

/* Phases k on are phase k - 1 again (after a busy phase, or one after which nothing could run). */
static void profile_repeat_from(const struct roce_held_shape *shape, struct roce_held_profile *p, int k)
{
  for (int j = k; j < shape_phases(shape); j++)
    p->phase[j] = p->phase[k - 1];
}

/* A shape's run as a measure keys it: its schedule left out. */
static void sim_init(struct roce_held_sim *s, const struct roce_held_shape *shape)
{
  memset(s, 0, sizeof *s);
  memcpy(&s->shape, shape, sizeof s->shape); /* padding too: the cache compares shapes bytewise */
  s->shape.fine = 0;
  s->stalled_from = ROCE_HELD_BOUNDARIES;
}

int roce_held_measure(const struct fabric *fab, const struct roce_held_shape *shape, struct roce_held_profile *out,
                      char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  struct roce_held_sim s;
  sim_init(&s, shape);
  int ok = sim_start(fab, &s, err, errlen) == 0;
  for (int k = 0; ok && k < shape_phases(shape); k++) {
    if (k > 0 && phase_busy(shape, k - 1, &out->phase[k - 1])) {
      profile_repeat_from(shape, out, k);
      break;
    }
    sim_advance(&s, phase_last_boundary(shape, k));
    ok = sim_phase(&s, shape, k, &out->phase[k], err, errlen) == 0;
  }
  run_free(s.run);
  return ok ? 0 : -1;
}

static void sim_drop_run(struct roce_held *h, struct roce_held_sim *s)
{
  if (s->run == NULL)
    return;
  run_free(s->run);
  s->run = NULL;
  h->live_runs--;
}

/* The run of this shape (either schedule), its packet model started if it is new; -1 with a
 * message in err if that cannot be set up. */
static int32_t sim_of(const struct fabric *fab, struct roce_held *h, const struct roce_held_shape *shape, char *err,
                      size_t errlen)
{
  struct roce_held_sim s;
  sim_init(&s, shape);
  for (size_t i = 0; i < h->n_sims; i++)
    if (!memcmp(&h->sim[i].shape, &s.shape, sizeof s.shape))
      return (int32_t)i;
  if (sim_start(fab, &s, err, errlen) != 0)
    return -1;
  h->measures++;
  h->live_runs++;
  if (h->n_sims == h->cap_sims) {
    h->cap_sims = h->cap_sims ? 2 * h->cap_sims : 16;
    h->sim = sgf_xrealloc(h->sim, h->cap_sims * sizeof *h->sim);
  }
  memcpy(&h->sim[h->n_sims], &s, sizeof s); /* padding too */
  return (int32_t)h->n_sims++;
}

/* Phase k of a shape from its run si, which is run on to the phase's end if no shape of it had
 * reached it (and started again first if its model was dropped); -1 with a message in err. */
static int held_sim_phase(const struct fabric *fab, struct roce_held *h, int32_t si,
                          const struct roce_held_shape *shape, int k, struct roce_held_phase *out, char *err,
                          size_t errlen)
{
  struct roce_held_sim *s = &h->sim[si];
  s->last_use = ++h->uses;
  int to = phase_last_boundary(shape, k);
  if (s->reached < to) {
    if (s->run == NULL) {
      if (sim_start(fab, s, err, errlen) != 0)
        return -1;
      h->live_runs++;
    }
    h->phases_run += (uint64_t)sim_advance(s, to);
  }
  return sim_phase(s, shape, k, out, err, errlen);
}

/* Once a phase keeps the port busy the later ones are that phase again; an entry with every
 * phase known no longer needs its run, whose packet model is dropped once no entry does. */
static void entry_settle(struct roce_held *h, size_t e)
{
  int k = h->entry[e].measured, phases = shape_phases(&h->entry[e].shape);
  struct roce_held_profile *p = &h->entry[e].profile;
  if (k > 0 && k < phases && phase_busy(&h->entry[e].shape, k - 1, &p->phase[k - 1])) {
    profile_repeat_from(&h->entry[e].shape, p, k);
    h->entry[e].measured = phases;
  }
  int32_t si = h->entry[e].sim;
  if (h->entry[e].measured == phases && si >= 0) {
    h->entry[e].sim = -1;
    if (--h->sim[si].open == 0)
      sim_drop_run(h, &h->sim[si]);
  }
}

/* At most max_runs runs keep their packet model (about 1.5 MB each, mostly its preallocated
 * flows and packets): past that, the one used least recently is dropped. */
static void runs_trim(struct roce_held *h)
{
  while (h->live_runs > h->max_runs) {
    size_t oldest = h->n_sims;
    for (size_t i = 0; i < h->n_sims; i++)
      if (h->sim[i].run != NULL && (oldest == h->n_sims || h->sim[i].last_use < h->sim[oldest].last_use))
        oldest = i;
    sim_drop_run(h, &h->sim[oldest]);
  }
}

/* The cache's entry for this port shape, its first phase measured on a miss (the later ones when a
 * held port reaches them: entry_phase); -1 if it cannot be measured (the port is then shared
 * max-min, as without this model, and the shape is not tried again). */
static int32_t entry_of(const struct fabric *fab, struct roce_held *h, const struct roce_held_shape *shape)
{
  for (size_t i = 0; i < h->n; i++)
    if (!memcmp(&h->entry[i].shape, shape, sizeof *shape))
      return h->entry[i].profile.phase[0].utilisation > 0 ? (int32_t)i : -1;
  struct roce_held_profile profile;
  memset(&profile, 0, sizeof profile);
  int measured = shape_phases(shape);
  int32_t alone = -1, si = -1;
  if (shape->ports > 1) {
    /* A port its senders keep busy alone is measured alone only: beside another it stays busy too
     * (400 Gb/s, nic preset, loads 1.25 and 2 at depths 0 and 1: 99.99% either way), and the
     * measure of two would cost twice for nothing. */
    struct roce_held_shape one = *shape;
    one.ports = 1;
    alone = entry_of(fab, h, &one);
  }
  char err[256] = "";
  if (alone >= 0 && phase_busy(shape, 0, &h->entry[alone].profile.phase[0])) {
    profile.phase[0] = h->entry[alone].profile.phase[0];
    profile_repeat_from(shape, &profile, 1);
  } else if ((si = sim_of(fab, h, shape, err, sizeof err)) < 0 ||
             held_sim_phase(fab, h, si, shape, 0, &profile.phase[0], err, sizeof err) != 0) {
    fprintf(stderr,
            "sgfabric: roce: a port DCQCN holds (%d senders) could not be measured on the packet model (%s): "
            "it is shared max-min, its marks not estimated\n",
            shape->senders, err);
    if (si >= 0 && h->sim[si].open == 0)
      sim_drop_run(h, &h->sim[si]);
    si = -1;
    profile.phase[0].utilisation = 0; /* remembered as not measurable */
  } else {
    measured = 1;
    h->sim[si].open++;
  }
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 16;
    h->entry = sgf_xrealloc(h->entry, h->cap * sizeof *h->entry);
  }
  memcpy(&h->entry[h->n].shape, shape, sizeof *shape); /* padding too: entries are compared bytewise */
  h->entry[h->n].profile = profile;
  h->entry[h->n].measured = measured;
  h->entry[h->n].sim = si;
  h->n++;
  entry_settle(h, h->n - 1);
  runs_trim(h);
  return profile.phase[0].utilisation > 0 ? (int32_t)h->n - 1 : -1;
}

/* Phase k of measure e, run up to it if no held port had reached it yet. A phase that cannot be
 * run keeps the figures of the one before it (the port stays held). */
static const struct roce_held_phase *entry_phase(const struct fabric *fab, struct roce_held *h, int32_t e, int k)
{
  struct roce_held_profile *p = &h->entry[e].profile;
  while (h->entry[e].measured <= k) {
    int next = h->entry[e].measured;
    char err[256] = "";
    if (held_sim_phase(fab, h, h->entry[e].sim, &h->entry[e].shape, next, &p->phase[next], err, sizeof err) != 0) {
      fprintf(stderr,
              "sgfabric: roce: a port DCQCN holds (%d senders) could not be measured past %g ms of its age on the "
              "packet model (%s): it keeps the figures of the phase before\n",
              h->entry[e].shape.senders, phase_end_s(&h->entry[e].shape, next - 1) * 1e3, err);
      profile_repeat_from(&h->entry[e].shape, p, next);
      h->entry[e].measured = shape_phases(&h->entry[e].shape);
    } else {
      h->entry[e].measured++;
    }
    entry_settle(h, (size_t)e);
  }
  runs_trim(h);
  return &p->phase[k];
}

const struct roce_held_phase *roce_held_shape_phase(const struct fabric *fab, struct roce_held *h,
                                                    const struct roce_held_shape *shape, int k)
{
  int32_t e = entry_of(fab, h, shape);
  return e < 0 ? NULL : entry_phase(fab, h, e, k);
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

/* How many egresses of port p's switch are held, p included, as the measure runs them side by
 * side: 1, or ROCE_HELD_MAX_PORTS when at least that many are. They share the switch's buffer,
 * whose dynamic PFC thresholds fall as it fills: two held ports of five senders each at
 * 100 Gb/s keep each busy 81% of their first 20 ms, one alone 85%. (Four side by side, 76%,
 * moved the 100 Gb/s iterations of docs/validation-iterations.md by at most 0.5% and cost twice
 * the CPU.) A port of this component counts if it is about to be held, one of another component
 * if it was at that component's last recomputation. */
static int held_ports_beside(const struct topo *t, const struct roce_held *h, int p)
{
  const struct topo_node *sw = &t->nodes[t->ports[p].node];
  int held = 0;
  for (int q = sw->first_port; q < sw->first_port + sw->port_count; q++)
    held += h->decided[q] ? h->candidate[q] : h->port_entry[q] >= 0;
  return held >= ROCE_HELD_MAX_PORTS ? ROCE_HELD_MAX_PORTS : 1;
}

static void hold(struct fabric *fab, struct roce_held *h, int p, int32_t e);

/* The message size a held port's shape is measured with: the geometric mean of the messages of
 * its flows that stand for several (pipelined ring edges), weighed by their bytes, to half an
 * octave and a whole number of MTUs (few shapes: to the octave, the 100 Gb/s iterations of
 * docs/validation-iterations.md were 0.4 points further off on average); 0 (one message each)
 * where none does, as a transfer is one message however long the port is held, or where a
 * sender would not finish one in the measure's span at its share of the port. Steps under
 * ROCE_HELD_MIN_MESSAGE_B are left out: the measure's sender posts a message when the one before
 * it has arrived, and with messages of a few packets it idles between them most of the time
 * (4 KB messages: two senders kept a port 41-57 % busy), where a ring's transfer carries its
 * small steps' latency itself (coll.c, later_steps). */
static double held_message(const struct fabric *fab, const struct roce_held *h, int p,
                           const struct roce_held_shape *shape)
{
  if (h->message_bytes[p] == 0)
    return 0;
  double log2_mean = h->message_log2[p] / h->message_bytes[p];
  double message = fmax(1, round(exp2(round(2 * log2_mean) / 2) / fab->mtu)) * fab->mtu;
  return message < ROCE_HELD_SPAN_S * shape->rate_Bps / shape->senders ? message : 0;
}

static void sort_starts(int16_t *a, int n)
{
  for (int i = 1; i < n; i++) {
    int16_t x = a[i];
    int j = i;
    for (; j > 0 && a[j - 1] > x; j--)
      a[j] = a[j - 1];
    a[j] = x;
  }
}

/* Feeder u of d before feeder v: more transfers to the port, then more others, then the first
 * earlier start date of the two (their dates sorted). */
static int feeder_before(const struct roce_held_shape *d, int u, int v)
{
  if (d->to_port[u] != d->to_port[v])
    return d->to_port[u] > d->to_port[v];
  if (d->elsewhere[u] != d->elsewhere[v])
    return d->elsewhere[u] > d->elsewhere[v];
  for (int k = 0; k < d->to_port[u] + d->elsewhere[u]; k++)
    if (d->start_10us[u][k] != d->start_10us[v][k])
      return d->start_10us[u][k] < d->start_10us[v][k];
  return 0;
}

/* roce/flow-held-measure:feeders: the switch egresses that feed held port p (each of its
 * transfers' hop before it), the transfers through each, toward p or elsewhere, and their start
 * dates, in the shape; left without feeders (a load shape) if they are more than a measure runs. */
static void feeders_of(const struct fabric *fab, int p, struct roce_held_shape *shape)
{
  int feeder[ROCE_HELD_FEEDERS], to_port[ROCE_HELD_FEEDERS] = { 0 }, elsewhere[ROCE_HELD_FEEDERS] = { 0 };
  double start[ROCE_HELD_FEEDERS][ROCE_HELD_FEEDER_FLOWS], first = INFINITY;
  int feeders = 0, count;
  struct fab_flow *const *on = fabric_port_flows(fab, p, &count);
  for (int i = 0; i < count; i++) {
    const struct fab_flow *f = on[i];
    int hop = 1;
    while (hop < f->hops && f->path[hop] != p)
      hop++;
    if (nic_flow(f) == NULL || hop == f->hops)
      continue;
    int u = 0;
    while (u < feeders && feeder[u] != f->path[hop - 1])
      u++;
    if (u == ROCE_HELD_FEEDERS || (u < feeders && to_port[u] == ROCE_HELD_FEEDER_FLOWS))
      return;
    if (u == feeders)
      feeder[feeders++] = f->path[hop - 1];
    start[u][to_port[u]++] = f->start_s;
    first = fmin(first, f->start_s);
  }
  /* the others through the feeders: from the first of the port's transfers, or then if earlier */
  for (int u = 0; u < feeders; u++) {
    struct fab_flow *const *through = fabric_port_flows(fab, feeder[u], &count);
    for (int i = 0; i < count; i++) {
      const struct fab_flow *f = through[i];
      int to_p = 0;
      for (int k = 0; k < f->hops; k++)
        to_p |= f->path[k] == p;
      if (to_p || nic_flow(f) == NULL)
        continue;
      if (to_port[u] + elsewhere[u] == ROCE_HELD_FEEDER_FLOWS)
        return;
      start[u][to_port[u] + elsewhere[u]++] = fmax(first, f->start_s);
    }
  }
  /* In an order of their own, not the flow lists' (which follow the run's history): within a
   * feeder its transfers to the port, then the others, each by start date; the feeders by that
   * description. The same port at another time then finds the same measure. */
  struct roce_held_shape d;
  memset(&d, 0, sizeof d);
  for (int u = 0; u < feeders; u++) {
    d.to_port[u] = (int8_t)to_port[u];
    d.elsewhere[u] = (int8_t)elsewhere[u];
    /* to 10 µs after the port's first transfer, at most 10 ms */
    for (int k = 0; k < to_port[u] + elsewhere[u]; k++)
      d.start_10us[u][k] = (int16_t)fmin(1000, round((start[u][k] - first) / 10e-6));
    sort_starts(d.start_10us[u], to_port[u]);
    sort_starts(d.start_10us[u] + to_port[u], elsewhere[u]);
  }
  int order[ROCE_HELD_FEEDERS];
  for (int u = 0; u < feeders; u++) {
    int j = u;
    for (; j > 0 && feeder_before(&d, u, order[j - 1]); j--)
      order[j] = order[j - 1];
    order[j] = u;
  }
  shape->feeders = feeders;
  for (int j = 0; j < feeders; j++) {
    shape->to_port[j] = d.to_port[order[j]];
    shape->elsewhere[j] = d.elsewhere[order[j]];
    memcpy(shape->start_10us[j], d.start_10us[order[j]], sizeof shape->start_10us[j]);
  }
}

/* Ports to be held that a flow crosses one after the other are chained: each one's senders are
 * also cut for the other and paused from it, so the start-up a measure of the port alone gives
 * (the senders at line rate, the port busy while the queue climbs) is not the port's own. */
static void mark_chained(struct roce_held *h, struct fab_flow **flows, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (nic_flow(flows[i]) == NULL)
      continue;
    int held_on_path = 0;
    for (int k = 1; k < flows[i]->hops; k++)
      held_on_path += h->candidate[flows[i]->path[k]];
    if (held_on_path >= 2)
      for (int k = 1; k < flows[i]->hops; k++)
        h->chained[flows[i]->path[k]] = 1;
  }
}

void roce_held_update(struct fabric *fab, struct roce_held *h, struct fab_flow **flows, size_t n,
                      enum roce_held_measure measure)
{
  const struct topo *t = fab->topo;
  /* The common case: a component no port of which oversubscribes (or was held). Without the
   * measure only the loads are wanted (the held-time estimate's). */
  if (!port_loads(fab, h, flows, n) || !measure)
    return;
  /* A port a FIFO pass marks is one PFC governs; the fewest switch egresses a flow crosses before
   * a port decide the measuring platform's depth. */
  for (size_t i = 0; i < n; i++) {
    const struct roce_flow *rf = nic_flow(flows[i]);
    if (rf == NULL)
      continue;
    const struct fab_flow *f = flows[i];
    for (int k = 1; k < f->hops; k++) {
      int p = f->path[k];
      if ((rf->fifo.marked_mask >> k) & 1)
        h->marked[p] = 1;
      if (k - 1 < h->depth[p])
        h->depth[p] = (uint8_t)(k - 1);
      if (f->message_B >= ROCE_HELD_MIN_MESSAGE_B && (f->message_B < f->bytes || f->ring_step)) {
        h->message_log2[p] += f->bytes * log2(f->message_B);
        h->message_bytes[p] += f->bytes;
      }
      h->ring_steps[p] |= f->ring_step;
    }
  }
  /* The component's ports, each once: those its flows oversubscribe, that no FIFO pass marks, at
   * a switch, are held (candidates until their measure is found). */
  size_t n_decided = 0, n_candidates = 0;
  for (size_t i = 0; i < n; i++) {
    if (nic_flow(flows[i]) == NULL)
      continue;
    for (int k = 1; k < flows[i]->hops; k++) {
      int p = flows[i]->path[k];
      if (h->decided[p])
        continue;
      const struct topo_port *tp = &t->ports[p];
      h->decided[p] = 1;
      h->decided_list[n_decided++] = p;
      h->candidate[p] = !tp->is_nvlink && !h->marked[p] && t->nodes[tp->node].kind == TOPO_SWITCH &&
                        h->last_load_Bps[p] > tp->rate_Bps * (1 + 1e-9);
      n_candidates += h->candidate[p];
    }
  }
  if (measure >= ROCE_HELD_MEASURE_FINE && n_candidates >= 2) /* a chain takes two */
    mark_chained(h, flows, n);
  for (size_t d = 0; d < n_decided; d++) {
    int p = h->decided_list[d];
    const struct topo_port *tp = &t->ports[p];
    int32_t e = -1;
    if (h->candidate[p]) {
      struct roce_held_shape shape;
      memset(&shape, 0, sizeof shape); /* padding too: the cache compares shapes bytewise */
      double load = h->last_load_Bps[p] / tp->rate_Bps;
      double step = load < 2 ? 0.25 : load < 4 ? 0.5 : 1; /* few shapes, finer where loads are small */
      shape.load = fmin(round(load / step) * step, ROCE_HELD_MAX_SENDERS);
      shape.senders = (int)fmax(2, round(shape.load));
      shape.depth = h->depth[p] > 0;
      shape.ports = held_ports_beside(t, h, p);
      shape.rate_Bps = tp->rate_Bps;
      shape.latency_s = tp->latency_s;
      shape.message_B = held_message(fab, h, p, &shape);
      /* Fine phases, validated on single transfers (docs/validation.md part 5) and on ring edges
       * standing for messages: a 4,096-GPU iteration at 100 Gb/s 2.8 % short of packet fidelity
       * with those in 20 ms phases, 0.3 % with them fine (docs/validation-iterations.md, "At
       * 1,024 GPUs and more"). */
      int fine = measure >= ROCE_HELD_MEASURE_FINE;
      /* a feeders measure sends one flow per transfer: ring edges keep their messages' measure */
      if (measure == ROCE_HELD_MEASURE_FEEDERS && shape.depth && shape.ports == 1 && shape.message_B == 0)
        feeders_of(fab, p, &shape);
      /* A chained port measured with its load has the coarse phases: their first one averages the
       * start-up over 20 ms (a feeders measure runs the egresses that chain it). */
      shape.fine = fine && (shape.feeders > 0 || !h->chained[p]);
      e = entry_of(fab, h, &shape);
    }
    hold(fab, h, p, e);
  }
  for (size_t d = 0; d < n_decided; d++) {
    int p = h->decided_list[d];
    h->decided[p] = h->candidate[p] = h->marked[p] = h->chained[p] = h->ring_steps[p] = 0;
    h->depth[p] = UINT8_MAX;
    h->message_log2[p] = 0;
    h->message_bytes[p] = 0;
  }
}

/* Which phase of its measure held port p is in: the first until ROCE_HELD_START_S after it became
 * held (ROCE_HELD_FINE_START_S with fine phases), each next one twice as long as the one before
 * (its age is taken to the timer's date, which the sum of the two dates may round just below). */
static int phase_of(const struct fabric *fab, const struct roce_held *h, int p)
{
  const struct roce_held_shape *shape = &h->entry[h->port_entry[p]].shape;
  double age = (fab->now - h->held_since_s[p]) * (1 + 1e-12);
  int k = 0;
  while (k + 1 < shape_phases(shape) && age >= phase_end_s(shape, k))
    k++;
  return k;
}

const struct roce_held_phase *roce_held_of(const struct fabric *fab, struct roce_held *h, int port)
{
  int32_t e = h->port_entry[port];
  return e < 0 ? NULL : entry_phase(fab, h, e, phase_of(fab, h, port));
}

/* Port p's capacity: the utilisation of its phase of its payload rate while held, else all of it
 * (from roce_held_update, before the filling, that filling takes it; from a timer or a flow's end
 * it recomputes the port's component when it changes). */
static void set_capacity(struct fabric *fab, struct roce_held *h, int p)
{
  const struct roce_held_phase *phase = roce_held_of(fab, h, p);
  double payload = fabric_port_payload_rate(fab, p);
  fabric_port_set_capacity(fab, p, phase != NULL ? phase->utilisation * payload : payload);
}

/* The end of held port p's current phase, or none after the last (ROCE_TIMER_HELD_AGE). */
static fab_timer_id arm_phase_end(struct fabric *fab, const struct roce_held *h, int p)
{
  int k = phase_of(fab, h, p);
  const struct roce_held_shape *shape = &h->entry[h->port_entry[p]].shape;
  return k + 1 < shape_phases(shape)
             ? fabric_timer_arm(fab, h->held_since_s[p] + phase_end_s(shape, k), ROCE_TIMER_HELD_AGE, NULL, (uint32_t)p)
             : 0;
}

/* Port p is held with measure e from now on (-1: not held): its age starts when it becomes held,
 * unless ring steps hold it again less than ROCE_HELD_GAP_S after its release, its timer goes
 * when it is released, its capacity follows. */
static void hold(struct fabric *fab, struct roce_held *h, int p, int32_t e)
{
  int was_held = h->port_entry[p] >= 0;
  h->port_entry[p] = e;
  if (e >= 0 && !was_held) {
    if (!(h->ring_steps[p] && fab->now - h->released_s[p] <= ROCE_HELD_GAP_S))
      h->held_since_s[p] = fab->now;
    h->age_timer[p] = arm_phase_end(fab, h, p);
  } else if (e < 0 && was_held) {
    fabric_timer_cancel(fab, h->age_timer[p]);
    h->age_timer[p] = 0;
    h->released_s[p] = fab->now;
  }
  set_capacity(fab, h, p);
  if (e >= 0)
    h->ever_held[p] = 1;
}

static int age_before(const struct roce_held_age *a, const struct roce_held_age *b)
{
  return a->start_s < b->start_s || (a->start_s == b->start_s && a->id < b->id);
}

static int cmp_age(const void *a, const void *b) { return age_before(a, b) ? -1 : age_before(b, a) ? 1 : 0; }

void roce_held_rank(const struct fabric *fab, struct roce_held *h, struct fab_flow *const *flows, size_t n)
{
  h->rank_pass++;
  h->rank_n = 0;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < flows[i]->hops; k++) {
      int p = flows[i]->path[k];
      if (h->port_entry[p] < 0 || h->ranked[p] == h->rank_pass)
        continue;
      h->ranked[p] = h->rank_pass;
      int count;
      struct fab_flow *const *on = fabric_port_flows(fab, p, &count);
      if (h->rank_n + (size_t)count > h->rank_cap) {
        h->rank_cap = 2 * (h->rank_n + (size_t)count);
        h->rank_buf = sgf_xrealloc(h->rank_buf, h->rank_cap * sizeof *h->rank_buf);
      }
      h->rank_off[p] = (uint32_t)h->rank_n;
      for (int j = 0; j < count; j++)
        if (nic_flow(on[j]) != NULL)
          h->rank_buf[h->rank_n++] = (struct roce_held_age){ on[j]->start_s, on[j]->id };
      h->rank_len[p] = (uint32_t)(h->rank_n - h->rank_off[p]);
      qsort(h->rank_buf + h->rank_off[p], h->rank_len[p], sizeof *h->rank_buf, cmp_age);
    }
}

/* The flows of the port that started before f (its rank by age, from 0). */
static size_t age_rank(const struct roce_held *h, int p, const struct fab_flow *f)
{
  const struct roce_held_age *a = h->rank_buf + h->rank_off[p], me = { f->start_s, f->id };
  size_t lo = 0, hi = h->rank_len[p];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (age_before(&a[mid], &me))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

double roce_held_flow_cap(const struct fabric *fab, struct roce_held *h, const struct fab_flow *f)
{
  double cap = 0;
  if (nic_flow(f) == NULL)
    return 0;
  for (int k = 0; k < f->hops; k++) {
    int p = f->path[k];
    if (h->port_entry[p] < 0 || h->ranked[p] != h->rank_pass || h->rank_len[p] < 2)
      continue;
    const struct roce_held_phase *ph = roce_held_of(fab, h, p);
    if (ph == NULL || ph->senders < 2)
      continue;
    /* the flow's place among the port's flows, oldest first, read off the measure's senders
     * (ascending) between the two nearest */
    size_t m = h->rank_len[p];
    double q = ((double)age_rank(h, p, f) + 0.5) / (double)m * ph->senders - 0.5;
    int lo = q < 0 ? 0 : q > ph->senders - 2 ? ph->senders - 2 : (int)q;
    double w = fmin(1, fmax(0, q - lo));
    /* at least a thousandth of the mean: a cap of 0 is none (a trapped sender sends a packet per
     * rate-timer period, a few thousandths of a 100 Gb/s port shared by two) */
    double share = fmax(1e-3, ph->share[lo] * (1 - w) + ph->share[lo + 1] * w);
    if (share >= 1)
      continue; /* at or above the mean: it shares the rest max-min */
    double c = share * ph->utilisation * fabric_port_payload_rate(fab, p) / (double)m;
    cap = cap > 0 ? fmin(cap, c) : c;
  }
  return cap;
}

void roce_held_flow_gone(struct fabric *fab, struct roce_held *h, const struct fab_flow *flow)
{
  for (int k = 1; k < flow->hops; k++)
    if (h->port_entry[flow->path[k]] >= 0 && fabric_port_flow_count(fab, flow->path[k]) == 0)
      hold(fab, h, flow->path[k], -1);
}

void roce_held_aged(struct fabric *fab, struct roce_held *h, int port)
{
  set_capacity(fab, h, port);
  h->age_timer[port] = arm_phase_end(fab, h, port);
}
