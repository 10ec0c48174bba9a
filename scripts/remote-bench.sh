#!/usr/bin/env bash
# Requests per second and latency through `spork serve` with its workers on a worker host
# (`spork worker`, over loopback) against the same server with its workers in-process, under the
# same open-loop load (`spork load`, bounded: DURATION per run). Prints the machine and a table.
#   scripts/remote-bench.sh [RATES (default "100 250")] [DURATION (default 20s)]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/root/.cache/spork-target}"
rates="${1:-100 250}"
duration="${2:-20s}"
cargo build --release --locked -p spork >/dev/null
spork="$CARGO_TARGET_DIR/release/spork"
echo "machine: $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# Waits until something listens on $1 (host:port), at most 30 s.
wait_port() {
    for _ in $(seq 300); do
        if (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing listens on $1" >&2
    return 1
}

# Runs the loads against a server started with the given flags; prints one row per rate.
bench() {
    local mode="$1"
    shift
    "$spork" serve --http 127.0.0.1:8300 --grpc 127.0.0.1:8301 --models sobel "$@" 2>/dev/null &
    local serve=$!
    pids+=("$serve")
    wait_port 127.0.0.1:8300
    sleep 2 # the start-up probe and the first interval
    for rate in $rates; do
        "$spork" load --target 127.0.0.1:8300 --rate "$rate" --duration "$duration" --json 2>/dev/null |
            python3 -c '
import json, sys
r = json.load(sys.stdin)
l = r["latency_ms"]
row = (sys.argv[1], sys.argv[2], r["throughput"], l["p50"], l["p95"], l["p99"], r["missed"], sum(r["errors"].values()))
print("%-8s %6s %9.1f %8.2f %8.2f %8.2f %7d %7d" % row)
' "$mode" "$rate"
    done
    kill -INT "$serve"
    wait "$serve" || true
}

echo "mode       rate  answers/s  p50 ms   p95 ms   p99 ms  missed  errors"
bench local
"$spork" worker --listen 127.0.0.1:7370 --fpga-slots 2 --cpu-slots 2 2>/dev/null &
pids+=("$!")
wait_port 127.0.0.1:7370
bench remote --worker 127.0.0.1:7370
