/* The fabric inside SimGrid: the API workload actors use.
 *
 * sgf_install() adds a kernel model to SimGrid's engine that drives the fabric's calendar from
 * SimGrid's clock (sg_fabric_model.cpp). An actor posts a transfer with sgf_isend(), which
 * returns at once, and blocks in sgf_wait() on a semaphore that the model releases when the
 * transfer's last byte arrives. One simulation per process (a SimGrid limit). */
#ifndef SGFABRIC_SG_FABRIC_H
#define SGFABRIC_SG_FABRIC_H

#include <simgrid/forward.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sgf_transfer;
typedef struct sgf_transfer sgf_transfer_t;

/* Call after simgrid_init() and before simgrid_run(); the fabric must outlive the run. */
void sgf_install(struct fabric *fab);
struct fabric *sgf_fabric(void);

/* Posts bytes from src_gpu to dst_gpu now (or at start_s if later). The caller owns the handle
 * until sgf_wait() returns. */
sgf_transfer_t *sgf_isend(int src_gpu, int dst_gpu, double bytes, int tag);
sgf_transfer_t *sgf_isend_at(int src_gpu, int dst_gpu, double bytes, int tag, double start_s);
/* Blocks the calling actor until the transfer completed; returns its completion date and frees
 * the handle. */
double sgf_wait(sgf_transfer_t *t);
/* Waits for n transfers. */
void sgf_wait_all(sgf_transfer_t **t, int n);
/* Whether the transfer already completed. */
int sgf_test(const sgf_transfer_t *t);

/* Called from the SimGrid model (C++ glue): the fabric's next date as a delay from now (-1 when
 * idle), and processing the fabric up to now. */
double sgf_model_next(double now);
void sgf_model_advance(double now);
/* Implemented in the C++ glue: registers the model with s4u::Engine::add_model. */
void sgf_glue_add_model(void);
/* Implemented in the C++ glue: SimGrid loads the platform file (after simgrid_init); 0, or -1
 * with SimGrid's reason (file and line) in err instead of SimGrid aborting the process. */
int sgf_glue_load_platform(const char *path, char *err, size_t errlen);

/* ---- for SimGrid programs (sgfabric.h includes this header and the plugins') ---- */

struct sgf_load_options {
  const char *fidelity;   /* "flow" (the default when NULL) or "packet" */
  uint64_t seed;          /* every random choice of the models (ECMP hashing, RED marking, ...) */
  const char *const *cfg; /* NULL-terminated "area/name:value" settings (sgfabric params lists
                             them), applied after the platform's props; NULL for none */
};

/* Loads path into SimGrid and builds the fabric on it with the model a plugin init selected
 * (sg_ib_plugin_init, sg_roce_plugin_init; the ideal fabric, plain max-min sharing, when none
 * was), then installs it (sgf_install). Call once, after simgrid_init() and the plugin init,
 * instead of simgrid_load_platform(); opt NULL: flow fidelity, seed 1. Returns the fabric (owned
 * by the library until sgf_unload()), or NULL with "FILE:LINE: message" or the setting at fault
 * in err. */
struct fabric *sgf_load_platform(const char *path, const struct sgf_load_options *opt, char *err, size_t errlen);
/* Frees what sgf_load_platform built; call after simgrid_run(). */
void sgf_unload(void);

/* SimGrid handles to the fabric's indices: the GPU a host is (-1 if the host is not a GPU of the
 * platform), and the port that transmits on a link direction (-1 if the link is not one of the
 * platform's). The platform's links are split-duplex: SimGrid's link "L_UP" transmits from L's
 * lower end toward the core, "L_DOWN" from its upper end. Ports are what the plugins' per-port
 * getters take (sg_ib_get_port_stall_time, sg_roce_get_fluid_queue, ...). */
int sgf_host_gpu(const_sg_host_t host);
int sgf_link_port(const_sg_link_t link);
/* sgf_link_port(link) when the fabric runs at packet fidelity, -1 otherwise: for the getters of
 * per-port mechanisms that flow fidelity does not simulate (credits, buffers, PAUSE frames),
 * which answer -1 there rather than a 0 that was never measured. */
int sgf_link_packet_port(const_sg_link_t link);

#ifdef __cplusplus
}
#endif

#endif
