/* Collectives (workloads/collectives) on the ideal fabric, driven without SimGrid: every
 * algorithm against what it must do.
 *
 *  - ring all-reduce of S bytes over N GPUs (one GPU per node): 2(N-1) steps, each costing
 *    S/(N*B) + NIC latency + path latency (links + switches); the whole within 1% (it is in fact
 *    exact), and nccl-tests' busbw = algbw * 2(N-1)/N;
 *  - tree all-reduce finishes and moves 2(N-1)*S bytes (two trees of S/2, up and down);
 *  - hierarchical all-reduce on L nodes x g GPUs: the intra-node phases ride NVLink, the fabric
 *    carries only the inter-node ring of S/g per rail: 2(L-1)*S bytes; NVLink 2L(g-1)*S;
 *  - all-to-all moves S/N between every ordered pair;
 *  - broadcast delivers S to every member but the root;
 *  - in-network reduction: SHARP sends S up every member's NIC and S down (a ring: 2(N-1)/N S),
 *    one reduced S per tree link between switches; NVLS the same over NVLink to the NVSwitch
 *    (reduce-scatter: S/N down, all-gather: S/N up); NVLS-SHARP S/g on each NIC; a SHARP request
 *    beyond coll/sharp-max-trees, or off InfiniBand, uses a ring; PXN keeps an all-to-all's
 *    inter-node transfers on their rail.
 *
 * Per-flow accounting comes from a recording copy of the ideal model (its flow_done hook). */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "coll.h"
#include "../fabric/test_support.h"
#include "cunit_main.h"

#define RATE 50e9 /* 400 Gbps */
#define LINK_LAT 100e-9
#define SWITCH_LAT 130e-9
#define NIC_LAT 500e-9
#define TAG 3
#define MAXG 16

/* What the recording model saw. */
static struct {
  double pair_bytes[MAXG][MAXG]; /* src, dst */
  long flows;
  long fractional; /* transfers that were not a whole number of bytes */
  long ring_steps; /* transfers marked as a ring's step (fab_flow.ring_step), each one message of its bytes */
  long pipelined;  /* transfers standing for several messages (0 < message_B < bytes) */
} g_rec;

static void rec_flow_done(struct fabric *fab, struct fab_flow *flow)
{
  (void)fab;
  if (flow->bytes != floor(flow->bytes))
    g_rec.fractional++;
  if (flow->ring_step && flow->message_B == flow->bytes)
    g_rec.ring_steps++;
  if (flow->message_B > 0 && flow->message_B < flow->bytes && !flow->ring_step)
    g_rec.pipelined++;
  if (flow->parent == NULL && flow->src_gpu < MAXG && flow->dst_gpu < MAXG) {
    g_rec.pair_bytes[flow->src_gpu][flow->dst_gpu] += flow->bytes;
    g_rec.flows++;
  }
}

struct outcome {
  struct coll_report report;
  int finished;           /* the finish callback ran */
  int members_done;       /* done callbacks */
  int transfers;          /* coll_transfer_count */
  enum coll_algo algo;    /* coll_algorithm */
  double fabric_bytes;    /* fabric bytes of TAG */
  double nvlink_bytes;    /* NVLink bytes of TAG */
  double other_tag_bytes; /* bytes counted under any other tag (must be 0) */
};

static void on_member_done(void *ctx, int member)
{
  (void)member;
  ((struct outcome *)ctx)->members_done++;
}

static void on_finish(void *ctx, const struct coll_report *r)
{
  struct outcome *o = ctx;
  o->report = *r;
  o->finished++;
}

/* The parameters run_coll uses when set; else the dataflow alone (coll_params_no_protocol_cost),
 * which the analytic tests below hold against their formulas. */
static const struct coll_params *g_params;
static enum coll_proto g_chosen; /* coll_protocol of the last run */
/* When set: the recording model's name ("ib": the collectives allow IB SHARP on it,
 * coll_fabric_has_sharp), and where run_coll copies every port's transmitted bytes. */
static const char *g_model_name;
static double *g_port_tx;
static int g_model_steps; /* the recording model asks for rings in steps (fab_model.flow.rings_in_steps) */

static int model_wants_steps(const struct fabric *fab)
{
  (void)fab;
  return 1;
}

