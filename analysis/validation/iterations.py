#!/usr/bin/env python3
"""Flow fidelity against packet fidelity on whole training iterations.

For every case (a job on a platform) and fabric (ib, roce with the nic preset, roce with the
paper preset; roce-maxmin: roce's flow fidelity before DCQCN's floor model, roce-held-off: before
the packet-level measure of the ports DCQCN holds, both against roce's packet runs;
roce-paper-floor: the paper preset without its fluid model; roce-paper-drawn: with its ECN marks
drawn per packet; roce-rpqp: each QP's reaction point kept across its transfers; ib-ch2,
roce-ch2: two NCCL channels per collective; roce-qp4, roce-qp8: four or eight QPs per connection;
roce-ch2-dcqcn-off, roce-qp4-dcqcn-off, roce-qp8-dcqcn-off: the same with DCQCN off; roce-drop-P:
random loss P per link (1e-4, 1e-3, 1e-2), roce-drop-P-no-timeouts: the same without flow
fidelity's retransmission timeouts) one iteration is simulated at both
fidelities with `sgfabric run`; the table gives the iteration time at each fidelity and the
error of flow fidelity, the largest error of exposed communication per parallel group (groups
exposing at least 1 % of the iteration), the RoCE/IB MFU ratio at each fidelity, and RoCE's
counters against flow fidelity's estimates.

    analysis/validation/iterations.py BUILD_DIR WORK_DIR [--cases a,b] [--fabrics ib,roce,roce-paper]
                                      [--seed N] [--link-rate RATE] [--timeout S] > table.md

--seed (default 1) is the run's seed, which draws RoCE's ECMP paths (QP numbers are hashed with
it), IB's adaptive-routing ties and the packet models' random marks and drops: another seed is
another sample of the same job on the same platform. Runs of a seed other than 1 go to
WORK_DIR/seed-N/. --seeds 1,2,3 runs every seed listed and prints instead one table over them:
the packet iterations, their spread ((largest - smallest) / mean), flow fidelity's error at each
seed and the error of the mean over the seeds (for presets whose iteration moves with the seed
more than the goal, docs/validation-iterations.md, "Other seeds"). --link-rate (e.g. 100Gbps)
generates the platforms with that NIC and switch link rate instead of the GPU's (400 Gb/s for
H100); use a WORK_DIR of its own. Runs are kept in WORK_DIR and reused when their summary.json
exists (delete it to run again); each run's CPU time is measured with getrusage of its child
process. Standard library only.
"""
import argparse
import json
import os
import resource
import subprocess
import sys

# A GPT-3-style dense model (GPT-3 13B), shipped as a model file
GPT3_13B = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workloads", "examples",
                        "gpt3-13b.model")
