#!/usr/bin/env python3
"""Part 3b: sensitivity studies.

(a) MFU, `sgfabric compare` at flow fidelity: Llama-3 70B, 256 GPUs, tp 8, pp 4, dp 8, global batch
    64 (8 micro-batches), on a NON-rail-optimized 2-tier radix-64 fat-tree (on the rail-optimized
    platform every data-parallel ring of a 256-GPU job stays under one leaf and no setting
    changes anything). One compare per setting.
(b) Flow files at packet fidelity (the reference) and flow fidelity, 128 GPUs: routing and QPs
    (random permutations, 3 seeds), DCQCN preset x PFC (64-to-1 incast and a permutation), loss
    (rail-ring traffic: every flow alone on its path), oversubscription (permutation on
    generated non-rail 128-GPU platforms).
"""
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import (OUT, SEED, SRC, cmd_block, gen_flows, mean, pmap, read_fcts, save_failures, save_json,  # noqa: E402
                    savefig, sgf, show, summary, write_fragment)

# --ignore-memory: without recomputation this job needs 327 GB per GPU (docs/compute-model.md, "Memory
# per GPU"); it is kept as it was for the fabric sensitivity, which memory does not change.
BASE_JOB = ["--model", "llama3-70b", "--gpus", "256", "--tp", "8", "--pp", "4", "--global-batch", "64",
            "--fidelity", "flow", "--seed", str(SEED), "--ignore-memory"]
PERM_SEEDS = [1, 2, 3]


def mfu_jobs(base):
    plats = {}
    cmds = []
    for o in (1, 2, 4):
        p = os.path.join(base, "plat-256-os%d.xml" % o)
        a = ["platform", "--gpus", "256", "--radix", "64"] + \
            (["--oversubscription", str(o)] if o > 1 else []) + ["-o", p]
        sgf(a)
        plats[o] = p
        cmds.append(show(a))
    J = []

    def add(group, label, fabrics, cfg, os_=1):
        d = os.path.join(base, "mfu-%s-%s" % (group, label.replace("/", "_").replace(" ", "_").replace(",", "")))
        plat = ["--platform", plats[os_]] if os_ else []  # os_ None: the rail-optimized platform compare generates
        args = ["compare"] + BASE_JOB + plat + ["--fabrics", fabrics] + cfg + ["--out", d]
        J.append(dict(group=group, label=label, fabrics=fabrics.split(","), dir=d, args=args))

    add("rail", "rail-optimized defaults", "ib,roce", [], os_=None)
    add("base", "defaults", "ib,roce", [])
    add("routing", "IB D-mod-K", "ib", ["--cfg=ib/routing:dmodk"])
    for q in (2, 4, 8):
        add("qps", "RoCE %d QPs" % q, "roce", ["--cfg=roce/qps-per-conn:%d" % q])
    for o in (2, 4):
        add("oversub", "%d:1" % o, "ib,roce", [], os_=o)
    for r in ("1e-5", "1e-4", "1e-3"):
        add("loss", "RoCE drop %s" % r, "roce", ["--cfg=roce/drop-rate:%s" % r])
    add("dcqcn", "RoCE DCQCN paper", "roce", ["--cfg=roce/dcqcn:paper"])
    add("dcqcn", "RoCE DCQCN off", "roce", ["--cfg=roce/dcqcn:off"])
    add("pfc", "RoCE PFC off", "roce", ["--cfg=roce/pfc:off"])
    return J, cmds


