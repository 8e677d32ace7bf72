/* Import of SimAI/AICB workload files ("simai:FILE") into a wl_trace with fixed durations.
 * The mapping is documented in docs/workload-format.md, section "SimAI/AICB import". */
#ifndef SGFABRIC_WL_SIMAI_H
#define SGFABRIC_WL_SIMAI_H

#include <stddef.h>

#include "wl_trace.h"

/* Returns the trace, or NULL with "FILE:LINE: message" in err. */
struct wl_trace *wl_simai_load(const char *path, char *err, size_t errlen);
/* The same from an open stream (named path in messages); the caller closes it. */
struct wl_trace *wl_simai_read(FILE *in, const char *path, char *err, size_t errlen);

/* Parses a SimAI comm type ("ALLGATHER_DP_EP"); default_group applies without a suffix.
 * Returns 0, or -1 for an unknown type. NONE gives WL_COLL_NONE. */
int wl_simai_comm_type(const char *s, enum wl_group default_group, enum wl_coll *coll,
                       enum wl_group *group);

#endif
