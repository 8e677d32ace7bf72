#!/usr/bin/env python3
"""Chart of sgfabric compare: MFU and where the iteration's time goes, one bar group per fabric.

usage: plot_compare.py comparison.json compare.png
Reads the rows sgfabric compare wrote (comparison.json) and draws two panels: MFU per fabric, and
the iteration time split into compute, exposed communication per group, pipeline bubble and
waiting for stragglers.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    data = json.load(open(argv[1]))
    fabrics = data["fabrics"]
    rows = {row["key"]: row["values"] for row in data["rows"]}

    def values(key):
        return [v if v is not None else 0.0 for v in rows.get(key, [0.0] * len(fabrics))]

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    mfu = values("mfu")
    bars = left.bar(fabrics, mfu, color=["#4477aa", "#ee6677", "#228833", "#ccbb44"][: len(fabrics)])
    for bar, value in zip(bars, mfu):
        left.text(bar.get_x() + bar.get_width() / 2, value, "%.1f%%" % value, ha="center", va="bottom")
    left.set_ylabel("MFU (%)")
    left.set_title("Model FLOPs utilisation")
    left.set_ylim(0, max(mfu + [1]) * 1.2)

    parts = [("breakdown.compute_s", "compute")]
    parts += [("exposed_comm_s." + g, "exposed " + g) for g in ("tp", "pp", "dp", "ep", "cp")]
    parts += [("breakdown.bubble_s", "pipeline bubble"), ("breakdown.straggler_s", "waiting for stragglers")]
    bottom = [0.0] * len(fabrics)
    for key, label in parts:
        v = values(key)
        if not any(v):
            continue
        right.bar(fabrics, v, bottom=bottom, label=label)
        bottom = [b + x for b, x in zip(bottom, v)]
    right.plot(fabrics, values("iteration_time_s"), "k_", markersize=40, label="iteration time")
    right.set_ylabel("seconds per iteration (mean over ranks)")
    right.set_title("Where the iteration goes")
    right.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
