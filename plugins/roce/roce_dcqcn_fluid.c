/* DCQCN at flow fidelity: a fluid model integrated only while a bottleneck is in transient.
 *
 * Queue: the CoNEXT'16 fluid queue (Zhu et al., "ECN or Delay", section 4),
 * dq/dt = sum_i a_i - C, with p from the port's RED curve, bounded by the queue at which PFC
 * pauses its ingress links (machine variant; pfc_bound below).
 * Reaction point, roce/fluid-rp:
 *  - machine (default): each flow runs the packet model's rate machine (dcqcn.c: cuts, fast
 *    recovery, additive/hyper increase, the firmware clamp of the nic preset) with its timers
 *    polled every step and its byte counter fed with the bytes it sends; the NP accumulates the
 *    expected marks p(t - tau*) x departure rate(t - tau*) / MTU and sends a CNP at each whole
 *    mark outside its CNP interval (roce/fluid-marks mean, the default), or draws the marks of
 *    the packets departing, each with probability p (random). The cuts are therefore discrete
 *    and of the packet model's size. The ODE below spreads a cut over tau (one CNP interval),
 *    so a line-rate start keeps the queue growing past Kmax, p = 1 then over-reduces the rates,
 *    and the queue settles empty at sum RC = C instead of q* (docs/roce.md);
 *  - ode: the CoNEXT'16 equations:
 *
 * Per flow i crossing bottlenecks in transient (rates in packets of one MTU per second, p the
 * marking probability of the RED curve at the queue, B in packets; a subscript d means "at
 * t - tau*", tau* = the path's round-trip latency):
 *     dq/dt     = sum_i a_i - C                    (a_i = min(RC_i, NIC share), q >= 0)
 *     dalpha/dt = g/tau' [(1 - (1 - p_d)^(tau' R_d)) - alpha]
 *     dRT/dt    = -(RT - RC) c + R_AI [(1 - p_d)^(F B) b + (1 - p_d)^(F T R_d) u]
 *     dRC/dt    = -RC alpha/2 c + (RT - RC)/2 (b + u)
 * with c = (1 - (1 - p_d)^(tau R_d))/tau the CNP rate (at most one per tau; c = p_d R_d when
 * tau = 0), b = R_d p_d/((1 - p_d)^(-B) - 1) the byte-counter and u = R_d p_d/((1 - p_d)^(-T R_d) - 1)
 * the timer expiry rate (1/B' and 1/T when p = 0). A flow crossing several ports in transient sees
 * p = 1 - prod(1 - p_port). Explicit Euler, fixed step roce/fluid-step.
 *
 * Both variants: a switch egress enters a transient when the flows crossing it change and their
 * arrival rates at line rate (the NIC's share) exceed its capacity; new flows start at line rate (no slow start),
 * the others at their current rate. Each step caps every fluid flow, through fabric_flow_set_cap,
 * at its FIFO service RC_i x C / sum a, the smallest over its ports where a queue stands or builds
 * (RC_i where none does). With the ode (machine: machine_settle), a transient ends when, over a
 * window of max(20 steps, 2 tau'), every
 * flow's RC moved by less than roce/fluid-settle and the queue by less than 5% + one MTU, and
 * either the port is at the fixed point (sum a within roce/fluid-settle of C) or it is empty
 * with every flow back at its NIC share (a slow recovery is integrated to its end): the
 * caps are removed (max-min is the fixed point, sum RC = C) and the queue is kept as the port's
 * standing queue q*; a flow that starts behind it gets q* / C added to its completion. */
#include "roce_dcqcn_fluid.h"

#include "roce_internal.h"
#include "roce_rp.h"
#include "check.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_fluid_port(const struct fabric *fab, int port)
{
  const struct topo *t = fab->topo;
  return !t->ports[port].is_nvlink && t->nodes[t->ports[port].node].kind == TOPO_SWITCH;
}

int roce_fluid_init(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  size_t n = (size_t)fab->topo->n_ports + 1;
  rs->fluid.arrival_Bps = calloc(n, sizeof(double));
  rs->fluid.nic_flows = calloc(n, sizeof(double));
  rs->fluid.slot = malloc(n * sizeof *rs->fluid.slot);
  rs->fluid.q_settled = calloc(n, sizeof(double));
  rs->fluid.sig_n = calloc(n, sizeof(uint32_t));
  rs->fluid.cur_n = calloc(n, sizeof(uint32_t));
  rs->fluid.sig_sum = calloc(n, sizeof(uint64_t));
  rs->fluid.cur_sum = calloc(n, sizeof(uint64_t));
  rs->fluid.ingress_seen = calloc(n, sizeof(uint32_t));
  if (!rs->fluid.arrival_Bps || !rs->fluid.nic_flows || !rs->fluid.slot || !rs->fluid.q_settled || !rs->fluid.sig_n ||
      !rs->fluid.cur_n || !rs->fluid.sig_sum || !rs->fluid.cur_sum || !rs->fluid.ingress_seen)
    return -1;
  for (size_t p = 0; p < n; p++)
    rs->fluid.slot[p] = -1;
  return 0;
}

