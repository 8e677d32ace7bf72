/* The RoCEv2 parameter table and its reading into struct roce_config (one place for every
 * default, unit, range and source; checks that name the parameter). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"
#include "roce_internal.h"

#define PRESET "preset"

static const struct param_def roce_params[] = {
  { "roce/pfc", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL,
    "Priority flow control on the RoCE priority; off: lossy RoCE, a full buffer drops",
    "IEEE 802.1Qbb; lossy RoCE as in Mittal et al. IRN, SIGCOMM'18" },
  { "roce/pfc-threshold", PARAM_ENUM, UNIT_NONE, "dynamic", 0, 0, "static|dynamic",
    "XOFF rule: fixed byte counts, or alpha x free shared buffer",
    "HPCC ns-3 simulator (Li et al., SIGCOMM'19) USE_DYNAMIC_PFC_THRESHOLD=1" },
  { "roce/pfc-xoff", PARAM_REAL, UNIT_BYTES, "96KB", 0, 1e12, NULL,
    "Static threshold: ingress PG bytes that send PAUSE", "derived: about 23 MTU of 4 KB, below the mlx5 headroom" },
  { "roce/pfc-xon", PARAM_REAL, UNIT_BYTES, "88KB", 0, 1e12, NULL,
    "Static threshold: ingress PG bytes at or below which RESUME is sent (<= pfc-xoff)",
    "derived: pfc-xoff minus 2 MTU (Linux mlx5e driver: xon = xoff - MTU)" },
  { "roce/pfc-alpha", PARAM_REAL, UNIT_NONE, "0.125", 1.0 / 1024, 64, NULL,
    "Dynamic threshold: XOFF = alpha x (buffer - headroom - shared used)",
    "HPCC ns-3 simulator switch-mmu.cc: shift 3 (alpha 1/8) for ports at NIC rate" },
  { "roce/pfc-resume-offset", PARAM_REAL, UNIT_BYTES, "3KB", 0, 1e9, NULL,
    "Dynamic threshold: RESUME when shared bytes + offset <= XOFF", "HPCC ns-3 switch-mmu resume offset 3 KB" },
  { "roce/pfc-headroom", PARAM_TEXT, UNIT_BYTES, "mlx5", 0, 1e12, "mlx5|hpcc",
    "Ingress headroom per port and priority: mlx5 formula, hpcc (max of 3 x rate x delay and what arrives after XOFF: "
    "rate x (2 delay + switch latency) + 2 MTU) or a size (>= MTU)",
    "Linux mlx5e commit 0696d60853d5; HPCC ns-3 third.cc; IEEE 802.1Qbb headroom annex" },
  { "roce/pfc-quanta", PARAM_INT, UNIT_NONE, "65535", 1, 65535, NULL,
    "Pause quanta (512 bit times each) of a PAUSE; refreshed at half while XOFF holds",
    "IEEE 802.1Qbb 16-bit field; Intel Ethernet docs 512 bit times" },
  { "roce/lossy-alpha", PARAM_REAL, UNIT_NONE, "1", 1.0 / 128, 64, NULL,
    "PFC off: an egress queue may hold at most alpha x the switch's free buffer (dynamic threshold); "
    "beyond it arriving packets are dropped",
    "Choudhury & Hahne, IEEE/ACM ToN 1998 (alpha 1: one congested queue takes half the buffer); shared-buffer "
    "ASICs' dynamic_th 0 (alpha = 2^0)" },
  { "roce/frame-overhead", PARAM_INT, UNIT_BYTES, "82B", 0, 10000, NULL,
    "Wire bytes per packet beyond the payload (fabric/mtu is the payload): Ethernet header 14 + IPv4 20 + UDP 8 + "
    "BTH 12 + ICRC 4 + FCS 4, plus preamble/SFD 8 and inter-frame gap 12",
    "IEEE 802.3 clauses 3 (MAC frame) and 4 (preamble, SFD, interpacket gap); IBTA Vol.1 Annex A17 (RoCEv2: "
    "BTH and ICRC over IPv4/UDP port 4791)" },
  { "roce/buffer", PARAM_REAL, UNIT_BYTES, "32MB", 16e3, 1e12, NULL, "Shared packet buffer of each switch",
    "HPCC ns-3 mix/config.txt BUFFER_SIZE 32 MB (Spectrum-3 64 MB, TH2 42 MB)" },
  { "roce/priority", PARAM_INT, UNIT_NONE, "3", 0, 7, NULL, "Ethernet priority (PFC class) of RoCE data",
    "convention: the lossless class RoCE deployments commonly configure" },
  { "roce/ecn", PARAM_BOOL, UNIT_NONE, "on", 0, 1, NULL, "ECN marking at switch egress (the DCQCN CP)",
    "RFC 3168; DCQCN SIGCOMM'15 3.1" },
  { "roce/ecn-kmin", PARAM_REAL, UNIT_BYTES, "5KB", 0, 1e12, NULL,
    "RED Kmin at roce/ecn-ref-rate (scaled linearly with the port rate)",
    "DCQCN paper default (Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM'15; the CoNEXT'16 "
    "fluid-model code)" },
  { "roce/ecn-kmax", PARAM_REAL, UNIT_BYTES, "200KB", 0, 1e12, NULL,
    "RED Kmax at roce/ecn-ref-rate (scaled linearly with the port rate)",
    "DCQCN paper default (Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM'15; the CoNEXT'16 "
    "fluid-model code)" },
  { "roce/ecn-pmax", PARAM_REAL, UNIT_NONE, "0.01", 0, 1, NULL, "RED marking probability at Kmax",
    "DCQCN paper default 1% (Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM'15; the "
    "CoNEXT'16 fluid-model code)" },
  { "roce/ecn-ref-rate", PARAM_REAL, UNIT_BPS, "40Gbps", 1e6, 1e13, NULL, "Link rate at which ecn-kmin/kmax apply",
    "DCQCN testbed 40GbE; HPCC scales K linearly with rate" },
  { "roce/dcqcn", PARAM_ENUM, UNIT_NONE, "nic", 0, 0, "nic|paper|off|paper-scaled",
    "DCQCN parameter preset (ConnectX firmware, SIGCOMM'15 paper, the paper's with R_AI, R_HAI and the byte "
    "counter scaled by NIC rate / 40 Gb/s) or no congestion control",
    "paper: Zhu et al., SIGCOMM'15 and CoNEXT'16 fluid-model code; nic: ConnectX firmware defaults (mlxconfig ROCE_CC "
    "parameters)" },
  { "roce/dcqcn-g", PARAM_TEXT, UNIT_NONE, PRESET, 0, 1, PRESET,
    "Alpha gain g: weight of a new sample (number, or preset)",
    "paper 1/256 (SIGCOMM'15 3.1); nic 5/1024 (ConnectX DCE_TCP_G = 1019: alpha keeps 1019/1024 of itself, "
    "NVIDIA DCQCN parameters, MLNX_OFED docs)" },
  { "roce/dcqcn-alpha-init", PARAM_TEXT, UNIT_NONE, PRESET, 0, 1, PRESET, "Alpha of a new flow",
    "paper 1; nic 1023/1024 (INITIAL_ALPHA_VALUE)" },
  { "roce/dcqcn-alpha-interval", PARAM_TEXT, UNIT_SECONDS, PRESET, 0, 1, PRESET, "tau': alpha decay period",
    "paper 55us (SIGCOMM'15 3.1); nic 1us (ConnectX DCE_TCP_RTT, NVIDIA DCQCN parameters, MLNX_OFED docs)" },
  { "roce/dcqcn-timer", PARAM_TEXT, UNIT_SECONDS, PRESET, 0, 1, PRESET, "T: rate-increase timer",
    "paper 55us; nic 300us (RPG_TIME_RESET)" },
  { "roce/dcqcn-byte-counter", PARAM_TEXT, UNIT_BYTES, PRESET, 0, 1e12, PRESET, "B: rate-increase byte counter",
    "paper 10MB (paper-scaled: x NIC rate / 40 Gb/s); nic 32767B (RPG_BYTE_RESET)" },
  { "roce/dcqcn-f", PARAM_TEXT, UNIT_NONE, PRESET, 0, 1000, PRESET, "F: fast-recovery steps",
    "paper 5; nic 1 (RPG_THRESHOLD)" },
  { "roce/dcqcn-rai", PARAM_TEXT, UNIT_BPS, PRESET, 0, 1e13, PRESET, "R_AI: additive increase",
    "paper 40Mbps (paper-scaled: x NIC rate / 40 Gb/s); nic 5Mbps (RPG_AI_RATE)" },
  { "roce/dcqcn-rhai", PARAM_TEXT, UNIT_BPS, PRESET, 0, 1e13, PRESET, "R_HAI: hyper increase",
    "paper 400Mbps, 10 x R_AI as the firmware (paper-scaled: x NIC rate / 40 Gb/s); nic 50Mbps (RPG_HAI_RATE)" },
  { "roce/dcqcn-min-rate", PARAM_TEXT, UNIT_BPS, PRESET, 0, 1e13, PRESET, "Floor of the sending rate",
    "paper 1Mbps (the papers fix none: the nic value); nic 1Mbps (RPG_MIN_RATE)" },
  { "roce/dcqcn-dec-interval", PARAM_TEXT, UNIT_SECONDS, PRESET, 0, 1, PRESET, "At most one rate cut per interval",
    "paper 0 (CNPs already 50us apart); nic 4us (RATE_REDUCE_MONITOR_PERIOD)" },
  { "roce/dcqcn-min-dec-factor", PARAM_TEXT, UNIT_NONE, PRESET, 0, 100, PRESET,
    "Percentage of RC a single cut leaves at least (0: no bound)",
    "paper 0 (none; RC (1 - alpha/2) >= RC/2 anyway); nic 50 (RPG_MIN_DEC_FAC, ConnectX firmware default)" },
  { "roce/dcqcn-clamp-target", PARAM_TEXT, UNIT_NONE, PRESET, 0, 0, "on|off|" PRESET,
    "on: every cut sets RT <- RC; off: see roce/dcqcn-clamp-after-timer (on|off|preset)",
    "paper on (SIGCOMM'15 3.1: RT = RC at each cut); nic off (CLAMP_TGT_RATE = 0, ConnectX firmware default)" },
  { "roce/dcqcn-clamp-after-timer", PARAM_TEXT, UNIT_NONE, PRESET, 0, 0, "on|off|" PRESET,
    "With clamp-target off: a cut sets RT <- RC only if a timer-driven increase happened since the "
    "previous cut, so back-to-back cuts keep RT (on|off|preset)",
    "paper off (unused); nic on (CLAMP_TGT_RATE_AFTER_TIME_INC = 1, ConnectX firmware default; HPCC ns-3 "
    "CheckRateDecreaseMlx rpTimeStage)" },
  { "roce/dcqcn-alpha-update", PARAM_TEXT, UNIT_NONE, PRESET, 0, 0, "per-cnp|per-window|" PRESET,
    "per-cnp: alpha <- (1-g) alpha + g at each cut; per-window: once per alpha-interval in which a CNP "
    "arrived, decay otherwise (per-cnp|per-window|preset)",
    "paper per-cnp (SIGCOMM'15 3.1); nic per-window (DCE_TCP_RTT window; HPCC ns-3 UpdateAlphaMlx)" },
  { "roce/cnp-interval", PARAM_TEXT, UNIT_SECONDS, PRESET, 0, 1, PRESET,
    "NP: at most one CNP per flow per interval; 0 = a CNP for every marked packet",
    "paper tau 50us; nic 4us (MIN_TIME_BETWEEN_CNPS, Barre paper)" },
  { "roce/qps-per-conn", PARAM_INT, UNIT_NONE, "1", 1, 64, NULL,
    "QPs a transfer is striped over; each QP has its own UDP source port, hence its own ECMP path",
    "NCCL_IB_QPS_PER_CONNECTION default 1" },
  { "roce/rp-per-qp", PARAM_BOOL, UNIT_NONE, "off", 0, 1, NULL,
    "Packet fidelity: a QP's DCQCN rate, target, alpha and timers carry over from one transfer to the next "
    "(off: every transfer starts afresh at line rate, as ns-3's RDMA models and flow fidelity's floor model take it)",
    "ConnectX keeps a QP's rate limiter across work requests until it recovers to line rate (DCQCN's RP is "
    "per QP, Zhu et al. SIGCOMM'15 3.1); off by default: with it DCQCN's trapped state spans transfers "
    "(docs/roce.md)" },
  { "roce/ecmp-seed", PARAM_INT, UNIT_NONE, "0", 0, 4294967295.0, NULL,
    "Seed folded into QP numbers and the ECMP hash (0: the run's --seed)", "" },
  { "roce/drop-rate", PARAM_REAL, UNIT_NONE, "0", 0, 1, NULL, "Probability that a link loses a packet",
    "operators' rule of thumb: RDMA needs a loss rate below 1e-5" },
  { "roce/rto", PARAM_REAL, UNIT_SECONDS, "1ms", 1e-6, 10, NULL,
    "Retransmission timeout: go back to the first unacknowledged PSN after no progress",
    "Meta SIGCOMM'24: millisecond-scale local ACK timeout; HPCC NACK interval 500us" },
  { "roce/flow-timeouts", PARAM_ENUM, UNIT_NONE, "drawn", 0, 0, "drawn|mean|off",
    "Flow fidelity under loss: go-back-N retransmission timeouts, each roce/rto plus a round trip after a "
    "transfer drains; drawn = a Poisson count per transfer (from the run's seed and its QP), mean = the "
    "expected count, off = none (the goodput cap alone)",
    "the packet model's receiver NACKs a PSN once: the expected packet lost again, or a message's last packet "
    "lost, waits for the timer (docs/roce.md, Loss at flow fidelity)" },
  { "roce/fluid", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|on|off",
    "Flow fidelity: integrate the DCQCN fluid model while a bottleneck is in transient (off: max-min only); "
    "auto: on with the paper preset, off with nic (docs/roce.md)",
    "Zhu et al., ECN or Delay, CoNEXT'16, section 4; auto: the fluid model tracks packet fidelity "
    "with paper, not yet with nic (synchronised fluid flows, docs/roce.md)" },
  { "roce/fluid-rp", PARAM_ENUM, UNIT_NONE, "machine", 0, 0, "machine|ode",
    "Reaction point of the fluid model: machine = the packet model's DCQCN state machine (dcqcn.c, both "
    "presets, firmware clamp) driven by the expected ECN marks; ode = the CoNEXT'16 RC/RT/alpha equations",
    "machine: the ODE spreads the first 50% cut over tau and over-reduces (docs/roce.md); ode: Zhu et al. "
    "CoNEXT'16 section 4" },
  { "roce/fluid-marks", PARAM_ENUM, UNIT_NONE, "mean", 0, 0, "mean|random",
    "Machine reaction point of the fluid model: where a flow's next ECN mark falls; mean = at its expected "
    "position, random = drawn per packet with the RED probability, from the flow's own seeded stream",
    "random follows RED (each packet marked independently, Floyd & Jacobson 1993) and the packet model's "
    "spread over seeds on 2 flows, but was not closer on the validation matrix as a whole (docs/roce.md)" },
  { "roce/fluid-step", PARAM_REAL, UNIT_SECONDS, "2us", 1e-8, 1e-4, NULL, "Fixed Euler step of the fluid model",
    "derived: below tau* (a 1-hop RTT is ~5us) and 1/50 of the fastest rate constant 2 tau / alpha = 100us" },
  { "roce/fluid-settle", PARAM_REAL, UNIT_NONE, "0.01", 1e-6, 0.5, NULL,
    "A transient ends when every RC moved by less than this fraction over a window of max(20 steps, 2 tau')",
    "derived: 1% of the rate, well below the 10% convergence band the validation checks (docs/validation.md)" },
  { "roce/flow-fifo", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|on|off",
    "Flow fidelity without the fluid model: a saturated switch egress serves its flows in proportion to their "
    "arrival rates (FIFO shares) instead of max-min; with DCQCN on, senders inject at their DCQCN floor rate, "
    "so only ports DCQCN cannot hold are FIFO; auto: on",
    "the FIFO fluid model (Jain); the floor rate is the packet model's DCQCN machine under continuous marking "
    "(docs/roce.md, DCQCN's floor rate)" },
  { "roce/flow-spreading", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|on|off",
    "Flow fidelity with FIFO shares and PFC on: PFC pauses of the links feeding a congested egress throttle "
    "the flows crossing them toward other egresses; auto: as roce/flow-fifo",
    "IEEE 802.1Qbb; auto: see roce/flow-fifo (docs/roce.md)" },
  { "roce/flow-queue-wait", PARAM_ENUM, UNIT_NONE, "on", 0, 0, "on|off",
    "Flow fidelity with pause spreading: a transfer starting behind a standing queue (the PGs of the links "
    "paused toward a switch egress, each at its XOFF) completes that queue's sojourn time later, at most by what "
    "separates its end from the makespan of the egress's bytes (off: its first byte waits behind no queue)",
    "FIFO: a packet waits for the bytes queued before it, and a work-conserving egress serves every byte by its "
    "makespan; the queue is pause spreading's, IEEE 802.1Qbb (docs/roce.md, A transfer that starts behind a "
    "standing queue)" },
  { "roce/flow-held-ports", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|on|off",
    "Flow fidelity with FIFO shares and DCQCN on: a switch egress DCQCN holds gets the utilisation, marks, CNPs "
    "and cuts the packet model measures for as many senders into one switch port (off: max-min, its marks not "
    "estimated); auto: as roce/flow-fifo",
    "measured: the packet model, senders into one port (into two of one switch where it holds two or more) for "
    "four phases of the port's age up to 160 ms, once per port shape (load, depth, ports, link rate, delay) "
    "(docs/roce.md, Where DCQCN holds a port)" },
  { "roce/flow-held-measure", PARAM_ENUM, UNIT_NONE, "fine", 0, 0, "load|fine|feeders",
    "Flow fidelity, a port DCQCN holds: load measures it with equal senders standing for its load, in phases "
    "of its age from 20 ms; fine as load, in phases from 0.625 ms where none of its transfers crosses "
    "another held port; feeders as fine, and a port fed through switch egresses "
    "measured with those egresses and the transfers through them at their start dates",
    "measured: of the 221 held-out patterns at 100 Gb/s (docs/validation.md part 5) within 5 % of packet "
    "fidelity: load 130, fine 146, feeders 158 (128, 156, 160 on a fresh draw); CPU on a 4,096-GPU job "
    "1.4x load's with fine, 12x with feeders (docs/roce.md, Fine phases)" },
  { "roce/flow-held-shares", PARAM_ENUM, UNIT_NONE, "equal", 0, 0, "equal|spread",
    "Flow fidelity, a port DCQCN holds: equal shares it max-min among its flows; spread gives them the spread of "
    "rates the packet-level measure saw among its senders in the phase of the port's age, the oldest flow the "
    "lowest, those at or above the mean sharing the rest max-min",
    "measured: a sender DCQCN's trapped state holds keeps a fraction of the mean rate and does not finish its "
    "message; spread brings the 18 dense 100 Gb/s iterations within 2 % but moves held-out patterns and a "
    "1,024-GPU job away (docs/roce.md, Unequal shares at a held port)" },
  { "roce/trace-flow", PARAM_TEXT, UNIT_NONE, "none", 0, 0, NULL,
    "Flow id whose DCQCN state (RC, RT, alpha) goes to roce_flow_rate.csv (ids count transfers in the order "
    "they are posted: sgfabric flows posts the rows that start together source GPU by source GPU, not in "
    "file order); at flow fidelity from the fluid model, which it then requires",
    "" },
  { "roce/trace-port", PARAM_TEXT, UNIT_NONE, "none", 0, 0, NULL,
    "Port (\"leaf0->spine1\") whose egress queue goes to roce_port_queue.csv (at flow fidelity its fluid "
    "queue, which requires the fluid model)",
    "" },
  { "roce/trace-interval", PARAM_REAL, UNIT_SECONDS, "1us", 0, 1, NULL, "Smallest interval between two trace rows",
    "" },
  { "roce/bfd-interval", PARAM_REAL, UNIT_SECONDS, "300ms", 1e-6, 60, NULL,
    "Failures (--failures): BFD transmit interval between the switches; a link is declared down after "
    "roce/bfd-multiplier intervals without a BFD packet",
    "RFC 5880 6.8.4 (detection time = DetectMult x interval); 300 ms x 3 a common default (Arista EOS), "
    "50 ms x 3 the fast setting (Cisco NX-OS default)" },
  { "roce/bfd-multiplier", PARAM_INT, UNIT_NONE, "3", 1, 255, NULL,
    "Failures: BFD detection multiplier (missed intervals before the session goes down)",
    "RFC 5880 4.1 Detect Mult; 3 usual" },
  { "roce/route-update", PARAM_REAL, UNIT_SECONDS, "50ms", 0, 60, NULL,
    "Failures: from BFD declaring a link down (or up) to the ECMP groups of every switch using the change "
    "(BGP update, FIB/ECMP group reprogramming)",
    "assumption: tens of ms for BGP withdrawals and FIB updates in a Clos (RFC 7938 section 6.3 on convergence)" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void roce_register_params(void) { fab_param_register(roce_params); }

/* The two DCQCN presets, in table order: g, alpha_init, tau', T, B, F, R_AI, R_HAI, min, dec, cnp. */
static const double g_presets[2][12] = {
  /* nic: DCE_TCP_G = 1019 keeps 1019/1024 of alpha per window (new-sample weight 5/1024) and
     * DCE_TCP_RTT = 1 us is the window (NVIDIA's DCQCN parameter list for ConnectX firmware) */
  /* nic */ { 5.0 / 1024, 1023.0 / 1024, 1e-6, 300e-6, 32767, 1, 5e6 / 8, 50e6 / 8, 1e6 / 8, 4e-6, 4e-6, 50 },
  /* paper */ { 1.0 / 256, 1.0, 55e-6, 55e-6, 10e6, 5, 40e6 / 8, 400e6 / 8, 1e6 / 8, 0, 50e-6, 0 },
};

