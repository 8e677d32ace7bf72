/* The collectives' parameter table, read once per run into struct coll_params. */
#include "coll_params.h"

#include <stdio.h>

const struct param_def coll_param_table[] = {
  { "coll/algorithm", PARAM_ENUM, UNIT_NONE, "auto", 0, 0,
    "auto|ring|tree|hierarchical|sharp|nvls|nvls_tree|nvls_sharp",
    "All-reduce algorithm (sharp and nvls: also reduce-scatter and all-gather); auto: NVLS/SHARP forms as "
    "coll/nvls and coll/sharp allow (docs/collectives.md, In-network reduction), else hierarchical when every "
    "node holds the same number (>1) of a multi-node group's members, else ring; sharp on a fabric without "
    "IB SHARP is refused",
    "NCCL_ALGO (Ring, Tree, CollNetDirect, NVLS, NVLSTree); hierarchical as in NCCL's NVLS/CollNet split and SimAI" },
  { "coll/sharp", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "auto may use IB SHARP (in-switch reduction) for all-reduces, on ib fabrics at flow fidelity only",
    "NCCL_COLLNET_ENABLE=1 with the SHARP plugin (nccl-rdma-sharp-plugins); off by default like NCCL" },
  { "coll/sharp-max-trees", PARAM_INT, UNIT_NONE, "2", 1, 1024, NULL,
    "SHARP trees (streaming aggregations) a switch takes part in at once; a collective whose tree would "
    "exceed it on one of its switches uses the usual algorithm (nvls_sharp: nvls_tree) instead of waiting",
    "assumed: streaming aggregation is a per-switch resource the aggregation manager shares out as quotas "
    "(NVIDIA SHARP docs, Rev 3.x: per-tree quotas, SAT jobs' default quota); NVIDIA advises at least one tree per "
    "rail per job" },
  { "coll/sharp-switch-latency", PARAM_REAL, UNIT_SECONDS, "1us", 0, 1e-3, NULL,
    "Latency a SHARP switch adds to each pipeline step it reduces (and the root to each it sends down)",
    "assumed, an order of magnitude: Graham et al., SHArP, COM-HPC 2016, report small all-reduces of a few us "
    "over several switch levels" },
  { "coll/sharp-reduction-rate", PARAM_REAL, UNIT_BPS, "400Gbps", 1e6, 1e15, NULL,
    "Rate at which a SHARP switch reduces one tree edge's data (caps each leg of the tree)",
    "NVIDIA Quantum-2 (SHARPv3): reduction at the 400 Gb/s NDR port rate" },
  { "coll/nvls", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "auto may use NVLS (NVSwitch reduction) inside a node and NVLS-tree/NVLS-SHARP across nodes",
    "NCCL_NVLS_ENABLE (on by default on H100 with NVSwitch in NCCL; off here so results stay as they were)" },
  { "coll/nvls-latency", PARAM_REAL, UNIT_SECONDS, "9us", 0, 1e-3, NULL,
    "Latency the NVSwitch adds to an NVLS all-reduce (reduction going up, multicast going down)",
    "derived: puts auto's choice between ring/LL and NVLS between 1 and 2 MiB on 8 H100, where NCCL's tuner "
    "puts it (NVIDIA/nccl-tests#309: ring LL up to 1 MB, NVLS from 2 MB)" },
  { "coll/nvls-reduction-rate", PARAM_REAL, UNIT_BPS, "275GB/s", 1e6, 1e15, NULL,
    "NVLS data rate per GPU (each GPU sends its buffer up and gets the result down at this rate)",
    "8x H100 NVLS all-reduce: algbw ~275 GB/s, busbw ~480 GB/s vs 370 ring (GTC talk S62129 as quoted in "
    "NVIDIA/nccl#1374; NVIDIA/nccl#2140)" },
  { "coll/pxn", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "All-to-all: a transfer to another node and rail goes over NVLink to the sender node's GPU on the "
    "destination's rail, which sends it on its NIC",
    "NCCL PXN (2.12+), NCCL_PXN_DISABLE; NVIDIA blog: Doubling all2all Performance with NCCL 2.12 (2022)" },
  { "coll/ring", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|steps|pipelined",
    "Rings move step by step, or as one pipelined transfer per edge plus the later steps' latency; auto: "
    "steps at packet fidelity, and at flow fidelity where the fabric's model acts on steps (RoCE whose DCQCN "
    "holds congested ports: the nic preset at 100 Gb/s), pipelined elsewhere",
    "equal times on rings whose edges share no link (tests/unit/workloads/test_wl_coll); RoCE at 100 Gb/s, "
    "Llama-3 8B on 1,024 GPUs: -5.3 % of packet fidelity pipelined, -0.6 % in steps (docs/roce.md)" },
  { "coll/channels", PARAM_INT, UNIT_NONE, "1", 1, 32, NULL,
    "Parallel rings or trees a collective is split into (NCCL channels)", "NCCL_MIN_NCHANNELS" },
  { "coll/chunk", PARAM_REAL, UNIT_BYTES, "4MB", 4096, 1e12, NULL,
    "Pipelining unit of tree all-reduce and broadcast chains", "NCCL_BUFFSIZE default 4 MiB" },
  { "coll/protocol", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|simple|ll|ll128",
    "NCCL protocol; auto: per call, the lowest time NCCL's alpha-beta model predicts (LL: half the line rate, "
    "LL128: 120/128 of it, Simple: all of it, each with its own latencies)",
    "NCCL_PROTO; NCCL src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime)" },
  { "coll/launch-latency", PARAM_REAL, UNIT_SECONDS, "2us", 0, 1e-3, NULL,
    "Kernel launch: each member's first transfer starts that long after its call",
    "a CUDA kernel launch costs a few us (NVIDIA, Getting Started with CUDA Graphs, 2019); "
    "nccl-tests' back-to-back loop hides part of it" },
  { "coll/simple-base-latency", PARAM_REAL, UNIT_SECONDS, "8.4us", 0, 1e-3, NULL,
    "Latency a call with the Simple protocol pays once, after the launch", "NCCL tuning.cc baseLat, Ring/Simple" },
  { "coll/ll-base-latency", PARAM_REAL, UNIT_SECONDS, "3.6us", 0, 1e-3, NULL,
    "Latency a call with the LL protocol pays once, after the launch", "NCCL tuning.cc baseLat, Ring/LL" },
  { "coll/ll128-base-latency", PARAM_REAL, UNIT_SECONDS, "10us", 0, 1e-3, NULL,
    "Latency a call with the LL128 protocol pays once, after the launch", "NCCL tuning.cc baseLat, Ring/LL128" },
  { "coll/simple-step-latency-nvlink", PARAM_REAL, UNIT_SECONDS, "3.4us", 0, 1e-3, NULL,
    "Synchronisation latency of a Simple step between GPUs of one node, the fabric's own latency included",
    "NCCL tuning.cc hwLat, NVLink Ring/Simple" },
  { "coll/simple-step-latency-net", PARAM_REAL, UNIT_SECONDS, "9.6us", 0, 1e-3, NULL,
    "Synchronisation latency of a Simple step across the network, the fabric's own latency included",
    "NCCL tuning.cc hwLat, Net Ring/Simple" },
  { "coll/ll-step-latency-nvlink", PARAM_REAL, UNIT_SECONDS, "0.47us", 0, 1e-3, NULL,
    "Synchronisation latency of an LL step between GPUs of one node, the fabric's own latency included",
    "NCCL tuning.cc hwLat, NVLink Ring/LL" },
  { "coll/ll-step-latency-net", PARAM_REAL, UNIT_SECONDS, "2.7us", 0, 1e-3, NULL,
    "Synchronisation latency of an LL step across the network, the fabric's own latency included",
    "NCCL tuning.cc hwLat, Net Ring/LL" },
  { "coll/ll128-step-latency-nvlink", PARAM_REAL, UNIT_SECONDS, "1.9us", 0, 1e-3, NULL,
    "Synchronisation latency of an LL128 step between GPUs of one node, the fabric's own latency included",
    "NCCL tuning.cc hwLat, NVLink Ring/LL128" },
  { "coll/ll128-step-latency-net", PARAM_REAL, UNIT_SECONDS, "4us", 0, 1e-3, NULL,
    "Synchronisation latency of an LL128 step across the network, the fabric's own latency included",
    "NCCL tuning.cc hwLat, Net Ring/LL128" },
  { "coll/timeout", PARAM_REAL, UNIT_SECONDS, "600s", 0, 1e6, NULL,
    "Failures (--failures): the communicator timeout; a transfer that makes no progress for this long fails the "
    "job (summary.json job_failed_at_s); 0: never",
    "PyTorch ProcessGroupNCCL default timeout, 10 min since PyTorch 2.2 (pytorch/pytorch#110947; 30 min before "
    "and for other backends)" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void coll_register_params(void) { fab_param_register(coll_param_table); }

void coll_params_from(const struct param_set *set, struct coll_params *p)
{
  coll_params_init(p);
  p->algo = (enum coll_algo)fab_param_get_choice(set, "coll/algorithm");
  p->ring_mode = (enum coll_ring_mode)fab_param_get_choice(set, "coll/ring");
  p->channels = fab_param_get_int(set, "coll/channels");
  p->chunk_bytes = fab_param_get(set, "coll/chunk");
  p->proto = (enum coll_proto)fab_param_get_choice(set, "coll/protocol");
  p->launch_s = fab_param_get(set, "coll/launch-latency");
  p->sharp = fab_param_get(set, "coll/sharp") != 0;
  p->sharp_max_trees = fab_param_get_int(set, "coll/sharp-max-trees");
  p->sharp_latency_s = fab_param_get(set, "coll/sharp-switch-latency");
  p->sharp_rate_Bps = fab_param_get(set, "coll/sharp-reduction-rate");
  p->nvls = fab_param_get(set, "coll/nvls") != 0;
  p->nvls_latency_s = fab_param_get(set, "coll/nvls-latency");
  p->nvls_rate_Bps = fab_param_get(set, "coll/nvls-reduction-rate");
  p->pxn = fab_param_get(set, "coll/pxn") != 0;
  static const char *const names[COLL_PROTO_COUNT] = { NULL, "simple", "ll", "ll128" };
  char key[64];
  for (int i = COLL_PROTO_SIMPLE; i < COLL_PROTO_COUNT; i++) {
    snprintf(key, sizeof key, "coll/%s-base-latency", names[i]);
    p->base_latency_s[i] = fab_param_get(set, key);
    snprintf(key, sizeof key, "coll/%s-step-latency-nvlink", names[i]);
    p->step_latency_nvlink_s[i] = fab_param_get(set, key);
    snprintf(key, sizeof key, "coll/%s-step-latency-net", names[i]);
    p->step_latency_net_s[i] = fab_param_get(set, key);
  }
}
