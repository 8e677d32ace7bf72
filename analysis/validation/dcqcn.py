#!/usr/bin/env python3
"""Part 2: DCQCN (paper preset) N-to-1 incast at 100 Gb/s, packet fidelity, against the fluid
model's fixed point (Zhu et al., ECN or Delay, CoNEXT'16, section 4) for N = 2, 10, 64.

Flow 0 starts at t = 0, the N-1 others join at t = 1 ms (as tests/unit/roce/test_roce_fabric.c);
each flow carries C/N x 0.32 s. The RoCE model's series give the traced flow's RC
(roce/trace-flow, one run per traced flow, same seed, so the same simulation) and the queue of
the switch port to the receiver (roce/trace-port:leaf0->gpu0).
"""
import bisect
import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import (OUT, SEED, cmd_block, pmap, read_fcts, save_json, savefig, sgf, show,  # noqa: E402
                    write_fragment)

C = 100e9 / 8          # B/s
PKT = 4096.0
JOIN = 1e-3
DUR = 0.32
WIN = 1e-3
NS = [2, 10, 64]
TRACED = {2: [0, 1], 10: [0, 1, 5, 9], 64: [0, 1, 32, 63]}
# paper preset (docs/roce.md; Zhu et al., SIGCOMM'15, and the CoNEXT'16 fluid-model code)
G_ALPHA, TAU_P, T_TIMER, B_BYTES, RAI = 1 / 256, 55e-6, 55e-6, 10e6, 40e6 / 8
KMIN = 5e3 * C / 5e9    # roce/ecn-kmin 5 KB at 40 Gb/s, scaled to the port rate
KMAX = 200e3 * C / 5e9
PMAX = 0.01


def fixed_point(n):
    """p*, q* of the DCQCN fluid model (packets as units, as plugins/roce/dcqcn.c)."""
    c, rai, b = C / PKT, RAI / PKT, B_BYTES / PKT
    term = 1 / b + n / (T_TIMER * c)
    p = (rai * n * n / (TAU_P * c * c) * term * term) ** (1 / 3)
    q = KMIN + p / PMAX * (KMAX - KMIN)
    return p, q


def read_series(path, col):
    ts, vs = [], []
    with open(path) as f:
        for r in csv.DictReader(f):
            ts.append(float(r["time_s"]))
            vs.append(float(r[col]))
    return ts, vs


def window_means(ts, vs, t0, t1, w):
    """Time-weighted means over windows [t0 + k w, t0 + (k+1) w) of the step function that takes
    the value vs[i] from ts[i] on (0 before ts[0])."""
    cum = [0.0]
    for i in range(1, len(ts)):
        cum.append(cum[-1] + vs[i - 1] * (ts[i] - ts[i - 1]))

    def integral(t):
        i = bisect.bisect_right(ts, t) - 1
        if i < 0:
            return 0.0
        return cum[i] + vs[i] * (t - ts[i])

    nwin = int(round((t1 - t0) / w))
    return [(integral(t0 + (k + 1) * w) - integral(t0 + k * w)) / w for k in range(nwin)]


