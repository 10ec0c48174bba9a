#!/usr/bin/env bash
# The protocol latency guard: `spork serve` (release build, sobel, loopback) measured with
# tritonclient.http and tritonclient.grpc, one request in flight; fails when one protocol's p50 is
# over 3x the other's. Prints the machine, the commit and the table.
#   scripts/latency-guard.sh [CALLS (default 500)]
#   SPORK_BIN  a spork binary to measure instead of building the release one
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/root/.cache/spork-target}"
calls="${1:-500}"
if [[ -n "${SPORK_BIN:-}" ]]; then
    spork="$SPORK_BIN"
else
    cargo build --release --locked -p spork >/dev/null
    spork="$CARGO_TARGET_DIR/release/spork"
fi
python="$(scripts/python-env.sh | tail -n1)"
echo "machine: $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$spork" serve --http 127.0.0.1:8310 --grpc 127.0.0.1:8311 --models sobel 2>/dev/null &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    if (exec 3<>/dev/tcp/127.0.0.1/8310) 2>/dev/null; then break; fi
    sleep 0.1
done
"$python" scripts/latency-guard.py --http 127.0.0.1:8310 --grpc 127.0.0.1:8311 --calls "$calls"
