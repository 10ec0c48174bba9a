#!/usr/bin/env bash
# Soak: `spork serve` under `spork load` for a long run at a steady rate, RSS sampled every 10 s; the
# RSS column should stay flat. Not a CI test (it takes as long as it is told).
#   scripts/serve-soak.sh [SPORK_BINARY] [DURATION] [RATE]     (defaults: target/release/spork 10m 140)
set -euo pipefail
bin="${1:-target/release/spork}"
duration="${2:-10m}"
rate="${3:-140}"
"$bin" serve --models sobel --http 127.0.0.1:18600 --grpc 127.0.0.1:18601 2>/dev/null &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf 127.0.0.1:18600/v2/health/ready >/dev/null 2>&1 && break
  sleep 0.2
done
"$bin" load --target 127.0.0.1:18600 --model sobel --rate "$rate" --duration "$duration" --burstiness 0.5 \
  --size 1ms --json >/tmp/spork-soak.json &
load=$!
echo "seconds rss_kb"
start=$(date +%s)
while kill -0 "$load" 2>/dev/null; do
  echo "$(( $(date +%s) - start )) $(awk '/VmRSS/{print $2}' "/proc/$pid/status")"
  sleep 10
done
wait "$load"
python3 -c 'import json; r = json.load(open("/tmp/spork-soak.json")); print("sent", r["sent"], "answered", r["ok"], "errors", r["errors"], "latency_ms", r["latency_ms"])'
