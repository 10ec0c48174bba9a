"""Tables from side_by_side.py's measurements.jsonl: medians over the runs, the spread beside.
    python summarise.py OUT/measurements.jsonl [--deadline-ms 10]
Lone requests: p50 / p99 in ms per protocol and image size. Load: p99 (ms) and misses per rate, and
the highest rate each server holds with p99 under the deadline in every run. The machine's share
left to the server is (cores - the load generator's measured cores) / 1 ms."""
import argparse
import json
import os
import statistics
from collections import defaultdict


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return f"{min(xs):.2f}-{max(xs):.2f}" if len(xs) > 1 else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements")
    ap.add_argument("--deadline-ms", type=float, default=10.0)
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.measurements) if line.strip()]
    servers = list(dict.fromkeys(r["server"] for r in rows))
    runs = len({r["run"] for r in rows})
    print(f"\n{runs} run(s); medians over runs (min-max in brackets)\n")

    lone = defaultdict(lambda: defaultdict(list))
    for r in (r for r in rows if r["kind"] == "lone"):
        lone[(r["protocol"], r["size"])][r["server"]].append(r)
    print("| one in flight, tritonclient, p50 / p99 ms | " + " | ".join(servers) + " |")
    print("|---" * (len(servers) + 1) + "|")
    for (protocol, size), by in lone.items():
        cells = []
        for s in servers:
            p50 = [m["p50_ms"] for m in by.get(s, [])]
            p99 = [m["p99_ms"] for m in by.get(s, [])]
            cells.append((f"{med(p50):.2f} / {med(p99):.2f}" + (f" [{spread(p50)}]" if len(p50) > 1 else ""))
                         if p50 else "-")
        print(f"| {protocol} {size} | " + " | ".join(cells) + " |")

    load = defaultdict(lambda: defaultdict(list))
    for r in (r for r in rows if r["kind"] == "load"):
        load[r["rate"]][r["server"]].append(r)
    print(f"\n| spork load, 1 ms sobel, {a.deadline_ms:g} ms deadline: p99 ms (misses %) | "
          + " | ".join(servers) + " | load generator: cores (left to the server: 1 ms requests/s) |")
    print("|---" * (len(servers) + 2) + "|")
    for rate in sorted(load):
        cells, gen = [], []
        for s in servers:
            ms = load[rate].get(s, [])
            if not ms:
                cells.append("-")
                continue
            p99 = [m["p99_ms"] for m in ms]
            miss = [100 * m["missed"] / max(m["ok"], 1) for m in ms]
            err = sum(m["errors"] for m in ms)
            cells.append(f"{med(p99):.1f} ({med(miss):.2f}%)" + (f" {err} errors" if err else "")
                         + (f" [{spread(p99)}]" if len(p99) > 1 else ""))
            gen += [m["loadgen_cores"] for m in ms]
        left = ((os.cpu_count() or 1) - med(gen)) * 1000
        print(f"| {rate}/s | " + " | ".join(cells) + f" | {med(gen):.2f} ({left:.0f}/s) |")
    print(f"\nhighest rate with p99 <= {a.deadline_ms:g} ms in every run (stepping up from the lowest): "
          + ", ".join(f"{s} {held(load, s, a.deadline_ms)}/s" for s in servers))


def held(load, server, deadline_ms):
    """The highest rate before the first (stepping up) where some run's p99 passed the deadline or
    a request failed; 0 if the lowest already did."""
    best = 0
    for rate in sorted(load):
        ms = load[rate].get(server, [])
        if not ms:
            continue
        if any(m["p99_ms"] > deadline_ms or m["errors"] for m in ms):
            break
        best = rate
    return best


if __name__ == "__main__":
    main()
