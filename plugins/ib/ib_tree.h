/* InfiniBand at flow fidelity: the growth of congestion trees (ib_tree.c).
 *
 * A flow held back by a port further down its path fills the switch input buffers before that
 * port one after the other, from the nearest back toward its source, with what its source sends
 * beyond what the port lets through. A buffer it has not filled yet holds no blocked packet, so
 * the flows sharing it are not victims there yet: the congestion-tree pass (ib__on_rates) caps
 * victims only at buffers the tree has reached, and a timer at the date it reaches one
 * recomputes that buffer's component. */
#ifndef SGFABRIC_IB_TREE_H
#define SGFABRIC_IB_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

struct crossing;

struct ib_tree {
  int num_vls;
  double buffer_B; /* one input buffer per VL: what a tree fills at each level */
  /* per buffer (port x num_vls + VL), kept from pass to pass */
  double *reach_s;   /* when the current tree has filled it (INFINITY: never, at the excess found) */
  double *ended_s;   /* when a pass last found its tree gone */
  double *armed_s;   /* the reach date its last timer was armed for (-1: none) */
  uint64_t *witness; /* 1 + the id of a flow blocked there at the last pass that found a tree */
  uint8_t *active;   /* the last pass that covered it found a tree */
  size_t n_active;   /* buffers active */
  /* scratch, zero outside a pass */
  double *excess_Bps;  /* per buffer: what its blocked flows' sources send beyond their rates */
  uint8_t *fresh;      /* per buffer: its tree starts at this pass */
  double *nic_weight;  /* per port: max-min weight of the component's flows leaving this NIC */
  double *flow_excess; /* per component flow */
  size_t cap_flow_excess;
};

int ib_tree_init(struct ib_tree *tg, int n_ports, int num_vls, double buffer_B);
void ib_tree_fini(struct ib_tree *tg);
/* One congestion-tree pass over a component's n flows: held[i] is the hop flow i is held back at
 * (0 or -1: none), c[0..m) its switch-buffer crossings sorted by buffer, then unit. Starts the
 * trees of the buffers where one appears (their reach date, and a timer at it where the tree
 * will hold victims, or with unit_pace a unit's blocked flows bound for two outputs), ends
 * those of the buffers where none is left. */
void ib_tree_grow(struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n, const int32_t *held,
                  const struct crossing *c, size_t m, int unit_pace);
/* A pass that found no flow blocked: the trees of the buffers these flows cross are gone. */
void ib_tree_clear(struct fabric *fab, struct ib_tree *tg, struct fab_flow *const *flows, size_t n);
/* Whether the tree of buffer has reached it by now. */
static inline int ib_tree_reached(const struct ib_tree *tg, uint64_t buffer, double now)
{
  return tg->reach_s[buffer] <= now;
}
/* The timer of buffer fired: the flows whose caps to recompute (the buffer's port's), or NULL
 * (*count 0) when the tree it was armed for is gone or reaches the buffer at another date. */
struct fab_flow *const *ib_tree_reached_flows(const struct fabric *fab, const struct ib_tree *tg, uint32_t buffer,
                                              int *count);

#endif