/* Runs one collective on gpus[0..n) of topo, every member joining at time 0. */
static void run_coll(struct topo *topo, fab_fidelity fidelity, const char *algo, enum coll_kind kind, double bytes,
                     const int *gpus, int n, int root, int gpus_per_node, struct outcome *o)
{
  struct param_set *params = default_params();
  char err[256];
  struct fab_model recorder = fab_model_ideal;
  recorder.lifecycle.flow_done = rec_flow_done;
  if (g_model_name)
    recorder.name = g_model_name;
  if (g_model_steps)
    recorder.flow.rings_in_steps = model_wants_steps;
  memset(&g_rec, 0, sizeof g_rec);
  memset(o, 0, sizeof *o);
  struct fabric *fab = fabric_new(topo, params, &recorder, fidelity, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  CU_ASSERT_DOUBLE_EQUAL(fab->nic_latency_s, NIC_LAT, 1e-15); /* fabric/nic-latency default */
  struct coll_params p;
  coll_params_init(&p);
  if (g_params)
    p = *g_params;
  else
    coll_params_no_protocol_cost(&p);
  for (int a = COLL_ALGO_RING; algo && a < COLL_ALGO_COUNT; a++)
    if (!strcmp(algo, coll_algo_name((enum coll_algo)a)))
      p.algo = (enum coll_algo)a;
  struct coll_desc d = { kind, bytes, n, gpus, root, TAG, gpus_per_node };
  struct coll_instance *c = coll_create(fab, &p, &d, on_member_done, on_finish, o);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  o->transfers = coll_transfer_count(c);
  o->algo = coll_algorithm(c);
  g_chosen = coll_protocol(c);
  for (int m = 0; m < n; m++) /* the instance frees itself after the last member is done */
    coll_join(c, m);
  fabric_run(fab);
  o->fabric_bytes = fab->stats.fabric_bytes[TAG];
  o->nvlink_bytes = fab->stats.nvlink_bytes[TAG];
  for (int t = 0; t < FAB_MAX_TAGS; t++)
    if (t != TAG)
      o->other_tag_bytes += fab->stats.fabric_bytes[t] + fab->stats.nvlink_bytes[t];
  CU_ASSERT_EQUAL(o->finished, 1);
  CU_ASSERT_EQUAL(o->members_done, n);
  CU_ASSERT_EQUAL(fab->stats.flows_done, fab->stats.flows_posted);
  CU_ASSERT_EQUAL(fab->stats.drops, 0);
  CU_ASSERT_EQUAL(o->other_tag_bytes, 0);
  if (g_port_tx)
    for (int q = 0; q < topo->n_ports; q++)
      g_port_tx[q] = fab->ports[q].tx_bytes;
  fabric_free(fab);
  fab_param_set_free(params);
}

static int within(double value, double expected, double tolerance)
{
  return fabs(value - expected) <= tolerance * fabs(expected);
}

static const char *const fidelity_name[] = { "packet", "flow" };

/* Ring all-reduce, 4 GPUs on 4 nodes of one switch: path = 2 links + 1 switch. A large buffer
 * (busbw reaches the line rate) and a small one (the latency terms are 40% of a step, so a missing
 * or extra latency term fails the 1% bound). */
static void ring_single_switch(double S)
{
  const int N = 4;
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  double step = S / (N * RATE) + NIC_LAT + 2 * LINK_LAT + SWITCH_LAT;
  double expected = 2 * (N - 1) * step;
  int large = S >= 16e6;
  for (int fid = 0; fid < 2; fid++) {
    struct outcome o;
    run_coll(t, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &o);
    CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING);
    CU_ASSERT_EQUAL(o.report.algo, COLL_ALGO_RING);
    /* Packet fidelity moves the ring step by step; flow fidelity as one pipelined transfer per
     * edge (coll/ring:auto), with the same time. */
    CU_ASSERT_EQUAL(o.transfers, fid == FAB_FIDELITY_PACKET ? 2 * (N - 1) * N : N);
    /* each step is marked as one (RoCE's held-port measure takes a port's steps for chains of
     * messages, roce_held_port.h); a pipelined edge stands for its steps' messages */
    CU_ASSERT_EQUAL(g_rec.ring_steps, fid == FAB_FIDELITY_PACKET ? 2 * (N - 1) * N : 0);
    CU_ASSERT_EQUAL(g_rec.pipelined, fid == FAB_FIDELITY_PACKET ? 0 : N);
    double time = o.report.end_s - o.report.start_s;
    double algbw = S / time, busbw = algbw * coll_busbw_factor(COLL_ALLREDUCE, N);
    fprintf(stderr,
            "\n    ring all-reduce %.3g MB, %d GPUs, single switch, %s: %.3f us, expected %.3f us (%+.4f%%); "
            "algbw %.2f GB/s, busbw %.2f GB/s (line rate %.0f GB/s)",
            S / 1e6, N, fidelity_name[fid], time * 1e6, expected * 1e6, 100 * (time - expected) / expected, algbw / 1e9,
            busbw / 1e9, RATE / 1e9);
    CU_ASSERT(within(time, expected, 0.01));
    /* Every byte crossed the fabric: 2(N-1) steps of N transfers of S/N. */
    CU_ASSERT(within(o.fabric_bytes, 2.0 * (N - 1) * S, 1e-12));
    CU_ASSERT_EQUAL(o.nvlink_bytes, 0);
    /* nccl-tests' definition, and for a large buffer the bus bandwidth is the line rate. */
    CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(COLL_ALLREDUCE, N), 2.0 * (N - 1) / N, 1e-15);
    CU_ASSERT(within(busbw, S / expected * 2.0 * (N - 1) / N, 0.01));
    if (large)
      CU_ASSERT(within(busbw, RATE, 0.01));
    CU_ASSERT(busbw <= RATE);
    /* Each GPU sends to its ring successor only, S/N per step. */
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        CU_ASSERT(within(g_rec.pair_bytes[i][j] + 1, (j == (i + 1) % N ? 2.0 * (N - 1) * S / N : 0) + 1, 1e-12));
  }
  fab_topo_free(t);
}

/* coll/ring:auto at flow fidelity: pipelined, unless the fabric's model asks for steps (RoCE
 * where DCQCN holds ports); then the ring moves step by step, as at packet fidelity, in the same
 * time on a switch where its edges share no link. */
static void test_coll_ring_model_asks_steps(void)
{
  const int N = 4;
  const double S = 16e6;
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  struct outcome pipelined, steps;
  run_coll(t, FAB_FIDELITY_FLOW, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &pipelined);
  CU_ASSERT_EQUAL(pipelined.transfers, N);
  g_model_steps = 1;
  run_coll(t, FAB_FIDELITY_FLOW, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &steps);
  g_model_steps = 0;
  CU_ASSERT_EQUAL(steps.transfers, 2 * (N - 1) * N);
  CU_ASSERT_EQUAL(g_rec.ring_steps, 2 * (N - 1) * N);
  double tp = pipelined.report.end_s - pipelined.report.start_s, ts = steps.report.end_s - steps.report.start_s;
  CU_ASSERT(within(ts, tp, 1e-6));
  fab_topo_free(t);
}

static void test_coll_ring_allreduce_analytic_single_switch(void)
{
  ring_single_switch(64e6);
  ring_single_switch(256e3);
}

/* Ring all-reduce, 8 GPUs on 8 nodes of a generated 2-tier fat-tree (radix 8: GPU i on leaf i/4):
 * the ring 0..7 crosses leaves at 3->4 and 7->0 (4 links, 3 switches); those steps pace the ring. */
static void test_coll_ring_allreduce_analytic_fat_tree(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "1", "--radix", "8" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_EQUAL_FATAL(p->topo->n_gpus, 8);
  CU_ASSERT_EQUAL_FATAL(p->topo->gpus_per_node, 1);
  CU_ASSERT_EQUAL(p->topo->gpu_leaf[3], 0);
  CU_ASSERT_EQUAL(p->topo->gpu_leaf[4], 1);
  const int N = 8;
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  const double sizes[2] = { 16e6, 512e3 }; /* 512 KB: the latency terms are a third of a step */
  for (int k = 0; k < 4; k++) {
    int fid = k % 2;
    double S = sizes[k / 2];
    double step = S / (N * RATE) + NIC_LAT + 4 * LINK_LAT + 3 * SWITCH_LAT;
    double expected = 2 * (N - 1) * step;
    struct outcome o;
    run_coll(p->topo, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &o);
    CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING);
    double time = o.report.end_s - o.report.start_s;
    double busbw = S / time * 2.0 * (N - 1) / N;
    fprintf(
        stderr,
        "\n    ring all-reduce %.3g MB, %d GPUs, fat-tree, %s: %.3f us, expected %.3f us (%+.4f%%); busbw %.2f GB/s",
        S / 1e6, N, fidelity_name[fid], time * 1e6, expected * 1e6, 100 * (time - expected) / expected, busbw / 1e9);
    CU_ASSERT(within(time, expected, 0.01));
    CU_ASSERT(within(o.fabric_bytes, 2.0 * (N - 1) * S, 1e-12));
  }
  platform_free(p);
}

