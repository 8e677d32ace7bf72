#!/usr/bin/env bash
# roce_held_chained: held ports chained by their flows (roce/flow-held-measure:feeders, docs/roce.md,
# "Measured with its feeders"). The 2to1-40 set of the held-out patterns at 100 Gb/s (40 transfers
# of 4 MB at t = 0 on the 64-GPU 2:1 platform, docs/validation.md part 5) holds leaf up-links fed
# by their NICs whose transfers go on into held spine down-links. Measured alone in fine phases,
# such an up-link is busy from its first 0.625 ms, its senders at line rate while its queue
# climbs; in the packet model they are also cut for the down-link and paused from it, and the
# set's mean FCT was 7.6 % early on average (load measures: -0.7 %). A port a flow chains to
# another held port is measured with its load in the coarse phases (20 ms first): the set -3.3 %
# on average, and patterns 2, 7 and 10 (-4.7, -5.7, -4.8 % before) within 3 %.
set -euo pipefail
. "$(dirname "$0")/common.sh"

bin_dir=$(dirname "$SGF")
python3 "$SRC/analysis/validation/random_patterns.py" "$bin_dir" "$WORK/p" --fabric roce --link-rate 100Gbps \
  --cfg roce/flow-held-measure:feeders --sets 2to1-40 >"$WORK/table.md" ||
  die "random_patterns.py --sets 2to1-40 failed"
python3 - "$WORK/table.md" <<'EOF_CHECK' || die "chained held ports: flow fidelity departs from packet fidelity"
import sys

errors = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 4 and cells[0] == "2to1-40":
        errors[int(cells[1])] = float(cells[3].replace("%", ""))
if len(errors) != 12:
    sys.exit("expected 12 2to1-40 patterns, got %d" % len(errors))
mean = sum(errors.values()) / len(errors)
print("  2to1-40 at 100 Gb/s, feeders: mean error %+.1f %% on average; patterns 2, 7, 10: %+.1f, %+.1f, %+.1f %%"
      % (mean, errors[2], errors[7], errors[10]))
bad = [s for s in (2, 7, 10) if abs(errors[s]) > 3]
if mean < -5 or bad:
    sys.exit("set mean %+.1f %% (at least -5 %% expected); patterns beyond 3 %%: %s" % (mean, bad))
EOF_CHECK
echo "PASS roce_held_chained"
