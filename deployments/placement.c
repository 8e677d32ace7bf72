/* Placement policies (placement.h). */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rng.h"

static const char *const names[] = { "contiguous", "rail-aligned", "fragmented", "random" };

const char *placement_name(enum placement_policy p) { return names[p]; }

int placement_parse(const char *name, enum placement_policy *out, char *err, size_t errlen)
{
  for (int p = 0; p < 4; p++)
    if (strcmp(name, names[p]) == 0) {
      *out = (enum placement_policy)p;
      return 0;
    }
  snprintf(err, errlen, "unknown placement '%s' (contiguous, rail-aligned, fragmented or random)", name);
  return -1;
}

int placement_place(enum placement_policy p, const int *sizes, int n_jobs, int gpus, int gpus_per_node, uint64_t seed,
                    int **rank_gpu, char *err, size_t errlen)
{
  int total = 0, nodes_needed = 0, g = gpus_per_node > 0 ? gpus_per_node : 1;
  for (int j = 0; j < n_jobs; j++) {
    total += sizes[j];
    nodes_needed += (sizes[j] + g - 1) / g;
    rank_gpu[j] = NULL;
  }
  if (total > gpus) {
    snprintf(err, errlen, "the jobs have %d ranks, the platform %d GPUs", total, gpus);
    return -1;
  }
  int nodes = gpus / g;
  if ((p == PLACE_RAIL_ALIGNED || p == PLACE_FRAGMENTED) && nodes_needed > nodes) {
    snprintf(err, errlen,
             "%s placement gives each job whole nodes: the jobs need %d nodes of %d GPUs, the platform "
             "has %d",
             names[p], nodes_needed, g, nodes);
    return -1;
  }
  for (int j = 0; j < n_jobs; j++)
    rank_gpu[j] = sgf_xmalloc(sizeof(int) * (size_t)(sizes[j] ? sizes[j] : 1));
  switch (p) {
  case PLACE_CONTIGUOUS: {
    int next = 0;
    for (int j = 0; j < n_jobs; j++)
      for (int r = 0; r < sizes[j]; r++)
        rank_gpu[j][r] = next++;
    break;
  }
  case PLACE_RANDOM: {
    /* A seeded shuffle of the GPUs, then consecutive slices. */
    int *order = sgf_xmalloc(sizeof(int) * (size_t)gpus);
    for (int i = 0; i < gpus; i++)
      order[i] = i;
    struct fab_rng rng;
    fab_rng_seed(&rng, seed ^ UINT64_C(0x706c6163656d656e)); /* a stream of its own: "placemen" */
    fab_rng_shuffle(&rng, order, gpus);
    int next = 0;
    for (int j = 0; j < n_jobs; j++)
      for (int r = 0; r < sizes[j]; r++)
        rank_gpu[j][r] = order[next++];
    free(order);
    break;
  }
  case PLACE_RAIL_ALIGNED:
  case PLACE_FRAGMENTED: {
    /* The nodes each job gets, in order; then rank r on local GPU r mod g of node r / g. */
    int *need = sgf_xmalloc(sizeof(int) * (size_t)n_jobs), *got = sgf_xcalloc((size_t)n_jobs, sizeof(int));
    int **job_nodes = sgf_xmalloc(sizeof(int *) * (size_t)n_jobs);
    for (int j = 0; j < n_jobs; j++) {
      need[j] = (sizes[j] + g - 1) / g;
      job_nodes[j] = sgf_xmalloc(sizeof(int) * (size_t)(need[j] ? need[j] : 1));
    }
    int node = 0;
    if (p == PLACE_RAIL_ALIGNED) {
      for (int j = 0; j < n_jobs; j++)
        while (got[j] < need[j])
          job_nodes[j][got[j]++] = node++;
    } else {
      for (int placed = 0; placed < nodes_needed;)
        for (int j = 0; j < n_jobs; j++)
          if (got[j] < need[j]) {
            job_nodes[j][got[j]++] = node++;
            placed++;
          }
    }
    for (int j = 0; j < n_jobs; j++) {
      for (int r = 0; r < sizes[j]; r++)
        rank_gpu[j][r] = job_nodes[j][r / g] * g + r % g;
      free(job_nodes[j]);
    }
    free(job_nodes);
    free(need);
    free(got);
    break;
  }
  }
  return 0;
}
