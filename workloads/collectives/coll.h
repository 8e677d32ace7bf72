/* NCCL-like collectives as dataflow graphs of point-to-point transfers on the fabric.
 *
 * A collective instance is built once per call: a list of transfers between group members, each
 * with the transfers it must wait for (a ring step waits for the chunk it forwards, a tree node
 * for its children). A transfer starts when its predecessors completed and both its ends have
 * joined the collective; a member is done when every transfer it sends or receives completed.
 * Everything runs in fabric callbacks: no actor blocks inside a collective.
 *
 * Algorithms (NCCL's, Jeaugey et al., "NCCL 2.0", GTC 2017; Sanders et al., "Two-tree
 * algorithms for full bandwidth broadcast, reduction and scan", 2009):
 *   ring          all-reduce = reduce-scatter + all-gather, 2(n-1) steps of S/n per channel
 *   tree          all-reduce on a pipelined double binary tree, each tree carrying half
 *   hierarchical  reduce-scatter inside each node (NVLink), all-reduce across nodes on the
 *                 rail of each local rank, all-gather inside the node
 *   pairwise      all-to-all: every member sends S/n to every other, all at once
 *   ring (bcast)  broadcast as a pipelined chain from the root
 *
 * In-network reduction (docs/collectives.md, "In-network reduction"): the data is reduced in
 * switches along an aggregation tree instead of hop by hop between GPUs, so each member sends
 * and receives the buffer once (a ring: 2(n-1)/n of it each way). Graham et al., "Scalable
 * Hierarchical Aggregation Protocol (SHArP)", COM-HPC 2016; NCCL's NVLS algorithms (NCCL 2.17+).
 *   sharp         IB SHARP: every member's NIC sends up an aggregation tree of InfiniBand
 *                 switches (reduced at each switch), the root sends the result back down
 *   nvls          NVLink SHARP: the same in the node's NVSwitch (members of one node)
 *   nvls_tree     NVLS reduce-scatter in each node, an all-reduce of each GPU's share across
 *                 nodes on its rail (a ring here), NVLS all-gather in each node
 *   nvls_sharp    the same with the rails' all-reduce done by IB SHARP
 * PXN (coll/pxn): an all-to-all's transfer to a GPU of another node and another rail goes
 * first over NVLink to the GPU of the sender's node on the destination's rail, which sends it
 * on its own NIC (NCCL's PXN, NCCL_PXN_DISABLE=0).
 */
#ifndef SGFABRIC_COLL_H
#define SGFABRIC_COLL_H

#include "fabric.h"

enum coll_kind { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_ALLTOALL, COLL_BROADCAST, COLL_KIND_COUNT };
enum coll_algo {
  COLL_ALGO_AUTO,
  COLL_ALGO_RING,
  COLL_ALGO_TREE,
  COLL_ALGO_HIERARCHICAL,
  COLL_ALGO_SHARP,
  COLL_ALGO_NVLS,
  COLL_ALGO_NVLS_TREE,
  COLL_ALGO_NVLS_SHARP,
  COLL_ALGO_COUNT
};

/* How a ring moves its data: step by step (2(n-1) transfers per member for an all-reduce, each
 * waiting for the chunk it forwards), or as one pipelined transfer per ring edge carrying every
 * step's bytes, plus the latency of the steps after the first. The two give the same time on a
 * ring whose edges share nothing; the pipelined form costs n transfers instead of 2n(n-1). */
enum coll_ring_mode { COLL_RING_AUTO, COLL_RING_STEPS, COLL_RING_PIPELINED };

/* NCCL's protocols (NCCL src/graph/tuning.cc): how data and its readiness flags travel.
 *   SIMPLE  large chunks, a memory fence and a flag per step: the whole line rate, the highest
 *           synchronisation latency per step;
 *   LL      8-byte lines of 4 data bytes + a 4-byte flag: half the line rate, the lowest latency;
 *   LL128   128-byte lines of 120 data bytes + 8 flag bytes: 120/128 of the line rate.
 * AUTO picks, per call, the protocol with the lowest predicted time (alpha-beta), as NCCL's
 * tuner does. */
enum coll_proto { COLL_PROTO_AUTO, COLL_PROTO_SIMPLE, COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_COUNT };

