"""Triton's Python backend serving `sobel` (the reference point of a Python model: numpy's Sobel,
answers equal to Spork's). Installed as `python/sobel` by scripts/triton/setup.sh, which
writes `site_packages.txt` beside this file: the stub's embedded Python has no numpy of its own,
and the backend starts the stub without the server's environment."""
import os
import sys

with open(os.path.join(os.path.dirname(__file__), "site_packages.txt")) as f:
    sys.path.append(f.read().strip())

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


def sobel(img):
    p = img.astype(np.int32)
    up, mid, down = p[:-2], p[1:-1], p[2:]
    gx = (up[:, 2:] + 2 * mid[:, 2:] + down[:, 2:]) - (up[:, :-2] + 2 * mid[:, :-2] + down[:, :-2])
    gy = (down[:, :-2] + 2 * down[:, 1:-1] + down[:, 2:]) - (up[:, :-2] + 2 * up[:, 1:-1] + up[:, 2:])
    return np.minimum(np.abs(gx) + np.abs(gy), 255).astype(np.uint8)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            image = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            if image.ndim != 2 or min(image.shape) < 3:
                err = pb_utils.TritonError("sobel takes `image`, UINT8 [H, W] with H, W >= 3")
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=err))
                continue
            out = pb_utils.Tensor("magnitudes", sobel(image))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