static const char *const g_preset_names[12] = {
  "roce/dcqcn-g",
  "roce/dcqcn-alpha-init",
  "roce/dcqcn-alpha-interval",
  "roce/dcqcn-timer",
  "roce/dcqcn-byte-counter",
  "roce/dcqcn-f",
  "roce/dcqcn-rai",
  "roce/dcqcn-rhai",
  "roce/dcqcn-min-rate",
  "roce/dcqcn-dec-interval",
  "roce/cnp-interval",
  "roce/dcqcn-min-dec-factor",
};
static const unit_kind g_preset_units[12] = {
  UNIT_NONE, UNIT_NONE, UNIT_SECONDS, UNIT_SECONDS, UNIT_BYTES,   UNIT_NONE,
  UNIT_BPS,  UNIT_BPS,  UNIT_BPS,     UNIT_SECONDS, UNIT_SECONDS, UNIT_NONE
};

static int fail(char *err, size_t errlen, const char *fmt, const char *name, const char *detail)
{
  snprintf(err, errlen, fmt, name, detail);
  return -1;
}

/* A two-way preset parameter: *value keeps the preset unless the text is yes (1) or no (0). */
static int read_switch(const struct param_set *ps, const char *name, const char *yes, const char *no, int *value,
                       char *err, size_t errlen)
{
  const char *text = fab_param_get_text(ps, name);
  if (!strcmp(text, yes))
    *value = 1;
  else if (!strcmp(text, no))
    *value = 0;
  else if (strcmp(text, PRESET)) {
    snprintf(err, errlen, "parameter '%s': '%s' is not %s, %s or preset", name, text, yes, no);
    return -1;
  }
  return 0;
}

