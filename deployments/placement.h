/* Placement of several jobs on one platform: which GPU runs each rank of each job, by a policy a
 * cluster scheduler would follow.
 *
 *   contiguous    GPU by GPU in index order: job 0's ranks on GPUs 0..n0-1, job 1's next, and so
 *                 on; a job may start in the middle of a node (its local ranks then sit on other
 *                 rails than their index says);
 *   rail-aligned  whole nodes in index order: rank r of a job on local GPU r mod G of the job's
 *                 (r / G)-th node (G GPUs per node), so every job's rank r uses rail r mod G;
 *   fragmented    whole nodes dealt round-robin between the jobs (node 0 to job 0, node 1 to job
 *                 1, ...): each job is scattered over the fabric as on a long-running cluster,
 *                 rails kept as in rail-aligned;
 *   random        every rank on a GPU drawn at random (a seeded shuffle of the platform's GPUs,
 *                 the jobs taking consecutive slices): the worst case for locality.
 *
 * One job with contiguous placement is rank r on GPU r, the default of sgfabric run. */
#ifndef SGFABRIC_PLACEMENT_H
#define SGFABRIC_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

enum placement_policy { PLACE_CONTIGUOUS, PLACE_RAIL_ALIGNED, PLACE_FRAGMENTED, PLACE_RANDOM };

/* The policy named name; -1 with the names in err when it is none of them. */
int placement_parse(const char *name, enum placement_policy *out, char *err, size_t errlen);
const char *placement_name(enum placement_policy p);

/* Places n_jobs jobs of sizes[j] ranks on gpus GPUs of gpus_per_node each: rank_gpu[j] (allocated
 * here, freed by the caller) maps job j's ranks to GPUs, every GPU used at most once. seed drives
 * PLACE_RANDOM. Returns 0, or -1 with the reason in err (not enough GPUs, or not enough whole
 * nodes for a node-granular policy). */
int placement_place(enum placement_policy p, const int *sizes, int n_jobs, int gpus, int gpus_per_node, uint64_t seed,
                    int **rank_gpu, char *err, size_t errlen);

#endif
