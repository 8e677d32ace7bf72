#!/usr/bin/env bash
# out_replace_rule: --out DIR replaces only a previous result of sgfabric (docs/outputs.md).
#   foreign       a directory of the user's files: refused (exit 2), every file byte-identical
#   dot           --out . in a directory holding the input: refused, every file byte-identical
#   input_dir     --out = the directory of the flow file: refused, even with --force
#   not_dir       --out = an existing file, or a symbolic link to a directory: refused
#   replace       a previous result is replaced; a file the user added to it is kept aside
#   force         --force on a foreign directory: the result goes in, the user's files are kept
#                 byte-identical in DIR.old-*
#   compare       compare's DIR carries a top-level manifest with the marker and is replaced by
#                 the next compare; a foreign one is refused
set -euo pipefail
. "$(dirname "$0")/common.sh"
case=${1:?case}
name=out_replace_rule_$case

platform=$PLATFORMS/tiny-16.xml
flows=$DATA/flows/one_0_8_1000B.csv

# snapshot DIR: the sha256 of every file under DIR, with its relative path and type.
snapshot() {
  (cd "$1" && find . -printf '%y %p\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# refused EXPECTED_FRAGMENT ARGS...: sgfabric ARGS... must exit 2 with a message containing the
# fragment, and create nothing.
refused() {
  local fragment=$1 status=0
  shift
  "$SGF" "$@" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric $*"
  echo "  exit status $status, stderr: $(cat "$WORK/stderr")"
  [ "$status" -eq 2 ] || die "$name: exit status $status, expected 2 (refused)"
  grep -qF -- "$fragment" "$WORK/stderr" || die "$name: stderr does not say '$fragment'"
}

# no_leftovers DIR: nothing named DIR.tmp-* or DIR.old-* next to DIR.
no_leftovers() {
  if compgen -G "$1.tmp-*" >/dev/null || compgen -G "$1.old-*" >/dev/null; then
    die "$name: left next to $1: $(ls -d "$1".*)"
  fi
}

# A user's project: files, a subdirectory, an empty directory, a symbolic link.
make_project() {
  mkdir -p "$1/src" "$1/empty"
  printf 'int main(void) { return 0; }\n' >"$1/src/main.c"
  printf 'my notes\n' >"$1/notes.txt"
  head -c 4096 /dev/urandom >"$1/data.bin"
  ln -s notes.txt "$1/link"
}

case $case in
foreign)
  proj=$WORK/proj
  make_project "$proj"
  before=$(snapshot "$proj")
  for fidelity in flow packet; do
    refused "is not a result of sgfabric" flows --platform "$platform" --flows "$flows" --fidelity $fidelity \
      --out "$proj"
  done
  refused "is not a result of sgfabric" flows --platform "$platform" --flows "$flows" --out "$proj/"
  [ "$(snapshot "$proj")" = "$before" ] || die "$name: the files of $proj changed"
  no_leftovers "$proj"
  ;;
dot)
  dir=$WORK/here
  make_project "$dir"
  cp "$flows" "$dir/flows.csv"
  before=$(snapshot "$dir")
  (cd "$dir" && refused "is the current directory" flows --platform "$platform" --flows flows.csv --out .)
  (cd "$dir" && refused "is the current directory" flows --platform "$platform" --flows flows.csv --out . --force)
  (cd "$dir/src" && refused "is the current directory" flows --platform "$platform" --flows ../flows.csv --out ..)
  [ "$(snapshot "$dir")" = "$before" ] || die "$name: the files of $dir changed"
  [ -z "$(find "$WORK" -maxdepth 1 -name 'here.*')" ] || die "$name: something was created next to $dir"
  ;;
input_dir)
  dir=$WORK/inputs
  mkdir "$dir"
  cp "$flows" "$dir/flows.csv"
  cp "$platform" "$dir/platform.xml"
  before=$(snapshot "$dir")
  refused "holds the input" flows --platform "$platform" --flows "$dir/flows.csv" --out "$dir"
  refused "holds the input" flows --platform "$dir/platform.xml" --flows "$flows" --out "$dir" --force
  # Also when the input's directory is a previous result (a replay from it).
  run_ok flows --platform "$platform" --flows "$flows" --out "$WORK/res"
  cp "$flows" "$WORK/res/flows-copy.csv"
  refused "holds the input" flows --platform "$platform" --flows "$WORK/res/flows-copy.csv" --out "$WORK/res"
  [ -f "$WORK/res/flows-copy.csv" ] || die "$name: the input inside the previous result was removed"
  [ "$(snapshot "$dir")" = "$before" ] || die "$name: the files of $dir changed"
  no_leftovers "$dir"
  no_leftovers "$WORK/res"
  ;;