void roce_fluid_fini(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  free(rs->fluid.arrival_Bps);
  free(rs->fluid.nic_flows);
  free(rs->fluid.slot);
  free(rs->fluid.q_settled);
  free(rs->fluid.sig_n);
  free(rs->fluid.cur_n);
  free(rs->fluid.sig_sum);
  free(rs->fluid.cur_sum);
  free(rs->fluid.ports);
  free(rs->fluid.flows);
  free(rs->fluid.gens);
  free(rs->fluid.ingress_seen);
}

double roce_fluid_queue(const struct fabric *fab, int port)
{
  const struct roce_state *rs = roce__state(fab);
  if (rs->fluid.slot == NULL)
    return 0;
  return rs->fluid.slot[port] >= 0 ? rs->fluid.ports[rs->fluid.slot[port]].q_B : rs->fluid.q_settled[port];
}

int roce_fluid_flows_changed(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  size_t n;
  fabric_active_flows(fab, &n);
  if (n == rs->fluid.last_n && rs->fluid.starts == rs->fluid.last_starts)
    return 0;
  rs->fluid.last_n = n;
  rs->fluid.last_starts = rs->fluid.starts;
  return 1;
}

static int live(const struct roce_state *rs, size_t k)
{
  const struct roce_flow *rf = rs->fluid.flows[k];
  return rf->gen == rs->fluid.gens[k] && rf->flow != NULL && rf->flow->state == FLOW_ACTIVE;
}

static void arm(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  if (rs->fluid.armed || rs->fluid.n_ports == 0)
    return;
  rs->fluid.armed = 1;
  fabric_timer_arm(fab, fab->now + rs->cfg.fluid_step_s, ROCE_TIMER_FLUID, NULL, 0);
}

static void port_enter(struct fabric *fab, int port)
{
  struct roce_state *rs = roce__state(fab);
  if (rs->fluid.n_ports == rs->fluid.cap_ports) {
    rs->fluid.cap_ports = rs->fluid.cap_ports ? 2 * rs->fluid.cap_ports : 16;
    rs->fluid.ports = sgf_xrealloc(rs->fluid.ports, rs->fluid.cap_ports * sizeof *rs->fluid.ports);
  }
  struct roce_fluid_port *fp = &rs->fluid.ports[rs->fluid.n_ports];
  memset(fp, 0, sizeof *fp);
  fp->port = port;
  fp->capacity_Bps = fab->topo->ports[port].rate_Bps;
  fp->q_B = rs->fluid.q_settled[port];
  fp->q_min = fp->q_max = fp->q_B;
  fp->enter_step = rs->fluid.step;
  fp->enter_s = fab->now;
  double p = ecn_red_probability(&rs->ports[port].ecn, fp->q_B);
  for (int k = 0; k < ROCE_FLUID_HIST; k++)
    fp->p_hist[k] = p;
  rs->fluid.slot[port] = (int32_t)rs->fluid.n_ports++;
  rs->fluid.stats.transients++;
}

static void port_leave(struct fabric *fab, size_t slot)
{
  struct roce_state *rs = roce__state(fab);
  struct roce_fluid_port *fp = &rs->fluid.ports[slot];
  rs->fluid.q_settled[fp->port] = fp->q_B > fab->mtu ? fp->q_B : 0;
  rs->fluid.slot[fp->port] = -1;
  rs->fluid.stats.settled++;
  rs->fluid.stats.transient_s += fab->now - fp->enter_s;
  rs->fluid.stats.last_settle_s = fab->now;
  if (slot + 1 < rs->fluid.n_ports) {
    *fp = rs->fluid.ports[rs->fluid.n_ports - 1];
    rs->fluid.slot[fp->port] = (int32_t)slot;
  }
  rs->fluid.n_ports--;
}

/* The machine variant's bound on a fluid queue: the queue at which PFC pauses the ingress links
 * feeding it. PFC keeps one threshold per ingress port and priority (IEEE 802.1Qbb), so the n
 * ingress ports its flows arrive on (count_ingress) each hold an equal part of it. Dynamic
 * thresholds: q/n = alpha (B' - q), so q = alpha n B' / (1 + alpha n), B' the buffer less its
 * headroom; static: n x XOFF; PFC off: the whole buffer (a lossy fabric drops the rest, which
 * the fluid model does not count). Counting one priority group per flow instead, as this model
 * did before, let an incast's queue stand at 26 MB where the packet model's peaks at 15 MB. */
