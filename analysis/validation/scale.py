#!/usr/bin/env python3
"""Part 3a: IB vs RoCEv2 MFU versus scale, GPT-3 175B and Llama-3 70B, `sgfabric compare` at flow
fidelity with default parameters (IB adaptive routing; RoCE ECMP, DCQCN nic preset, PFC on),
on the platform compare generates (rail-optimized fat-tree, radix 64; 3 tiers above 2,048 GPUs).

Weak scaling: the number of micro-batches per iteration is fixed per model (m = 2 x pp, micro-batch
1), so the global batch is m x dp.

ECMP draws: at DRAW_SCALES the same compares run again with other seeds (VAL_SCALE_SEEDS, default
2,3,4,5). A seed draws RoCE's ECMP paths (and IB's adaptive-routing ties), so one seed's RoCE/IB
ratio is one sample of the hashing; the draws show how far it moves and why (the most data-parallel
ring edges one switch link carries, from roce/why.json).
"""
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import (OUT, SEED, cmd_block, pmap, save_failures, save_json, savefig, sgf, show,  # noqa: E402
                    summary, write_fragment)

MODELS = [("gpt3-175b", "GPT-3 175B", 8, 8), ("llama3-70b", "Llama-3 70B", 8, 4)]  # name, label, tp, pp
SCALES = [128, 512, 1024, 2048, 10240]
DRAW_SCALES = [2048, 10240]
# RoCE runs again on the largest GPT-3 compare's inputs (seed 1) with one mechanism changed: what
# decides the ratio there
VARIANTS = [("dcqcn-off", ["--cfg=roce/dcqcn:off"]),
            ("ecmp-maxmin", ["--cfg=roce/flow-fifo:off", "--cfg=roce/flow-spreading:off"]),
            ("qps-4", ["--cfg=roce/qps-per-conn:4"])]
DRAW_SEEDS = [int(x) for x in os.environ.get("VAL_SCALE_SEEDS", "2,3,4,5").split(",") if x.strip()]
TIMEOUT_S = float(os.environ.get("VAL_COMPARE_TIMEOUT", "1200"))  # per compare
# per variant run: RoCE with 4 QPs per connection at 10,240 GPUs takes about 20 min of CPU (the
# pause spreading of four times the flows; docs/performance.md)
VARIANT_TIMEOUT_S = float(os.environ.get("VAL_VARIANT_TIMEOUT", "2700"))


def rows_of(d):
    with open(os.path.join(d, "comparison.json")) as f:
        c = json.load(f)
    return {r["key"]: dict(zip(c["fabrics"], r["values"])) for r in c["rows"]}


def tiers(d):
    with open(os.path.join(d, "platform.xml")) as f:
        for line in f:
            if 'id="sgfabric/tiers"' in line:
                return int(line.split('value="')[1].split('"')[0])
    return 0


def both(rows, key):
    """One row of comparison.json (rows_of) for the two fabrics: {"ib": ..., "roce": ...}."""
    return {f: rows[key][f] for f in ("ib", "roce")}


def ring_edge_bytes(d):
    """Bytes one data-parallel ring edge carries in an iteration, the least over pipeline stages:
    2 (dp - 1) / dp times the data-parallel all-reduce bytes of a stage's program (workload.txt)."""
    dp, per_stage, stage = 1, {}, None
    with open(os.path.join(d, "workload.txt")) as f:
        for line in f:
            w = line.split()
            if w[:1] == ["layout"]:
                dp = int(dict(x.split("=", 1) for x in w[1:])["dp"])
            elif w[:1] == ["program"]:
                stage = int(w[1])
                per_stage[stage] = 0
            elif stage is not None and "coll=allreduce" in w and "group=dp" in w:
                per_stage[stage] += int(next(x for x in w if x.startswith("bytes="))[6:])
    return 2.0 * (dp - 1) / dp * min(per_stage.values()) if per_stage and dp > 1 else float("nan")


def dp_on_one_link(d):
    """The most data-parallel bytes one switch link carried in RoCE's run (roce/why.json's busiest
    links), in ring edges (ring_edge_bytes)."""
    with open(os.path.join(d, "roce", "why.json")) as f:
        top = json.load(f)["top_links"]
    most = max((t["groups"].get("dp", 0) for t in top if t["switch_link"]), default=0)
    return most / ring_edge_bytes(d)


