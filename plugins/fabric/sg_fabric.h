/* The fabric inside SimGrid: the API workload actors use.
 *
 * sgf_install() adds a kernel model to SimGrid's engine that drives the fabric's calendar from
 * SimGrid's clock (sg_fabric_model.cpp). An actor posts a transfer with sgf_isend(), which
 * returns at once, and blocks in sgf_wait() on a semaphore that the model releases when the
 * transfer's last byte arrives. One simulation per process (a SimGrid limit). */
#ifndef SGFABRIC_SG_FABRIC_H
#define SGFABRIC_SG_FABRIC_H

#include "fabric.h"

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

#endif
