#!/usr/bin/env bash
# Runs the broker on this machine: installs what it needs, starts a local Kafka-protocol broker
# (tansu on 127.0.0.1:9092) unless Kafka is configured or already listening there, builds
# flowbroker (release) and runs it with workflows/ deployed. Topics are created at start.
#
#   scripts/run.sh                      # defaults, local Kafka
#   scripts/run.sh --config my.toml     # your config (kafka.brokers etc.)
#   FLOWBROKER_KAFKA_BROKERS=k:9092 scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flowbroker-target}"

scripts/install-deps.sh

configured=""
[ -n "${FLOWBROKER_KAFKA_BROKERS:-}" ] && configured=1
for a in "$@"; do [ "$a" = "--config" ] && configured=1; done
[ -n "${FLOWBROKER_CONFIG:-}" ] && configured=1

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -z "$configured" ] && ! listening 9092; then
  tansu="$(scripts/tansu.sh)"
  mkdir -p .tansu
  echo "starting a local Kafka-protocol broker (tansu) on 127.0.0.1:9092; log in .tansu/broker.log" >&2
  "$tansu" broker --listener-url tcp://127.0.0.1:9092 \
    --advertised-listener-url tcp://127.0.0.1:9092 >.tansu/broker.log 2>&1 &
  tansu_pid=$!
  trap 'kill $tansu_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do listening 9092 && break; sleep 0.1; done
  listening 9092 || { echo "error: tansu did not start; see .tansu/broker.log" >&2; exit 1; }
  # tansu answers a waiting fetch only when fetch.wait.max.ms expires (../shared/docs/KAFKA.md):
  # keep it short so events flow with ~10 ms latency
  export FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS="${FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS:-10}"
  export FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS="${FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS:-6000}"
fi

cargo build --release --locked --bin flowbroker
"$CARGO_TARGET_DIR/release/flowbroker" run "$@"