struct coll_params {
  enum coll_algo algo;           /* all-reduce algorithm (reduce-scatter and all-gather: ring or hierarchical) */
  enum coll_ring_mode ring_mode; /* AUTO: steps at packet fidelity, and at flow fidelity where the
                                    fabric's model asks (fab_model.flow.rings_in_steps); else pipelined */
  int channels;                  /* parallel rings/trees a collective is split into */
  double chunk_bytes;            /* pipelining unit of trees and broadcast chains */
  enum coll_proto proto;         /* AUTO: chosen per call by predicted time */
  double launch_s;               /* kernel launch: each member starts that long after its call */
  /* Per protocol (indexed by enum coll_proto; [COLL_PROTO_AUTO] unused): the latency a call pays
   * once, and a step's latency over NVLink (both ends on one node) and over the network: NCCL's
   * end-to-end figures, so the fabric's own latency counts toward them (a step lasts the longer
   * of the two), not on top. */
  double base_latency_s[COLL_PROTO_COUNT];
  double step_latency_nvlink_s[COLL_PROTO_COUNT];
  double step_latency_net_s[COLL_PROTO_COUNT];
  /* In-network reduction (coll.h's header comment). The switches' latencies are paid by every
   * pipeline step leaving a reducing switch; the rates cap each of the tree's transfers. */
  int sharp;              /* auto may pick IB SHARP (coll/sharp) */
  int sharp_max_trees;    /* SHARP trees a switch takes part in at once; beyond, the usual algorithm */
  double sharp_latency_s; /* a SHARP switch's reduction latency */
  double sharp_rate_Bps;  /* a SHARP switch's reduction rate per tree edge */
  int nvls;               /* auto may pick NVLS, NVLS-tree (coll/nvls) */
  double nvls_latency_s;  /* the NVSwitch's reduction latency */
  double nvls_rate_Bps;   /* NVLS rate per GPU */
  int pxn;                /* all-to-all: relay cross-rail transfers over NVLink (coll/pxn) */
};

struct coll_instance;
typedef void (*coll_done_fn)(void *ctx, int member);

/* How a collective's rings moved (coll/ring): each step a transfer of its own, or one pipelined
 * transfer per edge (in-network algorithms' rings are pipelined); a mask, 0 without rings. */
enum { COLL_RINGS_STEPS = 1, COLL_RINGS_PIPELINED = 2 };
/* "steps", "pipelined", "steps+pipelined", or NULL for 0. */
const char *coll_ring_forms_name(int ring_forms);

/* What an instance reports when its last member is done. */
struct coll_report {
  enum coll_kind kind;
  enum coll_algo algo;
  enum coll_proto proto; /* the protocol used (never AUTO) */
  int ring_forms;        /* COLL_RINGS_* mask */
  int n;
  double bytes;
  double start_s; /* the first member joined (called the collective) */
  double end_s;   /* every member was done */
};
typedef void (*coll_finish_fn)(void *ctx, const struct coll_report *report);

/* What a collective is: kind, bytes per member (all-gather: the gathered output; reduce-scatter:
 * the input), the members' GPUs in group order. */
struct coll_desc {
  enum coll_kind kind;
  double bytes;
  int n;
  const int *gpus;   /* [n] GPU of each member */
  int root;          /* broadcast: member index of the root */
  int tag;           /* fabric traffic class for accounting */
  int gpus_per_node; /* for hierarchical algorithms (0: flat) */
};

/* The parameter table's defaults (NCCL's protocol costs). */
void coll_params_init(struct coll_params *p);
/* No protocol cost: Simple, no launch, base or step latency (the dataflow alone, for tests). */
void coll_params_no_protocol_cost(struct coll_params *p);
/* Builds an instance; members join it with coll_join. done(ctx, member) is called when that
 * member's part is complete. */
struct coll_instance *coll_create(struct fabric *fab, const struct coll_params *p, const struct coll_desc *d,
                                  coll_done_fn done, coll_finish_fn finish, void *ctx);
/* Member m joins (its stream reached the call). The instance frees itself when every member is
 * done. */
void coll_join(struct coll_instance *c, int member);
/* Transfers the instance is made of (for tests and statistics). */
int coll_transfer_count(const struct coll_instance *c);
/* The algorithm an instance uses after AUTO is resolved. */
enum coll_algo coll_algorithm(const struct coll_instance *c);
/* The protocol an instance uses after AUTO is resolved. */
enum coll_proto coll_protocol(const struct coll_instance *c);
/* Bytes a protocol puts on the wire to carry `bytes` of data (its lines' flag bytes included). */
double coll_wire_bytes(enum coll_proto proto, double bytes);

/* Whether an algorithm reduces in switches (SHARP, NVLS and their hierarchical forms). */
int coll_algo_in_network(enum coll_algo a);
/* Whether an algorithm needs IB SHARP (sharp, nvls_sharp). */
int coll_algo_needs_sharp(enum coll_algo a);
/* Whether the fabric can run IB SHARP: an InfiniBand model at flow fidelity (the trees' legs are
 * fluid flows: at packet fidelity they would not contend with the packets). */
int coll_fabric_has_sharp(const struct fabric *fab);
/* Checks the parameters against the fabric: an explicit SHARP algorithm on a fabric without
 * SHARP is refused. Returns 0, or -1 with a message in err. */
int coll_params_check(const struct coll_params *p, const struct fabric *fab, char *err, size_t errlen);
/* SHARP collectives running now on fab. */
int coll_sharp_active(const struct fabric *fab);

/* nccl-tests' bus bandwidth factor: busbw = algbw * factor (algbw = bytes / time). */
double coll_busbw_factor(enum coll_kind kind, int n);

const char *coll_kind_name(enum coll_kind k);
const char *coll_algo_name(enum coll_algo a);
const char *coll_proto_name(enum coll_proto p);

#endif
