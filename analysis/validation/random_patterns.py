#!/usr/bin/env python3
"""Flow fidelity against packet fidelity on random traffic patterns that no model rule was fitted
on: a held-out check of a fabric's flow model (docs/ib.md, "Input-port shares").

Each pattern is N transfers of 4 MB, all starting at t = 0, from N distinct GPUs drawn at random to
GPUs drawn at random under another leaf (Python's random.Random(seed)); several may go to one GPU.
Sets: tiny-16 (platforms/tiny-16.xml: leaves of 4 GPUs, 4 spines) with 8, 12 and 16 transfers; 64
GPUs on 2:1 leaves of 10 (`sgfabric platform --gpus 64 --radix 16 --oversubscription 2`) with 16 and
40; 64 GPUs on 3 tiers of radix 8 (`--gpus 64 --tiers 3 --radix 8`, leaves of 4) with 24. The q2-*
and q3-* sets give each sending GPU 2 or 3 transfers to distinct GPUs under other leaves, so that a
NIC holds several queue pairs at once (as a rank's data-parallel, pipeline and all-to-all traffic
do): 4 x 3 and 6 x 2 on tiny-16, 10 x 3 and 16 x 2 on the 2:1 platform, 8 x 3 on 3 tiers. The late-*
sets (LATE_SETS) start their transfers at random dates instead, uniform over [0, 500 us] in whole
microseconds, and send 16 MB each: transfers that start while others' queues stand (tiny-16 with 12,
the 2:1 platform with 32, 3 tiers with 24), and the late-mixed-* sets draw each transfer's size
among 1, 2, 4, 8 and 16 MB: short transfers behind long ones. For every pattern it runs `sgfabric
flows --fabric F --fidelity packet|flow --seed 1` and prints the error of flow fidelity's mean FCT
against packet fidelity's and the mean over transfers of |flow FCT / packet FCT - 1|; with --base
BIN, the same for another sgfabric's flow fidelity (e.g. one built from an older revision), and a
summary per set.

    analysis/validation/random_patterns.py BUILD_DIR WORK_DIR [--fabric ib] [--cfg area/name:value]...
                                           [--base BIN] [--sets tiny8,tiny12,...] [--seed-offset N]
                                           [--link-rate RATE] > table.md

--seed-offset N adds N to every set's seeds: the same sets drawn afresh, patterns that no rule
was found on either (a rule found on the default patterns is checked again there).

--link-rate RATE (e.g. 100Gbps) builds every set's fat-tree with NIC and switch links of that rate
(tiny-16 too, from its `sgfabric platform` command): the same patterns where DCQCN, not PFC, holds
RoCE's congested ports. Use a WORK_DIR of its own.

--cfg passes a model parameter to every run (both fidelities, and the base's): use a WORK_DIR of
its own for each set of parameters.

Runs are kept in WORK_DIR and reused when their flows.csv exists (the --base runs are always
redone). Standard library only.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import read_fcts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--gpus", "16", "--radix", "8"]  # platforms/tiny-16.xml's command
TWO_TO_ONE = ["--gpus", "64", "--radix", "16", "--oversubscription", "2"]
THREE_TIERS = ["--gpus", "64", "--tiers", "3", "--radix", "8"]
# name: (platform, `sgfabric platform` options or None for a shipped file, GPUs, GPUs per leaf,
#        transfers per pattern, seeds, transfers per sending GPU)
SETS = {
    "tiny8": ("tiny-16", None, 16, 4, 8, range(1, 11), 1),
    "tiny12": ("tiny-16", None, 16, 4, 12, range(11, 26), 1),
    "tiny16": ("tiny-16", None, 16, 4, 16, range(26, 36), 1),
    "2to1-16": ("2to1-64", TWO_TO_ONE, 64, 10, 16, range(21, 33), 1),
    "2to1-40": ("2to1-64", TWO_TO_ONE, 64, 10, 40, range(1, 13), 1),
    "3tier-24": ("3tier-64", THREE_TIERS, 64, 4, 24, range(41, 53), 1),
    "q3-tiny16": ("tiny-16", None, 16, 4, 12, range(101, 111), 3),
    "q2-tiny16": ("tiny-16", None, 16, 4, 12, range(121, 131), 2),
    "q3-2to1": ("2to1-64", TWO_TO_ONE, 64, 10, 30, range(141, 151), 3),
    "q2-2to1": ("2to1-64", TWO_TO_ONE, 64, 10, 32, range(161, 171), 2),
    "q3-3tier": ("3tier-64", THREE_TIERS, 64, 4, 24, range(181, 191), 3),
}
MIXED = (1000000, 2000000, 4000000, 8000000, 16000000)
# The same fields, then the bytes of each transfer and the latest start (us): transfers that start
# at random dates, behind the queues of those started before (run with --sets, not in SETS)
LATE_SETS = {
    "late-tiny16": ("tiny-16", None, 16, 4, 12, range(201, 221), 1, 16000000, 500),
    "late-2to1": ("2to1-64", TWO_TO_ONE, 64, 10, 32, range(221, 241), 1, 16000000, 500),
    "late-3tier": ("3tier-64", THREE_TIERS, 64, 4, 24, range(241, 261), 1, 16000000, 500),
    # sizes drawn among 1, 2, 4, 8 and 16 MB: short transfers that start behind long ones' queues
    "late-mixed-2to1": ("2to1-64", TWO_TO_ONE, 64, 10, 32, range(261, 281), 1, MIXED, 500),
    "late-mixed-3tier": ("3tier-64", THREE_TIERS, 64, 4, 24, range(281, 301), 1, MIXED, 500),
}
ALL_SETS = {**SETS, **LATE_SETS}


def pattern(seed, transfers, gpus, leaf, per_source=1):
    """(src, dst) of a pattern: transfers / per_source distinct senders, each to per_source distinct
    GPUs under other leaves (in increasing order)."""
    rng = random.Random(seed)
    rows = []
    for src in rng.sample(range(gpus), transfers // per_source):
        dsts = set()
        while len(dsts) < per_source:
            dst = rng.randrange(gpus)
            if dst // leaf != src // leaf:
                dsts.add(dst)
        rows.extend((src, dst) for dst in sorted(dsts))
    return rows


def write_pattern(path, seed, transfers, gpus, leaf, per_source=1, size=4000000, latest_us=0):
    """The flow file of one pattern: its transfers of `size` bytes (or of one of the sizes of a tuple,
    drawn), all at t = 0 or, with latest_us, each at a date drawn uniform over [0, latest_us] us
    (whole microseconds; sizes and dates from a stream of their own, so that the pairs are those of
    the same seed at t = 0)."""
    draw = random.Random(seed * 1000003 + 17)
    with open(path, "w") as f:
        f.write("src,dst,bytes,start_us\n")
        for src, dst in pattern(seed, transfers, gpus, leaf, per_source):
            start = draw.randint(0, latest_us) if latest_us else 0
            f.write("%d,%d,%d,%d\n" % (src, dst, draw.choice(size) if isinstance(size, tuple) else size, start))


def platform_of(name, work, link_rate=None):
    """A set's platform file and the `sgfabric` arguments that write it (None: a shipped file);
    with link_rate, the same fat-tree with NIC and switch links of that rate (never a shipped file)."""
    plat_name, plat_opts = ALL_SETS[name][:2]
    if link_rate is not None:
        path = os.path.join(work, "%s-%s.xml" % (plat_name, link_rate))
        return path, ["platform"] + (plat_opts or TINY) + ["--link-rate", link_rate, "-o", path]
    if plat_opts is None:
        return os.path.join(ROOT, "platforms", plat_name + ".xml"), None
    path = os.path.join(work, plat_name + ".xml")
    return path, ["platform"] + plat_opts + ["-o", path]


def run(sgf, platform, flows, fabric, cfg, fidelity, out, again=False):
    if again or not os.path.exists(os.path.join(out, "flows.csv")):
        subprocess.run([sgf, "flows", "--platform", platform, "--flows", flows, "--fabric", fabric, "--fidelity",
                        fidelity, "--seed", "1", "--out", out] + ["--cfg=" + c for c in cfg], check=True,
                       stdout=subprocess.DEVNULL)
    return read_fcts(out)


def errors(flow, packet):
    mean = 100 * (statistics.mean(flow) / statistics.mean(packet) - 1)
    per = 100 * statistics.mean(abs(f / p - 1) for f, p in zip(flow, packet))
    return mean, per


def summary(label, rows):
    means = [m for m, _ in rows]
    return ("%s: mean error %+.2f %% on average, |mean error| %.2f %% on average (largest %.1f %%), within 5 %% on "
            "%d of %d; |error| per transfer %.2f %% on average" %
            (label, statistics.mean(means), statistics.mean(abs(m) for m in means), max(abs(m) for m in means),
             sum(abs(m) <= 5 for m in means), len(means), statistics.mean(p for _, p in rows)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--fabric", default="ib")
    ap.add_argument("--cfg", action="append", default=[])
    ap.add_argument("--base")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="add N to every set's seeds: patterns drawn afresh, a second held-out sample")
    ap.add_argument("--link-rate", default=None,
                    help="NIC and switch links of this rate (e.g. 100Gbps) on every set's platform")
    a = ap.parse_args()
    sgf = os.path.join(a.build, "sgfabric")
    os.makedirs(a.work, exist_ok=True)
    names = a.sets.split(",")
    for name in names:
        if name not in ALL_SETS:
            sys.exit("random_patterns.py: unknown set %s (sets: %s)" % (name, ", ".join(ALL_SETS)))
    print("| set | seed | transfers | mean error | |error| per transfer |%s" %
          (" base: mean error | base: |error| per transfer |" if a.base else ""))
    print("|---|---|---|---|---|%s" % ("---|---|" if a.base else ""))
    totals = {}
    for name in names:
        _, _, gpus, leaf, transfers, seeds, per_source, *late = ALL_SETS[name]
        platform, args = platform_of(name, a.work, a.link_rate)
        if args is not None and not os.path.exists(platform):
            subprocess.run([sgf] + args, check=True, stdout=subprocess.DEVNULL)
        for seed in (s + a.seed_offset for s in seeds):
            base = os.path.join(a.work, "%s-%d" % (name, seed))
            write_pattern(base + ".csv", seed, transfers, gpus, leaf, per_source, *late)
            packet = run(sgf, platform, base + ".csv", a.fabric, a.cfg, "packet", base + "-" + a.fabric + "-packet")
            flow = run(sgf, platform, base + ".csv", a.fabric, a.cfg, "flow", base + "-" + a.fabric + "-flow")
            row = errors(flow, packet)
            totals.setdefault((name, "flow"), []).append(row)
            line = "| %s | %d | %d | %+.1f %% | %.1f %% |" % (name, seed, transfers, row[0], row[1])
            if a.base:
                other = errors(run(a.base, platform, base + ".csv", a.fabric, a.cfg, "flow",
                                   base + "-" + a.fabric + "-flow-base", again=True), packet)
                totals.setdefault((name, "base"), []).append(other)
                line += " %+.1f %% | %.1f %% |" % other
            print(line)
    print()
    for name in names:
        print("- " + summary(name, totals[(name, "flow")]))
        if a.base:
            print("  - base: " + summary(name, totals[(name, "base")]).split(": ", 1)[1])
    tiny = [r for n in names if n.startswith("tiny") for r in totals[(n, "flow")]]
    if tiny:
        print("- " + summary("tiny-16, all", tiny))
        if a.base:
            tiny_base = [r for n in names if n.startswith("tiny") for r in totals[(n, "base")]]
            print("  - base: " + summary("x", tiny_base).split(": ", 1)[1])


if __name__ == "__main__":
    main()
