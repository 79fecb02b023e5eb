#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit, spec-example, engine, validation,
# CLI tests and the end-to-end tests against a real Kafka-protocol broker (tansu). Installs what
# it needs first (scripts/install-deps.sh); build output goes to a persistent target directory
# outside the clone so repeated runs are fast.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flowbroker-target}"
mkdir -p "$CARGO_TARGET_DIR"
# the persistent target directory only grows (incremental caches, a test binary per build);
# with less than 15 GiB free, drop what a build recreates (linkers die with SIGBUS on a full disk)
if [ "$(df -Pk "$CARGO_TARGET_DIR" | awk 'NR==2 {print $4}')" -lt $((15 * 1024 * 1024)) ]; then
  echo "== less than 15 GiB free: pruning $CARGO_TARGET_DIR (incremental caches, old test binaries)"
  rm -rf "$CARGO_TARGET_DIR"/*/incremental
  find "$CARGO_TARGET_DIR"/*/deps -maxdepth 1 -type f -perm -u+x ! -name '*.so' -mmin +60 -delete || true
fi

# apt packages (C toolchain, cmake, libcurl headers for librdkafka), rustfmt/clippy and the
# tansu Kafka-protocol broker the integration tests start; each step checks first.
scripts/install-deps.sh
export FLOWBROKER_TANSU="$(scripts/tansu.sh)"
# tansu with the sqlite and slatedb engines, for the tests that restart Kafka and trim the
# changelog (built once, about 15 min)
export FLOWBROKER_TANSU_ENGINES="$(scripts/tansu-engines.sh)"
# AWS's durable execution SDK for Python, in a virtualenv (the durable-function tests' host)
export FLOWBROKER_DURABLE_PYTHON="$(scripts/durable-sdk.sh)"
# and for JavaScript (a NODE_PATH), for the test that runs a handler written with it
export FLOWBROKER_DURABLE_NODE_PATH="$(scripts/durable-sdk-node.sh)"
# simpleflow, in a virtualenv (the SWF tests run its decider and workers)
export FLOWBROKER_SWF_PYTHON="$(scripts/swf-sdk.sh)"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --all-targets --locked
echo "== flowbroker validate workflows/"
"$CARGO_TARGET_DIR/debug/flowbroker" validate workflows
echo "== Kubernetes manifests (deploy/kubernetes)"
scripts/check-deploy.sh
echo "== fuzz smoke (AFL++, ${FLOWBROKER_FUZZ_SECS:-20} s per target)"
scripts/fuzz.sh "${FLOWBROKER_FUZZ_SECS:-20}"
