/* Import of SimAI/AICB workload files ("simai:FILE") into a wl_trace with fixed durations.
 * The mapping is documented in docs/workload-format.md, section "SimAI/AICB import". */
#ifndef SGFABRIC_WL_SIMAI_H
#define SGFABRIC_WL_SIMAI_H

#include <stddef.h>

#include "wl_trace.h"

/* Returns the trace, or NULL with "FILE:LINE: message" in err. platform_gpus (> 0) is the job
 * size when the header has no all_gpus (AICB's published files omit it); 0 refuses such files.
 * Header fields SimAI does not read are ignored with one warning on stderr. */
struct wl_trace *wl_simai_load(const char *path, int platform_gpus, char *err, size_t errlen);
/* The same from an open stream (named path in messages); the caller closes it. */
struct wl_trace *wl_simai_read(FILE *in, const char *path, int platform_gpus, char *err, size_t errlen);

/* Parses a SimAI comm type ("ALLGATHER_DP_EP"); default_group applies without a suffix.
 * Returns 0, or -1 for an unknown type. NONE gives WL_COLL_NONE. */
int wl_simai_comm_type(const char *s, enum wl_group default_group, enum wl_coll *coll, enum wl_group *group);

/* Finds ga repeated micro-batch blocks in nrows rows: the longest len, then the smallest
 * prologue, such that rows [prologue, prologue + ga·len) are ga copies of one sequence of len
 * rows (alike(i, j, ctx) says whether rows i and j match) and cover more than half the rows.
 * Returns 1 when found, 0 otherwise (always 0 for ga < 2). */
int wl_simai_find_blocks(int nrows, int ga, int (*alike)(int i, int j, void *ctx), void *ctx, int *prologue,
                         int *block_len);

#endif
