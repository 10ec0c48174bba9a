#!/usr/bin/env python3
"""Repository models served by `spork serve --model-repository`, driven by tritonclient (HTTP and gRPC).

Checks, each answer against a numpy reference of the model (satadd: saturating INT16 add; crc8:
CRC-8/SMBUS of each row):
  1. the repository index over both protocols: the good models READY, the broken one UNAVAILABLE
     with its reason;
  2. answers over HTTP (binary) and gRPC equal the reference;
  3. a load stream on satadd (threads, bounded in time) whose answers all equal the reference and
     include answers from the simulated board, while crc8 is unloaded (then refused with 404) and
     loaded again by tritonclient; nothing on satadd is lost;
  4. bad requests get their status and a message naming the problem.
Prints a JSON summary on the last line; exits non-zero on the first failure.
"""

import argparse
import collections
import json
import sys
import threading
import time

import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException


def crc8(row):
    c = 0
    for b in row:
        c ^= int(b)
        for _ in range(8):
            c = ((c << 1) ^ 0x07) & 0xFF if c & 0x80 else (c << 1) & 0xFF
    return c


def satadd_ref(a, b):
    return np.clip(a.astype(np.int32) + b.astype(np.int32), -32768, 32767).astype(np.int16)


def satadd(mod, client, rng, n, deadline_ms=5000):
    a = rng.integers(-32768, 32768, size=n, dtype=np.int16)
    b = rng.integers(-32768, 32768, size=n, dtype=np.int16)
    ia = mod.InferInput("a", [n], "INT16")
    ia.set_data_from_numpy(a)
    ib = mod.InferInput("b", [n], "INT16")
    ib.set_data_from_numpy(b)
    r = client.infer("satadd", [ia, ib], parameters={"deadline_ms": deadline_ms})
    got = r.as_numpy("sum")
    assert np.array_equal(got, satadd_ref(a, b)), f"satadd over {mod.__name__}: wrong sums for n={n}"
    return r


def kind_of(mod, r):
    if mod is th:
        return r.get_response()["parameters"]["worker_kind"]
    return r.get_response().parameters["worker_kind"].string_param


def crc(mod, client, rng, rows, cols):
    x = rng.integers(0, 256, size=(rows, cols), dtype=np.uint8)
    i = mod.InferInput("rows", [rows, cols], "UINT8")
    i.set_data_from_numpy(x)
    r = client.infer("crc8", [i], parameters={"deadline_ms": 5000})
    assert list(r.as_numpy("crc")) == [crc8(row) for row in x], f"crc8 over {mod.__name__}: wrong CRCs"
    return r


def index_states(entries):
    return {e["name"]: (e["state"], e.get("reason", "")) for e in entries}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http", required=True)
    p.add_argument("--grpc", required=True)
    p.add_argument("--broken", required=True, help="a model of the repository that must fail to load")
    p.add_argument("--seconds", type=float, default=15.0, help="most time the load stream runs")
    p.add_argument("--fpga-answers", type=int, default=20, help="board answers the stream waits for")
    a = p.parse_args()
    h = th.InferenceServerClient(a.http)
    g = tg.InferenceServerClient(a.grpc)
    rng = np.random.default_rng(7)
    summary = {}

    # 1. The index, both protocols.
    for name, idx in (("http", h.get_model_repository_index()), ("grpc", g.get_model_repository_index(as_json=True)["models"])):
        states = index_states(idx)
        assert states["satadd"][0] == "READY" and states["crc8"][0] == "READY", f"{name} index: {states}"
        state, reason = states[a.broken]
        assert state == "UNAVAILABLE" and "ABI version" in reason, f"{name} index: {a.broken} {state} {reason!r}"
    summary["index"] = "ok"

    # 2. Answers over both protocols, edge sizes included.
    for mod, client in ((th, h), (tg, g)):
        for n in (1, 2, 1000, 65536):
            satadd(mod, client, rng, n)
        for rows, cols in ((1, 1), (7, 33), (64, 1024)):
            crc(mod, client, rng, rows, cols)
    summary["answers"] = "ok"

    # 3. A load on satadd while crc8 is unloaded and loaded again.
    kinds = collections.Counter()
    failures = []
    stop = time.time() + a.seconds
    lock = threading.Lock()

    def stream(seed):
        c = th.InferenceServerClient(a.http)
        r = np.random.default_rng(seed)
        while time.time() < stop:
            with lock:
                if kinds["fpga"] >= a.fpga_answers and kinds["control_done"]:
                    return
            try:
                k = kind_of(th, satadd(th, c, r, int(r.integers(512, 8192))))
            except InferenceServerException as e:
                # An explicit refusal under load is counted, not lost; anything else fails the run.
                k = "refused" if e.status() == "429" else None
                if k is None:
                    with lock:
                        failures.append(str(e))
                    return
            except AssertionError as e:
                with lock:
                    failures.append(str(e))
                return
            with lock:
                kinds[k] += 1

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    h.unload_model("crc8")
    states = index_states(h.get_model_repository_index())
    assert states["crc8"] == ("UNAVAILABLE", "unloaded"), f"after unload: {states['crc8']}"
    try:
        crc(th, h, rng, 2, 2)
        raise AssertionError("crc8 answered after its unload")
    except InferenceServerException as e:
        assert e.status() == "404", f"crc8 after unload: {e.status()} {e}"
    g.load_model("crc8")
    crc(tg, g, rng, 5, 17)
    with lock:
        kinds["control_done"] = 1
    for t in threads:
        t.join()
    assert not failures, f"the stream failed: {failures[:3]}"
    assert kinds["fpga"] >= 1, f"no answer came from the simulated board: {dict(kinds)}"
    summary["stream"] = {k: v for k, v in kinds.items() if k != "control_done"}

    # 4. Bad requests.
    bad = []
    for what, call in (
        ("N disagrees", lambda: h.infer("satadd", [inp(th, "a", np.zeros(3, np.int16)), inp(th, "b", np.zeros(4, np.int16))])),
        ("wrong type", lambda: h.infer("satadd", [inp(th, "a", np.zeros(3, np.int32)), inp(th, "b", np.zeros(3, np.int16))])),
        ("too long", lambda: g.infer("satadd", [inp(tg, "a", np.zeros(70000, np.int16)), inp(tg, "b", np.zeros(70000, np.int16))])),
        ("unknown model", lambda: h.infer("nosuch", [inp(th, "a", np.zeros(3, np.int16))])),
        ("load unknown", lambda: h.load_model("nosuch")),
    ):
        try:
            call()
            raise AssertionError(f"{what}: accepted")
        except InferenceServerException as e:
            bad.append((what, e.status(), e.message()[:120]))
    statuses = {w: s for w, s, _ in bad}
    assert statuses["N disagrees"] == "400" and statuses["wrong type"] == "400", bad
    assert statuses["too long"] == "StatusCode.INVALID_ARGUMENT", bad
    assert statuses["unknown model"] == "404" and statuses["load unknown"] == "400", bad
    messages = {w: m for w, _, m in bad}
    assert "another input has N" in messages["N disagrees"], bad
    assert "must be INT16" in messages["wrong type"], bad
    assert "outside 1..=65536" in messages["too long"], bad
    summary["bad"] = bad
    print(json.dumps(summary))


def inp(mod, name, x):
    dt = {np.int16: "INT16", np.int32: "INT32", np.uint8: "UINT8"}[x.dtype.type]
    i = mod.InferInput(name, list(x.shape), dt)
    i.set_data_from_numpy(x)
    return i


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
