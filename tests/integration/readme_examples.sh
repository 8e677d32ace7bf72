#!/usr/bin/env bash
# readme_examples: the commands of README.md's "Using it" block run as written (from a directory
# that has the source tree's platforms/ and workloads/, with ./build/sgfabric the binary under
# test), each succeeds and each finishes within LIMIT seconds (first argument, default 60: the
# README's promise for a Release build; a sanitizer build gets more).
set -euo pipefail
. "$(dirname "$0")/common.sh"
limit=${1:-60}

python3 - "$SRC/README.md" >"$WORK/commands.sh" <<'PY' || die "cannot find the 'Using it' block of README.md"
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Using it"):]
block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
for line in block.splitlines():
    line = line.split("  #")[0].rstrip()
    if line:
        print(line)
PY
[ "$(wc -l <"$WORK/commands.sh")" -ge 5 ] || die "the README block has fewer than 5 commands"
cd "$WORK"
ln -s "$SRC/platforms" platforms
ln -s "$SRC/workloads" workloads
mkdir build
ln -s "$SGF" build/sgfabric
while IFS= read -r command; do
  start=$(date +%s.%N)
  if ! bash -c "B=./build/sgfabric; $command" >"$WORK/out.txt" 2>"$WORK/err.txt"; then
    cat "$WORK/err.txt" >&2
    die "README command failed: $command"
  fi
  seconds=$(python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $start))")
  echo "${seconds} s: $command"
  python3 -c "import sys; sys.exit(0 if $seconds < $limit else 1)" || die "README command took $seconds s (over $limit s): $command"
done < <(grep -v '^B=' "$WORK/commands.sh")
[ -s r/summary.json ] && [ -s f/flows.csv ] && [ -s cmp/comparison.json ] || die "the README commands did not write their results"
echo "PASS"
