/* The DCQCN reaction point of one RoCE flow: the timers and clock around the rate machine of
 * dcqcn.c. Shared by the packet model (roce_model.c, which schedules the timers as events) and
 * the fluid DCQCN model of flow fidelity (roce_dcqcn_fluid.c, which polls them every step). */
#ifndef SGFABRIC_ROCE_RP_H
#define SGFABRIC_ROCE_RP_H

#include <stddef.h>
#include <stdint.h>

#include "dcqcn.h"

struct roce_flow;

/* A CNP arrives at date now: alpha catches up with an idle timer, the cut (dcqcn_on_cnp), the
 * alpha and rate-increase timers are re-dated. Returns whether it cut. */
int roce_rp_cut(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf, double now);
/* One expiry of the alpha timer; it stays armed while the flow is below line rate. */
void roce_rp_alpha_expiry(const struct dcqcn_params *p, struct roce_flow *rf);
/* One expiry of the rate-increase timer (an increase if below line rate, which it returns);
 * it stays armed while the flow is below line rate. */
int roce_rp_rate_expiry(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf);

/* A queue pair's reaction point outlives its transfers: a NIC keeps a QP's rate limiter across its
 * work requests and releases it only when the rate has recovered to line rate (the RP state of
 * DCQCN is per QP, Zhu et al. SIGCOMM'15 section 3.1; NCCL keeps a connection's QPs for the
 * communicator's life). So a transfer that ends below line rate leaves its RP state under its QP
 * key, and the next transfer of that QP takes it over, its timers caught up with the time the QP
 * was idle (the increase timer T and the alpha timer run whether or not it sends). */
struct roce_qp_rp {
  uint64_t key;
  uint8_t used; /* the slot holds key */
  uint8_t left; /* a transfer left its state below line rate, and no later one took it yet
                 * (below line rate both timers run: they are armed again from the dates) */
  struct dcqcn_vars cc;
  double alpha_due_s, rate_due_s;
};

struct roce_qp_rps {
  struct roce_qp_rp *slots; /* open addressing, linear probing; entries are never removed */
  size_t cap, n;
};

/* Flow rf (key key) ends: keeps its RP state for the QP's next transfer (a QP back at line rate
 * keeps nothing: its next transfer starts afresh, as a released rate limiter does). */
void roce_qp_rp_save(struct roce_qp_rps *m, uint64_t key, const struct roce_flow *rf);
/* Flow rf (key key) starts at date now: takes over the QP's RP state, if it left one below
 * line rate, with its timers' expiries up to now applied. Returns 1 if it did (the caller arms
 * the timers that are armed), 0 if rf keeps its fresh state. */
int roce_qp_rp_restore(struct roce_qp_rps *m, uint64_t key, const struct dcqcn_params *p, struct dcqcn_stats *s,
                       struct roce_flow *rf, double now);
void roce_qp_rps_free(struct roce_qp_rps *m);

#endif
