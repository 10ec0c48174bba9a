#!/usr/bin/env bash
# Renders deploy/ and checks the result offline, for the base, each overlay, and the alveo overlay
# with the ServiceMonitor component added (as docs/deploy.md tells an operator to add it):
#   1. render: `kubectl kustomize` where kubectl exists, else scripts/kustomize-render.py; with
#      kubectl, the fallback renderer must produce the same objects (so it stays trustworthy);
#   2. validate against the Kubernetes schemas of each version in K8S_VERSIONS with
#      kubernetes-validate --strict (unknown fields fail). It has no schemas for CRDs: the
#      ServiceMonitor is left out of this step (and named) and checked in step 3 instead;
#   3. scripts/deploy-check.py: serve's config, probes and secrets, the headless Service that
#      serve.toml's `workers` names, each worker's flags, and the overlay's settings (its
#      fpga-worker.yaml and images) as they reach the containers.
# Usage: scripts/deploy-check.sh     (no network once scripts/python-env.sh has run)
#   SPORK_RENDERER=python   use the fallback renderer even where kubectl exists
#   K8S_VERSIONS="1.30.0"   the Kubernetes versions to validate against
#   SPORK_DEPLOY=DIR        check another copy of deploy/ (the tests check that a broken one fails)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy="${SPORK_DEPLOY:-deploy}"

# An older release many clusters still run, and the newest whose schemas the validator ships.
K8S_VERSIONS="${K8S_VERSIONS:-1.30.0 1.37.0}"

python="$(scripts/python-env.sh | tail -n1)"
validate="$(dirname "$python")/kubernetes-validate"
kubectl=""
if [[ "${SPORK_RENDERER:-}" != python ]] && command -v kubectl >/dev/null; then
    kubectl=kubectl
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The monitored variant: a copy of deploy/ whose alveo overlay lists the component.
cp -r "$deploy" "$tmp/deploy"
printf 'components:\n  - ../../components/servicemonitor\n' \
    >>"$tmp/deploy/overlays/alveo/kustomization.yaml"

failed=0
# name, directory, the board its FPGA worker has, the overlay whose settings it checks
targets=(
    "base $deploy/base model -"
    "alveo $deploy/overlays/alveo alveo $deploy/overlays/alveo"
    "f1 $deploy/overlays/f1 f1 $deploy/overlays/f1"
    "alveo+servicemonitor $tmp/deploy/overlays/alveo alveo $deploy/overlays/alveo"
)
for target in "${targets[@]}"; do
    read -r name dir board overlay <<<"$target"
    out="$tmp/$name.yaml"
    problems=()
    skipped=""

    if ! "$python" scripts/kustomize-render.py "$dir" >"$out.py" 2>"$tmp/err"; then
        problems+=("scripts/kustomize-render.py failed: $(cat "$tmp/err")")
    fi
    if [[ -n "$kubectl" ]]; then
        if ! "$kubectl" kustomize "$dir" >"$out" 2>"$tmp/err"; then
            problems+=("kubectl kustomize failed: $(cat "$tmp/err")")
        elif [[ -s "$out.py" ]] && ! diff=$("$python" scripts/deploy-check.py compare "$out" "$out.py"); then
            problems+=("scripts/kustomize-render.py disagrees with kubectl kustomize: $diff")
        fi
    else
        cp "$out.py" "$out"
    fi

    if [[ ${#problems[@]} -eq 0 ]]; then
        skipped="$("$python" scripts/deploy-check.py core "$out" "$out.core")"
        for version in $K8S_VERSIONS; do
            # Exit status 0 with a WARN means a kind without a schema: a typo, here.
            if ! report="$("$validate" --strict --quiet -k "$version" "$out.core" 2>&1)" \
                || grep -q . <<<"$report"; then
                problems+=("kubernetes-validate --strict -k $version: $report")
            fi
        done
        overlay_args=()
        [[ "$overlay" != - ]] && overlay_args=(--overlay "$overlay")
        if ! report="$("$python" scripts/deploy-check.py check --target "$name" --board "$board" \
            "${overlay_args[@]}" "$out" 2>&1)"; then
            problems+=("$report")
        fi
    fi

    renderer="${kubectl:+kubectl kustomize (and the fallback renderer agrees)}"
    if [[ ${#problems[@]} -eq 0 ]]; then
        echo "ok    $name: rendered by ${renderer:-scripts/kustomize-render.py}; valid against" \
            "Kubernetes $K8S_VERSIONS${skipped:+; not schema-checked (CRD): ${skipped//$'\n'/, }}"
    else
        failed=1
        echo "FAIL  $name ($dir):"
        printf '%s\n' "${problems[@]}" | sed 's/^/  /'
    fi
done

if [[ $failed -ne 0 ]]; then
    echo "deploy-check: deploy/ has problems (above)" >&2
    exit 1
fi
echo "deploy-check: every target renders, validates and is wired together"
