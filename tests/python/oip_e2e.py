#!/usr/bin/env python3
"""End-to-end test of `spork serve` over the Open Inference Protocol (KServe v2), with the clients
other people use: tritonclient.http, tritonclient.grpc, and raw HTTP where the bytes matter.

    $VENV_PYTHON tests/python/oip_e2e.py --http 127.0.0.1:PORT --grpc 127.0.0.1:PORT2 \
        --cases DIR [--token TOKEN] [--max-body BYTES]

Part A (results): every case of DIR/cases.json is run over HTTP with binary tensors (outputs
unrequested, so the request asks for `binary_data_output`), over HTTP with binary tensors and the
outputs requested by name (model version "1"), over HTTP with JSON tensors, and over gRPC without
and with the version; each must return exactly the expected outputs and the response parameters.
Health, readiness and metadata are checked over both protocols.

Part C (oip_extensions.py): the statistics extension, counted exactly over HTTP and gRPC, and
every case on one gRPC stream (answers by request id, a bad request an error answer).

Part B (bad input): malformed, mistyped, misshapen, truncated, oversized, unauthenticated and
unknown-model requests must get the right HTTP status with a JSON `{"error": ...}` body, or the
right gRPC status code, while a background stream of valid `dense` requests keeps succeeding.

Exit status 0 when every check passed, 1 when any failed (each failure is printed as it happens),
2 when the arguments or the cases cannot be read. Every network call has a 10 s timeout; every loop
is bounded. Run by the Rust integration test (the server's contract is the one written there).
"""

import argparse
import http.client
import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import oip_extensions
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

TIMEOUT_S = 10.0
MIB = 1 << 20
MODELS = ("sobel", "bloom", "dense")
VERSION = "1"

# Little-endian numpy dtypes of the protocol's datatypes (tensor files are little-endian, C order).
DTYPES = {
    "BOOL": np.dtype("?"),
    "UINT8": np.dtype("<u1"),
    "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"),
    "INT8": np.dtype("<i1"),
    "INT16": np.dtype("<i2"),
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
}

# The models' tensors as the server describes them: name -> (datatype, shape, required).
# -1 is a variable dimension. Optional tensors may be left out of the metadata; if listed they must
# match.
MODEL_INPUTS = {
    "sobel": {"image": ("UINT8", [-1, -1], True), "refinement": ("UINT8", [-1, -1], False)},
    "bloom": {
        "documents": ("UINT32", [-1, -1], True),
        "profile": ("UINT32", [1], False),
        "more_documents": ("UINT32", [-1, -1], False),
    },
    "dense": {"vectors": ("INT16", [-1, 64], True), "more_vectors": ("INT16", [-1, 64], False)},
}
MODEL_OUTPUTS = {
    "sobel": {
        "magnitudes": ("UINT8", [-1, -1], True),
        "refinement_magnitudes": ("UINT8", [-1, -1], False),
    },
    "bloom": {"scores": ("UINT16", [-1], True), "more_scores": ("UINT16", [-1], False)},
    "dense": {
        "activations": ("INT16", [-1, 8], True),
        "more_activations": ("INT16", [-1, 8], False),
    },
}
# Brownout (optional work) inputs and the outputs present only when the server ran that work.
BROWNOUT_INPUTS = {"sobel": {"refinement"}, "bloom": {"more_documents"}, "dense": {"more_vectors"}}
BROWNOUT_OUTPUTS = {
    "sobel": {"refinement_magnitudes"},
    "bloom": {"more_scores"},
    "dense": {"more_activations"},
}
WORKER_KINDS = ("cpu", "fpga")


# ----------------------------------------------------------------------------------------------
# Cases and bookkeeping
# ----------------------------------------------------------------------------------------------


@dataclass
class Tensor:
    """A named tensor: its protocol datatype and its values (shape = array.shape)."""

    name: str
    datatype: str
    array: np.ndarray

    @property
    def shape(self):
        return list(self.array.shape)


@dataclass
class Case:
    """One inference of cases.json: model, inputs, expected outputs, request parameters."""

    index: int
    model: str
    inputs: list
    outputs: list
    parameters: dict

    def label(self):
        shapes = ", ".join(f"{t.name}{t.shape}" for t in self.inputs)
        return f"case {self.index} ({self.model}: {shapes})"


@dataclass
class Result:
    """A response as the checks see it: outputs name -> (datatype, shape, array), parameters."""

    outputs: dict
    parameters: dict


class Checks:
    """Runs named checks, counts passes and prints every failure as it happens."""

    def __init__(self, part):
        self.part = part
        self.passed = 0
        self.failures = []
        self.skipped = []

    def run(self, name, check, *args):
        """Runs check(*args); an AssertionError or a client/network error is a failure."""
        try:
            check(*args)
        except AssertionError as e:
            self._fail(name, str(e) or "assertion failed")
        except InferenceServerException as e:
            self._fail(name, f"unexpected server error: status {e.status()}: {e.message()}")
        except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as e:
            self._fail(name, f"unexpected {type(e).__name__}: {e}")
        else:
            self.passed += 1

    def skip(self, name, why):
        self.skipped.append(name)
        print(f"SKIP [{self.part}] {name}: {why}", flush=True)

    def _fail(self, name, message):
        self.failures.append(f"{name}: {message}")
        print(f"FAIL [{self.part}] {name}: {message}", flush=True)

    def summary(self, extra=""):
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return (f"Part {self.part}: {self.passed} checks passed, {len(self.failures)} failed"
                f"{skipped}{extra}")


def die(message, status=2):
    """Stops the test: status 2 for unusable arguments or cases, 1 for a server never live."""
    print(f"oip_e2e: {message}", file=sys.stderr, flush=True)
    sys.exit(status)


