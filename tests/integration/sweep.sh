#!/usr/bin/env bash
# sweep CASE: sgfabric sweep runs a study with Snakemake (docs/artifacts.md).
#   compare  a 2-point x 2-seed study of compare (ib and roce): sweep.csv has one row per point
#            and fabric with the documented columns, a figure per metric; a rerun runs nothing
#            and changes nothing; a deleted point is the only one run again; STUDY and DIR
#            holding shell syntax are only names (no shell between sgfabric, Snakemake, points)
#   run      the same with run points (platform and workload generated per point), fabric swept
#   interrupted  SIGTERM to a running sweep leaves only complete points; the next sweep finishes
#   refused  bad studies (unknown key, unknown option, empty values, ...) and refused --out are
#            errors naming the file and key, and nothing is written; without snakemake on PATH
#            the message names the package to install
# Exits 77 (skipped) when snakemake or python3-yaml is not installed: CI installs both.
set -euo pipefail
. "$(dirname "$0")/common.sh"
case=${1:?case}

if [ "$case" = refused ]; then
  # Runs without snakemake too: the one check that does not need it.
  printf 'command: compare\nparameters: {gpus: [16]}\nseeds: [1]\n' >"$WORK/ok.yaml"
  status=0
  PATH=/nonexistent "$SGF" sweep "$WORK/ok.yaml" --out "$WORK/o" 2>"$WORK/err" || status=$?
  cat "$WORK/err"
  [ "$status" -eq 1 ] || die "without snakemake: exit status $status, expected 1"
  grep -q "apt-get install --no-install-recommends snakemake" "$WORK/err" || die "without snakemake: no package named"
  [ ! -e "$WORK/o" ] || die "without snakemake: $WORK/o was created"
fi
if ! command -v snakemake >/dev/null || ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "SKIP: snakemake or python3-yaml is not installed (apt-get install snakemake python3-yaml)"
  exit 77
fi

# csv_check CSV ROWS COLUMN...: the table has ROWS data rows and every COLUMN.
csv_check() {
  /usr/bin/python3 - "$@" <<'PY' || die "$1 is not the expected table"
import csv, sys
path, n = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(path)))
header = open(path).readline().strip().split(",")
for c in sys.argv[3:]:
    if c and c not in header:
        sys.exit("%s: no column %s (columns: %s)" % (path, c, header))
if len(rows) != n:
    sys.exit("%s: %d rows, expected %d" % (path, len(rows), n))
for r in rows:
    mfu = float(r["mfu"])
    if not 0 < mfu < 1 or float(r["iteration_time_s"]) <= 0 or float(r["wall_s"]) <= 0:
        sys.exit("%s: implausible row %s" % (path, r))
print("%s: %d rows, %d columns" % (path, len(rows), len(header)))
PY
}

# sweep_run STUDY DIR LOG: sgfabric sweep on two cores, its output in LOG.
sweep_run() {
  if ! "$SGF" sweep "$1" --out "$2" --cores 2 >"$3" 2>&1; then
    tail -40 "$3" >&2
    die "sgfabric sweep $1 --out $2 failed"
  fi
}

common_columns=(point gpus seed fabric fidelity mfu hfu iteration_time_s breakdown.compute_s
  breakdown.exposed_comm_s.tp breakdown.exposed_comm_s.pp breakdown.exposed_comm_s.dp breakdown.exposed_comm_s.ep
  breakdown.exposed_comm_s.cp breakdown.exposed_comm_s.dp_ep breakdown.exposed_comm_s.world breakdown.bubble_s
  counters.fabric_bytes counters.link_utilisation_max wall_s)

case $case in
compare)
  cd "$WORK"
  study="s'\$(touch PWNED)';touch PWNED.yaml"
  # Shell syntax in both names: a shell anywhere would create PWNED. (A ' in DIR is refused: the
  # refused case.)
  out="o\"\$(touch PWNED)\";\`touch PWNED\`"
  cat >"$study" <<'EOF'
# 2 points x 2 seeds, both fabrics: 8 rows
command: compare
options: {model: llama3-8b, tp: 8, pp: 2, fabrics: "ib,roce", fidelity: flow}
parameters:
  gpus: [16, 32]
derived:
  global-batch: 4 * gpus // (tp * pp)
