"""Sweeps of sgfabric: the study file, its points, running one point, the table and the figures.

Used by the workflow (analysis/sweep/Snakefile) and by `sgfabric sweep`, which checks a study with
`python3 sweeplib.py check STUDY --sgfabric BIN` before it creates anything (docs/artifacts.md).

A study is a YAML file (Debian's python3-yaml):

    study: mfu-vs-gpus            # a name, for the figures' titles (optional)
    description: ...              # free text (optional)
    command: compare              # run or compare: the sgfabric subcommand of every point
    options: {model: llama3-8b, tp: 8, pp: 2, fabrics: "ib,roce", fidelity: flow}
    parameters: {gpus: [16, 32, 64]}   # swept: the points are the cross product of the values
    derived: {global-batch: "2 * gpus // tp"}   # options computed from the others (optional)
    seeds: [1, 2]                 # every point runs once per seed
    metrics: [mfu, iteration_time_s]   # summary.json keys: one figure each (optional)
    x: gpus                       # the figures' x axis (optional: the first swept parameter)

Option names are those of `sgfabric COMMAND --help` without the dashes (for run, also those of
`sgfabric platform` and `sgfabric workload`, which generate its inputs); a name with a '/' is a
model parameter, given as --cfg NAME:VALUE. A value true is the flag itself, false its absence.
A parameter's values may also be mappings, each setting several options together (a "linked"
parameter: {model: gpt3-175b, tp: 8, pp: 8}); the parameter's name is then a label only.
"""
import ast
import csv
import difflib
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOP_KEYS = {"study", "description", "command", "options", "parameters", "derived", "seeds", "metrics", "x"}
COMMANDS = ("run", "compare")
# Options a study may not set: the sweep owns the output, the seed comes from `seeds`, and the
# help options would print instead of simulating.
RESERVED = {"out": "the sweep writes each point's result itself", "seed": "use the study's 'seeds' key",
            "help": "not an option of a point", "help-cfg": "not an option of a point",
            "force": "the sweep writes each point's result itself", "progress": "not an option of a point",
            "no-progress": "not an option of a point"}

# The CSV's columns read from each fabric's summary.json: what compare's table shows (the MFU,
# the breakdown of the iteration, the counters that explain a difference between fabrics).
SUMMARY_COLUMNS = [
    "mfu", "hfu", "iteration_time_s", "tokens_per_s", "breakdown.compute_s",
    "breakdown.exposed_comm_s.tp", "breakdown.exposed_comm_s.pp", "breakdown.exposed_comm_s.dp",
    "breakdown.exposed_comm_s.ep", "breakdown.exposed_comm_s.cp", "breakdown.exposed_comm_s.dp_ep",
    "breakdown.exposed_comm_s.world", "breakdown.bubble_s", "breakdown.straggler_s", "breakdown.other_s",
    "counters.fabric_bytes", "counters.nvlink_bytes", "counters.link_utilisation_mean",
    "counters.link_utilisation_max", "counters.mean_fct_s", "counters.max_fct_s", "counters.events",
    "counters.credit_stall_s", "counters.adaptive_routing_decisions", "counters.flow_window_caps",
    "counters.flow_congestion_tree_caps", "counters.pfc_pause_frames", "counters.pfc_paused_s",
    "counters.ecn_marks", "counters.cnps", "counters.dcqcn_rate_cuts", "counters.drops",
    "counters.pfc_paused_s_est", "counters.ecn_marks_est", "counters.cnps_est", "counters.dcqcn_rate_cuts_est",
]
# Top-level keys of a run's summary.json (docs/outputs.md) under which a study's metric may name
# a number that is not one of the standard columns.
SUMMARY_KEYS = {"sim_time_s", "workload", "iteration_time_s", "mfu", "hfu", "tokens_per_s", "model_flops",
                "hardware_flops", "breakdown", "slowest_rank", "counters", "fabric_bytes_by_group",
                "nvlink_bytes_by_group", "platform", "parameters"}