def flow_jobs(base):
    J = []
    cmds = []
    files = {}

    def ff(pattern, n, size, seed):
        k = (pattern, n, size, seed)
        if k not in files:
            p = os.path.join(base, "%s-%d-s%d.csv" % (pattern, n, seed))
            cmds.append(gen_flows(pattern, n, 8, size, seed, p))
            files[k] = p
        return files[k]

    ft = os.path.join(SRC, "platforms/ft2-128.xml")

    def add(group, label, flows, plat, fab, cfg, seed, scen):
        for fid in ("packet", "flow"):
            d = os.path.join(base, "fl-%s-%s-%s-s%d-%s" %
                             (group, scen, label.replace(" ", "_").replace("/", "_"), seed, fid))
            args = ["flows", "--platform", plat, "--flows", flows, "--fabric", fab, "--fidelity", fid,
                    "--seed", str(seed)] + cfg + ["--out", d]
            J.append(dict(group=group, label=label, scen=scen, seed=seed, fid=fid, dir=d, args=args))

    for s in PERM_SEEDS:
        f = ff("perm-x", 128, 8e6, s)
        add("routing", "IB AR", f, ft, "ib", [], s, "perm")
        add("routing", "IB D-mod-K", f, ft, "ib", ["--cfg=ib/routing:dmodk"], s, "perm")
        for q in (1, 2, 4, 8):
            add("routing", "RoCE %d QP" % q, f, ft, "roce", ["--cfg=roce/qps-per-conn:%d" % q], s, "perm")
            add("routing", "RoCE %d QP, DCQCN off" % q, f, ft, "roce",
                ["--cfg=roce/qps-per-conn:%d" % q, "--cfg=roce/dcqcn:off"], s, "perm")
    inc = ff("incast", 128, 4e6, SEED)
    perm = ff("perm-x", 128, 8e6, SEED)
    for preset in ("nic", "paper", "off"):
        for pfc in ("on", "off"):
            lab = "DCQCN %s, PFC %s" % (preset, pfc)
            cfg = ["--cfg=roce/dcqcn:%s" % preset, "--cfg=roce/pfc:%s" % pfc]
            add("dcqcn", lab, inc, ft, "roce", cfg, SEED, "incast")
            add("dcqcn", lab, perm, ft, "roce", cfg, SEED, "perm")
    ring = ff("ring", 128, 16e6, SEED)
    for r in ("0", "1e-5", "1e-4", "1e-3", "1e-2"):
        add("loss", r, ring, ft, "roce", ["--cfg=roce/drop-rate:%s" % r], SEED, "ring")
    for o in (1, 2, 4):
        p = os.path.join(base, "plat-128-os%d.xml" % o)
        a = ["platform", "--gpus", "128", "--radix", "16"] + \
            (["--oversubscription", str(o)] if o > 1 else []) + ["-o", p]
        sgf(a)
        cmds.append(show(a))
        add("oversub", "IB %d:1" % o, perm, p, "ib", [], SEED, "perm")
        add("oversub", "RoCE %d:1" % o, perm, p, "roce", [], SEED, "perm")
    return J, cmds


def main():
    base = os.path.join(OUT, "sensitivity")
    os.makedirs(base, exist_ok=True)
    MJ, mcmds = mfu_jobs(base)
    FJ, fcmds = flow_jobs(base)

    def one(j):
        dt, out = sgf(j["args"], log="sensitivity %s %s %s" % (j["group"], j["label"], j.get("fid", "compare")),
                      allow_fail=True)
        j["wall_s"] = dt
        j["ok"] = out is not None

    pmap(one, MJ, jobs=1)
    order = sorted(FJ, key=lambda j: j["fid"] != "packet")
    pmap(one, order)
    save_failures("sensitivity")
    mres = []
    for j in MJ:
        if not j["ok"]:
            continue
        with open(os.path.join(j["dir"], "comparison.json")) as f:
            c = json.load(f)
        rows = {r["key"]: dict(zip(c["fabrics"], r["values"])) for r in c["rows"]}
        for fab in j["fabrics"]:
            mres.append(dict(group=j["group"], label=j["label"], fabric=fab, mfu=rows["mfu"][fab],
                             iter_s=rows["iteration_time_s"][fab], dp_s=rows["breakdown.exposed_comm_s.dp"][fab],
                             cmd=show(j["args"]), wall_s=j["wall_s"]))
    fres = []
    for j in FJ:
        if not j["ok"]:
            fres.append(dict(group=j["group"], label=j["label"], scen=j["scen"], seed=j["seed"], fid=j["fid"],
                             mean_us=None, max_us=None, wall_s=j["wall_s"], cmd=show(j["args"]), bytes=None,
                             counters={}, failed=True))
            continue
        fct = read_fcts(j["dir"])
        sm = summary(j["dir"])
        c = sm["counters"]
        fres.append(dict(group=j["group"], label=j["label"], scen=j["scen"], seed=j["seed"], fid=j["fid"],
                         mean_us=mean(fct), max_us=max(fct), wall_s=j["wall_s"], cmd=show(j["args"]),
                         bytes=sm.get("bytes_delivered"),
                         counters={k: c.get(k) for k in ("ecn_marks", "cnps", "dcqcn_rate_cuts", "pfc_pause_frames",
                                                         "pfc_paused_s", "drops", "retransmitted_bytes",
                                                         "gbn_timeouts", "gbn_timeouts_est", "credit_stall_s")}))
    save_json("sensitivity.json", dict(seed=SEED, mfu=mres, flows=fres, cmds=mcmds + fcmds))
    plot_and_write(mres, fres, mcmds, fcmds)
    determinism()


