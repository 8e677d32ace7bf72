#!/usr/bin/env python3
"""Assembles docs/validation.md from analysis/validation/report.md.in and the fragments and JSON
results the phase scripts wrote under VAL_OUT.

Placeholders in the template:
  @@NAME@@          the fragment VAL_OUT/fragments/NAME.md, or a generated block (SUMMARY,
                    KNOWN_FAILURES, TIMINGS)
  {{py: EXPR}}      a Python expression over the measured results (functions below), so that
                    every number in the prose is the measured one
usage: render.py TEMPLATE OUTPUT TOTAL_SECONDS
"""
import ast
import json
import operator
import os
import re
import sys

from common import OUT, load_json
from random_patterns import ALL_SETS, LATE_SETS, SETS


def _load(name):
    try:
        return load_json(name)
    except FileNotFoundError:
        return None


FID = _load("fidelity.json")
DCQ = _load("dcqcn.json")
SCA = _load("scale.json")
SEN = _load("sensitivity.json")
HLD = _load("held_out.json")
SETS_HELD = tuple(name for name, s in SETS.items() if s[6] == 1)  # one transfer per sending GPU
SETS_QP = tuple(name for name, s in SETS.items() if s[6] > 1)  # several queue pairs per NIC
SETS_LATE = tuple(LATE_SETS)  # transfers that start at random dates, behind the queues of those before
SETS_ALL = tuple(ALL_SETS)


def fid(fabric, pattern, n, key="err_mean_pct"):
    for r in FID["rows"]:
        if (r["fabric"], r["pattern"], r["n"]) == (fabric, pattern, n):
            return r[key]
    return float("nan")


def fidc(fabric, pattern, n, key, fidelity="packet"):
    for r in FID["rows"]:
        if (r["fabric"], r["pattern"], r["n"]) == (fabric, pattern, n):
            return r["counters_" + fidelity].get(key)
    return None


def pc(x):
    """A signed percentage."""
    return "%+.1f%%" % x


def cell_met(r):
    """A cell meets the goal when its mean and its 99th percentile both do."""
    return abs(r["err_mean_pct"]) <= FID["goal_pct"] and abs(r["err_p99_pct"]) <= FID.get("goal_p99_pct", 10.0)


def met(fabric=None, pattern=None):
    rs = [r for r in FID["rows"] if (fabric is None or r["fabric"] == fabric)
          and (pattern is None or r["pattern"] == pattern)]
    return "%d of %d" % (sum(1 for r in rs if cell_met(r)), len(rs))


def misses(fabric):
    """The fabric's cells that miss the goal, as text ("" if none)."""
    out = []
    for r in FID["rows"]:
        if r["fabric"] == fabric and not cell_met(r):
            out.append("the %s of %d GPUs (mean %s, p99 %s)" %
                       (r["pattern"], r["n"], pc(r["err_mean_pct"]), pc(r["err_p99_pct"])))
    return ", ".join(out)


def worst(fabric):
    """The fabric's largest mean-FCT error (flow vs packet), in percent, sign kept."""
    return max((r["err_mean_pct"] for r in FID["rows"] if r["fabric"] == fabric), key=abs)


def dcq(n, key):
    r = DCQ["results"][str(n)]
    return r[key]


def dcqf(n, flow, key):
    return DCQ["results"][str(n)]["flows"][str(flow)][key]


def sca(model, n, key, fabric=None):
    for r in SCA["rows"]:
        if (r["model"], r["n"]) == (model, n):
            if key == "ratio":
                return r["mfu"]["roce"] / r["mfu"]["ib"]
            v = r[key]
            return v[fabric] if fabric else v
    return float("nan")


def draws_of(model, n):
    """The scale study's ECMP draws of one compare (seed 1 included)."""
    return [d for d in SCA.get("draws", []) if (d["model"], d["n"]) == (model, n)]


def ratio(d):
    return d["mfu"]["roce"] / d["mfu"]["ib"]


