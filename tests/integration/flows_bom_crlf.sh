#!/usr/bin/env bash
# flows_bom_crlf: a flow file saved with a UTF-8 byte order mark and CRLF line ends (a
# spreadsheet on Windows) is read like the plain file: same flows.csv, byte for byte.
set -euo pipefail
. "$(dirname "$0")/common.sh"
plain=$DATA/flows/incast_8to1_4MB.csv
{ printf '\xef\xbb\xbf'; sed 's/$/\r/' "$plain"; } >"$WORK/windows.csv"
run_ok flows --platform "$PLATFORMS/tiny-16.xml" --flows "$plain" --fidelity flow --out "$WORK/a"
run_ok flows --platform "$PLATFORMS/tiny-16.xml" --flows "$WORK/windows.csv" --fidelity flow --out "$WORK/b"
cmp "$WORK/a/flows.csv" "$WORK/b/flows.csv" || die "the BOM/CRLF file gives other results"
echo "PASS flows_bom_crlf"
