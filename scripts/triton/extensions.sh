#!/usr/bin/env bash
# What Triton's own clients read (model configuration, statistics, a gRPC stream), from `spork
# serve` and from a real Triton 2.51 serving the same `sobel` model, side by side (extensions.py).
# Downloads nvidia-pytriton (55 MB) once, as side-by-side.sh does; optional in CI.
#   scripts/triton/extensions.sh [SPORK_BINARY] [extensions.py options: --requests 100 --stream 200]
#   OUT=DIR  where the servers' logs go (default target/triton-extensions)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$root/target}/release/spork}"
shift || true
[[ -x "$bin" ]] || { echo "extensions.sh: no spork binary at $bin (cargo build --release --bin spork)" >&2; exit 1; }
dir="$("$here/setup.sh" | tail -n1)"
venv="${SPORK_TRITON_VENV:-$HOME/.cache/spork-triton-venv}"
out="${OUT:-$root/target/triton-extensions}"
mkdir -p "$out"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); spork $("$bin" --version)"
exec "$venv/bin/python" "$here/extensions.py" --spork "$bin" --triton-dir "$dir" --out "$out" "$@"
