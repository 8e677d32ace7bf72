/* Import of Chakra execution traces ("chakra:PREFIX"): ASTRA-sim's workload format, one file
 * per rank, PREFIX.0.et, PREFIX.1.et, ... Each file is a sequence of messages of the Chakra
 * schema (MLCommons Chakra, schema/protobuf/et_def.proto), each preceded by its length as a
 * protobuf varint: one GlobalMetadata, then the rank's Nodes. The mapping onto sgfabric's ops and
 * groups is documented in docs/workload-format.md, section "Chakra execution traces". */
#ifndef SGFABRIC_WL_CHAKRA_H
#define SGFABRIC_WL_CHAKRA_H

#include <stddef.h>

#include "wl_trace.h"

/* At most this many rank files (PREFIX.0.et .. PREFIX.65535.et). */
#define WL_CHAKRA_MAX_RANKS 65536

/* Whether this build reads Chakra traces (protoc-c and libprotobuf-c were found). */
int wl_chakra_supported(void);

/* Reads PREFIX.0.et, PREFIX.1.et, ... up to the first missing index; returns the trace (one
 * program per rank, see wl_trace.rank_programs), or NULL with "FILE: byte N: message" or
 * "FILE: message" in err. */
struct wl_trace *wl_chakra_load(const char *prefix, char *err, size_t errlen);

#endif
