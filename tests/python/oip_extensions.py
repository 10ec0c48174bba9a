"""Part C of oip_e2e.py: the statistics extension and gRPC streaming, through tritonclient.

Statistics: after part A (every case over five transport variants, nothing else sent), each model's
`get_inference_statistics` over HTTP and gRPC must count exactly the successes part A made, with
every duration counted once per success; the two protocols must agree; the call for every model
must list every model; an unknown model is an error.

Streaming: every case is sent twenty times on one gRPC stream (`start_stream` / `async_stream_infer`), each
with its own request id, together with a request for a model that does not exist; every case's
answer must come back with its id and its expected outputs, the bad request as an error naming
the model, and the stream must stay open throughout. Bounded: one stream, one pass, a 30 s wait.
"""

import queue
import time

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

STREAM_WAIT_S = 30.0
# Each case this many times on the stream: more than the server runs of one stream at once (32).
STREAM_ROUNDS = 20
DURATIONS = ("success", "queue", "compute_input", "compute_infer", "compute_output")


def expected_successes(cases, models, passed_all, variants):
    """What part A asked of each model: each case over `variants` transports."""
    assert passed_all, "part A had failures: the statistics' exact counts cannot be checked"
    return {m: variants * sum(1 for c in cases if c.model == m) for m in models}


def check_http_statistics(client, token, expected, served, http_auth):
    """tritonclient.http get_inference_statistics: Triton's JSON, counted exactly."""
    for model, want in expected.items():
        stats = client.get_inference_statistics(model, headers=http_auth(token))
        [s] = stats["model_stats"]
        assert s["name"] == model and s["version"] == "1", f"HTTP stats: {s['name']} {s['version']}"
        inf = s["inference_stats"]
        assert inf["success"]["count"] == want, \
            f"HTTP stats {model}: {inf['success']['count']} successes, part A made {want}"
        assert s["inference_count"] == want, f"HTTP stats {model}: inference_count {s['inference_count']}"
        for d in DURATIONS:
            assert inf[d]["count"] == want, f"HTTP stats {model}: {d} counted {inf[d]['count']}"
        assert inf["success"]["ns"] > inf["compute_infer"]["ns"] > 0, \
            f"HTTP stats {model}: success {inf['success']['ns']} ns, infer {inf['compute_infer']['ns']} ns"
        assert inf["fail"]["count"] == 0, f"HTTP stats {model}: {inf['fail']['count']} failures"
        assert s["last_inference"] > 1_600_000_000_000, f"HTTP stats {model}: {s['last_inference']}"
        executions = sum(b["compute_infer"]["count"] for b in s["batch_stats"])
        assert executions == s["execution_count"] and 0 < executions <= want, \
            f"HTTP stats {model}: {executions} executions in batch_stats, {s['execution_count']} in all"
        kinds = {k["kind"]: k for k in s["spork_worker_kinds"]}
        assert sum(k["compute_infer"]["count"] for k in kinds.values()) == want, \
            f"HTTP stats {model}: the worker kinds count {kinds}"
    every = client.get_inference_statistics(headers=http_auth(token))
    names = sorted(s["name"] for s in every["model_stats"])
    assert names == sorted(served), f"HTTP stats of every model: {names}, served {sorted(served)}"
    try:
        client.get_inference_statistics("no-such-model", headers=http_auth(token))
    except InferenceServerException as e:
        assert "no-such-model" in e.message(), f"HTTP stats of an unknown model: {e.message()}"
    else:
        raise AssertionError("HTTP stats of an unknown model: no error")


def check_grpc_statistics(client, http_client, token, expected, served, grpc_auth, http_auth, timeout):
    """tritonclient.grpc get_inference_statistics: Triton's message, the same figures as HTTP."""
    for model, want in expected.items():
        msg = client.get_inference_statistics(model, headers=grpc_auth(token), client_timeout=timeout)
        [s] = msg.model_stats
        over_http = http_client.get_inference_statistics(model, headers=http_auth(token))["model_stats"][0]
        inf = s.inference_stats
        assert inf.success.count == want, f"gRPC stats {model}: {inf.success.count} successes, want {want}"
        for d in DURATIONS:
            got, http_got = getattr(inf, d), over_http["inference_stats"][d]
            assert (got.count, got.ns) == (http_got["count"], http_got["ns"]), \
                f"gRPC stats {model}: {d} {got.count}/{got.ns} ns, HTTP {http_got}"
        assert s.execution_count == over_http["execution_count"], f"gRPC stats {model}: executions"
    every = client.get_inference_statistics(headers=grpc_auth(token), client_timeout=timeout)
    names = sorted(s.name for s in every.model_stats)
    assert names == sorted(served), f"gRPC stats of every model: {names}, served {sorted(served)}"


def check_grpc_stream(url, cases, token, grpc_auth, infer_inputs, check_result, Result, param_value):
    """Every case on one stream, answered by id with its outputs; an unknown model's request is an
    error answer and the stream goes on."""
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(url)
    try:
        client.start_stream(callback=lambda result, error: answers.put((result, error)),
                            headers=grpc_auth(token))
        by_id = {}
        for round_ in range(STREAM_ROUNDS):
            for case in cases:
                rid = f"case-{case.index}-{round_}"
                by_id[rid] = case
                client.async_stream_infer(case.model, infer_inputs(case), request_id=rid,
                                          parameters=case.parameters or None)
        bad = cases[0]
        client.async_stream_infer("no-such-model", infer_inputs(bad), request_id="bad")
        seen, errors = {}, []
        deadline = time.monotonic() + STREAM_WAIT_S
        while len(seen) + len(errors) < len(by_id) + 1:
            left = deadline - time.monotonic()
            assert left > 0, f"stream: {len(seen)} answers and {len(errors)} errors of {len(by_id) + 1}"
            result, error = answers.get(timeout=left)
            if error is not None:
                errors.append(error)
                continue
            msg = result.get_response()
            assert msg.id in by_id and msg.id not in seen, f"stream: answer id {msg.id!r}"
            seen[msg.id] = msg
            got = {o.name: (o.datatype, list(o.shape), result.as_numpy(o.name)) for o in msg.outputs}
            params = {k: param_value(v) for k, v in msg.parameters.items()}
            check_result(by_id[msg.id], Result(got, params), f"gRPC stream ({msg.id})")
        assert len(errors) == 1 and "no-such-model" in str(errors[0]), f"stream errors: {errors}"
    finally:
        client.stop_stream()
        client.close()


def part_c(checks, args, cases, http_client, grpc_client, helpers, passed_all, variants):
    """Runs part C's checks into `checks`."""
    h = helpers
    models = sorted({c.model for c in cases})
    try:
        expected = expected_successes(cases, models, passed_all, variants)
    except AssertionError as e:
        checks.skip("statistics", str(e))
    else:
        checks.run("HTTP statistics", check_http_statistics, http_client, args.token, expected,
                   h["models"], h["http_auth"])
        checks.run("gRPC statistics", check_grpc_statistics, grpc_client, http_client, args.token,
                   expected, h["models"], h["grpc_auth"], h["http_auth"], h["timeout"])
    checks.run("gRPC stream", check_grpc_stream, args.grpc, cases, args.token, h["grpc_auth"],
               h["grpc_inputs"], h["check_result"], h["Result"], h["grpc_param_value"])
    print(checks.summary(f" (statistics of {len(models)} models, {len(cases)} cases x {STREAM_ROUNDS} on one stream)"),
          flush=True)
    return checks
