#!/usr/bin/env bash
# json_escaping: text a user gives ends up in summary.json and manifest.json as valid JSON
# (RFC 8259): quotes, backslashes, control characters and bytes that are not UTF-8 are escaped.
set -euo pipefail
. "$(dirname "$0")/common.sh"
odd=$'x"y\\z\tq\xff'
run_ok flows --platform "$PLATFORMS/tiny-16.xml" --flows "$DATA/flows/one_0_8_1000B.csv" --fabric ib \
  "--cfg=ib/series-port:$odd" --out "$WORK/out"
python3 - "$WORK/out" <<'PY' || die "summary.json or manifest.json is not valid JSON, or lost the text"
import json, math, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json", encoding="utf-8"))
m = json.load(open(d + "/manifest.json", encoding="utf-8"))
want = 'x"y\\z\tq\ufffd'  # the byte 0xff is not UTF-8: written as U+FFFD
assert s["parameters"]["ib/series-port"] == want, s["parameters"]["ib/series-port"]
assert any(a.endswith(want) for a in m["command"]), m["command"]
def finite(v):
    if isinstance(v, dict):
        return all(finite(x) for x in v.values())
    if isinstance(v, list):
        return all(finite(x) for x in v)
    return not isinstance(v, float) or math.isfinite(v)
assert finite(s), "a number that is not finite"
PY
echo "PASS json_escaping"
