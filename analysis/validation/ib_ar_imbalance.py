#!/usr/bin/env python3
"""The IB adaptive-routing imbalance (docs/ib.md, "AR imbalance"): flow against packet fidelity on
random permutations and held-out patterns, with and without ib/ar-imbalance, and the least-squares
fit of ib/ar-imbalance to the per-leaf losses of the fitting set.

    analysis/validation/ib_ar_imbalance.py [BUILD_DIR] [--work DIR]

Prints one line per case: mean FCT at packet fidelity, at flow fidelity with the term and without
it (ib/ar-imbalance:0), and the errors. Fitting set: 128-GPU permutations of seeds 1-8 (4 MB) and
the 1,024-GPU permutation of seed 11 (4 MB); the rest is held out. rail-1024 runs spread AR flows
over all 32 paths (--cfg=ib/ar-paths:64). Standard library only."""
import csv
import math
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
BUILD = args[0] if args else os.path.join(ROOT, "build")
WORK = sys.argv[sys.argv.index("--work") + 1] if "--work" in sys.argv else os.path.join(ROOT, "results", "ib_ar")
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
    # rail-1024 has 32 paths between leaves, above the default ib/ar-paths (16): spread them all
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
    print("%-24s %11s %11s %8s %11s %8s" % ("case", "packet us", "flow us", "error", "term off", "error"))
    for name, platform, rows, fitting in cases:
        flows = write(name, rows)
        packet = run(name, platform, flows, "packet", [])
        flow = run(name, platform, flows, "flow", [])
        bare = run(name, platform, flows, "flow", off)
        mp, mf, mb = (sum(x.values()) / len(x) for x in (packet, flow, bare))
        print("%-24s %11.2f %11.2f %+7.2f%% %11.2f %+7.2f%%%s" % (name, mp, mf, 100 * (mf - mp) / mp, mb,
              100 * (mb - mp) / mp, "" if fitting else "  (held out)"))
        if fitting:
            leaf = leaf_of(platform)
            factors = leaf_factors(rows, leaf, 8 if platform == FT2 else 32)
            loss = defaultdict(list)
            for (s, d), t in packet.items():
                if s // 8 != d // 8 and leaf(s) != leaf(d):
                    loss[leaf(s)].append(t / bare[(s, d)] - 1)
            for src, (n, f) in factors.items():
                measured = sum(loss[src]) / len(loss[src])
                num += n * f * measured
                den += n * f * f
    print("least-squares ib/ar-imbalance on the fitting set's leaves: %.3f" % (num / den))


if __name__ == "__main__":
    main()
