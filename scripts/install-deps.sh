#!/usr/bin/env bash
# Installs what building and testing flowbroker needs on a fresh Debian/Ubuntu machine:
#   - a C toolchain, cmake and libcurl headers (librdkafka is built from source by rdkafka's
#     `cmake-build` feature, which cloudevents-sdk's Kafka binding requires);
#   - rustfmt and clippy;
#   - Chromium, the headless browser the console test drives;
#   - Node.js and npm, for the JavaScript durable-function SDK's test host;
#   - tansu, a Kafka-protocol broker (Apache-2.0), for local runs and integration tests
#     (see scripts/tansu.sh).
# Idempotent: each step checks first. Needs root (or sudo) only when apt packages are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
[ -e /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -e /usr/include/curl/curl.h ] \
  || missing+=(libcurl4-openssl-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
# virtualenvs for Python tools the checks use (scripts/check-deploy.sh)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
# Node.js and npm: the JavaScript durable-function SDK's test host (scripts/durable-host-node.js)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# a real browser for the web console's test (tests/console.rs drives headless Chromium)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing apt packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "error: run as root or install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

command -v cargo >/dev/null 2>&1 || {
  echo "error: cargo is required: install the Rust toolchain with https://rustup.rs" >&2; exit 1; }
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "installing rustfmt and clippy" >&2
  rustup component add rustfmt clippy
fi

scripts/tansu.sh >/dev/null