# Shown as percent in the figures (fractions in summary.json and in the CSV).
PERCENT = {"mfu", "hfu", "counters.link_utilisation_mean", "counters.link_utilisation_max"}
DEFAULT_METRICS = ["mfu", "iteration_time_s"]


class StudyError(Exception):
    """A study the sweep refuses: the message names the file and the key."""


# ---- the options of sgfabric's subcommands ---------------------------------------------------

_OPTION_LINE = re.compile(r"^  (?:-\w, )?--([a-z0-9][a-z0-9-]*)(?: (\S+))?(?:\s{2,}|$)")
_PARAM_LINE = re.compile(r"^([a-z]+/[a-z0-9-]+)\s")


def _help(sgfabric, *args):
    """The output of `sgfabric ARGS`, which lists options: read rather than copied, so that the
    names a study may use never drift from the tool's."""
    p = subprocess.run([sgfabric, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    if p.returncode != 0 or not p.stdout:
        raise StudyError("cannot list the options of %s %s (exit status %d)" % (sgfabric, " ".join(args), p.returncode))
    return p.stdout


def subcommand_options(sgfabric, command):
    """{name: takes_value} of `sgfabric COMMAND --help`."""
    options = {}
    for line in _help(sgfabric, command, "--help").splitlines():
        m = _OPTION_LINE.match(line)
        if m:
            options[m.group(1)] = m.group(2) is not None
    return options


def model_parameters(sgfabric):
    return {m.group(1) for m in map(_PARAM_LINE.match, _help(sgfabric, "params").splitlines()) if m}


class Tool:
    """The option tables of one sgfabric binary, read once."""

    def __init__(self, sgfabric):
        self.path = sgfabric
        self._options = {}
        self._params = None

    def options(self, command):
        if command not in self._options:
            self._options[command] = subcommand_options(self.path, command)
        return self._options[command]

    def params(self):
        if self._params is None:
            self._params = model_parameters(self.path)
        return self._params

    def known(self, command):
        """{name: takes_value} a point of COMMAND accepts (run: with its generators')."""
        known = dict(self.options(command))
        if command == "run":
            for generator in ("platform", "workload"):
                for name, takes in self.options(generator).items():
                    known.setdefault(name, takes)
        for name in RESERVED:
            known.pop(name, None)
        return known


# ---- reading a study -------------------------------------------------------------------------

def _yaml_load(path):
    try:
        import yaml
    except ImportError:
        raise StudyError("python3-yaml is needed to read study files (apt-get install python3-yaml)")

    class UniqueKeys(yaml.SafeLoader):
        """A key given twice is a mistake (YAML would keep the last one silently)."""

    def mapping(loader, node, deep=False):
        keys = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in keys:
                raise StudyError("key '%s' is given twice (line %d)" % (key, key_node.start_mark.line + 1))
            keys.add(key)
        return loader.construct_mapping(node, deep=deep)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=UniqueKeys)
    except OSError as e:
        raise StudyError("cannot read it: %s" % e.strerror)
    except UnicodeDecodeError:
        raise StudyError("is not UTF-8 text")
    except yaml.YAMLError as e:
        raise StudyError("is not valid YAML: %s" % str(e).replace("\n", " "))


def _suggest(name, names):
    close = difflib.get_close_matches(str(name), sorted(names), n=1, cutoff=0.6)
    return " (did you mean %s?)" % close[0] if close else ""


def _scalar(value):
    return isinstance(value, (str, int, float, bool)) and not (isinstance(value, float) and value != value)


# Derived options: arithmetic on numbers and on the other options' values, nothing else (no
# names but options, no calls, no attributes), so that a study file cannot run code.
_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a ** b,
          ast.Div: lambda a, b: a / b}


def _names_of(expr):
    return {n.id.replace("_", "-") for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _compile(text, key):
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError:
        raise StudyError("key '%s': '%s' is not an arithmetic expression" % (key, text))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Constant, ast.Name,
                                 ast.Load) + tuple(_ARITH)):
            raise StudyError("key '%s': '%s' may hold only numbers, option names and + - * / // %% **" % (key, text))
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise StudyError("key '%s': '%s' may hold only numbers, option names and + - * / // %% **" % (key, text))
    return tree.body


