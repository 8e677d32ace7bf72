/* The InfiniBand model's parameter table ("ib/...") and its checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ib.h"
#include "ib_internal.h"

static const struct param_def ib_params[] = {
  { "ib/routing", PARAM_ENUM, UNIT_NONE, "ar", 0, 0, "dmodk|ar",
    "Switch routing: static D-mod-K forwarding tables, or adaptive routing (least-loaded allowed port per packet)",
    "OpenSM ftree / Zahavi D-mod-K; NVIDIA Quantum AR (ar_ftree), on by default on NDR fabrics" },
  { "ib/input-queue", PARAM_ENUM, UNIT_NONE, "voq", 0, 0, "voq|fifo",
    "Switch input buffer per VL: queues per output sharing the buffer's credits (VOQ), or one FIFO (textbook HOL)",
    "Quantum-class switches queue per output inside the input buffer; FIFO: Karol et al. 1987 HOL model" },
  { "ib/mtu", PARAM_INT, UNIT_BYTES, "0", 0, 4096, NULL, "IB MTU (256, 512, 1024, 2048 or 4096); 0 takes fabric/mtu",
    "IBTA Vol.1 7.7.2: MTU 256..4096, 4096 usual" },
  { "ib/credit-block", PARAM_INT, UNIT_BYTES, "64", 0, 4096, NULL,
    "Credit unit: receive buffers are counted in blocks of this size", "IBTA Vol.1 7.9.4: 64-byte blocks" },
  { "ib/buffer-per-vl", PARAM_INT, UNIT_BYTES, "64KiB", 0, 1e9, NULL,
    "Receive buffer per data VL per input port (switch input buffer, HCA receive buffer)",
    "ib_flit_sim: IS4 ibuf 1000 x 64B flits per port; NDR sizes unpublished" },
  { "ib/long-haul", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "Lift the cap of 2,048 blocks (128 KiB) on the credit a port advertises per VL, for long-haul links whose "
    "buffers hold the bandwidth-delay product (range extenders); off: a larger ib/buffer-per-vl is advertised as "
    "2,048 blocks",
    "IBTA Vol.1 7.9.4: FCCL and FCTBS are 12-bit counters compared modulo 4,096, so at most 2,048 blocks of "
    "credit can be outstanding; long-haul extenders (e.g. NVIDIA MetroX) buffer beyond it" },
  { "ib/frame-overhead", PARAM_INT, UNIT_BYTES, "26B", 0, 4096, NULL,
    "Bytes per packet beyond the payload (ib/mtu is the payload): LRH 8 + BTH 12 + ICRC 4 + VCRC 2; on the wire "
    "and in the credits the packet occupies",
    "IBTA Vol.1 ch. 7 packet format (LRH, BTH, ICRC, VCRC) and 7.9 (credits count whole packets)" },
  { "ib/num-vls", PARAM_INT, UNIT_NONE, "1", 0, 15, NULL, "Data VLs per port (1 to 8)",
    "IBTA Vol.1 7.6.3: 1, 2, 4, 8 or 15 data VLs; NCCL uses one SL by default" },
  { "ib/sl2vl", PARAM_TEXT, UNIT_NONE, "mod", 0, 0, NULL,
    "SL to VL map: 'mod' (SL mod num-vls) or up to 16 VLs 'v0,v1,...'; a transfer's SL is its tag",
    "IBTA Vol.1 7.6.6 SL2VLMappingTable" },
  { "ib/vlarb-high", PARAM_TEXT, UNIT_NONE, "none", 0, 0, NULL,
    "High-priority VL arbitration table 'VL:weight,...' (weight in 64-byte units, 0..255) or 'none'",
    "IBTA Vol.1 7.6.9 VLArbitrationTable" },
  { "ib/vlarb-low", PARAM_TEXT, UNIT_NONE, "equal", 0, 0, NULL,
    "Low-priority VL arbitration table 'VL:weight,...', or 'equal' (every data VL, weight 64 = 4 KB)",
    "IBTA Vol.1 7.6.9 VLArbitrationTable" },
  { "ib/vlarb-high-limit", PARAM_INT, UNIT_NONE, "16", 0, 255, NULL,
    "High-priority bytes (4 KB units) sent before a waiting low-priority packet goes; 0: one high-priority packet per "
    "low-priority opportunity; 255 unlimited",
    "IBTA Vol.1 7.6.9 LimitOfHighPriority; ib_flit_sim vlHighLimit 16" },
  { "ib/switch-latency", PARAM_TEXT, UNIT_SECONDS, "platform", 0, 1e-3, "platform",
    "Switch cut-through latency, e.g. 110ns; 'platform' keeps the platform's sgfabric/switch-latency",
    "NDR class 100-130ns (HDR QM8700 130ns)" },
  { "ib/nic-latency", PARAM_TEXT, UNIT_SECONDS, "fabric", 0, 1e-3, "fabric",
    "HCA send processing before a transfer's first packet; 'fabric' keeps fabric/nic-latency", "ConnectX HCA 0.5-1us" },
  { "ib/credit-delay", PARAM_REAL, UNIT_SECONDS, "256ns", 0, 1e-3, NULL,
    "Flow-control packet processing added to the link delay before returned credits count",
    "ib_flit_sim credMinTime 0.256us" },
  { "ib/ar-threshold", PARAM_INT, UNIT_BYTES, "0", 0, 1e9, NULL,
    "Adaptive routing keeps the forwarding table's port while its load (bytes queued and in flight) is at most this",
    "ib_flit_sim AR 'bounded' queue thresholds; 0 = always least loaded" },
  { "ib/ar-ties", PARAM_ENUM, UNIT_NONE, "random", 0, 0, "random|table",
    "Packet fidelity, adaptive routing: among candidate ports of equal least load, draw one (seeded), or keep the "
    "forwarding table's port when it is one of them",
    "modelling choice: the Quantum tie rule is unpublished; published AR designs spread among equally graded ports "
    "(US 9,331,929 B1; US 2025/0039109 A1); 'table' lets the transfers alone on their table port lose to "
    "others' overflow onto it (docs/ib.md, AR ties)" },
  { "ib/ar-paths", PARAM_INT, UNIT_NONE, "64", 1, 4096, NULL,
    "Flow fidelity, adaptive routing: a flow with at most this many minimal paths, and at least as many packets, "
    "is spread over all; otherwise it takes the least-loaded one when it starts",
    "modelling choice: 64 spreads over a 2-tier tree's spines (32 on rail-1024, where one path per flow gave "
    "its permutation +6 %); a 3-tier tree's 1,024 paths would join every flow into one max-min component" },
  { "ib/ar-imbalance", PARAM_REAL, UNIT_NONE, "0.060", 0, 0.5, NULL,
    "Flow fidelity, adaptive routing: share of line rate that per-packet AR loses on a leaf whose up-links are all "
    "busy with traffic to many leaves that others also send to; scaled by Erlang C and destination diversity, 0 off",
    "least-squares fit to packet fidelity (26 B framing, AR ties drawn), 0.060: 128- and 1,024-GPU random permutations "
    "(docs/ib.md, AR imbalance)" },
  { "ib/flow-input-shares", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL,
    "Flow fidelity: a saturated switch output shares its capacity among its input ports in turn, then among each "
    "input's flows (caps from one pass along the paths); off: max-min among flows only",
    "IBTA Vol 1 7.6.9 (arbitration among input ports); packet fidelity's round robin (docs/ib.md)" },
  { "ib/flow-tree-growth", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL,
    "Flow fidelity: a congestion tree holds victims at a switch input buffer only once it has filled it, the buffers "
    "before its bottleneck in turn with what its sources send beyond their rates; off: every tree fully grown at once",
    "IBTA Vol.1 7.9 (credits: a buffer blocks its upstream port only when full); docs/ib.md, Congestion trees grow" },
  { "ib/flow-unit-pace", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL,
    "Flow fidelity: the flows one upstream port sends into a full switch input buffer, held by different congested "
    "outputs, leave its queue at one pace, the slowest one's per unit of weight; off: each at its own output's share",
    "IBTA Vol.1 7.9 (credits are per buffer and VL, shared by every output the buffer's packets go to); docs/ib.md, "
    "Congestion trees" },
  { "ib/series", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "Write ib_series.csv: buffer occupancy and free credits of ports over time (packet fidelity)", "" },
  { "ib/series-interval", PARAM_REAL, UNIT_SECONDS, "1us", 1e-9, 1, NULL, "Sampling period of ib_series.csv", "" },
  { "ib/series-port", PARAM_TEXT, UNIT_NONE, "all", 0, 0, NULL,
    "Ports sampled: 'all', a node name (its ports) or 'node->peer'", "" },
  { "ib/failover", PARAM_ENUM, UNIT_NONE, "sm", 0, 0, "sm|ar",
    "Failures (--failures): how the fabric routes around a failed link: the subnet manager's re-sweep and new "
    "forwarding tables (sm), or the switches' local self-healing (ar)",
    "OpenSM: a port state change traps to the SM, which re-sweeps and uploads new LFTs; NVIDIA SHIELD "
    "(self-healing interconnect, Switch-IB 2 and later) reroutes in the switches" },
  { "ib/sm-sweep-base", PARAM_REAL, UNIT_SECONDS, "100ms", 0, 3600, NULL,
    "Failures, ib/failover sm: fixed part of the SM's recovery (trap, sweep start, routing engine start)",
    "assumption; Vishnu et al., 'Performance modeling of subnet management on fat tree InfiniBand networks "
    "using OpenSM' (IPDPS workshops 2005): sweep time grows with the fabric" },
  { "ib/sm-sweep-per-switch", PARAM_REAL, UNIT_SECONDS, "1ms", 0, 10, NULL,
    "Failures, ib/failover sm: SM recovery time per switch of the fabric (discovery MADs, LFT upload)",
    "assumption (order of magnitude of OpenSM sweeps: about a second for a thousand switches); see ib/sm-sweep-base" },
  { "ib/ar-recovery", PARAM_REAL, UNIT_SECONDS, "1ms", 0, 10, NULL,
    "Failures, ib/failover ar: time for the switches to route around a failed link by themselves",
    "NVIDIA/Mellanox SHIELD: recovery from a link failure in about a millisecond, 5,000x faster than the "
    "SM's several seconds (vendor claim)" },
  { "ib/transport-timeout", PARAM_INT, UNIT_NONE, "18", 1, 31, NULL,
    "Failures, packet fidelity: RC local ACK timeout exponent: a QP with packets unacknowledged for 4.096 us x "
    "2^value sends again from the first unacknowledged one (18: 1.07 s)",
    "IBTA Vol.1 9.7.6.1.3 transport timer, 11.2.4.2 Local ACK Timeout (4.096 us x 2^value); NCCL_IB_TIMEOUT, "
    "default 18 (NCCL environment variables documentation)" },
  { "ib/transport-retry", PARAM_INT, UNIT_NONE, "7", 0, 7, NULL,
    "Failures, packet fidelity: timeouts in a row without an acknowledgement that a QP retries before it goes "
    "to the error state, which fails the job",
    "IBTA Vol.1 9.7.6.1.3 Retry Count (3 bits); NCCL_IB_RETRY_CNT, default 7" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void ib_register_params(void) { fab_param_register(ib_params); }

static int parse_latency(const struct param_set *set, const char *name, const char *keep, double *out, char *err,
                         size_t errlen)
{
  const char *text = fab_param_get_text(set, name);
  if (strcmp(text, keep) == 0)
    return 0;
  if (fab_unit_parse_time(text, out) != 0) {
    snprintf(err, errlen, "%s: '%s' is not '%s' or a duration with a unit (e.g. 110ns)", name, text, keep);
    return -1;
  }
  return 0;
}

int ib__params_load(struct ib_params *p, struct fabric *fab, char *err, size_t errlen)
{
  const struct param_set *set = fab->params;
  char message[192];
  memset(p, 0, sizeof *p);
  int mtu = fab_param_get_int(set, "ib/mtu");
  if (mtu == 0)
    mtu = (int)fab->mtu;
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
    snprintf(err, errlen, "ib/mtu: %d B is not an IB MTU (256, 512, 1024, 2048 or 4096; 0 takes fabric/mtu)", mtu);
    return -1;
  }
  p->mtu_bytes = (uint32_t)mtu;
  fab->mtu = mtu;
  int block = fab_param_get_int(set, "ib/credit-block");
  if (block == 0) {
    snprintf(err, errlen, "ib/credit-block: 0 B gives zero credits (IBTA counts credits in 64-byte blocks)");
    return -1;
  }
  p->block_bytes = (uint32_t)block;
  double buffer = fab_param_get(set, "ib/buffer-per-vl");
  p->buffer_blocks = (int32_t)floor(buffer / block);
  if (p->buffer_blocks == 0) {
    snprintf(err, errlen, "ib/buffer-per-vl: %.0f B gives zero credits per VL: no packet could ever be sent", buffer);
    return -1;
  }
  if ((double)p->buffer_blocks * block < mtu) {
    snprintf(err, errlen,
             "ib/buffer-per-vl: %.0f B is smaller than one MTU (%d B): a full packet could never be sent (give at "
             "least %d B)",
             buffer, mtu, mtu);
    return -1;
  }
  /* FCCL and FCTBS are 12-bit fields compared modulo 4,096 (IBTA Vol.1 7.9.4): a credit limit
   * more than 2,048 blocks ahead of the blocks sent would read as behind, so a port advertises at
   * most 2,048 blocks per VL, whatever buffer it has, unless the link is long-haul. */
  p->long_haul = fab_param_get_int(set, "ib/long-haul");
  p->buffer_bytes = (double)p->buffer_blocks * block;
  if (!p->long_haul && p->buffer_blocks > IB_MAX_CREDIT_BLOCKS)
    p->buffer_blocks = IB_MAX_CREDIT_BLOCKS;
  p->header_bytes = (uint32_t)fab_param_get_int(set, "ib/frame-overhead");
  fab->frame_overhead_B = p->header_bytes;
  p->num_vls = fab_param_get_int(set, "ib/num-vls");
  if (p->num_vls < 1 || p->num_vls > IB_MAX_VLS) {
    snprintf(err, errlen, "ib/num-vls: %d data VLs; this model supports 1 to %d", p->num_vls, IB_MAX_VLS);
    return -1;
  }
  if (fab->fidelity == FAB_FIDELITY_PACKET && p->num_vls > FAB_MAX_QUEUES) {
    snprintf(err, errlen, "ib/num-vls: at most %d", FAB_MAX_QUEUES);
    return -1;
  }
  if (ib_sl2vl_parse(p->sl2vl, fab_param_get_text(set, "ib/sl2vl"), p->num_vls, message, sizeof message) != 0) {
    snprintf(err, errlen, "ib/sl2vl: %s", message);
    return -1;
  }
  if (ib_vlarb_parse(&p->vlarb, 0, fab_param_get_text(set, "ib/vlarb-high"), p->num_vls, message, sizeof message) !=
      0) {
    snprintf(err, errlen, "ib/vlarb-high: %s", message);
    return -1;
  }
  const char *low = fab_param_get_text(set, "ib/vlarb-low");
  if (strcmp(low, "equal") == 0)
    ib_vlarb_equal(&p->vlarb, 1, p->num_vls, 64);
  else if (ib_vlarb_parse(&p->vlarb, 1, low, p->num_vls, message, sizeof message) != 0) {
    snprintf(err, errlen, "ib/vlarb-low: %s", message);
    return -1;
  }
  p->vlarb.high_limit = fab_param_get_int(set, "ib/vlarb-high-limit");
  for (int s = 0; s < IB_NUM_SLS; s++)
    if (!ib_vlarb_serves(&p->vlarb, p->sl2vl[s])) {
      snprintf(err, errlen,
               "ib/vlarb-low: VL %d (SL %d maps to it through ib/sl2vl) has no entry of non-zero weight in "
               "ib/vlarb-high or ib/vlarb-low: its packets would never leave a switch",
               p->sl2vl[s], s);
      return -1;
    }
  if (parse_latency(set, "ib/switch-latency", "platform", &fab->switch_latency_s, err, errlen) != 0 ||
      parse_latency(set, "ib/nic-latency", "fabric", &fab->nic_latency_s, err, errlen) != 0)
    return -1;
  p->credit_delay_s = fab_param_get(set, "ib/credit-delay");
  p->routing = (ib_routing)fab_param_get_choice(set, "ib/routing");
  p->input_queue = (ib_input_queue)fab_param_get_choice(set, "ib/input-queue");
  p->ar_threshold_bytes = fab_param_get(set, "ib/ar-threshold");
  p->ar_ties = (ib_ar_ties)fab_param_get_choice(set, "ib/ar-ties");
  p->ar_paths = fab_param_get_int(set, "ib/ar-paths");
  p->ar_imbalance = fab_param_get(set, "ib/ar-imbalance");
  p->input_shares = fab_param_get_int(set, "ib/flow-input-shares");
  p->tree_growth = fab_param_get_int(set, "ib/flow-tree-growth");
  p->unit_pace = fab_param_get_int(set, "ib/flow-unit-pace");
  p->series = fab_param_get_int(set, "ib/series");
  p->series_interval_s = fab_param_get(set, "ib/series-interval");
  snprintf(p->series_port, sizeof p->series_port, "%s", fab_param_get_text(set, "ib/series-port"));
  /* IBTA Vol.1 11.2.4.2: the Local ACK Timeout of a QP is 4.096 us x 2^value. */
  p->transport_timeout_s = 4.096e-6 * ldexp(1.0, fab_param_get_int(set, "ib/transport-timeout"));
  p->transport_retries = fab_param_get_int(set, "ib/transport-retry");
  return 0;
}
