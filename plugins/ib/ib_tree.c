/* InfiniBand at flow fidelity: the growth of congestion trees (ib_tree.h).
 *
 * Credit-based flow control lets a blocked flow's packets advance as long as the next input
 * buffer has room (IBTA Vol. 1, 7.9), so the buffers before its bottleneck fill in turn, the
 * nearest first: the tree grows back toward the source at the rate the sources send beyond what
 * the bottleneck lets through, and reaches a buffer only once those before it are full. At the
 * buffer k levels up from the bottleneck it arrives after
 *
 *   t_k = t_(k-1) + B / E_k,    t_0 = the date the flow is first found blocked,
 *
 * B the buffer of one VL (ib/buffer-per-vl) and E_k the excess of every blocked flow filling it:
 * each one's share of its NIC (max-min weights) less the rate its bottleneck gives it. A
 * transfer spread over P paths fills P buffers per level with 1/P of its excess each, so its tree
 * takes P times as long to climb: on a 3-tier tree a 4 MB transfer spread over 16 paths ends
 * before its tree reaches the aggregation switches' up-links (docs/ib.md, "Congestion trees
 * grow"). Once grown the tree is that of the congestion-tree pass (ib_flow.c). A tree lasts
 * while passes find flows blocked at its buffer; the date it reaches a buffer is set when it
 * appears there, from the excess found then. */
#include "ib_tree.h"

#include <math.h>
#include <stdlib.h>

#include "ib_internal.h"
#include "check.h"

int ib_tree_init(struct ib_tree *tg, int n_ports, int num_vls, double buffer_B)
{
  size_t buffers = ((size_t)n_ports + 1) * (size_t)num_vls;
  tg->num_vls = num_vls;
  tg->buffer_B = buffer_B;
  tg->reach_s = calloc(buffers, sizeof *tg->reach_s); /* 0: a buffer no tree was seen at counts as reached */
  tg->ended_s = malloc(buffers * sizeof *tg->ended_s);
  tg->armed_s = malloc(buffers * sizeof *tg->armed_s);
  tg->witness = calloc(buffers, sizeof *tg->witness);
  tg->active = calloc(buffers, sizeof *tg->active);
  tg->excess_Bps = calloc(buffers, sizeof *tg->excess_Bps);
  tg->fresh = calloc(buffers, sizeof *tg->fresh);
  tg->nic_weight = calloc((size_t)n_ports + 1, sizeof *tg->nic_weight);
  if (!tg->reach_s || !tg->ended_s || !tg->armed_s || !tg->witness || !tg->active || !tg->excess_Bps || !tg->fresh ||
      !tg->nic_weight)
    return -1;
  for (size_t b = 0; b < buffers; b++)
    tg->ended_s[b] = tg->armed_s[b] = -1;
  return 0;
}

void ib_tree_fini(struct ib_tree *tg)
{
  free(tg->reach_s);
  free(tg->ended_s);
  free(tg->armed_s);
  free(tg->witness);
  free(tg->active);
  free(tg->excess_Bps);
  free(tg->fresh);
  free(tg->nic_weight);
  free(tg->flow_excess);
}

static uint64_t buffer_of(const struct ib_tree *tg, const struct fab_flow *f, int h)
{
  return ib__buffer(f->path[h], tg->num_vls, f->queue);
}

static void end_tree(struct ib_tree *tg, uint64_t b, double now)
{
  if (tg->active[b]) {
    tg->active[b] = 0;
    tg->n_active--;
    tg->ended_s[b] = now;
  }
}

/* What each flow's source sends beyond the rate max-min gave it: its NIC's line rate shared by
 * max-min weight among the component's flows leaving that NIC (within its credit window). */
static void flow_excesses(const struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n)
{
  tg->flow_excess = ib__scratch_reserve(tg->flow_excess, &tg->cap_flow_excess, n, sizeof *tg->flow_excess);
  for (size_t i = 0; i < n; i++)
    tg->nic_weight[flows[i]->path[0]] += flows[i]->share_weight;
  for (size_t i = 0; i < n; i++) {
    const struct fab_flow *f = flows[i];
    double offered = fabric_port_payload_rate(fab, f->path[0]) * f->share_weight / tg->nic_weight[f->path[0]];
    if (f->standing_cap_Bps > 0 && f->standing_cap_Bps < offered)
      offered = f->standing_cap_Bps;
    tg->flow_excess[i] = fmax(0, offered - f->rate_Bps);
  }
  for (size_t i = 0; i < n; i++)
    tg->nic_weight[flows[i]->path[0]] = 0;
}

/* The dates the new trees (fresh buffers) reach their buffers, from the excess of the blocked
 * flows filling each, level by level back from each blocked flow's bottleneck; a buffer filled by
 * several flows takes the earliest. */
