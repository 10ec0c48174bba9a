#!/usr/bin/env python3
"""Latency of `spork serve` through the clients users run: tritonclient.http and tritonclient.grpc,
one request in flight, `sobel` at 16x16 and 256x256. Prints p50/p99 per client and size, checks the
answers are equal between the two, and fails (exit 1) when one protocol's p50 is over BOUND times
the other's (a generous guard against regressions such as Nagle's 40 ms on gRPC, not a timed test).

    $VENV_PYTHON scripts/latency-guard.py --http 127.0.0.1:8000 --grpc 127.0.0.1:8001 [--calls 500]
"""

import argparse
import sys
import time

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

BOUND = 3.0


def measure(call, calls):
    for _ in range(20):  # warm-up
        call()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e3, times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http", required=True)
    p.add_argument("--grpc", required=True)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--token")
    a = p.parse_args()
    if not 1 <= a.calls <= 100_000:
        print("--calls must be from 1 to 100000", file=sys.stderr)
        return 2
    headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
    h = httpclient.InferenceServerClient(a.http, connection_timeout=10, network_timeout=10)
    g = grpcclient.InferenceServerClient(a.grpc)
    failed = False
    print(f"{'size':>9} {'client':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for side in (16, 256):
        image = (np.arange(side * side) % 251).astype(np.uint8).reshape(side, side)
        hi = httpclient.InferInput("image", list(image.shape), "UINT8")
        hi.set_data_from_numpy(image, binary_data=True)
        gi = grpcclient.InferInput("image", list(image.shape), "UINT8")
        gi.set_data_from_numpy(image)

        def via_http():
            return h.infer("sobel", [hi], headers=headers, timeout=10).as_numpy("magnitudes")

        def via_grpc():
            return g.infer("sobel", [gi], headers=headers, client_timeout=10).as_numpy("magnitudes")

        if not np.array_equal(via_http(), via_grpc()):
            print(f"{side}x{side}: HTTP and gRPC answers differ")
            failed = True
        p50 = {}
        for name, call in (("http", via_http), ("grpc", via_grpc)):
            p50[name], p99 = measure(call, a.calls)
            print(f"{side:>4}x{side:<4} {name:>6} {p50[name]:>8.3f} {p99:>8.3f}")
        ratio = max(p50.values()) / max(min(p50.values()), 1e-6)
        if ratio > BOUND:
            print(f"{side}x{side}: p50 differs {ratio:.1f}x between the protocols (bound {BOUND}x)")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
