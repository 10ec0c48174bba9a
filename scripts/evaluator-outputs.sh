#!/usr/bin/env bash
# Writes the evaluator's outputs for a fixed set of runs into OUTDIR, so that a refactor can be
# shown byte-identical: run it with the binary before and after, then `diff -r` the two folders.
#   scripts/evaluator-outputs.sh BIN OUTDIR
set -euo pipefail
bin=${1:?usage: evaluator-outputs.sh BIN OUTDIR}
out=${2:?usage: evaluator-outputs.sh BIN OUTDIR}
mkdir -p "$out"
sim() {
    local name=$1
    shift
    "$bin" simulate --duration 30m --json "$@" >"$out/$name.json"
}
sim all --scheduler all
sim all20 --scheduler all --workers 20
sim ip --scheduler all --dispatcher index-packing
sim rr --scheduler all --dispatcher round-robin
sim capped --scheduler all --max-fpga 3 --max-cpu 40
sim brownout --scheduler spork-e --optional-factor 0.5 --brownout pi --max-cpu 20
sim sizes --scheduler spork-e,spork-d --size-cv 1 --size-estimate p95
sim release --scheduler spork-e,fpga-static --release-timing planned
# The wall-time line differs from run to run: everything else must not.
"$bin" brownout --duration 10m --seeds 1 --json --out "$out/brownout-scenario" >"$out/brownout-scenario.json"