def _evaluate(node, values, key):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        v = values.get(node.id.replace("_", "-"))
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise StudyError("key '%s': option %s is not a number (%r)" % (key, node.id, v))
        return v
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, values, key)
        return -v if isinstance(node.op, ast.USub) else v
    a, b = _evaluate(node.left, values, key), _evaluate(node.right, values, key)
    try:
        v = _ARITH[type(node.op)](a, b)
    except (ZeroDivisionError, OverflowError) as e:
        raise StudyError("key '%s': %s" % (key, e))
    if isinstance(v, float) and v == int(v):
        v = int(v)  # 2 * 16 / 8 is the option value 4, not 4.0
    return v


class Study:
    """A checked study: its points, each {name: value} of options, plus its seed."""

    def __init__(self, path, tool, given_as=None):
        self.path = path
        self.given_as = given_as or path  # the file the user named (the workflow reads its copy)
        try:
            self._read(_yaml_load(path), tool)
        except StudyError as e:
            raise StudyError("%s: %s" % (path, e))

    def _read(self, data, tool):
        if not isinstance(data, dict):
            raise StudyError("a study is a YAML mapping of the keys %s" % ", ".join(sorted(TOP_KEYS)))
        for key in data:
            if key not in TOP_KEYS:
                raise StudyError("unknown key '%s'%s; a study has the keys %s" % (key, _suggest(key, TOP_KEYS),
                                                                                  ", ".join(sorted(TOP_KEYS))))
        self.name = str(data.get("study") or os.path.splitext(os.path.basename(self.given_as))[0])
        command = data.get("command")
        if command not in COMMANDS:
            why = "missing" if command is None else "'%s' is not a sweepable subcommand" % command
            raise StudyError("key 'command': %s; it is run or compare" % why)
        self.command = command
        known = tool.known(command)

        def check_name(name, key):
            if not isinstance(name, str) or not name:
                raise StudyError("key '%s': option names are strings" % key)
            if name in RESERVED:
                raise StudyError("key '%s': option '%s' is not for a study: %s" % (key, name, RESERVED[name]))
            if "/" in name:
                if name not in tool.params():
                    raise StudyError("key '%s': unknown model parameter '%s'%s (sgfabric params lists them)"
                                     % (key, name, _suggest(name, tool.params())))
            elif name not in known:
                raise StudyError("key '%s': unknown option '%s' of sgfabric %s%s (sgfabric %s --help lists them)"
                                 % (key, name, command, _suggest(name, known), command))

        def check_value(name, value, key):
            if name == "cfg":
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if not isinstance(item, str) or ":" not in item:
                        raise StudyError("key '%s': cfg takes area/name:value strings, not %r" % (key, item))
                    check_name(item.split(":", 1)[0], key)
                return
            if not _scalar(value):
                raise StudyError("key '%s': the value of %s must be a number, a string or true/false, not %r"
                                 % (key, name, value))
            if "/" not in name and known[name] is False and not isinstance(value, bool):
                raise StudyError("key '%s': %s is a flag: its value is true or false, not %r" % (key, name, value))
            if "/" not in name and known[name] is True and isinstance(value, bool):
                raise StudyError("key '%s': %s takes a value, not %s" % (key, name, str(value).lower()))

        options = data.get("options") or {}
        if not isinstance(options, dict):
            raise StudyError("key 'options': a mapping of option names to values")
        for name, value in options.items():
            check_name(name, "options.%s" % name)
            check_value(name, value, "options.%s" % name)
        self.options = dict(options)

        parameters = data.get("parameters")
        if not isinstance(parameters, dict) or not parameters:
            raise StudyError("key 'parameters': %s" % ("missing: a study sweeps at least one parameter"
                                                       if parameters is None else
                                                       "a mapping of parameter names to lists of values"))
        self.parameters = {}
        self.linked = {}  # parameter -> the option names its values set
        for name, values in parameters.items():
            key = "parameters.%s" % name
            if not isinstance(values, list) or not values:
                why = ("no values: give a non-empty list" if values in (None, []) or isinstance(values, list)
                       else "a list of values, not %r" % values)
                raise StudyError("key '%s': %s" % (key, why))
            if all(isinstance(v, dict) for v in values):
                names = set()
                for v in values:
                    if not v:
                        raise StudyError("key '%s': an empty mapping of options" % key)
                    for n, x in v.items():
                        check_name(n, "%s.%s" % (key, n))
                        check_value(n, x, "%s.%s" % (key, n))
                        names.add(n)
                self.linked[name] = sorted(names)
            else:
                check_name(name, key)
                for v in values:
                    check_value(name, v, key)
            labels = [self._label(v) for v in values]
            if len(set(labels)) != len(labels):
                raise StudyError("key '%s': a value is given twice" % key)
            self.parameters[name] = values
        swept = {n for name in self.parameters for n in self.linked.get(name, [name])}
        for name in swept:
            if name in self.options:
                raise StudyError("key 'options.%s': also a swept parameter; give it in one place" % name)

        derived = data.get("derived") or {}
        if not isinstance(derived, dict):
            raise StudyError("key 'derived': a mapping of option names to arithmetic expressions")
        self.derived = {}
        for name, text in derived.items():
            key = "derived.%s" % name
            check_name(name, key)
            if name in swept or name in self.options:
                raise StudyError("key '%s': %s is also set elsewhere in the study" % (key, name))
            expr = _compile(text, key)
            for n in _names_of(expr):
                if n not in swept and n not in self.options and n not in self.derived:
                    raise StudyError(
                        "key '%s': '%s' names %s, which the study does not set (before it)" % (key, text, n))
            self.derived[name] = (str(text), expr)

        seeds = data.get("seeds")
        if not isinstance(seeds, list) or not seeds:
            raise StudyError("key 'seeds': %s" % ("missing: a list of seeds, e.g. [1, 2]" if seeds is None
                                                  else "a non-empty list of seeds"))
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2 ** 63:
                raise StudyError("key 'seeds': %r is not a seed (an integer from 0 to 2^63-1)" % (s,))
        if len(set(seeds)) != len(seeds):
            raise StudyError("key 'seeds': a seed is given twice")
        self.seeds = seeds

        metrics = data.get("metrics", DEFAULT_METRICS)
        if not isinstance(metrics, list) or not metrics:
            raise StudyError("key 'metrics': a non-empty list of summary.json keys, e.g. [mfu, iteration_time_s]")
        for m in metrics:
            if not isinstance(m, str) or (m not in SUMMARY_COLUMNS and m.split(".")[0] not in SUMMARY_KEYS):
                raise StudyError("key 'metrics': '%s' is not a key of summary.json%s (docs/outputs.md)"
                                 % (m, _suggest(m, SUMMARY_COLUMNS)))
        self.metrics = metrics

        x = data.get("x", next(iter(self.parameters)))
        if x not in self.parameters:
            raise StudyError("key 'x': '%s' is not a swept parameter%s" % (x, _suggest(x, self.parameters)))
        self.x = x
        self.points = self._points()
        for p in self.points:  # every derived value computes (no division by zero, no non-number)
            self.settings(p)

    @staticmethod
    def _label(value):
        if isinstance(value, dict):
            return ",".join("%s=%s" % (k, Study._label(v)) for k, v in value.items())
        if isinstance(value, bool):
            return str(value).lower()
        return str(value)

    def _points(self):
        names = list(self.parameters)
        points = []
        for combo in itertools.product(*(self.parameters[n] for n in names)):
            for seed in self.seeds:
                points.append({"values": dict(zip(names, combo)), "seed": seed})
        for p in points:
            p["id"] = self.point_id(p)
        return points

    def settings(self, point):
        """The point's options: the fixed ones, the swept values, then the derived ones."""
        s = dict(self.options)
        for name, value in point["values"].items():
            if name in self.linked:
                s.update(value)
            else:
                s[name] = value
        for name, (text, expr) in self.derived.items():
            s[name] = _evaluate(expr, s, "derived.%s" % name)
        return s

    def point_id(self, point):
        """A directory name: readable (the swept values and the seed) and unique to everything the
        point runs (a hash of its command and options), so that changing a fixed option of the
        study gives new points instead of reusing results computed with the old one."""
        readable = "_".join("%s-%s" % (n, self._label(v)) for n, v in point["values"].items())
        readable = re.sub(r"[^A-Za-z0-9.+=-]+", "_", readable)[:80] + "_seed-%d" % point["seed"]
        canonical = json.dumps({"command": self.command, "settings": self.settings(point), "seed": point["seed"]},
                               sort_keys=True)
        return "%s_%s" % (readable, hashlib.sha256(canonical.encode()).hexdigest()[:10])

    def point(self, pid):
        for p in self.points:
            if p["id"] == pid:
                return p
        raise KeyError(pid)


