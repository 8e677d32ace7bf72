/* Topology graph construction. */
#include "topo.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Links are collected as (lower, upper) node pairs and turned into ports at finalize. */
struct pending_link {
  int lower, upper;
  double rate_Bps, latency_s;
};

struct topo_build {
  struct pending_link *links;
  int count, capacity;
  int *name_index; /* open-addressing hash of node names -> node id + 1 */
  size_t name_slots;
  int node_capacity;
};

struct topo_with_build {
  struct topo topo;
  struct topo_build build;
};

static struct topo_build *build_of(struct topo *t) { return &((struct topo_with_build *)t)->build; }

static void *xrealloc(void *p, size_t bytes)
{
  void *q = sgf_xrealloc(p, bytes);
  return q;
}

static uint64_t name_hash(const char *s)
{
  uint64_t h = 1469598103934665603ULL;
  while (*s)
    h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
  return h;
}

struct topo *fab_topo_new(void)
{
  struct topo_with_build *tb = sgf_xcalloc(1, sizeof *tb);
  tb->build.name_slots = 1024;
  tb->build.name_index = calloc(tb->build.name_slots, sizeof(int));
  return &tb->topo;
}

static void rehash(struct topo *t)
{
  struct topo_build *b = build_of(t);
  size_t slots = b->name_slots * 2;
  int *index = calloc(slots, sizeof(int));
  for (int i = 0; i < t->n_nodes; i++) {
    size_t h = name_hash(t->nodes[i].name) & (slots - 1);
    while (index[h])
      h = (h + 1) & (slots - 1);
    index[h] = i + 1;
  }
  free(b->name_index);
  b->name_index = index;
  b->name_slots = slots;
}

int fab_topo_find_node(const struct topo *t, const char *name)
{
  struct topo_build *b = build_of((struct topo *)t);
  if (b->name_index == NULL) {
    for (int i = 0; i < t->n_nodes; i++)
      if (strcmp(t->nodes[i].name, name) == 0)
        return i;
    return -1;
  }
  size_t h = name_hash(name) & (b->name_slots - 1);
  while (b->name_index[h]) {
    int id = b->name_index[h] - 1;
    if (strcmp(t->nodes[id].name, name) == 0)
      return id;
    h = (h + 1) & (b->name_slots - 1);
  }
  return -1;
}

int fab_topo_add_node(struct topo *t, const char *name, topo_node_kind kind, int level, int index, int line)
{
  struct topo_build *b = build_of(t);
  if (strlen(name) >= sizeof t->nodes[0].name || fab_topo_find_node(t, name) >= 0)
    return -1;
  if (t->n_nodes == b->node_capacity) {
    b->node_capacity = b->node_capacity ? 2 * b->node_capacity : 256;
    t->nodes = xrealloc(t->nodes, (size_t)b->node_capacity * sizeof *t->nodes);
  }
  if ((size_t)(t->n_nodes + 1) * 2 > b->name_slots)
    rehash(t);
  struct topo_node *n = &t->nodes[t->n_nodes];
  memset(n, 0, sizeof *n);
  strcpy(n->name, name);
  n->kind = kind;
  n->level = level;
  n->index = index;
  n->leaf_index = -1;
  n->src_line = line;
  size_t h = name_hash(name) & (b->name_slots - 1);
  while (b->name_index[h])
    h = (h + 1) & (b->name_slots - 1);
  b->name_index[h] = t->n_nodes + 1;
  return t->n_nodes++;
}

