/* Compute stragglers (straggler.h). */
#include "straggler.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct param_def straggler_param_table[] = {
  { "straggler/slow-gpus", PARAM_TEXT, UNIT_NONE, "", 0, 0, NULL,
    "GPUs that compute slower: a comma list of GPU:FACTOR (GPU as the platform numbers them, FACTOR >= 1 "
    "multiplies every compute time), e.g. 3:1.2,17:1.5",
    "slow GPUs holding up synchronous training at scale (Jiang et al., MegaScale, NSDI'24)" },
  { "straggler/throttled-fraction", PARAM_REAL, UNIT_NONE, "0", 0, 1, NULL,
    "Fraction of the platform's GPUs that are throttled (each chosen with the run's seed)",
    "thermal or power throttling of a few GPUs in a fleet (MegaScale, NSDI'24)" },
  { "straggler/throttle-factor", PARAM_REAL, UNIT_NONE, "1.1", 1, 100, NULL,
    "Compute time multiplier of a throttled GPU", "assumption: a clock 10 % down" },
  { "straggler/jitter", PARAM_REAL, UNIT_NONE, "0", 0, 2, NULL,
    "Sigma of the log-normal noise (mean 1) on each run of compute kernels, drawn per rank with the run's seed",
    "kernel-time variability; 0: every run takes its modelled time" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void straggler_register_params(void) { fab_param_register(straggler_param_table); }

void straggler_params_from(const struct param_set *set, struct straggler_params *p)
{
  snprintf(p->slow_gpus, sizeof p->slow_gpus, "%s", fab_param_get_text(set, "straggler/slow-gpus"));
  p->throttled_fraction = fab_param_get(set, "straggler/throttled-fraction");
  p->throttle_factor = fab_param_get(set, "straggler/throttle-factor");
  p->jitter_sigma = fab_param_get(set, "straggler/jitter");
}

/* Parses "GPU:FACTOR,..." into factors; 0, or -1 with a message. */
static int parse_slow_gpus(const char *list, double *factors, int n_gpus, char *err, size_t errlen)
{
  const char *s = list;
  while (*s != '\0') {
    char *end;
    errno = 0;
    long gpu = strtol(s, &end, 10);
    if (end == s || *end != ':' || errno != 0) {
      snprintf(err, errlen, "straggler/slow-gpus: '%s' is not a list of GPU:FACTOR (at '%s')", list, s);
      return -1;
    }
    if (gpu < 0 || gpu >= n_gpus) {
      snprintf(err, errlen, "straggler/slow-gpus: GPU %ld does not exist (the platform has GPUs 0 to %d)", gpu,
               n_gpus - 1);
      return -1;
    }
    s = end + 1;
    errno = 0;
    double factor = strtod(s, &end);
    if (end == s || (*end != ',' && *end != '\0') || errno != 0 || !isfinite(factor)) {
      snprintf(err, errlen, "straggler/slow-gpus: '%s' is not a list of GPU:FACTOR (at '%s')", list, s);
      return -1;
    }
    if (factor < 1 || factor > 100) {
      snprintf(err, errlen, "straggler/slow-gpus: GPU %ld's factor %g is outside [1, 100] (a compute time multiplier)",
               gpu, factor);
      return -1;
    }
    factors[gpu] *= factor;
    s = *end == ',' ? end + 1 : end;
    if (*end == ',' && *s == '\0') {
      snprintf(err, errlen, "straggler/slow-gpus: '%s' ends with a comma", list);
      return -1;
    }
  }
  return 0;
}

double *straggler_gpu_factors(const struct straggler_params *p, int n_gpus, uint64_t seed, char *err, size_t errlen)
{
  double *factors = malloc((size_t)(n_gpus > 0 ? n_gpus : 1) * sizeof *factors);
  int *order = malloc((size_t)(n_gpus > 0 ? n_gpus : 1) * sizeof *order);
  if (factors == NULL || order == NULL) {
    free(factors);
    free(order);
    snprintf(err, errlen, "out of memory for %d GPUs' compute factors", n_gpus);
    return NULL;
  }
  for (int g = 0; g < n_gpus; g++)
    factors[g] = 1, order[g] = g;
  if (parse_slow_gpus(p->slow_gpus, factors, n_gpus, err, errlen) != 0) {
    free(factors);
    free(order);
    return NULL;
  }
  /* The throttled GPUs: the first k of a seeded shuffle (Fisher-Yates), k rounded to nearest. */
  int k = (int)lround(p->throttled_fraction * n_gpus);
  struct fab_rng r;
  fab_rng_seed(&r, fab_rng_mix64(seed ^ 0x7468726f74746c65ULL)); /* a stream of its own: "throttle" */
  for (int i = 0; i < k; i++) {
    int j = i + (int)fab_rng_below(&r, (uint64_t)(n_gpus - i));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
    factors[order[i]] *= p->throttle_factor;
  }
  free(order);
  return factors;
}

int straggler_count(const double *factors, int n_gpus, double *max_factor)
{
  int n = 0;
  double max = 1;
  for (int g = 0; factors != NULL && g < n_gpus; g++) {
    n += factors[g] != 1;
    max = fmax(max, factors[g]);
  }
  *max_factor = max;
  return n;
}

void straggler_rng(struct fab_rng *r, uint64_t seed, int rank)
{
  fab_rng_seed(r, fab_rng_mix64(seed ^ fab_rng_mix64(0x6a6974746572ULL + (uint64_t)rank))); /* "jitter" */
}

double straggler_jitter(struct fab_rng *r, double sigma)
{
  if (sigma <= 0)
    return 1;
  double a = fab_rng_uniform(r), b = fab_rng_uniform(r); /* a first: the order the streams are drawn in */
  double z = fab_rng_normal_of(a, b);
  return exp(sigma * z - sigma * sigma / 2);
}
