/* RoCEv2 at flow fidelity: FIFO shares. Without congestion control every sender transmits at
 * its NIC's share of the line rate, and a saturated switch egress serves its flows in
 * proportion to their arrival rates (roce_fifo.c). With DCQCN on, every sender transmits at its
 * DCQCN floor rate (roce_dcqcn_floor.h): a port that the floors still saturate is one DCQCN
 * cannot hold, served as a FIFO under PFC; the others are left to max-min. */
#ifndef SGFABRIC_ROCE_FIFO_H
#define SGFABRIC_ROCE_FIFO_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

/* Per flow, kept from pass to pass: only the components whose flow set changed are redone. */
struct roce_fifo_flow {
  double in_Bps[ROUTE_MAX_HOPS]; /* its arrival rate at each hop >= 1 */
  double share_Bps;              /* its FIFO share after its last hop (not marked: its NIC share) */
  double inject;                 /* the fraction of its NIC share it injects: 1, or under DCQCN its
                                    floor fraction (roce_dcqcn_floor.h), set before the pass */
  uint8_t marked_mask;           /* the saturated switch egresses on its path (bit h: path[h]): their
                                    FIFO queues build, and under DCQCN each marks every packet
                                    (above Kmax); 0: not throttled */
};

struct roce_fifo {
  double *nic_flows;      /* per port: flows leaving this NIC port (within a pass) */
  double *arrival_Bps;    /* per port: arrival rate of the pass's flows (within a sweep) */
  struct fab_flow **comp; /* the flows of a pass, in active-set order */
  size_t comp_cap;
  /* a pass's copy of its flows: per flow its hops, marks and share; per crossing (hop >= 1), flow
   * after flow, the port and the arrival rate there */
  uint8_t *pass_hops, *pass_mask;
  double *pass_rate;
  size_t pass_flows_cap;
  int32_t *pass_port;
  double *pass_in;
  size_t pass_cross_cap;
};

int roce_fifo_init(struct roce_fifo *s, int n_ports);
void roce_fifo_fini(struct roce_fifo *s);
/* Before a recomputation's filling: the shares of the components whose flow set changed (the
 * flows about to be recomputed). */
void roce_fifo_update(struct fabric *fab, struct roce_fifo *s);
/* A flow's FIFO state (in its struct roce_flow). */
const struct roce_fifo_flow *roce_fifo_of(const struct fab_flow *f);

/* Its NIC share, what it would send without congestion control: the round robin of its NIC's
 * QPs (in_Bps[1] is that share times its DCQCN floor fraction, inject). */
static inline double roce_fifo_nic_share(const struct roce_fifo_flow *ff)
{
  return ff->inject > 0 && ff->inject < 1 ? ff->in_Bps[1] / ff->inject : ff->in_Bps[1];
}

#endif
