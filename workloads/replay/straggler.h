/* Compute stragglers ("straggler/..." parameters): GPUs that compute slower than their peers, by a
 * fixed factor (a list, or a seeded fraction of throttled GPUs) and by per-kernel-run noise. A
 * synchronous job runs at its slowest member's pace, which is what these let a user measure. */
#ifndef SGFABRIC_STRAGGLER_H
#define SGFABRIC_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

#include "param.h"
#include "rng.h"

extern const struct param_def straggler_param_table[];
void straggler_register_params(void);

struct straggler_params {
  char slow_gpus[96];        /* "GPU:FACTOR,..." as given ("" = none) */
  double throttled_fraction; /* of the GPUs, drawn with the run's seed */
  double throttle_factor;    /* their compute time multiplier */
  double jitter_sigma;       /* log-normal noise of each compute run (0 = none) */
};
void straggler_params_from(const struct param_set *set, struct straggler_params *p);

/* The compute time multiplier of each of the platform's n_gpus GPUs (1 for most): the listed
 * ones times the throttled ones. Returns a malloc'd array, or NULL with a message naming the
 * parameter in err (a malformed list, a GPU the platform does not have, a factor below 1 ...). */
double *straggler_gpu_factors(const struct straggler_params *p, int n_gpus, uint64_t seed, char *err, size_t errlen);
/* How many factors differ from 1, and the largest. */
int straggler_count(const double *factors, int n_gpus, double *max_factor);

/* A generator for one rank's noise: its own stream of the run's seed, so that the draws do not
 * depend on the order the ranks run in. */
void straggler_rng(struct fab_rng *r, uint64_t seed, int rank);
/* One compute run's multiplier: log-normal of mean 1, exp(sigma Z - sigma^2 / 2), Z standard
 * normal (Box-Muller). */
double straggler_jitter(struct fab_rng *r, double sigma);

#endif