seeds: [1, 2]
metrics: [mfu, breakdown.exposed_comm_s.dp]
EOF
  start=$(date +%s)
  sweep_run "$study" "$out" "$WORK/first.log"
  echo "first sweep: $(($(date +%s) - start)) s"
  [ ! -e PWNED ] || die "a name was run as a command: PWNED exists"
  csv_check "$out/sweep.csv" 8 "${common_columns[@]}" global-batch
  [ "$(grep -c "^rule point:" "$WORK/first.log" || true)" -eq 4 ] || die "the first sweep did not run 4 points"
  for f in mfu.png breakdown.exposed_comm_s.dp.png; do
    [ -s "$out/figures/$f" ] || die "figure $f is missing"
  done
  [ "$(ls "$out/points" | wc -l)" -eq 4 ] || die "$out/points does not hold 4 points: $(ls -A "$out/points")"
  ls -A "$out/points" | grep -q '^\.' && die "a temporary directory was left in $out/points"
  # report.html: the table's rows and every figure, inline (data: URIs), no URL
  /usr/bin/python3 - "$out" <<'PY' || die "report.html is wrong"
import csv, os, re, sys
d = sys.argv[1]
page = open(d + "/report.html").read()
rows = list(csv.reader(open(d + "/sweep.csv")))
assert page.count("<tr>") == len(rows), (page.count("<tr>"), len(rows))
imgs = re.findall(r'<img [^>]*src="([^"]*)"', page)
assert len(imgs) == len([n for n in os.listdir(d + "/figures") if n.endswith(".png")]) > 0
assert all(i.startswith("data:image/png;base64,") for i in imgs)
assert not re.search(r"https?://", page)
PY
  # Each (gpus, seed, fabric) once; global-batch derived from gpus.
  /usr/bin/python3 - "$out/sweep.csv" <<'PY' || die "the rows are not the study's points"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted((r["gpus"], r["seed"], r["fabric"]) for r in rows)
want = sorted((g, s, f) for g in ("16", "32") for s in ("1", "2") for f in ("ib", "roce"))
assert keys == want, keys
assert all(int(r["global-batch"]) == 4 * int(r["gpus"]) // 16 for r in rows)
PY

  # A rerun: nothing to do, nothing rewritten.
  touch "$WORK/marker"
  sleep 1
  sweep_run "$study" "$out" "$WORK/second.log"
  grep -q "Nothing to be done" "$WORK/second.log" || die "the rerun did something: $(cat "$WORK/second.log")"
  changed=$(find "$out" -newer "$WORK/marker" -not -path "*/.snakemake*" -not -name sweep.json)
  [ -z "$changed" ] || die "the rerun rewrote: $changed"
  echo "rerun: nothing to be done, nothing rewritten"

  # A lost point is the only one run again; the table is remade with the same figures.
  without_wall() {
    /usr/bin/python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    r.pop("wall_s")
    print(sorted(r.items()))' "$1"
  }
  without_wall "$out/sweep.csv" >"$WORK/before.csv"
  victim=$(ls "$out/points" | head -1)
  rm -rf "${out:?}/points/$victim"
  sweep_run "$study" "$out" "$WORK/third.log"
  [ "$(grep -c "^rule point:" "$WORK/third.log" || true)" -eq 1 ] || die "the resumed sweep did not run exactly 1 point"
  without_wall "$out/sweep.csv" >"$WORK/after.csv"
  cmp -s "$WORK/before.csv" "$WORK/after.csv" || die "the point run again gave other results (wall time aside)"
  echo "resumed: 1 point run again, same results"
  [ ! -e PWNED ] || die "a name was run as a command: PWNED exists"
  ;;
run)
  cd "$WORK"
  cat >study.yaml <<'EOF'
command: run
options: {model: llama3-8b, tp: 8, pp: 2, gpus: 16, global-batch: 8, fidelity: flow}
parameters:
  fabric: [ib, roce]
  roce/dcqcn: [nic, paper]
