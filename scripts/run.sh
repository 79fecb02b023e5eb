#!/usr/bin/env bash
# Runs the broker on this machine: installs what it needs, starts a local Kafka-protocol broker
# (tansu on 127.0.0.1:9092) unless Kafka is configured or already listening there, starts the
# demo functions the sample workflows call (scripts/demo-functions.py on 127.0.0.1:9000) and the
# host of the sample durable functions (scripts/durable-host.py serving workflows/durable/*.py on
# 127.0.0.1:9100) unless functions are configured, builds flowbroker (release) and runs it with
# workflows/ deployed.
# Topics are created at start. Ctrl-C stops everything it started.
#
#   scripts/run.sh                      # defaults: local Kafka, demo functions
#   scripts/run.sh --config my.toml     # your config (kafka.brokers, [functions], ...)
#   FLOWBROKER_KAFKA_BROKERS=k:9092 scripts/run.sh
#   FLOWBROKER_BIN=path/to/flowbroker scripts/run.sh   # run that binary instead of building
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flowbroker-target}"

scripts/install-deps.sh

configured=""
[ -n "${FLOWBROKER_KAFKA_BROKERS:-}" ] && configured=1
for a in "$@"; do [ "$a" = "--config" ] && configured=1; done
[ -n "${FLOWBROKER_CONFIG:-}" ] && configured=1

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$configured" ] && ! listening 9092; then
  tansu="$(scripts/tansu.sh)"
  mkdir -p .tansu
  echo "starting a local Kafka-protocol broker (tansu) on 127.0.0.1:9092; log in .tansu/broker.log" >&2
  "$tansu" broker --listener-url tcp://127.0.0.1:9092 \
    --advertised-listener-url tcp://127.0.0.1:9092 >.tansu/broker.log 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do listening 9092 && break; sleep 0.1; done
  listening 9092 || { echo "error: tansu did not start; see .tansu/broker.log" >&2; exit 1; }
  # tansu answers a waiting fetch only when fetch.wait.max.ms expires (docs/broker.md):
  # keep it short so events flow with ~10 ms latency
  export FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS="${FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS:-10}"
  export FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS="${FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS:-6000}"
fi

# the samples' functions (reserveStock, requestCreditCheck, buildReport), unless the user
# maps functions (FLOWBROKER_FUNCTIONS or a config file)
if [ -z "${FLOWBROKER_FUNCTIONS:-}" ] && [ -z "${FLOWBROKER_CONFIG:-}" ] \
   && ! printf '%s\n' "$@" | grep -qx -- --config; then
  demo=http://127.0.0.1:9000
  if ! listening 9000; then
    mkdir -p .tansu
    echo "starting the demo functions on 127.0.0.1:9000; log in .tansu/functions.log" >&2
    python3 scripts/demo-functions.py 9000 >.tansu/functions.log 2>&1 &
    pids+=($!)
    for _ in $(seq 1 50); do listening 9000 && break; sleep 0.1; done
    listening 9000 || { echo "error: the demo functions did not start; see .tansu/functions.log" >&2; exit 1; }
  fi
  export FLOWBROKER_FUNCTIONS="reserveStock=$demo/reserveStock,requestCreditCheck=$demo/requestCreditCheck,buildReport=$demo/buildReport"
  # the sample durable functions (workflows/durable/*.py), written with AWS's Python SDK,
  # which checkpoints to this broker's HTTP listener
  if ! listening 9100; then
    listen="${FLOWBROKER_HTTP_LISTEN:-127.0.0.1:8080}"
    echo "starting the durable functions host on 127.0.0.1:9100; log in .tansu/durable.log" >&2
    "$(scripts/durable-sdk.sh)" scripts/durable-host.py --listen 127.0.0.1:9100 \
      --broker "http://${listen/0.0.0.0/127.0.0.1}" workflows/durable/*.py >.tansu/durable.log 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do listening 9100 && break; sleep 0.1; done
    listening 9100 || { echo "error: the durable functions host did not start; see .tansu/durable.log" >&2; exit 1; }
  fi
fi

bin="${FLOWBROKER_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release --locked --bin flowbroker
  bin="$CARGO_TARGET_DIR/release/flowbroker"
fi
"$bin" run "$@" &
pids+=($!)
wait "${pids[-1]}"