# ---- running one point -----------------------------------------------------------------------

def _arg(name, value, known=()):
    """The arguments of one option; false is the flag's --no- form where the command has one
    (compare's platform is rail-optimized unless told --no-rail-optimized), else nothing."""
    if "/" in name:
        return ["--cfg", "%s:%s" % (name, Study._label(value))]
    if name == "cfg":
        return [a for item in (value if isinstance(value, list) else [value]) for a in ("--cfg", item)]
    if isinstance(value, bool):
        return ["--" + name] if value else ["--no-" + name] if "no-" + name in known else []
    return ["--" + name, Study._label(value)]


# Options naming a file the point reads: relative to the directory sgfabric sweep was started in.
FILE_OPTIONS = {"platform", "workload", "deployment", "model-file"}


def _resolve(name, value, cwd):
    if name not in FILE_OPTIONS or not isinstance(value, str):
        return value
    prefix = ""
    for p in ("simai:", "chakra:"):
        if name == "workload" and value.startswith(p):
            prefix, value = p, value[len(p):]
    return prefix + os.path.join(cwd, value)


def commands(study, point, tool, cwd="."):
    """The argument vectors of the point (no shell: each value is one argument), run in the
    point's directory: the last one writes the result to result/. File options are made
    absolute from CWD, the directory the user started the sweep in."""
    s = {name: _resolve(name, value, cwd) for name, value in study.settings(point).items()}
    seed = str(point["seed"])
    result = "result"
    if study.command == "compare":
        args = ["compare", "--seed", seed]
        for name, value in s.items():
            args += _arg(name, value, tool.options("compare"))
        return [args + ["--out", result]]
    # run: a generated platform and workload unless the study gives files, then the run. The
    # platform is the one compare generates (rail-optimized, radix 64, 2 tiers up to 2,048 GPUs),
    # so that run and compare studies of one job agree.
    run_opts, wl_opts, pf_opts = tool.options("run"), tool.options("workload"), tool.options("platform")
    run_args, wl_args, pf_args = ["run", "--no-progress", "--seed", seed], ["workload", "--seed", seed], []
    for name, value in s.items():
        if "/" in name or name in run_opts:
            run_args += _arg(name, value, run_opts)
            continue
        if name in wl_opts:
            wl_args += _arg(name, value, wl_opts)
        if name in pf_opts:
            pf_args += _arg(name, value, pf_opts)
    cmds = []
    if "platform" not in s:
        gpus = int(s.get("gpus", 0) or 0)
        platform = "platform.xml"
        cmds.append(["platform", "--radix", "64", "--rail-optimized", "--tiers", "3" if gpus > 2048 else "2"]
                    + pf_args + ["--out", platform])
        run_args += ["--platform", platform]
    if "workload" not in s:
        workload = "workload.txt"
        cmds.append(wl_args + ["--out", workload])
        run_args += ["--workload", workload]
    cmds.append(run_args + ["--out", result])
    return cmds