/* Tree all-reduce: two mirrored binary trees carrying S/2 each, chunks of coll/chunk bytes. */
static void test_coll_tree_allreduce_bytes(void)
{
  const int N = 8;
  const double S = 16e6; /* 8 MB per tree: 2 chunks of 4 MB */
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  struct outcome tree, ring;
  run_coll(t, FAB_FIDELITY_PACKET, "tree", COLL_ALLREDUCE, S, gpus, N, 0, 1, &tree);
  run_coll(t, FAB_FIDELITY_PACKET, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &ring);
  double time = tree.report.end_s - tree.report.start_s;
  double ring_time = ring.report.end_s - ring.report.start_s;
  fprintf(stderr, "\n    tree all-reduce %.0f MB, %d GPUs: %.3f us (ring %.3f us), %d transfers, %.0f fabric bytes",
          S / 1e6, N, time * 1e6, ring_time * 1e6, tree.transfers, tree.fabric_bytes);
  CU_ASSERT_EQUAL(tree.algo, COLL_ALGO_TREE);
  CU_ASSERT_EQUAL(tree.report.algo, COLL_ALGO_TREE);
  CU_ASSERT_EQUAL(tree.transfers, 2 /* trees */ * 2 /* chunks */ * 2 * (N - 1) /* up + down */);
  /* Each of the N-1 edges of each tree carries its half up and down. */
  CU_ASSERT(within(tree.fabric_bytes, 2.0 * (N - 1) * S, 1e-12));
  /* Every member but the root of a tree receives that tree's half on the way down, so every
   * member receives at least S/2 and the sum of everything received is 2(N-1)S. */
  double total = 0;
  for (int j = 0; j < N; j++) {
    double in = 0;
    for (int i = 0; i < N; i++)
      in += g_rec.pair_bytes[i][j];
    CU_ASSERT(in >= S / 2 * (1 - 1e-12));
    total += in;
  }
  CU_ASSERT(within(total, 2.0 * (N - 1) * S, 1e-12));
  /* Member 0, root of the first tree, receives both children's halves (S) over its one link. */
  CU_ASSERT(time >= S / RATE);
  CU_ASSERT(time > 0);
  fab_topo_free(t);
}

/* Hierarchical all-reduce on L nodes x g GPUs: NVLink reduce-scatter and all-gather inside nodes,
 * the fabric only for the inter-node rings (one per rail, 2(L-1) steps of L transfers of S/(gL)). */
static void hierarchical_case(int nodes, int per_node)
{
  char gpus_text[8], per_node_text[8];
  snprintf(gpus_text, sizeof gpus_text, "%d", nodes * per_node);
  snprintf(per_node_text, sizeof per_node_text, "%d", per_node);
  const char *opts[] = { "--gpus", gpus_text, "--gpus-per-node", per_node_text, "--radix", "8" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_EQUAL_FATAL(p->topo->gpus_per_node, per_node);
  const int N = nodes * per_node, L = nodes, g = per_node;
  const double S = 16e6;
  int gpus[MAXG];
  for (int i = 0; i < N; i++)
    gpus[i] = i;
  struct outcome h, ring;
  run_coll(p->topo, FAB_FIDELITY_PACKET, "hierarchical", COLL_ALLREDUCE, S, gpus, N, 0, per_node, &h);
  double expected_fabric = 2.0 * (L - 1) * S;     /* g rails x 2(L-1) steps x L transfers x S/(gL) */
  double expected_nvlink = 2.0 * L * (g - 1) * S; /* L nodes x 2 phases x (g-1) steps x g x S/g */
  double time = h.report.end_s - h.report.start_s;
  fprintf(stderr,
          "\n    hierarchical all-reduce %.0f MB, %d nodes x %d GPUs: %.3f us, fabric %.0f B (expected %.0f), "
          "NVLink %.0f B (expected %.0f)",
          S / 1e6, L, g, time * 1e6, h.fabric_bytes, expected_fabric, h.nvlink_bytes, expected_nvlink);
  CU_ASSERT_EQUAL(h.algo, COLL_ALGO_HIERARCHICAL);
  CU_ASSERT_EQUAL(h.report.algo, COLL_ALGO_HIERARCHICAL);
  CU_ASSERT(within(h.fabric_bytes, expected_fabric, 1e-12));
  CU_ASSERT(within(h.nvlink_bytes, expected_nvlink, 1e-12));
  /* Inter-node traffic only between GPUs of the same local index (the rail). */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (i / g != j / g && i % g != j % g)
        CU_ASSERT_EQUAL(g_rec.pair_bytes[i][j], 0);
  /* The flat ring on the same GPUs puts 2(N-1)/N * S per cut link: the hierarchy saves fabric bytes. */
  run_coll(p->topo, FAB_FIDELITY_PACKET, "ring", COLL_ALLREDUCE, S, gpus, N, 0, per_node, &ring);
  CU_ASSERT(within(ring.fabric_bytes, 2.0 * (N - 1) * S / N * L, 1e-12));
  CU_ASSERT(h.fabric_bytes < ring.fabric_bytes);
  /* AUTO with a node size picks the hierarchy. */
  struct outcome a;
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLREDUCE, S, gpus, N, 0, per_node, &a);
  CU_ASSERT_EQUAL(a.algo, COLL_ALGO_HIERARCHICAL);
  CU_ASSERT(within(a.fabric_bytes, expected_fabric, 1e-12));
  platform_free(p);
}

static void test_coll_hierarchical_2x4(void) { hierarchical_case(2, 4); }
static void test_coll_hierarchical_4x2(void) { hierarchical_case(4, 2); }

/* All-to-all: S/N from every member to every other, all at once: each NIC link carries N-1 flows. */
static void test_coll_alltoall_pairs(void)
{
  const int N = 4;
  const double S = 16e6;
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  for (int fid = 0; fid < 2; fid++) {
    struct outcome o;
    run_coll(t, (fab_fidelity)fid, NULL, COLL_ALLTOALL, S, gpus, N, 0, 1, &o);
    CU_ASSERT_EQUAL(o.transfers, N * (N - 1));
    CU_ASSERT_EQUAL(g_rec.flows, N * (N - 1));
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        CU_ASSERT(within(g_rec.pair_bytes[i][j] + 1, (i == j ? 0 : S / N) + 1, 1e-12));
    CU_ASSERT(within(o.fabric_bytes, (N - 1) * S, 1e-12));
    double time = o.report.end_s - o.report.start_s;
    double expected = (N - 1) * S / N / RATE + NIC_LAT + 2 * LINK_LAT + SWITCH_LAT;
    fprintf(stderr, "\n    all-to-all %.0f MB, %d GPUs, %s: %.3f us, expected %.3f us (%+.3f%%)", S / 1e6, N,
            fidelity_name[fid], time * 1e6, expected * 1e6, 100 * (time - expected) / expected);
    CU_ASSERT(within(time, expected, 0.01));
  }
  fab_topo_free(t);
}