def determinism():
    """Reruns a few simulations of part 1 into new directories and compares the outputs byte for
    byte (flows.csv, summary.json): same inputs and seed must give the same results."""
    import filecmp
    base = os.path.join(OUT, "determinism")
    os.makedirs(base, exist_ok=True)
    cases = ["permutation-128-ib-packet", "permutation-128-roce-packet", "incast-128-roce-paper-packet",
             "all-to-all-128-ib-flow", "ring-128-roce-flow"]
    lines = []
    for c in cases:
        src = os.path.join(OUT, "fidelity", c)
        if not os.path.isdir(src):
            continue
        with open(os.path.join(src, "manifest.json")) as f:
            args = list(json.load(f)["command"])
        i = args.index("--out")
        args[i + 1] = os.path.join(base, c)
        _, out = sgf(args, log="determinism %s" % c, allow_fail=True)
        same = out is not None and all(filecmp.cmp(os.path.join(src, n), os.path.join(base, c, n), shallow=False)
                                       for n in ("flows.csv", "summary.json"))
        lines.append("| `%s` | %s |" % (show(args), "identical" if same else "**differ**"))
    write_fragment("determinism", "| rerun of a part-1 simulation (seed %d) | flows.csv and summary.json against the "
                                  "first run |\n"
                   "|---|---|\n%s\n" % (SEED, "\n".join(lines)))


def fmean(fres, group, label, scen, fid, key="mean_us"):
    v = [r[key] for r in fres if r["group"] == group and r["label"] == label and r["scen"] == scen and r["fid"] == fid]
    if any(x is None for x in v):
        return float("nan")  # a run of this setting failed (known issues)
    return mean(v)


def counters_text(fres, k, fid):
    """The nonzero counters of scenario k's run at fidelity fid with seed SEED, as text."""
    runs = [x for x in fres if (x["group"], x["scen"], x["label"]) == k and x["fid"] == fid and x["seed"] == SEED]
    cs = runs[0]["counters"] if runs else {}
    return ", ".join("%s %s" % (a, ("%.3g" % v) if isinstance(v, float) else v) for a, v in cs.items()
                     if v not in (None, 0, 0.0))


