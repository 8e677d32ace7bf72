#!/usr/bin/env bash
# megatron_options: each Megatron-LM option of the generator (docs/compute-model.md, "Megatron-LM
# options the generator models") changes a replayed iteration the way it should. Llama 3 8B on
# tiny-16.xml (2 nodes of 8 H100), TP 8, 8 sequences, InfiniBand, flow fidelity:
#  - gradient reduction overlapped with the backward (default) ends the iteration earlier than
#    reducing after it (--no-overlap-grad-reduce), with the same all-reduce bytes (pp 1, dp 2);
#  - with the distributed optimizer, the parameter all-gather overlapped with the forward
#    (--overlap-param-gather) ends it earlier than after the optimizer step, same bytes;
#  - tied embeddings over pp 2 add the embedding-gradient all-reduce between the two stages
#    (group emb, 4 x 4096 x 128256 / 8 bytes per TP rank's group), untied ones do not;
#  - the gradient norm is a 4-byte all-reduce over tp x pp (mp; world with the distributed
#    optimizer), absent with --no-grad-norm;
#  - selective recomputation costs compute between none and full, and HFU > MFU.
set -euo pipefail
. "$(dirname "$0")/common.sh"

n=0
# job NAME WORKLOAD-OPTIONS...: generates and runs the job, results in $WORK/NAME.
job() {
  local name=$1
  shift
  run_ok workload --model llama3-8b --gpus 16 --tp 8 --global-batch 8 "$@" -o "$WORK/$name.txt"
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/$name.txt" --fabric ib --no-progress \
    --out "$WORK/$name"
  echo "$name ($*): $(cat "$WORK/last.stdout")"
  n=$((n + 1))
}
# coll NAME OP GROUP FIELD: the field (count, bytes) of summary.json's collective, 0 when absent.
coll() {
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
print(sum(c[sys.argv[4]] for c in s["collectives"] if c["op"] == sys.argv[2] and c["group"] == sys.argv[3]))' \
    "$WORK/$1" "$2" "$3" "$4"
}
it() { jget "$WORK/$1/summary.json" iteration_time_s; }
less() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$2" "$3" || die "$1: $2 is not below $3"; }

job overlap --recompute selective
job no-overlap --recompute selective --no-overlap-grad-reduce
less "overlapped gradient reduction" "$(it overlap)" "$(it no-overlap)"
equal "all-reduce bytes with and without overlap" "$(coll overlap allreduce dp bytes)" "$(coll no-overlap allreduce dp bytes)"

job zero1 --recompute selective --zero1
job zero1-gather --recompute selective --zero1 --overlap-param-gather
less "overlapped parameter all-gather" "$(it zero1-gather)" "$(it zero1)"
equal "all-gather bytes with and without overlap" "$(coll zero1 allgather dp bytes)" "$(coll zero1-gather allgather dp bytes)"
equal "gradient norm over every rank with the distributed optimizer" "$(coll zero1 allreduce world bytes)" 4

job tied --recompute selective --pp 2 --tied-embeddings
job untied --recompute selective --pp 2
equal "embedding all-reduce bytes (8 groups)" "$(coll tied allreduce emb bytes)" "$((8 * 4 * 4096 * 128256 / 8))"
equal "no embedding all-reduce untied" "$(coll untied allreduce emb count)" 0
equal "gradient norm over tp x pp" "$(coll untied allreduce mp bytes)" 4

job none --no-grad-norm
job full --recompute full
equal "no gradient norm with --no-grad-norm" "$(coll none allreduce mp count)" 0
c_none=$(jget "$WORK/none/summary.json" breakdown.compute_s)
c_sel=$(jget "$WORK/overlap/summary.json" breakdown.compute_s)
c_full=$(jget "$WORK/full/summary.json" breakdown.compute_s)
echo "compute: none $c_none s, selective $c_sel s, full $c_full s"
less "compute without recomputation below selective" "$c_none" "$c_sel"
less "compute with selective below full" "$c_sel" "$c_full"
less "MFU below HFU with selective" "$(jget "$WORK/overlap/summary.json" mfu)" "$(jget "$WORK/overlap/summary.json" hfu)"
# TP communication overlapped with the GEMMs: the same TP bytes, less of them exposed, a shorter
# iteration; refused without sequence parallelism.
job sp --recompute selective --sequence-parallel
job sp-overlap --recompute selective --sequence-parallel --tp-comm-overlap
less "overlapped TP communication" "$(it sp-overlap)" "$(it sp)"
less "exposed TP time with overlap" "$(jget "$WORK/sp-overlap/summary.json" breakdown.exposed_comm_s.tp)" \
  "$(jget "$WORK/sp/summary.json" breakdown.exposed_comm_s.tp)"
equal "TP reduce-scatter bytes with and without overlap" "$(coll sp reducescatter tp bytes)" \
  "$(coll sp-overlap reducescatter tp bytes)"
if "$SGF" workload --model llama3-8b --gpus 16 --tp 8 --tp-comm-overlap -o "$WORK/bad.txt" 2>"$WORK/bad.err"; then
  die "--tp-comm-overlap without --sequence-parallel was accepted"
fi
grep -q -- "--tp-comm-overlap needs" "$WORK/bad.err" || die "the refusal does not say why: $(cat "$WORK/bad.err")"

# Context parallelism: ring attention (p2p, the default) hides the KV exchange behind attention,
# all_gather exposes it.
job cp-ring --tp 4 --cp 2 --seq 16384 --recompute selective --ignore-memory
job cp-gather --tp 4 --cp 2 --seq 16384 --recompute selective --ignore-memory --cp-comm-type all_gather
less "exposed CP time of ring attention" "$(jget "$WORK/cp-ring/summary.json" breakdown.exposed_comm_s.cp)" \
  "$(jget "$WORK/cp-gather/summary.json" breakdown.exposed_comm_s.cp)"
less "ring attention's iteration" "$(it cp-ring)" "$(it cp-gather)"
echo "PASS ($n jobs)"