/* Broadcast from member 2 of 4: a pipelined chain; every other member receives S, the root none. */
static void test_coll_broadcast_delivers(void)
{
  const int N = 4, root = 2;
  const double S = 10e6; /* 2 chunks of 5 MB with the default 4 MB chunk */
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  struct outcome o;
  run_coll(t, FAB_FIDELITY_PACKET, NULL, COLL_BROADCAST, S, gpus, N, root, 1, &o);
  for (int j = 0; j < N; j++) {
    double in = 0;
    for (int i = 0; i < N; i++)
      in += g_rec.pair_bytes[i][j];
    CU_ASSERT(within(in + 1, (j == root ? 0 : S) + 1, 1e-12));
  }
  double time = o.report.end_s - o.report.start_s;
  /* Chain of N-1 hops, 2 chunks: (chunks + hops - 1) chunk times. */
  double chunk_step = S / 2 / RATE + NIC_LAT + 2 * LINK_LAT + SWITCH_LAT;
  double expected = (2 + (N - 1) - 1) * chunk_step;
  fprintf(stderr, "\n    broadcast %.0f MB from member %d of %d: %.3f us, expected %.3f us, %.0f fabric bytes", S / 1e6,
          root, N, time * 1e6, expected * 1e6, o.fabric_bytes);
  CU_ASSERT(within(o.fabric_bytes, (N - 1) * S, 1e-12));
  CU_ASSERT(within(time, expected, 0.01));
  fab_topo_free(t);
}

/* Sizes that do not divide by the member count (1001 B over 16, 1000 B over 3, and the
 * 218,169,344 B gradient all-reduce that "sgfabric workload --gpus 24 --tp 8" gives its dp = 3
 * group) are split in whole bytes, floor or ceil, so that every collective finishes at packet
 * fidelity (a fractional remainder used to become a 0-byte packet sent forever) and moves exactly
 * the bytes it must. */
static void test_coll_uneven_sizes_whole_bytes(void)
{
  struct case_ {
    enum coll_kind kind;
    const char *algo;
    double S;
    int n;
    double factor; /* fabric bytes / S */
  } cases[] = {
    { COLL_ALLREDUCE, "ring", 1001, 16, 2 * 15 },
    { COLL_ALLREDUCE, "ring", 1000, 3, 2 * 2 },
    { COLL_ALLREDUCE, "ring", 218169344, 3, 2 * 2 },
    { COLL_ALLREDUCE, "ring", 4096.0 * 3 + 1, 3, 2 * 2 },
    { COLL_ALLREDUCE, "tree", 1001, 16, 2 * 15 },
    { COLL_ALLREDUCE, "tree", 8000001, 3, 2 * 2 },
    { COLL_REDUCE_SCATTER, NULL, 1001, 16, 15 },
    { COLL_ALLGATHER, NULL, 1000, 3, 2 },
    { COLL_ALLTOALL, NULL, 1001, 3, 2 },
    { COLL_ALLTOALL, NULL, 5, 16, 15 },
    { COLL_BROADCAST, NULL, 8000001, 3, 2 },
    { COLL_ALLREDUCE, "ring", 7, 16, 2 * 15 },
  };
  int gpus[MAXG];
  for (int i = 0; i < MAXG; i++)
    gpus[i] = i;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const struct case_ *c = &cases[k];
    struct topo *t = fab_topo_single_switch(c->n, RATE, LINK_LAT, SWITCH_LAT);
    for (int fid = 0; fid < 2; fid++) {
      struct outcome o;
      run_coll(t, (fab_fidelity)fid, c->algo, c->kind, c->S, gpus, c->n, 0, 1, &o); /* asserts it finished */
      fprintf(stderr, "\n    %s %.0f B over %d (%s): %.0f fabric bytes, expected %.0f", coll_kind_name(c->kind), c->S,
              c->n, fidelity_name[fid], o.fabric_bytes, c->factor * c->S);
      CU_ASSERT_EQUAL(o.fabric_bytes, c->factor * c->S);
      CU_ASSERT_EQUAL(g_rec.fractional, 0);
    }
    fab_topo_free(t);
  }
  /* Hierarchical: the rails carry the node's reduce-scatter chunks (251, 250, 250, 250 B of
   * 1001), split again over the nodes. */
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "4", "--radix", "8" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  struct outcome h;
  run_coll(p->topo, FAB_FIDELITY_PACKET, "hierarchical", COLL_ALLREDUCE, 1001, gpus, 8, 0, 4, &h);
  CU_ASSERT_EQUAL(h.algo, COLL_ALGO_HIERARCHICAL);
  CU_ASSERT_EQUAL(h.fabric_bytes, 2.0 * (2 - 1) * 1001);
  CU_ASSERT_EQUAL(h.nvlink_bytes, 2.0 * 2 * (4 - 1) * 1001);
  CU_ASSERT_EQUAL(g_rec.fractional, 0);
  platform_free(p);
}

/* NCCL's protocols on a ring all-reduce, 4 GPUs on one switch, at both fidelities: every step
 * moves the protocol's wire bytes (LL: 8 per 4 data bytes; LL128: 128 per 120) and lasts at least
 * the protocol's step latency, the fabric's own latency (NIC + path) counting toward it; every
 * member starts after the kernel launch and the protocol's base latency. Expected:
 * launch + base + 2(N-1) (wire(S/N)/B + max(NIC + path, step latency)). */
static void test_coll_protocol_costs_ring(void)
{
  const int N = 4;
  const double S = 4.0 * 120 * N * 100; /* S/N a multiple of 4 and 120: whole lines */
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  const enum coll_proto protos[3] = { COLL_PROTO_SIMPLE, COLL_PROTO_LL, COLL_PROTO_LL128 };
  const double wire[3] = { S / N, 2 * S / N, S / N * 128 / 120 };
  struct coll_params p;
  coll_params_init(&p);
  p.launch_s = 3e-6;
  for (int k = 0; k < 3; k++) {
    p.base_latency_s[protos[k]] = (k + 2) * 1e-6;
    p.step_latency_net_s[protos[k]] = (k + 1) * 1.5e-6; /* above NIC + path: 0.83 us */
    p.step_latency_nvlink_s[protos[k]] = 1;             /* no NVLink hop here: must not count */
  }
  g_params = &p;
  for (int k = 0; k < 3; k++) {
    p.proto = protos[k];
    double fabric_lat = NIC_LAT + 2 * LINK_LAT + SWITCH_LAT;
    double step = wire[k] / RATE + fmax(fabric_lat, p.step_latency_net_s[protos[k]]);
    double expected = p.launch_s + p.base_latency_s[protos[k]] + 2 * (N - 1) * step;
    double times[2];
    for (int fid = 0; fid < 2; fid++) {
      struct outcome o;
      run_coll(t, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &o);
      times[fid] = o.report.end_s - o.report.start_s;
      fprintf(stderr, "\n    ring all-reduce %.0f B, %s, %s: %.4f us, expected %.4f us", S, coll_proto_name(protos[k]),
              fidelity_name[fid], times[fid] * 1e6, expected * 1e6);
      CU_ASSERT_EQUAL(g_chosen, protos[k]);
      CU_ASSERT_EQUAL(o.report.proto, protos[k]);
      CU_ASSERT(within(times[fid], expected, 1e-6));
      /* The flag bytes travel: the fabric carries the wire bytes, not the data. */
      CU_ASSERT(within(o.fabric_bytes, 2.0 * (N - 1) * N * wire[k], 1e-12));
    }
    /* Step by step (packet) and pipelined (flow) pay the same latencies. */
    CU_ASSERT(within(times[0], times[1], 1e-9));
  }
  /* A step latency below the fabric's own adds nothing: the dataflow's time. */
  p.proto = COLL_PROTO_SIMPLE;
  p.launch_s = p.base_latency_s[COLL_PROTO_SIMPLE] = 0;
  p.step_latency_net_s[COLL_PROTO_SIMPLE] = 0.5e-6;
  for (int fid = 0; fid < 2; fid++) {
    struct outcome o;
    run_coll(t, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &o);
    double expected = 2 * (N - 1) * (S / N / RATE + NIC_LAT + 2 * LINK_LAT + SWITCH_LAT);
    CU_ASSERT(within(o.report.end_s - o.report.start_s, expected, 1e-6));
  }
  g_params = NULL;
  CU_ASSERT_EQUAL(coll_wire_bytes(COLL_PROTO_LL, 5), 16);       /* two 8-byte lines */
  CU_ASSERT_EQUAL(coll_wire_bytes(COLL_PROTO_LL128, 121), 137); /* two lines' flags */
  CU_ASSERT_EQUAL(coll_wire_bytes(COLL_PROTO_SIMPLE, 121), 121);
  fab_topo_free(t);
}