int fab_topo_add_link(struct topo *t, int lower, int upper, double rate_Bps, double latency_s, const char *name,
                      int line)
{
  struct topo_build *b = build_of(t);
  if (lower < 0 || upper < 0 || lower >= t->n_nodes || upper >= t->n_nodes || lower == upper)
    return -1;
  if (b->count == b->capacity) {
    b->capacity = b->capacity ? 2 * b->capacity : 256;
    b->links = xrealloc(b->links, (size_t)b->capacity * sizeof *b->links);
    t->links = xrealloc(t->links, (size_t)b->capacity * sizeof *t->links);
  }
  b->links[b->count] = (struct pending_link){ lower, upper, rate_Bps, latency_s };
  struct topo_link *l = &t->links[b->count];
  memset(l, 0, sizeof *l);
  if (name)
    snprintf(l->name, sizeof l->name, "%s", name);
  else
    snprintf(l->name, sizeof l->name, "%s--%s", t->nodes[lower].name, t->nodes[upper].name);
  l->src_line = line;
  b->count++;
  t->n_links = b->count;
  return b->count - 1;
}

static int down_ports_build(struct topo *t);

int fab_topo_finalize(struct topo *t, char *err, size_t errlen)
{
  struct topo_build *b = build_of(t);
  int n_ports = 2 * b->count;
  int *degree = calloc((size_t)t->n_nodes + 1, sizeof(int));
  for (int i = 0; i < b->count; i++) {
    degree[b->links[i].lower]++;
    degree[b->links[i].upper]++;
  }
  int offset = 0;
  for (int i = 0; i < t->n_nodes; i++) {
    t->nodes[i].first_port = offset;
    t->nodes[i].port_count = 0;
    offset += degree[i];
  }
  free(degree);
  t->ports = xrealloc(t->ports, (size_t)n_ports * sizeof *t->ports);
  t->n_ports = n_ports;
  /* Ports keep the order of links in the file, so port numbering is reproducible. */
  for (int i = 0; i < b->count; i++) {
    const struct pending_link *pl = &b->links[i];
    struct topo_node *lo = &t->nodes[pl->lower], *up = &t->nodes[pl->upper];
    int p_lo = lo->first_port + lo->port_count++;
    int p_up = up->first_port + up->port_count++;
    int nvlink = lo->kind == TOPO_NVSWITCH || up->kind == TOPO_NVSWITCH;
    t->ports[p_lo] = (struct topo_port){
      pl->lower, pl->upper, p_up, i, pl->rate_Bps, pl->latency_s, (uint8_t)(up->level > lo->level), (uint8_t)nvlink
    };
    t->ports[p_up] = (struct topo_port){
      pl->upper, pl->lower, p_lo, i, pl->rate_Bps, pl->latency_s, (uint8_t)(lo->level > up->level), (uint8_t)nvlink
    };
    t->links[i].port[0] = p_lo;
    t->links[i].port[1] = p_up;
  }

  t->n_gpus = 0;
  t->n_leaves = 0;
  t->max_level = 0;
  for (int i = 0; i < t->n_nodes; i++) {
    if (t->nodes[i].kind == TOPO_GPU && t->nodes[i].index + 1 > t->n_gpus)
      t->n_gpus = t->nodes[i].index + 1;
    if (t->nodes[i].level > t->max_level)
      t->max_level = t->nodes[i].level;
    if (t->nodes[i].kind == TOPO_SWITCH && t->nodes[i].level == 1)
      t->nodes[i].leaf_index = t->n_leaves++;
  }
  free(t->gpu_node);
  free(t->gpu_nic_port);
  free(t->gpu_nvl_port);
  free(t->gpu_leaf);
  free(t->leaf_node);
  t->gpu_node = malloc(sizeof(int) * (size_t)(t->n_gpus + 1));
  t->gpu_nic_port = malloc(sizeof(int) * (size_t)(t->n_gpus + 1));
  t->gpu_nvl_port = malloc(sizeof(int) * (size_t)(t->n_gpus + 1));
  t->gpu_leaf = malloc(sizeof(int) * (size_t)(t->n_gpus + 1));
  t->leaf_node = malloc(sizeof(int) * (size_t)(t->n_leaves + 1));
  for (int g = 0; g < t->n_gpus; g++)
    t->gpu_node[g] = t->gpu_nic_port[g] = t->gpu_nvl_port[g] = t->gpu_leaf[g] = -1;
  for (int i = 0; i < t->n_nodes; i++) {
    struct topo_node *n = &t->nodes[i];
    if (n->leaf_index >= 0)
      t->leaf_node[n->leaf_index] = i;
    if (n->kind != TOPO_GPU)
      continue;
    if (t->gpu_node[n->index] >= 0) {
      snprintf(err, errlen, "GPU index %d is declared twice ('%s' and '%s')", n->index,
               t->nodes[t->gpu_node[n->index]].name, n->name);
      return -1;
    }
    t->gpu_node[n->index] = i;
    for (int p = n->first_port; p < n->first_port + n->port_count; p++) {
      const struct topo_node *peer = &t->nodes[t->ports[p].peer_node];
      if (peer->kind == TOPO_NVSWITCH) {
        if (t->gpu_nvl_port[n->index] >= 0) {
          snprintf(err, errlen, "GPU '%s' has more than one NVLink port", n->name);
          return -1;
        }
        t->gpu_nvl_port[n->index] = p;
      } else if (peer->kind == TOPO_SWITCH) {
        if (t->gpu_nic_port[n->index] >= 0) {
          snprintf(err, errlen, "GPU '%s' has more than one NIC link (one NIC per GPU)", n->name);
          return -1;
        }
        if (peer->level != 1) {
          snprintf(err, errlen, "GPU '%s' is linked to '%s', which is not a leaf switch", n->name, peer->name);
          return -1;
        }
        t->gpu_nic_port[n->index] = p;
        t->gpu_leaf[n->index] = peer->leaf_index;
      } else {
        snprintf(err, errlen, "GPU '%s' is linked directly to GPU '%s'", n->name, peer->name);
        return -1;
      }
    }
  }
  for (int g = 0; g < t->n_gpus; g++)
    if (t->gpu_node[g] < 0) {
      snprintf(err, errlen, "GPU index %d is missing (GPUs must be numbered 0..%d)", g, t->n_gpus - 1);
      return -1;
    }

  /* Each node's up ports in one list: the way up from a switch is every one of them (routing's
   * most frequent question, which otherwise reads every port of the node). */
  free(t->up_ports);
  free(t->up_first);
  t->up_ports = malloc(sizeof(int) * (size_t)(t->n_ports + 1));
  t->up_first = malloc(sizeof(int) * (size_t)(t->n_nodes + 1));
  if (t->up_ports == NULL || t->up_first == NULL) {
    snprintf(err, errlen, "out of memory for the up ports of %d nodes", t->n_nodes);
    return -1;
  }
  int n_up = 0;
  for (int i = 0; i < t->n_nodes; i++) {
    t->up_first[i] = n_up;
    for (int p = t->nodes[i].first_port; p < t->nodes[i].first_port + t->nodes[i].port_count; p++)
      if (t->ports[p].is_up)
        t->up_ports[n_up++] = p;
  }
  t->up_first[t->n_nodes] = n_up;

  /* Down-sets, level by level from the leaves up: a switch reaches by going down exactly the
   * leaves its children reach. Fat-tree routing is "down if the destination leaf is in my
   * down-set, up otherwise", which yields every minimal up-down path. */
  t->downset_words = (t->n_leaves + 63) / 64;
  if (t->downset_words == 0)
    t->downset_words = 1;
  free(t->downset);
  t->downset = calloc((size_t)t->n_nodes * t->downset_words, sizeof(uint64_t));
  fab_topo_compute_downsets(t);
  if (down_ports_build(t) != 0) {
    snprintf(err, errlen, "out of memory for the down ports of %d nodes", t->n_nodes);
    return -1;
  }
  free(b->links);
  b->links = NULL;
  b->count = b->capacity = 0;
  return 0;
}

