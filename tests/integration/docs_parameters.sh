#!/usr/bin/env bash
# docs_parameters: docs/parameters.md is the output of "sgfabric params --markdown" under a fixed
# header; this test regenerates it and fails on any difference. To update the file after a change
# to a parameter table:
#   bash tests/integration/docs_parameters.sh build/sgfabric . --write
set -euo pipefail
. "$(dirname "$0")/common.sh"

expected=$WORK/parameters.md
{
  cat <<'HEADER'
# Parameters

Every parameter of the fabric models and the collectives, as `sgfabric params --markdown` prints
it (this file is generated from the parameter tables in `plugins/*/..._params.c`,
`plugins/fabric/fabric.c`, `workloads/collectives/coll_params.c` and
`workloads/replay/straggler.c`, `workloads/replay/compute_params.c`; a test checks that it is up to date). Set one with `--cfg=area/name:value` on the command line, or with a
`<prop id="area/name" value="..."/>` in the platform file's zone; the command line wins. Values
take SI units and suffixes (`4KB`, `400Gbps`, `10us`). The source column names where each default
comes from: a paper, specification, vendor document or simulator by title, or "derived" with the
arithmetic in the description; docs/ib.md and docs/roce.md give the full references.

HEADER
  "$SGF" params --markdown
} >"$expected"
if [ "${1:-}" = --write ]; then
  cp "$expected" "$SRC/docs/parameters.md"
  echo "wrote $SRC/docs/parameters.md"
  exit 0
fi
[ -f "$SRC/docs/parameters.md" ] || die "docs/parameters.md is missing (run this script with --write)"
if ! diff -u "$SRC/docs/parameters.md" "$expected" >"$WORK/diff"; then
  head -40 "$WORK/diff" >&2
  die "docs/parameters.md is out of date: bash tests/integration/docs_parameters.sh SGFABRIC_BINARY SOURCE_DIR --write"
fi
rows=$(grep -c '^| `' "$expected")
echo "docs/parameters.md is up to date ($rows parameters)"
echo "PASS"