/* Steps between GPUs of one node pay the NVLink step latency, not the network's: a ring of the 4
 * GPUs of one node is 2(N-1) x 5 us slower with an NVLink step latency of 10 us than of 5 us (both
 * above NVLink's own latency), whatever the network's is. */
static void test_coll_protocol_nvlink_steps(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "4", "--radix", "8" };
  struct platform *pf = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pf);
  int gpus[4] = { 0, 1, 2, 3 };
  struct coll_params p;
  coll_params_init(&p);
  coll_params_no_protocol_cost(&p);
  p.step_latency_net_s[COLL_PROTO_SIMPLE] = 1e-3;
  g_params = &p;
  for (int fid = 0; fid < 2; fid++) {
    struct outcome without, with;
    p.step_latency_nvlink_s[COLL_PROTO_SIMPLE] = 5e-6;
    run_coll(pf->topo, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, 1e6, gpus, 4, 0, 4, &without);
    p.step_latency_nvlink_s[COLL_PROTO_SIMPLE] = 10e-6;
    run_coll(pf->topo, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, 1e6, gpus, 4, 0, 4, &with);
    double d = (with.report.end_s - with.report.start_s) - (without.report.end_s - without.report.start_s);
    fprintf(stderr, "\n    NVLink ring, %s: +%.4f us with a 10 us step latency instead of 5 us", fidelity_name[fid],
            d * 1e6);
    CU_ASSERT(within(d, 2 * 3 * 5e-6, 1e-6));
    CU_ASSERT_EQUAL(with.fabric_bytes, 0);
  }
  g_params = NULL;
  platform_free(pf);
}

/* coll/protocol auto, NCCL's defaults: per size the protocol with the lowest predicted time, LL
 * for small buffers, LL128 in between, Simple for large ones; and its time is never worse than
 * the best forced protocol's (the prediction ranks them as the fabric does on an idle ring). */
static void test_coll_protocol_auto(void)
{
  const int N = 4;
  struct topo *t = fab_topo_single_switch(N, RATE, LINK_LAT, SWITCH_LAT);
  int gpus[4] = { 0, 1, 2, 3 };
  const double sizes[] = { 64, 64e3, 4e6, 256e6 };
  const enum coll_proto expect[] = { COLL_PROTO_LL, COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE };
  struct coll_params p;
  coll_params_init(&p);
  g_params = &p;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (int fid = 0; fid < 2; fid++) {
      struct outcome o;
      p.proto = COLL_PROTO_AUTO;
      run_coll(t, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, sizes[i], gpus, N, 0, 1, &o);
      double auto_time = o.report.end_s - o.report.start_s;
      enum coll_proto chosen = g_chosen;
      double best = INFINITY;
      for (enum coll_proto q = COLL_PROTO_SIMPLE; q < COLL_PROTO_COUNT; q++) {
        struct outcome f;
        p.proto = q;
        run_coll(t, (fab_fidelity)fid, "ring", COLL_ALLREDUCE, sizes[i], gpus, N, 0, 1, &f);
        double time = f.report.end_s - f.report.start_s;
        best = time < best ? time : best;
        if (q == chosen)
          CU_ASSERT_EQUAL(time, auto_time);
      }
      fprintf(stderr, "\n    auto at %.0f B (%s): %s, %.3f us (best forced %.3f us)", sizes[i], fidelity_name[fid],
              coll_proto_name(chosen), auto_time * 1e6, best * 1e6);
      CU_ASSERT_EQUAL(chosen, expect[i]);
      CU_ASSERT(auto_time <= best * (1 + 1e-9));
      /* The launch and the base latency are paid: never below launch + LL's base latency. */
      CU_ASSERT(auto_time >= p.launch_s + p.base_latency_s[COLL_PROTO_LL]);
    }
  }
  g_params = NULL;
  fab_topo_free(t);
}

/* ---- In-network reduction ---- */

/* Sum of the bytes transmitted on the ports from nodes of kind `from` (level from_level, -1: any)
 * to nodes of level to_level. */
static double tx_between(const struct topo *t, const double *tx, int from_level, int to_level)
{
  double sum = 0;
  for (int q = 0; q < t->n_ports; q++)
    if (t->nodes[t->ports[q].node].level == from_level && t->nodes[t->ports[q].peer_node].level == to_level &&
        t->nodes[t->ports[q].node].kind == TOPO_SWITCH)
      sum += tx[q];
  return sum;
}

/* SHARP all-reduce, 8 GPUs (one per node) on a radix-8 fat-tree (GPU i on leaf i/4, two leaves):
 * the aggregation tree is the 8 NICs, the two leaves and one spine (the root). Every NIC sends S
 * up and receives S down (a ring: 2(N-1)/N S each way); each leaf sends one reduced S up to the
 * root and receives one S back; one spine only is used. */