def main():
    base = os.path.join(OUT, "scale")
    os.makedirs(base, exist_ok=True)
    jobs = []
    for model, lab, tp, pp in MODELS:
        for n in SCALES:
            for seed in [SEED] + (DRAW_SEEDS if n in DRAW_SCALES else []):
                dp = n // (tp * pp)
                m = 2 * pp
                gb = m * dp
                d = os.path.join(base, "%s-%d" % (model, n) + ("" if seed == SEED else "-seed%d" % seed))
                # --ignore-memory: these jobs (no recomputation) compare fabrics; most would not fit in
                # 80 GB (docs/compute-model.md, "Memory per GPU"), which does not change their timing.
                args = ["compare", "--model", model, "--gpus", str(n), "--tp", str(tp), "--pp", str(pp),
                        "--global-batch", str(gb), "--fidelity", "flow", "--seed", str(seed), "--ignore-memory",
                        "--out", d]
                jobs.append(dict(model=model, label=lab, n=n, tp=tp, pp=pp, dp=dp, m=m, global_batch=gb, dir=d,
                                 seed=seed, args=args))
    # largest first
    order = sorted(jobs, key=lambda j: (-j["n"], j["seed"]))

    def one(j):
        dt, out = sgf(j["args"], log="scale %s %d GPUs seed %d" % (j["model"], j["n"], j["seed"]),
                      allow_fail=True, timeout=TIMEOUT_S)
        j["wall_s"] = dt
        j["ok"] = out is not None

    pmap(one, order, jobs=2)  # the IB runs take longest; two compares keep both cores busy
    big = os.path.join(base, "%s-%d" % (MODELS[0][0], max(SCALES)))
    variants = []
    if os.path.exists(os.path.join(big, "comparison.json")):
        for name, cfg in VARIANTS:
            d = os.path.join(base, "%s-%d-roce-%s" % (MODELS[0][0], max(SCALES), name))
            args = ["run", "--platform", os.path.join(big, "platform.xml"), "--workload",
                    os.path.join(big, "workload.txt"), "--fabric", "roce", "--fidelity", "flow", "--seed", str(SEED),
                    "--ignore-memory"] + cfg + ["-o", d]
            variants.append(dict(name=name, cfg=cfg, dir=d, args=args))

        def run_variant(v):
            dt, out = sgf(v["args"], log="scale variant %s" % v["name"], allow_fail=True,
                          timeout=VARIANT_TIMEOUT_S)
            v["ok"] = out is not None
            v["wall_s"] = dt

        pmap(run_variant, variants, jobs=2)
    save_failures("scale")
    variant_rows = [dict(name=v["name"], cfg=v["cfg"], cmd=show(v["args"]), wall_s=v["wall_s"],
                         iteration_time_s=summary(v["dir"])["iteration_time_s"], mfu=summary(v["dir"])["mfu"])
                    for v in variants if v["ok"]]
    res, draws = [], []
    for j in jobs:
        if not j["ok"]:
            continue
        r = rows_of(j["dir"])
        if j["n"] in DRAW_SCALES:
            draws.append(dict(model=j["model"], label=j["label"], n=j["n"], seed=j["seed"], cmd=show(j["args"]),
                              wall_s=j["wall_s"], mfu=both(r, "mfu"), iter_s=both(r, "iteration_time_s"),
                              dp_s=both(r, "breakdown.exposed_comm_s.dp"), bubble_s=both(r, "breakdown.bubble_s"),
                              dp_edges_on_one_link=dp_on_one_link(j["dir"])))
        if j["seed"] != SEED:
            continue
        res.append(dict(model=j["model"], label=j["label"], n=j["n"], tp=j["tp"], pp=j["pp"], dp=j["dp"],
                        microbatches=j["m"], global_batch=j["global_batch"], wall_s=j["wall_s"],
                        tiers=tiers(j["dir"]), cmd=show(j["args"]),
                        mfu=both(r, "mfu"), iter_s=both(r, "iteration_time_s"),
                        dp_s=both(r, "breakdown.exposed_comm_s.dp"), tp_s=both(r, "breakdown.exposed_comm_s.tp"),
                        pp_s=both(r, "breakdown.exposed_comm_s.pp"), bubble_s=both(r, "breakdown.bubble_s"),
                        straggler_s=both(r, "breakdown.straggler_s"),
                        slowest={f: summary(os.path.join(j["dir"], f))["slowest_rank"] for f in ("ib", "roce")},
                        util_max=both(r, "counters.link_utilisation_max")))
    save_json("scale.json", dict(seed=SEED, draw_seeds=DRAW_SEEDS, rows=res, draws=draws, variants=variant_rows))
    plot_and_write(res, draws, variant_rows)


