/* Fat-tree routing: the minimal up-down next hops toward a GPU, and the two choices the models
 * make among them.
 *
 * At a switch whose down-set holds the destination's leaf the packet goes down (toward the
 * children that reach that leaf), otherwise up (any up-port: in a fat-tree every ancestor
 * reaches every leaf, so every up-port lies on a minimal path). The models choose among the
 * candidates: per flow with a hash (ECMP, static LFT-like) or per packet (adaptive). */
#ifndef SGFABRIC_ROUTE_H
#define SGFABRIC_ROUTE_H

#include <stdint.h>

#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ROUTE_MAX_CANDIDATES 256
#define ROUTE_MAX_HOPS 8

/* Candidate egress ports at node toward dst_gpu, in port order. Returns their count (0 at the
 * destination itself). */
int fab_route_candidates(const struct topo *t, int node, int dst_gpu, int *out, int max);

/* Number of port hops on a minimal path between two GPUs (NVLink: 2). */
int fab_route_hops(const struct topo *t, int src_gpu, int dst_gpu);

/* The per-flow path obtained by choosing, at each node with several candidates, the candidate
 * numbered hash(flow_key, node) mod count. Writes the egress ports and returns the hop count,
 * or -1 if the destination cannot be reached (a disconnected platform). */
int fab_route_hashed_path(const struct topo *t, int src_gpu, int dst_gpu, uint64_t flow_key, uint64_t seed, int *ports,
                          int max_ports);

/* The hash that picks candidate index for (flow_key, node): seeded per switch, as ECMP
 * hardware seeds its hash per switch to avoid polarisation. */
static inline uint32_t route_pick(uint64_t flow_key, uint64_t seed, int node, int count)
{
  uint64_t x = flow_key ^ (seed * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(unsigned)node << 32);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return (uint32_t)(x % (uint64_t)count);
}

#ifdef __cplusplus
}
#endif

#endif