def load_tensor(case_dir, spec, where):
    """Reads one {"name","datatype","shape","file"} entry: raw little-endian bytes in C order."""
    for key in ("name", "datatype", "shape", "file"):
        if key not in spec:
            die(f"{where}: missing {key!r}")
    datatype = spec["datatype"]
    if datatype not in DTYPES:
        die(f"{where}: datatype {datatype!r} is not one this client reads")
    shape = [int(d) for d in spec["shape"]]
    path = Path(case_dir) / spec["file"]
    data = path.read_bytes()
    dtype = DTYPES[datatype]
    want = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != want:
        die(f"{where}: {path} holds {len(data)} bytes, shape {shape} of {datatype} needs {want}")
    return Tensor(spec["name"], datatype, np.frombuffer(data, dtype=dtype).reshape(shape))


def load_cases(case_dir):
    """Reads DIR/cases.json and every tensor file it names; exits 2 on anything malformed."""
    path = Path(case_dir) / "cases.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        die(f"cannot read {path}: {e}")
    if not isinstance(raw, list) or not raw:
        die(f"{path} must be a non-empty list of cases")
    cases = []
    for i, c in enumerate(raw):
        where = f"{path} case {i}"
        model = c.get("model")
        if model not in MODELS:
            die(f"{where}: model {model!r} is not one of {MODELS}")
        try:
            inputs = [load_tensor(case_dir, t, f"{where} input {j}")
                      for j, t in enumerate(c.get("inputs", []))]
            outputs = [load_tensor(case_dir, t, f"{where} output {j}")
                       for j, t in enumerate(c.get("outputs", []))]
        except OSError as e:
            die(f"{where}: {e}")
        if not inputs or not outputs:
            die(f"{where}: needs inputs and outputs")
        cases.append(Case(i, model, inputs, outputs, dict(c.get("parameters") or {})))
    return cases


# ----------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------


def http_auth(token):
    """HTTP headers carrying the bearer token (None without a token)."""
    return {"Authorization": f"Bearer {token}"} if token else None


def grpc_auth(token):
    """gRPC metadata carrying the bearer token (keys must be lower case in gRPC)."""
    return {"authorization": f"Bearer {token}"} if token else None


def split_hostport(hostport):
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        die(f"{hostport!r} is not HOST:PORT")
    return host, int(port)


def grpc_param_value(param):
    """The Python value of an InferParameter (whichever of its oneof fields is set)."""
    kind = param.WhichOneof("parameter_choice")
    return None if kind is None else getattr(param, kind)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def describe_difference(expected, got):
    """A short account of where two equal-shaped arrays differ."""
    diff = np.flatnonzero(expected.reshape(-1) != got.reshape(-1))
    first = int(diff[0])
    return (f"{diff.size} of {expected.size} values differ; first at flat index {first}: "
            f"expected {expected.reshape(-1)[first]}, got {got.reshape(-1)[first]}")


def check_result(case, result, how):
    """The response holds exactly the expected outputs (datatype, shape, values) and the contract's
    response parameters; brownout outputs may be missing only when the server reports it skipped
    the optional work (optional_served false)."""
    label = f"{case.label()} over {how}"
    params = result.parameters
    kind = params.get("worker_kind")
    assert kind in WORKER_KINDS, f"{label}: worker_kind {kind!r}, expected one of {WORKER_KINDS}"
    worker = params.get("worker")
    assert isinstance(worker, int) and not isinstance(worker, bool), \
        f"{label}: response parameter worker {worker!r} is not an integer"
    for key in ("queue_ms", "service_ms", "handled_ms"):
        value = params.get(key)
        assert is_number(value) and value >= 0, \
            f"{label}: response parameter {key} {value!r} is not a number >= 0"
    # The handler took the request before the pool did and answered after its worker finished.
    assert params["handled_ms"] >= params["queue_ms"] + params["service_ms"] - 1e-3, \
        f"{label}: handled_ms {params['handled_ms']} under queue_ms + service_ms"
    brownout_inputs = BROWNOUT_INPUTS[case.model] & {t.name for t in case.inputs}
    served = params.get("optional_served")
    if brownout_inputs:
        assert isinstance(served, bool), \
            f"{label}: optional_served {served!r} is not a bool though the request had " \
            f"optional inputs {sorted(brownout_inputs)}"
    expected_names = {t.name for t in case.outputs}
    extra = set(result.outputs) - expected_names
    assert not extra, \
        f"{label}: unexpected outputs {sorted(extra)} (expected {sorted(expected_names)})"
    for want in case.outputs:
        optional = want.name in BROWNOUT_OUTPUTS[case.model]
        if want.name not in result.outputs:
            assert optional and served is False, \
                f"{label}: output {want.name!r} missing (optional_served={served!r})"
            continue
        if optional and served is not None:
            assert served is True, \
                f"{label}: output {want.name!r} present but optional_served is false"
        datatype, shape, got = result.outputs[want.name]
        assert datatype == want.datatype, \
            f"{label}: output {want.name!r} datatype {datatype}, expected {want.datatype}"
        assert list(shape) == want.shape, \
            f"{label}: output {want.name!r} shape {list(shape)}, expected {want.shape}"
        assert got.shape == want.array.shape, \
            f"{label}: output {want.name!r} decodes to shape {list(got.shape)}, " \
            f"expected {want.shape}"
        assert np.array_equal(got, want.array), \
            f"{label}: output {want.name!r}: {describe_difference(want.array, got)}"


# ----------------------------------------------------------------------------------------------
# Part A: results, health and metadata through tritonclient
# ----------------------------------------------------------------------------------------------


