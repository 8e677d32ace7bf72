#!/usr/bin/env python3
"""The IB adaptive-routing imbalance (docs/ib.md, "AR imbalance"): flow against packet fidelity on
random permutations and held-out patterns, with and without ib/ar-imbalance, and the least-squares
fit of ib/ar-imbalance to the per-leaf losses of the fitting set.

    analysis/validation/ib_ar_imbalance.py [BUILD_DIR] [--work DIR] [--plot FILE.png]

Prints one line per case: mean FCT at packet fidelity, at flow fidelity with the term and without
it (ib/ar-imbalance:0), and the errors. Fitting set: 128-GPU permutations of seeds 1-8 (4 MB) and
the 1,024-GPU permutation of seed 11 (4 MB); the rest is held out. rail-1024 runs spread AR flows
over all 32 paths (--cfg=ib/ar-paths:64, the default since it was 16). Standard library only; --plot draws the figure of
docs/ib.md with matplotlib (/usr/bin/python3)."""
import csv
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = [a for a in sys.argv[1:] if not a.startswith("--")]


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


args = [a for a in args if a not in (option("--work", None), option("--plot", None))]
BUILD = args[0] if args else os.path.join(ROOT, "build")
WORK = option("--work", os.path.join(ROOT, "results", "ib_ar"))
PLOT = option("--plot", None)
SGF = os.path.join(BUILD, "sgfabric")
FT2 = os.path.join(ROOT, "platforms", "ft2-128.xml")
RAIL = os.path.join(ROOT, "platforms", "rail-1024.xml")


def leaf_of(platform):
    """GPU -> leaf of the shipped rail-optimized platforms: rail r of node group (n / nodes per leaf)."""
    per_leaf = 8 if platform == FT2 else 32
    return lambda g: (g // (8 * per_leaf)) * 8 + g % 8


def write(name, rows):
    path = os.path.join(WORK, name + ".csv")
    with open(path, "w") as f:
        f.write("src,dst,bytes,start_us\n")
        for s, d, b in rows:
            f.write("%d,%d,%d,0\n" % (s, d, b))
    return path


def permutation(n, seed, size):
    p = list(range(n))
    random.Random(seed).shuffle(p)
    return [(s, p[s], size) for s in range(n) if p[s] != s]


def run(name, platform, flows, fidelity, cfg):
    out = os.path.join(WORK, "%s-%s%s" % (name, fidelity, "-off" if cfg else ""))
    # rail-1024 has 32 paths between leaves: spread them all, whatever the default ib/ar-paths
    spread = ["--cfg=ib/ar-paths:64"] if platform == RAIL else []
    cmd = [SGF, "flows", "--platform", platform, "--flows", flows, "--fabric", "ib", "--fidelity", fidelity,
           "--seed", "1", "--out", out] + spread + cfg
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "flows.csv")) as f:
        return {(int(r["src"]), int(r["dst"])): float(r["fct_us"]) for r in csv.DictReader(f)}


def erlang_c(servers, offered):
    if offered >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return servers * b / (servers - offered * (1 - b))


