#!/usr/bin/env bash
# disk_full: writing on a full file system is reported with the system's reason and leaves
# nothing behind. Uses a 64 KiB tmpfs (needs root, as in CI); skipped (status 77) when the
# mount is not allowed.
set -euo pipefail
. "$(dirname "$0")/common.sh"
mnt=$WORK/full
mkdir "$mnt"
if ! mount -t tmpfs -o size=64k sgf-disk-full "$mnt" 2>/dev/null; then
  echo "SKIP disk_full: cannot mount a tmpfs here (not root?)"
  exit 77
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$WORK"' EXIT

# expect_enospc COMMAND ARGS...: sgfabric COMMAND ARGS... must fail with status 1, say "No space
# left on device" after "sgfabric COMMAND: " and leave the mount empty.
expect_enospc() {
  local command=$1 status=0
  shift
  "$SGF" "$command" "$@" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric $command $*: exit status $status, stderr: $(cat "$WORK/stderr")"
  [ "$status" -eq 1 ] || die "sgfabric $command: exit status $status, expected 1"
  grep -q "^sgfabric $command: .*No space left on device" "$WORK/stderr" ||
    die "sgfabric $command: the message does not give the reason (No space left on device)"
  [ -z "$(ls -A "$mnt")" ] || die "sgfabric $command: left files on the full disk: $(ls -A "$mnt")"
}

# A 32-rank Llama 3 8B trace is larger than 64 KiB; so is a 1,024-GPU platform.
expect_enospc workload --model llama3-8b --gpus 32 --tp 8 --pp 2 -o "$mnt/w.trace"
expect_enospc platform --gpus 1024 --radix 64 --rail-optimized -o "$mnt/p.xml"
echo "PASS disk_full"