def infer_http(client, case, token, binary, request_outputs, version):
    """Runs a case through tritonclient.http: binary or JSON tensors; outputs requested by name
    (with binary_data = binary) or left to the server (`binary_data_output`)."""
    inputs = []
    for t in case.inputs:
        inp = httpclient.InferInput(t.name, t.shape, t.datatype)
        inp.set_data_from_numpy(t.array, binary_data=binary)
        inputs.append(inp)
    outputs = None
    if request_outputs:
        outputs = [httpclient.InferRequestedOutput(t.name, binary_data=binary)
                   for t in case.outputs]
    res = client.infer(case.model, inputs, model_version=version, outputs=outputs,
                       headers=http_auth(token), parameters=case.parameters or None)
    body = res.get_response()
    got = {}
    for out in body.get("outputs", []):
        has_binary = "binary_data_size" in (out.get("parameters") or {})
        if binary:
            assert has_binary, f"output {out['name']!r} came back as JSON, binary was asked for"
        else:
            assert not has_binary and "data" in out, \
                f"output {out['name']!r} came back as binary data, JSON was asked for"
        got[out["name"]] = (out["datatype"], out["shape"], res.as_numpy(out["name"]))
    return Result(got, body.get("parameters") or {})


def grpc_inputs(case):
    """A case's inputs as tritonclient.grpc sends them (raw_input_contents)."""
    inputs = []
    for t in case.inputs:
        inp = grpcclient.InferInput(t.name, t.shape, t.datatype)
        inp.set_data_from_numpy(t.array)
        inputs.append(inp)
    return inputs


def infer_grpc(client, case, token, version):
    """Runs a case through tritonclient.grpc (which sends raw_input_contents)."""
    inputs = grpc_inputs(case)
    res = client.infer(case.model, inputs, model_version=version, headers=grpc_auth(token),
                       parameters=case.parameters or None, client_timeout=TIMEOUT_S)
    msg = res.get_response()
    got = {o.name: (o.datatype, list(o.shape), res.as_numpy(o.name)) for o in msg.outputs}
    params = {k: grpc_param_value(v) for k, v in msg.parameters.items()}
    return Result(got, params)


def check_case_http_binary(client, case, token):
    """HTTP, binary tensors both ways, outputs not named (binary_data_output), no version."""
    check_result(case, infer_http(client, case, token, True, False, ""), "HTTP/binary")


def check_case_http_binary_requested(client, case, token):
    """HTTP, binary tensors, outputs requested by name with binary_data true, version "1"."""
    check_result(case, infer_http(client, case, token, True, True, VERSION),
                 "HTTP/binary, requested outputs, version 1")


def check_case_http_json(client, case, token):
    """HTTP, JSON tensors both ways (binary_data=False on inputs and requested outputs)."""
    check_result(case, infer_http(client, case, token, False, True, ""), "HTTP/JSON")


def check_case_grpc(client, case, token):
    """gRPC, raw contents both ways, no version."""
    check_result(case, infer_grpc(client, case, token, ""), "gRPC")


def check_case_grpc_versioned(client, case, token):
    """gRPC, raw contents both ways, version "1"."""
    check_result(case, infer_grpc(client, case, token, VERSION), "gRPC, version 1")


def check_http_health(client, token):
    """tritonclient.http: the server is live and ready."""
    assert client.is_server_live(headers=http_auth(token)), "HTTP: server not live"
    assert client.is_server_ready(headers=http_auth(token)), "HTTP: server not ready"


def check_grpc_health(client, token):
    """tritonclient.grpc: the server is live and ready."""
    h = grpc_auth(token)
    assert client.is_server_live(headers=h, client_timeout=TIMEOUT_S), "gRPC: server not live"
    assert client.is_server_ready(headers=h, client_timeout=TIMEOUT_S), "gRPC: server not ready"


def check_http_model_ready(client, model, token):
    """tritonclient.http: the model is ready, with and without its version."""
    for version in ("", VERSION):
        assert client.is_model_ready(model, version, headers=http_auth(token)), \
            f"HTTP: model {model!r} version {version!r} not ready"


def check_grpc_model_ready(client, model, token):
    """tritonclient.grpc: the model is ready, with and without its version."""
    for version in ("", VERSION):
        assert client.is_model_ready(model, version, headers=grpc_auth(token),
                                     client_timeout=TIMEOUT_S), \
            f"gRPC: model {model!r} version {version!r} not ready"


def check_server_metadata_fields(name, extensions, how):
    assert name == "spork", f"{how}: server name {name!r}, expected 'spork'"
    for extension in ("binary_tensor_data", "model_repository", "model_configuration", "statistics"):
        assert extension in extensions, f"{how}: extensions {list(extensions)} lack {extension!r}"


def check_http_server_metadata(client, token):
    """tritonclient.http: server metadata names "spork" and the binary_tensor_data extension."""
    md = client.get_server_metadata(headers=http_auth(token))
    check_server_metadata_fields(md.get("name"), md.get("extensions", []), "HTTP")


def check_grpc_server_metadata(client, token):
    """tritonclient.grpc: server metadata names "spork" and the binary_tensor_data extension."""
    md = client.get_server_metadata(headers=grpc_auth(token), client_timeout=TIMEOUT_S)
    check_server_metadata_fields(md.name, list(md.extensions), "gRPC")


def check_tensor_metadata(model, got, expected, what, how):
    """The listed tensors are known and typed and shaped as the contract says; required ones are
    present."""
    got_map = {}
    for name, datatype, shape in got:
        assert name not in got_map, f"{how}: {model} lists {what} {name!r} twice"
        got_map[name] = (datatype, [int(d) for d in shape])
    unknown = set(got_map) - set(expected)
    assert not unknown, f"{how}: {model} lists unknown {what}s {sorted(unknown)}"
    for name, (datatype, shape, required) in expected.items():
        if name not in got_map:
            assert not required, f"{how}: {model} metadata lacks {what} {name!r}"
            continue
        assert got_map[name] == (datatype, shape), \
            f"{how}: {model} {what} {name!r} is {got_map[name]}, expected {(datatype, shape)}"


