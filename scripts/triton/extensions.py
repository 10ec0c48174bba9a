"""What Triton's own clients read, from Spork and from a real Triton, side by side.

For each server (spork serve; Triton 2.51 with the C++ backend of spork_sobel_backend.cc), on
loopback ports, with the Python tritonclient: `get_model_config` over HTTP and gRPC; `--requests`
lone 64x64 `sobel` requests over gRPC, then `get_inference_statistics` over both protocols; one
gRPC stream (`start_stream` / `async_stream_infer`) of `--stream` requests with their ids, every
answer checked against numpy's Sobel, and one request for a model that does not exist on the same
stream. Prints what each server answered, one line per figure. Run through extensions.sh.
"""
import argparse
import json
import os
import queue
import sys
import time

import numpy as np

import side_by_side as sbs
from sobel_ref import sobel

SERVERS = ("spork", "triton-cpp")


def config(url_http, url_grpc):
    import tritonclient.grpc as g
    import tritonclient.http as h
    over_http = h.InferenceServerClient(url_http).get_model_config("sobel")
    msg = g.InferenceServerClient(url_grpc).get_model_config("sobel").config
    tensors = lambda ts: [(t["name"], t["data_type"], t["dims"]) for t in ts]
    return {
        "http": {k: over_http.get(k) for k in ("name", "platform", "backend", "max_batch_size")}
        | {"input": tensors(over_http.get("input", [])), "output": tensors(over_http.get("output", [])),
           "instance_group": [(g.get("name"), g.get("kind"), g.get("count")) for g in over_http.get("instance_group", [])],
           "keys": sorted(over_http)},
        "grpc": {"name": msg.name, "backend": msg.backend, "max_batch_size": msg.max_batch_size,
                 "inputs": [(i.name, list(i.dims)) for i in msg.input],
                 "outputs": [(o.name, list(o.dims)) for o in msg.output]},
    }


def image(rng):
    return rng.integers(0, 256, size=(64, 64), dtype=np.uint8)


def statistics(url_http, url_grpc, requests):
    import tritonclient.grpc as g
    import tritonclient.http as h
    c = g.InferenceServerClient(url_grpc)
    rng = np.random.default_rng(3)
    for _ in range(requests):
        img = image(rng)
        inp = g.InferInput("image", [64, 64], "UINT8")
        inp.set_data_from_numpy(img)
        got = c.infer("sobel", [inp]).as_numpy("magnitudes")
        assert np.array_equal(got, sobel(img)), "a wrong answer"
    s = h.InferenceServerClient(url_http).get_inference_statistics("sobel")["model_stats"][0]
    m = c.get_inference_statistics("sobel").model_stats[0]
    inf = s["inference_stats"]
    mean_us = lambda d: round(d["ns"] / d["count"] / 1e3, 1) if d["count"] else None
    return {
        "http": {"inference_count": s["inference_count"], "execution_count": s["execution_count"],
                 **{f"{k} (count, mean us)": (inf[k]["count"], mean_us(inf[k]))
                    for k in ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")},
                 "batch_stats": [(b["batch_size"], b["compute_infer"]["count"]) for b in s["batch_stats"]],
                 "other keys": sorted(set(s) - {"name", "version", "last_inference", "inference_count",
                                                "execution_count", "inference_stats", "batch_stats"})},
        "grpc": {"success.count": m.inference_stats.success.count,
                 "compute_infer.count": m.inference_stats.compute_infer.count,
                 "same as HTTP": m.inference_stats.success.count == inf["success"]["count"]},
    }


def stream(url_grpc, n):
    import tritonclient.grpc as g
    answers = queue.Queue()
    c = g.InferenceServerClient(url_grpc)
    rng = np.random.default_rng(5)
    images = {}
    c.start_stream(callback=lambda result, error: answers.put((result, error)))
    start = time.perf_counter()
    for k in range(n):
        images[f"r{k}"] = img = image(rng)
        inp = g.InferInput("image", [64, 64], "UINT8")
        inp.set_data_from_numpy(img)
        # A deadline a burst of them can meet on one core: Spork refuses what it cannot finish in time.
        c.async_stream_infer("sobel", [inp], request_id=f"r{k}", parameters={"deadline_ms": 2000})
    inp = g.InferInput("image", [64, 64], "UINT8")
    inp.set_data_from_numpy(image(rng))
    c.async_stream_infer("no-such-model", [inp], request_id="bad")
    ok, wrong, errors, order = 0, 0, [], []
    end = time.monotonic() + 60
    while ok + wrong + len(errors) < n + 1 and time.monotonic() < end:
        result, error = answers.get(timeout=max(0.1, end - time.monotonic()))
        if error is not None:
            errors.append(str(error))
            continue
        rid = result.get_response().id
        order.append(int(rid[1:]))
        good = np.array_equal(result.as_numpy("magnitudes"), sobel(images[rid]))
        ok, wrong = ok + good, wrong + (not good)
    took = time.perf_counter() - start
    c.stop_stream()
    in_order = order == sorted(order)
    kinds = {}
    for e in errors:
        kinds[e[:90]] = kinds.get(e[:90], 0) + 1
    return {"answered": ok, "wrong": wrong, "errors (message: count)": kinds, "seconds": round(took, 3),
            "answers in the order sent": in_order}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spork", required=True)
    ap.add_argument("--triton-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--stream", type=int, default=200)
    a = ap.parse_args()
    a.priority, a.spork_arg = "normal", []
    os.makedirs(a.out, exist_ok=True)
    env = dict(line.strip().split("=", 1) for line in open(os.path.join(a.triton_dir, "env.sh")) if "=" in line)
    env = {k: v.strip('"') for k, v in env.items()}
    urls = (f"127.0.0.1:{sbs.HTTP}", f"127.0.0.1:{sbs.GRPC}")
    for server in SERVERS:
        proc = sbs.start("spork-cpu" if server == "spork" else server, a, env)
        try:
            sbs.wait_ready(proc)
            found = {"config": config(*urls), "statistics": statistics(*urls, a.requests),
                     "stream": stream(urls[1], a.stream)}
        finally:
            sbs.stop(proc)
        for part, sides in found.items():
            for side, values in (sides.items() if part != "stream" else [("grpc", sides)]):
                for k, v in values.items():
                    print(f"{server:10} {part:10} {side:4} {k}: {json.dumps(v)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
