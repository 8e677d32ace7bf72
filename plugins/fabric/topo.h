/* The fabric's topology graph: GPUs, NVSwitches and switches joined by full-duplex links.
 *
 * A full-duplex link is two ports, one at each end; a port is the egress side of one direction
 * (it owns a queue and a serialiser in the packet engine, a capacity in the flow engine). Ports
 * of a node are contiguous. Nodes carry a level: GPUs and NVSwitches 0, leaves 1, spines or
 * aggregation switches 2, cores 3; "up" means toward a higher level. */
#ifndef SGFABRIC_TOPO_H
#define SGFABRIC_TOPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TOPO_GPU, TOPO_NVSWITCH, TOPO_SWITCH } topo_node_kind;

struct topo_node {
  char name[24];
  topo_node_kind kind;
  int level;      /* 0 GPU/NVSwitch, 1 leaf, 2 spine/aggregation, 3 core */
  int index;      /* GPU index for GPUs, node index for NVSwitches, -1 for switches */
  int first_port; /* ports [first_port, first_port + port_count) belong to this node */
  int port_count;
  int leaf_index; /* leaves: 0..n_leaves-1; others -1 */
  int src_line;   /* line of the platform file that declared it (0 if built in memory) */
};

struct topo_port {
  int node;          /* node that transmits on this port */
  int peer_node;     /* node at the other end */
  int peer_port;     /* the reverse direction (the peer's port back to us) */
  int link;          /* the full-duplex link this port belongs to */
  double rate_Bps;   /* line rate, bytes per second */
  double latency_s;  /* propagation delay of the link */
  uint8_t is_up;     /* peer is at a higher level */
  uint8_t is_nvlink; /* an intra-node NVLink port: never part of the fabric's counters */
};

struct topo_link {
  char name[64]; /* "gpu3--leaf0", lower end first */
  int port[2];   /* port[0] transmits from the lower end, port[1] from the upper end */
  int src_line;
};

struct topo {
  struct topo_node *nodes;
  struct topo_port *ports;
  struct topo_link *links;
  int n_nodes, n_ports, n_links;
  int n_gpus, gpus_per_node, n_leaves, max_level;
  int *gpu_node;     /* GPU index -> node id */
  int *gpu_nic_port; /* GPU index -> port toward its leaf, or -1 */
  int *gpu_nvl_port; /* GPU index -> port toward its NVSwitch, or -1 */
  int *gpu_leaf;     /* GPU index -> leaf index, or -1 */
  int *leaf_node;    /* leaf index -> node id */
  int *up_ports;     /* every node's up ports (is_up), node by node, each in port order */
  int *up_first;     /* node id -> its first entry in up_ports; up_first[n_nodes]: the total */
  int *down_row;     /* node id -> its row of down_port (switches above the leaves), or -1 */
  int *down_port;    /* [row x n_leaves]: the one down port toward the leaf on the fault-free
                      * fabric, -1 none, -2 several (routing scans the ports) */
  uint64_t *downset; /* per node, a bitset of the leaves reachable by going only down */
  int downset_words;
  double switch_latency_s;
  double nvswitch_latency_s;
  /* Failures (failure.h): per port, whether the routing knows it is down and avoids it (both
   * ports of a failed link are marked). NULL when no failure was ever scheduled: the routing is
   * then exactly the fault-free one. */
  uint8_t *route_down;
};

/* Building: add nodes, then links (by node id), then fab_topo_finalize(). */
struct topo *fab_topo_new(void);
int fab_topo_add_node(struct topo *t, const char *name, topo_node_kind kind, int level, int index, int line);
int fab_topo_find_node(const struct topo *t, const char *name);
int fab_topo_add_link(struct topo *t, int lower, int upper, double rate_Bps, double latency_s, const char *name,
                      int line);
/* Sorts ports by node, fills the GPU maps, numbers leaves and computes down-sets. Returns 0, or -1
 * with a message in err (a GPU without NIC, a switch without level, ...). */
int fab_topo_finalize(struct topo *t, char *err, size_t errlen);
void fab_topo_free(struct topo *t);
/* Recomputes the down-sets, leaving out links whose ports route_down marks (after a failure or a
 * repair the routing has learnt of). */
void fab_topo_compute_downsets(struct topo *t);

static inline int topo_downset_has(const struct topo *t, int node, int leaf)
{
  return (int)((t->downset[(size_t)node * t->downset_words + leaf / 64] >> (leaf % 64)) & 1);
}

/* Builds the small topologies tests need without a file: n_gpus GPUs (one per node), each on
 * its own port of a single switch, all links at rate and latency. */
struct topo *fab_topo_single_switch(int n_gpus, double rate_Bps, double latency_s, double switch_latency_s);

#ifdef __cplusplus
}
#endif

#endif
