#!/usr/bin/env python3
"""Part 5 of the validation report: flow vs packet fidelity on random traffic patterns that no
rule of the flow models was fitted on (the patterns of analysis/validation/random_patterns.py:
its SETS, all transfers at t = 0, and its LATE_SETS, transfers that start at random dates, behind
the queues of those started before), for ib, roce (the nic preset), roce-paper and roce with
100 Gb/s links. Writes held_out.json and the fragment HELD_OUT.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (OUT, SEED, cmd_block, mean, pmap, read_fcts, rel, save_failures, save_json,  # noqa: E402
                    sgf, show, write_fragment)
from random_patterns import ALL_SETS, SETS, errors, platform_of, write_pattern  # noqa: E402

# label: (--fabric, extra arguments, link rate of the platforms: None for the sets' own, 400 Gb/s)
FABRICS = {"ib": ("ib", [], None), "roce": ("roce", [], None), "roce-paper": ("roce", ["--cfg=roce/dcqcn:paper"], None),
           "roce-100g": ("roce", [], "100Gbps")}
RATES = tuple(dict.fromkeys(rate for _, _, rate in FABRICS.values()))  # the platforms' link rates, each once
SET_TEXT = {
    "tiny8": "tiny-16, 8 transfers", "tiny12": "tiny-16, 12", "tiny16": "tiny-16, 16",
    "2to1-16": "64 GPUs, 2:1 leaves, 16", "2to1-40": "64 GPUs, 2:1 leaves, 40", "3tier-24": "64 GPUs, 3 tiers, 24",
    "q3-tiny16": "tiny-16, 4 GPUs x 3", "q2-tiny16": "tiny-16, 6 GPUs x 2", "q3-2to1": "2:1 leaves, 10 GPUs x 3",
    "q2-2to1": "2:1 leaves, 16 GPUs x 2", "q3-3tier": "3 tiers, 8 GPUs x 3",
    "late-tiny16": "tiny-16, 12 x 16 MB, staggered", "late-2to1": "2:1 leaves, 32 x 16 MB, staggered",
    "late-3tier": "3 tiers, 24 x 16 MB, staggered", "late-mixed-2to1": "2:1 leaves, 32 of 1-16 MB, staggered",
    "late-mixed-3tier": "3 tiers, 24 of 1-16 MB, staggered",
}


def main():
    work = os.path.join(OUT, "held_out")
    os.makedirs(work, exist_ok=True)
    platforms, platform_cmds = {}, {}
    for rate in RATES:
        for name, (plat, *_) in ALL_SETS.items():
            if (plat, rate) in platforms:
                continue
            platforms[plat, rate], args = platform_of(name, work, rate)
            if args is not None:
                sgf(args)
                platform_cmds[plat, rate] = show(args)
    runs = []
    for name, (plat, _, gpus, leaf, transfers, seeds, per_source, *late) in ALL_SETS.items():
        for seed in seeds:
            flows = os.path.join(work, "%s-%d.csv" % (name, seed))
            write_pattern(flows, seed, transfers, gpus, leaf, per_source, *late)
            for label, (fabric, extra, rate) in FABRICS.items():
                for fidelity in ("packet", "flow"):
                    out = os.path.join(work, "%s-%d-%s-%s" % (name, seed, label, fidelity))
                    runs.append(((name, seed, label, fidelity), out,
                                 ["flows", "--platform", platforms[plat, rate], "--flows", flows, "--fabric", fabric,
                                  "--fidelity", fidelity, "--seed", str(SEED), "--out", out] + extra))

    def one(run):
        key, out, args = run
        dt, ok = sgf(args, allow_fail=True)
        return key, (read_fcts(out) if ok is not None else None)

    fcts = dict(pmap(one, runs))
    save_failures("held_out")
    rows = []
    for name, (_, _, _, _, transfers, seeds, *_) in ALL_SETS.items():
        for label in FABRICS:
            errs = []
            for seed in seeds:
                p, f = fcts[(name, seed, label, "packet")], fcts[(name, seed, label, "flow")]
                if p is not None and f is not None:
                    errs.append(errors(f, p))
            rows.append(dict(set=name, fabric=label, transfers=transfers, patterns=len(seeds), measured=len(errs),
                             mean_err_pct=mean([m for m, _ in errs]), abs_mean_err_pct=mean([abs(m) for m, _ in errs]),
                             max_abs_mean_err_pct=max((abs(m) for m, _ in errs), default=float("nan")),
                             within5=sum(abs(m) <= 5 for m, _ in errs),
                             per_transfer_pct=mean([t for _, t in errs])))
    save_json("held_out.json", dict(rows=rows, seed=SEED))
    frag = ["| patterns | fabric | mean error, average | \\|mean error\\|, average (largest) | mean within 5 % "
            "| \\|error\\| per transfer, average |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        frag.append("| %s (%d) | %s | %+.1f %% | %.1f %% (%.1f %%) | %d of %d | %.1f %% |" % (
            SET_TEXT[r["set"]], r["patterns"], r["fabric"], r["mean_err_pct"], r["abs_mean_err_pct"],
            r["max_abs_mean_err_pct"], r["within5"], r["measured"], r["per_transfer_pct"]))
    example = [platform_cmds[SETS["2to1-16"][0], rate] for rate in RATES]
    example += [show(args) for key, _, args in runs if key[0] == "2to1-16" and key[1] == 21]
    frag.append("")
    frag.append("Commands, for one pattern (`%s`, written by this part; `$B` is `BUILD_DIR/sgfabric`; the "
                "same with every pattern, %d simulations in all):\n" %
                (rel(os.path.join(work, "2to1-16-21.csv")), len(runs)))
    frag.append(cmd_block(example))
    write_fragment("held_out", "\n".join(frag))


if __name__ == "__main__":
    main()
