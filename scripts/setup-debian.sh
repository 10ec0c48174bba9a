#!/usr/bin/env bash
# The system packages Spork's build and tests need, on Debian 12 (bookworm): the one list, used by
# the README's quick start and by .ci/run. Run as root (or with sudo). Idempotent: when every tool is
# already there it installs nothing and needs no network.
#
#   - cmake, g++, libclang-dev: HiGHS (the MILP solver behind `spork optimal` and `spork reproduce`)
#     is built from source by highs-sys: cmake, a C++ compiler, and libclang for bindgen
#   - verilator: the simulated board, and a repository model's RTL verilated at load
#   - yosys: `spork hdl synth|report|timing` and `spork kernel synth`
#   - nextpnr-ice40: `spork hdl timing` (place and route; tests/hdl.rs)
#   - iverilog: the Vitis stream wrappers' smoke test (tests/scripts.rs)
#   - shellcheck: the scripts' lint (tests/scripts.rs)
#   - libxrt-dev: the XRT headers and libxrt_coreutil that feature `xrt` binds (no board needed)
#   - iproute2: `ip netns` for the multi-host test (worker hosts in network namespaces)
#   - python3-venv: the virtual environment scripts/python-env.sh makes for the tests' tritonclient
#     (Debian's python3 is 3.11, as numpy needs; without this package `python3 -m venv` fails)
# No protobuf-compiler: the .proto files are compiled by protox, in the build itself. Rust (1.95) is
# not installed here (rustup).
set -euo pipefail

PACKAGES=(cmake g++ libclang-dev verilator yosys nextpnr-ice40 iverilog shellcheck libxrt-dev iproute2 python3-venv)

missing() {
    local tool
    for tool in cmake g++ verilator yosys nextpnr-ice40 iverilog shellcheck ip; do
        command -v "$tool" >/dev/null || return 0
    done
    compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null || return 0
    [[ -f /usr/include/xrt/xrt/xrt_device.h ]] || return 0
    python3 -c 'import ensurepip' 2>/dev/null || return 0
    return 1
}

if ! missing; then
    echo "setup-debian.sh: every package is installed"
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "setup-debian.sh: run as root (sudo $0) to apt-get install ${PACKAGES[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
echo "setup-debian.sh: installed ${PACKAGES[*]}"