def check_model_metadata_fields(model, name, versions, inputs, outputs, how):
    assert name == model, f"{how}: metadata of {model!r} names {name!r}"
    assert VERSION in versions, f"{how}: {model} versions {list(versions)} lack {VERSION!r}"
    check_tensor_metadata(model, inputs, MODEL_INPUTS[model], "input", how)
    check_tensor_metadata(model, outputs, MODEL_OUTPUTS[model], "output", how)


def check_http_model_metadata(client, model, token):
    """tritonclient.http: model metadata (name, version "1", inputs/outputs with -1 dims)."""
    for version in ("", VERSION):
        md = client.get_model_metadata(model, version, headers=http_auth(token))
        inputs = [(t["name"], t["datatype"], t["shape"]) for t in md.get("inputs", [])]
        outputs = [(t["name"], t["datatype"], t["shape"]) for t in md.get("outputs", [])]
        check_model_metadata_fields(model, md.get("name"), md.get("versions", []), inputs, outputs,
                                    f"HTTP (version {version!r})")


def check_grpc_model_metadata(client, model, token):
    """tritonclient.grpc: model metadata (name, version "1", inputs/outputs with -1 dims)."""
    for version in ("", VERSION):
        md = client.get_model_metadata(model, version, headers=grpc_auth(token),
                                       client_timeout=TIMEOUT_S)
        inputs = [(t.name, t.datatype, list(t.shape)) for t in md.inputs]
        outputs = [(t.name, t.datatype, list(t.shape)) for t in md.outputs]
        check_model_metadata_fields(model, md.name, list(md.versions), inputs, outputs,
                                    f"gRPC (version {version!r})")


def triton_datatype(data_type):
    """The protocol datatype of a Triton TYPE_ name (TYPE_STRING is BYTES)."""
    name = data_type[len("TYPE_"):] if data_type.startswith("TYPE_") else data_type
    return "BYTES" if name == "STRING" else name


def check_http_model_config(client, model, token):
    """tritonclient.http get_model_config: the model's tensors as its metadata gives them."""
    cfg = client.get_model_config(model, headers=http_auth(token))
    assert cfg.get("max_batch_size") == 0, f"HTTP config: max_batch_size {cfg.get('max_batch_size')}"
    groups = {g["name"]: (g["kind"], g["count"]) for g in cfg.get("instance_group", [])}
    assert sorted(groups) == ["cpu", "fpga"] and groups["cpu"][0] == "KIND_CPU" \
        and groups["fpga"][0] == "KIND_MODEL" and all(c >= 0 for _, c in groups.values()), \
        f"HTTP config: instance_group {cfg.get('instance_group')}"
    tensors = lambda ts: [(t["name"], triton_datatype(t["data_type"]), t["dims"]) for t in ts]
    check_model_metadata_fields(model, cfg.get("name"), [VERSION], tensors(cfg.get("input", [])),
                                tensors(cfg.get("output", [])), "HTTP config")


def check_grpc_model_config(client, model, token):
    """tritonclient.grpc get_model_config: Triton's ModelConfig message, read by Triton's own proto."""
    from tritonclient.grpc import model_config_pb2
    cfg = client.get_model_config(model, headers=grpc_auth(token), client_timeout=TIMEOUT_S).config
    kinds = {g.name: model_config_pb2.ModelInstanceGroup.Kind.Name(g.kind) for g in cfg.instance_group}
    assert kinds == {"cpu": "KIND_CPU", "fpga": "KIND_MODEL"}, f"gRPC config: instance_group {kinds}"
    name_of = model_config_pb2.DataType.Name
    tensors = lambda ts: [(t.name, triton_datatype(name_of(t.data_type)), list(t.dims)) for t in ts]
    check_model_metadata_fields(model, cfg.name, [VERSION], tensors(cfg.input), tensors(cfg.output),
                                "gRPC config")


def part_a(args, cases, http_client, grpc_client):
    """Health, metadata and every case over every transport variant."""
    checks = Checks("A")
    t = args.token
    checks.run("HTTP health", check_http_health, http_client, t)
    checks.run("gRPC health", check_grpc_health, grpc_client, t)
    checks.run("HTTP server metadata", check_http_server_metadata, http_client, t)
    checks.run("gRPC server metadata", check_grpc_server_metadata, grpc_client, t)
    for model in MODELS:
        checks.run(f"HTTP {model} ready", check_http_model_ready, http_client, model, t)
        checks.run(f"gRPC {model} ready", check_grpc_model_ready, grpc_client, model, t)
        checks.run(f"HTTP {model} metadata", check_http_model_metadata, http_client, model, t)
        checks.run(f"gRPC {model} metadata", check_grpc_model_metadata, grpc_client, model, t)
        checks.run(f"HTTP {model} config", check_http_model_config, http_client, model, t)
        checks.run(f"gRPC {model} config", check_grpc_model_config, grpc_client, model, t)
    variants = [
        ("HTTP binary", check_case_http_binary, http_client),
        ("HTTP binary requested", check_case_http_binary_requested, http_client),
        ("HTTP JSON", check_case_http_json, http_client),
        ("gRPC", check_case_grpc, grpc_client),
        ("gRPC version 1", check_case_grpc_versioned, grpc_client),
    ]
    for case in cases:
        for name, check, client in variants:
            checks.run(f"{name} case {case.index}", check, client, case, t)
    print(checks.summary(f" ({len(cases)} cases x {len(variants)} transports)"), flush=True)
    checks.variants = len(variants)
    return checks


