"""Triton's Python backend serving `sobel` (the reference point of a Python model: numpy's Sobel,
answers equal to Spork's). Installed as `python/sobel` by scripts/triton/setup.sh, which
writes `site_packages.txt` and copies `sobel_ref.py` (the reference lone.py checks against) beside
this file: the stub's embedded Python has no numpy of its own,
and the backend starts the stub without the server's environment."""
import os
import sys

here = os.path.dirname(__file__)
with open(os.path.join(here, "site_packages.txt")) as f:
    sys.path.append(f.read().strip())
sys.path.insert(0, here)  # sobel_ref.py, copied beside this file

import triton_python_backend_utils as pb_utils  # noqa: E402
from sobel_ref import sobel  # noqa: E402


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
