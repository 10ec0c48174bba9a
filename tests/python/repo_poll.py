#!/usr/bin/env python3
"""`spork serve --model-control poll`: a model folder copied into the repository is loaded, one removed
is unloaded, without a call; and the repository API needs the token as inference does. Exits non-zero
on the first failure."""

import argparse
import shutil
import sys
import time

import numpy as np
import tritonclient.http as th
from tritonclient.utils import InferenceServerException


def wait_for(what, check, seconds=60.0):
    end = time.time() + seconds
    while time.time() < end:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--fixture", required=True, help="the crc8 model folder to copy in")
    p.add_argument("--token", required=True)
    a = p.parse_args()
    c = th.InferenceServerClient(a.http)
    auth = {"Authorization": f"Bearer {a.token}"}
    try:
        c.get_model_repository_index()
        raise AssertionError("the index answered without the token")
    except InferenceServerException as e:
        assert e.status() == "401", f"index without the token: {e.status()}"
    try:
        c.unload_model("satadd")
        raise AssertionError("an unload went through without the token")
    except InferenceServerException as e:
        assert e.status() == "401", f"unload without the token: {e.status()}"

    def states():
        return {m["name"]: m["state"] for m in c.get_model_repository_index(headers=auth)}

    assert states() == {"satadd": "READY"}, states()
    shutil.copytree(a.fixture, f"{a.repo}/crc8")
    wait_for("crc8 to load", lambda: states().get("crc8") == "READY")
    x = np.arange(12, dtype=np.uint8).reshape(3, 4)
    i = th.InferInput("rows", [3, 4], "UINT8")
    i.set_data_from_numpy(x)
    assert c.infer("crc8", [i], headers=auth).as_numpy("crc").shape == (3,)
    shutil.rmtree(f"{a.repo}/crc8")
    wait_for("crc8 to go", lambda: "crc8" not in states())
    try:
        c.infer("crc8", [i], headers=auth)
        raise AssertionError("crc8 answered after its folder was removed")
    except InferenceServerException as e:
        assert e.status() == "404", f"crc8 after removal: {e.status()}"
    print("poll ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