seeds: [3]
metrics: [iteration_time_s]
EOF
  sweep_run study.yaml out "$WORK/first.log"
  csv_check out/sweep.csv 4 "${common_columns[@]/gpus/}" roce/dcqcn
  for d in out/points/*/; do
    [ -s "$d/platform.xml" ] && [ -s "$d/workload.txt" ] && [ -s "$d/result/summary.json" ] ||
      die "$d lacks its generated inputs or its result"
    [ "$(jget "$d/result/summary.json" seed)" = 3 ] || die "$d did not run with the study's seed"
  done
  [ -s out/figures/iteration_time_s.png ] || die "figure missing"
  ;;
refused)
  cd "$WORK"
  # bad_study NAME "FRAGMENT" YAML: refused with exit 1, the file and the key named, nothing written.
  bad_study() {
    printf '%s\n' "$3" >"$1.yaml"
    local status=0
    "$SGF" sweep "$1.yaml" --out "$WORK/out-$1" >"$WORK/stdout" 2>"$WORK/err" || status=$?
    echo "$1: exit $status: $(cat "$WORK/err")"
    [ "$status" -eq 1 ] || die "$1: exit status $status, expected 1"
    grep -qF "sgfabric sweep: $1.yaml: " "$WORK/err" || die "$1: the message does not name the file"
    grep -qF -- "$2" "$WORK/err" || die "$1: the message does not contain: $2"
    [ ! -e "$WORK/out-$1" ] || die "$1: the output directory was created"
  }
  bad_study unknown_parameter "key 'parameters.gpuss': unknown option 'gpuss' of sgfabric compare (did you mean gpus?)" \
    $'command: compare\nparameters: {gpuss: [16]}\nseeds: [1]'
  bad_study empty_values "key 'parameters.gpus': no values" $'command: compare\nparameters: {gpus: []}\nseeds: [1]'
  bad_study unknown_key "unknown key 'parameter' (did you mean parameters?)" \
    $'command: compare\nparameter: {gpus: [16]}\nseeds: [1]'
  bad_study unknown_cfg "key 'parameters.roce/dcqcnn': unknown model parameter" \
    $'command: run\nparameters: {roce/dcqcnn: [nic]}\nseeds: [1]'
  bad_study no_seeds "key 'seeds': missing" $'command: compare\nparameters: {gpus: [16]}'
  bad_study bad_command "key 'command'" $'command: flows\nparameters: {gpus: [16]}\nseeds: [1]'
  bad_study reserved "key 'options.out'" $'command: compare\noptions: {out: x}\nparameters: {gpus: [16]}\nseeds: [1]'
  bad_study flag_value "key 'options.zero1': zero1 is a flag" \
    $'command: compare\noptions: {zero1: 3}\nparameters: {gpus: [16]}\nseeds: [1]'
  bad_study derived_code "key 'derived.tp'" \
    $'command: compare\nparameters: {gpus: [16]}\nderived: {tp: "__import__(\'os\')"}\nseeds: [1]'
  bad_study unknown_metric "key 'metrics': 'mfuu'" $'command: compare\nparameters: {gpus: [16]}\nseeds: [1]\nmetrics: [mfuu]'
  bad_study duplicate_key "key 'seeds' is given twice" $'command: compare\nparameters: {gpus: [16]}\nseeds: [1]\nseeds: [2]'
  bad_study not_yaml "is not valid YAML" '[unclosed'

  # The shipped studies are valid, and scale.yaml runs the commands docs/validation.md lists for
  # analysis/validation/scale.py (options in any order, --out aside).
  for f in "$SRC"/analysis/sweep/examples/*.yaml; do
    /usr/bin/python3 "$SRC/analysis/sweep/sweeplib.py" check "$f" --sgfabric "$SGF" || die "$f is refused"
  done
  /usr/bin/python3 - "$SRC" "$SGF" <<'PY' || die "scale.yaml does not run the commands of docs/validation.md"
import re, sys
sys.path.insert(0, sys.argv[1] + "/analysis/sweep")
import sweeplib
tool = sweeplib.Tool(sys.argv[2])
study = sweeplib.Study(sys.argv[1] + "/analysis/sweep/examples/scale.yaml", tool)
def key(argv):
    args = argv[1:argv.index("--out")] if "--out" in argv else argv[1:]
    pairs, i = [], 0
    while i < len(args):  # an option and its value, or a flag alone (--ignore-memory)
        has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
        pairs.append((args[i], args[i + 1] if has_value else ""))
        i += 2 if has_value else 1
    return sorted(pairs)
ours = sorted(key(sweeplib.commands(study, p, tool)[0]) for p in study.points)
text = open(sys.argv[1] + "/docs/validation.md").read()
section = text[text.index("## 3. IB vs RoCEv2 MFU versus scale"):]
theirs = sorted(key(line.split()[:-2] + ["--fabrics", "ib,roce"]) for line in
                re.findall(r"^\$B (compare .*)$", section.split("\n## ")[0], re.M))
assert len(theirs) == 10 and ours == theirs, (ours, theirs)
print("scale.yaml: the 10 compare commands of docs/validation.md, part 3")
PY

  # --out: a non-empty directory that is not a sweep, the current one, a file, a symbolic link.
  printf 'command: compare\nparameters: {gpus: [16]}\nseeds: [1]\n' >ok.yaml
  mkdir foreign && echo notes >foreign/notes.txt
  touch afile
  ln -s foreign alink
  for out in foreign . afile alink; do
    status=0
    "$SGF" sweep ok.yaml --out "$out" >"$WORK/stdout" 2>"$WORK/err" || status=$?
    echo "--out $out: exit $status: $(cat "$WORK/err")"
    [ "$status" -eq 2 ] || die "--out $out: exit status $status, expected 2"
    grep -q "^sgfabric sweep: --out $out: " "$WORK/err" || die "--out $out: the message does not name it"
  done
  [ "$(ls -A foreign)" = notes.txt ] && [ "$(cat foreign/notes.txt)" = notes ] || die "foreign was touched"
  [ ! -s afile ] || die "afile was written"
  # Snakemake 7 hands the directory to its jobs through /bin/sh, quoted by Python's repr(): a '
  # would make it "...", where $(...) runs. Refused before anything is written.
  for out in "o'\$(touch PWNED)'" 'back\slash'; do
    status=0
    "$SGF" sweep ok.yaml --out "$out" >"$WORK/stdout" 2>"$WORK/err" || status=$?
    echo "--out $out: exit $status: $(cat "$WORK/err")"
    [ "$status" -eq 2 ] || die "--out $out: exit status $status, expected 2"
    [ ! -e "$out" ] && [ ! -e PWNED ] || die "--out $out: something was written"
  done
  ;;
interrupted)
  # SIGTERM to the whole sweep (Snakemake, its jobs, the sgfabric runs) while points run: no
  # point is left half-written (a point is a temporary directory until it is complete), and
  # the next sweep runs what is missing.
  cd "$WORK"
  cat >study.yaml <<'EOF'
command: run
options: {model: llama3-8b, tp: 8, pp: 2, gpus: 16, global-batch: 8, fidelity: flow}
parameters:
  fabric: [ib, roce]
seeds: [1, 2, 3]
EOF
  setsid "$SGF" sweep study.yaml --out out --cores 2 >"$WORK/first.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    compgen -G "out/points/.*.tmp-*" >/dev/null && break
    sleep 0.1
  done
  compgen -G "out/points/.*.tmp-*" >/dev/null || die "no point started within 30 s"
  kill -TERM -- "-$pid"
  status=0
  wait "$pid" || status=$?
  for _ in $(seq 100); do # the runs the group signal reached finish their clean-up
    pgrep -g "$pid" >/dev/null || break
    sleep 0.1
  done
  echo "sweep stopped by SIGTERM: exit status $status; points: $(ls -A out/points 2>/dev/null | tr '\n' ' ')"
  [ "$status" -ne 0 ] || die "the interrupted sweep exited 0"
  ! compgen -G "out/points/.*" >/dev/null || die "a half-written point was left: $(ls -A out/points)"
  for d in out/points/*/; do
    [ -e "$d" ] || continue
    [ -s "$d/point.json" ] && [ -s "$d/result/summary.json" ] || die "$d is incomplete"
  done
  [ ! -e out/sweep.csv ] || die "sweep.csv was written by the interrupted sweep"
  sweep_run study.yaml out "$WORK/second.log"
  csv_check out/sweep.csv 6 "${common_columns[@]/gpus/}"
  ;;
*)
  die "unknown case $case"
  ;;
esac
echo "PASS sweep $case"
