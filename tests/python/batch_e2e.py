#!/usr/bin/env python3
"""A batching repository model (satadd with [batching] along N) served by `spork serve`, driven by
tritonclient over HTTP from many threads at once, so requests arrive close together and the server
stacks them into batches on the simulated board.

Checks: every answer equals a numpy reference of the model (saturating INT16 add), whichever worker
served it and however its batch was cut. Bounded: a number of requests per thread (more, up to
--max-requests, while fewer than --until-fpga answers came from a board: on a fast machine the first
requests can all be served before the board has spun up) and a time limit. Prints a JSON summary on
the last line; exits non-zero if any answer was wrong.
"""

import argparse
import collections
import json
import threading
import time

import numpy as np
import tritonclient.http as th


def satadd_ref(a, b):
    return np.clip(a.astype(np.int32) + b.astype(np.int32), -32768, 32767).astype(np.int16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", required=True)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--requests", type=int, default=100, help="per thread")
    ap.add_argument("--seconds", type=float, default=60.0, help="time limit")
    ap.add_argument("--until-fpga", type=int, default=0, help="keep sending until this many board answers")
    ap.add_argument("--max-requests", type=int, default=0, help="per thread, with --until-fpga")
    args = ap.parse_args()
    kinds = collections.Counter()
    errors = []
    # A thread's exception (SystemExit included) does not end the process: wrong answers are
    # collected here and fail it from the main thread.
    wrong = []
    lock = threading.Lock()
    stop_at = time.monotonic() + args.seconds

    def worker(seed):
        rng = np.random.default_rng(seed)
        client = th.InferenceServerClient(args.http)

        def more(sent):
            if time.monotonic() > stop_at or wrong:
                return False
            if sent < args.requests:
                return True
            with lock:
                short = kinds["fpga"] < args.until_fpga
            return short and sent < args.max_requests

        sent = 0
        while more(sent):
            sent += 1
            n = int(rng.integers(1, 512))
            a = rng.integers(-32768, 32768, size=n, dtype=np.int16)
            b = rng.integers(-32768, 32768, size=n, dtype=np.int16)
            ia = th.InferInput("a", [n], "INT16")
            ia.set_data_from_numpy(a)
            ib = th.InferInput("b", [n], "INT16")
            ib.set_data_from_numpy(b)
            try:
                r = client.infer("satadd", [ia, ib], parameters={"deadline_ms": 2000})
            except Exception as e:  # counted and reported: a refusal is not a wrong answer
                with lock:
                    errors.append(str(e))
                continue
            got = r.as_numpy("sum")
            if not np.array_equal(got, satadd_ref(a, b)):
                with lock:
                    wrong.append(f"wrong sums for n={n} from {r.get_response()['parameters']}")
                return
            with lock:
                kinds[r.get_response()["parameters"]["worker_kind"]] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    summary = {"answered": dict(kinds), "refused": len(errors), "first_refusal": errors[:1]}
    print(json.dumps(summary))
    if wrong:
        raise SystemExit(f"{len(wrong)} wrong answer(s), the first: {wrong[0]}")
    if sum(kinds.values()) == 0:
        raise SystemExit("no answer at all")


if __name__ == "__main__":
    main()
