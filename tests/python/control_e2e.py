#!/usr/bin/env python3
"""`spork serve --model-control explicit --control-token-file`, driven by tritonclient (HTTP and gRPC):
load and unload take the control token (passed as a header) and nothing else, not the inference
token; the index reads with either; inference takes the inference token only. Exits non-zero on the
first failure; prints "control ok" at the end."""

import argparse
import sys

import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException


def refused(what, call, status):
    try:
        call()
    except InferenceServerException as e:
        assert e.status() == status, f"{what}: {e.status()} {e.message()}"
        return e.message()
    raise AssertionError(f"{what}: accepted")


def states(client, headers):
    return {m["name"]: m["state"] for m in client.get_model_repository_index(headers=headers)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http", required=True)
    p.add_argument("--grpc", required=True)
    p.add_argument("--token", required=True, help="the inference token")
    p.add_argument("--control-token", required=True)
    a = p.parse_args()
    h = th.InferenceServerClient(a.http)
    g = tg.InferenceServerClient(a.grpc)
    # HTTP headers as tritonclient.http takes them; gRPC metadata keys are lower case.
    infer_h = {"Authorization": f"Bearer {a.token}"}
    control_h = {"Authorization": f"Bearer {a.control_token}"}
    infer_g = {"authorization": f"Bearer {a.token}"}
    control_g = {"authorization": f"Bearer {a.control_token}"}

    # HTTP: no token, the inference token: 401; the control token unloads.
    m = refused("http unload, no token", lambda: h.unload_model("dense"), "401")
    assert "control token" in m, m
    refused("http unload, inference token", lambda: h.unload_model("dense", headers=infer_h), "401")
    assert states(h, infer_h)["dense"] == "READY"
    h.unload_model("dense", headers=control_h)
    assert states(h, infer_h)["dense"] == "UNAVAILABLE", states(h, infer_h)
    assert states(h, control_h)["dense"] == "UNAVAILABLE", "the control token reads the index"

    # gRPC: the same, and the control token loads it back.
    unauth = "StatusCode.UNAUTHENTICATED"
    refused("grpc load, no token", lambda: g.load_model("dense"), unauth)
    refused("grpc load, inference token", lambda: g.load_model("dense", headers=infer_g), unauth)
    g.load_model("dense", headers=control_g)
    assert g.get_model_repository_index(headers=infer_g, as_json=True)["models"]
    assert g.is_model_ready("dense", headers=infer_g)
    refused("grpc unload, inference token", lambda: g.unload_model("dense", headers=infer_g), unauth)
    g.unload_model("dense", headers=control_g)
    h.load_model("dense", headers=control_h)
    assert states(h, infer_h)["dense"] == "READY", states(h, infer_h)

    # The control token does not infer; the inference token does.
    x = th.InferInput("vectors", [1, 64], "INT16")
    x.set_data_from_numpy(np.arange(64, dtype=np.int16).reshape(1, 64))
    refused("infer, control token", lambda: h.infer("dense", [x], headers=control_h), "401")
    assert h.infer("dense", [x], headers=infer_h).as_numpy("activations").shape == (1, 8)
    print("control ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