# ----------------------------------------------------------------------------------------------
# Raw HTTP: requests built byte by byte
# ----------------------------------------------------------------------------------------------


def json_request(inputs, parameters=None, outputs=None):
    """A JSON-only infer request body. inputs: (name, datatype, shape, flat list of values)."""
    body = {"inputs": [{"name": n, "datatype": d, "shape": s, "data": v} for n, d, s, v in inputs]}
    if outputs:
        body["outputs"] = [{"name": o, "parameters": {"binary_data": False}} for o in outputs]
    if parameters:
        body["parameters"] = parameters
    return json.dumps(body).encode()


def binary_request(inputs, parameters=None, outputs=None):
    """A binary-tensor infer request as the binary_tensor_data extension lays it out: the JSON
    header, then each input's bytes in order. inputs: (name, datatype, shape, bytes, declared
    binary_data_size). Returns (body, headers)."""
    header = {"inputs": [{"name": n, "datatype": d, "shape": s,
                          "parameters": {"binary_data_size": size}}
                         for n, d, s, _, size in inputs]}
    if outputs:
        header["outputs"] = [{"name": o, "parameters": {"binary_data": True}} for o in outputs]
    if parameters:
        header["parameters"] = parameters
    head = json.dumps(header).encode()
    body = head + b"".join(data for _, _, _, data, _ in inputs)
    return body, {"Inference-Header-Content-Length": str(len(head))}