def plot_and_write(mres, fres, mcmds, fcmds):
    # ---- (a) MFU
    fig, ax = plt.subplots(figsize=(9, 4.8))
    labels = []
    vals = []
    cols = []
    for r in mres:
        labels.append("%s: %s [%s]" % (r["group"], r["label"], r["fabric"]))
        vals.append(r["mfu"])
        cols.append("#4477aa" if r["fabric"] == "ib" else "#ee6677")
    ys = list(range(len(labels)))[::-1]
    ax.barh(ys, vals, color=cols)
    for y, v in zip(ys, vals):
        ax.text(v, y, " %.2f%%" % v, va="center", fontsize=7)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("MFU (%)")
    ax.set_xlim(0, max(vals) * 1.15)
    ax.set_title("Llama-3 70B, 256 GPUs (tp8 pp4 dp8), flow fidelity; non-rail 2-tier radix 64\n"
                 "except 'rail' (the rail-optimized platform compare generates)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig_mfu = savefig(fig, "sensitivity_mfu.png")
    plt.close(fig)

    # ---- (b) flows
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.3))
    ax = axes[0]
    labs = [lab for lab in dict.fromkeys(r["label"] for r in fres if r["group"] == "routing")]
    ys = list(range(len(labs)))[::-1]
    for k, fid in enumerate(("packet", "flow")):
        vals = [fmean(fres, "routing", lab, "perm", fid) for lab in labs]
        ax.barh([y + (0.2 if k == 0 else -0.2) for y in ys], [v if v == v else 0 for v in vals], 0.4, label=fid)
        for y, v in zip(ys, vals):
            if v != v:
                ax.text(0.02, y + (0.2 if k == 0 else -0.2), "%s: crashed" % fid, va="center", fontsize=6,
                        color="red", transform=ax.get_yaxis_transform())
    ax.set_yticks(ys)
    ax.set_yticklabels(labs, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("mean FCT (us), mean of seeds %s" % ",".join(map(str, PERM_SEEDS)), fontsize=8)
    ax.set_title("routing / QPs: permutation 128, 8 MB", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    labs = [lab for lab in dict.fromkeys(r["label"] for r in fres if r["group"] == "dcqcn")]
    ys = list(range(len(labs)))[::-1]
    for k, (scen, fid) in enumerate((("incast", "packet"), ("incast", "flow"), ("perm", "packet"), ("perm", "flow"))):
        ax.barh([y + 0.3 - 0.2 * k for y in ys], [fmean(fres, "dcqcn", lab, scen, fid) for lab in labs], 0.2,
                label="%s %s" % (scen, fid))
    ax.set_yticks(ys)
    ax.set_yticklabels(labs, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("mean FCT (us)", fontsize=8)
    ax.set_title("DCQCN preset x PFC: incast 64-to-1 4 MB, perm 8 MB", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[2]
    rates = ["0", "1e-5", "1e-4", "1e-3", "1e-2"]
    base_p = fmean(fres, "loss", "0", "ring", "packet")
    for fid in ("packet", "flow"):
        ax.plot(range(len(rates)), [base_p / fmean(fres, "loss", r, "ring", fid) for r in rates], "o-", label=fid)
    ax.set_xticks(range(len(rates)))
    ax.set_xticklabels(rates, fontsize=7)
    ax.set_xlabel("roce/drop-rate (per link)", fontsize=8)
    ax.set_ylabel("mean FCT without loss / mean FCT", fontsize=8)
    ax.set_title("loss, go-back-N: rail rings 128 (30 MB/flow)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax = axes[3]
    for fab in ("IB", "RoCE"):
        for fid, st in (("packet", "-"), ("flow", "--")):
            ax.plot([1, 2, 4], [fmean(fres, "oversub", "%s %d:1" % (fab, o), "perm", fid) for o in (1, 2, 4)],
                    "o" + st, label="%s %s" % (fab, fid))
    ax.set_xticks([1, 2, 4])
    ax.set_yscale("log")
    ax.set_xlabel("leaf oversubscription (down:up)", fontsize=8)
    ax.set_ylabel("mean FCT (us)", fontsize=8)
    ax.set_title("oversubscription: permutation 128, 8 MB", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    for a in axes:
        a.tick_params(labelsize=7)
    fig.tight_layout()
    fig_fl = savefig(fig, "sensitivity_flows.png")
    plt.close(fig)

    # ---- tables
    base = {r["fabric"]: r["mfu"] for r in mres if r["group"] == "base"}
    t1 = [
        "| study | setting | fabric | MFU | vs default same fabric | iteration (s) | exposed dp (s) |",
        "|---|---|---|---|---|---|---|"]
    for r in mres:
        t1.append("| %s | %s | %s | %.2f%% | %+.2f%% | %.4f | %.4f |" % (
            r["group"], r["label"], r["fabric"], r["mfu"], 100 * (r["mfu"] / base[r["fabric"]] - 1), r["iter_s"],
            r["dp_s"]))
    t2 = ["| study | scenario | setting | mean FCT packet (us) | mean FCT flow (us) | flow vs packet | packet "
          "counters (seed %d) | flow estimates |" % SEED,
          "|---|---|---|---|---|---|---|---|"]
    seen = []
    for r in fres:
        k = (r["group"], r["scen"], r["label"])
        if k in seen:
            continue
        seen.append(k)
        p = fmean(fres, *k[:1], k[2], k[1], "packet")
        f = fmean(fres, *k[:1], k[2], k[1], "flow")
        cstr, fstr = (counters_text(fres, k, fid) for fid in ("packet", "flow"))

        def num(x, f="%.1f"):
            return "**failed** (known issues)" if x != x else f % x
        t2.append("| %s | %s%s | %s | %s | %s | %s | %s | %s |" % (
            k[0], k[1], " (seeds %s)" % ",".join(map(str, PERM_SEEDS)) if k[0] == "routing" else "", k[2], num(p),
            num(f), num(100 * (f / p - 1), "%+.1f%%"), cstr or "-", fstr or "-"))
    frag = ["### (a) MFU\n", "![MFU sensitivity](%s)\n" % fig_mfu,
            "Commands (seed %d; flow fidelity; `$B` is `BUILD_DIR/sgfabric`):\n" % SEED,
            cmd_block(mcmds + list(dict.fromkeys(r["cmd"] for r in mres))),
            "\n".join(t1) + "\n", "@@SENS_MFU_TEXT@@\n",
            "### (b) Flow files, packet fidelity as reference\n", "![flow-level sensitivity](%s)\n" % fig_fl,
            "Commands (seeds: %s for the permutations of the routing study, %d elsewhere; `$B` is "
            "`BUILD_DIR/sgfabric`):\n"
            % (",".join(map(str, PERM_SEEDS)), SEED),
            "<details><summary>%d commands</summary>\n\n%s</details>\n" % (
                len(fcmds) + len(fres), cmd_block(fcmds + [r["cmd"] for r in fres])),
            "\n".join(t2) + "\n", "@@SENS_FLOWS_TEXT@@\n"]
    write_fragment("sensitivity", "\n".join(frag))


if __name__ == "__main__":
    main()
