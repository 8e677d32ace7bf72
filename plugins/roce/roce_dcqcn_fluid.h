/* DCQCN at flow fidelity: the fluid model of roce_dcqcn_fluid.c, integrated while a switch
 * egress is in transient. Its state per flow (struct roce_fluid_flow, in struct roce_flow) and
 * for the model (struct roce_dcqcn_fluid, in struct roce_state). */
#ifndef SGFABRIC_ROCE_DCQCN_FLUID_H
#define SGFABRIC_ROCE_DCQCN_FLUID_H

#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

#define ROCE_FLUID_HIST 32 /* steps of history kept for the feedback delay tau* */

struct roce_flow;

/* Per flow. */
struct roce_fluid_flow {
  double rc_hist[ROCE_FLUID_HIST]; /* ode: RC at the last steps, for RC(t - tau*); machine: the
                                         departure rate (FIFO service) at the last steps */
  double marks;                    /* machine, mean marks: expected marks since the NP could last
                                      send a CNP (-1: none yet after a CNP interval ended); random
                                      marks: the fraction of a packet departed since the last whole one */
  uint64_t mark_rng;               /* machine, random marks: the flow's own stream (0: not seeded) */
  double win_bytes;                /* machine: bytes sent in the current settle window */
  double prev_mean;                /* machine: mean rate over the previous settle window (-1: none) */
  uint32_t cuts_win;               /* machine: rate cuts in the current settle window */
  double base_cap_Bps;             /* its cap without the fluid model (loss; 0: none) */
  double nic_share_Bps;            /* line rate / flows sharing its NIC: its arrival rate bound */
  double scale;                    /* FIFO service / sending rate at its transient ports (last step) */
  double rc_min, rc_max;           /* RC range over the current settle window */
  uint8_t lag;                     /* tau* in steps */
  uint8_t seen;                    /* on_rates has seen it */
  uint8_t in;                      /* crosses a bottleneck in transient */
};

/* A switch egress port whose flows are integrated by the fluid model. */
struct roce_fluid_port {
  int32_t port;
  double capacity_Bps;
  double q_B;                     /* fluid queue */
  double arrival_Bps;             /* sum of the arrival rates of its flows (last step) */
  double p_hist[ROCE_FLUID_HIST]; /* marking probability at the last steps */
  uint64_t enter_step;
  double enter_s;
  double q_min, q_max; /* range over the current settle window */
  int at_line;         /* settle check: not at the fixed point, every flow back at its NIC share */
  double win_served;   /* machine: bytes served in the current settle window */
  uint32_t n_ingress;  /* ingress ports its fluid flows arrive on (at the last flow change) */
  uint8_t held;        /* PFC holds its senders: the queue is at the PFC bound and oversubscribed */
  double win_q;        /* machine: integral of the queue over the current settle window */
  double win_arr;      /* machine: bytes that arrived in the current settle window */
};

/* Counters, all estimates (written as *_est and fluid_* at flow fidelity). */
struct roce_fluid_stats {
  double marks_est;     /* integral of p x arrival / MTU at transient ports */
  double cnps_est;      /* integral of the CNP rate (at most one per flow per tau) */
  double peak_queue_B;  /* largest fluid queue */
  uint64_t transients;  /* bottlenecks that entered a transient */
  uint64_t settled;     /* transients that settled */
  uint64_t steps;       /* fluid integration steps */
  double transient_s;   /* summed duration of the settled transients */
  double last_settle_s; /* date the last transient settled */
};

struct roce_dcqcn_fluid {
  double *arrival_Bps;           /* per port, arrival at line rate of the flows crossing it */
  double *nic_flows;             /* per NIC port, its flows */
  struct roce_fluid_port *ports; /* bottlenecks in transient */
  size_t n_ports, cap_ports;
  int32_t *slot;               /* per port: its index in ports (-1: not in transient) */
  double *q_settled;           /* per port: standing queue its last transient left (fixed point q*) */
  uint32_t *sig_n, *cur_n;     /* per port: flows crossing it, at the last check and now */
  uint64_t *sig_sum, *cur_sum; /* per port: sum of their ids, at the last check and now */
  struct roce_flow **flows;    /* flows crossing a bottleneck in transient */
  uint32_t *gens;              /* their generations */
  uint32_t *ingress_seen;      /* per port: the count_ingress pass that last counted it */
  uint32_t ingress_stamp;      /* count_ingress passes so far */
  size_t n_flows, cap_flows;
  uint64_t starts, last_starts; /* flows started (flow_start), at the last check */
  size_t last_n;                /* active flows at the last check */
  uint64_t step;                /* steps since the start */
  uint64_t window_start;        /* step that opened the current settle window */
  int armed;                    /* a step is scheduled */
  struct roce_fluid_stats stats;
};

int roce_fluid_init(struct fabric *fab);
void roce_fluid_fini(struct fabric *fab);
/* on_rates with DCQCN on: returns 0 when the set of active flows did not change since the last
 * call (the recomputation came from a cap: nothing to redo). */
int roce_fluid_flows_changed(struct fabric *fab);
/* The flow set changed: enter transients at oversubscribed ports, list the fluid flows. */
void roce_fluid_detect(struct fabric *fab, struct fab_flow **flows, size_t n);
/* The cap of a flow given its cap without the fluid model. */
double roce_fluid_cap(const struct fabric *fab, const struct fab_flow *flow, double base_cap);
void roce_fluid_step(struct fabric *fab);
double roce_fluid_queue(const struct fabric *fab, int port);

#endif