static void test_coll_sharp_tree_bytes(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "1", "--radix", "8" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  const int N = 8;
  const double S = 16e6;
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  double *tx = calloc((size_t)t->n_ports, sizeof(double));
  g_model_name = "ib";
  g_port_tx = tx;
  struct outcome sh, ring;
  run_coll(p->topo, FAB_FIDELITY_FLOW, "sharp", COLL_ALLREDUCE, S, gpus, N, 0, 1, &sh);
  CU_ASSERT_EQUAL(sh.algo, COLL_ALGO_SHARP);
  CU_ASSERT_EQUAL(sh.report.algo, COLL_ALGO_SHARP);
  CU_ASSERT_EQUAL(sh.report.proto, COLL_PROTO_SIMPLE);
  for (int i = 0; i < N; i++) {
    int nic = t->gpu_nic_port[i];
    CU_ASSERT(within(tx[nic], S, 1e-12));                     /* up, once */
    CU_ASSERT(within(tx[t->ports[nic].peer_port], S, 1e-12)); /* down, once */
  }
  CU_ASSERT(within(sh.fabric_bytes, N * S, 1e-12));
  /* Two leaves, each one reduced S up to the root spine and one S down. */
  CU_ASSERT(within(tx_between(t, tx, 1, 2), 2 * S, 1e-12));
  CU_ASSERT(within(tx_between(t, tx, 2, 1), 2 * S, 1e-12));
  int spines_used = 0;
  for (int v = 0; v < t->n_nodes; v++) {
    if (t->nodes[v].level != 2)
      continue;
    double b = 0;
    for (int q = t->nodes[v].first_port; q < t->nodes[v].first_port + t->nodes[v].port_count; q++)
      b += tx[q];
    spines_used += b > 0;
  }
  CU_ASSERT_EQUAL(spines_used, 1);
  /* The graph: 10 legs up (8 NICs, 2 leaves) and 10 down, streaming at once after a barrier
   * (a no-op per member's join and one they all lead to). */
  CU_ASSERT_EQUAL(sh.transfers, 2 * (N + 2) + N + 1);
  g_port_tx = NULL;
  run_coll(p->topo, FAB_FIDELITY_FLOW, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 1, &ring);
  CU_ASSERT(within(ring.fabric_bytes, 2.0 * (N - 1) * S, 1e-12));
  double t_sharp = sh.report.end_s - sh.report.start_s, t_ring = ring.report.end_s - ring.report.start_s;
  fprintf(stderr, "\n    sharp all-reduce %.0f MB, %d GPUs: %.3f us, fabric %.0f B; ring %.3f us, fabric %.0f B",
          S / 1e6, N, t_sharp * 1e6, sh.fabric_bytes, t_ring * 1e6, ring.fabric_bytes);
  /* S on each NIC, pipelined: about S/B, where the ring needs 2(N-1)/N S/B. */
  CU_ASSERT(t_sharp >= S / RATE);
  CU_ASSERT(t_sharp < 1.15 * S / RATE);
  CU_ASSERT(t_sharp < 0.6 * t_ring);
  g_model_name = NULL;
  free(tx);
  platform_free(p);
}

/* SHARP needs InfiniBand: coll_params_check refuses an explicit sharp elsewhere, and a
 * collective created anyway falls back to a ring; on InfiniBand at packet fidelity too. */