static void fill_new_trees(const struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n,
                           const int32_t *held, const struct crossing *c, size_t m)
{
  const double now = fab->now;
  flow_excesses(fab, tg, flows, n);
  for (size_t k = 0; k < m; k++)
    if (c[k].blocked && tg->fresh[c[k].buffer])
      tg->excess_Bps[c[k].buffer] += tg->flow_excess[c[k].flow];
  for (size_t i = 0; i < n; i++) {
    double level_s = now; /* the date the level below is full */
    for (int h = held[i] - 1; h >= 0; h--) {
      uint64_t b = buffer_of(tg, flows[i], h);
      if (!tg->fresh[b]) {
        level_s = fmax(now, tg->reach_s[b]);
        continue;
      }
      level_s += tg->excess_Bps[b] > 0 ? tg->buffer_B / tg->excess_Bps[b] : INFINITY;
      if (level_s < tg->reach_s[b])
        tg->reach_s[b] = level_s;
    }
  }
}

/* Whether a unit of buffer c[lo].buffer (crossings lo..hi, sorted by unit) has blocked flows
 * waiting there for two outputs or more: one pace per upstream queue (ib__unit_pace) caps them
 * once the tree has filled the buffer. */
static int unit_waits_for_two(const struct ib_tree *tg, struct fab_flow *const *flows, const int32_t *held,
                              const struct crossing *c, size_t lo, size_t hi)
{
  for (size_t k = lo, end; k < hi; k = end) {
    for (end = k; end < hi && c[end].unit == c[k].unit; end++)
      ;
    if (isfinite(ib__unit_pace(flows, held, c, k, end, tg->num_vls)))
      return 1;
  }
  return 0;
}

void ib_tree_grow(struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n, const int32_t *held,
                  const struct crossing *c, size_t m, int unit_pace)
{
  const double now = fab->now;
  /* Each buffer of the pass: a tree goes on (the last pass covering it found one, or found it
   * gone at this same date, and a flow blocked then still crosses it), starts, or is gone. */
  int any_fresh = 0;
  for (size_t lo = 0, hi; lo < m; lo = hi) {
    uint64_t b = c[lo].buffer;
    int blocked = 0, witness_here = 0;
    for (hi = lo; hi < m && c[hi].buffer == b; hi++) {
      blocked |= c[hi].blocked != 0;
      witness_here |= flows[c[hi].flow]->id + 1 == tg->witness[b];
    }
    if (!blocked) {
      end_tree(tg, b, now);
      continue;
    }
    int goes_on = (tg->active[b] || tg->ended_s[b] == now) && witness_here && isfinite(tg->reach_s[b]);
    if (!goes_on) {
      tg->fresh[b] = 1;
      tg->reach_s[b] = INFINITY;
      any_fresh = 1;
    }
  }
  /* Only a new tree needs its dates: most passes find the trees they found before. */
  if (any_fresh)
    fill_new_trees(fab, tg, flows, n, held, c, m);
  for (size_t lo = 0, hi; lo < m; lo = hi) {
    uint64_t b = c[lo].buffer;
    uint64_t first_blocked = 0;
    int victims = 0;
    for (hi = lo; hi < m && c[hi].buffer == b; hi++) {
      if (c[hi].blocked && first_blocked == 0)
        first_blocked = flows[c[hi].flow]->id + 1;
      victims |= !c[hi].blocked;
    }
    if (first_blocked == 0)
      continue;
    tg->witness[b] = first_blocked;
    tg->n_active += !tg->active[b];
    tg->active[b] = 1;
    /* A timer only where the tree will have flows to hold: victims, or a unit whose blocked flows
     * wait here for two outputs or more (one pace per upstream queue, unit_pace). A buffer of
     * blocked flows of one output alone changes no cap when it fills (a later pass that brings a
     * victim arms it then): on Mixtral's iteration a timer per new tree made 48 % more
     * recomputations. */
    int due = tg->reach_s[b] > now && isfinite(tg->reach_s[b]) && tg->armed_s[b] != tg->reach_s[b];
    if (due && (victims || (unit_pace && unit_waits_for_two(tg, flows, held, c, lo, hi)))) {
      SGF_CHECK(b <= UINT32_MAX, "ib: buffer index %llu beyond a timer's argument", (unsigned long long)b);
      fabric_timer_arm(fab, tg->reach_s[b], IB_TIMER_TREE, NULL, (uint32_t)b);
      tg->armed_s[b] = tg->reach_s[b];
    }
    tg->fresh[b] = 0;
    tg->excess_Bps[b] = 0;
  }
}

void ib_tree_clear(struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n)
{
  for (size_t i = 0; i < n && tg->n_active > 0; i++)
    for (int h = 0; h + 1 < flows[i]->hops; h++)
      end_tree(tg, buffer_of(tg, flows[i], h), fab->now);
}

struct fab_flow *const *ib_tree_reached_flows(const struct fabric *fab, const struct ib_tree *tg, uint32_t buffer,
                                              int *count)
{
  *count = 0;
  if (!tg->active[buffer] || tg->reach_s[buffer] != fab->now)
    return NULL;
  return fabric_port_flows(fab, (int)(buffer / (uint32_t)tg->num_vls), count);
}
