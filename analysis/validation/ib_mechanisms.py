#!/usr/bin/env python3
"""Figures of docs/ib.md for three InfiniBand mechanisms, each at packet and flow fidelity, from
`sgfabric flows` runs (the unit tests check the same effects on their own topologies):

  - credit window: one 16 MB transfer through one switch over 10 us links, against the buffer
    per VL; the cap buffer/RTT of docs/ib.md and the line rate;
  - lossless incast: 8 senders of 2 MB into one receiver through one switch, 32 KiB per VL: each
    sender's throughput against 1/8 of line rate;
  - routing: a 128-GPU random permutation of 4 MB on ft2-128, each transfer's throughput under
    D-mod-K tables and adaptive routing.

    /usr/bin/python3 analysis/validation/ib_mechanisms.py [BUILD_DIR] [--work DIR] [--plot FILE.png]
"""
import csv
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


WORK = option("--work", os.path.join(ROOT, "results", "ib_mechanisms"))
PLOT = option("--plot", os.path.join(ROOT, "docs", "figures", "ib", "mechanisms.png"))
args = [a for a in sys.argv[1:] if not a.startswith("--") and a not in (WORK, PLOT)]
SGF = os.path.join(args[0] if args else os.path.join(ROOT, "build"), "sgfabric")
LINE = 50e9  # 400 Gb/s in bytes per second
MTU, CREDIT_DELAY, SWITCH = 4096, 256e-9, 130e-9
FRAME, BLOCK = 26, 64  # ib/frame-overhead and ib/credit-block: a full packet is 4,122 B, 65 credit blocks
PACKET_BLOCKS = -(-(MTU + FRAME) // BLOCK)


def sgf(*argv):
    subprocess.run([SGF] + list(argv), check=True, stdout=subprocess.DEVNULL)


def flows(name, platform, rows, fidelity, *cfg):
    path = os.path.join(WORK, name + ".csv")
    with open(path, "w") as f:
        f.write("src,dst,bytes,start_us\n")
        f.writelines("%d,%d,%d,0\n" % r for r in rows)
    out = os.path.join(WORK, "%s-%s%s" % (name, fidelity, "".join("-" + c.split(":")[-1] for c in cfg)))
    sgf("flows", "--platform", platform, "--flows", path, "--fabric", "ib", "--fidelity", fidelity, "--seed", "1",
        "--out", out, *["--cfg=" + c for c in cfg])
    with open(os.path.join(out, "flows.csv")) as f:
        return [(int(r["src"]), int(r["dst"]), float(r["bytes"]) / (float(r["fct_us"]) * 1e-6))
                for r in csv.DictReader(f)]


def main():
    os.makedirs(WORK, exist_ok=True)
    long_links = os.path.join(WORK, "one-switch-10us.xml")
    short_links = os.path.join(WORK, "one-switch.xml")
    sgf("platform", "--gpus", "9", "--gpus-per-node", "1", "--radix", "32", "--link-latency", "10us",
        "-o", long_links)
    sgf("platform", "--gpus", "9", "--gpus-per-node", "1", "--radix", "32", "-o", short_links)
    buffers = [64, 128, 256, 512, 1024, 2048]
    # 10 us links are long-haul: beyond 2,048 blocks (128 KiB) of credit only ib/long-haul advertises the buffer.
    window = {f: [flows("window-%d" % b, long_links, [(0, 1, 16000000)], f, "ib/buffer-per-vl:%dKiB" % b,
                        "ib/long-haul:on")[0][2]
                  for b in buffers] for f in ("packet", "flow")}
    rtt = 2 * 10e-6 + (MTU + FRAME) / LINE + CREDIT_DELAY
    # docs/ib.md: min over hops of (full packets the buffer holds) x MTU / RTT_hop, each packet taking
    # ceil((MTU + 26) / 64) blocks; the hop into the switch adds its latency.
    # A transfer's throughput is bytes / FCT, and FCT adds the path's latency, measured with one packet.
    cap = [(b * 1024 // BLOCK // PACKET_BLOCKS) * MTU / (rtt + SWITCH) for b in buffers]
    one_packet = flows("window-latency", long_links, [(0, 1, MTU)], "packet", "ib/buffer-per-vl:2048KiB",
                       "ib/long-haul:on")[0][2]
    latency = MTU / one_packet - (MTU + FRAME) / LINE
    payload_rate = LINE * MTU / (MTU + FRAME)
    expected = [16e6 / (16e6 / min(payload_rate, c) + latency) for c in cap]
    incast = {f: flows("incast", short_links, [(1 + i, 0, 2000000) for i in range(8)], f,
                       "ib/buffer-per-vl:32KiB") for f in ("packet", "flow")}
    perm = list(range(128))
    random.Random(7).shuffle(perm)
    rows = [(s, perm[s], 4000000) for s in range(128) if perm[s] != s and s // 8 != perm[s] // 8]
    ft2 = os.path.join(ROOT, "platforms", "ft2-128.xml")
    routing = {"D-mod-K, packet": flows("perm", ft2, rows, "packet", "ib/routing:dmodk"),
               "D-mod-K, flow": flows("perm", ft2, rows, "flow", "ib/routing:dmodk"),
               "AR, packet": flows("perm", ft2, rows, "packet"),
               "AR, flow": flows("perm", ft2, rows, "flow")}
    for f in window:
        print("credit window, %s:" % f, ", ".join("%d KiB %.2f GB/s" % (b, r / 1e9)
              for b, r in zip(buffers, window[f])))
    print("buffer/RTT cap:", ", ".join("%.2f GB/s" % (c / 1e9) for c in cap), "; with the path latency %.2f us:" %
          (latency * 1e6), ", ".join("%.2f GB/s" % (e / 1e9) for e in expected))
    for f in incast:
        print("incast, %s: senders at %s of 1/8 line rate" % (f, ", ".join("%.4f" % (r / (LINE / 8)) for _, _, r in
                                                                           incast[f])))
    for k, v in routing.items():
        t = sorted(r / LINE for _, _, r in v)
        print("routing, %s: min %.3f, mean %.3f of line rate" % (k, t[0], sum(t) / len(t)))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.3))
    ax[0].plot(buffers, [r / 1e9 for r in window["packet"]], "o-", label="packet")
    ax[0].plot(buffers, [r / 1e9 for r in window["flow"]], "x--", label="flow")
    ax[0].plot(buffers, [e / 1e9 for e in expected], ":", color="gray", label="min(line rate, buffer / RTT), + latency")
    ax[0].set_xscale("log", base=2)
    ax[0].set_xlabel("buffer per VL (KiB)")
    ax[0].set_ylabel("throughput (GB/s)")
    ax[0].set_title("Credit window: one transfer, 10 us links")
    ax[0].legend(fontsize=8)
    ax[0].grid(alpha=0.3)
    x = range(8)
    ax[1].bar([i - 0.2 for i in x], [r / (LINE / 8) for _, _, r in incast["packet"]], 0.4, label="packet")
    ax[1].bar([i + 0.2 for i in x], [r / (LINE / 8) for _, _, r in incast["flow"]], 0.4, label="flow")
    ax[1].axhline(0.95, color="red", lw=0.8, ls="--")
    ax[1].axhline(1.05, color="red", lw=0.8, ls="--")
    ax[1].set_ylim(0.8, 1.1)
    ax[1].set_xticks(list(x))
    ax[1].set_xticklabels(["gpu%d" % (i + 1) for i in x])
    ax[1].set_ylabel("throughput / (line rate / 8)")
    ax[1].set_title("Lossless incast 8 -> 1, 32 KiB per VL (drops 0)")
    ax[1].legend(fontsize=8)
    for (k, v), style in zip(routing.items(), ("-", "--", "-", "--")):
        t = sorted(r / LINE for _, _, r in v)
        ax[2].step(t, [(i + 1) / len(t) for i in range(len(t))], style, where="post", label=k)
    ax[2].set_xlabel("transfer throughput / line rate")
    ax[2].set_ylabel("share of inter-node transfers")
    ax[2].set_title("Routing: ft2-128 random permutation, 4 MB")
    ax[2].legend(fontsize=8)
    ax[2].grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(PLOT)), exist_ok=True)
    fig.savefig(PLOT, dpi=110)


if __name__ == "__main__":
    main()