static void test_coll_sharp_needs_ib(void)
{
  struct topo *t = fab_topo_single_switch(4, RATE, LINK_LAT, SWITCH_LAT);
  struct param_set *params = default_params();
  char err[512];
  struct fabric *fab = fabric_new(t, params, &fab_model_ideal, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct coll_params p;
  coll_params_init(&p);
  p.algo = COLL_ALGO_SHARP;
  CU_ASSERT_EQUAL(coll_params_check(&p, fab, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "InfiniBand"));
  CU_ASSERT_FALSE(coll_fabric_has_sharp(fab));
  p.algo = COLL_ALGO_AUTO;
  p.sharp = 1; /* auto with SHARP allowed: no error, SHARP just is not there */
  CU_ASSERT_EQUAL(coll_params_check(&p, fab, err, sizeof err), 0);
  fabric_free(fab);
  fab_param_set_free(params);
  int gpus[4] = { 0, 1, 2, 3 };
  struct outcome o;
  run_coll(t, FAB_FIDELITY_FLOW, "sharp", COLL_ALLREDUCE, 4e6, gpus, 4, 0, 1, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING);
  g_model_name = "ib";
  run_coll(t, FAB_FIDELITY_PACKET, "sharp", COLL_ALLREDUCE, 4e6, gpus, 4, 0, 1, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING);
  run_coll(t, FAB_FIDELITY_FLOW, "sharp", COLL_ALLREDUCE, 4e6, gpus, 4, 0, 1, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_SHARP);
  g_model_name = NULL;
  fab_topo_free(t);
}

/* coll/sharp-max-trees: on one switch that takes part in at most 2 trees, the third of three
 * SHARP collectives running at once uses a ring; the trees are given back when they end. */
static void test_coll_sharp_max_trees(void)
{
  struct topo *t = fab_topo_single_switch(6, RATE, LINK_LAT, SWITCH_LAT);
  struct param_set *params = default_params();
  char err[256];
  struct fab_model ib_named = fab_model_ideal;
  ib_named.name = "ib";
  struct fabric *fab = fabric_new(t, params, &ib_named, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct coll_params p;
  coll_params_init(&p);
  coll_params_no_protocol_cost(&p);
  p.algo = COLL_ALGO_SHARP;
  CU_ASSERT_EQUAL(p.sharp_max_trees, 2);
  int pairs[3][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 } };
  struct outcome o[3];
  struct coll_instance *c[3];
  memset(o, 0, sizeof o);
  for (int k = 0; k < 3; k++) {
    struct coll_desc d = { COLL_ALLREDUCE, 8e6, 2, pairs[k], 0, TAG, 1 };
    c[k] = coll_create(fab, &p, &d, on_member_done, on_finish, &o[k]);
    o[k].algo = coll_algorithm(c[k]);
  }
  CU_ASSERT_EQUAL(o[0].algo, COLL_ALGO_SHARP);
  CU_ASSERT_EQUAL(o[1].algo, COLL_ALGO_SHARP);
  CU_ASSERT_EQUAL(o[2].algo, COLL_ALGO_RING);
  CU_ASSERT_EQUAL(coll_sharp_active(fab), 2);
  for (int k = 0; k < 3; k++)
    for (int m = 0; m < 2; m++)
      coll_join(c[k], m);
  fabric_run(fab);
  for (int k = 0; k < 3; k++)
    CU_ASSERT_EQUAL(o[k].finished, 1);
  CU_ASSERT_EQUAL(coll_sharp_active(fab), 0);
  /* Given back: a new one gets a tree. */
  struct outcome again;
  memset(&again, 0, sizeof again);
  struct coll_desc d = { COLL_ALLREDUCE, 8e6, 2, pairs[2], 0, TAG, 1 };
  struct coll_instance *x = coll_create(fab, &p, &d, on_member_done, on_finish, &again);
  CU_ASSERT_EQUAL(coll_algorithm(x), COLL_ALGO_SHARP);
  coll_join(x, 0);
  coll_join(x, 1);
  fabric_run(fab);
  CU_ASSERT_EQUAL(again.finished, 1);
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

/* Two SHARP collectives at once over members on both leaves of a radix-8 fat-tree: the second
 * takes a root spine the first does not use (the candidate in the fewest running trees). */
static void test_coll_sharp_roots_spread(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "1", "--radix", "8" };
  struct platform *pl = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pl);
  struct topo *t = pl->topo;
  struct param_set *params = default_params();
  char err[256];
  struct fab_model ib_named = fab_model_ideal;
  ib_named.name = "ib";
  struct fabric *fab = fabric_new(t, params, &ib_named, FAB_FIDELITY_FLOW, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  struct coll_params p;
  coll_params_init(&p);
  coll_params_no_protocol_cost(&p);
  p.algo = COLL_ALGO_SHARP;
  int a[2] = { 0, 4 }, b[2] = { 1, 5 }; /* GPU i is on leaf i/4 */
  struct outcome o[2];
  memset(o, 0, sizeof o);
  struct coll_desc da = { COLL_ALLREDUCE, 8e6, 2, a, 0, TAG, 1 }, db = { COLL_ALLREDUCE, 8e6, 2, b, 0, TAG, 1 };
  struct coll_instance *ca = coll_create(fab, &p, &da, on_member_done, on_finish, &o[0]);
  struct coll_instance *cb = coll_create(fab, &p, &db, on_member_done, on_finish, &o[1]);
  CU_ASSERT_EQUAL(coll_algorithm(ca), COLL_ALGO_SHARP);
  CU_ASSERT_EQUAL(coll_algorithm(cb), COLL_ALGO_SHARP);
  for (int m = 0; m < 2; m++) {
    coll_join(ca, m);
    coll_join(cb, m);
  }
  fabric_run(fab);
  CU_ASSERT_EQUAL(o[0].finished + o[1].finished, 2);
  int spines = 0;
  for (int v = 0; v < t->n_nodes; v++) {
    if (t->nodes[v].level != 2)
      continue;
    double bytes = 0;
    for (int q = t->nodes[v].first_port; q < t->nodes[v].first_port + t->nodes[v].port_count; q++)
      bytes += fab->ports[q].tx_bytes;
    spines += bytes > 0;
  }
  CU_ASSERT_EQUAL(spines, 2);
  fabric_free(fab);
  fab_param_set_free(params);
  platform_free(pl);
}

/* NVLS on one node of 8 GPUs: every GPU sends S up its NVLink to the NVSwitch and gets S down
 * (all-reduce); reduce-scatter brings down S/N, all-gather sends up S/N. At the NVLS rate. */
static void test_coll_nvls_bytes(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "8" };
  struct platform *p = load_generated(opts, 4);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  const int N = 8;
  const double S = 64e6;
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  double *tx = calloc((size_t)t->n_ports, sizeof(double));
  g_port_tx = tx;
  const enum coll_kind kinds[3] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER };
  const double up[3] = { S, S, S / N }, down[3] = { S, S / N, S };
  struct coll_params defaults;
  coll_params_init(&defaults);
  for (int k = 0; k < 3; k++) {
    struct outcome o;
    run_coll(p->topo, FAB_FIDELITY_FLOW, "nvls", kinds[k], S, gpus, N, 0, 8, &o);
    CU_ASSERT_EQUAL(o.algo, COLL_ALGO_NVLS);
    for (int i = 0; i < N; i++) {
      int nvl = t->gpu_nvl_port[i];
      CU_ASSERT(within(tx[nvl], up[k], 1e-12));
      CU_ASSERT(within(tx[t->ports[nvl].peer_port], down[k], 1e-12));
    }
    CU_ASSERT(within(o.nvlink_bytes, N * up[k], 1e-12));
    CU_ASSERT_EQUAL(o.fabric_bytes, 0);
    double time = o.report.end_s - o.report.start_s;
    fprintf(stderr, "\n    nvls %s %.0f MB, %d GPUs: %.3f us (S / nvls rate %.3f us)", coll_kind_name(kinds[k]),
            S / 1e6, N, time * 1e6, S / defaults.nvls_rate_Bps * 1e6);
    if (kinds[k] == COLL_ALLREDUCE) { /* paced by the NVSwitch's rate, pipelined */
      CU_ASSERT(time >= S / defaults.nvls_rate_Bps);
      CU_ASSERT(time < 1.1 * S / defaults.nvls_rate_Bps);
    }
  }
  /* The ring moves 2(N-1) S over NVLink. */
  g_port_tx = NULL;
  struct outcome ring;
  run_coll(p->topo, FAB_FIDELITY_FLOW, "ring", COLL_ALLREDUCE, S, gpus, N, 0, 8, &ring);
  CU_ASSERT(within(ring.nvlink_bytes, 2.0 * (N - 1) * S, 1e-12));
  /* NVLS across nodes is not to be had: a ring. */
  struct outcome multi;
  const char *opts2[] = { "--gpus", "8", "--gpus-per-node", "4", "--radix", "8" };
  struct platform *p2 = load_generated(opts2, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p2);
  run_coll(p2->topo, FAB_FIDELITY_FLOW, "nvls", COLL_ALLREDUCE, S, gpus, N, 0, 4, &multi);
  CU_ASSERT_EQUAL(multi.algo, COLL_ALGO_RING);
  platform_free(p2);
  free(tx);
  platform_free(p);
}

/* NVLS-SHARP and NVLS-tree on 2 nodes x 4 GPUs: NVLS reduce-scatter and all-gather inside each
 * node (NVLink up: S, then S/g), the rails' all-reduce of S/g across nodes: SHARP puts S/g up and
 * down each NIC, the ring 2(L-1)/L S/g. */
