#!/usr/bin/env python3
"""One self-contained HTML report of an sgfabric result: report.html.

usage: report_html.py compare DIR OUT.html   (a compare results directory)
       report_html.py sweep DIR OUT.html     (a sweep directory: sweep.csv and figures/)

The page holds everything it shows: the figures are PNG files of DIR embedded as base64 data: URIs,
there is no script, no style sheet and no URL to fetch, so it opens offline and can be mailed as
one file. For compare: the scenario, the MFU table (comparison.json's rows), compare.png and
why.png, the per-collective table, the links and collisions behind the difference ("why"), links
to the timelines when they were written, and the manifest (command line, inputs with SHA-256,
versions). For a sweep: the study, the table (sweep.csv) and every figure. Nothing in it depends on
the date or the machine (a given DIR gives the same bytes). OUT is written next to itself under a
temporary name and renamed: an interrupted run leaves no partial file.
"""
import base64
import csv
import html
import json
import os
import sys

STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;margin:0.5em 0 1.2em 0;font-size:13px}
th,td{border:1px solid #bbb;padding:2px 7px;text-align:right}
th:first-child,td:first-child{text-align:left}
th{background:#eee}
img{max-width:100%;border:1px solid #ddd}
code,pre{font-size:12px;background:#f6f6f6}
.na{color:#888}"""


def esc(x):
    return html.escape(str(x), quote=True)


def image(path, alt):
    if not os.path.isfile(path):
        return "<p class=\"na\">%s: n/a (not written)</p>" % esc(alt)
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    return "<p><img alt=\"%s\" src=\"data:image/png;base64,%s\"></p>" % (esc(alt), data)


def cell(v, fmt="%.4g"):
    if v is None:
        return "<td class=\"na\">n/a</td>"
    if isinstance(v, bool):
        return "<td>%s</td>" % ("yes" if v else "no")
    if isinstance(v, (int, float)):
        return "<td>%s</td>" % esc(fmt % v)
    return "<td>%s</td>" % esc(v)


def table(head, rows):
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % esc(h) for h in head)]
    for r in rows:
        out.append("<tr>%s</tr>" % "".join(r))
    out.append("</table>")
    return "\n".join(out)


def value_text(v, unit, lower_bound=False):
    if v is None:
        return "<td class=\"na\">n/a</td>"
    if lower_bound:  # comparison.json's lower_bound: the value is at least this
        return "<td>&ge; %s</td>" % ("%.4f s" % v if unit == "s" else "%.0f" % v)
    if unit == "%":
        return "<td>%.2f %%</td>" % v
    if unit == "s":
        return "<td>%.4f s</td>" % (0.0 if abs(v) < 5e-5 else v)
    if unit == "GB":
        return "<td>%.2f GB</td>" % v
    if unit == "tokens/s":
        return "<td>%.0f tokens/s</td>" % v
    return "<td>%.0f</td>" % v


def manifest_section(path):
    if not os.path.isfile(path):
        return "<p class=\"na\">manifest.json: n/a</p>"
    m = json.load(open(path))
    parts = ["<p>command: <code>%s</code></p>" % esc(" ".join(m.get("command", [])))]
    rows = []
    for k in ("seed", "sgfabric_version", "simgrid_version", "cwd"):
        if k in m:
            rows.append(["<td>%s</td>" % esc(k), "<td>%s</td>" % esc(m[k])])
    parts.append(table(["key", "value"], rows))
    inputs = m.get("inputs", {})
    if inputs:
        rows = [["<td>%s</td>" % esc(p),
                 "<td><code>%s</code></td>" % esc(v.get("sha256", "") if isinstance(v, dict) else v)]
                for p, v in sorted(inputs.items())]
        parts.append(table(["input", "SHA-256"], rows))
    return "\n".join(parts)


def compare_report(d):
    data = json.load(open(os.path.join(d, "comparison.json")))
    fabrics = data["fabrics"]
    sc = data.get("scenario", {})
    body = ["<h1>sgfabric compare: %s</h1>" % esc(" vs ".join(fabrics))]
    body.append("<p><b>Scenario:</b> %s</p>" % esc(sc.get("title", "")))
    mem = sc.get("memory")
    if isinstance(mem, dict) and "total_bytes" in mem:
        body.append("<p>memory per GPU (stage %s): %.2f of %.0f GB</p>"
                    % (esc(mem.get("stage", "?")), mem["total_bytes"] / 1e9, mem.get("capacity_bytes", 0) / 1e9))

    body.append("<h2>MFU and the iteration</h2>")
    rows = []
    for r in data["rows"]:
        bounds = r.get("lower_bound") or [False] * len(r["values"])
        rows.append(["<td>%s</td>" % esc(r["label"])]
                    + [value_text(v, r["unit"], b) for v, b in zip(r["values"], bounds)])
    body.append(table(["row"] + fabrics, rows))
    body.append("<p class=\"na\">n/a: not modelled at this fidelity or not a mechanism of this fabric; never a "
                "zero.%s</p>" % (" &ge;: a lower bound (the ports DCQCN held lack some of their estimates)."
                                 if any(any(r.get("lower_bound") or []) for r in data["rows"]) else ""))
    mfu = {r["key"]: r["values"] for r in data["rows"]}.get("mfu")
    if mfu and len(fabrics) >= 2 and mfu[0] and mfu[1] is not None:
        body.append("<p><b>%s reaches %.1f %% of %s's MFU.</b></p>" %
                    (esc(fabrics[1]), 100 * mfu[1] / mfu[0], esc(fabrics[0])))
    body.append(image(os.path.join(d, "compare.png"), "MFU and where the iteration goes"))

    body.append("<h2>Why: per collective</h2>")
    rows = []
    for c in data.get("collectives", []):
        r = ["<td>%s %s</td>" % (esc(c["op"]), esc(c["group"]))]
        for i in range(len(fabrics)):
            r += [cell(c["count"][i], "%d"), cell(c["time_s"][i], "%.4f"), cell(c["busbw_GBps"][i], "%.1f")]
            if i > 0:
                r.append(cell(c["slowdown"][i], "x%.3f"))
        rows.append(r)
    head = ["collective"]
    for i, f in enumerate(fabrics):
        head += ["%s count" % f, "%s time (s)" % f, "%s busbw (GB/s)" % f]
        if i > 0:
            head.append("%s / %s time" % (f, fabrics[0]))
    body.append(table(head, rows))

    why = data.get("why", {})
    body.append("<h2>Why: ECMP collisions and flows per link</h2>")
    keys = [("flows on a switch-to-switch link at once, max", "flows_per_switch_link_max", "%d"),
            ("the same, mean over the links used", "flows_per_switch_link_mean", "%.2f"),
            ("flows at once on the ten busiest links, max", "flows_per_busiest_link_max", "%d"),
            ("the same, mean", "flows_per_busiest_link_mean", "%.2f"),
            ("collective edges (GPU to GPU, per call) on switch-to-switch links", "collective_edges", "%d"),
            ("of them sharing a link with another edge of their own collective",
             "collective_edges_sharing_link", "%d"),
            ("of them sharing a link with a transfer of another collective of their group",
             "collective_edges_sharing_link_in_group", "%d")]
    rows = []
    for label, k, fmt in keys:
        rows.append(["<td>%s</td>" % esc(label)] + [cell((why.get(f) or {}).get(k), fmt) for f in fabrics])
    body.append(table(["measure"] + fabrics, rows))

    body.append("<h2>Why: the ten most congested links</h2>")
    for f in fabrics:
        top = (why.get(f) or {}).get("top_links")
        if not top:
            body.append("<p class=\"na\">%s: n/a</p>" % esc(f))
            continue
        rows = []
        for t in top:
            groups = t.get("groups")
            gtext = None if groups is None else ", ".join(
                "%s %.2f GB" % (g, b / 1e9) for g, b in sorted(groups.items()))
            rows.append([cell("%s>%s" % (t["from"], t["to"])), cell(t["link"]), cell(100 * t["utilisation"], "%.1f %%"),
                         cell(t["bytes"] / 1e9, "%.2f"), cell(t.get("flows"), "%d"), cell(t.get("peak_flows"), "%d"),
                         cell(gtext)])
        body.append("<h3>%s</h3>" % esc(f))
        body.append(table(["direction", "link", "utilisation", "GB", "flows", "most at once", "groups (bytes)"], rows))
    body.append(image(os.path.join(d, "why.png"), "link heatmap, per-collective time and busiest links"))

    timelines = [t for t in data.get("timeline", []) if t]
    body.append("<h2>Timeline</h2>")
    if timelines:
        body.append("<p>%s: open in the Perfetto UI (ui.perfetto.dev) or chrome://tracing.</p>"
                    % ", ".join("<a href=\"%s\">%s</a>" % (esc(t), esc(t)) for t in timelines))
    else:
        body.append("<p class=\"na\">not written (compare --timeline writes one per fabric)</p>")
    body.append("<h2>Manifest</h2>")
    body.append(manifest_section(os.path.join(d, "manifest.json")))
    return "sgfabric compare", body


def sweep_report(d):
    body = ["<h1>sgfabric sweep</h1>"]
    study = os.path.join(d, "study.yaml")
    if os.path.isfile(study):
        body.append("<h2>Study</h2><pre>%s</pre>" % esc(open(study).read()))
    body.append("<h2>Table (sweep.csv)</h2>")
    with open(os.path.join(d, "sweep.csv"), newline="") as f:
        rows = list(csv.reader(f))
    if rows:
        body.append(table(rows[0], [[cell(c if c != "" else None) for c in r] for r in rows[1:]]))
    body.append("<h2>Figures</h2>")
    fig_dir = os.path.join(d, "figures")
    names = sorted(n for n in os.listdir(fig_dir) if n.endswith(".png")) if os.path.isdir(fig_dir) else []
    for n in names:
        body.append("<h3>%s</h3>" % esc(n))
        body.append(image(os.path.join(fig_dir, n), n))
    if not names:
        body.append("<p class=\"na\">no figure</p>")
    return "sgfabric sweep", body


def main(argv):
    if len(argv) != 4 or argv[1] not in ("compare", "sweep"):
        sys.exit(__doc__)
    write(*argv[1:])


def write(kind, d, out):
    """Writes the report of DIR d (kind: compare or sweep) to out, atomically."""
    title, body = (compare_report if kind == "compare" else sweep_report)(d)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"
            "<style>%s</style></head>\n<body>\n%s\n</body></html>\n" % (esc(title), STYLE, "\n".join(body)))
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv)