int roce__config_read(struct roce_config *c, const struct fabric *fab, char *err, size_t errlen)
{
  const struct param_set *ps = fab->params;
  memset(c, 0, sizeof *c);
  c->pfc.enabled = fab_param_get_int(ps, "roce/pfc");
  c->pfc.kind = fab_param_get_choice(ps, "roce/pfc-threshold") == 0 ? PFC_STATIC : PFC_DYNAMIC;
  c->pfc.xoff_B = fab_param_get(ps, "roce/pfc-xoff");
  c->pfc.xon_B = fab_param_get(ps, "roce/pfc-xon");
  c->pfc.alpha = fab_param_get(ps, "roce/pfc-alpha");
  c->pfc.resume_offset_B = fab_param_get(ps, "roce/pfc-resume-offset");
  c->pfc.quanta = fab_param_get(ps, "roce/pfc-quanta");
  c->buffer_B = fab_param_get(ps, "roce/buffer");
  c->lossy_alpha = fab_param_get(ps, "roce/lossy-alpha");
  c->frame_overhead_B = fab_param_get(ps, "roce/frame-overhead");
  c->priority = fab_param_get_int(ps, "roce/priority");
  c->ecn_enabled = fab_param_get_int(ps, "roce/ecn");
  c->ecn_ref.kmin_B = fab_param_get(ps, "roce/ecn-kmin");
  c->ecn_ref.kmax_B = fab_param_get(ps, "roce/ecn-kmax");
  c->ecn_ref.pmax = fab_param_get(ps, "roce/ecn-pmax");
  c->ecn_ref_rate_Bps = fab_param_get(ps, "roce/ecn-ref-rate");
  c->qps_per_conn = fab_param_get_int(ps, "roce/qps-per-conn");
  c->qp_rate_kept = fab_param_get_int(ps, "roce/rp-per-qp");
  c->ecmp_seed = (uint64_t)fab_param_get(ps, "roce/ecmp-seed");
  if (c->ecmp_seed == 0)
    c->ecmp_seed = fab->seed;
  c->drop_rate = fab_param_get(ps, "roce/drop-rate");
  if (c->drop_rate >= 1) /* every packet lost on its first link: no transfer could complete */
    return fail(err, errlen, "parameter '%s': 1 loses every packet and no transfer completes; give a value below 1%s",
                "roce/drop-rate", "");
  c->rto_s = fab_param_get(ps, "roce/rto");
  c->flow_timeouts = fab_param_get_choice(ps, "roce/flow-timeouts");
  c->trace_interval_s = fab_param_get(ps, "roce/trace-interval");
  c->fluid_step_s = fab_param_get(ps, "roce/fluid-step");
  c->fluid_ode = fab_param_get_choice(ps, "roce/fluid-rp") == 1;
  c->fluid_random_marks = fab_param_get_choice(ps, "roce/fluid-marks") == 1;
  c->fluid_settle = fab_param_get(ps, "roce/fluid-settle");

  if (c->ecn_ref.kmin_B > c->ecn_ref.kmax_B)
    return fail(err, errlen, "parameter '%s': Kmin is larger than roce/ecn-kmax%s", "roce/ecn-kmin", "");
  if (c->ecn_ref.pmax < 0 || c->ecn_ref.pmax > 1)
    return fail(err, errlen, "parameter '%s': Pmax must be within [0, 1]%s", "roce/ecn-pmax", "");
  if (c->pfc.kind == PFC_STATIC && c->pfc.xon_B > c->pfc.xoff_B)
    return fail(err, errlen, "parameter '%s': XON is above roce/pfc-xoff%s", "roce/pfc-xon", "");

  const char *headroom = fab_param_get_text(ps, "roce/pfc-headroom");
  if (!strcmp(headroom, "mlx5"))
    c->headroom_mode = 0;
  else if (!strcmp(headroom, "hpcc"))
    c->headroom_mode = 1;
  else {
    c->headroom_mode = 2;
    if (fab_unit_parse_size(headroom, &c->headroom_fixed_B) != 0)
      return fail(err, errlen, "parameter '%s': '%s' is not mlx5, hpcc or a size", "roce/pfc-headroom", headroom);
    if (c->headroom_fixed_B < fab->mtu)
      return fail(err, errlen, "parameter '%s': %s is below one MTU (fabric/mtu)", "roce/pfc-headroom", headroom);
  }

  int preset = fab_param_get_choice(ps, "roce/dcqcn");
  c->dcqcn_preset = preset;
  int paper = preset == ROCE_DCQCN_PAPER || preset == ROCE_DCQCN_PAPER_SCALED;
  int fluid = fab_param_get_choice(ps, "roce/fluid"); /* auto, on, off */
  c->fluid = fluid == 1 || (fluid == 0 && paper);
  /* auto, on, off: auto is on. With DCQCN on the senders inject at their DCQCN floor rate
   * (roce_dcqcn_floor.h), so FIFO shares and spreading act only where DCQCN cannot hold a port;
   * the fluid model, where it runs, replaces both (roce_flow.c). */
  int fifo = fab_param_get_choice(ps, "roce/flow-fifo"), spread = fab_param_get_choice(ps, "roce/flow-spreading");
  c->flow_fifo = fifo != 2;
  c->flow_spread = spread == 1 || (spread == 0 && c->flow_fifo);
  c->flow_queue_wait = fab_param_get_choice(ps, "roce/flow-queue-wait") == 0;
  int held = fab_param_get_choice(ps, "roce/flow-held-ports");
  c->flow_held = ROCE_HELD_MEASURE_OFF;
  if (held == 1 || (held == 0 && c->flow_fifo)) /* the measure's choices in the enum's order, from load */
    c->flow_held =
        (enum roce_held_measure)(ROCE_HELD_MEASURE_LOAD + fab_param_get_choice(ps, "roce/flow-held-measure"));
  c->flow_held_spread = c->flow_held != ROCE_HELD_MEASURE_OFF && fab_param_get_choice(ps, "roce/flow-held-shares") == 1;
  const double *base = g_presets[paper ? 1 : 0];
  /* paper-scaled: the SIGCOMM'15 constants were set for 40 GbE. R_AI, R_HAI (rate steps) and B
   * (bytes between increases) scale with the line rate, the timers do not: in rates normalised
   * by the line rate the machine then behaves as the paper's at 40 Gb/s (docs/roce.md). */
  c->dcqcn_scale = 1;
  if (preset == ROCE_DCQCN_PAPER_SCALED) {
    double nic_Bps = 0;
    const struct topo *t = fab->topo;
    for (int g = 0; g < t->n_gpus; g++)
      if (t->gpu_nic_port[g] >= 0 && t->ports[t->gpu_nic_port[g]].rate_Bps > nic_Bps)
        nic_Bps = t->ports[t->gpu_nic_port[g]].rate_Bps;
    if (nic_Bps > 0)
      c->dcqcn_scale = nic_Bps / ROCE_PAPER_RATE_Bps;
  }
  double v[12];
  for (int i = 0; i < 12; i++) {
    const char *text = fab_param_get_text(ps, g_preset_names[i]);
    v[i] = base[i];
    if (i == 4 || i == 6 || i == 7) /* B, R_AI, R_HAI */
      v[i] *= c->dcqcn_scale;
    if (!strcmp(text, PRESET))
      continue;
    if (fab_unit_parse(g_preset_units[i], text, &v[i]) != 0 &&
        !(g_preset_units[i] == UNIT_NONE && fab_unit_parse_number(text, &v[i]) == 0))
      return fail(err, errlen, "parameter '%s': '%s' is not 'preset' or a valid value", g_preset_names[i], text);
  }
  if (v[0] <= 0 || v[0] > 1)
    return fail(err, errlen, "parameter '%s': g must be within (0, 1]%s", g_preset_names[0], "");
  if (v[1] < 0 || v[1] > 1)
    return fail(err, errlen, "parameter '%s': alpha must be within [0, 1]%s", g_preset_names[1], "");
  if (v[2] <= 0 || v[3] <= 0)
    return fail(err, errlen, "parameter '%s': timers must be positive%s", g_preset_names[v[2] <= 0 ? 2 : 3], "");
  if (v[5] != floor(v[5]) || v[5] > 1000)
    return fail(err, errlen, "parameter '%s': F must be an integer in [0, 1000]%s", g_preset_names[5], "");
  if (v[11] < 0 || v[11] > 100)
    return fail(err, errlen, "parameter '%s': a percentage must be within [0, 100]%s", g_preset_names[11], "");
  c->dcqcn.g = v[0];
  c->dcqcn.alpha_init = v[1];
  c->dcqcn.alpha_interval_s = v[2];
  c->dcqcn.timer_s = v[3];
  c->dcqcn.byte_counter_B = v[4];
  c->dcqcn.fast_recovery = (int)v[5];
  c->dcqcn.rai_Bps = v[6];
  c->dcqcn.rhai_Bps = v[7];
  c->dcqcn.min_rate_Bps = v[8] > 0 ? v[8] : 1;
  c->dcqcn.dec_interval_s = v[9];
  c->cnp_interval_s = v[10];

  /* Firmware semantics of the cut (dcqcn.h): preset values, nic then paper. */
  static const int clamp_target[2] = { 0, 1 }, clamp_after_timer[2] = { 1, 0 }, per_window[2] = { 1, 0 };
  int pi = paper ? 1 : 0;
  int ct = clamp_target[pi], cat = clamp_after_timer[pi], pw = per_window[pi];
  if (read_switch(ps, "roce/dcqcn-clamp-target", "on", "off", &ct, err, errlen) != 0 ||
      read_switch(ps, "roce/dcqcn-clamp-after-timer", "on", "off", &cat, err, errlen) != 0 ||
      read_switch(ps, "roce/dcqcn-alpha-update", "per-window", "per-cnp", &pw, err, errlen) != 0)
    return -1;
  c->dcqcn.clamp = ct ? DCQCN_CLAMP_ALWAYS : cat ? DCQCN_CLAMP_AFTER_TIMER : DCQCN_CLAMP_NEVER;
  c->dcqcn.min_dec_factor = v[11] / 100;
  c->dcqcn.alpha_per_window = pw;

  const char *trace = fab_param_get_text(ps, "roce/trace-flow");
  c->trace_flow = -1;
  if (strcmp(trace, "none")) {
    char *end;
    long id = strtol(trace, &end, 10);
    if (*trace == '\0' || *end != '\0' || id < 0)
      return fail(err, errlen, "parameter '%s': '%s' is not none or a flow id", "roce/trace-flow", trace);
    c->trace_flow = id;
  }
  trace = fab_param_get_text(ps, "roce/trace-port");
  c->trace_port = -1;
  if (strcmp(trace, "none")) {
    const struct topo *t = fab->topo;
    for (int p = 0; p < t->n_ports && c->trace_port < 0; p++) {
      char name[64];
      snprintf(name, sizeof name, "%s->%s", t->nodes[t->ports[p].node].name, t->nodes[t->ports[p].peer_node].name);
      if (!strcmp(name, trace))
        c->trace_port = p;
    }
    if (c->trace_port < 0)
      return fail(err, errlen, "parameter '%s': no port '%s' (write node->peer, e.g. leaf0->spine1)", "roce/trace-port",
                  trace);
  }
  /* At flow fidelity only the fluid model has a reaction point's state and a queue that evolve
   * (the floor model sets rates, not a trajectory): a trace without it would be its first row. */
  if (fab->fidelity == FAB_FIDELITY_FLOW && (c->trace_flow >= 0 || c->trace_port >= 0) &&
      !(c->fluid && preset != ROCE_DCQCN_OFF))
    return fail(err, errlen,
                "parameter '%s': at flow fidelity DCQCN's state and the queues are traced from the fluid model, "
                "which is off here (%s; packet fidelity traces any run)",
                c->trace_flow >= 0 ? "roce/trace-flow" : "roce/trace-port",
                preset == ROCE_DCQCN_OFF ? "DCQCN is off" : "roce/fluid:on, or the paper preset, turns it on");
  return 0;
}

