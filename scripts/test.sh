#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit, spec-example, engine, validation
# and CLI tests. Installs nothing system-wide beyond what it checks for; build output goes to a
# persistent target directory outside the clone so repeated runs are fast.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flowbroker-target}"
mkdir -p "$CARGO_TARGET_DIR"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 is required ($2)" >&2; exit 1; }
}
need cargo "install the Rust toolchain with rustup: https://rustup.rs"
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "installing rustfmt and clippy" >&2
  rustup component add rustfmt clippy
fi
# C toolchain for crates that build C code.
if ! command -v cc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq build-essential
  else
    echo "error: a C compiler (cc) is required: sudo apt-get install build-essential" >&2
    exit 1
  fi
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --all-targets --locked
echo "== flowbroker validate workflows/"
"$CARGO_TARGET_DIR/debug/flowbroker" validate workflows