def draws_text(model, n):
    """'median 0.955, 0.830-0.958 over 5 seeds' for the summary, or '' without draws."""
    r = sorted(ratio(d) for d in draws_of(model, n))
    if len(r) < 2:
        return ""
    med = r[len(r) // 2] if len(r) % 2 else (r[len(r) // 2 - 1] + r[len(r) // 2]) / 2
    return "median %.3f, %.3f–%.3f over %d seeds" % (med, r[0], r[-1], len(r))


def draws_split(model, n):
    """The draws' RoCE/IB ratios split by whether a switch link carried two data-parallel ring
    edges or more ('2 of 5 draws put two ... (RoCE/IB a-b); the other 3, one at most: c-d')."""
    ds = draws_of(model, n)
    if not ds:
        return "no draws"
    two = sorted(ratio(d) for d in ds if d["dp_edges_on_one_link"] >= 1.5)
    one = sorted(ratio(d) for d in ds if d["dp_edges_on_one_link"] < 1.5)

    def span(r):
        return "%.3f" % r[0] if len(r) == 1 or r[0] == r[-1] else "%.3f–%.3f" % (r[0], r[-1])
    if not two:
        return "no draw of %d puts two data-parallel ring edges on one switch link (RoCE/IB %s)" % (len(ds), span(one))
    return "%d of %d draws put two data-parallel ring edges or more on one switch link (RoCE/IB %s); %s" % (
        len(two), len(ds), span(two),
        "the other %d, one at most: %s" % (len(one), span(one)) if one else "so do the others")


def draw(model, n, seed, key):
    """One value of a scale-study draw: draw(m, n, 1, "dp_edges_on_one_link")."""
    for d in draws_of(model, n):
        if d["seed"] == seed:
            return d[key]
    return float("nan")


def draw_spread(model, n, fabric):
    """(largest / smallest - 1) in % of one fabric's iteration time over the draws."""
    t = [d["iter_s"][fabric] for d in draws_of(model, n)]
    return 100 * (max(t) / min(t) - 1) if t else float("nan")


def draw_seeds():
    """How many seeds the scale study's draws use, seed 1 included."""
    return 1 + len(SCA.get("draw_seeds", []))


def variant(name, key="iteration_time_s"):
    """A RoCE run of the scale study's variants (scale.py VARIANTS) on the largest GPT-3 compare."""
    for v in SCA.get("variants", []):
        if v["name"] == name:
            return v[key]
    return float("nan")


def slow(model, n, fabric):
    """slowest_rank of one fabric's summary.json in the scale study."""
    return sca(model, n, "slowest", fabric)


def partial(model, n, fabric="roce"):
    """summary.json of one fabric's run inside a compare the driver killed (time limit): compare
    runs its fabrics in parallel in DIR.tmp-PID/ and renames only when both are done."""
    import glob
    for d in sorted(glob.glob(os.path.join(OUT, "scale", "%s-%d.tmp-*" % (model, n), fabric, "summary.json"))):
        with open(d) as f:
            return json.load(f)
    return None


def smfu(group, label, fabric, key="mfu"):
    for r in SEN["mfu"]:
        if (r["group"], r["label"], r["fabric"]) == (group, label, fabric):
            return r[key]
    return float("nan")


def sfl(group, scen, label, fidelity="packet", key="mean_us"):
    v = [r[key] for r in SEN["flows"] if (r["group"], r["scen"], r["label"], r["fid"])
         == (group, scen, label, fidelity)]
    if not v or any(x is None for x in v):
        return float("nan")
    return sum(v) / len(v)


def sflc(group, scen, label, key, fidelity="packet"):
    for r in SEN["flows"]:
        if (r["group"], r["scen"], r["label"], r["fid"]) == (group, scen, label, fidelity) and r["seed"] == 1:
            return r["counters"].get(key)
    return None


def held(name, fabric, key="abs_mean_err_pct"):
    """One row of the held-out patterns (held_out.json): a set of patterns on one fabric."""
    for r in HLD["rows"]:
        if (r["set"], r["fabric"]) == (name, fabric):
            return r[key]
    return float("nan")


def held_all(fabric, key="abs_mean_err_pct", sets=None):
    """key averaged over the patterns of the given sets (all by default), weighted by their count."""
    rs = [r for r in HLD["rows"] if r["fabric"] == fabric and (sets is None or r["set"] in sets) and r["measured"]]
    if not rs:
        return float("nan")  # no pattern ran: nan, as held() and fid() give
    return sum(r[key] * r["measured"] for r in rs) / sum(r["measured"] for r in rs)


def summary_block():
    out = []
    if FID:
        out.append("**Flow vs packet fidelity** (flow completion times, goal |error| <= %g%% on the mean and "
                   "<= %g%% on the 99th percentile; error = (flow - packet) / packet; seed %d):\n" %
                   (FID["goal_pct"], FID.get("goal_p99_pct", 10.0), FID["seed"]))
        fabs = list(dict.fromkeys(r["fabric"] for r in FID["rows"]))
        out.append("| scenario | GPUs | " + " | ".join(fabs) + " |")
        out.append("|---|---|" + "---|" * len(fabs))
        keys = list(dict.fromkeys((r["pattern"], r["n"]) for r in FID["rows"]))
        for p, n in keys:
            cells = []
            for f in fabs:
                e = fid(f, p, n)
                row = next((r for r in FID["rows"] if (r["fabric"], r["pattern"], r["n"]) == (f, p, n)), None)
                if e != e or row is None:
                    cells.append("failed")
                else:
                    cells.append("%s %+.1f%% (p99 %+.1f%%)" % ("met" if cell_met(row) else "**NOT met**", e,
                                                               fid(f, p, n, "err_p99_pct")))
            out.append("| %s | %d | %s |" % (p, n, " | ".join(cells)))
        out.append("")
    if SCA:
        out.append("**IB vs RoCEv2 MFU** (`sgfabric compare`, flow fidelity, default parameters, seed %d):\n" %
                   SCA["seed"])
        models = list(dict.fromkeys((r["model"], r["label"]) for r in SCA["rows"]))
        scales = list(dict.fromkeys(r["n"] for r in SCA["rows"]))
        out.append("| GPUs | " + " | ".join("%s: MFU IB / RoCE, ratio" % m[1] for m in models) + " |")
        out.append("|---|" + "---|" * len(models))
        for n in scales:
            cells = []
            for m, _ in models:
                cells.append("%.1f%% / %.1f%%, **%.3f**" %
                             (sca(m, n, "mfu", "ib"), sca(m, n, "mfu", "roce"), sca(m, n, "ratio")) +
                             (" (ECMP draws: %s)" % draws_text(m, n) if draws_text(m, n) else ""))
            out.append("| %d | %s |" % (n, " | ".join(cells)))
        for n in (10240,):
            if n in scales:
                continue
            cells = []
            for m, _ in models:
                pr = partial(m, n)
                cells.append("IB did not finish (killed after 20 min); RoCE %s" % (
                    "%.1f%%" % (100 * pr["mfu"]) if pr else "did not finish"))
            out.append("| %d | %s |" % (n, " | ".join(cells)))
        out.append("")
    return "\n".join(out)


def failures_block():
    fs = []
    for name in sorted(os.listdir(OUT)):
        if name.startswith("failures-"):
            with open(os.path.join(OUT, name)) as f:
                fs += json.load(f)
    if not fs:
        return "No simulation failed in this run of the driver.\n"
    out = ["%d simulation(s) failed in this run of the driver (their results are left out above):\n" % len(fs)]
    for f in fs:
        out.append("- `%s` -> %s; stderr: `%s`" % (f["cmd"], f["status"],
                   f["stderr"].strip().replace("\n", " / ")[-300:] or "(empty)"))
    return "\n".join(out) + "\n"


def timings_block(total):
    try:
        t = load_json("timings.json")
    except FileNotFoundError:
        t = {}
    return ", ".join("%s %.0f s" % (k, v) for k, v in t.items()) or "not recorded"


def build_info():
    try:
        with open(os.path.join(OUT, "build_info.txt")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return "(unknown build)"


# The template's {{py: EXPR}} expressions, evaluated without eval(): a small interpreter of the
# expression forms the template uses (names from env, literals, arithmetic, comparisons,
# conditionals, subscripts, calls of env's functions and a few builtins, str methods, generator
# expressions). Anything else (attribute access beyond str methods, lambdas, walrus, imports...)
# is refused, so a template can only read the report's data.
_BUILTINS = {"abs": abs, "all": all, "any": any, "len": len, "list": list, "max": max, "min": min,
             "round": round, "set": set, "sorted": sorted, "str": str, "sum": sum, "tuple": tuple,
             "float": float, "int": int, "range": range}
_STR_METHODS = {"join", "format", "startswith", "endswith", "upper", "lower", "strip"}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
           ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not}


def evaluate(text, env):
    return _eval(ast.parse(text.strip(), mode="eval").body, dict(env))


def _bind(target, value, scope):
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, ast.Tuple):
        values = list(value)
        if len(values) != len(target.elts):
            raise ValueError("cannot unpack %d values into %d names" % (len(values), len(target.elts)))
        for t, v in zip(target.elts, values):
            _bind(t, v, scope)
    else:
        raise ValueError("unsupported loop target %s" % type(target).__name__)