def point_threads(study):
    """Processes a point runs at once: compare runs one per fabric (default ib,roce)."""
    if study.command != "compare":
        return 1
    return len(str(study.options.get("fabrics", "ib,roce")).split(","))


def run_point(study, pid, sgfabric, dest, cwd="."):
    """Runs one point into a temporary sibling of DEST, renamed to DEST when complete: an
    interrupted or failed point leaves no DEST (and no temporary directory), so a rerun of the
    sweep runs it again and never mistakes half a result for a finished one."""
    point = study.point(pid)
    tool = Tool(sgfabric)
    parent = os.path.dirname(dest) or "."
    os.makedirs(parent, exist_ok=True)
    base = os.path.basename(dest)
    for stale in os.listdir(parent):  # left by a point killed with SIGKILL: ours, by their name
        if stale.startswith(".%s.tmp-" % base):
            shutil.rmtree(os.path.join(parent, stale), ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % base, dir=parent)
    try:
        log_path = os.path.join(tmp, "log.txt")
        start = time.monotonic()
        argvs = commands(study, point, tool, cwd)
        with open(log_path, "w") as log:
            for argv in argvs:
                log.write("$ sgfabric %s\n" % " ".join(argv))
                log.flush()
                status = subprocess.run([sgfabric] + argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
                                        check=False).returncode
                if status != 0:
                    log.close()
                    with open(log_path) as f:
                        text = f.read()
                    raise RuntimeError("point %s: sgfabric %s failed (exit status %d):\n%s"
                                       % (pid, argv[0], status, text))
        wall = time.monotonic() - start
        desc = {"format": "sgfabric-sweep-point/1", "id": pid, "command": study.command,
                "parameters": point["values"], "seed": point["seed"], "settings": study.settings(point),
                "argv": [["sgfabric"] + argv for argv in argvs], "wall_s": wall}
        with open(os.path.join(tmp, "point.json"), "w") as f:
            json.dump(desc, f, indent=2, sort_keys=True)
            f.write("\n")
        os.chmod(tmp, 0o777 & ~_umask())
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- the table and the figures ---------------------------------------------------------------

