#!/usr/bin/env bash
# The hardening issue's attacks on model code and model control (issue 52), live against the real
# `spork serve`: each attack starts its own server on loopback (ports chosen by the kernel) with a
# good model beside the bad one, probes /v2/health/live and the good model throughout, reads the
# server's memory from /proc, and prints one line of what it saw. docs/hardening.md records a run.
#
#   scripts/attacks.sh [SPORK_BINARY] [ROW ...]
#     SPORK_BINARY  a release `spork` (default: $CARGO_TARGET_DIR/release/spork, else target/release/spork);
#                   its kernel processes run the binary of that name beside it, so it must be named spork
#     ROW           attacks to run, 1-9 (default: all)
#   SPORK_COMMIT=abc1234 names the commit the binary was built at (default: this tree's HEAD)
#
# Loopback only. Every wait, loop and client is bounded (each attack ends within about 40 s); every
# server started is stopped (SIGTERM, then SIGKILL) when its attack ends and again on exit. Scratch
# files go to a mktemp folder, removed at the end (KEEP=1 keeps it, with every server's log).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$root/target}/release/spork}"
shift || true
chosen=("$@")
[ ${#chosen[@]} -gt 0 ] || chosen=(1 2 3 4 5 6 7 8 9)
[ -x "$bin" ] || { echo "no spork binary at $bin (cargo build --release -p spork)" >&2; exit 2; }
[ "$(basename "$bin")" = spork ] || { echo "the binary must be named spork (its kernel processes run it)" >&2; exit 2; }
for tool in curl jq cc mkfifo truncate awk pgrep; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

work="$(mktemp -d /tmp/spork-attacks.XXXXXX)"
fixtures="$root/tests/fixtures/kernels"
export SPORK_CACHE_DIR="$work/cache"
servers=()
probe_pid=""

cleanup() {
  [ -n "$probe_pid" ] && kill "$probe_pid" 2>/dev/null
  for p in "${servers[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  sleep 0.5
  for p in "${servers[@]}"; do
    kill -KILL "$p" 2>/dev/null || true
  done
  if [ "${KEEP:-0}" = 1 ]; then
    echo "kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# ---- helpers -------------------------------------------------------------------------------------

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
kib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

# A /proc/PID/status field in kB (0 if the process is gone).
status_kb() { awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# CPU ticks of PID: user + system, its waited-for children's too.
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# The server's direct children (its kernel processes; a compiler while one runs).
kids() { pgrep -P "$1" || true; }
children() { kids "$1" | grep -c . || true; }

# Peak RSS (VmHWM) summed over the server's children now, kB.
children_hwm() {
  local sum=0 c
  for c in $(kids "$1"); do
    sum=$((sum + $(status_kb "$c" VmHWM)))
  done
  echo "$sum"
}

# start NAME ARGS...: `spork serve` on loopback with ARGS, its log in $work/NAME.log; waits (at most
# $start_bound s, default 30) for it to listen. Sets spid, url, started (seconds), and up (1 if it
# listens, else 0 with exit_code set if it ended).
start() {
  local name="$1"
  shift
  log="$work/$name.log"
  local t0
  t0="$(now)"
  : >"$log"
  "$bin" serve --http 127.0.0.1:0 --grpc 127.0.0.1:0 --grace 1s "$@" >"$log" 2>&1 &
  spid=$!
  servers+=("$spid")
  up=0 exit_code="" url="" listened="" start_health=""
  local i
  for ((i = 0; i < ${start_bound:-30} * 20; i++)); do
    # Listening while its models load: health is probed until it says it is ready.
    if [ -z "$listened" ] && grep -q '^spork serve: listening: HTTP' "$log"; then
      listened="$(since "$t0")"
      url="http://$(sed -n 's/^spork serve: listening: HTTP \([^,]*\),.*/\1/p' "$log")"
      probe
    fi
    if grep -q '^spork serve: HTTP on' "$log"; then
      url="http://$(sed -n 's/^spork serve: HTTP on \([^,]*\),.*/\1/p' "$log")"
      up=1
      break
    fi
    if ! kill -0 "$spid" 2>/dev/null; then
      wait "$spid" && exit_code=0 || exit_code=$?
      break
    fi
    sleep 0.05
  done
  if [ -n "$probe_pid" ]; then
    unprobe
    start_health="$health"
  fi
  started="$(since "$t0")"
}

# stop: SIGTERM the server, wait at most 10 s for its drain, then SIGKILL.
stop() {
  kill -TERM "$spid" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
}

alive() { kill -0 "$spid" 2>/dev/null && echo up || echo DEAD; }

# post PATH BODY [curl args...]: prints "STATUS BODY" (the body on one line). Bounded at 30 s.
post() {
  local path="$1" body="$2"
  shift 2
  local out
  out="$(curl -s -m 30 -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' "$@" \
    --data-binary "$body" "$url$path" | tr -d '\r')" || true
  printf '%s %s\n' "$(tail -n1 <<<"$out")" "$(sed '$d' <<<"$out" | tr '\n' ' ')"
}

# add MODEL A B: a satadd-shaped request (INT16 a, b; A and B comma-separated).
add() {
  local n
  n=$(awk -F, '{ print NF }' <<<"$2")
  post "/v2/models/$1/infer" \
    "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT16\",\"shape\":[$n],\"data\":[$2]},{\"name\":\"b\",\"datatype\":\"INT16\",\"shape\":[$n],\"data\":[$3]}]}"
}

# The index entry of MODEL: "STATE | REASON".
index_of() {
  curl -s -m 10 -X POST -H 'Content-Type: application/json' -d '{}' "$url/v2/repository/index" |
    jq -r --arg m "$1" '.[] | select(.name == $m) | "\(.state) | \(.reason)"'
}

# excerpt TEXT [N]: the first N (80) characters on one line.
excerpt() { printf '%s' "$1" | tr '\n' ' ' | cut -c1-"${2:-80}"; }

# probe GOOD: in the background until unprobe (at most 2,000 rounds), every 20 ms: /v2/health/live
# and, if GOOD is given, a satadd request to GOOD whose answer is checked.
probe() {
  local good="${1:-}"
  : >"$work/health" && : >"$work/good" && touch "$work/probing"
  (
    for ((i = 0; i < 2000; i++)); do
      [ -e "$work/probing" ] || break
      curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}\n' "$url/v2/health/live" >>"$work/health" || echo "000 5" >>"$work/health"
      if [ -n "$good" ]; then
        case "$(add "$good" 1,32767 3,1)" in
          200*'"data":[4,32767]'*) echo ok ;;
          *) echo bad ;;
        esac >>"$work/good"
      fi
      sleep 0.02
    done
  ) &
  probe_pid=$!
}

# unprobe: stops the probe; sets health ("N probes, slowest X ms, F failed") and good ("R/N right").
unprobe() {
  rm -f "$work/probing"
  wait "$probe_pid" 2>/dev/null || true
  probe_pid=""
  health="$(awk '{ n++; if ($1 != 200) f++; if ($2 > m) m = $2 } END { printf "%d probes, slowest %.1f ms, %d failed", n, m * 1000, f }' "$work/health")"
  good="$(awk '{ n++; if ($1 == "ok") r++ } END { printf "%d/%d right", r, n }' "$work/good")"
}

# A copy of fixture NAME as model folder DEST.
fixture() { mkdir -p "$2" && cp -r "$fixtures/$1/." "$2/"; }

say() { printf '%s\n' "$*"; }

# ---- the attacks -----------------------------------------------------------------------------------

# 1. A C kernel that dereferences NULL on one request (tests/fixtures/kernels/hostile, b[0] = 1).
attack1() {
  local repo="$work/r1"
  fixture hostile "$repo/hostile" && fixture satadd "$repo/satadd"
  start a1 --scheduler cpu-dynamic --model-repository "$repo"
  [ "$up" = 1 ] || { say "1 NULL deref: server did not start ($(tail -n1 "$log"))"; return; }
  probe satadd
  sleep 0.5
  local first
  first="$(add hostile 4951,1,2 1,1,2)"
  sleep 0.5
  local after
  after="$(add hostile 1,2 3,4)"
  local i
  for ((i = 0; i < 5; i++)); do add hostile 4951,1,2 1,1,2 >/dev/null; done
  local dead
  dead="$(add hostile 1 1)"
  sleep 0.5
  unprobe
  say "1 NULL deref: server $(alive); the request: $(excerpt "$first" 190);" \
    "next request: ${after%% *}; after 5 more deaths: $(excerpt "$dead" 60) | index: $(excerpt "$(index_of hostile)" 110);" \
    "satadd $good; health $health; server RSS peak $(kib "$(status_kb "$spid" VmHWM)")"
  stop
  # The same fixture made to dereference NULL on every request, beside satadd, at start.
  local repo2="$work/r1b"
  fixture hostile "$repo2/always" && fixture satadd "$repo2/satadd"
  sed -i 's/if (n > 0 \&\& x\[0\] == 4951) {/if (1) {/; s/misbehave(y\[0\], &inputs\[0\]);/misbehave(1, \&inputs[0]);/' "$repo2/always/cpu/hostile.c"
  start a1b --scheduler cpu-dynamic --model-repository "$repo2"
  if [ "$up" = 1 ]; then
    say "1b NULL deref on every request: server up after $started s; always: $(excerpt "$(index_of always)" 120); satadd: $(excerpt "$(add satadd 1,32767 3,1)" 3)"
    stop
  else
    say "1b NULL deref on every request: the server did not start (exit $exit_code after $started s): $(excerpt "$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -m1 '^error')" 200)"
  fi
  # satadd made to return an error (no crash) on every request, beside satadd, at start.
  local repo3="$work/r1c"
  fixture satadd "$repo3/refuses" && fixture satadd "$repo3/satadd"
  sed -i 's/^    (void)state;$/    (void)state; snprintf(err, err_len, "refuses: never"); return 1;/' "$repo3/refuses/cpu/satadd.c"
  start a1c --scheduler cpu-dynamic --model-repository "$repo3"
  if [ "$up" = 1 ]; then
    say "1c an error on every request: server up after $started s; refuses: $(excerpt "$(index_of refuses)" 120); satadd: $(excerpt "$(add satadd 1,32767 3,1)" 3)"
    stop
  else
    say "1c an error on every request: the server did not start (exit $exit_code after $started s): $(excerpt "$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -m1 '^error')" 200)"
  fi
}

