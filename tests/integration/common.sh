# Helpers sourced by the integration scripts; each script is called as
#   script.sh SGFABRIC_BINARY SOURCE_DIR [ARGS...]
# and sets SGF, SRC, DATA, PLATFORMS and a scratch directory WORK removed on exit.

die() {
  echo "FAIL: $*" >&2
  exit 1
}

[ $# -ge 2 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR [ARGS...]"
SGF=$1
SRC=$2
shift 2
[ -x "$SGF" ] || die "sgfabric binary '$SGF' is not executable"
# shellcheck disable=SC2034 # used by the scripts that source this file
DATA=$SRC/tests/integration/data
# shellcheck disable=SC2034
PLATFORMS=$SRC/platforms
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sgf-it.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# run_ok ARGS...: runs sgfabric, dies with its stderr if it fails.
run_ok() {
  if ! "$SGF" "$@" >"$WORK/last.stdout" 2>"$WORK/last.stderr"; then
    cat "$WORK/last.stderr" >&2
    die "command failed: sgfabric $*"
  fi
}

# flows_both PLATFORM FLOWS FABRIC: the flow file at packet and at flow fidelity (seed 1), into
# WORK/packet and WORK/flow.
flows_both() {
  local fidelity
  for fidelity in packet flow; do
    run_ok flows --platform "$1" --flows "$2" --fabric "$3" --fidelity "$fidelity" --seed 1 --out "$WORK/$fidelity"
  done
}

# each_flow_within PCT COUNT: after flows_both, prints every flow's FCT at both fidelities and
# fails unless the files hold COUNT flows and each flow fidelity FCT is within PCT % of packet
# fidelity's.
each_flow_within() {
  python3 - "$WORK/packet/flows.csv" "$WORK/flow/flows.csv" "$1" "$2" <<'EOF_WITHIN'
import csv, sys
packet, flow = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
pct, count = float(sys.argv[3]), int(sys.argv[4])
if not len(packet) == len(flow) == count:
    sys.exit("expected %d flows, packet %d, flow %d" % (count, len(packet), len(flow)))
bad = []
for p, f in zip(packet, flow):
    a, b = float(p["fct_us"]), float(f["fct_us"])
    print("%s -> %s start %s us: packet %.1f us, flow %.1f us (%+.1f%%)" % (p["src"], p["dst"], p["start_us"], a, b,
                                                                          100 * (b - a) / a))
    if abs(b - a) > pct / 100 * a:
        bad.append("%s->%s" % (p["src"], p["dst"]))
if bad:
    sys.exit("not within %g%%: %s" % (pct, ", ".join(bad)))
EOF_WITHIN
}

# jget FILE KEY[.KEY...]: prints a JSON value.
jget() {
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    if k not in v:
        sys.exit("%s: no key %s" % (sys.argv[1], sys.argv[2]))
    v = v[k]
print(repr(v) if isinstance(v, float) else v)' "$1" "$2" || die "cannot read $2 from $1"
}

# fct DIR ROW: the fct_us of data row ROW (1-based) of DIR/flows.csv.
fct() {
  python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/flows.csv")))
print(repr(float(rows[int(sys.argv[2]) - 1]["fct_us"])))' "$1" "$2" || die "cannot read row $2 of $1/flows.csv"
}

# approx WHAT ACTUAL EXPECTED RELTOL: dies unless |ACTUAL - EXPECTED| <= RELTOL * |EXPECTED|.
approx() {
  python3 -c 'import sys
a, e, t = map(float, sys.argv[1:4])
sys.exit(0 if abs(a - e) <= t * abs(e) else 1)' "$2" "$3" "$4" ||
    die "$1: got $2, expected $3 (relative tolerance $4)"
}

# equal WHAT ACTUAL EXPECTED: numeric equality.
equal() {
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) == float(sys.argv[2]) else 1)' "$2" "$3" ||
    die "$1: got $2, expected $3"
}

# expect_failure COMMAND "FRAGMENT[|FRAGMENT...]" ARGS...: runs sgfabric COMMAND ARGS... --out
# WORK/out and checks the failure the way a user meets it: a non-zero exit that is not a crash, a
# message starting "sgfabric COMMAND: " (on any line when SIMGRID_FIRST is set: SimGrid's own
# report may come first) that contains every |-separated fragment (fixed strings), and no output
# directory, temporary or final, left behind.
expect_failure() {
  local command=$1 fragments=$2
  shift 2
  local out=$WORK/out status=0
  "$SGF" "$command" "$@" --out "$out" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  local err
  err=$(cat "$WORK/stderr")
  echo "sgfabric $command $* --out $out"
  echo "  exit status $status, stderr: $err"
  [ "$status" -ne 0 ] || die "$name: the run succeeded"
  [ "$status" -eq 1 ] || [ "$status" -eq 2 ] || die "$name: exit status $status, expected 1 or 2 (a crash?)"
  [ -n "$err" ] || die "$name: nothing on stderr"
  if [ -n "${SIMGRID_FIRST:-}" ]; then
    grep -q "^sgfabric $command: " "$WORK/stderr" || die "$name: no stderr line starts with 'sgfabric $command: '"
  else
    case $err in
    "sgfabric $command: "*) ;;
    *) die "$name: stderr does not start with 'sgfabric $command: '" ;;
    esac
  fi
  local IFS='|' fragment
  for fragment in $fragments; do
    grep -qF -- "$fragment" "$WORK/stderr" || die "$name: stderr does not contain '$fragment'"
  done
  [ ! -e "$out" ] || die "$name: $out exists after a failed run"
  compgen -G "$out.*" >/dev/null && die "$name: something was left next to $out: $(ls -d "$out".*)"
  return 0
}