int roce__check_headroom(const struct fabric *fab, const struct roce_state *rs, char *err, size_t errlen)
{
  if (!rs->cfg.pfc.enabled)
    return 0;
  const struct topo *t = fab->topo;
  for (int n = 0; n < t->n_nodes; n++) {
    if (t->nodes[n].kind != TOPO_SWITCH)
      continue;
    /* The headroom of every ingress port (one lossless priority, roce/priority) is reserved out
     * of the switch buffer; the shared pool is what is left. With nothing left, every packet
     * crosses XOFF and the fabric pauses itself forever; ask for room for one MTU per port. */
    int ports = 0;
    double largest = 0;
    for (int p = 0; p < t->n_ports; p++)
      if (t->ports[p].node == n) {
        ports++;
        if (rs->ports[p].headroom_B > largest)
          largest = rs->ports[p].headroom_B;
      }
    double headroom = rs->switches[n].headroom_total_B, need = ports * fab->mtu;
    if (rs->cfg.buffer_B - headroom < need) {
      snprintf(
          err, errlen,
          "parameter 'roce/pfc-headroom': %s (up to %.0f B per port) x %d ports of switch %s (priority %d) = %.0f B "
          "of headroom leaves %.0f B of roce/buffer = %.0f B for the shared pool, less than one fabric/mtu "
          "(%.0f B) per port: lower roce/pfc-headroom or raise roce/buffer",
          fab_param_get_text(fab->params, "roce/pfc-headroom"), largest, ports, t->nodes[n].name, rs->cfg.priority,
          headroom, rs->cfg.buffer_B - headroom, rs->cfg.buffer_B, fab->mtu);
      return -1;
    }
  }
  return 0;
}

uint64_t roce__qp_key(const struct roce_config *c, uint64_t run_seed, int src, int dst, int qp)
{
  (void)run_seed;
  uint64_t sip = 0x0A000000u | (uint32_t)src, dip = 0x0A000000u | (uint32_t)dst;
  uint32_t qpn =
      (uint32_t)(fab_rng_mix64(((uint64_t)src << 40) ^ ((uint64_t)dst << 16) ^ (uint64_t)qp ^ c->ecmp_seed) & 0xFFFFFF);
  uint64_t sport = 0xC000u | (qpn & 0x3FFF);
  return fab_rng_mix64((sip << 32 | dip) ^ fab_rng_mix64(sport << 16 | ROCE_UDP_DPORT));
}
