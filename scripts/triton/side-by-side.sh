#!/usr/bin/env bash
# Spork and a real Triton Inference Server side by side on this machine (issue 26's table): the
# same `sobel` model (Triton through a C++ backend running Spork's own sobel C code, and through a
# Python model for reference), the same clients (the Python tritonclient one request at a time;
# `spork load` at rising rates), answers checked, repeated; prints the tables and keeps every
# measurement. Downloads nvidia-pytriton (55 MB) once; optional in CI.
#   scripts/triton/side-by-side.sh [SPORK_BINARY] [side_by_side.py options: --runs 3 --step 10
#                                   --rates 400,800,1200,1600 --servers spork,spork-cpu,triton-cpp,triton-python
#                                   --priority realtime]
#   OUT=DIR  where measurements.jsonl and the servers' logs go (default target/side-by-side)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$root/target}/release/spork}"
shift || true
[[ -x "$bin" ]] || { echo "side-by-side.sh: no spork binary at $bin (cargo build --release --bin spork)" >&2; exit 1; }
dir="$("$here/setup.sh" | tail -n1)"
venv="${SPORK_TRITON_VENV:-$HOME/.cache/spork-triton-venv}"
out="${OUT:-$root/target/side-by-side}"
mkdir -p "$out"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); spork $("$bin" --version)"
exec "$venv/bin/python" "$here/side_by_side.py" --spork "$bin" --triton-dir "$dir" --out "$out" "$@"