def main():
    base = os.path.join(OUT, "dcqcn")
    os.makedirs(base, exist_ok=True)
    plat = os.path.join(base, "incast-100g.xml")
    plat_args = ["platform", "--gpus", "72", "--gpus-per-node", "1", "--radix", "256",
                 "--link-rate", "100Gbps", "-o", plat]
    sgf(plat_args, log="dcqcn platform")
    cmds = [show(plat_args)]
    jobs = []
    for n in NS:
        fl = os.path.join(base, "incast-%d.csv" % n)
        size = int(C / n * DUR)
        with open(fl, "w") as f:
            f.write("src,dst,bytes,start_us\n")
            for i in range(n):
                f.write("%d,0,%d,%d\n" % (i + 1, size, 0 if i == 0 else int(JOIN * 1e6)))
        cmds.append("# incast-%d.csv: src 1..%d -> dst 0, %d bytes each, src 1 at 0 us, the others at %d us"
                    % (n, n, size, int(JOIN * 1e6)))
        for fid in TRACED[n]:
            d = os.path.join(base, "n%d-flow%d" % (n, fid))
            args = ["flows", "--platform", plat, "--flows", fl, "--fabric", "roce", "--fidelity", "packet",
                    "--seed", str(SEED), "--cfg=roce/dcqcn:paper", "--cfg=roce/trace-flow:%d" % fid,
                    "--cfg=roce/trace-port:leaf0->gpu0", "--cfg=roce/trace-interval:10us", "--out", d]
            jobs.append((n, fid, d, args))
            cmds.append(show(args))

    def one(j):
        n, fid, d, args = j
        sgf(args, log="dcqcn N=%d trace flow %d" % (n, fid))

    pmap(one, jobs)
    res = {}
    for n in NS:
        runs = [j for j in jobs if j[0] == n]
        d0 = runs[0][2]
        fct = read_fcts(d0)
        t_end = min(f * 1e-6 + (0 if k == 0 else JOIN) for k, f in enumerate(fct))
        t_end = math.floor((t_end - JOIN) / WIN) * WIN + JOIN
        # queue of the bottleneck port (identical in every run of this N: checked)
        qt, qv = read_series(os.path.join(d0, "roce_port_queue.csv"), "queue_bytes")
        same = all(open(os.path.join(j[2], "roce_port_queue.csv")).read() ==
                   open(os.path.join(d0, "roce_port_queue.csv")).read() for j in runs)
        qwin = window_means(qt, qv, JOIN, t_end, WIN)
        half = len(qwin) // 2
        q_mean = sum(qwin[half:]) / len(qwin[half:])
        p_star, q_star = fixed_point(n)
        flows = {}
        for (_, fid, d, _) in runs:
            rt, rv = read_series(os.path.join(d, "roce_flow_rate.csv"), "rc_Bps")
            rw = window_means(rt, rv, JOIN, t_end, WIN)
            fair = C / n
            out = [k for k, r in enumerate(rw) if abs(r - fair) > 0.1 * fair]
            last_out = (out[-1] + 1) * WIN if out else 0.0
            settled = (not out) or out[-1] < len(rw) - 10
            inband = sum(1 for r in rw[half:] if abs(r - fair) <= 0.1 * fair) / len(rw[half:])
            rw10 = window_means(rt, rv, JOIN, t_end, 10 * WIN)
            out10 = [k for k, r in enumerate(rw10) if abs(r - fair) > 0.1 * fair]
            last_out10 = (out10[-1] + 1) * 10 * WIN if out10 else 0.0
            settled10 = (not out10) or out10[-1] < len(rw10) - 1
            flows[fid] = dict(rate_windows=rw, mean_rc_second_half=sum(rw[half:]) / len(rw[half:]),
                              last_out_of_band_s=last_out, settled=settled, inband_second_half=inband,
                              last_out_of_band_10ms_s=last_out10, settled_10ms=settled10,
                              raw_t=rt[:: max(1, len(rt) // 3000)], raw_v=rv[:: max(1, len(rt) // 3000)])
        res[n] = dict(p_star=p_star, q_star=q_star, q_mean_second_half=q_mean, q_windows=qwin,
                      queue_series_identical=same, t_end=t_end, fair=C / n, flows=flows,
                      mean_fct_us=sum(fct) / len(fct))
    save_json("dcqcn.json", dict(seed=SEED, results={str(k): v for k, v in res.items()}, cmds=cmds))
    plot_and_write(res, cmds)


def plot_and_write(res, cmds):
    fig, axes = plt.subplots(2, len(NS), figsize=(13, 6))
    for c, n in enumerate(NS):
        r = res[n]
        ax = axes[0][c]
        xs = [JOIN * 1e3 + (k + 0.5) for k in range(len(r["q_windows"]))]
        for fid, fr in r["flows"].items():
            ax.plot(xs, [v * 8 / 1e9 for v in fr["rate_windows"]], lw=1, label="flow %d" % fid)
        fair = r["fair"] * 8 / 1e9
        ax.axhline(fair, color="k", ls="--", lw=1, label="C/N = %.3g Gb/s" % fair)
        ax.axhspan(0.9 * fair, 1.1 * fair, color="#88cc88", alpha=0.3, lw=0)
        ax.set_ylim(0, min(100, fair * 3))
        ax.set_title("N = %d: RC of traced flows (1 ms means)" % n, fontsize=9)
        ax.set_ylabel("Gb/s", fontsize=8)
        ax.legend(fontsize=6, loc="upper right")
        ax.tick_params(labelsize=7)
        ax = axes[1][c]
        ax.plot(xs, [q / 1e3 for q in r["q_windows"]], lw=1, label="queue (1 ms mean)")
        ax.axhline(r["q_star"] / 1e3, color="r", ls="--", lw=1, label="fluid q* = %.1f KB" % (r["q_star"] / 1e3))
        ax.axhline(r["q_mean_second_half"] / 1e3, color="k", ls=":", lw=1,
                   label="mean, 2nd half = %.1f KB" % (r["q_mean_second_half"] / 1e3))
        ax.set_title("N = %d: queue leaf0->gpu0" % n, fontsize=9)
        ax.set_xlabel("time (ms)", fontsize=8)
        ax.set_ylabel("KB", fontsize=8)
        ax.set_ylim(0, max(r["q_star"], max(r["q_windows"][len(r["q_windows"]) // 10:])) / 1e3 * 1.3)
        ax.legend(fontsize=6, loc="upper right")
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig_path = savefig(fig, "dcqcn.png")
    plt.close(fig)
    t = ["| N | C/N (Gb/s) | p* | q* (KB) | mean queue, 2nd half (KB) | queue / q* | traced flows: mean RC, 2nd half "
         "(Gb/s) | "
         "share of 2nd-half 1 ms windows within 10% of C/N | convergence: last 1 ms window outside 10% (ms after the "
         "join) | "
         "same with 10 ms windows |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for n in NS:
        r = res[n]
        fl = r["flows"]
        t.append("| %d | %.3g | %.2e | %.1f | %.1f | %.2f | %s | %s | %s | %s |" % (
            n, r["fair"] * 8 / 1e9, r["p_star"], r["q_star"] / 1e3, r["q_mean_second_half"] / 1e3,
            r["q_mean_second_half"] / r["q_star"],
            ", ".join("%.2f" % (fl[f]["mean_rc_second_half"] * 8 / 1e9) for f in fl),
            ", ".join("%.0f%%" % (100 * fl[f]["inband_second_half"]) for f in fl),
            ", ".join(("%.0f" % (fl[f]["last_out_of_band_s"] * 1e3)) + ("" if fl[f]["settled"] else " (not settled)")
                      for f in fl),
            ", ".join(("%.0f" % (fl[f]["last_out_of_band_10ms_s"] * 1e3))
                      + ("" if fl[f]["settled_10ms"] else " (not settled)") for f in fl)))
    frag = ["![DCQCN rate and queue](%s)\n" % fig_path,
            "Commands (seed %d; packet fidelity; `$B` is `BUILD_DIR/sgfabric`):\n" % SEED,
            "<details><summary>%d commands</summary>\n\n%s</details>\n" % (len(cmds), cmd_block(cmds)),
            "\n".join(t) + "\n",
            "Analysis window: from the join (1 ms) to the first flow completion (%s ms). \"Second half\": the "
            "second half of that window. Convergence as in tests/unit/roce/test_roce_fabric.c: the end of the "
            "last 1 ms window in which the flow's mean RC is more than 10%% from C/N; \"not settled\" when that "
            "window is within the last 10 ms of the analysis window (with 10 ms windows: the last window). The "
            "bottleneck queue series is "
            "byte-identical in the runs of one N that trace different flows: %s.\n" % (
                ", ".join("N=%d: %.0f" % (n, res[n]["t_end"] * 1e3) for n in NS),
                "yes" if all(res[n]["queue_series_identical"] for n in NS) else "**no**"),
            "@@DCQCN_TEXT@@\n"]
    write_fragment("dcqcn", "\n".join(frag))


if __name__ == "__main__":
    main()
