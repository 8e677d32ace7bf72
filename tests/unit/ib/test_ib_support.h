/* Helpers of the InfiniBand scenario tests: run a set of transfers on a topology under the ib
 * model with --cfg-style settings, and measure them. */
#ifndef SGFABRIC_TEST_IB_SUPPORT_H
#define SGFABRIC_TEST_IB_SUPPORT_H

#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "ib.h"
#include "ib_lft.h"
#include "rng.h"
#include "test_support.h"

#define RATE 50e9 /* 400Gbps */
#define LINK_LAT 100e-9
#define SWITCH_LAT 130e-9

struct xfer {
  int src, dst, tag;
  double bytes;
  /* results */
  double start_s, finish_s;
};

struct run {
  struct param_set *params;
  struct fabric *fab;
  struct xfer *x;
  int n, done;
  double stall_s;
  uint64_t drops;
};

static void xfer_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct run *r = ctx;
  r->x[flow->id].start_s = flow->start_s;
  r->x[flow->id].finish_s = flow->finish_s;
  r->done++;
}

static inline struct param_set *ib_params_with(const char *const *cfg)
{
  fabric_register_params();
  ib_register_params();
  struct param_set *set = fab_param_set_new();
  char err[256];
  for (int i = 0; cfg && cfg[i]; i++)
    if (fab_param_set_cfg(set, cfg[i], err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      CU_FAIL_FATAL("a test setting is refused");
    }
  return set;
}

/* Creates the fabric and posts the transfers (at time 0); fabric_run() or advance is the caller's. */
static inline void run_begin(struct run *r, struct topo *t, fab_fidelity fid, const char *const *cfg, struct xfer *x,
                             int n)
{
  memset(r, 0, sizeof *r);
  r->params = ib_params_with(cfg);
  char err[256] = "";
  r->fab = fabric_new(t, r->params, ib_model(), fid, 1, err, sizeof err);
  if (r->fab == NULL)
    fprintf(stderr, "%s\n", err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r->fab);
  r->x = x;
  r->n = n;
  for (int i = 0; i < n; i++)
    fabric_post(r->fab, x[i].src, x[i].dst, x[i].bytes, 0, x[i].tag, xfer_done, r);
}

static inline void run_end(struct run *r)
{
  fabric_run(r->fab);
  CU_ASSERT_EQUAL(r->done, r->n);
  r->stall_s = sg_ib_get_credit_stall_time(r->fab);
  r->drops = r->fab->stats.drops;
  CU_ASSERT_EQUAL(r->drops, 0);
  fabric_free(r->fab);
  fab_param_set_free(r->params);
  r->fab = NULL;
}

/* Runs to completion; returns the mean completion time (finish - post). */
static inline double run_all(struct topo *t, fab_fidelity fid, const char *const *cfg, struct xfer *x, int n,
                             double *stall_s)
{
  struct run r;
  run_begin(&r, t, fid, cfg, x, n);
  run_end(&r);
  if (stall_s)
    *stall_s = r.stall_s;
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += x[i].finish_s;
  return sum / n;
}

static inline double throughput(const struct xfer *x) { return x->bytes / (x->finish_s - x->start_s); }

static inline int within(double value, double expected, double tolerance)
{
  return fabs(value - expected) <= tolerance * fabs(expected);
}

/* A random permutation without fixed points. */
static inline void random_permutation(int n, uint64_t seed, int *perm)
{
  struct fab_rng rng;
  fab_rng_seed(&rng, seed);
  fab_rng_derangement(&rng, n, perm);
}

#endif
