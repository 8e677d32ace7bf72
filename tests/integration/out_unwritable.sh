#!/usr/bin/env bash
# out_unwritable CASE: an --out that cannot be written is reported at once, before the
# simulation (the job below simulates for seconds at packet fidelity), exit 1, nothing left.
#   missing_parent  --out under a directory that does not exist
#   read_only       --out on a read-only file system, replacing a previous result there: the
#                   result is kept byte-identical (a read-only tmpfs in a private mount
#                   namespace; as a non-root user, a directory without write permission)
#   disk_full       --out on a full file system (an 8 KiB tmpfs): the write fails after the
#                   simulation, exit 1, no temporary directory left, the file next to it kept
set -euo pipefail
. "$(dirname "$0")/common.sh"
case=${1:?case}
name=out_unwritable_$case

platform=$PLATFORMS/tiny-16.xml

# fails_fast OUT FRAGMENT: the packet-fidelity run into OUT exits 1 within 5 s (the simulation
# of this 64-micro-batch job takes tens of seconds) with a message naming --out and containing FRAGMENT.
fails_fast() {
  local out=$1 fragment=$2 status=0
  local start end
  start=$(date +%s.%N)
  "$SGF" "${job[@]}" --out "$out" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  end=$(date +%s.%N)
  echo "sgfabric ${job[*]} --out $out"
  echo "  exit status $status after $(python3 -c "print('%.2f' % ($end - $start))") s, stderr: $(cat "$WORK/stderr")"
  [ "$status" -eq 1 ] || die "$name: exit status $status, expected 1"
  grep -qF -- "--out $out" "$WORK/stderr" || die "$name: the message does not name --out $out"
  grep -qF -- "$fragment" "$WORK/stderr" || die "$name: the message does not say '$fragment'"
  python3 -c "import sys; sys.exit(0 if $end - $start < 5 else 1)" ||
    die "$name: took $(python3 -c "print($end - $start)") s: reported after simulating?"
}

# Mounts need root and a private mount namespace (so that nothing outlives the test).
in_namespace() {
  [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null
}
if [ "$case" != missing_parent ] && [ -z "${SGF_IN_MOUNT_NS:-}" ] && in_namespace; then
  # The namespace's mounts vanish with it; WORK is removed by the inner script.
  trap - EXIT
  rm -rf "$WORK"
  SGF_IN_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$SGF" "$SRC" "$case"
fi
mnt=$WORK/mnt
mkdir "$mnt"
trap 'umount "$mnt" 2>/dev/null || true; rm -rf "$WORK"' EXIT
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 64 -o "$WORK/w16.txt"
job=(run --platform "$platform" --workload "$WORK/w16.txt" --fabric roce --fidelity packet)

case $case in
missing_parent)
  fails_fast "$WORK/no/such/dir" "does not exist"
  [ ! -e "$WORK/no" ] || die "$name: $WORK/no was created"
  ;;
read_only)
  if [ -n "${SGF_IN_MOUNT_NS:-}" ]; then
    mount -t tmpfs -o size=16m tmpfs "$mnt"
    run_ok flows --platform "$platform" --flows "$DATA/flows/one_0_8_1000B.csv" --out "$mnt/res"
    mount -o remount,ro "$mnt"
  else
    run_ok flows --platform "$platform" --flows "$DATA/flows/one_0_8_1000B.csv" --out "$mnt/res"
    chmod a-w "$mnt"
    if touch "$mnt/probe" 2>/dev/null; then
      rm -f "$mnt/probe"
      echo "SKIP $name: running as root without mount namespaces, a read-only directory is writable"
      exit 0
    fi
  fi
  before=$(cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
  fails_fast "$mnt/res" "cannot create a directory next to it"
  fails_fast "$mnt/new" "cannot create a directory next to it"
  [ "$(cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum)" = "$before" ] ||
    die "$name: the previous result changed"
  [ -z "$(find "$mnt" -mindepth 1 -maxdepth 1 \( -name 'res.*' -o -name 'new*' \))" ] || die "$name: something was created"
  [ -n "${SGF_IN_MOUNT_NS:-}" ] || chmod u+w "$mnt"
  ;;
disk_full)
  if [ -z "${SGF_IN_MOUNT_NS:-}" ]; then
    echo "SKIP $name: needs root and mount namespaces (a small tmpfs) to fill a file system"
    exit 0
  fi
  mount -t tmpfs -o size=8k tmpfs "$mnt"
  printf 'the user file\n' >"$mnt/notes.txt"
  sum=$(sha256sum <"$mnt/notes.txt")
  status=0
  "$SGF" flows --platform "$platform" --flows "$DATA/flows/incast_8to1_4MB.csv" --out "$mnt/res" \
    >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric flows ... --out $mnt/res (8 KiB file system): exit status $status, stderr: $(cat "$WORK/stderr")"
  [ "$status" -eq 1 ] || die "$name: exit status $status, expected 1"
  grep -qF "No space left on device" "$WORK/stderr" || die "$name: the message does not say the disk is full"
  [ "$(ls -A "$mnt")" = notes.txt ] || die "$name: left in the file system: $(ls -A "$mnt")"
  [ "$(sha256sum <"$mnt/notes.txt")" = "$sum" ] || die "$name: notes.txt changed"
  ;;
*) die "unknown case '$case'" ;;
esac
echo "PASS $name"