def http_exchange(hostport, method, path, body=b"", headers=None):
    """One HTTP request on a fresh connection: (status, lower-cased headers, body)."""
    host, port = split_hostport(hostport)
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def http_post_large(hostport, path, body, headers):
    """POSTs a large body on a raw socket, in chunks, and reads the response even if the server
    answered early and stopped reading (the way a body limit usually works)."""
    host, port = split_hostport(hostport)
    lines = [f"POST {path} HTTP/1.1", f"Host: {hostport}", f"Content-Length: {len(body)}",
             "Connection: close"] + [f"{k}: {v}" for k, v in headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    send_error = None
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        try:
            sock.sendall(head)
            view = memoryview(body)
            chunk = 256 * 1024
            for start in range(0, len(body), chunk):
                sock.sendall(view[start:start + chunk])
        except OSError as e:  # reset, broken pipe or send timeout once the server stops reading
            send_error = e
        resp = http.client.HTTPResponse(sock, method="POST")
        try:
            resp.begin()
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            sent = f"sending failed: {send_error!r}" if send_error else "the body was sent"
            raise AssertionError(f"no HTTP response to a {len(body)}-byte body ({sent}; "
                                 f"reading: {e!r})") from None
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def decode_infer_response(headers, body):
    """Decodes an HTTP infer response: JSON only, or a JSON header of
    Inference-Header-Content-Length bytes followed by the outputs that carry binary_data_size, in
    order."""
    length = headers.get("inference-header-content-length")
    if length is None:
        header, rest = json.loads(body), b""
    else:
        n = int(length)
        assert 0 < n <= len(body), f"Inference-Header-Content-Length {n} of a {len(body)}-byte body"
        header, rest = json.loads(body[:n]), body[n:]
    offset, outputs = 0, {}
    for out in header.get("outputs", []):
        dtype = DTYPES[out["datatype"]]
        size = (out.get("parameters") or {}).get("binary_data_size")
        if size is None:
            arr = np.array(out["data"], dtype=dtype)
        else:
            assert offset + size <= len(rest), f"output {out['name']!r} runs past the body"
            arr = np.frombuffer(rest[offset:offset + size], dtype=dtype)
            offset += size
        outputs[out["name"]] = (out["datatype"], out["shape"], arr.reshape(out["shape"]))
    assert offset == len(rest), f"{len(rest) - offset} bytes after the last binary output"
    return Result(outputs, header.get("parameters") or {})


def fail(message):
    """A check that cannot run fails with this message."""
    raise AssertionError(message)


def expect_http_error(response, status, what):
    """The response has the given status and a JSON body {"error": "<non-empty message>"}."""
    got, _, body = response
    assert got == status, f"{what}: HTTP {got}, expected {status}; body {body[:200]!r}"
    try:
        doc = json.loads(body)
    except ValueError:
        raise AssertionError(f"{what}: HTTP {got} body is not JSON: {body[:200]!r}")
    assert isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"].strip(), \
        f"{what}: HTTP {got} body {doc!r} is not {{\"error\": \"<message>\"}}"


def expect_grpc_error(call, code, what):
    """call() raises InferenceServerException whose status names the gRPC code, with a message."""
    try:
        call()
    except InferenceServerException as e:
        status = str(e.status())
        assert code in status, f"{what}: gRPC status {status} ({e.message()}), expected {code}"
        assert (e.message() or "").strip(), f"{what}: gRPC {status} without a message"
        return
    raise AssertionError(f"{what}: succeeded, expected {code}")


# ----------------------------------------------------------------------------------------------
# Part B: bad input
# ----------------------------------------------------------------------------------------------


@dataclass
class BadInput:
    """What Part B needs: addresses, token, body limit, clients and a valid dense payload."""

    http: str
    grpc: str
    token: str
    max_body: int
    grpc_client: object
    headers: dict = field(default_factory=dict)

    def __post_init__(self):
        self.headers = http_auth(self.token) or {}

    def post(self, model, body, extra_headers=None, auth=True):
        headers = dict(self.headers if auth else {})
        headers.update(extra_headers or {})
        return http_exchange(self.http, "POST", f"/v2/models/{model}/infer", body, headers)


def zeros_dense(rows):
    return np.zeros((rows, 64), dtype=np.int16)


def grpc_dense_inputs(vectors, shape=None):
    """tritonclient.grpc inputs for dense `vectors`; shape overrides the declared shape."""
    inp = grpcclient.InferInput("vectors", list(vectors.shape), "INT16")
    inp.set_data_from_numpy(vectors)
    if shape is not None:
        inp.set_shape(shape)  # leaves the raw contents as they are
    return [inp]


def grpc_infer(b, model, inputs, parameters=None, headers="auth"):
    """One gRPC inference through tritonclient (headers: "auth" = the right token)."""
    h = grpc_auth(b.token) if headers == "auth" else headers
    return b.grpc_client.infer(model, inputs, headers=h, parameters=parameters,
                               client_timeout=TIMEOUT_S)


def check_http_control(b):
    """Control: the raw requests this part builds are valid when nothing is wrong (JSON and binary),
    so the failures below are for the reasons given."""
    v = zeros_dense(2)
    params = {"deadline_ms": 5000}
    status, _, body = b.post("dense", json_request([("vectors", "INT16", [2, 64],
                                                     v.ravel().tolist())], params))
    assert status == 200, f"valid JSON dense request: HTTP {status}: {body[:200]!r}"
    raw = v.tobytes()
    req, extra = binary_request([("vectors", "INT16", [2, 64], raw, len(raw))], params)
    status, _, body = b.post("dense", req, extra)
    assert status == 200, f"valid binary dense request: HTTP {status}: {body[:200]!r}"


def check_http_wrong_datatype(b):
    """`image` sent as INT32 (JSON and binary) -> 400."""
    data = np.zeros((8, 8), dtype=np.int32)
    body = json_request([("image", "INT32", [8, 8], data.ravel().tolist())])
    expect_http_error(b.post("sobel", body), 400, "sobel image as INT32 (JSON)")
    req, extra = binary_request([("image", "INT32", [8, 8], data.tobytes(), data.nbytes)])
    expect_http_error(b.post("sobel", req, extra), 400, "sobel image as INT32 (binary)")


def check_http_wrong_shape(b):
    """dense `vectors` of shape [2, 63] (the model needs 64 columns) -> 400."""
    v = np.zeros((2, 63), dtype=np.int16)
    body = json_request([("vectors", "INT16", [2, 63], v.ravel().tolist())])
    expect_http_error(b.post("dense", body), 400, "dense vectors [2, 63] (JSON)")
    req, extra = binary_request([("vectors", "INT16", [2, 63], v.tobytes(), v.nbytes)])
    expect_http_error(b.post("dense", req, extra), 400, "dense vectors [2, 63] (binary)")


def check_http_shape_data_mismatch(b):
    """Shape [2, 64] with 100 values (JSON) or 100 values' bytes (binary) -> 400."""
    expect_http_error(b.post("dense", json_request([("vectors", "INT16", [2, 64], [0] * 100)])),
                      400, "dense [2, 64] with 100 JSON values")
    raw = bytes(200)
    req, extra = binary_request([("vectors", "INT16", [2, 64], raw, len(raw))])
    expect_http_error(b.post("dense", req, extra), 400, "dense [2, 64] with 200 binary bytes")


def check_http_malformed_json(b):
    """A body that is not JSON, plain and as a binary request's header -> 400."""
    expect_http_error(b.post("dense", b'{"inputs": [{"name": "vectors", "datatype": '),
                      400, "truncated JSON body")
    head = b'{"inputs": [{"name": "vectors"'
    expect_http_error(b.post("dense", head + bytes(256),
                             {"Inference-Header-Content-Length": str(len(head))}),
                      400, "malformed JSON header of a binary request")


def check_http_truncated_binary(b):
    """Inference-Header-Content-Length present, binary_data_size 256, only 128 bytes sent -> 400."""
    req, extra = binary_request([("vectors", "INT16", [2, 64], bytes(128), 256)])
    expect_http_error(b.post("dense", req, extra), 400, "binary_data_size 256 with 128 bytes")


def check_http_oversized(b):
    """A (well-formed) body of the server's limit + 1 MiB -> 413."""
    rows = (b.max_body + MIB) // 128 + 1
    req, extra = binary_request([("vectors", "INT16", [rows, 64], bytes(rows * 128), rows * 128)])
    headers = dict(b.headers)
    headers.update(extra)
    expect_http_error(http_post_large(b.http, "/v2/models/dense/infer", req, headers), 413,
                      f"{len(req)}-byte body (limit {b.max_body})")


def check_http_unknown_model(b):
    """Inference on a model the server does not have -> 404."""
    v = zeros_dense(1)
    expect_http_error(b.post("no_such_model",
                             json_request([("vectors", "INT16", [1, 64], v.ravel().tolist())])),
                      404, "unknown model")


def check_http_auth(b):
    """Without the token and with a wrong one -> 401; health needs no token."""
    body = json_request([("vectors", "INT16", [1, 64], [0] * 64)])
    expect_http_error(b.post("dense", body, auth=False), 401, "infer without a token")
    expect_http_error(b.post("dense", body, {"Authorization": f"Bearer {b.token}x"}, auth=False),
                      401, "infer with a wrong token")
    for path in ("/v2/health/live", "/v2/health/ready"):
        status, _, data = http_exchange(b.http, "GET", path)
        assert status == 200, f"GET {path} without a token: HTTP {status}: {data[:200]!r}"


def check_http_zero_deadline(b):
    """Request parameter deadline_ms = 0 -> 400."""
    body = json_request([("vectors", "INT16", [1, 64], [0] * 64)], {"deadline_ms": 0})
    expect_http_error(b.post("dense", body), 400, "deadline_ms 0")


def check_grpc_wrong_datatype(b):
    """`image` sent as INT32 -> INVALID_ARGUMENT."""
    inp = grpcclient.InferInput("image", [8, 8], "INT32")
    inp.set_data_from_numpy(np.zeros((8, 8), dtype=np.int32))
    expect_grpc_error(lambda: grpc_infer(b, "sobel", [inp]), "StatusCode.INVALID_ARGUMENT",
                      "sobel image as INT32")


def check_grpc_wrong_shape(b):
    """dense `vectors` [2, 63] -> INVALID_ARGUMENT."""
    inputs = grpc_dense_inputs(np.zeros((2, 63), dtype=np.int16))
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs), "StatusCode.INVALID_ARGUMENT",
                      "dense vectors [2, 63]")


def check_grpc_shape_data_mismatch(b):
    """Declared shape [3, 64] with raw contents of [2, 64] -> INVALID_ARGUMENT."""
    inputs = grpc_dense_inputs(zeros_dense(2), shape=[3, 64])
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs), "StatusCode.INVALID_ARGUMENT",
                      "dense [3, 64] with [2, 64] of raw contents")


