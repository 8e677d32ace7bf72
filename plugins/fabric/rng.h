/* Seeded pseudo-random numbers: xoshiro256** (Blackman & Vigna, 2018) seeded through
 * splitmix64. Every random choice of a run draws from a generator derived from the run's seed,
 * so the same seed gives the same choices. */
#ifndef SGFABRIC_RNG_H
#define SGFABRIC_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fab_rng {
  uint64_t s[4];
};

void fab_rng_seed(struct fab_rng *r, uint64_t seed);
uint64_t fab_rng_next(struct fab_rng *r);
/* Uniform in [0, 1). */
double fab_rng_uniform(struct fab_rng *r);
/* Uniform integer in [0, n) for n > 0. */
uint64_t fab_rng_below(struct fab_rng *r, uint64_t n);
/* A uniformly random permutation of 0..n-1 without fixed points (a derangement, n >= 2), drawn
 * by shuffling until none is left (about e tries): the random-permutation traffic of
 * benchmarks and tests. */
void fab_rng_derangement(struct fab_rng *r, int n, int *perm);
/* Shuffles a[0..n) uniformly in place (Fisher-Yates, from the last element down). */
void fab_rng_shuffle(struct fab_rng *r, int *a, int n);
/* A 64-bit mix of a value with a seed (splitmix64 finaliser), for hashing. */
uint64_t fab_rng_mix64(uint64_t x);
/* The next value of a splitmix64 stream whose whole state is *state (8 bytes: a stream per
 * object where a fab_rng would be too large); fab_rng_seed draws its seeds this way. */
uint64_t fab_rng_splitmix(uint64_t *state);
/* Uniform in [0, 1) from the 53 high bits of a 64-bit draw. */
double fab_rng_unit(uint64_t bits);
/* A standard normal value from two uniforms in [0, 1) (Box-Muller: sqrt(-2 ln(1 - a)) cos(2 pi b),
 * 1 - a in (0, 1] so the logarithm is finite), whichever stream they were drawn from. */
double fab_rng_normal_of(double a, double b);

#ifdef __cplusplus
}
#endif

#endif
