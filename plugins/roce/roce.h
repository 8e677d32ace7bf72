/* RoCEv2 fabric model: PFC, ECN marking, DCQCN, ECMP over QPs, go-back-N (docs/roce.md).
 *
 * Selected with `--fabric roce`; parameters "roce/..." (sgfabric params). SimGrid-style entry
 * point and getters; the model itself is a struct fab_model for the fabric core. */
#ifndef SGFABRIC_ROCE_H
#define SGFABRIC_ROCE_H

#include <simgrid/forward.h>
#include <stdint.h>

#include "fabric.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SimGrid plugin style: registers the "roce/..." parameters (repeated calls are no-ops). Call it
 * before the fabric is created. */
void sg_roce_plugin_init(void);

/* The model and its parameter table, for tools/run_common.c. */
const struct fab_model *roce_model(void);
void roce_register_params(void);

/* Getters on a fabric built with roce_model(). */
uint64_t sg_roce_get_pause_frames(const struct fabric *fab);
double sg_roce_get_paused_time(const struct fabric *fab); /* summed over ports, seconds */
uint64_t sg_roce_get_ecn_marks(const struct fabric *fab);
uint64_t sg_roce_get_cnps(const struct fabric *fab);
/* Bytes go-back-N sent again: counted at packet fidelity, estimated at flow fidelity from the
 * transfers' goodput fractions and what they send before a timeout fires (docs/roce.md, "Loss at
 * flow fidelity"). */
double sg_roce_get_retransmitted_bytes(const struct fabric *fab);
uint64_t sg_roce_get_buffer_drops(const struct fabric *fab);
uint64_t sg_roce_get_random_drops(const struct fabric *fab);
/* Go-back-N retransmission timeouts so far: counted at packet fidelity, those the transfers
 * waited at flow fidelity (roce/flow-timeouts: drawn counts, or expected ones, fractional). */
double sg_roce_get_timeouts(const struct fabric *fab);
double sg_roce_get_peak_buffer(const struct fabric *fab); /* largest switch buffer occupancy, bytes */
double sg_roce_get_buffer_used(const struct fabric *fab); /* bytes held in all switch buffers now */
/* Flow fidelity, fluid DCQCN (docs/roce.md): the fluid queue of a port (in transient) or the
 * standing queue its last transient left, bytes; ECN marks and CNPs estimated by the fluid model. */
double sg_roce_get_fluid_queue(const struct fabric *fab, int port);
double sg_roce_get_fluid_peak_queue(const struct fabric *fab); /* largest fluid queue, bytes */
double sg_roce_get_ecn_marks_est(const struct fabric *fab);
double sg_roce_get_cnps_est(const struct fabric *fab);
/* Flow fidelity with FIFO shares (the default without the fluid model): the estimates of
 * roce_flow_est.c up to now, ECN marks, CNPs, DCQCN rate cuts and PFC paused time summed over
 * ports (seconds). Returns 0, or -1 where they are not estimated (packet fidelity, the fluid
 * model, roce/flow-fifo:off). */
int sg_roce_get_flow_estimates(struct fabric *fab, double *marks, double *cnps, double *cuts, double *paused_s);
/* Flow fidelity: the flows the cap passes (FIFO shares, pause spreading, loss, the fluid model)
 * have visited so far, their cost measure: a pass covers the components just recomputed, or every
 * active flow under the fluid model. 0 at packet fidelity. */
uint64_t sg_roce_get_flow_pass_flows(const struct fabric *fab);
/* Flow fidelity: the held-port measures made on the packet model (roce_held_port.h), and the
 * phases of them run so far (a phase is run when a held port first reaches it). */
uint64_t sg_roce_get_held_measures(const struct fabric *fab, uint64_t *phases_run);
/* DCQCN state of a flow (packet fidelity; at flow fidelity, of the fluid model): current and target rate (bytes/s), alpha. Returns -1
 * if the flow has no DCQCN state. */
int sg_roce_get_flow_rate(const struct fab_flow *flow, double *rc_Bps, double *rt_Bps, double *alpha);
/* Per port (packet fidelity): the time its transmitter was held by PFC PAUSE frames, up to now
 * (seconds; -1 at flow fidelity, which has no PAUSE frames), and the PAUSE frames it received. */
double sg_roce_get_port_paused_time(const struct fabric *fab, int port);
uint64_t sg_roce_get_port_pauses_received(const struct fabric *fab, int port);

/* The per-port getters on SimGrid's link handles, for the fabric SimGrid runs (sgf_load_platform):
 * the direction of a split-duplex link ("L_UP", "L_DOWN") is one port. -1 when no fabric runs at
 * packet fidelity (flow fidelity does not simulate these mechanisms) or the link is not one of its
 * links. */
double sg_roce_link_get_paused_time(const_sg_link_t link);
int64_t sg_roce_link_get_pauses_received(const_sg_link_t link);

#ifdef __cplusplus
}
#endif

#endif