static double pfc_bound(const struct fabric *fab, const struct roce_fluid_port *fp)
{
  const struct roce_state *rs = roce__state(fab);
  double free_B = rs->cfg.buffer_B - rs->switches[fab->topo->ports[fp->port].node].headroom_total_B;
  double n = fp->n_ingress > 0 ? fp->n_ingress : 1;
  if (!rs->cfg.pfc.enabled)
    return free_B;
  if (rs->cfg.pfc.kind == PFC_STATIC)
    return fmin(free_B, n * rs->cfg.pfc.xoff_B);
  return rs->cfg.pfc.alpha * n * free_B / (1 + rs->cfg.pfc.alpha * n);
}

static int crosses_transient(const struct roce_state *rs, const struct fab_flow *f)
{
  for (int h = 1; h < f->hops; h++)
    if (rs->fluid.slot[f->path[h]] >= 0)
      return 1;
  return 0;
}

/* A uniform draw in [0, 1) from a flow's own stream (seeded from the run's seed and the flow's
 * id on its first draw, so that the draws do not depend on the order the flows are stepped in). */
static double mark_uniform(const struct fabric *fab, struct roce_flow *rf)
{
  if (rf->fluid.mark_rng == 0) /* odd once seeded */
    rf->fluid.mark_rng = fab_rng_mix64(fab->seed ^ fab_rng_mix64((uint64_t)rf->flow->id + 0x6D61726BULL)) | 1;
  return fab_rng_unit(fab_rng_splitmix(&rf->fluid.mark_rng));
}

static void flow_enter(struct fabric *fab, struct roce_flow *rf)
{
  struct roce_state *rs = roce__state(fab);
  struct fab_flow *f = rf->flow;
  if (rf->fluid.seen) { /* at its max-min share, the DCQCN fixed point */
    double r = f->rate_Bps > 0 ? fab_flow_wire_rate(f) : rf->cc.line_Bps; /* what it sends */
    rf->cc.rc_Bps = r;
    rf->cc.rt_Bps = r;
  }
  for (int k = 0; k < ROCE_FLUID_HIST; k++)
    rf->fluid.rc_hist[k] = rf->cc.rc_Bps;
  rf->fluid.marks = 0;
  if (roce__state(fab)->cfg.fluid_random_marks)
    rf->fluid.marks = mark_uniform(fab, rf); /* where in a packet's time the flow starts */
  rf->fluid.win_bytes = 0;
  rf->fluid.prev_mean = -1;
  if (!dcqcn_is_at_line_rate(&rf->cc)) { /* below line rate: the increase timers run (roce_model.c rp_cnp) */
    rf->rate_armed = rf->alpha_armed = 1;
    rf->rate_due_s = fab->now + rs->cfg.dcqcn.timer_s;
    rf->alpha_due_s = fab->now + rs->cfg.dcqcn.alpha_interval_s;
  }
  double lag = 2 * fabric_path_tail_latency(fab, f, 0) / rs->cfg.fluid_step_s;
  rf->fluid.lag = (uint8_t)fmin(ROCE_FLUID_HIST - 1, floor(lag + 0.5));
  rf->fluid.rc_min = rf->fluid.rc_max = rf->cc.rc_Bps;
  rf->fluid.scale = 1;
}

/* The ingress ports each fluid port's flows arrive on: PFC keeps one threshold per ingress port
 * and priority, so these, not the flows, decide where it pauses (pfc_bound). A switch egress's
 * flows in the flow engine's list are its fluid flows (those of a NIC crossing a port in
 * transient); each ingress port is counted once per fluid port by a stamp. */
static void count_ingress(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  if (!rs->cfg.pfc.enabled || rs->cfg.fluid_ode)
    return; /* the bound is the whole buffer, or the ODE variant has none */
  for (size_t s = 0; s < rs->fluid.n_ports; s++) {
    struct roce_fluid_port *fp = &rs->fluid.ports[s];
    uint32_t stamp = ++rs->fluid.ingress_stamp;
    if (stamp == 0) { /* wrapped: older stamps could match */
      memset(rs->fluid.ingress_seen, 0, ((size_t)fab->topo->n_ports + 1) * sizeof *rs->fluid.ingress_seen);
      stamp = rs->fluid.ingress_stamp = 1;
    }
    fp->n_ingress = 0;
    int count;
    struct fab_flow *const *on = fabric_port_flows(fab, fp->port, &count);
    for (int k = 0; k < count; k++) {
      const struct fab_flow *f = on[k];
      const struct roce_flow *rf = f->model_data;
      if (rf == NULL || rf->line_port < 0)
        continue;
      for (int h = 1; h < f->hops; h++)
        if (f->path[h] == fp->port) {
          int ingress = f->path[h - 1];
          if (rs->fluid.ingress_seen[ingress] != stamp) {
            rs->fluid.ingress_seen[ingress] = stamp;
            fp->n_ingress++;
          }
          break;
        }
    }
  }
}

