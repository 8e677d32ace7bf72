/* RoCEv2 at flow fidelity: go-back-N under random loss (roce_loss.h). */
#include "roce_loss.h"

#include <math.h>
#include <stdlib.h>

#include "roce_fifo.h"
#include "roce_internal.h"
#include "check.h"
#include "rng.h"

double roce_loss_path_probability(double p_link, int fabric_hops)
{
  if (p_link <= 0 || fabric_hops <= 0)
    return 0;
  return 1 - pow(1 - p_link, fabric_hops);
}

/* Under go-back-N (the RoCE NICs' recovery since Guo et al., SIGCOMM'16, section 3) each loss of
 * the expected packet costs it and the W packets sent before the NACK returns, so delivering a
 * packet takes 1 + P W / (1 - P) sends on average. */
double roce_loss_goodput_factor(double p_path, double window_pkts)
{
  if (p_path <= 0)
    return 1;
  return (1 - p_path) / (1 + p_path * window_pkts);
}

/* Each packet is once the one the receiver expects; its first send is lost with probability P
 * (a NACK recovers it), each later send lost again with P (the NACK went out already: the timer
 * recovers it), a geometric tail P^2 + P^3 + ... = P^2 / (1 - P). A message's last packet (and
 * its resends) lost with nothing behind it: P / (1 - P). The packet model gives 11.5 timeouts
 * (6 seeds) for one 32 MB transfer over 4 links at p = 1e-2, where this gives 12.4 (docs/roce.md,
 * "Loss at flow fidelity"; test roce_fabric gbn_timeouts_at_flow_fidelity checks 64 transfers). */
double roce_loss_expected_timeouts(double p_path, double packets, double messages)
{
  if (p_path <= 0)
    return 0;
  if (p_path >= 1)
    return INFINITY;
  return (packets * p_path * p_path + messages * p_path) / (1 - p_path);
}

double roce_loss_stall_bytes(double p_path, double packets, double messages, double message_B, double stall_B)
{
  if (p_path <= 0 || p_path >= 1 || message_B <= 0 || stall_B <= 0)
    return 0;
  double again = packets * p_path * p_path, tail = messages * p_path; /* both over (1 - P) */
  /* E[min(U M, L)], U uniform on (0, 1): M / 2 when the stall can send a whole message */
  double rest = stall_B >= message_B ? message_B / 2 : stall_B - stall_B * stall_B / (2 * message_B);
  return again / (again + tail) * rest;
}

/* Inversion, a chunk of mean at most 16 at a time (e^-16 is far from underflow, and the sum of
 * Poisson draws is Poisson of the summed means); above a mean of 10,000 the normal approximation
 * (Box-Muller), whose relative error there is below 1 %. */
double roce_loss_draw_timeouts(double mean, uint64_t stream)
{
  if (!(mean > 0))
    return 0;
  if (!isfinite(mean))
    return INFINITY;
  uint64_t state = stream;
  if (mean > 1e4) {
    double a = fab_rng_unit(fab_rng_splitmix(&state)), b = fab_rng_unit(fab_rng_splitmix(&state));
    double z = fab_rng_normal_of(a, b);
    return fmax(0, round(mean + sqrt(mean) * z));
  }
  double count = 0;
  for (double left = mean; left > 0; left -= 16) {
    double chunk = left < 16 ? left : 16;
    double u = fab_rng_unit(fab_rng_splitmix(&state));
    double term = exp(-chunk), cumulative = term;
    unsigned k = 0;
    while (u >= cumulative && k < 1000) {
      k++;
      term *= chunk / k;
      cumulative += term;
    }
    count += k;
  }
  return count;
}

int roce_loss_init(struct roce_loss *s, int n_ports, int n_nodes)
{
  s->queue_B = calloc((size_t)n_ports + 1, sizeof *s->queue_B);
  s->feeders = calloc((size_t)n_ports + 1, sizeof *s->feeders);
  s->sw_pgs = calloc((size_t)n_nodes + 1, sizeof *s->sw_pgs);
  s->sw_feeders = calloc((size_t)n_nodes + 1, sizeof *s->sw_feeders);
  return s->queue_B && s->feeders && s->sw_pgs && s->sw_feeders ? 0 : -1;
}

void roce_loss_fini(struct roce_loss *s)
{
  free(s->queue_B);
  free(s->feeders);
  free(s->sw_pgs);
  free(s->sw_feeders);
  free(s->pairs);
  free(s->touched);
}

