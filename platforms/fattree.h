/* The fat-tree model: which GPUs, switches and links a platform holds, computed from a few
 * numbers. The generator writes it, the fabric's platform reader checks a file against it.
 *
 * Construction (docs/platforms.md, "Fat-tree construction", gives the formulas and sources):
 *   node n holds GPUs n*G .. n*G+G-1 and one NVSwitch nvs<n> (NVLink, outside the fabric);
 *   each GPU has one NIC on a leaf; a leaf has d down and u up ports, d/u = oversub[0];
 *   2 tiers: u spines, every leaf linked once to every spine;
 *   3 tiers: pods of P = dA leaves, u aggregation switches per pod, every leaf linked once to
 *   every aggregation switch of its pod; u groups of uA cores, aggregation switch a of every
 *   pod linked once to every core of group a.
 * Switch levels: GPU 0, NVSwitch 0 (not part of the fabric), leaf 1, spine/aggregation 2,
 * core 3. Pure C: no SimGrid, no libxml2.
 */
#ifndef SGFABRIC_FATTREE_H
#define SGFABRIC_FATTREE_H

#include <stddef.h>

enum {
  FATTREE_LEVEL_GPU = 0,
  FATTREE_LEVEL_NVSWITCH = 0,
  FATTREE_LEVEL_LEAF = 1,
  FATTREE_LEVEL_SPINE = 2, /* spine (2 tiers) or aggregation (3 tiers) */
  FATTREE_LEVEL_CORE = 3,
};

/* Size of a router or GPU name buffer (names are far shorter); a link name is two of them
 * joined by "--". */
#define FATTREE_NAME_MAX 64

struct fattree_spec {
  int gpus;                /* GPUs in the platform, a multiple of gpus_per_node */
  int gpus_per_node;       /* G: GPUs (and NICs) per node, sharing one NVSwitch */
  int tiers;               /* switch tiers: 2 (leaf, spine) or 3 (leaf, aggregation, core) */
  int radix;               /* ports per switch, all tiers */
  int rail_optimized;      /* 1: NIC i of every node goes to a rail-i leaf */
  double oversub[2];       /* down:up port ratio of the leaves, then of the aggregation switches */
  double link_rate_Bps;    /* every fabric link (NIC-leaf and switch-switch), per direction */
  double link_latency_s;   /* every fabric link */
  double nvlink_rate_Bps;  /* GPU-NVSwitch link per direction; 0: the GPU table's nvlink_Bps */
  double nvlink_latency_s; /* GPU-NVSwitch link */
  double switch_latency_s; /* forwarding latency of every switch, used by the fabric */
  char gpu[32];            /* GPU type, as found by gpu_type_find() */
};

/* Sizes derived from a spec (fattree_counts). */
struct fattree_counts {
  int nodes;         /* gpus / gpus_per_node */
  int leaves;        /* level-1 switches */
  int spines;        /* level-2 switches of a 2-tier tree (0 with 3 tiers) */
  int aggs;          /* level-2 switches of a 3-tier tree (0 with 2 tiers) */
  int cores;         /* level-3 switches (0 with 2 tiers) */
  int pods;          /* 3 tiers: leaf groups sharing aggregation switches; 2 tiers: 1 */
  int leaf_down;     /* d: leaf ports towards GPUs */
  int leaf_up;       /* u: leaf ports towards spines or aggregation switches */
  int agg_down;      /* dA = P: aggregation ports towards leaves (0 with 2 tiers) */
  int agg_up;        /* uA: aggregation ports towards cores (0 with 2 tiers) */
  long fabric_links; /* NIC-leaf plus switch-switch links */
  long nvlinks;      /* GPU-NVSwitch links (one per GPU) */
};

/* Callbacks of fattree_enumerate; any may be NULL. Names are only valid during the call. */
struct fattree_visitor {
  void (*gpu)(void *ctx, int gpu, int node, const char *name);
  void (*router)(void *ctx, const char *name, int level);
  /* lower is the end nearer the GPUs; the name is "<lower>--<upper>". */
  void (*link)(void *ctx, const char *name, const char *lower, const char *upper, double rate_Bps, double latency_s,
               int is_nvlink);
};

/* Fills the defaults: 8 GPUs per node, 2 tiers, radix 64, not rail-optimized, 1:1,
 * 400Gbps / 100ns links, the GPU's NVLink rate / 25ns, 130ns switches, H100. gpus is 0
 * and must be set. */
void fattree_spec_init(struct fattree_spec *spec);

/* Sets one parameter from text, key being a platform prop id without "sgfabric/" (and a CLI
 * option without "--"). Rates and times need a unit (units.h). format must be 1, topology
 * "fat-tree"; pgft and command are informative and ignored. Returns 0, -1 for a bad value
 * or -2 for an unknown key, with a message naming the key in err. Cross-field consistency is
 * left to fattree_spec_check. */
int fattree_spec_set(struct fattree_spec *spec, const char *key, const char *value, char *err, size_t errlen);

/* Returns 0 if the spec describes a buildable fat-tree, else -1 with a message in err that
 * names the offending option and why. Every other function refuses a spec this refuses. */
int fattree_spec_check(const struct fattree_spec *spec, char *err, size_t errlen);

/* The NVLink rate actually used: nvlink_rate_Bps, or the GPU table's if that is 0. */
double fattree_nvlink_rate(const struct fattree_spec *spec);

/* Returns 0 and fills counts, or -1 if the spec is refused. */
int fattree_counts(const struct fattree_spec *spec, struct fattree_counts *counts);

/* Leaf index of a GPU's NIC, or -1 (bad spec or GPU out of range). */
int fattree_leaf_of_gpu(const struct fattree_spec *spec, int gpu);

/* Pod of a leaf (0 with 2 tiers), or -1. */
int fattree_pod_of_leaf(const struct fattree_spec *spec, int leaf);

/* Calls the visitor for every GPU (in order), then every router (NVSwitches, leaves, spines
 * or aggregation switches, cores), then every link (NVLinks, NIC-leaf, leaf-level 2,
 * aggregation-core). Returns 0, or -1 (nothing visited) if the spec is refused. */
int fattree_enumerate(const struct fattree_spec *spec, const struct fattree_visitor *visitor, void *ctx);

/* Calls prop(ctx, key, value) for every sgfabric/ prop of the platform, key without the
 * "sgfabric/" prefix, values as fattree_spec_set reads them back. Returns 0 or -1. */
int fattree_props(const struct fattree_spec *spec, void (*prop)(void *ctx, const char *key, const char *value),
                  void *ctx);

/* The SimGrid FAT_TREE (PGFT) topo_parameters of the tree, "h;m1,..;w1,..;p1,..", with GPUs
 * as the hosts. Informative: rail optimization and a partial last leaf or pod are not
 * expressible in PGFT. Returns 0 or -1. */
int fattree_pgft(const struct fattree_spec *spec, char *buf, size_t buflen);

/* Rate and time as SimGrid and units.h both read them ("400Gbps", "450GBps", "100ns"), with
 * 15 significant digits. Rates in bits unless bytes_unit. */
void fattree_format_rate(double rate_Bps, int bytes_unit, char *buf, size_t buflen);
void fattree_format_time(double seconds, char *buf, size_t buflen);

#endif
