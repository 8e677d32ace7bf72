#!/usr/bin/env python3
"""Checks an "sgfabric run --timeline" result: timeline.json against the trace-event format
(Google, "Trace Event Format", JSON Object Format) and against the run's summary.json.

usage: timeline_check.py RESULT_DIR

Format: a JSON object with a "traceEvents" list and "displayTimeUnit" ("ms" or "ns"); every
event has ph, ts, pid, tid, name; a complete event ("X") has dur >= 0; the spans of one
(pid, tid) nest or are disjoint.
Contents: every rank's iteration span ends at summary.json's iteration_time_s; its main
("compute") track tiles its program span without gap (every moment a rank's actor is either
computing or waiting); the compute spans over all ranks average to breakdown.compute_s (0.1 %);
the collectives process has, per (op, group), as many spans as summary.json's collectives count,
with bytes and busbw_GBps, and their durations add up to its time_s. Counter events ("C", the
link utilisations of --timeline-links) hold values in [0, 1] inside the iteration, each one a
change from the previous one.
Standard library only. Prints one line per finding and exits 1 if any."""
import collections
import json
import sys

REL = 1e-9  # relative tolerance of times, against the iteration time


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    errors = []

    def fail(msg):
        errors.append(msg)

    with open(d + "/timeline.json", encoding="utf-8") as f:
        tl = json.load(f)
    with open(d + "/summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    if not isinstance(tl, dict) or not isinstance(tl.get("traceEvents"), list):
        sys.exit("FAIL: timeline.json is not a JSON object with a traceEvents list")
    if tl.get("displayTimeUnit") not in ("ms", "ns"):
        fail("displayTimeUnit is %r, not \"ms\" or \"ns\"" % tl.get("displayTimeUnit"))
    iteration_us = summary["iteration_time_s"] * 1e6
    eps = REL * iteration_us

    procs = {}
    tracks = collections.defaultdict(list)
    thread_names = {}
    counters = collections.defaultdict(list)
    for i, e in enumerate(tl["traceEvents"]):
        for key, types in (("ph", str), ("ts", (int, float)), ("pid", int), ("tid", int), ("name", str)):
            if not isinstance(e.get(key), types) or isinstance(e.get(key), bool):
                fail("event %d: %s missing or of the wrong type: %r" % (i, key, e))
        if e.get("ph") == "M":
            if e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        if e.get("ph") == "C":  # a counter: numeric args, utilisation in [0, 1], inside the iteration
            values = list(e.get("args", {}).values())
            if not values or any(not isinstance(v, (int, float)) or v < 0 or v > 1 + 1e-6 for v in values):
                fail("event %d: counter without utilisations in [0, 1]: %r" % (i, e))
            if e["ts"] < -eps or e["ts"] > iteration_us + eps:
                fail("event %d: counter outside the iteration: %r" % (i, e))
            counters[e["name"]].append(e)
            continue
        if e.get("ph") != "X":
            fail("event %d: phase %r, expected X, C or M" % (i, e.get("ph")))
            continue
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            fail("event %d: X without dur >= 0: %r" % (i, e))
            continue
        tracks[(e["pid"], e["tid"])].append(e)

    # Nesting: on one (pid, tid), in order of start (longest first), a span lies inside the
    # innermost open span or after it.
    for key, spans in tracks.items():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in spans:
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and start >= stack[-1] - eps:
                stack.pop()
            if stack and end > stack[-1] + eps:
                fail("pid %d tid %d: span %r [%.9f, %.9f] us overlaps its enclosing span without nesting"
                     % (key[0], key[1], e["name"], start, end))
            stack.append(end)

    ranks = {pid: name for pid, name in procs.items() if name.startswith("rank ")}
    coll_pids = [pid for pid, name in procs.items() if name == "collectives"]
    if len(ranks) != tl["otherData"]["ranks"] or len(ranks) != summary["workload"]["gpus"]:
        fail("%d rank processes for %d ranks" % (len(ranks), summary["workload"]["gpus"]))
    names_of_threads = set(thread_names.values())
    for stream in ("iteration", "compute"):
        if stream not in names_of_threads:
            fail("no %s track" % stream)
    compute_total = 0.0
    for pid in sorted(ranks):
        spans = [e for (p, _), s in tracks.items() if p == pid for e in s]
        if not spans:
            fail("%s has no spans" % ranks[pid])
            continue
        last_end = max(e["ts"] + e["dur"] for e in spans)
        if abs(last_end - iteration_us) > eps:
            fail("%s: last span ends at %.9f us, the iteration at %.9f us" % (ranks[pid], last_end, iteration_us))
        it = [e for e in spans if e["name"] == "iteration"]
        if len(it) != 1 or abs(it[0]["ts"]) > eps or abs(it[0]["ts"] + it[0]["dur"] - iteration_us) > eps:
            fail("%s: no single iteration span from 0 to the iteration time" % ranks[pid])
        program = [e for e in spans if e["name"] == "program"]
        main = sorted((e for e in spans if thread_names.get((pid, e["tid"])) == "compute"), key=lambda e: e["ts"])
        if len(program) != 1:
            fail("%s: %d program spans" % (ranks[pid], len(program)))
            continue
        t = 0.0
        for e in main:  # the main track tiles [0, program end]
            if abs(e["ts"] - t) > eps:
                fail("%s: main track has a gap or an overlap at %.9f us (next span %r at %.9f us)"
                     % (ranks[pid], t, e["name"], e["ts"]))
                break
            t = e["ts"] + e["dur"]
        if abs(t - program[0]["dur"]) > eps:
            fail("%s: main track ends at %.9f us, the program at %.9f us" % (ranks[pid], t, program[0]["dur"]))
        compute_total += sum(e["dur"] for e in main if e.get("cat") == "compute")
    if ranks:
        mean = compute_total / len(ranks) / 1e6
        want = summary["breakdown"]["compute_s"]
        if abs(mean - want) > 1e-3 * want:
            fail("compute spans average %.12g s per rank, summary.json's compute_s is %.12g s" % (mean, want))

    if len(coll_pids) != 1:
        fail("%d collectives processes" % len(coll_pids))
    else:
        per = collections.defaultdict(lambda: [0, 0.0])
        for (p, _), s in tracks.items():
            if p != coll_pids[0]:
                continue
            for e in s:
                a = e.get("args", {})
                if not isinstance(a.get("bytes"), (int, float)) or not isinstance(a.get("busbw_GBps"), (int, float)):
                    fail("collective span %r without bytes and busbw_GBps" % e["name"])
                per[e["name"]][0] += 1
                per[e["name"]][1] += e["dur"] / 1e6
        want = {"%s %s" % (c["op"], c["group"]): c for c in summary["collectives"] if c["op"] != "sendrecv"}
        if set(per) != set(want):
            fail("collective spans %s, summary.json's collectives %s" % (sorted(per), sorted(want)))
        for name, c in want.items():
            if name in per:
                n, time = per[name]
                if n != c["count"]:
                    fail("%s: %d spans, summary.json counts %d" % (name, n, c["count"]))
                if abs(time - c["time_s"]) > 1e-6 * c["time_s"] + 1e-15:
                    fail("%s: spans add up to %.12g s, summary.json's time_s is %.12g s" % (name, time, c["time_s"]))

    for name, events in counters.items():  # a counter changes at each event
        for a, b in zip(events, events[1:]):
            if a["args"] == b["args"]:
                fail("counter %r repeats its value at %.9f us" % (name, b["ts"]))
                break

    for msg in errors[:20]:
        print("FAIL: " + msg)
    if errors:
        sys.exit(1)
    print("timeline.json OK: %d events, %d ranks, %d tracks, %d counters, iteration %.6f s"
          % (len(tl["traceEvents"]), len(ranks), len(tracks), len(counters), summary["iteration_time_s"]))


if __name__ == "__main__":
    main()
