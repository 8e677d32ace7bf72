#!/usr/bin/env bash
# out_interrupted COMMAND SIGNAL: "sgfabric COMMAND" (run or compare) on a job that simulates
# for several seconds (Llama 3 8B on tiny-16 at packet fidelity), sent SIGNAL (INT or TERM)
# mid-run, exits 128 + signal with the one line "...: interrupted, nothing written" on stderr,
# removes its temporary directories, leaves no child process, and leaves the previous result
# in DIR and a file next to it byte-identical.
set -euo pipefail
. "$(dirname "$0")/common.sh"
command=${1:?run or compare}
signal=${2:?INT or TERM}
name="out_interrupted $command $signal"
case $signal in
INT) expected=130 ;;
TERM) expected=143 ;;
*) die "signal $signal: INT or TERM" ;;
esac

platform=$PLATFORMS/tiny-16.xml
out=$WORK/res
job=(--model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8)
case $command in
run)
  run_ok workload "${job[@]}" -o "$WORK/w16.txt"
  args=(run --platform "$platform" --workload "$WORK/w16.txt" --fabric roce)
  ;;
compare)
  args=(compare "${job[@]}" --platform "$platform" --fabrics roce,ideal)
  ;;
*) die "command $command: run or compare" ;;
esac

# The previous result: the same job at flow fidelity (fast), and a user's file next to it.
run_ok "${args[@]}" --fidelity flow --out "$out"
printf 'next to the result\n' >"$WORK/notes.txt"
snapshot() { (cd "$WORK" && find res notes.txt -type f -print0 | sort -z | xargs -0 sha256sum); }
before=$(snapshot)

start=$(date +%s.%N)
# A background job of a non-interactive shell starts with SIGINT ignored (and sgfabric keeps
# it so); a terminal's Ctrl-C reaches a foreground job whose SIGINT acts: start it that way.
python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$SGF" "${args[@]}" --fidelity packet --out "$out" >"$WORK/stdout" 2>"$WORK/stderr" &
pid=$!
# Wait until the simulation is under way: the temporary directory exists (created before the
# simulation starts); for compare, the per-fabric runs have theirs.
for _ in $(seq 100); do
  if [ "$command" = run ]; then
    compgen -G "$out.tmp-*" >/dev/null && break
  else
    compgen -G "$out.tmp-*/roce.tmp-*" >/dev/null && compgen -G "$out.tmp-*/ideal.tmp-*" >/dev/null && break
  fi
  sleep 0.1
done
sleep 1
kill -0 $pid 2>/dev/null || die "$name: the job ended before the signal (too short a job?)"
children=$(pgrep -P $pid || true)
[ "$command" = run ] || [ -n "$children" ] || die "$name: compare has no child process to stop"
kill -"$signal" $pid
status=0
wait $pid || status=$?
end=$(date +%s.%N)
echo "sgfabric ${args[*]} --fidelity packet --out $out, SIG$signal after $(python3 -c "print('%.1f' % ($end - $start))") s"
echo "  exit status $status, stderr: $(cat "$WORK/stderr")"
[ "$status" -eq "$expected" ] || die "$name: exit status $status, expected $expected"
# AddressSanitizer's note on SimGrid's context switches (sanitizer builds only) is not ours.
grep -v -e '^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return' \
  -e '^False positive error reports may follow' -e '^For details see https://github.com/google/sanitizers/issues/189' \
  "$WORK/stderr" >"$WORK/stderr.ours" || true
[ "$(wc -l <"$WORK/stderr.ours")" -eq 1 ] || die "$name: stderr has $(wc -l <"$WORK/stderr.ours") lines, expected one"
grep -qx "sgfabric $command: interrupted, nothing written" "$WORK/stderr.ours" || die "$name: not the interruption line"
if compgen -G "$out.tmp-*" >/dev/null; then die "$name: left $(ls -d "$out".tmp-*)"; fi
compgen -G "$out.old-*" >/dev/null && die "$name: left $(ls -d "$out".old-*)"
for child in $children; do
  kill -0 "$child" 2>/dev/null && die "$name: child process $child still runs: $(ps -o args= -p "$child")"
done
if pgrep -f -- "--out $WORK/" >/dev/null; then die "$name: a process still writes under $WORK: $(pgrep -af -- "--out $WORK/")"; fi
[ "$(snapshot)" = "$before" ] || die "$name: the previous result or the file next to it changed"
summary=$out/summary.json
[ "$command" = run ] || summary=$out/roce/summary.json
[ "$(jget "$summary" fidelity)" = flow ] || die "$name: $out is not the previous (flow fidelity) result any more"
echo "PASS $name"