static void test_coll_nvls_hierarchical_bytes(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "4", "--radix", "8" };
  struct platform *p = load_generated(opts, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  const int N = 8, g = 4, L = 2;
  const double S = 16e6;
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  double *tx = calloc((size_t)t->n_ports, sizeof(double));
  g_port_tx = tx;
  g_model_name = "ib";
  struct outcome ns, nt;
  run_coll(p->topo, FAB_FIDELITY_FLOW, "nvls_sharp", COLL_ALLREDUCE, S, gpus, N, 0, g, &ns);
  CU_ASSERT_EQUAL(ns.algo, COLL_ALGO_NVLS_SHARP);
  for (int i = 0; i < N; i++) {
    int nic = t->gpu_nic_port[i];
    CU_ASSERT(within(tx[nic], S / g, 1e-12));
    CU_ASSERT(within(tx[t->ports[nic].peer_port], S / g, 1e-12));
    CU_ASSERT(within(tx[t->gpu_nvl_port[i]], S + S / g, 1e-12));
  }
  CU_ASSERT(within(ns.fabric_bytes, N * S / g, 1e-12));
  CU_ASSERT(within(ns.nvlink_bytes, N * (S + S / g), 1e-12));
  /* Each rail's tree has a root spine of its own (4 rails, 4 spines): S/g on each leaf-spine link
   * used, up and down. */
  int roots = 0;
  for (int q = 0; q < t->n_ports; q++)
    if (t->nodes[t->ports[q].node].level == 1 && t->nodes[t->ports[q].peer_node].level == 2 && tx[q] > 0) {
      CU_ASSERT(within(tx[q], S / g, 1e-12));
      roots++;
    }
  CU_ASSERT_EQUAL(roots, L * g); /* each of the 2 leaves up to each of the 4 roots */
  run_coll(p->topo, FAB_FIDELITY_FLOW, "nvls_tree", COLL_ALLREDUCE, S, gpus, N, 0, g, &nt);
  CU_ASSERT_EQUAL(nt.algo, COLL_ALGO_NVLS_TREE);
  CU_ASSERT(within(nt.fabric_bytes, N * 2.0 * (L - 1) / L * S / g, 1e-12));
  /* Inter-node traffic of the ring only between GPUs of one local index (the rail). */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (i / g != j / g && i % g != j % g)
        CU_ASSERT_EQUAL(g_rec.pair_bytes[i][j], 0);
  fprintf(stderr, "\n    nvls_sharp %.0f MB, %dx%d: %.3f us; nvls_tree %.3f us", S / 1e6, L, g,
          (ns.report.end_s - ns.report.start_s) * 1e6, (nt.report.end_s - nt.report.start_s) * 1e6);
  /* Without InfiniBand, nvls_sharp is nvls_tree. */
  g_model_name = NULL;
  struct outcome fb;
  run_coll(p->topo, FAB_FIDELITY_FLOW, "nvls_sharp", COLL_ALLREDUCE, S, gpus, N, 0, g, &fb);
  CU_ASSERT_EQUAL(fb.algo, COLL_ALGO_NVLS_TREE);
  g_port_tx = NULL;
  free(tx);
  platform_free(p);
}

/* Auto with coll/nvls and coll/sharp: the in-network algorithm for a large all-reduce, the usual
 * one (LL ring) for a small one, as NCCL's tuner picks by predicted time; off: unchanged. */
static void test_coll_auto_in_network(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "8" };
  struct platform *p = load_generated(opts, 4);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  struct coll_params q;
  coll_params_init(&q);
  g_params = &q;
  struct outcome o;
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLREDUCE, 256e6, gpus, 8, 0, 8, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING); /* off by default */
  q.nvls = 1;
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLREDUCE, 256e6, gpus, 8, 0, 8, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_NVLS);
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLREDUCE, 4096, gpus, 8, 0, 8, &o);
  CU_ASSERT_EQUAL(o.algo, COLL_ALGO_RING);
  g_params = NULL;
  platform_free(p);
}

/* PXN: all-to-all on 2 nodes x 4 GPUs of a rail-optimized fat-tree. Without PXN, GPU i sends to
 * every GPU of the other node; with it, only to its own rail there (the rest goes over NVLink
 * to the rail's GPU of its node first): same fabric bytes, no leaf-to-spine bytes, more NVLink. */
static void test_coll_pxn_alltoall(void)
{
  const char *opts[] = { "--gpus", "8", "--gpus-per-node", "4", "--rail-optimized" };
  struct platform *p = load_generated(opts, 5);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  const int N = 8, g = 4;
  const double S = 8e6;
  int gpus[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  double *tx = calloc((size_t)t->n_ports, sizeof(double));
  struct coll_params q;
  coll_params_init(&q);
  coll_params_no_protocol_cost(&q);
  g_params = &q;
  g_port_tx = tx;
  struct outcome off, on;
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLTOALL, S, gpus, N, 0, g, &off);
  double spine_off = tx_between(t, tx, 1, 2);
  CU_ASSERT(within(spine_off, N * (g - 1) * S / N, 1e-12)); /* cross-rail inter-node pairs */
  q.pxn = 1;
  run_coll(p->topo, FAB_FIDELITY_FLOW, NULL, COLL_ALLTOALL, S, gpus, N, 0, g, &on);
  double spine_on = tx_between(t, tx, 1, 2);
  CU_ASSERT_EQUAL(spine_on, 0);
  CU_ASSERT(within(on.fabric_bytes, off.fabric_bytes, 1e-12));
  CU_ASSERT(on.nvlink_bytes > off.nvlink_bytes);
  /* NVLink carries the node's own pairs plus one relay per cross-rail inter-node pair. */
  CU_ASSERT(within(on.nvlink_bytes, off.nvlink_bytes + N * (g - 1) * S / N, 1e-12));
  CU_ASSERT_EQUAL(on.transfers, N * (N - 1) + N * (g - 1));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (i / g != j / g && i % g != j % g)
        CU_ASSERT_EQUAL(g_rec.pair_bytes[i][j], 0);
  fprintf(stderr,
          "\n    all-to-all %.0f MB, 2x4 rail-optimized: spine bytes %.0f without PXN, %.0f with; %.3f us, %.3f us",
          S / 1e6, spine_off, spine_on, (off.report.end_s - off.report.start_s) * 1e6,
          (on.report.end_s - on.report.start_s) * 1e6);
  g_params = NULL;
  g_port_tx = NULL;
  free(tx);
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "collectives";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "coll_ring_allreduce_analytic_single_switch", test_coll_ring_allreduce_analytic_single_switch },
  { "coll_ring_allreduce_analytic_fat_tree", test_coll_ring_allreduce_analytic_fat_tree },
  { "coll_tree_allreduce_bytes", test_coll_tree_allreduce_bytes },
  { "coll_hierarchical_2x4", test_coll_hierarchical_2x4 },
  { "coll_hierarchical_4x2", test_coll_hierarchical_4x2 },
  { "coll_alltoall_pairs", test_coll_alltoall_pairs },
  { "coll_broadcast_delivers", test_coll_broadcast_delivers },
  { "coll_uneven_sizes_whole_bytes", test_coll_uneven_sizes_whole_bytes },
  { "coll_protocol_costs_ring", test_coll_protocol_costs_ring },
  { "coll_protocol_nvlink_steps", test_coll_protocol_nvlink_steps },
  { "coll_ring_model_asks_steps", test_coll_ring_model_asks_steps },
  { "coll_protocol_auto", test_coll_protocol_auto },
  { "coll_sharp_tree_bytes", test_coll_sharp_tree_bytes },
  { "coll_sharp_needs_ib", test_coll_sharp_needs_ib },
  { "coll_sharp_max_trees", test_coll_sharp_max_trees },
  { "coll_sharp_roots_spread", test_coll_sharp_roots_spread },
  { "coll_nvls_bytes", test_coll_nvls_bytes },
  { "coll_nvls_hierarchical_bytes", test_coll_nvls_hierarchical_bytes },
  { "coll_auto_in_network", test_coll_auto_in_network },
  { "coll_pxn_alltoall", test_coll_pxn_alltoall },
  { NULL, NULL },
};
