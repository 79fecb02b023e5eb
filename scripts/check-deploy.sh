#!/usr/bin/env bash
# Validates the Kubernetes manifests in deploy/kubernetes against the Kubernetes schemas
# (kubernetes-validate from PyPI, strict: unknown fields fail). Installs the validator into a
# virtualenv under the cache directory the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${FLOWBROKER_TOOLS:-$HOME/.cache/flowbroker-tools}/kubernetes-validate"
if [ ! -x "$VENV/bin/kubernetes-validate" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "kubernetes-validate==1.37.0"
fi
"$VENV/bin/kubernetes-validate" --strict --quiet deploy/kubernetes/*.yaml
echo "deploy/kubernetes: $(ls deploy/kubernetes/*.yaml | wc -l) manifest file(s) valid"
