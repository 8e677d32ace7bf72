#!/usr/bin/env python3
"""Part 3a: IB vs RoCEv2 MFU versus scale, GPT-3 175B and Llama-3 70B, `sgfabric compare` at flow
fidelity with default parameters (IB adaptive routing; RoCE ECMP, DCQCN nic preset, PFC on),
on the platform compare generates (rail-optimized fat-tree, radix 64; 3 tiers above 2,048 GPUs).

Weak scaling: the number of micro-batches per iteration is fixed per model (m = 2 x pp, micro-batch
1), so the global batch is m x dp.
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
TIMEOUT_S = float(os.environ.get("VAL_COMPARE_TIMEOUT", "1200"))  # per compare


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


def main():
    base = os.path.join(OUT, "scale")
    os.makedirs(base, exist_ok=True)
    jobs = []
    for model, lab, tp, pp in MODELS:
        for n in SCALES:
            dp = n // (tp * pp)
            m = 2 * pp
            gb = m * dp
            d = os.path.join(base, "%s-%d" % (model, n))
            # --ignore-memory: these jobs (no recomputation) compare fabrics; most would not fit in
            # 80 GB (docs/compute-model.md, "Memory per GPU"), which does not change their timing.
            args = ["compare", "--model", model, "--gpus", str(n), "--tp", str(tp), "--pp", str(pp),
                    "--global-batch", str(gb), "--fidelity", "flow", "--seed", str(SEED), "--ignore-memory", "--out", d]
            jobs.append(dict(model=model, label=lab, n=n, tp=tp, pp=pp, dp=dp, m=m, global_batch=gb, dir=d,
                             args=args))
    # largest first
    order = sorted(jobs, key=lambda j: -j["n"])

    def one(j):
        dt, out = sgf(j["args"], log="scale %s %d GPUs" % (j["model"], j["n"]), allow_fail=True,
                      timeout=TIMEOUT_S)
        j["wall_s"] = dt
        j["ok"] = out is not None

    pmap(one, order, jobs=2)  # the IB runs take longest; two compares keep both cores busy
    save_failures("scale")
    res = []
    for j in jobs:
        if not j["ok"]:
            continue
        r = rows_of(j["dir"])
        res.append(dict(model=j["model"], label=j["label"], n=j["n"], tp=j["tp"], pp=j["pp"], dp=j["dp"],
                        microbatches=j["m"], global_batch=j["global_batch"], wall_s=j["wall_s"],
                        tiers=tiers(j["dir"]), cmd=show(j["args"]),
                        mfu={f: r["mfu"][f] for f in ("ib", "roce")},
                        iter_s={f: r["iteration_time_s"][f] for f in ("ib", "roce")},
                        dp_s={f: r["breakdown.exposed_comm_s.dp"][f] for f in ("ib", "roce")},
                        tp_s={f: r["breakdown.exposed_comm_s.tp"][f] for f in ("ib", "roce")},
                        pp_s={f: r["breakdown.exposed_comm_s.pp"][f] for f in ("ib", "roce")},
                        bubble_s={f: r["breakdown.bubble_s"][f] for f in ("ib", "roce")},
                        straggler_s={f: r["breakdown.straggler_s"][f] for f in ("ib", "roce")},
                        slowest={f: summary(os.path.join(j["dir"], f))["slowest_rank"] for f in ("ib", "roce")},
                        util_max={f: r["counters.link_utilisation_max"][f] for f in ("ib", "roce")}))
    save_json("scale.json", dict(seed=SEED, rows=res))
    plot_and_write(res)


def plot_and_write(res):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for k, (model, lab, tp, pp) in enumerate(MODELS):
        rs = [r for r in res if r["model"] == model]
        if not rs:
            continue
        xs = [r["n"] for r in rs]
        axes[0].plot(xs, [r["mfu"]["ib"] for r in rs], "o-", color=["#4477aa", "#228833"][k], label="%s IB" % lab)
        axes[0].plot(xs, [r["mfu"]["roce"] for r in rs], "s--", color=["#ee6677", "#ccbb44"][k],
                     label="%s RoCEv2" % lab)
        axes[1].plot(xs, [r["mfu"]["roce"] / r["mfu"]["ib"] for r in rs], "o-", label=lab)
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
    frag = ["![MFU vs scale](%s)\n" % fig_path,
            "Commands (seed %d; flow fidelity; `$B` is `BUILD_DIR/sgfabric`; each writes `platform.xml`, "
            "`workload.txt`, `ib/`, `roce/`, `comparison.json`):\n" % SEED,
            cmd_block([r["cmd"] for r in res]),
            "\n".join(t) + "\n", "@@SCALE_TEXT@@\n"]
    write_fragment("scale", "\n".join(frag))


if __name__ == "__main__":
    main()