/* For each switch above the leaves, the down port toward each leaf when there is one only (a
 * fat-tree's usual case): routing's way down then reads one entry instead of testing every port's
 * down-set. Built from the fault-free down-sets; routing uses it only while no link is down. */
static int down_ports_build(struct topo *t)
{
  free(t->down_row);
  free(t->down_port);
  t->down_row = malloc(sizeof(int) * (size_t)(t->n_nodes + 1));
  if (t->down_row == NULL)
    return -1;
  int rows = 0;
  for (int i = 0; i < t->n_nodes; i++)
    t->down_row[i] = t->nodes[i].kind == TOPO_SWITCH && t->nodes[i].level >= 2 ? rows++ : -1;
  t->down_port = malloc(sizeof(int) * ((size_t)rows * (size_t)t->n_leaves + 1));
  if (t->down_port == NULL)
    return -1;
  for (size_t k = 0; k < (size_t)rows * (size_t)t->n_leaves; k++)
    t->down_port[k] = -1;
  for (int i = 0; i < t->n_nodes; i++) {
    if (t->down_row[i] < 0)
      continue;
    int *row = &t->down_port[(size_t)t->down_row[i] * (size_t)t->n_leaves];
    const struct topo_node *n = &t->nodes[i];
    for (int p = n->first_port; p < n->first_port + n->port_count; p++) {
      const struct topo_port *port = &t->ports[p];
      if (port->is_up || t->nodes[port->peer_node].kind != TOPO_SWITCH)
        continue;
      const uint64_t *set = &t->downset[(size_t)port->peer_node * t->downset_words];
      for (int w = 0; w < t->downset_words; w++)
        for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1) {
          int leaf = w * 64 + __builtin_ctzll(bits);
          row[leaf] = row[leaf] == -1 ? p : -2;
        }
    }
  }
  return 0;
}

