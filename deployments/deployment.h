/* Rank placement: which GPU runs which rank, as a SimGrid deployment file.
 *
 * The default placement is linear (rank r on gpu r). With Megatron's rank order (tp fastest)
 * that keeps each tensor-parallel group inside a node, on NVLink, as long as tp divides the
 * GPUs per node, and puts the members of data- and pipeline-parallel groups on the same local
 * GPU index of their nodes, that is on the same rail of a rail-optimized fabric. */
#ifndef SGFABRIC_DEPLOYMENT_H
#define SGFABRIC_DEPLOYMENT_H

#include <stddef.h>

/* The linear placement of n ranks. The caller frees it. */
int *deployment_linear(int n);
/* Writes the SimGrid deployment XML (<actor host="gpuG" function="rank"><argument value="R"/>)
 * atomically. Returns 0 or -1 with a message. */
int deployment_write(const char *path, const int *rank_gpu, int n, const char *comment, char *err, size_t errlen);
/* Reads a deployment: every rank 0..n_ranks-1 exactly once, on distinct GPUs below n_gpus.
 * Returns the placement (caller frees) or NULL with "FILE:LINE: message". */
int *deployment_load(const char *path, int n_ranks, int n_gpus, char *err, size_t errlen);
/* The same from len bytes of text (named path in messages). */
int *deployment_parse(const char *text, size_t len, const char *path, int n_ranks, int n_gpus, char *err,
                      size_t errlen);

#endif