def check_grpc_oversized(b):
    """A request of the server's limit + 1 MiB -> RESOURCE_EXHAUSTED. (tonic's own decoding limit
    answers OUT_OF_RANGE, so the server must check the size itself.)"""
    rows = (b.max_body + MIB) // 128 + 1
    inputs = grpc_dense_inputs(zeros_dense(rows))
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs), "StatusCode.RESOURCE_EXHAUSTED",
                      f"{rows * 128}-byte request (limit {b.max_body})")


def check_grpc_unknown_model(b):
    """Inference on a model the server does not have -> NOT_FOUND."""
    inputs = grpc_dense_inputs(zeros_dense(1))
    expect_grpc_error(lambda: grpc_infer(b, "no_such_model", inputs), "StatusCode.NOT_FOUND",
                      "unknown model")


def check_grpc_auth(b):
    """Without the token and with a wrong one -> UNAUTHENTICATED."""
    inputs = grpc_dense_inputs(zeros_dense(1))
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs, headers=None),
                      "StatusCode.UNAUTHENTICATED", "infer without a token")
    wrong = {"authorization": f"Bearer {b.token}x"}
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs, headers=wrong),
                      "StatusCode.UNAUTHENTICATED", "infer with a wrong token")


def check_grpc_zero_deadline(b):
    """Request parameter deadline_ms = 0 -> INVALID_ARGUMENT."""
    inputs = grpc_dense_inputs(zeros_dense(1))
    expect_grpc_error(lambda: grpc_infer(b, "dense", inputs, parameters={"deadline_ms": 0}),
                      "StatusCode.INVALID_ARGUMENT", "deadline_ms 0")


class DenseStream:
    """A background stream of valid `dense` requests over raw HTTP (alternately JSON and binary),
    from a few threads, bounded in count and in time; every one must return the expected result."""

    def __init__(self, hostport, token, case, total, threads, seconds):
        self.hostport = hostport
        self.headers = http_auth(token) or {}
        vectors = next(t for t in case.inputs if t.name == "vectors")
        self.vectors = vectors.array
        self.expected = next(t for t in case.outputs if t.name == "activations")
        self.case = Case(case.index, "dense", [vectors], [self.expected], case.parameters)
        self.parameters = case.parameters or None
        self.total, self.seconds = total, seconds
        self.ok = 0
        self.failures = []
        self.timed_out = False
        self.lock = threading.Lock()
        self.next_request = 0
        self.deadline = 0.0
        self.threads = [threading.Thread(target=self._run, name=f"dense-stream-{i}", daemon=True)
                        for i in range(threads)]

    def start(self):
        self.started = time.monotonic()
        self.deadline = self.started + self.seconds
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join(max(0.0, self.deadline - time.monotonic()) + 2 * TIMEOUT_S)
        self.elapsed = time.monotonic() - self.started
        return not any(t.is_alive() for t in self.threads)

    def _claim(self):
        with self.lock:
            if self.next_request >= self.total:
                return None
            if time.monotonic() > self.deadline:
                self.timed_out = True
                return None
            self.next_request += 1
            return self.next_request - 1

    def _one(self, i):
        v = self.vectors
        shape = list(v.shape)
        if i % 2 == 0:
            body = json_request([("vectors", "INT16", shape, v.ravel().tolist())], self.parameters,
                                ["activations"])
            headers = dict(self.headers)
        else:
            body, headers = binary_request([("vectors", "INT16", shape, v.tobytes(), v.nbytes)],
                                           self.parameters, ["activations"])
            headers.update(self.headers)
        status, resp_headers, data = http_exchange(self.hostport, "POST", "/v2/models/dense/infer",
                                                   body, headers)
        assert status == 200, f"HTTP {status}: {data[:200]!r}"
        check_result(self.case, decode_infer_response(resp_headers, data),
                     "raw HTTP/" + ("JSON" if i % 2 == 0 else "binary"))

    def _run(self):
        for _ in range(self.total):  # bounded; _claim ends it sooner
            i = self._claim()
            if i is None:
                return
            try:
                self._one(i)
            except Exception as e:  # noqa: BLE001 - every failure is a finding, reported below
                with self.lock:
                    self.failures.append(f"request {i}: {type(e).__name__}: {e}")
            else:
                with self.lock:
                    self.ok += 1