void roce_fluid_detect(struct fabric *fab, struct fab_flow **flows, size_t n)
{
  struct roce_state *rs = roce__state(fab);
  const struct topo *t = fab->topo;
  double *demand = rs->fluid.arrival_Bps; /* per port: arrival at line rate */
  double *nic_n = rs->fluid.nic_flows;    /* per NIC port: flows */
  for (size_t i = 0; i < n; i++)
    if (flows[i]->model_data && ((struct roce_flow *)flows[i]->model_data)->line_port >= 0)
      nic_n[flows[i]->path[0]] += 1;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    struct roce_flow *rf = f->model_data;
    if (rf == NULL || rf->line_port < 0)
      continue;
    rf->fluid.nic_share_Bps = t->ports[f->path[0]].rate_Bps / nic_n[f->path[0]];
    for (int h = 1; h < f->hops; h++) {
      int p = f->path[h];
      demand[p] += rf->fluid.nic_share_Bps;
      rs->fluid.cur_n[p]++;
      rs->fluid.cur_sum[p] += f->id * 0x9E3779B97F4A7C15ull + (uint64_t)(uintptr_t)rf;
    }
  }
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    struct roce_flow *rf = f->model_data;
    if (rf == NULL || rf->line_port < 0)
      continue;
    nic_n[f->path[0]] = 0;
    for (int h = 1; h < f->hops; h++) {
      int p = f->path[h];
      if (rs->fluid.cur_n[p] == 0)
        continue; /* already handled */
      if (is_fluid_port(fab, p) &&
          (rs->fluid.cur_n[p] != rs->fluid.sig_n[p] || rs->fluid.cur_sum[p] != rs->fluid.sig_sum[p])) {
        if (demand[p] > t->ports[p].rate_Bps * (1 + 1e-9)) {
          if (rs->fluid.slot[p] < 0)
            port_enter(fab, p);
        } else if (rs->fluid.slot[p] < 0) {
          rs->fluid.q_settled[p] = 0;
        }
      }
      rs->fluid.sig_n[p] = rs->fluid.cur_n[p];
      rs->fluid.sig_sum[p] = rs->fluid.cur_sum[p];
      rs->fluid.cur_n[p] = 0;
      rs->fluid.cur_sum[p] = 0;
      demand[p] = 0;
    }
  }
  /* The fluid flows: keep the state of those already in, start the others. */
  for (size_t k = 0; k < rs->fluid.n_flows; k++)
    if (live(rs, k))
      rs->fluid.flows[k]->fluid.in = 2; /* was in */
  rs->fluid.n_flows = 0;
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    struct roce_flow *rf = f->model_data;
    if (rf == NULL || rf->line_port < 0 || !crosses_transient(rs, f))
      continue;
    if (rs->fluid.n_flows == rs->fluid.cap_flows) {
      rs->fluid.cap_flows = rs->fluid.cap_flows ? 2 * rs->fluid.cap_flows : 64;
      rs->fluid.flows = sgf_xrealloc(rs->fluid.flows, rs->fluid.cap_flows * sizeof *rs->fluid.flows);
      rs->fluid.gens = sgf_xrealloc(rs->fluid.gens, rs->fluid.cap_flows * sizeof *rs->fluid.gens);
    }
    if (rf->fluid.in != 2)
      flow_enter(fab, rf);
    rf->fluid.in = 3; /* in */
    rs->fluid.gens[rs->fluid.n_flows] = rf->gen;
    rs->fluid.flows[rs->fluid.n_flows++] = rf;
  }
  for (size_t i = 0; i < n; i++) {
    struct fab_flow *f = flows[i];
    struct roce_flow *rf = f->model_data;
    if (rf == NULL || rf->line_port < 0)
      continue;
    if (rf->fluid.in == 2)
      rf->fluid.in = 0; /* left: roce_fluid_cap gives its base cap back */
    else if (rf->fluid.in == 3)
      rf->fluid.in = 1;
    if (!rf->fluid.seen) { /* a new flow waits behind the standing queues on its path */
      rf->fluid.seen = 1;
      double wait = 0;
      for (int h = 1; h < f->hops; h++)
        if (is_fluid_port(fab, f->path[h]))
          wait += roce_fluid_queue(fab, f->path[h]) / t->ports[f->path[h]].rate_Bps;
      f->extra_latency_s += wait; /* after any go-back-N timeouts (roce_flow.c) */
    }
  }
  count_ingress(fab);
  arm(fab);
}

double roce_fluid_cap(const struct fabric *fab, const struct fab_flow *flow, double base_cap)
{
  struct roce_flow *rf = flow->model_data;
  (void)fab;
  if (rf == NULL || rf->line_port < 0)
    return base_cap;
  rf->fluid.base_cap_Bps = base_cap;
  if (!rf->fluid.in)
    return base_cap;
  /* the reaction point sets what the flow sends, of which it delivers its goodput fraction */
  double cap = fmin(rf->cc.line_Bps, rf->cc.rc_Bps * rf->fluid.scale) * flow->goodput_fraction;
  return base_cap > 0 && base_cap < cap ? base_cap : cap;
}

