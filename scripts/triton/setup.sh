#!/usr/bin/env bash
# Prepares a real Triton Inference Server beside Spork (sourced by side-by-side.sh; runnable alone):
# a virtual environment with PyPI's nvidia-pytriton (it bundles `tritonserver` 2.51 and
# `libtritonserver`; 55 MB, needs numpy<2, hence not the test venv) and tritonclient; the C++
# backend spork_sobel_backend.cc built with g++ against Spork's sobel C code; and a model
# repository for each: `cpp/sobel` (that backend, 2 CPU instances) and `python/sobel` (Triton's
# Python backend, for reference), one name as every client sends. Prints the directory it prepared
# on its last line.
#   SPORK_TRITON_VENV  the environment (default ~/.cache/spork-triton-venv)
#   SPORK_TRITON_DIR   backends and model repository (default ~/.cache/spork-triton)
#   TRITON_INSTANCES   instances of the C++ model (default 2: one per core here)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${SPORK_TRITON_VENV:-$HOME/.cache/spork-triton-venv}"
dir="${SPORK_TRITON_DIR:-$HOME/.cache/spork-triton}"
instances="${TRITON_INSTANCES:-2}"
PYTRITON_VERSION=0.7.0
TRITONCLIENT_VERSION=2.73.0

for tool in g++ python3 curl; do
    command -v "$tool" >/dev/null || { echo "setup.sh: $tool not found (apt-get install g++ python3-venv curl)" >&2; exit 1; }
done
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import pytriton, tritonclient.grpc, tritonclient.http, numpy' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input "nvidia-pytriton==$PYTRITON_VERSION" \
        "tritonclient[http,grpc]==$TRITONCLIENT_VERSION" "numpy<2"
fi
pytriton="$("$venv/bin/python" -c 'import os, pytriton; print(os.path.dirname(pytriton.__file__))')"
pyver="$("$venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
[[ -x "$pytriton/tritonserver/bin/tritonserver" ]] || { echo "setup.sh: no tritonserver in $pytriton" >&2; exit 1; }
stub="$pytriton/tritonserver/python_backend_stubs/$pyver/triton_python_backend_stub"
[[ -x "$stub" ]] || { echo "setup.sh: nvidia-pytriton has no Python backend stub for Python $pyver" >&2; exit 1; }

# Backends: ours, and the bundled Python backend with the stub of this Python beside it.
mkdir -p "$dir/backends/spork_sobel" "$dir/backends/python"
g++ -O2 -std=c++17 -Wall -Wextra -Werror -fPIC -I"$root/kernel-abi/include" -I"$here" \
    -c "$here/spork_sobel_backend.cc" -o "$dir/backend.o"
gcc -O2 -Wall -Wextra -Werror -fPIC -I"$root/kernel-abi/include" -c "$root/models/sobel/cpu/sobel.c" -o "$dir/sobel.o"
g++ -shared "$dir/backend.o" "$dir/sobel.o" -o "$dir/backends/spork_sobel/libtriton_spork_sobel.so"
cp "$pytriton/tritonserver/backends/python/libtriton_python.so" \
    "$pytriton/tritonserver/backends/python/triton_python_backend_utils.py" "$stub" "$dir/backends/python/"

# The model repository: same tensors as Spork's sobel; no batching (max_batch_size 0).
write_config() { # repository backend instances
    mkdir -p "$dir/$1/sobel/1"
    cat >"$dir/$1/sobel/config.pbtxt" <<CONFIG
name: "sobel"
backend: "$2"
max_batch_size: 0
input [ { name: "image", data_type: TYPE_UINT8, dims: [ -1, -1 ] } ]
output [ { name: "magnitudes", data_type: TYPE_UINT8, dims: [ -1, -1 ] } ]
instance_group [ { count: $3, kind: KIND_CPU } ]
CONFIG
}
write_config cpp spork_sobel "$instances"
write_config python python 1
cp "$here/python_model/model.py" "$here/sobel_ref.py" "$dir/python/sobel/1/"
"$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$dir/python/sobel/1/site_packages.txt"
cat >"$dir/env.sh" <<ENV
TRITONSERVER="$pytriton/tritonserver/bin/tritonserver"
TRITON_LIBS="$(dirname "$pytriton")/nvidia_pytriton.libs"
TRITON_PYTHON="$venv/bin/python"
PYTHON_LIBDIR="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
ENV
echo "$dir"