# 2. A kernel that spins 15 s on a 2-item request, two such requests at once (both cores).
attack2() {
  local repo="$work/r2"
  fixture satadd "$repo/satadd" && fixture satadd "$repo/spin"
  rm -rf "$repo/spin/rtl"
  sed -i -e 's/^\[optional\]/[unused]/;/^\[unused\]/,$d' "$repo/spin/model.toml"
  printf '[cpu]\nsources = ["cpu/satadd.c"]\n' >>"$repo/spin/model.toml"
  # Spins 15 s (wall) when a request has exactly 2 items, then answers as satadd.
  sed -i 's/^int spork_kernel_run(/#include <time.h>\nstatic void spin15(void) { struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, \&a); do { clock_gettime(CLOCK_MONOTONIC, \&b); } while (b.tv_sec - a.tv_sec < 15); }\n&/' "$repo/spin/cpu/satadd.c"
  awk '/^int spork_kernel_run\(/ { f = 1 } f && /\{$/ && !done { print; print "    if (inputs[0].bytes == 4) spin15();"; done = 1; next } { print }' \
    "$repo/spin/cpu/satadd.c" >"$repo/spin/cpu/x.c" && mv "$repo/spin/cpu/x.c" "$repo/spin/cpu/satadd.c"
  start a2 --scheduler cpu-dynamic --model-repository "$repo"
  [ "$up" = 1 ] || { say "2 spin: server did not start ($(tail -n1 "$log"))"; return; }
  probe satadd
  sleep 0.5
  local t0 k pids=()
  t0="$(now)"
  for k in 1 2; do
    (
      t="$(now)"
      r="$(add spin "$k,2" 3,4)"
      printf '%s in %s s: %s\n' "${r%% *}" "$(since "$t")" "$(excerpt "${r##*was killed: }" 70)"
    ) >"$work/spin$k" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  local took
  took="$(since "$t0")"
  local after
  after="$(add spin 1,2,3 3,4,5)"
  sleep 0.5
  unprobe
  say "2 spin 15 s: server $(alive); two spinning requests, all answered in $took s: $(cat "$work/spin1"); $(cat "$work/spin2"); next 3-item request ${after%% *};" \
    "satadd $good; health $health; server RSS peak $(kib "$(status_kb "$spid" VmHWM)")"
  stop
}

# widen NAME COLUMNS: a model of x UINT8 [N, 1000] -> y UINT64 [N, COLUMNS] (8 x COLUMNS/1000 times
# the input's bytes), with an optional (brownout) part more_x -> more_y; N up to 16,384.
widen() {
  mkdir -p "$1/cpu"
  cat >"$1/model.toml" <<EOF
format = 1
description = "x widened: y[i] = x[i * 1000 / $2] as UINT64"
items = ["N"]

[dims]
N = { min = 1, max = 16384 }

[[input]]
name = "x"
datatype = "UINT8"
shape = ["N", 1000]

[[output]]
name = "y"
datatype = "UINT64"
shape = ["N", $2]

[optional]
inputs = { x = "more_x" }
outputs = { y = "more_y" }

[cpu]
sources = ["cpu/widen.c"]
EOF
  cat >"$1/cpu/widen.c" <<EOF
#include <stdint.h>
#include <stdlib.h>
#include "spork_kernel.h"
static const spork_kernel_info INFO = {SPORK_KERNEL_ABI_VERSION, "widen"};
const spork_kernel_info *spork_kernel_describe(void) { return &INFO; }
void *spork_kernel_init(const char *c, char *e, size_t n) { (void)c; (void)e; (void)n; return malloc(1); }
int spork_kernel_run(void *s, const spork_tensor *in, uint32_t ni, spork_tensor *out, uint32_t no, char *e, size_t n) {
    (void)s; (void)ni; (void)no; (void)e; (void)n;
    const uint8_t *x = (const uint8_t *)in[0].data;
    uint64_t *y = (uint64_t *)out[0].data, m = out[0].bytes / 8;
    for (uint64_t i = 0; i < m; i++) y[i] = x[i * 1000 / $2];
    return 0;
}
void spork_kernel_release(void *s) { free(s); }
EOF
}

# binary_request ROWS OPTIONAL_ROWS FILE: a widen request (binary tensors, binary answers, a 60 s
# deadline, so that it queues rather than being turned away) in FILE; prints the length of its JSON head.
binary_request() {
  local head
  head="{\"parameters\":{\"deadline_ms\":60000},\"inputs\":[{\"name\":\"x\",\"datatype\":\"UINT8\",\"shape\":[$1,1000],\"parameters\":{\"binary_data_size\":$(($1 * 1000))}},{\"name\":\"more_x\",\"datatype\":\"UINT8\",\"shape\":[$2,1000],\"parameters\":{\"binary_data_size\":$(($2 * 1000))}}],\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}},{\"name\":\"more_y\",\"parameters\":{\"binary_data\":true}}]}"
  { printf '%s' "$head"; head -c $((($1 + $2) * 1000)) /dev/zero; } >"$3"
  echo "${#head}"
}

# four OPTIONAL_ROWS TAG [curl args]: four clients at once send widen16 1 mandatory row and
# OPTIONAL_ROWS optional rows and read their answers to the end (the first 1,000 bytes kept); while
# they run, the memory budget in use, the server's RSS and its kernel processes' are sampled every
# 20 ms. Sets codes, budget_peak, rss_peak, kernel_peak.
four() {
  local rows="$1" tag="$2" hl k pids=()
  shift 2
  hl="$(binary_request 1 "$rows" "$work/$tag.body")"
  : >"$work/$tag.samples" && touch "$work/$tag.sampling"
  (
    for ((i = 0; i < 1500; i++)); do
      [ -e "$work/$tag.sampling" ] || break
      b="$(curl -s -m 5 "$url/metrics" | awk '/^spork_inflight_bytes / { print $2 }')"
      k=0
      for c in $(kids "$spid"); do k=$((k + $(status_kb "$c" VmRSS))); done
      echo "${b:-0} $(status_kb "$spid" VmRSS) $k"
      sleep 0.02
    done >>"$work/$tag.samples"
  ) &
  local sampler=$!
  for k in 1 2 3 4; do
    curl -s -m 30 "$@" -w '%{http_code}\n' -X POST -H "Inference-Header-Content-Length: $hl" \
      --data-binary @"$work/$tag.body" "$url/v2/models/widen16/infer" \
      -o >(head -c 1000 >"$work/$tag.out$k"; cat >/dev/null) >"$work/$tag.code$k" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  sleep 0.3
  rm -f "$work/$tag.sampling"
  wait "$sampler" || true
  codes="$(cat "$work/$tag.code"* | sort | uniq -c | awk '{ printf "%s%dx %s", s, $1, $2; s = ", " }')"
  budget_peak="$(awk '$1 > m { m = $1 } END { printf "%.0f MB", m / 1e6 }' "$work/$tag.samples")"
  rss_peak="$(awk '$2 > m { m = $2 } END { printf "%.0f MiB", m / 1024 }' "$work/$tag.samples")"
  kernel_peak="$(awk '$3 > m { m = $3 } END { printf "%.0f MiB", m / 1024 }' "$work/$tag.samples")"
}

# 3. Four requests at once of 1 mandatory row and 16,384 optional (brownout) rows of a model whose
# output is 16 times its input (widen16: 16 MB in, 262 MB out each); then four of 3,000 optional
# rows (51 MB each, under the per-request bound), read at 50 MB/s; and the issue's ratio, 32 times
# (widen32), whose largest request (541 MB) the default 512 MiB budget cannot hold.
attack3() {
  local repo="$work/r3"
  fixture satadd "$repo/satadd"
  widen "$repo/widen16" 2000
  widen "$repo/widen32" 4000
  start a3 --scheduler cpu-dynamic --model-repository "$repo"
  [ "$up" = 1 ] || { say "3 brownout rows: server did not start ($(tail -n1 "$log"))"; return; }
  local at_start
  at_start="server RSS after start $(kib "$(status_kb "$spid" VmRSS)") (peak at load $(kib "$(status_kb "$spid" VmHWM)")), kernel processes $(kib "$(for c in $(kids "$spid"); do status_kb "$c" VmRSS; done | awk '{ s += $1 } END { print s + 0 }')")"
  probe satadd
  four 16384 big
  local big mid
  big="widen16 x4 (1 + 16,384 optional rows): $codes, $(excerpt "$(cat "$work/big.out1")" 110); budget peak $budget_peak, server RSS peak $rss_peak, kernel processes $kernel_peak"
  four 3000 mid --limit-rate 50M
  mid="x4 (1 + 3,000 optional rows, 51 MB each): $codes; budget peak $budget_peak, server RSS peak $rss_peak, kernel processes $kernel_peak"
  unprobe
  say "3 brownout rows: server $(alive); $at_start; $big; $mid;" \
    "satadd $good; health $health; widen32: $(excerpt "$(index_of widen32)" 170)"
  stop
}

# 4. Four clients sending load calls of one model for 20 s, each dropping its connection after 50 ms.
attack4() {
  local repo="$work/r4"
  fixture satadd "$repo/satadd" && fixture satadd "$repo/loadme"
  start a4 --scheduler cpu-dynamic --model-control explicit --model-repository "$repo"
  [ "$up" = 1 ] || { say "4 load storm: server did not start ($(tail -n1 "$log"))"; return; }
  local threads0 t0 ticks0 kids0 kid
  threads0="$(status_kb "$spid" Threads)"
  ticks0="$(ticks "$spid")"
  kids0=0
  for kid in $(kids "$spid"); do kids0=$((kids0 + $(ticks "$kid"))); done
  probe satadd
  t0="$(now)"
  local pids=() c
  for c in 1 2 3 4; do
    (
      end=$(($(date +%s) + 20))
      for ((i = 0; i < 2000; i++)); do
        [ "$(date +%s)" -lt "$end" ] || break
        curl -s -o /dev/null -m 0.05 -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' \
          -d '{}' "$url/v2/repository/models/loadme/load" || true
      done >"$work/load.codes$c"
    ) &
    pids+=($!)
  done
  # One more caller that waits for its answer, while the storm runs: what a refused call says.
  local busy=""
  for ((i = 0; i < 20; i++)); do
    sleep 0.1
    busy="$(post /v2/repository/models/loadme/load '{}')"
    [ "${busy%% *}" = 503 ] && break
  done
  local most_threads=0 most_kids=0 n
  for ((i = 0; i < 250; i++)); do
    n="$(status_kb "$spid" Threads)"
    [ "$n" -gt "$most_threads" ] && most_threads=$n
    n="$(children "$spid")"
    [ "$n" -gt "$most_kids" ] && most_kids=$n
    kill -0 "${pids[0]}" 2>/dev/null || break
    sleep 0.1
  done
  wait "${pids[@]}" || true
  local wall ticks1 kids1
  wall="$(since "$t0")"
  ticks1="$(ticks "$spid")"
  kids1=0
  for kid in $(kids "$spid"); do kids1=$((kids1 + $(ticks "$kid"))); done
  sleep 1
  local calls loads codes last
  loads="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -c 'control: loaded model="loadme"' || true)"
  last="$(post /v2/repository/models/loadme/load '{}')"
  unprobe
  calls="$(cat "$work"/load.codes* | wc -l)"
  codes="$(cat "$work"/load.codes* | sort | uniq -c | awk '{ printf "%s%dx %s", s, $1, $2; s = ", " }')"
  say "4 load storm: server $(alive); $calls load calls in $wall s ($codes; 000 = dropped at 50 ms), $loads loads ran; a waiting caller: $(excerpt "$busy" 110);" \
    "server CPU $(awk -v a="$ticks0" -v b="$ticks1" -v ka="$kids0" -v kb="$kids1" -v w="$wall" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a + kb - ka) / hz / w }') cores (with its children);" \
    "threads $threads0 -> at most $most_threads; children at most $most_kids; a load after: $(excerpt "$last" 60); satadd $good; health $health"
  stop
}

# 5. A model folder whose C source #includes a FIFO (nobody writes it): at start, then a load of it
# while the server runs.
attack5() {
  local repo="$work/r5"
  fixture satadd "$repo/satadd" && fixture satadd "$repo/fifoinclude"
  mkfifo "$work/stuck.h"
  sed -i "1i #include \"$work/stuck.h\"" "$repo/fifoinclude/cpu/satadd.c"
  start_bound=40 start a5 --scheduler cpu-dynamic --build-timeout 10s --model-control explicit --model-repository "$repo"
  [ "$up" = 1 ] || { say "5 FIFO include: server did not listen within 40 s ($(tail -n1 "$log"))"; return; }
  local at_start t0 res
  at_start="$(excerpt "$(index_of fifoinclude)" 120)"
  probe satadd
  t0="$(now)"
  res="$(post /v2/repository/models/fifoinclude/load '{}')"
  local took
  took="$(since "$t0")"
  sleep 0.3
  unprobe
  say "5 FIFO include (--build-timeout 10s): listening after $listened s, ready after $started s (health meanwhile: $start_health); fifoinclude: $at_start;" \
    "a load of it while serving: ${res%% *} after $took s; satadd $good; health $health"
  stop
}

# 6. A model with min = max = 2^32 for a dimension of 8 FP64 inputs.
attack6() {
  local repo="$work/r6"
  fixture satadd "$repo/satadd" && fixture hostile "$repo/huge_dims"
  local inputs="" i
  for i in 0 1 2 3 4 5 6 7; do
    inputs+="[[input]]\nname = \"x$i\"\ndatatype = \"FP64\"\nshape = [\"N\", \"M\"]\n\n"
  done
  awk -v inputs="$inputs" '
    /^N = \{ min = 1, max = 65536 \}/ { print; print "M = { min = 4294967296, max = 4294967296 }"; next }
    /^\[\[input\]\]/ && !done { printf "%s", inputs; done = 1 }
    { print }' "$repo/huge_dims/model.toml" >"$work/m.toml" && mv "$work/m.toml" "$repo/huge_dims/model.toml"
  start a6 --scheduler cpu-dynamic --model-repository "$repo"
  [ "$up" = 1 ] || { say "6 2^32 dims: server did not start (exit $exit_code: $(tail -n1 "$log"))"; return; }
  say "6 2^32 dims x 8 FP64 inputs: server $(alive) after $started s; huge_dims: $(excerpt "$(index_of huge_dims)" 170);" \
    "satadd: $(excerpt "$(add satadd 1,32767 3,1)" 3); server RSS $(kib "$(status_kb "$spid" VmHWM)")"
  stop
}

# 7. A 21 GiB sparse file beside a model's .c (unnamed), and one named as a header.
attack7() {
  local repo="$work/r7"
  fixture satadd "$repo/satadd" && fixture satadd "$repo/bigheader"
  truncate -s 21G "$repo/satadd/cpu/huge.bin"
  truncate -s 21G "$repo/bigheader/cpu/x.h"
  sed -i 's|^sources = \["cpu/satadd.c"\]|&\nheaders = ["cpu/x.h"]|' "$repo/bigheader/model.toml"
  start a7 --scheduler cpu-dynamic --model-control explicit --model-repository "$repo"
  [ "$up" = 1 ] || { say "7 21 GiB file: server did not start ($(tail -n1 "$log"))"; return; }
  local r0 t0 res took r1
  r0="$(awk '$1 == "rchar:" { print $2 }' "/proc/$spid/io")"
  t0="$(now)"
  res="$(post /v2/repository/models/satadd/load '{}')"
  took="$(since "$t0")"
  r1="$(awk '$1 == "rchar:" { print $2 }' "/proc/$spid/io")"
  local t1 big
  t1="$(now)"
  big="$(post /v2/repository/models/bigheader/load '{}')"
  say "7 21 GiB sparse file: server started in $started s; a load of satadd (huge.bin beside its .c): ${res%% *} in $took s," \
    "the server read $(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.0f KB", (b - a) / 1000 }') meanwhile;" \
    "a 21 GiB named header: ${big%% *} in $(since "$t1") s: $(excerpt "${big#* }" 150)"
  stop
}