/* p / ((1 - p)^-x - 1): the expiry rate of a counter of x packets, per packet sent (1/x at p = 0). */
static double counter_rate(double p, double lp, double x)
{
  if (p < 1e-12)
    return 1 / x;
  double d = expm1(-x * lp);
  return isfinite(d) && d > 0 ? p / d : 0;
}

/* A flow that moved over the settle window restarts the window of the ports in transient it
 * crosses; one not back at its NIC share keeps them from ending empty (at_line). */
static void mark_flow_ports(struct roce_state *rs, const struct roce_flow *rf, int still, int at_line, uint64_t k)
{
  for (int hop = 1; hop < rf->flow->hops; hop++) {
    int slot = rs->fluid.slot[rf->flow->path[hop]];
    if (slot < 0)
      continue;
    if (!still)
      rs->fluid.ports[slot].enter_step = k;
    if (!at_line)
      rs->fluid.ports[slot].at_line = 0;
  }
}

/* Flows that no longer cross a port in transient leave the fluid model and get their max-min
 * cap back. */
static void drop_settled_flows(struct fabric *fab, struct roce_state *rs)
{
  size_t kept = 0;
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    struct roce_flow *rf = rs->fluid.flows[j];
    if (!crosses_transient(rs, rf->flow)) {
      rf->fluid.in = 0;
      if (rf->flow->rate_cap_Bps != rf->fluid.base_cap_Bps)
        fabric_flow_set_cap(fab, rf->flow, rf->fluid.base_cap_Bps);
      continue;
    }
    rs->fluid.gens[kept] = rs->fluid.gens[j];
    rs->fluid.flows[kept++] = rf;
  }
  rs->fluid.n_flows = kept;
}

/* End of a settle window, machine variant. The machine's steady state is a sawtooth of cuts
 * and recoveries, so a window lasts at least max(20 steps, 2 tau', 2 T) and until every flow was
 * cut twice in it (at most 16 times that long): a stretch without cuts while marks accumulate
 * is not a steady state. A transient ends when every flow's mean rate over the window moved by
 * less than roce/fluid-settle from the previous window's and the port served at least
 * (1 - roce/fluid-settle) of its capacity (busy: max-min is the fixed point, sum RC = C), or the
 * queue is empty with every flow back at its NIC share. The window's mean queue stays as q*.
 * Returns 0 while the window goes on. */
static int machine_settle(struct fabric *fab, uint64_t window)
{
  struct roce_state *rs = roce__state(fab);
  const double tol = rs->cfg.fluid_settle;
  uint64_t k = rs->fluid.step;
  if (k - rs->fluid.window_start < 16 * window)
    for (size_t j = 0; j < rs->fluid.n_flows; j++)
      if (rs->fluid.flows[j]->fluid.cuts_win < 2 &&
          rs->fluid.flows[j]->cc.rc_Bps < rs->fluid.flows[j]->fluid.nic_share_Bps)
        return 0;
  const double span = (double)(k - rs->fluid.window_start) * rs->cfg.fluid_step_s;
  for (size_t s = 0; s < rs->fluid.n_ports; s++)
    rs->fluid.ports[s].at_line = 1;
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    struct roce_flow *rf = rs->fluid.flows[j];
    double mean = rf->fluid.win_bytes / span;
    int still = rf->fluid.prev_mean >= 0 && fabs(mean - rf->fluid.prev_mean) <= tol * fmax(mean, rf->fluid.prev_mean);
    int at_line = rf->cc.rc_Bps >= (1 - tol) * rf->fluid.nic_share_Bps;
    rf->fluid.prev_mean = mean;
    rf->fluid.win_bytes = 0;
    rf->fluid.cuts_win = 0;
    mark_flow_ports(rs, rf, still, at_line, k);
  }
  for (size_t s = 0; s < rs->fluid.n_ports;) {
    struct roce_fluid_port *fp = &rs->fluid.ports[s];
    /* busy at the fixed point: served nearly C, and as much arrived (the queue neither drains nor grows) */
    int busy = fp->win_served >= (1 - tol) * fp->capacity_Bps * span &&
               fabs(fp->win_arr - fp->win_served) <= tol * fp->win_served;
    if (fp->enter_step <= rs->fluid.window_start && (busy || (fp->at_line && fp->q_B < fab->mtu))) {
      fp->q_B = busy ? fp->win_q / span : fp->q_B;
      port_leave(fab, s);
      continue;
    }
    fp->win_served = fp->win_q = fp->win_arr = 0;
    s++;
  }
  rs->fluid.window_start = k;
  drop_settled_flows(fab, rs);
  return 1;
}

/* The reaction point of the machine variant: the packet model's rate machine (dcqcn.c) and its
 * timers (roce_model.c flow_event/rp_cnp), polled once per step instead of scheduled. */