def plot_and_write(res, draws, variant_rows=()):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for k, (model, lab, tp, pp) in enumerate(MODELS):
        rs = [r for r in res if r["model"] == model]
        if not rs:
            continue
        xs = [r["n"] for r in rs]
        axes[0].plot(xs, [r["mfu"]["ib"] for r in rs], "o-", color=["#4477aa", "#228833"][k], label="%s IB" % lab)
        axes[0].plot(xs, [r["mfu"]["roce"] for r in rs], "s--", color=["#ee6677", "#ccbb44"][k],
                     label="%s RoCEv2" % lab)
        line, = axes[1].plot(xs, [r["mfu"]["roce"] / r["mfu"]["ib"] for r in rs], "o-", label=lab)
        ds = [d for d in draws if d["model"] == model and d["seed"] != SEED]
        if ds:
            axes[1].plot([d["n"] for d in ds], [d["mfu"]["roce"] / d["mfu"]["ib"] for d in ds], "x",
                         color=line.get_color(), label="%s, seeds %s" % (lab, ",".join(map(str, DRAW_SEEDS))))
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(SCALES)
        ax.set_xticklabels([str(s) for s in SCALES])
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("MFU (%)")
    axes[0].set_title("MFU, flow fidelity, default parameters")
    axes[0].legend(fontsize=8)
    axes[1].set_ylabel("MFU RoCEv2 / MFU IB")
    axes[1].set_title("RoCEv2 relative to IB")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig_path = savefig(fig, "scale_mfu.png")
    plt.close(fig)
    t = ["| model | GPUs | tiers | tp/pp/dp | micro-batches | global batch (seq) | MFU IB | MFU RoCE | RoCE/IB | "
         "iteration IB / RoCE (s) | exposed dp IB / RoCE (s) | exposed tp IB / RoCE (s) | bubble IB / RoCE (s) | "
         "stragglers IB / RoCE (s) | wall (s) |",
         "|" + "---|" * 15]
    row = ("| %s | %d | %d | %d/%d/%d | %d | %d | %.2f%% | %.2f%% | %.3f | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | "
           "%.3f / %.3f | %.3f / %.3f | %.0f |")
    for r in res:
        t.append(row % (
            r["label"], r["n"], r["tiers"], r["tp"], r["pp"], r["dp"], r["microbatches"], r["global_batch"],
            r["mfu"]["ib"], r["mfu"]["roce"], r["mfu"]["roce"] / r["mfu"]["ib"], r["iter_s"]["ib"], r["iter_s"]["roce"],
            r["dp_s"]["ib"], r["dp_s"]["roce"], r["tp_s"]["ib"], r["tp_s"]["roce"], r["bubble_s"]["ib"],
            r["bubble_s"]["roce"], r["straggler_s"]["ib"], r["straggler_s"]["roce"], r["wall_s"]))
    d = ["| model | GPUs | seed | MFU IB | MFU RoCE | RoCE/IB | iteration IB / RoCE (s) | exposed dp IB / RoCE (s) | "
         "bubble IB / RoCE (s) | RoCE: most data-parallel traffic on one switch link, in ring edges |",
         "|" + "---|" * 10]
    for r in sorted(draws, key=lambda r: ([m[0] for m in MODELS].index(r["model"]), r["n"], r["seed"])):
        d.append("| %s | %d | %d | %.2f%% | %.2f%% | %.3f | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.1f |" % (
            r["label"], r["n"], r["seed"], r["mfu"]["ib"], r["mfu"]["roce"], r["mfu"]["roce"] / r["mfu"]["ib"],
            r["iter_s"]["ib"], r["iter_s"]["roce"], r["dp_s"]["ib"], r["dp_s"]["roce"], r["bubble_s"]["ib"],
            r["bubble_s"]["roce"], r["dp_edges_on_one_link"]))
    frag = ["![MFU vs scale](%s)\n" % fig_path,
            "Commands (seed %d; flow fidelity; `$B` is `BUILD_DIR/sgfabric`; each writes `platform.xml`, "
            "`workload.txt`, `ib/`, `roce/`, `comparison.json`):\n" % SEED,
            cmd_block([r["cmd"] for r in res]),
            "\n".join(t) + "\n", "@@SCALE_TEXT@@\n"]
    if draws and DRAW_SEEDS:
        frag += ["**Other ECMP draws.** The %s-GPU compares again with seeds %s (the same commands with "
                 "`--seed S` and `--out ...-seedS`; a seed draws RoCE's ECMP paths and IB's adaptive-routing "
                 "ties). Last column: the most data-parallel bytes one switch link carried in the RoCE run "
                 "(`roce/why.json`, busiest links) over the bytes one data-parallel ring edge carries in the "
                 "iteration (2(dp − 1)/dp × a stage's data-parallel all-reduce bytes, `workload.txt`, the least "
                 "over stages: an edge of a stage that holds an embedding reads 1.1):\n"
                 % (" and ".join("{:,}".format(n) for n in DRAW_SCALES), ", ".join(map(str, DRAW_SEEDS))),
                 "\n".join(d) + "\n"]
    if variant_rows:
        frag += ["RoCE again on the %s %s-GPU compare's inputs (seed %d), one mechanism changed (`run` writes "
                 "`summary.json`; `results/validation/scale/` holds the compare's `platform.xml` and "
                 "`workload.txt`):\n" % (MODELS[0][1], "{:,}".format(max(SCALES)), SEED),
                 cmd_block([v["cmd"] for v in variant_rows])]
    if draws or variant_rows:
        frag += ["@@SCALE_DRAWS_TEXT@@\n"]
    write_fragment("scale", "\n".join(frag))


if __name__ == "__main__":
    main()
