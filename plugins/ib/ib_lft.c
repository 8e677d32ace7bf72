/* D-mod-K linear forwarding tables on the fabric's fat-tree graph. */
#include "ib_lft.h"

#include <stdlib.h>

#include "route.h"

int ib_lft_init(struct ib_lft *l, const struct topo *t)
{
  l->rank = calloc((size_t)t->n_gpus + 1, sizeof *l->rank);
  if (l->rank == NULL)
    return -1;
  int per_leaf = 0;
  for (int leaf = 0; leaf < t->n_leaves; leaf++) {
    const struct topo_node *n = &t->nodes[t->leaf_node[leaf]];
    int count = 0;
    for (int p = n->first_port; p < n->first_port + n->port_count; p++)
      if (t->nodes[t->ports[p].peer_node].kind == TOPO_GPU)
        count++;
    if (count > per_leaf)
      per_leaf = count;
  }
  for (int g = 0; g < t->n_gpus; g++)
    l->rank[g] = g;
  for (int leaf = 0; leaf < t->n_leaves; leaf++) {
    const struct topo_node *n = &t->nodes[t->leaf_node[leaf]];
    int pos = 0;
    for (int p = n->first_port; p < n->first_port + n->port_count; p++) {
      const struct topo_node *peer = &t->nodes[t->ports[p].peer_node];
      if (peer->kind == TOPO_GPU)
        l->rank[peer->index] = leaf * per_leaf + pos++;
    }
  }
  int up[IB_LFT_MAX_LEVELS] = { 0 };
  for (int i = 0; i < t->n_nodes; i++) {
    const struct topo_node *n = &t->nodes[i];
    if (n->kind != TOPO_SWITCH || n->level <= 0 || n->level >= IB_LFT_MAX_LEVELS || up[n->level] > 0)
      continue;
    for (int p = n->first_port; p < n->first_port + n->port_count; p++)
      up[n->level] += t->ports[p].is_up;
  }
  l->divisor[0] = l->divisor[1] = 1;
  for (int k = 2; k < IB_LFT_MAX_LEVELS; k++)
    l->divisor[k] = l->divisor[k - 1] * (up[k - 1] > 0 ? up[k - 1] : 1);
  return 0;
}

void ib_lft_free(struct ib_lft *l)
{
  free(l->rank);
  l->rank = NULL;
}

int ib_lft_pick(const struct ib_lft *l, const struct topo *t, int node, int dst_gpu, const int *cand, int n)
{
  if (n <= 1)
    return 0;
  int level = t->nodes[node].level;
  int rank = l->rank[dst_gpu];
  if (t->ports[cand[0]].is_up && level > 0 && level < IB_LFT_MAX_LEVELS)
    return (rank / l->divisor[level]) % n;
  return rank % n;
}

int ib_lft_path(const struct ib_lft *l, const struct topo *t, int src_gpu, int dst_gpu, int *ports, int max)
{
  int cand[ROUTE_MAX_CANDIDATES];
  int node = t->gpu_node[src_gpu];
  int dst_node = t->gpu_node[dst_gpu];
  int hops = 0;
  while (node != dst_node) {
    int n = fab_route_candidates(t, node, dst_gpu, cand, ROUTE_MAX_CANDIDATES);
    if (n == 0 || hops == max)
      return -1;
    int port = cand[ib_lft_pick(l, t, node, dst_gpu, cand, n)];
    ports[hops++] = port;
    node = t->ports[port].peer_node;
  }
  return hops;
}
