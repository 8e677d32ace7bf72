/* InfiniBand linear forwarding tables for fat-trees: D-mod-K, as OpenSM's ftree engine builds.
 *
 * Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real Life
 * Fat Trees" (2010); OpenSM doc/current-routing.txt (ftree). GPUs are numbered in leaf-major
 * order (leaf index, then the leaf's ports in order), as ftree orders its compute nodes; a
 * switch of level l sends a packet for rank D up through its up-port
 *
 *   (D / (w_1 × ... × w_{l-1})) mod w_l        (w_k: up-ports of a level-k switch)
 *
 * and down through the only child that reaches D's leaf (rank mod count among parallel ones).
 * A shift permutation (D = S + s in rank order) is then carried without two flows on a link of
 * a full-bisection tree. */
#ifndef SGFABRIC_IB_LFT_H
#define SGFABRIC_IB_LFT_H

#include "topo.h"

#define IB_LFT_MAX_LEVELS 8

struct ib_lft {
  int *rank;                      /* GPU index -> rank in leaf-major order */
  int divisor[IB_LFT_MAX_LEVELS]; /* per switch level: product of the up-port counts below it */
};

/* Computes the ranks and divisors. Returns 0, or -1 if out of memory. */
int ib_lft_init(struct ib_lft *l, const struct topo *t);
void ib_lft_free(struct ib_lft *l);

/* Index, among the n candidates fab_route_candidates() lists at node toward dst_gpu, of the port
 * the table names. */
int ib_lft_pick(const struct ib_lft *l, const struct topo *t, int node, int dst_gpu, const int *cand, int n);

/* The static path of a transfer: egress ports written to ports; returns the hop count or -1. */
int ib_lft_path(const struct ib_lft *l, const struct topo *t, int src_gpu, int dst_gpu, int *ports, int max);

#endif