def _get(summary, path):
    v = summary
    for k in path.split("."):
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float)) else None


def _fabric_results(point_dir, command):
    """[(fabric, fidelity, summary)] of a finished point."""
    result = os.path.join(point_dir, "result")
    if command == "compare":
        with open(os.path.join(result, "manifest.json")) as f:
            fabrics = json.load(f)["fabrics"]
        dirs = [(f, os.path.join(result, f)) for f in fabrics]
    else:
        dirs = [(None, result)]
    out = []
    for fabric, d in dirs:
        with open(os.path.join(d, "summary.json")) as f:
            summary = json.load(f)
        out.append((fabric or summary["fabric"], summary.get("fidelity"), summary))
    return out


def table_columns(study):
    params = []
    for name in study.parameters:
        params += study.linked.get(name, [name])
    params += [n for n in study.derived if n not in params]
    # fabric and fidelity have their own columns (compare runs several fabrics per point)
    params = [n for n in params if n not in ("fabric", "fidelity")]
    extra = [m for m in study.metrics if m not in SUMMARY_COLUMNS]
    return ["point"] + params + ["seed", "fabric", "fidelity"] + SUMMARY_COLUMNS + extra + ["wall_s"]


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_table(study, points_dir, out_csv):
    """One row per point and fabric (compare runs several fabrics per point), in the study's
    order; written to a temporary file and renamed, so the table is never half-written."""
    columns = table_columns(study)
    tmp = out_csv + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for p in study.points:
            d = os.path.join(points_dir, p["id"])
            with open(os.path.join(d, "point.json")) as pf:
                desc = json.load(pf)
            settings = study.settings(p)
            for fabric, fidelity, summary in _fabric_results(d, study.command):
                row = {"point": p["id"], "seed": p["seed"], "fabric": fabric, "fidelity": fidelity,
                       "wall_s": round(desc["wall_s"], 3)}
                for c in columns:
                    if c in row:
                        continue
                    if c in SUMMARY_COLUMNS or c in study.metrics:
                        row[c] = _get(summary, c)
                    else:
                        row[c] = settings.get(c)
                w.writerow([_cell(row.get(c)) for c in columns])
    os.replace(tmp, out_csv)


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