static void machine_cnp(struct fabric *fab, struct roce_flow *rf)
{
  if (!roce_rp_cut(&roce__state(fab)->cfg.dcqcn, &roce__state(fab)->stats.dcqcn, rf, fab->now))
    return;
  rf->alpha_armed = rf->rate_armed = 1;
  rf->fluid.cuts_win++;
}

static void machine_timers(struct fabric *fab, struct roce_flow *rf)
{
  struct roce_state *rs = roce__state(fab);
  while (rf->alpha_armed && fab->now >= rf->alpha_due_s - 1e-15)
    roce_rp_alpha_expiry(&rs->cfg.dcqcn, rf);
  while (rf->rate_armed && fab->now >= rf->rate_due_s - 1e-15)
    roce_rp_rate_expiry(&rs->cfg.dcqcn, &rs->stats.dcqcn, rf);
}

/* Random marks (roce/fluid-marks random): RED marks each packet independently with the
 * probability p of its queue, so the NP sees a mark among the n whole packets that departed in a
 * step with probability 1 - (1 - p)^n. Between packets the accumulator holds the fraction of a
 * packet departed (its start drawn), so a flow sending slowly waits for its next packet as at
 * packet fidelity, and the flows of one bottleneck get their CNPs at dates of their own. Returns
 * the CNPs the step brings (at most one when the NP keeps a CNP interval). */
static int random_marks(const struct fabric *fab, struct roce_flow *rf, double p, double pkts, int in_interval, int one)
{
  double departed = rf->fluid.marks + pkts, whole = floor(departed);
  rf->fluid.marks = departed - whole;
  if (in_interval || whole < 1 || p <= 0)
    return 0;
  if (one)
    return mark_uniform(fab, rf) < -expm1(whole * log1p(-fmin(p, 1))) ? 1 : 0;
  int cnps = 0; /* a CNP per marked packet */
  for (double k = 0; k < whole; k++)
    cnps += mark_uniform(fab, rf) < p;
  return cnps;
}

/* Mean marks (roce/fluid-marks mean): the NP accumulates the expected marks of the step, p x
 * packets, and sends a CNP each time one whole mark has accumulated outside its CNP interval, at
 * the mean date of the first mark; the flows of one bottleneck are cut together and stay in step. */
static int mean_marks(struct roce_flow *rf, double p, double expected, int in_interval, int one)
{
  if (in_interval)
    return 0;
  /* When a CNP interval ends, the next marked packet is on average (1/p - 1/2) packets away
   * (half a packet to the next one, then geometric): in marks, 1 - p/2 to go. */
  if (rf->fluid.marks < 0)
    rf->fluid.marks = p / 2;
  rf->fluid.marks += expected;
  int cnps = 0;
  while (rf->fluid.marks >= 1) {
    rf->fluid.marks -= 1;
    cnps++;
    if (one) {
      rf->fluid.marks = -1; /* marks within the interval are ignored */
      break;
    }
  }
  return cnps;
}

/* One step of a flow under the machine variant: the NP's CNPs from the marks of the packets
 * departing at t - tau* (rate dep_lag, marking probability p(t - tau*): the feedback delay is one
 * round trip), each a cut of the packet model's size, marks inside the NP's CNP interval ignored
 * as at the NP of the packet model. */
static void machine_step(struct fabric *fab, struct roce_flow *rf, double p_lag, double dep_lag, double sent_B)
{
  struct roce_state *rs = roce__state(fab);
  const double h = rs->cfg.fluid_step_s, interval = rs->cfg.cnp_interval_s;
  if (sent_B > 0)
    dcqcn_on_bytes(&rs->cfg.dcqcn, &rf->cc, &rs->stats.dcqcn, sent_B);
  machine_timers(fab, rf);
  int in_interval = interval > 0 && rf->last_cnp_s >= 0 && fab->now - rf->last_cnp_s < interval - 1e-15;
  int cnps = rs->cfg.fluid_random_marks
                 ? random_marks(fab, rf, p_lag, h * dep_lag / fab->mtu, in_interval, interval > 0)
                 : mean_marks(rf, p_lag, h * p_lag * dep_lag / fab->mtu, in_interval, interval > 0);
  for (int c = 0; c < cnps; c++) {
    rf->last_cnp_s = fab->now;
    rs->fluid.stats.cnps_est += 1;
    machine_cnp(fab, rf);
  }
}

/* A fluid flow's sending rate: RC, within its NIC share and its cap without the fluid model. */
static double send_rate(const struct roce_flow *rf)
{
  double a = fmin(rf->cc.rc_Bps, rf->fluid.nic_share_Bps);
  return rf->fluid.base_cap_Bps > 0 ? fmin(a, rf->fluid.base_cap_Bps) : a;
}

/* End of a settle window, ode variant (see the top of this file): a port leaves when its flows'
 * RC and its queue held still over the window and it is at the fixed point or empty with every
 * flow back at its NIC share. */
