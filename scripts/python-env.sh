#!/usr/bin/env bash
# Creates (once) the Python virtual environment the end-to-end tests of `spork serve` run their
# clients in (tests/python/oip_e2e.py), with pinned tritonclient[http,grpc] and numpy, plus the
# Kubernetes schema validator scripts/deploy-check.sh runs (kubernetes-validate, which brings the
# PyYAML scripts/kustomize-render.py needs), and prints the environment's python on its last line,
# e.g. VENV_PYTHON="$(scripts/python-env.sh | tail -n1)".
#   SPORK_VENV   where the environment lives (default ~/.cache/spork-venv)
#   SPORK_PYTHON the interpreter that creates it (default python3; 3.11 or newer, as numpy 2.4 needs)
# Idempotent: a second run only checks the pinned versions are there (no network).
set -euo pipefail

TRITONCLIENT_VERSION=2.73.0
NUMPY_VERSION=2.4.6
# Ships the Kubernetes JSON schemas in the package, so validation needs no network.
KUBERNETES_VALIDATE_VERSION=1.37.0

venv="${SPORK_VENV:-$HOME/.cache/spork-venv}"
python="$venv/bin/python"

# One maker at a time: tests that start together on a fresh machine each run this script, and two
# `python -m venv` into one folder fail ("File exists").
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if [[ ! -x "$python" ]]; then
    base="${SPORK_PYTHON:-python3}"
    if ! command -v "$base" >/dev/null; then
        echo "python-env.sh: $base not found (set SPORK_PYTHON to a Python 3.11+ interpreter)" >&2
        exit 1
    fi
    if ! "$base" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
        echo "python-env.sh: $base is $("$base" --version 2>&1); numpy $NUMPY_VERSION needs Python 3.11+" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$venv")"
    "$base" -m venv "$venv"
fi

# True when the pinned versions are installed (checked without importing the packages).
pinned_present() {
    "$python" - "$TRITONCLIENT_VERSION" "$NUMPY_VERSION" "$KUBERNETES_VALIDATE_VERSION" <<'PY' 2>/dev/null
import sys
from importlib import metadata
want = {"tritonclient": sys.argv[1], "numpy": sys.argv[2], "grpcio": "", "geventhttpclient": "",
        "kubernetes-validate": sys.argv[3], "PyYAML": ""}
for name, version in want.items():
    try:
        found = metadata.version(name)
    except metadata.PackageNotFoundError:
        sys.exit(1)
    if version and found != version:
        sys.exit(1)
PY
}

if ! pinned_present; then
    "$python" -m pip install --quiet --disable-pip-version-check --no-input \
        "tritonclient[http,grpc]==$TRITONCLIENT_VERSION" "numpy==$NUMPY_VERSION" \
        "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
    if ! pinned_present; then
        echo "python-env.sh: pip ran but tritonclient $TRITONCLIENT_VERSION / numpy $NUMPY_VERSION /" \
            "kubernetes-validate $KUBERNETES_VALIDATE_VERSION are not in $venv" >&2
        exit 1
    fi
fi

echo "$python"
