/* InfiniBand model benchmark (not a test): a random permutation of 64 MB transfers on
 * platforms/rail-1024.xml at one fidelity; prints wall time, max RSS and the mean completion time.
 *
 *   ib_bench packet|flow [MB] [--cfg=area/name:value ...]
 *
 * Run each fidelity in its own process so that max RSS is the fidelity's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ib.h"
#include "rng.h"
#include "test_support.h"

static double g_fct_sum;
static int g_done;

static void done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  (void)ctx;
  g_fct_sum += flow->finish_s - flow->post_s;
  g_done++;
}

int main(int argc, char **argv)
{
  if (argc < 2 || (strcmp(argv[1], "packet") && strcmp(argv[1], "flow"))) {
    fprintf(stderr, "usage: ib_bench packet|flow [MB] [--cfg=area/name:value ...]\n");
    return 2;
  }
  fab_fidelity fid = strcmp(argv[1], "packet") ? FAB_FIDELITY_FLOW : FAB_FIDELITY_PACKET;
  double mb = argc > 2 && strncmp(argv[2], "--", 2) ? atof(argv[2]) : 64;
  struct platform *p = load_shipped("rail-1024.xml");
  if (p == NULL)
    return 1;
  fabric_register_params();
  ib_register_params();
  struct param_set *set = fab_param_set_new();
  char err[256];
  for (int i = 2; i < argc; i++)
    if (!strncmp(argv[i], "--cfg=", 6) && fab_param_set_cfg(set, argv[i] + 6, err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      return 2;
    }
  struct fabric *fab = fabric_new(p->topo, set, ib_model(), fid, 1, err, sizeof err);
  if (fab == NULL) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  int n = p->topo->n_gpus;
  int *perm = malloc((size_t)n * sizeof *perm);
  struct fab_rng rng;
  fab_rng_seed(&rng, 1);
  fab_rng_derangement(&rng, n, perm);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int posted = 0;
  for (int i = 0; i < n; i++)
    if (perm[i] != i) {
      fabric_post(fab, i, perm[i], mb * 1e6, 0, 0, done, NULL);
      posted++;
    }
  fabric_run(fab);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("ib_bench %s: %d GPUs, %d transfers of %.0f MB (random permutation, %s): wall %.2f s, max RSS %.1f MB, "
         "events %llu, mean FCT %.3f ms, credit_stall_s %.4g, drops %llu\n",
         argv[1], n, posted, mb, fab_param_get_text(set, "ib/routing"),
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), ru.ru_maxrss / 1024.0,
         (unsigned long long)fab->stats.events, 1e3 * g_fct_sum / (g_done ? g_done : 1),
         sg_ib_get_credit_stall_time(fab), (unsigned long long)fab->stats.drops);
  fabric_free(fab);
  fab_param_set_free(set);
  platform_free(p);
  free(perm);
  return g_done == posted ? 0 : 1;
}