static void ode_settle(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  const double tol = rs->cfg.fluid_settle, mtu = fab->mtu;
  uint64_t k = rs->fluid.step;
  for (size_t s = 0; s < rs->fluid.n_ports; s++) /* busy at the fixed point (sum a = C)? */
    rs->fluid.ports[s].at_line =
        fabs(rs->fluid.ports[s].arrival_Bps - rs->fluid.ports[s].capacity_Bps) > tol * rs->fluid.ports[s].capacity_Bps;
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    struct roce_flow *rf = rs->fluid.flows[j];
    mark_flow_ports(rs, rf, rf->fluid.rc_max - rf->fluid.rc_min <= tol * rf->fluid.rc_max,
                    rf->cc.rc_Bps >= (1 - tol) * rf->fluid.nic_share_Bps, k);
  }
  for (size_t s = 0; s < rs->fluid.n_ports;) {
    struct roce_fluid_port *fp = &rs->fluid.ports[s];
    int busy = fabs(fp->arrival_Bps - fp->capacity_Bps) <= tol * fp->capacity_Bps;
    if (fp->enter_step <= rs->fluid.window_start && fp->q_max - fp->q_min <= 0.05 * fp->q_max + mtu &&
        (busy || (fp->at_line && fp->q_B < mtu))) {
      port_leave(fab, s);
      continue;
    }
    fp->q_min = fp->q_max = fp->q_B;
    s++;
  }
  rs->fluid.window_start = k;
  for (size_t j = 0; j < rs->fluid.n_flows; j++)
    rs->fluid.flows[j]->fluid.rc_min = rs->fluid.flows[j]->fluid.rc_max = rs->fluid.flows[j]->cc.rc_Bps;
  drop_settled_flows(fab, rs);
}

