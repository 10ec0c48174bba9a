#!/usr/bin/env python3
"""Dynamic batching on and off, live and in the evaluator, for Sobel requests of three sizes on the
emulated board with the default board invocation (50 us plus the bytes at 9 GB/s).

For each size (a 16x16 and a 64x64 image, by their CPU time on this machine, and a 1 ms request),
each rate, batching off and on (--max-batch-size 16, 100 us delay) and each run, `spork run --json`
serves a generated trace live (SporkE, 1 s reconfiguration) and reports the evaluator's prediction of
the same trace beside. Prints per step the medians over the runs (live p99, misses, energy per
request, FPGA share, mean batch; the evaluator's misses and energy per request) and, per size, the
highest rate whose live p99 stays under the deadline in every run.
    scripts/batching-table.py [--spork BIN] [--runs 3] [--seconds 10] [--out FILE]
Deadlines: 1 ms for the two images (ten times their size would be 12 us and 190 us, under the board's
50 us invocation alone), ten times the size (10 ms) for 1 ms requests.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# (label, CPU time of one request, deadline, rates)
SIZES = [
    ("16x16", 256, "1ms", [5000, 10000, 20000]),
    ("64x64", 4096, "1ms", [2000, 5000, 10000]),
    ("1 ms", None, "10ms", [400, 800, 1200, 1600]),
]


def seconds(d):
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    for u in ("ns", "us", "ms", "s"):
        if d.endswith(u):
            return float(d[: -len(u)]) * units[u]
    raise ValueError(d)


def items_per_second(spork):
    """The Sobel reference's speed on this machine, as `spork run` calibrates it."""
    out = subprocess.run([spork, "run", "--kernel", "sobel", "--board", "model", "--duration", "1s", "--size",
                          "1ms", "--rate", "10", "--scheduler", "cpu-dynamic", "--fpga-spinup", "1s", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["cpu_items_per_s"]


def run(spork, size_s, deadline_s, rate, batching, secs):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(f"[requests]\ndeadline_factor = {deadline_s / size_s:.6g}\n")
        profile = f.name
    cmd = [spork, "run", "--kernel", "sobel", "--board", "model", "--duration", f"{secs}s",
           "--size", f"{size_s * 1e9:.0f}ns", "--rate", str(rate), "--scheduler", "spork-e",
           "--fpga-spinup", "1s", "--config", profile, "--json"]
    if batching:
        cmd += ["--max-batch-size", "16"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs * 4 + 60)
    finally:
        os.unlink(profile)
    if out.returncode != 0:
        sys.exit(f"spork run failed: {' '.join(cmd)}\n{out.stderr}")
    r = json.loads(out.stdout)["runs"][0]
    n = max(r["answered"] + r["rejected"], 1)
    batches, members = r.get("batches") or (0, 0)
    return {"p99_ms": r["p99_ms"], "miss": 100 * r["miss_share"], "rejected": r["rejected"],
            "mj": 1e3 * sum(r["energy_j"].values()) / n, "fpga": 100 * r["fpga_share"],
            "batch": members / batches if batches else 0.0,
            "eval_miss": 100 * r["evaluator"]["miss_share"], "eval_mj": 1e3 * sum(r["evaluator"]["energy_j"]) / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spork", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/spork"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--out", help="also write every run as a JSON line here")
    a = ap.parse_args()
    rate = items_per_second(a.spork)
    sink = open(a.out, "a") if a.out else None
    print(f"Sobel reference: {rate:.3g} items/s on this machine; SporkE, model board, invocation 50 us + 9 GB/s; "
          f"{a.runs} runs of {a.seconds} s per step, medians\n")
    print("| size (deadline) | rate/s | batching | live p99 ms | live misses % | mJ/request | FPGA share % "
          "| mean batch | evaluator misses % | evaluator mJ/request |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    held = {}
    for label, items, deadline, rates in SIZES:
        size_s = items / rate if items else 1e-3
        d = seconds(deadline)
        for r_ in rates:
            for batching in (False, True):
                ms = [run(a.spork, size_s, d, r_, batching, a.seconds) for _ in range(a.runs)]
                if sink:
                    for m in ms:
                        sink.write(json.dumps(dict(m, size=label, rate=r_, batching=batching)) + "\n")
                    sink.flush()
                med = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
                key = (label, batching)
                if all(m["p99_ms"] <= d * 1e3 and m["rejected"] == 0 for m in ms) and held.get(key, 0) == prev(rates, r_):
                    held[key] = r_
                print(f"| {label} ({deadline}) | {r_} | {'on' if batching else 'off'} | {med['p99_ms']:.2f} "
                      f"| {med['miss']:.2f} | {med['mj']:.2f} | {med['fpga']:.1f} | {med['batch']:.2f} "
                      f"| {med['eval_miss']:.2f} | {med['eval_mj']:.2f} |", flush=True)
    print("\nhighest rate with live p99 under the deadline (and nothing rejected) in every run, stepping up:")
    for label, _, deadline, _ in SIZES:
        print(f"  {label} ({deadline}): batching off {held.get((label, False), 0)}/s, "
              f"on {held.get((label, True), 0)}/s")


def prev(rates, r):
    i = rates.index(r)
    return rates[i - 1] if i else 0


if __name__ == "__main__":
    main()