void fab_topo_compute_downsets(struct topo *t)
{
  memset(t->downset, 0, (size_t)t->n_nodes * t->downset_words * sizeof(uint64_t));
  for (int level = 1; level <= t->max_level; level++)
    for (int i = 0; i < t->n_nodes; i++) {
      struct topo_node *n = &t->nodes[i];
      if (n->kind != TOPO_SWITCH || n->level != level)
        continue;
      uint64_t *mine = &t->downset[(size_t)i * t->downset_words];
      if (level == 1)
        mine[n->leaf_index / 64] |= 1ULL << (n->leaf_index % 64);
      for (int p = n->first_port; p < n->first_port + n->port_count; p++) {
        int peer = t->ports[p].peer_node;
        if (t->nodes[peer].kind != TOPO_SWITCH || t->nodes[peer].level >= level)
          continue;
        if (t->route_down != NULL && t->route_down[p])
          continue; /* the routing knows this link is down: nothing below it is reached through it */
        const uint64_t *child = &t->downset[(size_t)peer * t->downset_words];
        for (int w = 0; w < t->downset_words; w++)
          mine[w] |= child[w];
      }
    }
}

void fab_topo_free(struct topo *t)
{
  if (t == NULL)
    return;
  struct topo_build *b = build_of(t);
  free(b->links);
  free(b->name_index);
  free(t->nodes);
  free(t->ports);
  free(t->links);
  free(t->gpu_node);
  free(t->gpu_nic_port);
  free(t->gpu_nvl_port);
  free(t->gpu_leaf);
  free(t->leaf_node);
  free(t->up_ports);
  free(t->up_first);
  free(t->down_row);
  free(t->down_port);
  free(t->downset);
  free(t->route_down);
  free(t);
}

struct topo *fab_topo_single_switch(int n_gpus, double rate_Bps, double latency_s, double switch_latency_s)
{
  struct topo *t = fab_topo_new();
  char name[24];
  int sw = fab_topo_add_node(t, "leaf0", TOPO_SWITCH, 1, -1, 0);
  for (int g = 0; g < n_gpus; g++) {
    snprintf(name, sizeof name, "gpu%d", g);
    int id = fab_topo_add_node(t, name, TOPO_GPU, 0, g, 0);
    fab_topo_add_link(t, id, sw, rate_Bps, latency_s, NULL, 0);
  }
  t->gpus_per_node = 1;
  t->switch_latency_s = switch_latency_s;
  char err[128];
  SGF_CHECK(fab_topo_finalize(t, err, sizeof err) == 0, "%s", err);
  return t;
}