void roce_fluid_step(struct fabric *fab)
{
  struct roce_state *rs = roce__state(fab);
  const struct dcqcn_params *dp = &rs->cfg.dcqcn;
  const double h = rs->cfg.fluid_step_s, mtu = fab->mtu;
  rs->fluid.armed = 0;
  rs->fluid.step++;
  rs->fluid.stats.steps++;
  uint64_t k = rs->fluid.step;
  /* Arrival rates and queues. */
  for (size_t s = 0; s < rs->fluid.n_ports; s++) {
    rs->fluid.ports[s].arrival_Bps = 0;
  }
  size_t live_n = 0;
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    if (!live(rs, j))
      continue;
    struct roce_flow *rf = rs->fluid.flows[j];
    rs->fluid.flows[live_n] = rf;
    rs->fluid.gens[live_n++] = rs->fluid.gens[j];
    double a = send_rate(rf);
    const struct fab_flow *f = rf->flow;
    for (int hop = 1; hop < f->hops; hop++)
      if (rs->fluid.slot[f->path[hop]] >= 0)
        rs->fluid.ports[rs->fluid.slot[f->path[hop]]].arrival_Bps += a;
  }
  rs->fluid.n_flows = live_n;
  for (size_t s = 0; s < rs->fluid.n_ports; s++) {
    struct roce_fluid_port *fp = &rs->fluid.ports[s];
    double pm = ecn_red_probability(&rs->ports[fp->port].ecn, fp->q_B);
    rs->fluid.stats.marks_est += h * pm * fp->arrival_Bps / mtu;
    fp->win_served += h * (fp->q_B > 0 ? fp->capacity_Bps : fmin(fp->arrival_Bps, fp->capacity_Bps));
    fp->q_B = fmax(0, fp->q_B + h * (fp->arrival_Bps - fp->capacity_Bps));
    double bound = pfc_bound(fab, fp);
    fp->held = !rs->cfg.fluid_ode && fp->q_B >= bound && fp->arrival_Bps > fp->capacity_Bps;
    if (fp->held)
      fp->q_B = bound;
    fp->win_arr += h * (fp->held ? fp->capacity_Bps : fp->arrival_Bps);
    fp->win_q += h * fp->q_B;
    fp->p_hist[k % ROCE_FLUID_HIST] = ecn_red_probability(&rs->ports[fp->port].ecn, fp->q_B);
    if (fp->q_B > rs->fluid.stats.peak_queue_B)
      rs->fluid.stats.peak_queue_B = fp->q_B;
    fp->q_min = fmin(fp->q_min, fp->q_B);
    fp->q_max = fmax(fp->q_max, fp->q_B);
    if (fp->port == rs->cfg.trace_port)
      roce__series_add(&rs->port_series, fab->now, fp->q_B, fp->held, 0, rs->cfg.trace_interval_s);
  }
  /* DCQCN of each flow. */
  double tau = fmax(rs->cfg.cnp_interval_s, dp->dec_interval_s), b_pkts = dp->byte_counter_B / mtu;
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    struct roce_flow *rf = rs->fluid.flows[j];
    const struct fab_flow *f = rf->flow;
    uint64_t lagged = (k + ROCE_FLUID_HIST - rf->fluid.lag) % ROCE_FLUID_HIST;
    double keep = 1, scale = INFINITY;
    for (int hop = 1; hop < f->hops; hop++) {
      int slot = rs->fluid.slot[f->path[hop]];
      if (slot < 0)
        continue;
      const struct roce_fluid_port *fp = &rs->fluid.ports[slot];
      keep *= 1 - fp->p_hist[lagged];
      /* FIFO service where a queue stands or builds: C x a_i / sum a, which exceeds a_i while the
       * queue drains. A port without a queue passes the flow as it comes and sets no scale: taken
       * as 1, it held a flow to its sending rate while the queue past it drained, so that the
       * other flows of that queue took the whole drain. */
      if (fp->q_B > 0 || fp->arrival_Bps > fp->capacity_Bps)
        scale = fmin(scale, fp->capacity_Bps / fmax(fp->arrival_Bps, 1));
    }
    rf->fluid.scale = isfinite(scale) ? scale : 1;
    if (!rs->cfg.fluid_ode) {
      double a = send_rate(rf);
      double dep_lag = rf->fluid.rc_hist[lagged], held = 1;
      for (int hop = 1; hop < f->hops; hop++) {
        int slot = rs->fluid.slot[f->path[hop]];
        if (slot >= 0 && rs->fluid.ports[slot].held)
          held = fmin(held, rs->fluid.ports[slot].capacity_Bps / rs->fluid.ports[slot].arrival_Bps);
      }
      rf->fluid.rc_hist[k % ROCE_FLUID_HIST] = a * rf->fluid.scale;
      rf->fluid.win_bytes += h * a; /* sending rate: the departures are C/N while a queue stands */
      machine_step(fab, rf, 1 - keep, dep_lag, h * a * held); /* paused senders send (and count) less */
      roce__trace_flow(fab, rf);
      continue;
    }
    double p = fmin(1 - keep, 1 - 1e-12), lp = log1p(-p);
    double r = rf->fluid.rc_hist[lagged] / mtu; /* packets/s at t - tau* */
    double cnp = tau > 0 ? -expm1(tau * r * lp) / tau : p * r;
    double bytes_rate = r * counter_rate(p, lp, b_pkts);
    double timer_rate = r * counter_rate(p, lp, dp->timer_s * r);
    double rc = rf->cc.rc_Bps, rt = rf->cc.rt_Bps, alpha = rf->cc.alpha;
    double d_alpha = dp->g / dp->alpha_interval_s * (-expm1(dp->alpha_interval_s * r * lp) - alpha);
    double d_rt = -(rt - rc) * cnp + dp->rai_Bps * (exp(dp->fast_recovery * b_pkts * lp) * bytes_rate +
                                                    exp(dp->fast_recovery * dp->timer_s * r * lp) * timer_rate);
    double d_rc = -rc * alpha / 2 * cnp + (rt - rc) / 2 * (bytes_rate + timer_rate);
    rf->cc.alpha = fmin(1, fmax(0, alpha + h * d_alpha));
    rf->cc.rt_Bps = fmin(rf->cc.line_Bps, fmax(dp->min_rate_Bps, rt + h * d_rt));
    rf->cc.rc_Bps = fmin(rf->cc.line_Bps, fmax(dp->min_rate_Bps, rc + h * d_rc));
    rf->fluid.rc_hist[k % ROCE_FLUID_HIST] = rf->cc.rc_Bps;
    rf->fluid.rc_min = fmin(rf->fluid.rc_min, rf->cc.rc_Bps);
    rf->fluid.rc_max = fmax(rf->fluid.rc_max, rf->cc.rc_Bps);
    rs->fluid.stats.cnps_est += h * cnp;
    roce__trace_flow(fab, rf);
  }
  /* Settle: at the end of each window, ports whose flows and queue held still for all of it. */
  uint64_t window = (uint64_t)fmax(20, ceil(2 * dp->alpha_interval_s / h));
  if (!rs->cfg.fluid_ode)
    window = (uint64_t)fmax(window, ceil(2 * dp->timer_s / h));
  if (k - rs->fluid.window_start >= window) {
    if (rs->cfg.fluid_ode)
      ode_settle(fab);
    else
      machine_settle(fab, window);
  }
  /* Caps: the FIFO service of each flow. */
  for (size_t j = 0; j < rs->fluid.n_flows; j++) {
    struct roce_flow *rf = rs->fluid.flows[j];
    double cap = roce_fluid_cap(fab, rf->flow, rf->fluid.base_cap_Bps);
    double old = rf->flow->rate_cap_Bps;
    if (fabs(cap - old) > 1e-4 * cap)
      fabric_flow_set_cap(fab, rf->flow, cap);
  }
  arm(fab);
}