def write_figures(study, table_csv, fig_dir, names):
    """One figure per metric: the metric against the study's x parameter, one line per fabric
    (and per value of the other swept parameters), the mean over seeds with error bars of one
    standard deviation (none for a single seed). Each is written to a temporary file, renamed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(table_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    x_cols = study.linked.get(study.x, [study.x])
    others = [c for n in study.parameters if n != study.x for c in study.linked.get(n, [n]) if c != "fabric"]
    x_values = [Study._label(v) for v in study.parameters[study.x]]

    def x_of(row):
        if study.x in study.linked:
            return ",".join("%s=%s" % (c, row[c]) for c in x_cols)
        return row[study.x]

    numeric = study.x not in study.linked and all(_number(v) is not None for v in x_values)
    os.makedirs(fig_dir, exist_ok=True)
    for metric, name in zip(study.metrics, names):
        scale = 100.0 if metric in PERCENT else 1.0
        lines = {}
        for r in rows:
            v = _number(r.get(metric, ""))
            if v is None:
                continue
            label = ", ".join(([r["fabric"]] if study.x != "fabric" else [])
                              + ["%s=%s" % (c, r[c]) for c in others]) or metric
            lines.setdefault(label, {}).setdefault(x_of(r), []).append(v * scale)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for label, by_x in lines.items():
            xs = [x for x in x_values if x in by_x] if study.x not in study.linked else list(by_x)
            means = [sum(by_x[x]) / len(by_x[x]) for x in xs]
            errs = [(sum((v - m) ** 2 for v in by_x[x]) / (len(by_x[x]) - 1)) ** 0.5 if len(by_x[x]) > 1 else 0.0
                    for x, m in zip(xs, means)]
            pos = [float(x) for x in xs] if numeric else [x_values.index(x) if x in x_values else i
                                                          for i, x in enumerate(xs)]
            ax.errorbar(pos, means, yerr=errs, marker="o", capsize=3, label=label)
        if numeric:
            nums = [float(v) for v in x_values]
            if min(nums) > 0 and max(nums) / min(nums) >= 8:
                ax.set_xscale("log", base=2)
            ax.set_xticks(nums)
            ax.set_xticklabels(x_values)
        else:
            ax.set_xticks(range(len(x_values)))
            ax.set_xticklabels(x_values, rotation=20, fontsize=7)
        ax.ticklabel_format(axis="y", useOffset=False)  # values, not offsets from 7.235e-1
        ax.set_xlabel(study.x)
        ax.set_ylabel(metric + (" (%)" if scale == 100.0 else ""))
        n_seeds = len(study.seeds)
        ax.set_title("%s: %s vs %s\n(mean of %d seed%s%s)" % (study.name, metric, study.x, n_seeds,
                                                              "s" if n_seeds > 1 else "",
                                                              ", bars: one standard deviation" if n_seeds > 1 else ""),
                     fontsize=9)
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(fig_dir, name)
        tmp = os.path.join(fig_dir, ".%s.tmp.png" % name)
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        os.replace(tmp, path)


def figure_names(study):
    return [re.sub(r"[^A-Za-z0-9_.-]", "_", m) + ".png" for m in study.metrics]


# ---- command line: the check `sgfabric sweep` runs before it writes anything ------------------

def main(argv):
    if len(argv) != 5 or argv[1] != "check" or argv[3] != "--sgfabric":
        sys.exit("usage: sweeplib.py check STUDY --sgfabric BINARY")
    try:
        study = Study(argv[2], Tool(argv[4]))
    except StudyError as e:
        sys.stderr.write("sgfabric sweep: %s\n" % e)
        return 1
    print("sgfabric sweep: %s: sgfabric %s, %d points (%s) x %d seed%s = %d runs" % (
        study.name, study.command, len(study.points) // len(study.seeds),
        " x ".join("%d %s" % (len(v), n) for n, v in study.parameters.items()), len(study.seeds),
        "s" if len(study.seeds) > 1 else "", len(study.points)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
