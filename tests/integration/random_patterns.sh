#!/usr/bin/env bash
# random_patterns: the held-out patterns of analysis/validation/random_patterns.py (docs/validation.md,
# part 5). The six single-transfer sets draw what they drew before the q2-*/q3-* sets existed (one
# transfer from each of N distinct GPUs, the 71 patterns the report's figures are for); the q-sets
# give each sending GPU 2 or 3 transfers to distinct GPUs under other leaves (several queue pairs
# per NIC); and the script runs a q-set end to end at both fidelities.
set -euo pipefail
. "$(dirname "$0")/common.sh"

python3 - "$SRC/analysis/validation" <<'EOF' || die "random_patterns.py draws other patterns than it should"
import random
import sys

sys.path.insert(0, sys.argv[1])
from random_patterns import SETS, pattern


def single(seed, transfers, gpus, leaf):  # the draw of the six sets before the q-sets
    rng = random.Random(seed)
    rows = []
    for src in rng.sample(range(gpus), transfers):
        while True:
            dst = rng.randrange(gpus)
            if dst // leaf != src // leaf:
                break
        rows.append((src, dst))
    return rows


singles = queued = 0
for name, (_, _, gpus, leaf, transfers, seeds, per_source) in SETS.items():
    for seed in seeds:
        rows = pattern(seed, transfers, gpus, leaf, per_source)
        assert len(rows) == transfers, (name, seed, len(rows))
        if per_source == 1:
            assert rows == single(seed, transfers, gpus, leaf), (name, seed)
            singles += 1
            continue
        queued += 1
        senders = {}
        for src, dst in rows:
            assert dst // leaf != src // leaf, (name, seed, src, dst)
            senders.setdefault(src, set()).add(dst)
        assert len(senders) == transfers // per_source, (name, seed)
        assert all(len(d) == per_source for d in senders.values()), (name, seed)
assert (singles, queued) == (71, 50), (singles, queued)
print("  71 single-transfer patterns as before; 50 with 2 or 3 transfers per sending GPU")
EOF

bin_dir=$(dirname "$SGF")
python3 "$SRC/analysis/validation/random_patterns.py" "$bin_dir" "$WORK/q" --fabric ib --sets q3-tiny16 \
  >"$WORK/table.md" || die "random_patterns.py --sets q3-tiny16 failed"
rows=$(grep -c '^| q3-tiny16 | ' "$WORK/table.md" || true)
[ "$rows" = 10 ] || die "expected 10 q3-tiny16 patterns, got $rows"
grep -q '^- q3-tiny16: mean error' "$WORK/table.md" || die "no summary line for q3-tiny16"
# every pattern ran at both fidelities: 12 transfers each
for f in "$WORK"/q/q3-tiny16-*-ib-packet/flows.csv "$WORK"/q/q3-tiny16-*-ib-flow/flows.csv; do
  [ "$(($(wc -l <"$f") - 1))" = 12 ] || die "$f: not 12 transfers"
done
grep '^- q3-tiny16' "$WORK/table.md" | sed 's/^/  /'
echo "ok"
