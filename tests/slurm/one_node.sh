#!/usr/bin/env bash
# one_node.sh SGFABRIC_BINARY SOURCE_DIR [STUDY]: sgfabric sweep on Slurm, through the shipped profile
# (analysis/sweep/profiles/slurm: sbatch and scontrol, no accounting), on a one-node Slurm cluster
# this script starts on this machine: munged, slurmctld and slurmd, with their configuration and
# state in a scratch directory, stopped and removed at the end (only the processes it started).
# Without STUDY, a 4-point sweep of run points, checked; with one, that study, timed (its table
# is copied to ./one_node-sweep.csv).
#
# Needs root (slurmd starts jobs as their user) and Debian's slurm-wlm and munge:
#   apt-get install --no-install-recommends slurm-wlm munge snakemake python3-yaml
# Exits 77 (skipped) when they are missing or when not root. Docs: docs/artifacts.md, "On Slurm".
set -euo pipefail
given_study=${3:+$(realpath "$3")}
start_dir=$PWD
. "$(dirname "$0")/../integration/common.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null ||
  ! command -v snakemake >/dev/null; then
  echo "SKIP: needs root, slurm-wlm, munge and snakemake (apt-get install slurm-wlm munge snakemake python3-yaml)"
  exit 77
fi
started=()
stop_all() {
  # scancel first (jobs would otherwise outlive slurmd), then our daemons, by pid, newest first.
  command -v scancel >/dev/null && SLURM_CONF=$WORK/slurm.conf scancel --user=root 2>/dev/null || true
  local i
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    kill "${started[i]}" 2>/dev/null || true
  done
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 50); do
      kill -0 "${started[i]}" 2>/dev/null || break
      sleep 0.1
    done
  done
  rm -rf "$WORK"
}
trap stop_all EXIT

t0=$(date +%s.%N)
elapsed() { python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $t0))"; }

# munge: the key Debian's package made, a daemon of our own on a socket of our own.
chmod 755 "$WORK" # munged runs as munge and checks the path to its files
mkdir -p "$WORK/munge"
chown munge: "$WORK/munge"
chmod 755 "$WORK/munge" # munged wants its socket directory searchable by all
runuser -u munge -- /usr/sbin/munged --socket="$WORK/munge/munge.socket" --pid-file="$WORK/munge/munged.pid" \
  --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed" ||
  die "munged did not start: $(cat "$WORK/munge/munged.log" 2>/dev/null)"
started+=("$(cat "$WORK/munge/munged.pid")")

node=$(hostname -s)
cpus=$(nproc)
mem=$(($(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo) / 2))
mkdir -p "$WORK/state" "$WORK/spool"
cat >"$WORK/slurm.conf" <<EOF
ClusterName=sgfabric-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SchedulerParameters=sched_interval=1
NodeName=$node CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$WORK/slurm.conf
/usr/sbin/slurmctld -D -i >"$WORK/slurmctld.out" 2>&1 &
started+=($!)
/usr/sbin/slurmd -D -N "$node" >"$WORK/slurmd.out" 2>&1 &
started+=($!)
for _ in $(seq 300); do
  sinfo -h -o %t 2>/dev/null | grep -qx idle && break
  sleep 0.1
done
sinfo -h -o %t 2>/dev/null | grep -qx idle ||
  die "the Slurm node did not come up: $(sinfo 2>&1; tail -5 "$WORK/slurmctld.log" "$WORK/slurmd.log" 2>&1)"
echo "Slurm up ($node, $cpus CPUs, $mem MB) after $(elapsed) s"

cd "$WORK"
if [ -n "$given_study" ]; then
  s0=$(date +%s.%N)
  status=0
  "$SGF" sweep "$given_study" --out out --profile "$SRC/analysis/sweep/profiles/slurm" >sweep.log 2>&1 || status=$?
  tail -3 sweep.log
  echo "$given_study on Slurm: exit status $status, $(grep -c "Submitted job .* with external jobid" sweep.log) Slurm jobs," \
    "$(python3 -c "print('%.1f' % ($(date +%s.%N) - $s0))") s"
  [ -f out/sweep.csv ] && cp out/sweep.csv "$start_dir/one_node-sweep.csv"
  exit "$status"
fi

# A tiny sweep, every point a Slurm job.
cat >study.yaml <<'EOF'
command: run
options: {model: llama3-8b, tp: 8, pp: 2, gpus: 16, global-batch: 8, fidelity: flow}
parameters:
  fabric: [ib, roce]
seeds: [1, 2]
EOF
s0=$(date +%s.%N)
if ! "$SGF" sweep study.yaml --out out --profile "$SRC/analysis/sweep/profiles/slurm" --jobs 4 >sweep.log 2>&1; then
  tail -40 sweep.log >&2
  tail -20 "$WORK/slurmctld.log" >&2 || true
  cat out/.snakemake/slurm-*.log >&2 2>/dev/null || true
  die "the sweep on Slurm failed"
fi
sweep_s=$(python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $s0))")
submitted=$(grep -c "Submitted job .* with external jobid" sweep.log || true)
[ "$submitted" -eq 4 ] || die "$submitted points were submitted to Slurm, expected 4: $(cat sweep.log)"
rows=$(($(wc -l <out/sweep.csv) - 1))
[ "$rows" -eq 4 ] || die "sweep.csv has $rows rows, expected 4"
ls out/.snakemake/slurm-*.log >/dev/null || die "no Slurm job log"
echo "sweep on Slurm: 4 points as 4 Slurm jobs in $sweep_s s, sweep.csv has $rows rows"
# Resumable there too: nothing is submitted again.
"$SGF" sweep study.yaml --out out --profile "$SRC/analysis/sweep/profiles/slurm" >again.log 2>&1 ||
  die "the second sweep failed: $(cat again.log)"
grep -q "Nothing to be done" again.log || die "the second sweep submitted jobs: $(cat again.log)"
echo "PASS slurm one_node ($(elapsed) s in all)"