# 8. Sources outside the folder (../, absolute), a source named as a flag, and a compiler error of
# megabytes.
attack8() {
  local repo="$work/r8" m
  fixture satadd "$repo/satadd"
  for m in dotdot absolute flag noisy; do fixture satadd "$repo/$m"; done
  sed -i 's|^sources = \["cpu/satadd.c"\]|sources = ["../satadd/cpu/satadd.c"]|' "$repo/dotdot/model.toml"
  sed -i "s|^sources = \[\"cpu/satadd.c\"\]|sources = [\"$repo/satadd/cpu/satadd.c\"]|" "$repo/absolute/model.toml"
  sed -i 's|^sources = \["cpu/satadd.c"\]|sources = ["-fplugin=evil.c"]|' "$repo/flag/model.toml"
  echo 'int x;' >"$repo/flag/-fplugin=evil.c"
  # 20,000 lines, each an error: about 2 MB of compiler output.
  awk 'BEGIN { for (i = 0; i < 20000; i++) printf "int v%d = ;\n", i }' >>"$repo/noisy/cpu/satadd.c"
  local noise
  noise="$(cc -fsyntax-only -I "$root/kernel-abi/include" "$repo/noisy/cpu/satadd.c" 2>&1 | wc -c || true)"
  start a8 --scheduler cpu-dynamic --model-control explicit --model-repository "$repo"
  [ "$up" = 1 ] || { say "8 paths and flags: server did not start ($(tail -n1 "$log"))"; return; }
  local line res
  line="8 paths, flags, noise (noisy's compiler output: $noise B): server $(alive);"
  for m in dotdot absolute flag noisy; do
    res="$(post "/v2/repository/models/$m/load" '{}')"
    line+=" $m: load ${res%% *} ($((${#res} - 4)) B body: $(excerpt "${res#*"failed to load '$m': "}" 150)), index reason $(index_of "$m" | wc -c) B;"
  done
  say "$line satadd: $(excerpt "$(add satadd 1,32767 3,1)" 3)"
  stop
}

# 9. The repository API with no token: a plain server, then --model-control explicit on loopback,
# then with a control token.
attack9() {
  local unload=/v2/repository/models/sobel/unload load=/v2/repository/models/sobel/load
  start a9a
  [ "$up" = 1 ] || { say "9 control: server did not start ($(tail -n1 "$log"))"; return; }
  local u l
  u="$(curl -s -m 10 -w ' %{http_code}' -X POST "$url$unload")"
  l="$(curl -s -m 10 -w ' %{http_code}' -X POST -H 'Content-Type: text/plain' -d '{}' "$url$load")"
  local line
  line="9 repository API: plain serve: unload with no token ${u##* } ($(excerpt "$u" 90)), text/plain load ${l##* }, sobel ready $(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url/v2/models/sobel/ready");"
  stop
  start a9b --model-control explicit
  local x o j
  x="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: text/plain' -d '{}' "$url$unload")"
  o="$(curl -s -m 10 -w ' %{http_code}' -X POST -H 'Origin: http://evil.example' -H 'Content-Type: application/json' -d '{}' "$url$unload")"
  j="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "$url$unload")"
  line+=" explicit, loopback, no token: text/plain unload $x, with Origin ${o##* } ($(excerpt "$o" 60)), JSON unload $j;"
  stop
  echo "attacks-control-token-0123456789" >"$work/control"
  start a9c --model-control explicit --control-token-file "$work/control"
  j="$(curl -s -m 10 -w ' %{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "$url$unload")"
  local t
  t="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer attacks-control-token-0123456789' "$url$unload")"
  say "$line with --control-token-file: JSON unload with no token ${j##* } ($(excerpt "$j" 40)), with the token $t"
  stop
}

say "spork attacks: $("$bin" --version) at ${SPORK_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")};" \
  "$(nproc) cores, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
for r in "${chosen[@]}"; do
  case "$r" in
    [1-9]) "attack$r" ;;
    *) echo "no attack $r (1-9)" >&2 ;;
  esac
done