# name: (platform options, workload options)
CASES = {
    "llama3-8b/rail": (["--gpus", "64", "--radix", "16", "--rail-optimized"],
                       ["--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "2", "--global-batch", "16"]),
    "llama3-8b/2to1": (["--gpus", "64", "--radix", "16", "--oversubscription", "2"],
                       ["--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "2", "--global-batch", "16"]),
    "llama3-8b/3tier": (["--gpus", "64", "--tiers", "3", "--radix", "8"],
                        ["--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "2", "--global-batch", "16"]),
    "llama3-8b-256/2to1": (["--gpus", "256", "--radix", "32", "--oversubscription", "2"],
                           ["--model", "llama3-8b", "--gpus", "256", "--tp", "8", "--pp", "2", "--global-batch", "64"]),
    "llama3-8b-pp4/2to1": (["--gpus", "64", "--radix", "16", "--oversubscription", "2"],
                           ["--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "4", "--global-batch", "16"]),
    "gpt3-13b/2to1": (["--gpus", "64", "--radix", "16", "--oversubscription", "2"],
                      ["--model-file", GPT3_13B, "--gpus", "64", "--tp", "8", "--pp", "2", "--global-batch", "16"]),
    "gpt3-13b-128-pp4/3tier": (["--gpus", "128", "--tiers", "3", "--radix", "8"],
                               ["--model-file", GPT3_13B, "--gpus", "128", "--tp", "8", "--pp", "4",
                                "--global-batch", "32"]),
    "mixtral-ep8/2to1": (["--gpus", "64", "--radix", "16", "--oversubscription", "2"],
                         ["--model", "mixtral-8x7b", "--gpus", "64", "--tp", "2", "--pp", "1", "--ep", "8",
                          "--global-batch", "32"]),
}
DROPS = ("1e-4", "1e-3", "1e-2")  # the loss rates of the roce-drop fabrics
FABRICS = {"ib": ["--fabric", "ib"], "roce": ["--fabric", "roce"],
           "roce-paper": ["--fabric", "roce", "--cfg=roce/dcqcn:paper"],
           # RoCE flow fidelity as it was before DCQCN's floor model: plain max-min with DCQCN on
           # (its packet run is roce's: roce/flow-fifo acts at flow fidelity only)
           "roce-maxmin": ["--fabric", "roce", "--cfg=roce/flow-fifo:off"],
           # the paper preset with its fluid model off: DCQCN's floor model decides, as with nic
           # (its packet run is roce-paper's: roce/fluid acts at flow fidelity only)
           "roce-paper-floor": ["--fabric", "roce", "--cfg=roce/dcqcn:paper", "--cfg=roce/fluid:off"],
           # roce without the packet-level measure of the ports DCQCN holds (max-min there, as
           # before it; its packet run is roce's: roce/flow-held-ports acts at flow fidelity only)
           "roce-held-off": ["--fabric", "roce", "--cfg=roce/flow-held-ports:off"],
           # roce without the sojourn of a starting transfer in the queues pause spreading stands
           # (roce/flow-queue-wait acts at flow fidelity only: its packet run is roce's)
           "roce-no-queue-wait": ["--fabric", "roce", "--cfg=roce/flow-queue-wait:off"],
           # roce with each QP's DCQCN state kept across its transfers at packet fidelity (docs/roce.md,
           # "A QP's reaction point across its transfers"); at flow fidelity it acts only through the
           # held-port measure's packet runs
           "roce-rpqp": ["--fabric", "roce", "--cfg=roce/rp-per-qp:on"],
           # the paper preset's fluid model with each flow's ECN marks drawn per packet instead of
           # taken at their expected positions (roce/fluid-marks; its packet run is roce-paper's)
           "roce-paper-drawn": ["--fabric", "roce", "--cfg=roce/dcqcn:paper", "--cfg=roce/fluid-marks:random"],
           # two NCCL channels per collective (coll/channels): on RoCE each channel is a connection
           # of its own, hashed to its own ECMP paths (docs/collectives.md); compared with IB on two
           # channels too
           "ib-ch2": ["--fabric", "ib", "--cfg=coll/channels:2"],
           "roce-ch2": ["--fabric", "roce", "--cfg=coll/channels:2"],
           # four QPs per connection, each part of a transfer on its own ECMP path (IB has no QPs to
           # spread: compared with ib)
           "roce-qp4": ["--fabric", "roce", "--cfg=roce/qps-per-conn:4"],
           # eight: each QP's turn of a 400 Gb/s NIC (6.25 GB/s) is below the rate at which its
           # DCQCN byte counter keeps up with its cuts (docs/roce.md, "Several QPs per NIC bring the
           # trap closer")
           "roce-qp8": ["--fabric", "roce", "--cfg=roce/qps-per-conn:8"],
           # the several-path fabrics with DCQCN off: what their paths alone give
           **{f"{name}-dcqcn-off": ["--fabric", "roce", cfg, "--cfg=roce/dcqcn:off"]
              for name, cfg in (("roce-ch2", "--cfg=coll/channels:2"), ("roce-qp4", "--cfg=roce/qps-per-conn:4"),
                                ("roce-qp8", "--cfg=roce/qps-per-conn:8"))},
           # random loss on every fabric link: go-back-N (docs/roce.md, "Loss at flow fidelity");
           # -no-timeouts: flow fidelity without its retransmission timeouts (roce/flow-timeouts acts
           # at flow fidelity only: its packet run is the other's)
           **{f"roce-drop-{p}": ["--fabric", "roce", f"--cfg=roce/drop-rate:{p}"] for p in DROPS},
           **{f"roce-drop-{p}-no-timeouts": ["--fabric", "roce", f"--cfg=roce/drop-rate:{p}",
                                             "--cfg=roce/flow-timeouts:off"] for p in DROPS}}
# The IB run a RoCE variant's MFU is divided by (ib unless named here): the same collectives.
IB_OF = {"roce-ch2": "ib-ch2", "roce-ch2-dcqcn-off": "ib-ch2"}
PACKET_OF = {"roce-maxmin": "roce", "roce-paper-floor": "roce-paper", "roce-held-off": "roce",
             "roce-no-queue-wait": "roce",
             "roce-paper-drawn": "roce-paper",
             **{f"roce-drop-{p}-no-timeouts": f"roce-drop-{p}" for p in DROPS}}
# The matrix compares the fabrics' two fidelities with the compute held fixed: the roofline, the
# compute model it was measured with (the kernel model, the default now, shortens compute by a
# few percent and so changes how much communication is exposed; checked on llama3-8b/2to1 roce,
# where flow stays within 0.4 % of packet: tests/integration/roce_iteration_2to1.sh).
COMPUTE = ["--cfg=compute/model:roofline"]
COUNTERS = [("pfc_paused_s", "pfc_paused_s_est", "PFC paused s"), ("ecn_marks", "ecn_marks_est", "ECN marks"),
            ("cnps", "cnps_est", "CNPs"), ("gbn_timeouts", "gbn_timeouts_est", "go-back-N timeouts"),
            ("retransmitted_bytes", "retransmitted_bytes_est", "go-back-N resent bytes")]


def run(cmd, timeout):
    """Runs cmd; returns (exit status or None on timeout, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        status = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        status = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return status, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def simulate(sgf, work, case, fabric, fidelity, timeout, seed, link_rate=None):
    name = case.replace("/", "_")
    d = os.path.join(work, name) if seed == 1 else os.path.join(work, f"seed-{seed}", name)
    os.makedirs(d, exist_ok=True)
    platform, workload = os.path.join(d, "platform.xml"), os.path.join(d, "workload.txt")
    if not os.path.exists(platform):
        rate = ["--link-rate", link_rate] if link_rate else []
        subprocess.run([sgf, "platform", *CASES[case][0], *rate, "-o", platform], check=True,
                       stdout=subprocess.DEVNULL)
    if not os.path.exists(workload):
        # --ignore-memory (here and for run): the Mixtral case, without recomputation, would not fit
        # in 80 GB; the fidelity comparison does not depend on it.
        subprocess.run([sgf, "workload", *CASES[case][1], "--ignore-memory", "-o", workload], check=True,
                       stdout=subprocess.DEVNULL)
    if fidelity == "packet":
        fabric = PACKET_OF.get(fabric, fabric)
    out = os.path.join(d, f"{fabric}-{fidelity}")
    summary, cpu_file = os.path.join(out, "summary.json"), os.path.join(d, f"{fabric}-{fidelity}.cpu")
    if not os.path.exists(summary):
        status, cpu = run([sgf, "run", "--ignore-memory", "--platform", platform, "--workload", workload,
                           *FABRICS[fabric], *COMPUTE, "--fidelity", fidelity, "--seed", str(seed), "--force",
                           "-o", out],
                          timeout)
        if status != 0:
            print(f"{case} {fabric} {fidelity}: {'timed out' if status is None else 'failed'}", file=sys.stderr)
            return None, None
        with open(cpu_file, "w") as f:
            f.write(f"{cpu:.2f}\n")
    with open(summary) as f:
        s = json.load(f)
    cpu = float(open(cpu_file).read()) if os.path.exists(cpu_file) else None
    return s, cpu


def cpu_text(cpu):
    """CPU seconds, or '-' for a run kept from elsewhere without its CPU file."""
    return "-" if cpu is None else f"{cpu:.1f}"


def pct(a, b):
    return 100 * (a - b) / b if b else float("nan")


def group_error(flow, packet):
    """The largest error of exposed communication per group, over groups exposing >= 1 %."""
    it = packet["iteration_time_s"]
    worst, name = 0.0, "-"
    for g, p in packet["breakdown"]["exposed_comm_s"].items():
        fl = flow["breakdown"]["exposed_comm_s"].get(g, 0)
        if p >= 0.01 * it and abs(pct(fl, p)) > abs(worst):
            worst, name = pct(fl, p), g
    return worst, name


def seeds_table(sgf, a, cases, fabrics, seeds):
    """Flow against packet fidelity over several seeds: the error at each seed and of the means."""
    names = " / ".join(str(x) for x in seeds)
    print(f"| case | fabric | packet iteration (s), seeds {names} | spread | flow error, seeds {names} | "
          "error of the means |")
    print("|---|---|---|---|---|---|")
    per_seed, of_means = [], []
    for c in cases:
        for fab in fabrics:
            runs = [[simulate(sgf, a.work, c, fab, fid, a.timeout, s, a.link_rate)[0] for fid in ("packet", "flow")]
                    for s in seeds]
            if any(r is None for pair in runs for r in pair):
                print(f"| {c} | {fab} | not run | | | |")
                continue
            pk = [p["iteration_time_s"] for p, _ in runs]
            fl = [f["iteration_time_s"] for _, f in runs]
            errs = [pct(f, p) for f, p in zip(fl, pk)]
            mean_err = pct(sum(fl) / len(fl), sum(pk) / len(pk))
            per_seed += errs
            of_means.append(mean_err)
            spread = 100 * (max(pk) - min(pk)) / (sum(pk) / len(pk))
            print(f"| {c} | {fab} | {' / '.join(f'{x:.4f}' for x in pk)} | {spread:.1f} % | "
                  f"{' / '.join(f'{e:+.1f}' for e in errs)} % | {mean_err:+.1f} % |")
    if per_seed:
        print(f"\nPer seed: |error| {sum(abs(e) for e in per_seed) / len(per_seed):.1f} % on average, within 2 % on "
              f"{sum(abs(e) <= 2 for e in per_seed)} of {len(per_seed)} cells. Of the means: within 2 % on "
              f"{sum(abs(e) <= 2 for e in of_means)} of {len(of_means)}, {sum(of_means) / len(of_means):+.1f} % "
              f"on average (signed), |error| {sum(abs(e) for e in of_means) / len(of_means):.1f} %.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--fabrics", default="ib,roce,roce-paper")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", default=None)
    ap.add_argument("--link-rate", default=None)
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()
    sgf = os.path.join(a.build, "sgfabric")
    cases, fabrics = a.cases.split(","), a.fabrics.split(",")
    for c in cases + fabrics:
        if c not in CASES and c not in FABRICS:
            sys.exit(f"iterations.py: unknown case or fabric '{c}' (cases: {', '.join(CASES)})")
    if a.seeds:
        seeds_table(sgf, a, cases, fabrics, [int(x) for x in a.seeds.split(",")])
        return
    res = {}
    for c in cases:
        for fab in fabrics:
            for fid in ("flow", "packet"):
                res[c, fab, fid] = simulate(sgf, a.work, c, fab, fid, a.timeout, a.seed, a.link_rate)
    print("| case | fabric | packet iteration (s) | flow iteration (s) | error | worst group error | "
          "CPU packet / flow (s) |")
    print("|---|---|---|---|---|---|---|")
    met = total = 0
    for c in cases:
        for fab in fabrics:
            (p, pc), (f, fc) = res[c, fab, "packet"], res[c, fab, "flow"]
            if p is None or f is None:
                print(f"| {c} | {fab} | {'-' if p is None else p['iteration_time_s']:} | "
                      f"{'-' if f is None else f['iteration_time_s']} | not run | | |")
                continue
            err = pct(f["iteration_time_s"], p["iteration_time_s"])
            g, gname = group_error(f, p)
            total += 1
            met += abs(err) <= 2
            print(f"| {c} | {fab} | {p['iteration_time_s']:.4f} | {f['iteration_time_s']:.4f} | {err:+.1f}% | "
                  f"{g:+.1f}% ({gname}) | {cpu_text(pc)} / {cpu_text(fc)} |")
    print(f"\nIteration time within 2 %: {met} of {total} cells.\n")
    ratios = [fab for fab in fabrics if fab.startswith("roce") and IB_OF.get(fab, "ib") in fabrics]
    if ratios:
        print("| case | fabric | RoCE/IB MFU, packet | flow | difference (points) |")
        print("|---|---|---|---|---|")
        for c in cases:
            for fab in ratios:
                r = [res[c, x, fid][0] for x in (IB_OF.get(fab, "ib"), fab) for fid in ("packet", "flow")]
                if None in r or r[0]["mfu"] is None:
                    continue
                rp, rf = r[2]["mfu"] / r[0]["mfu"], r[3]["mfu"] / r[1]["mfu"]
                print(f"| {c} | {fab} | {rp:.3f} | {rf:.3f} | {100 * (rf - rp):+.1f} |")
        print()
    print("| case | fabric | " + " | ".join(f"{n}: packet / flow est." for _, _, n in COUNTERS) + " |")
    print("|---|---|" + "---|" * len(COUNTERS))
    for c in cases:
        for fab in fabrics:
            if not fab.startswith("roce"):
                continue
            p, f = res[c, fab, "packet"][0], res[c, fab, "flow"][0]
            if p is None or f is None:
                continue
            # Flow fidelity estimates no marks, CNPs or pauses at the ports DCQCN holds that the
            # packet model did not measure (their time is dcqcn_held_unestimated_s_est; runs before
            # that counter: dcqcn_held_s_est): where there are such ports its figures are lower bounds.
            counters = f["counters"]
            held = (counters.get("dcqcn_held_unestimated_s_est", counters.get("dcqcn_held_s_est")) or 0) > 0
            cells = []
            for pk, fk, _ in COUNTERS:
                pv, fv = p["counters"].get(pk), f["counters"].get(fk)
                fmt = (lambda v: "n/a" if v is None else f"{v:.3g}")
                bound = ">= " if held and fk in ("ecn_marks_est", "cnps_est", "pfc_paused_s_est") and fv is not None \
                    else ""
                cells.append(f"{fmt(pv)} / {bound}{fmt(fv)}")
            print(f"| {c} | {fab} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
