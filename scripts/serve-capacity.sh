#!/usr/bin/env bash
# The highest request rate at which p99 stays under the deadline, SporkE vs CPU-dynamic, on the
# emulated board: for each scheduler, start `spork serve` (sobel only) on loopback and send
# constant-rate (b-model 0.5) traces of 1 ms requests at rising rates with `spork load`, each step
# bounded in time; print one line per step. The CPU-only limit is cores / service time.
#   scripts/serve-capacity.sh [SPORK_BINARY] [SECONDS_PER_STEP] [RATES...]
# PLATFORM=FILE passes a platform profile to the server (e.g. CPU workers that start in 100 us).
# PRIORITY=realtime runs the server's protocol threads and CPU workers and the load generator at the
# lowest real-time level (root or CAP_SYS_NICE; see docs/performance.md).
# ITEMS_PER_SEC=N pins the requests' size; by default the first step's calibration is kept for every
# later step and both schedulers (the load generator's calibration moved by up to a third between runs here).
set -euo pipefail
bin="${1:-target/release/spork}"
step="${2:-10}"
shift 2 || true
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(200 400 600 800 1000 1200 1500)
deadline_ms=10 # the profile's deadline factor (10) times the 1 ms size
for scheduler in spork-e cpu-dynamic; do
  "$bin" serve --models sobel --scheduler "$scheduler" --http 127.0.0.1:18500 --grpc 127.0.0.1:18501 \
    ${PLATFORM:+--platform "$PLATFORM"} --io-priority "${PRIORITY:-normal}" 2>/dev/null &
  pid=$!
  for _ in $(seq 1 100); do
    curl -sf 127.0.0.1:18500/v2/health/ready >/dev/null 2>&1 && break
    sleep 0.2
  done
  for rate in "${rates[@]}"; do
    out=$(timeout $((step * 3 + 30)) "$bin" load --target 127.0.0.1:18500 --model sobel --rate "$rate" \
      --duration "${step}s" --burstiness 0.5 --size 1ms --deadline-ms "$deadline_ms" --json \
      --priority "${PRIORITY:-normal}" \
      ${ITEMS_PER_SEC:+--items-per-sec "$ITEMS_PER_SEC"})
    ITEMS_PER_SEC=${ITEMS_PER_SEC:-$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["items_per_sec"])' "$out")}
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
ok, errors, fpga = r["ok"], sum(r["errors"].values()), r["by_kind"].get("fpga", 0)
share, misses = 100 * fpga / max(ok, 1), 100 * r["missed"] / max(ok, 1)
p50, p99 = r["latency_ms"]["p50"], r["latency_ms"]["p99"]
name, rate = sys.argv[2], float(sys.argv[3])
print(f"{name:12} rate {rate:6.0f}/s  answered {ok}  errors {errors}  fpga {share:5.1f}%  "
      f"misses {misses:5.2f}%  p50 {p50:7.2f}  p99 {p99:8.2f} ms")
' "$out" "$scheduler" "$rate"
  done
  kill -TERM "$pid"
  wait "$pid" || true
done
echo "requests sized at $ITEMS_PER_SEC items/s; nominal CPU-only limit: $(nproc) cores / 1 ms = $(( $(nproc) * 1000 )) requests/s" \
  "(1 ms of the load generator's Rust reference; the served C kernel is faster: see docs/performance.md)"