static int cmp_pair(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void touch(struct roce_loss *s, int port)
{
  if (s->n_touched == s->touched_cap) {
    s->touched_cap = s->touched_cap ? 2 * s->touched_cap : 64;
    s->touched = sgf_xrealloc(s->touched, s->touched_cap * sizeof *s->touched);
  }
  s->touched[s->n_touched++] = port;
}

/* The standing queue of a PFC-governed egress fed by k links, of a switch whose PFC-governed
 * egresses `pgs` ingress links feed, k_sum their feeders summed (roce_loss.h). */
static double standing_queue(const struct roce_state *rs, int node, int k, int pgs, int k_sum)
{
  const struct roce_config *c = &rs->cfg;
  if (!c->pfc.enabled)
    return c->lossy_alpha * c->buffer_B / (1 + c->lossy_alpha);
  double free_B = c->buffer_B - rs->switches[node].headroom_total_B;
  double held = c->pfc.kind == PFC_STATIC ? fmin(pgs * c->pfc.xoff_B, free_B)
                                          : pgs * c->pfc.alpha * free_B / (1 + pgs * c->pfc.alpha);
  return held * k / k_sum;
}

/* Sorts pairs[0..n) and counts, for each high half, its distinct pairs into per_high. */
static void count_distinct(int64_t *pairs, size_t n, int32_t *per_high)
{
  qsort(pairs, n, sizeof *pairs, cmp_pair);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || pairs[i] != pairs[i - 1])
      per_high[pairs[i] >> 32]++;
}

/* Fills s->pairs with (egress, upstream link) for every marked switch-egress crossing of the
 * flows; returns their number. */
static size_t marked_pairs(const struct topo *t, struct roce_loss *s, struct fab_flow **flows, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const struct roce_flow *rf = flows[i]->model_data;
    if (rf == NULL || rf->line_port < 0 || rf->fifo.marked_mask == 0)
      continue;
    for (int h = 1; h < flows[i]->hops; h++) {
      int e = flows[i]->path[h];
      if (!((rf->fifo.marked_mask >> h) & 1) || t->nodes[t->ports[e].node].kind != TOPO_SWITCH)
        continue;
      if (k == s->pairs_cap) {
        s->pairs_cap = s->pairs_cap ? 2 * s->pairs_cap : 256;
        s->pairs = sgf_xrealloc(s->pairs, s->pairs_cap * sizeof *s->pairs);
      }
      s->pairs[k++] = (int64_t)e << 32 | (uint32_t)flows[i]->path[h - 1];
    }
  }
  return k;
}

void roce_loss_queues(struct fabric *fab, struct roce_loss *s, struct fab_flow **flows, size_t n)
{
  const struct topo *t = fab->topo;
  size_t n_pairs = marked_pairs(t, s, flows, n);
  if (n_pairs == 0)
    return;
  count_distinct(s->pairs, n_pairs, s->feeders); /* k per egress */
  for (size_t i = 0; i < n_pairs; i++) {
    int e = (int)(s->pairs[i] >> 32);
    if (i == 0 || e != (int)(s->pairs[i - 1] >> 32)) { /* each egress once (sorted) */
      touch(s, e);
      s->sw_feeders[t->ports[e].node] += s->feeders[e];
    }
  }
  for (size_t i = 0; i < n_pairs; i++) /* the same links by the switch they feed */
    s->pairs[i] = (int64_t)t->ports[s->pairs[i] >> 32].node << 32 | (uint32_t)s->pairs[i];
  count_distinct(s->pairs, n_pairs, s->sw_pgs); /* K per switch */
  const struct roce_state *rs = roce__state(fab);
  for (size_t i = 0; i < s->n_touched; i++) {
    int e = s->touched[i], node = t->ports[e].node;
    s->queue_B[e] = standing_queue(rs, node, s->feeders[e], s->sw_pgs[node], s->sw_feeders[node]);
  }
}

double roce_loss_window(const struct fabric *fab, const struct roce_loss *s, const struct fab_flow *f, double rate_Bps,
                        double rtt_s)
{
  const struct roce_flow *rf = f->model_data;
  double delay = rtt_s;
  for (int h = 1; rf != NULL && h < f->hops; h++)
    if ((rf->fifo.marked_mask >> h) & 1)
      delay += s->queue_B[f->path[h]] / fab->topo->ports[f->path[h]].rate_Bps;
  return ceil(rate_Bps * delay / fab->mtu) + 1;
}

void roce_loss_clear(const struct fabric *fab, struct roce_loss *s)
{
  for (size_t i = 0; i < s->n_touched; i++) {
    int e = s->touched[i], node = fab->topo->ports[e].node;
    s->queue_B[e] = 0;
    s->feeders[e] = 0;
    s->sw_pgs[node] = 0;
    s->sw_feeders[node] = 0;
  }
  s->n_touched = 0;
}
