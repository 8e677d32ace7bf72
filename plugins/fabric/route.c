/* Fat-tree up-down routing on the topology graph. */
#include "route.h"

/* Whether a packet at switch node can still reach leaf over links the routing knows are up:
 * down through its (live) down-set, or up through a live up-port to a switch that can. Only asked
 * when a failure marked ports down (t->route_down): a fat-tree without failures reaches every leaf
 * from every ancestor. */
static int live_reaches(const struct topo *t, int node, int leaf, int depth)
{
  if (topo_downset_has(t, node, leaf))
    return 1;
  if (depth > ROUTE_MAX_HOPS)
    return 0;
  for (int k = t->up_first[node]; k < t->up_first[node + 1]; k++) {
    int p = t->up_ports[k];
    if (!t->route_down[p] && live_reaches(t, t->ports[p].peer_node, leaf, depth + 1))
      return 1;
  }
  return 0;
}

static int port_down(const struct topo *t, int port) { return t->route_down != NULL && t->route_down[port]; }

int fab_route_candidates(const struct topo *t, int node, int dst_gpu, int *out, int max)
{
  const struct topo_node *n = &t->nodes[node];
  int dst_node = t->gpu_node[dst_gpu];
  if (node == dst_node)
    return 0;
  int count = 0;
  switch (n->kind) {
  case TOPO_GPU: {
    int same_host = t->gpus_per_node > 0 && n->index / t->gpus_per_node == dst_gpu / t->gpus_per_node;
    int port = same_host && t->gpu_nvl_port[n->index] >= 0 ? t->gpu_nvl_port[n->index] : t->gpu_nic_port[n->index];
    if (port >= 0 && !port_down(t, port) && count < max)
      out[count++] = port;
    return count;
  }
  case TOPO_NVSWITCH: {
    /* A GPU has at most one NVLink port (fab_topo_finalize): the only port of an NVSwitch toward
     * it is the way back of that port, if it ends here. */
    int up = t->gpu_nvl_port[dst_gpu];
    if (up >= 0 && t->ports[up].peer_node == node && !port_down(t, t->ports[up].peer_port) && count < max)
      out[count++] = t->ports[up].peer_port;
    return count;
  }
  case TOPO_SWITCH:
  default: break;
  }
  int leaf = t->gpu_leaf[dst_gpu];
  if (leaf < 0)
    return 0;
  if (topo_downset_has(t, node, leaf)) {
    if (n->level == 1) {
      int p = t->ports[t->gpu_nic_port[dst_gpu]].peer_port;
      if (!port_down(t, p) && count < max)
        out[count++] = p;
      return count;
    }
    int row = t->route_down == NULL && t->down_row ? t->down_row[node] : -1;
    if (row >= 0) { /* the fault-free fabric's one way down, when there is one */
      int p = t->down_port[(size_t)row * (size_t)t->n_leaves + (size_t)leaf];
      if (p >= 0) {
        if (max > 0)
          out[count++] = p;
        return count;
      }
    }
    for (int p = n->first_port; p < n->first_port + n->port_count && count < max; p++) {
      const struct topo_port *port = &t->ports[p];
      if (!port->is_up && t->nodes[port->peer_node].kind == TOPO_SWITCH && topo_downset_has(t, port->peer_node, leaf) &&
          !port_down(t, p))
        out[count++] = p;
    }
    return count;
  }
  for (int k = t->up_first[node]; k < t->up_first[node + 1] && count < max; k++) {
    int p = t->up_ports[k];
    if (t->route_down == NULL || (!t->route_down[p] && live_reaches(t, t->ports[p].peer_node, leaf, 0)))
      out[count++] = p;
  }
  return count;
}

int fab_route_hashed_path(const struct topo *t, int src_gpu, int dst_gpu, uint64_t flow_key, uint64_t seed, int *ports,
                          int max_ports)
{
  int candidates[ROUTE_MAX_CANDIDATES];
  int node = t->gpu_node[src_gpu];
  int dst_node = t->gpu_node[dst_gpu];
  int hops = 0;
  while (node != dst_node) {
    int n = fab_route_candidates(t, node, dst_gpu, candidates, ROUTE_MAX_CANDIDATES);
    if (n == 0 || hops == max_ports)
      return -1;
    int pick = n == 1 ? 0 : (int)route_pick(flow_key, seed, node, n);
    ports[hops++] = candidates[pick];
    node = t->ports[candidates[pick]].peer_node;
  }
  return hops;
}

int fab_route_hops(const struct topo *t, int src_gpu, int dst_gpu)
{
  int ports[ROUTE_MAX_HOPS];
  return fab_route_hashed_path(t, src_gpu, dst_gpu, 0, 0, ports, ROUTE_MAX_HOPS);
}