def leaf_factors(rows, leaf, up_ports):
    """Per source leaf: (inter-leaf transfers, Erlang C x V^2 x I, mean packet/flow-without-term - 1)."""
    inter = [(s, d) for s, d, _ in rows if s // 8 != d // 8 and leaf(s) != leaf(d)]
    out_n = Counter(leaf(s) for s, d in inter)
    pair = Counter((leaf(s), leaf(d)) for s, d in inter)
    sources = defaultdict(set)
    for s, d in inter:
        sources[leaf(d)].add(leaf(s))
    res = {}
    for src, n in out_n.items():
        shares = {dst: c / n for (s2, dst), c in pair.items() if s2 == src}
        v = min(1.0, (1 - sum(w * w for w in shares.values())) / (1 - 1 / up_ports))
        i = sum(w for dst, w in shares.items() if len(sources[dst]) > 1)
        res[src] = (n, erlang_c(up_ports, n) * v * v * i)
    return res


def main():
    os.makedirs(WORK, exist_ok=True)
    off = ["--cfg=ib/ar-imbalance:0"]
    cases = []  # name, platform, rows, in the fitting set
    for seed in range(1, 13):
        cases.append(("perm128-s%d" % seed, FT2, permutation(128, seed, 4000000), seed <= 8))
    cases.append(("perm1024-s11", RAIL, permutation(1024, 11, 4000000), True))
    cases.append(("perm1024-s11-16MB", RAIL, permutation(1024, 11, 16000000), False))
    cases.append(("perm128-s5-1MB", FT2, permutation(128, 5, 1000000), False))
    cases.append(("perm128-s5-16MB", FT2, permutation(128, 5, 16000000), False))
    cases.append(("shift13-128", FT2, [(s, (s + 13) % 128, 4000000) for s in range(128)], False))
    cases.append(("leaf0-to-8-idle-leaves", FT2, [(8 * j, 8 * (8 + j) + j, 4000000) for j in range(8)], False))
    cases.append(("alltoall128-512KiB", FT2,
                  [(s, d, 524288) for s in range(128) for d in range(128) if s != d], False))
    num = den = 0.0
    points = []  # (up-ports, busy share, measured leaf loss)
    errors = []  # (case, error with the term, without)
    print("%-24s %11s %11s %8s %11s %8s" % ("case", "packet us", "flow us", "error", "term off", "error"))
    for name, platform, rows, fitting in cases:
        flows = write(name, rows)
        packet = run(name, platform, flows, "packet", [])
        flow = run(name, platform, flows, "flow", [])
        bare = run(name, platform, flows, "flow", off)
        mp, mf, mb = (sum(x.values()) / len(x) for x in (packet, flow, bare))
        print("%-24s %11.2f %11.2f %+7.2f%% %11.2f %+7.2f%%%s" % (name, mp, mf, 100 * (mf - mp) / mp, mb,
              100 * (mb - mp) / mp, "" if fitting else "  (held out)"))
        errors.append((name + ("" if fitting else " *"), 100 * (mf - mp) / mp, 100 * (mb - mp) / mp))
        if fitting:
            leaf = leaf_of(platform)
            factors = leaf_factors(rows, leaf, 8 if platform == FT2 else 32)
            loss = defaultdict(list)
            for (s, d), t in packet.items():
                if s // 8 != d // 8 and leaf(s) != leaf(d):
                    loss[leaf(s)].append(t / bare[(s, d)] - 1)
            up = 8 if platform == FT2 else 32
            for src, (n, f) in factors.items():
                measured = sum(loss[src]) / len(loss[src])
                points.append((up, n / up, measured))
                num += n * f * measured
                den += n * f * f
    fitted = num / den
    print("least-squares ib/ar-imbalance on the fitting set's leaves: %.3f" % fitted)
    if PLOT:
        plot(points, errors, fitted)


def plot(points, errors, fitted):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1, 1.3]})
    for up, color in ((8, "tab:blue"), (32, "tab:orange")):
        pts = [(d, 100 * l) for u, d, l in points if u == up]
        left.scatter([d for d, _ in pts], [l for _, l in pts], s=14, alpha=0.6, color=color,
                     label="packet, leaves with %d up-ports" % up)
        xs = [i / (4 * up) for i in range(2 * up, 4 * up + 1)]
        left.plot(xs, [100 * fitted * erlang_c(up, up * x) for x in xs], color=color,
                  label="ib/ar-imbalance x Erlang C(%d, A)" % up)
    left.set_xlabel("busy share of the leaf's up-ports (inter-leaf transfers / up-ports)")
    left.set_ylabel("leaf's transfers: packet FCT / flow FCT without the term - 1 (%)")
    left.set_title("AR imbalance per source leaf (fitting set)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    y = range(len(errors))
    right.barh([i + 0.2 for i in y], [e for _, _, e in errors], height=0.4, color="lightgray", label="term off")
    right.barh([i - 0.2 for i in y], [e for _, e, _ in errors], height=0.4, color="tab:green", label="with the term")
    right.axvline(-5, color="red", lw=0.8, ls="--")
    right.axvline(5, color="red", lw=0.8, ls="--")
    right.set_yticks(list(y))
    right.set_yticklabels([n for n, _, _ in errors], fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("flow vs packet, mean FCT (%)   (* held out)")
    right.set_title("Flow fidelity against packet fidelity")
    right.legend(fontsize=8)
    right.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(PLOT)), exist_ok=True)
    fig.savefig(PLOT, dpi=110)


if __name__ == "__main__":
    main()
