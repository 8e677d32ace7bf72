/* xoshiro256** generator and splitmix64 seeding. */
#include "rng.h"

#include <math.h>

uint64_t fab_rng_mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fab_rng_splitmix(uint64_t *state)
{
  *state += 0x9e3779b97f4a7c15ULL;
  return fab_rng_mix64(*state);
}

double fab_rng_unit(uint64_t bits) { return (double)(bits >> 11) * 0x1.0p-53; }

double fab_rng_normal_of(double a, double b) { return sqrt(-2 * log(1 - a)) * cos(6.283185307179586 /* 2 pi */ * b); }

void fab_rng_seed(struct fab_rng *r, uint64_t seed)
{
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    r->s[i] = fab_rng_splitmix(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fab_rng_next(struct fab_rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double fab_rng_uniform(struct fab_rng *r) { return fab_rng_unit(fab_rng_next(r)); }

uint64_t fab_rng_below(struct fab_rng *r, uint64_t n)
{
  /* Rejection keeps the draw unbiased for any n. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = fab_rng_next(r);
  while (x >= limit);
  return x % n;
}

void fab_rng_shuffle(struct fab_rng *r, int *a, int n)
{
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)fab_rng_below(r, (uint64_t)i + 1);
    int tmp = a[i];
    a[i] = a[j];
    a[j] = tmp;
  }
}

void fab_rng_derangement(struct fab_rng *r, int n, int *perm)
{
  for (;;) {
    for (int i = 0; i < n; i++)
      perm[i] = i;
    fab_rng_shuffle(r, perm, n);
    int fixed = 0;
    for (int i = 0; i < n; i++)
      fixed += perm[i] == i;
    if (!fixed)
      return;
  }
}