not_dir)
  printf 'keep me\n' >"$WORK/file"
  sum=$(sha256sum <"$WORK/file")
  refused "is not a directory" flows --platform "$platform" --flows "$flows" --out "$WORK/file"
  refused "is not a directory" flows --platform "$platform" --flows "$flows" --out "$WORK/file" --force
  [ "$(sha256sum <"$WORK/file")" = "$sum" ] || die "$name: $WORK/file changed"
  make_project "$WORK/target"
  ln -s target "$WORK/alias"
  refused "is a symbolic link" flows --platform "$platform" --flows "$flows" --out "$WORK/alias" --force
  [ -L "$WORK/alias" ] || die "$name: the symbolic link was replaced"
  no_leftovers "$WORK/file"
  no_leftovers "$WORK/alias"
  ;;
replace)
  out=$WORK/res
  run_ok flows --platform "$platform" --flows "$flows" --out "$out"
  [ "$(jget "$out/manifest.json" format)" = sgfabric-results/1 ] || die "$name: manifest.json has no format marker"
  # A second run with other flows replaces it: the new flows.csv is in place, none of the old.
  run_ok flows --platform "$platform" --flows "$DATA/flows/incast_8to1_4MB.csv" --out "$out"
  [ "$(wc -l <"$out/flows.csv")" -eq 9 ] || die "$name: $out/flows.csv is not the second run's (8 flows)"
  no_leftovers "$out"
  ! grep -q '^sgfabric' "$WORK/last.stderr" || die "$name: replacing a result printed: $(cat "$WORK/last.stderr")"
  # A file the user put into the result is not deleted with it: kept aside, and said so.
  printf 'my analysis\n' >"$out/analysis.txt"
  sum=$(sha256sum <"$out/analysis.txt")
  run_ok flows --platform "$platform" --flows "$flows" --out "$out"
  [ "$(wc -l <"$out/flows.csv")" -eq 2 ] || die "$name: $out/flows.csv is not the third run's (1 flow)"
  grep -qF "kept in $out.old-" "$WORK/last.stderr" || die "$name: no warning about the kept file"
  kept=$(ls -d "$out".old-*)
  [ "$(ls -A "$kept")" = analysis.txt ] || die "$name: $kept holds $(ls -A "$kept"), expected analysis.txt only"
  [ "$(sha256sum <"$kept/analysis.txt")" = "$sum" ] || die "$name: analysis.txt changed"
  [ ! -e "$out/analysis.txt" ] || die "$name: analysis.txt is in the new result"
  ;;
force)
  proj=$WORK/proj
  make_project "$proj"
  before=$(snapshot "$proj")
  run_ok flows --platform "$platform" --flows "$flows" --out "$proj" --force
  for f in flows.csv summary.json manifest.json; do
    [ -s "$proj/$f" ] || die "$name: $proj/$f missing after --force"
  done
  grep -qF "kept in $proj.old-" "$WORK/last.stderr" || die "$name: no word about where the user's files went"
  kept=$(ls -d "$proj".old-*)
  [ "$(snapshot "$kept")" = "$before" ] || die "$name: the user's files changed (now in $kept)"
  compgen -G "$proj.tmp-*" >/dev/null && die "$name: a temporary directory was left"
  ;;
compare)
  out=$WORK/cmp
  args=(compare --fabrics roce,ideal --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --platform "$platform")
  run_ok "${args[@]}" --out "$out"
  [ "$(jget "$out/manifest.json" format)" = sgfabric-results/1 ] || die "$name: compare's manifest.json has no marker"
  for f in roce ideal; do
    [ "$(jget "$out/$f/manifest.json" format)" = sgfabric-results/1 ] || die "$name: $f/manifest.json has no marker"
  done
  python3 - "$out/manifest.json" <<'EOF' || die "$name: compare's manifest.json is incomplete"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["command"][0] == "compare", m["command"]
assert "--out" in m["command"], m["command"]
assert m["seed"] == 1, m["seed"]
assert m["sgfabric_version"], m
for f in ("comparison.json", "roce/", "ideal/", "workload.txt", "manifest.json"):
    assert f in m["files"], (f, m["files"])
EOF
  run_ok "${args[@]}" --seed 2 --out "$out"
  [ "$(jget "$out/manifest.json" seed)" = 2 ] || die "$name: the second compare did not replace the first"
  [ "$(jget "$out/roce/summary.json" seed)" = 2 ] || die "$name: roce/ is not the second compare's"
  no_leftovers "$out"
  make_project "$WORK/proj"
  before=$(snapshot "$WORK/proj")
  refused "is not a result of sgfabric" "${args[@]}" --out "$WORK/proj"
  [ "$(snapshot "$WORK/proj")" = "$before" ] || die "$name: the files of $WORK/proj changed"
  no_leftovers "$WORK/proj"
  ;;
*) die "unknown case '$case'" ;;
esac
echo "PASS $name"