def _comprehension(node, scope):
    """Yields the scopes of a generator expression's iterations (nested for/if clauses)."""
    def walk(k, sc):
        if k == len(node.generators):
            yield sc
            return
        gen = node.generators[k]
        for value in _eval(gen.iter, sc):
            inner = dict(sc)
            _bind(gen.target, value, inner)
            if all(_eval(cond, inner) for cond in gen.ifs):
                yield from walk(k + 1, inner)
    return walk(0, scope)


def _eval(node, scope):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in scope:
            return scope[node.id]
        if node.id in _BUILTINS:
            return _BUILTINS[node.id]
        raise NameError("name '%s' is not defined" % node.id)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_eval(e, scope) for e in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        return {_eval(k, scope): _eval(v, scope) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, scope), _eval(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
    if isinstance(node, ast.BoolOp):
        v = None
        for e in node.values:
            v = _eval(e, scope)
            if isinstance(node.op, ast.And) and not v or isinstance(node.op, ast.Or) and v:
                return v
        return v
    if isinstance(node, ast.Compare):
        left = _eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, scope)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, scope) if _eval(node.test, scope) else _eval(node.orelse, scope)
    if isinstance(node, ast.Subscript):
        return _eval(node.value, scope)[_eval(node.slice, scope)]
    if isinstance(node, ast.Slice):
        return slice(*(None if e is None else _eval(e, scope) for e in (node.lower, node.upper, node.step)))
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        values = (_eval(node.elt, sc) for sc in _comprehension(node, scope))
        return list(values) if isinstance(node, ast.ListComp) else values
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            obj = _eval(node.func.value, scope)
            if not isinstance(obj, str) or node.func.attr not in _STR_METHODS:
                raise ValueError("only str methods %s may be called" % sorted(_STR_METHODS))
            fn = getattr(obj, node.func.attr)
        else:
            fn = _eval(node.func, scope)
        args = [_eval(a, scope) for a in node.args]
        kwargs = {k.arg: _eval(k.value, scope) for k in node.keywords}
        return fn(*args, **kwargs)
    raise ValueError("unsupported expression %s" % type(node).__name__)


