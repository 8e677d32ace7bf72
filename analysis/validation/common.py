"""Shared helpers of the validation report (analysis/validation/make_report.sh).

Environment (set by make_report.sh): SGF (the sgfabric binary), VAL_OUT (scratch results
directory), VAL_FIG (figure directory), VAL_JOBS (parallel simulations), VAL_SRC (repository).
Every simulation is one `sgfabric` command; the command line is kept (with the binary written
as `$B`, B=BUILD_DIR/sgfabric) so that the report can print it under each figure.
"""
import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

SRC = os.environ.get("VAL_SRC", os.getcwd())
SGF = os.environ.get("SGF", os.path.join(SRC, "build", "sgfabric"))
OUT = os.environ.get("VAL_OUT", os.path.join(SRC, "results", "validation"))
FIG = os.environ.get("VAL_FIG", os.path.join(SRC, "docs", "figures", "validation"))
JOBS = int(os.environ.get("VAL_JOBS", "2"))
PY = "/usr/bin/python3"
SEED = 1


def rel(path):
    """A path as written in the report: relative to the repository root."""
    p = os.path.relpath(path, SRC)
    return p


def show(args):
    """The command line as printed in the report ($B is BUILD_DIR/sgfabric)."""
    return "$B " + " ".join(shlex.quote(rel(a)) if os.path.isabs(a) else shlex.quote(a) for a in args)


FAILURES = []


def sgf(args, log=None, allow_fail=False, timeout=None):
    """Runs sgfabric ARGS; returns (wall seconds, stdout). On failure (or after `timeout` seconds,
    when its whole process group is killed): raises, or with allow_fail records the failure
    (command, status, end of stderr) in FAILURES and returns (dt, None)."""
    t0 = time.time()
    p = subprocess.Popen([SGF] + args, cwd=SRC, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    p.stdout, p.stderr = out, err
    dt = time.time() - t0
    if p.returncode != 0:
        status = ("signal %d" % -p.returncode) if p.returncode < 0 else ("exit %d" % p.returncode)
        if timed_out:
            status = "killed by the driver after %.0f s (time limit)" % dt
        msg = "FAILED (%s): %s\n%s" % (status, show(args), p.stderr[-2000:])
        print(msg, file=sys.stderr, flush=True)
        if allow_fail:
            FAILURES.append(dict(cmd=show(args), status=status, stderr=p.stderr[-2000:]))
            return dt, None
        raise RuntimeError(msg)
    if log:
        print("  [%6.1f s] %s" % (dt, log), flush=True)
    return dt, p.stdout


def pmap(fn, items, jobs=None):
    """fn over items, JOBS at a time (each fn runs one or more simulations)."""
    with ThreadPoolExecutor(max_workers=jobs or JOBS) as ex:
        return list(ex.map(fn, items))


def gen_flows(pattern, n, g, size, seed, out):
    cmd = [PY, os.path.join(SRC, "analysis/validation/gen_flows.py"), pattern, str(n), str(g),
           repr(size), str(seed), out]
    subprocess.run(cmd, check=True)
    return "/usr/bin/python3 analysis/validation/gen_flows.py %s %d %d %s %d %s" % (
        pattern, n, g, repr(size), seed, rel(out))


def read_fcts(d):
    with open(os.path.join(d, "flows.csv")) as f:
        return [float(r["fct_us"]) for r in csv.DictReader(f)]


def summary(d):
    with open(os.path.join(d, "summary.json")) as f:
        return json.load(f)


def pct(xs, q):
    """q-th percentile (0..100), linear interpolation (numpy's default)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def save_json(name, data):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)


def load_json(name):
    with open(os.path.join(OUT, name)) as f:
        return json.load(f)


def write_fragment(name, text):
    d = os.path.join(OUT, "fragments")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".md"), "w") as f:
        f.write(text.rstrip() + "\n")


def savefig(fig, name):
    """PNG under FIG at a size that stays below 200 KB; returns the report's relative path."""
    os.makedirs(FIG, exist_ok=True)
    path = os.path.join(FIG, name)
    # metadata without a date: identical data give identical files
    fig.savefig(path, dpi=90, metadata={"Software": None})
    size = os.path.getsize(path)
    if size > 200_000:
        fig.savefig(path, dpi=60, metadata={"Software": None})
    return "figures/validation/" + name


def cmd_block(lines):
    return "```sh\n" + "\n".join(lines) + "\n```\n"


def save_failures(phase):
    save_json("failures-%s.json" % phase, sorted(FAILURES, key=lambda f: f["cmd"]))
