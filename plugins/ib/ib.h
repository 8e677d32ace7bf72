/* The InfiniBand fabric model (--fabric ib): credit-based link-level flow control per VL,
 * SL-to-VL mapping and VL arbitration, switches with input buffers and a crossbar, D-mod-K
 * forwarding tables and adaptive routing; at packet and at flow fidelity. docs/ib.md describes
 * it; `sgfabric params` lists its ib/ parameters. */
#ifndef SGFABRIC_IB_H
#define SGFABRIC_IB_H

#include <simgrid/forward.h>
#include <stdint.h>

#include "fabric.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For SimGrid programs, in SimGrid's plugin style: registers the fabric and ib/ parameter tables
 * and selects the model for sg_ib_selected_model(). Call it before loading the platform (its
 * props may set ib/ parameters); a repeated call is a no-op. */
void sg_ib_plugin_init(void);
/* The model a program that called sg_ib_plugin_init() passes to fabric_new(), or NULL. */
const struct fab_model *sg_ib_selected_model(void);

/* The model and its parameter table (the sgfabric tool's registry uses these). */
const struct fab_model *ib_model(void);
void ib_register_params(void);

/* Getters on a fabric running the ib model. Credits, input buffers and their stalls exist at
 * packet fidelity only: the time and per-port getters answer -1 at flow fidelity, and for a port
 * or VL that is not one (the whole-fabric stall time answers 0 on another model's fabric). */
double sg_ib_get_credit_stall_time(const struct fabric *fab);               /* all ports, seconds */
double sg_ib_get_port_stall_time(const struct fabric *fab, int port);       /* one port, seconds */
double sg_ib_get_port_peak_buffer(const struct fabric *fab, int port);      /* bytes, buffer fed by port */
int32_t sg_ib_get_port_credits(const struct fabric *fab, int port, int vl); /* free 64-byte blocks */
/* Counters of packet-fidelity events (0 at flow fidelity, where none is simulated; summary.json
 * writes null there): adaptive routing's per-packet decisions; under failures (failure.h) credits
 * voided when links went down and advertised again when they came back up (64-byte blocks), RC
 * transport timeouts and the bytes they sent again. */
uint64_t sg_ib_get_ar_decisions(const struct fabric *fab);
uint64_t sg_ib_get_credits_reset_blocks(const struct fabric *fab);
uint64_t sg_ib_get_credits_restored_blocks(const struct fabric *fab);
uint64_t sg_ib_get_transport_timeouts(const struct fabric *fab);
double sg_ib_get_retransmitted_bytes(const struct fabric *fab);
/* The blocks held in the input buffer that port feeds (-1 as the per-port getters above). */
int32_t sg_ib_get_port_buffered_blocks(const struct fabric *fab, int port, int vl);

/* The per-port getters on SimGrid's link handles, for the fabric SimGrid runs (sgf_load_platform):
 * the direction of a split-duplex link ("L_UP", "L_DOWN") is one port. -1 when no fabric runs at
 * packet fidelity (flow fidelity does not simulate these mechanisms) or the link is not one of its
 * links. */
double sg_ib_link_get_stall_time(const_sg_link_t link);
double sg_ib_link_get_peak_buffer(const_sg_link_t link);
int32_t sg_ib_link_get_credits(const_sg_link_t link, int vl);

#ifdef __cplusplus
}
#endif

#endif
