#!/usr/bin/env python3
"""The "why" figures of sgfabric compare: what makes one fabric slower than another.

usage: plot_why.py comparison.json why.png
Reads comparison.json's "collectives" and "why" (docs/outputs.md) and draws, under the scenario's
title: a link-utilisation heatmap over the iteration per fabric (the links that carried the most
bytes, one row each, time bins across), the total time of each collective kind and group per
fabric with the slowdown against the first fabric, and the utilisation of each fabric's ten busiest
link directions. A figure a fabric does not provide is marked n/a, never drawn as 0.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44"]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    data = json.load(open(argv[1]))
    fabrics = data["fabrics"]
    why = data.get("why", {})
    colls = data.get("collectives", [])
    n = len(fabrics)
    fig = plt.figure(figsize=(5.2 * max(n, 2), 8.6))
    grid = fig.add_gridspec(2, max(n, 2), height_ratios=[1.15, 1])
    title = data.get("scenario", {}).get("title")
    if title:
        fig.suptitle(title.replace(" | ", "\n", 1), fontsize=8.5)

    # Heatmaps: one per fabric, the same colour scale (0 to 1).
    image = None
    for i, fabric in enumerate(fabrics):
        ax = fig.add_subplot(grid[0, i])
        w = why.get(fabric) or {}
        hm = w.get("heatmap") or {}
        rows = hm.get("utilisation") or []
        if not rows or not rows[0]:
            ax.text(0.5, 0.5, "n/a", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            ax.set_title("%s: link utilisation over time" % fabric, fontsize=9)
            continue
        bin_s = hm.get("bin_s", 1.0)
        bins = len(rows[0])
        image = ax.imshow(rows, aspect="auto", interpolation="nearest", vmin=0, vmax=1, cmap="viridis",
                          extent=(0, bins * bin_s, len(rows) - 0.5, -0.5))
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(hm.get("links", []), fontsize=5)
        ax.set_xlabel("simulated time (s); bins of %.3g ms" % (bin_s * 1e3), fontsize=8)
        ax.set_title("%s: link utilisation over time (%d busiest links)" % (fabric, len(rows)), fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=fig.axes[:n], fraction=0.02, pad=0.01, label="utilisation")

    # Per collective: total time per fabric, with the slowdown against the first fabric.
    ax = fig.add_subplot(grid[1, 0])
    if colls:
        labels = ["%s %s" % (c["op"], c["group"]) for c in colls]
        height = 0.8 / n
        for i, fabric in enumerate(fabrics):
            t = [c["time_s"][i] for c in colls]
            y = [k + i * height for k in range(len(colls))]
            ax.barh(y, [v if v is not None else 0 for v in t], height=height, color=COLOURS[i % 4], label=fabric)
            for yy, v, c in zip(y, t, colls):
                s = c["slowdown"][i]
                if v is None:
                    ax.text(0, yy, " n/a", va="center", fontsize=6)
                elif i > 0:
                    ax.text(v, yy, " x%.2f" % s if s is not None else " x n/a", va="center", fontsize=6)
        ax.set_yticks([k + 0.4 - height / 2 for k in range(len(colls))])
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("total time of its calls (s, summed over instances)", fontsize=8)
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "n/a", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("Per collective: time per fabric, slowdown against %s" % fabrics[0], fontsize=9)

    # The ten busiest link directions of each fabric.
    ax = fig.add_subplot(grid[1, 1:])
    width = 0.8 / n
    for i, fabric in enumerate(fabrics):
        top = (why.get(fabric) or {}).get("top_links") or []
        u = [100 * t["utilisation"] for t in top]
        ax.bar([k + i * width for k in range(len(u))], u, width=width, color=COLOURS[i % 4], label=fabric)
        for k, t in enumerate(top):
            groups = t.get("groups")
            text = "n/a" if groups is None else "+".join(sorted(groups))
            flows = t.get("peak_flows")
            text += "" if flows is None else " (%d at once)" % flows
            ax.text(k + i * width, u[k], text, rotation=90, ha="center", va="bottom", fontsize=5)
    ax.set_xticks(range(10))
    ax.set_xticklabels(["#%d" % (k + 1) for k in range(10)], fontsize=7)
    ax.set_ylim(0, 130)
    ax.set_ylabel("utilisation (%)", fontsize=8)
    ax.set_title("Ten busiest link directions: utilisation, groups that crossed them, most flows at once", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.savefig(argv[2], dpi=100)


if __name__ == "__main__":
    main(sys.argv)
