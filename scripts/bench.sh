#!/usr/bin/env bash
# Times the evaluator on the paper's default 2-hour trace of 10 ms requests (~72 M requests) and
# prints the machine it ran on, so a figure can be quoted with its provenance.
#   scripts/bench.sh [extra `spork bench` flags, e.g. --scheduler all --repeat 3]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/root/.cache/spork-target}"
cargo build --release --locked -p spork
echo "machine: $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$CARGO_TARGET_DIR/release/spork" bench "$@"
