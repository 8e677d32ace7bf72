/* The compute model's parameters ("compute/..."): which model times compute ops and the kernel
 * model's launch gap (workloads/compute/wl_compute.h, docs/compute-model.md). */
#ifndef SGFABRIC_COMPUTE_PARAMS_H
#define SGFABRIC_COMPUTE_PARAMS_H

#include "param.h"
#include "wl_compute.h"

extern const struct param_def compute_param_table[];
void compute_register_params(void);
/* Sets p's model and launch gap from the run's values (the rest as wl_compute_params_init). */
void compute_params_from(const struct param_set *set, struct wl_compute_params *p);

#endif
