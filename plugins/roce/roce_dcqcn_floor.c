/* DCQCN's floor rate (roce_dcqcn_floor.h): one reaction point under continuous marking.
 *
 * A small event loop around the packet model's rate machine: the NIC sends a packet every
 * wire_B / RC (paced on the wire, as roce_model.c paces), feeds the byte counter, and the
 * notification point returns a CNP for it unless one went out less than cnp_interval_s before;
 * the CNP reaches the sender feedback_s later and cuts (roce_rp_cut); the alpha and
 * rate-increase timers run as roce_model.c runs them. */
#include "roce_dcqcn_floor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roce_internal.h"
#include "roce_rp.h"

/* CNPs in flight: their arrival dates, in order (the feedback delay is the same for all). */
struct cnp_queue {
  double *at;
  size_t head, n, cap;
};

static int cnp_push(struct cnp_queue *q, double when)
{
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 64;
    double *at = malloc(cap * sizeof *at);
    if (at == NULL)
      return -1;
    for (size_t i = 0; i < q->n; i++)
      at[i] = q->at[(q->head + i) % q->cap];
    free(q->at);
    q->at = at, q->head = 0, q->cap = cap;
  }
  q->at[(q->head + q->n++) % q->cap] = when;
  return 0;
}

static double cnp_first(const struct cnp_queue *q) { return q->n ? q->at[q->head] : INFINITY; }

static void cnp_pop(struct cnp_queue *q)
{
  q->head = (q->head + 1) % q->cap;
  q->n--;
}

/* The span simulated: long enough for every timer and counter of the machine to act many times
 * (the rate timer, the byte counter at line rate, the CNP interval, the feedback delay). */
static double span_of(const struct dcqcn_params *p, double line_Bps, double cnp_interval_s, double feedback_s)
{
  double longest = fmax(fmax(p->timer_s, p->byte_counter_B / line_Bps), fmax(p->alpha_interval_s, p->dec_interval_s));
  longest = fmax(longest, fmax(cnp_interval_s, feedback_s));
  return 40 * longest;
}

double roce_dcqcn_floor_fraction(const struct dcqcn_params *p, double line_Bps, double payload_B, double wire_B,
                                 double cnp_interval_s, double feedback_s)
{
  struct roce_flow rf;
  memset(&rf, 0, sizeof rf);
  struct dcqcn_stats stats = { 0 };
  dcqcn_init(p, &rf.cc, line_Bps);
  rf.last_cnp_s = -1;
  struct cnp_queue q = { 0 };
  double span = span_of(p, line_Bps, cnp_interval_s, feedback_s), measure_from = span / 2;
  /* Bound the work where the span holds too many packets (a very long timer at a high rate):
   * the machine is periodic long before that. */
  const double max_packets = 4e6;
  if (span * line_Bps / wire_B > max_packets)
    span = max_packets * wire_B / line_Bps, measure_from = span / 2;
  double now = 0, next_send = 0, last_send = -1, sent_B = 0;
  for (;;) {
    double cnp = cnp_first(&q);
    double alpha = rf.alpha_armed ? rf.alpha_due_s : INFINITY, rate = rf.rate_armed ? rf.rate_due_s : INFINITY;
    double when = fmin(fmin(next_send, cnp), fmin(alpha, rate));
    if (when >= span)
      break;
    now = when;
    int rate_changed = 0;
    if (cnp == when) {
      cnp_pop(&q);
      if (roce_rp_cut(p, &stats, &rf, now)) {
        rate_changed = 1;
        rf.alpha_armed = 1;
        rf.rate_armed = 1;
      }
    } else if (alpha == when) {
      roce_rp_alpha_expiry(p, &rf);
    } else if (rate == when) {
      rate_changed = roce_rp_rate_expiry(p, &stats, &rf);
    } else {
      if (now >= measure_from)
        sent_B += wire_B;
      if (dcqcn_on_bytes(p, &rf.cc, &stats, payload_B))
        rate_changed = 1;
      if (cnp_interval_s <= 0 || rf.last_cnp_s < 0 || now - rf.last_cnp_s >= cnp_interval_s) {
        rf.last_cnp_s = now;
        if (cnp_push(&q, now + feedback_s) != 0) {
          free(q.at);
          return 1; /* out of memory: no floor (DCQCN taken not to hold) */
        }
      }
      last_send = now;
      next_send = now + wire_B / rf.cc.rc_Bps;
    }
    if (rate_changed && last_send >= 0) /* the NIC re-paces the gap after its last packet */
      next_send = fmax(now, last_send + wire_B / rf.cc.rc_Bps);
  }
  free(q.at);
  return fmin(1, sent_B / (span - measure_from) / line_Bps);
}

double roce_dcqcn_floor_cached(struct roce_floor_cache *cache, const struct dcqcn_params *p, double line_Bps,
                               double payload_B, double wire_B, double cnp_interval_s, double feedback_s)
{
  for (int i = 0; i < cache->n; i++)
    if (cache->entry[i].line_Bps == line_Bps && cache->entry[i].feedback_s == feedback_s)
      return cache->entry[i].fraction;
  double fraction = roce_dcqcn_floor_fraction(p, line_Bps, payload_B, wire_B, cnp_interval_s, feedback_s);
  int slot = cache->n < 32 ? cache->n++ : 31; /* beyond 32 pairs the last slot is recycled */
  cache->entry[slot].line_Bps = line_Bps;
  cache->entry[slot].feedback_s = feedback_s;
  cache->entry[slot].fraction = fraction;
  return fraction;
}