def part_b(args, cases, grpc_client):
    """Bad input over raw HTTP and gRPC, under a concurrent stream of valid dense requests."""
    checks = Checks("B")
    b = BadInput(args.http, args.grpc, args.token, args.max_body or 0, grpc_client)
    dense = next((c for c in cases if c.model == "dense"
                  and any(t.name == "vectors" for t in c.inputs)
                  and any(t.name == "activations" for t in c.outputs)), None)
    stream = None
    if dense is None:
        checks.run("background dense stream", fail, "cases.json has no dense case with vectors "
                   "-> activations to stream")
    else:
        stream = DenseStream(args.http, args.token, dense, args.stream_requests,
                             args.stream_threads, args.stream_seconds)
        stream.start()

    checks.run("HTTP control requests", check_http_control, b)
    checks.run("HTTP wrong datatype", check_http_wrong_datatype, b)
    checks.run("HTTP wrong shape", check_http_wrong_shape, b)
    checks.run("HTTP shape/data mismatch", check_http_shape_data_mismatch, b)
    checks.run("HTTP malformed JSON", check_http_malformed_json, b)
    checks.run("HTTP truncated binary data", check_http_truncated_binary, b)
    checks.run("HTTP unknown model", check_http_unknown_model, b)
    checks.run("HTTP deadline_ms 0", check_http_zero_deadline, b)
    checks.run("gRPC wrong datatype", check_grpc_wrong_datatype, b)
    checks.run("gRPC wrong shape", check_grpc_wrong_shape, b)
    checks.run("gRPC shape/data mismatch", check_grpc_shape_data_mismatch, b)
    checks.run("gRPC unknown model", check_grpc_unknown_model, b)
    checks.run("gRPC deadline_ms 0", check_grpc_zero_deadline, b)
    if args.token:
        checks.run("HTTP authentication", check_http_auth, b)
        checks.run("gRPC authentication", check_grpc_auth, b)
    else:
        checks.skip("authentication", "no --token given")
    if args.max_body:
        checks.run("HTTP oversized body", check_http_oversized, b)
        checks.run("gRPC oversized request", check_grpc_oversized, b)
    else:
        checks.skip("oversized bodies", "no --max-body given")

    extra = ""
    if stream is not None:
        finished = stream.join()

        def check_stream():
            """Every background request succeeded with the right result, and some ran."""
            assert finished, "background stream still running after its time bound"
            sent = stream.ok + len(stream.failures)
            assert not stream.failures, (f"{len(stream.failures)} of {sent} background dense "
                                         "requests failed; first: "
                                         + "; ".join(stream.failures[:3]))
            assert stream.ok > 0, "no background dense request completed"

        checks.run("background dense stream", check_stream)
        bound = f", stopped at the {args.stream_seconds:g} s bound" if stream.timed_out else ""
        extra = (f"; background dense stream: {stream.ok}/{args.stream_requests} requests "
                 f"succeeded over HTTP in {stream.elapsed:.1f} s{bound}")
    print(checks.summary(extra), flush=True)
    return checks


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def wait_until_live(hostport, seconds):
    """Polls GET /v2/health/live until it answers 200, at most `seconds` (bounded count)."""
    last = None
    for _ in range(max(1, int(seconds / 0.25))):
        try:
            status, _, _ = http_exchange(hostport, "GET", "/v2/health/live")
            if status == 200:
                return
            last = f"HTTP {status}"
        except (OSError, http.client.HTTPException) as e:
            last = repr(e)
        time.sleep(0.25)
    die(f"{hostport} not live after {seconds:g} s (last: {last})", status=1)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="End-to-end Open Inference Protocol test of `spork serve` "
                    "(tritonclient HTTP and gRPC, plus raw HTTP).")
    p.add_argument("--http", required=True, metavar="HOST:PORT", help="the HTTP/REST endpoint")
    p.add_argument("--grpc", required=True, metavar="HOST:PORT", help="the gRPC endpoint")
    p.add_argument("--cases", required=True, metavar="DIR",
                   help="directory holding cases.json and the raw tensor files it names")
    p.add_argument("--token", default="",
                   help="bearer token the server requires (enables the authentication checks)")
    p.add_argument("--max-body", type=int, default=0, metavar="BYTES",
                   help="the server's body limit (enables the oversized-body checks)")
    p.add_argument("--stream-requests", type=int, default=200, metavar="N",
                   help="valid dense requests sent in the background during part B (default 200)")
    p.add_argument("--stream-threads", type=int, default=2, metavar="N",
                   help="threads sending them (default 2)")
    p.add_argument("--stream-seconds", type=float, default=60.0, metavar="S",
                   help="time bound of the background stream (default 60)")
    p.add_argument("--wait", type=float, default=30.0, metavar="S",
                   help="wait at most this long for the server to be live (default 30)")
    args = p.parse_args(argv)
    split_hostport(args.http)
    split_hostport(args.grpc)
    if args.stream_requests < 1 or args.stream_threads < 1 or args.stream_seconds <= 0:
        p.error("--stream-requests and --stream-threads must be >= 1, --stream-seconds > 0")
    if args.max_body < 0:
        p.error("--max-body must be >= 0")
    return args


def main(argv):
    args = parse_args(argv)
    cases = load_cases(args.cases)
    wait_until_live(args.http, args.wait)
    http_client = httpclient.InferenceServerClient(args.http, connection_timeout=TIMEOUT_S,
                                                   network_timeout=TIMEOUT_S)
    grpc_client = grpcclient.InferenceServerClient(args.grpc)
    try:
        a = part_a(args, cases, http_client, grpc_client)
        helpers = {"http_auth": http_auth, "grpc_auth": grpc_auth, "timeout": TIMEOUT_S,
                   "grpc_inputs": grpc_inputs, "check_result": check_result, "Result": Result,
                   "grpc_param_value": grpc_param_value, "models": MODELS}
        c = oip_extensions.part_c(Checks("C"), args, cases, http_client, grpc_client, helpers,
                                  not a.failures, a.variants)
        b = part_b(args, cases, grpc_client)
    finally:
        http_client.close()
        grpc_client.close()
    failed = len(a.failures) + len(b.failures) + len(c.failures)
    if failed:
        print(f"oip_e2e: FAILED: {failed} checks", flush=True)
        return 1
    print("oip_e2e: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
