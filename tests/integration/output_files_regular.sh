#!/usr/bin/env bash
# output_files_regular COMMAND: "sgfabric COMMAND -o FILE" (platform, workload, deployment)
# writes only regular files: a fifo, a directory or a symbolic link given as FILE is refused
# with a message naming it, non-zero exit, and is left as it was (as root, a device such as
# /dev/null would otherwise be replaced by a rename). The file is written atomically: an
# existing file is replaced whole, and a failed write (a read-only directory) leaves it
# untouched and no temporary file behind.
set -euo pipefail
. "$(dirname "$0")/common.sh"
command=${1:?platform, workload or deployment}
name="output_files_regular $command"

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 -o "$WORK/w16.txt"
case $command in
platform) args=(platform --gpus 16 --radix 8 -o) ;;
workload) args=(workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 -o) ;;
deployment) args=(deployment --workload "$WORK/w16.txt" -o) ;;
*) die "command $command: platform, workload or deployment" ;;
esac

[ -c /dev/null ] || die "/dev/null is not a character device before the test"
mkfifo "$WORK/fifo"
mkdir "$WORK/dir"
printf 'a file\n' >"$WORK/dir/inside"
printf 'the target\n' >"$WORK/target"
ln -s target "$WORK/link"
for spec in fifo:"is a fifo" dir:"is a directory" link:"is a symbolic link"; do
  target=$WORK/${spec%%:*}
  fragment=${spec#*:}
  status=0
  # A fifo opened for reading by nobody would block a writer: the refusal must not open it.
  timeout 20 "$SGF" "${args[@]}" "$target" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric ${args[*]} $target: exit status $status, stderr: $(cat "$WORK/stderr")"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || die "$name: $target: exit status $status, expected a refusal"
  [ "$status" -lt 128 ] || die "$name: $target: killed by a signal"
  grep -qF -- "$target: $fragment" "$WORK/stderr" || die "$name: the message does not say '$target: $fragment'"
done
[ -p "$WORK/fifo" ] || die "$name: the fifo was replaced"
[ -d "$WORK/dir" ] && [ "$(cat "$WORK/dir/inside")" = "a file" ] || die "$name: the directory changed"
[ -L "$WORK/link" ] && [ "$(cat "$WORK/target")" = "the target" ] || die "$name: the link or its target changed"
[ -c /dev/null ] || die "/dev/null is not a character device any more"
compgen -G "$WORK/*.tmp-*" >/dev/null && die "$name: temporary files left: $(ls "$WORK"/*.tmp-*)"

# A regular file is replaced whole.
printf 'old content\n' >"$WORK/out.file"
run_ok "${args[@]}" "$WORK/out.file"
[ "$(head -c 11 "$WORK/out.file")" != "old content" ] || die "$name: $WORK/out.file was not replaced"
# A failed write leaves the existing file untouched (a directory nobody may write to: as root,
# only a read-only mount stops the write, so that case needs a non-root user).
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$WORK/ro"
  printf 'keep me\n' >"$WORK/ro/file"
  chmod a-w "$WORK/ro"
  status=0
  "$SGF" "${args[@]}" "$WORK/ro/file" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  chmod u+w "$WORK/ro"
  [ "$status" -ne 0 ] || die "$name: writing into a read-only directory succeeded"
  [ "$(cat "$WORK/ro/file")" = "keep me" ] || die "$name: the existing file changed on a failed write"
  [ "$(ls -A "$WORK/ro")" = file ] || die "$name: left in the directory: $(ls -A "$WORK/ro")"
elif unshare -m --propagation private true 2>/dev/null; then
  mkdir "$WORK/ro"
  printf 'keep me\n' >"$WORK/ro/file"
  SGF_ARGS="${args[*]}" unshare -m --propagation private bash -c '
    set -e
    mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"
    status=0
    $2 $SGF_ARGS "$1/file" >/dev/null 2>"$1/../ro.stderr" || status=$?
    umount "$1"
    [ "$status" -ne 0 ]' _ "$WORK/ro" "$SGF" || die "$name: writing into a read-only mount succeeded"
  echo "read-only directory: $(cat "$WORK/ro.stderr")"
  [ "$(cat "$WORK/ro/file")" = "keep me" ] || die "$name: the existing file changed on a failed write"
  [ "$(ls -A "$WORK/ro")" = file ] || die "$name: left in the directory: $(ls -A "$WORK/ro")"
else
  echo "SKIP the failed-write case: root without mount namespaces can write anywhere"
fi
echo "PASS $name"
