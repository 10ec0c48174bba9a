"""One request in flight: the latency the Python tritonclient sees from a server's `sobel` model.

Sends `--requests` images of `--size` HxW (after `--warmup` unmeasured ones) over HTTP or gRPC, one
at a time, checks every answer against numpy's Sobel (min(255, |Gx| + |Gy|) of the interior) and
prints one JSON line: server label, protocol, size, p50/p99/mean in ms, requests and mismatches.
Exits non-zero on any wrong answer or error: a fast wrong server is not a result.
    python lone.py --url 127.0.0.1:8000 --protocol http --model sobel --size 16x16 --label spork
"""
import argparse
import json
import sys
import time

import numpy as np

from sobel_ref import sobel


def client(protocol, url):
    if protocol == "http":
        import tritonclient.http as t
    else:
        import tritonclient.grpc as t
    return t, t.InferenceServerClient(url=url)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--protocol", choices=("http", "grpc"), required=True)
    ap.add_argument("--model", default="sobel")
    ap.add_argument("--size", default="16x16", help="HxW of each image")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--label", default="server")
    a = ap.parse_args()
    try:
        h, w = (int(v) for v in a.size.lower().split("x"))
    except ValueError:
        ap.error(f"--size {a.size!r}: give HxW, e.g. 16x16")
    if h < 3 or w < 3:
        ap.error(f"--size {a.size}: sobel needs an image of at least 3x3")
    t, c = client(a.protocol, a.url)
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, size=(h, w), dtype=np.uint8) for _ in range(16)]
    expected = [sobel(i) for i in images]
    lat, wrong = [], 0
    for n in range(a.warmup + a.requests):
        k = n % len(images)
        inp = t.InferInput("image", [h, w], "UINT8")
        if a.protocol == "http":
            inp.set_data_from_numpy(images[k], binary_data=True)
            out = [t.InferRequestedOutput("magnitudes", binary_data=True)]
        else:
            inp.set_data_from_numpy(images[k])
            out = [t.InferRequestedOutput("magnitudes")]
        start = time.perf_counter()
        r = c.infer(a.model, [inp], outputs=out)
        took = time.perf_counter() - start
        got = r.as_numpy("magnitudes")
        if got is None or got.shape != expected[k].shape or not np.array_equal(got, expected[k]):
            wrong += 1
        if n >= a.warmup:
            lat.append(took * 1e3)
    ms = np.array(lat)
    print(json.dumps({"label": a.label, "protocol": a.protocol, "size": a.size, "requests": len(lat),
                      "wrong": wrong, "p50_ms": float(np.percentile(ms, 50)),
                      "p99_ms": float(np.percentile(ms, 99)), "mean_ms": float(ms.mean())}))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