def main():
    tmpl, out, total = sys.argv[1], sys.argv[2], float(sys.argv[3])
    text = open(tmpl).read()
    blocks = {"SUMMARY": summary_block(), "BUILD_INFO": build_info(
    ), "KNOWN_FAILURES": failures_block(), "TIMINGS": timings_block(total)}
    # <!-- BLOCK NAME --> ... <!-- END NAME --> sections of the template define @@NAME@@ (prose that
    # the fragments place next to their tables) and are removed from where they stand

    def grab(m):
        blocks[m.group(1)] = m.group(2).strip() + "\n"
        return ""
    text = re.sub(r"<!-- BLOCK ([A-Z_]+) -->\n(.*?)<!-- END \1 -->\n?", grab, text, flags=re.S)
    frag_dir = os.path.join(OUT, "fragments")
    for name in os.listdir(frag_dir):
        blocks[name[:-3].upper()] = open(os.path.join(frag_dir, name)).read()
    # fragments first (they may hold further @@...@@ text placeholders filled by the template's
    # own sections), then expressions
    for _ in range(3):
        text = re.sub(r"@@([A-Z_]+)@@", lambda m: blocks.get(m.group(1), m.group(0)), text)
    env = dict(pc=pc, n0=lambda x: "%.0f" % x, n1=lambda x: "%.1f" % x,
               n2=lambda x: "%.2f" % x, n3=lambda x: "%.3f" % x, g3=lambda x: "%.3g" % x,
               tim=lambda name: (load_json("timings.json").get(name, float("nan"))
                                 if os.path.exists(os.path.join(OUT, "timings.json")) else float("nan")),
               counters=lambda d: json.load(open(os.path.join(OUT, d, "summary.json")))["counters"],
               partial=partial, slow=slow, draw=draw, draws_text=draws_text, draws_split=draws_split,
               draw_spread=draw_spread, draw_seeds=draw_seeds, variant=variant,
               fid=fid, fidc=fidc, met=met, misses=misses, worst=worst, dcq=dcq, dcqf=dcqf, sca=sca, smfu=smfu,
               sfl=sfl, sflc=sflc, held=held, held_all=held_all,
               SETS_HELD=SETS_HELD, SETS_QP=SETS_QP, SETS_LATE=SETS_LATE, SETS_ALL=SETS_ALL,
               FID=FID, DCQ=DCQ, SCA=SCA, SEN=SEN, HLD=HLD, total=total)

    def ev(m):
        try:
            return str(evaluate(m.group(1), env))
        except Exception as e:  # noqa: BLE001
            print("render.py: %s: %s" % (m.group(1), e), file=sys.stderr)
            return "[render error: %s: %s]" % (m.group(1), e)
    text = re.sub(r"\{\{py:\s*(.*?)\}\}", ev, text, flags=re.S)
    left = re.findall(r"@@[A-Z_]+@@", text)
    if left:
        print("render.py: unfilled placeholders: %s" % ", ".join(sorted(set(left))), file=sys.stderr)
    with open(out + ".tmp", "w") as f:
        f.write(text)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
