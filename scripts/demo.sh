#!/usr/bin/env bash
# The README's walk-through as a script: with the broker running (scripts/run.sh), starts or
# triggers every sample workflow that is not cron-scheduled, drives it to its end with the
# events it waits for, and waits for each to complete. Exits non-zero if any does not.
#
#   scripts/demo.sh                                 # the broker at http://127.0.0.1:8080
#   FLOWBROKER_SERVER=http://host:8080 scripts/demo.sh
#   FLOWBROKER_BIN=path/to/flowbroker scripts/demo.sh   # that binary instead of the release build
#
# Every step is a `flowbroker` CLI command (see README "The CLI client"), printed as it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/flowbroker-target}"
bin="${FLOWBROKER_BIN:-$CARGO_TARGET_DIR/release/flowbroker}"
if [ ! -x "$bin" ]; then
  cargo build --release --locked --bin flowbroker
fi
# the same local Kafka scripts/run.sh starts, unless configured otherwise
export FLOWBROKER_KAFKA_BROKERS="${FLOWBROKER_KAFKA_BROKERS:-127.0.0.1:9092}"
timeout="${DEMO_TIMEOUT:-60}"
run_id="$(date +%s)-$$"

fb() {
  echo "+ flowbroker $*" >&2
  "$bin" "$@"
}

# a field of a JSON document on stdin, by a Python expression over `v`
field() { python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }

# waits until instance $1 has status $2 (and, with $3, is in state $3)
await() {
  local id=$1 status=$2 state=${3:-} deadline=$((SECONDS + timeout)) now
  while :; do
    now="$("$bin" show "$id" --output json | field 'v["status"], v["state"]')"
    if [ -n "$state" ] && [ "$now" = "$status $state" ]; then return 0; fi
    if [ -z "$state" ] && [ "${now%% *}" = "$status" ]; then return 0; fi
    if [ $SECONDS -ge $deadline ]; then
      echo "error: instance $id is '$now', not $status ${state} after ${timeout}s" >&2
      "$bin" show "$id" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

# the id of the instance of workflow $1 whose correlation attribute $2 is $3, once it exists
find_instance() {
  local wf=$1 attr=$2 value=$3 deadline=$((SECONDS + timeout)) id
  while :; do
    id="$("$bin" instances --workflow "$wf" --limit 10000 --output json |
      field "next((i['id'] for i in v['instances'] if i['correlation'].get('$attr') == '$value'), '')")"
    [ -n "$id" ] && { echo "$id"; return 0; }
    if [ $SECONDS -ge $deadline ]; then
      echo "error: no $wf instance with $attr=$value after ${timeout}s" >&2
      return 1
    fi
    sleep 0.2
  done
}

failed=0
step() {
  local name=$1; shift
  echo "== $name" >&2
  if "$@"; then
    echo "$name: COMPLETED"
  else
    echo "$name: did not complete"
    failed=1
  fi
}

credit_check() {
  # a callback state: the function asks for a check, a person's decision comes back as an event
  local id
  id="$(fb start creditCheck --data '{"customer": {"id": "c1", "name": "Ann"}}')"
  await "$id" WAITING CheckCredit
  fb send --type com.example.credit.decision --source credit-desk \
    --attr "workflowinstanceid=$id" --data '{"decision": "approved"}' >/dev/null
  await "$id" COMPLETED
  "$bin" show "$id" --output json | field 'v["data"]["credit"]' | grep -qx approved
}

order_fulfilment() {
  # started by an event; stock reserved per item (foreach); continued by the payment event
  local order="o-$run_id" id
  fb send --type com.example.order.placed --source shop --attr "orderid=$order" \
    --data "{\"orderid\": \"$order\", \"items\": [{\"sku\": \"a\", \"quantity\": 1}, {\"sku\": \"b\", \"quantity\": 2}]}" >/dev/null
  id="$(find_instance orderFulfilment orderid "$order")"
  await "$id" WAITING AwaitPayment
  fb send --type com.example.payment.received --source payments --attr "orderid=$order" \
    --data '{"payment": {"amount": 30}}' >/dev/null
  await "$id" COMPLETED
  "$bin" show "$id" --output json | field 'v["data"]["status"]' | grep -qx shipped
}

shipment_match() {
  # two events in any order, correlated by shipmentid, start one instance together
  local ship="s-$run_id" id
  fb send --type com.example.payment.cleared --source payments --attr "shipmentid=$ship" \
    --data "{\"shipmentid\": \"$ship\", \"cleared\": true}" >/dev/null
  fb send --type com.example.shipment.packed --source warehouse --attr "shipmentid=$ship" \
    --data "{\"shipmentid\": \"$ship\", \"packed\": true}" >/dev/null
  id="$(find_instance shipmentMatch shipmentid "$ship")"
  await "$id" COMPLETED
}

approval() {
  # a durable function (workflows/durable/approval.py): it waits on a callback, whose id its
  # operations show; the answer is a CloudEvent carrying that id
  local id cb
  id="$(fb start approval --data "{\"order\": \"a-$run_id\"}")"
  await "$id" WAITING
  cb="$("$bin" show "$id" --output json |
    field 'next(o["CallbackDetails"]["CallbackId"] for o in v["operations"] if o["Type"] == "CALLBACK")')"
  fb send --type flowbroker.callback.success --source /desk --attr "callbackid=$cb" \
    --data '{"approved": true}' >/dev/null
  await "$id" COMPLETED
  "$bin" show "$id" --output json | field 'v["output"]["charged"]' | grep -qx True
}

step creditCheck credit_check
step orderFulfilment order_fulfilment
step shipmentMatch shipment_match
step approval approval
echo "(nightlyReport is cron-scheduled: it starts at 02:00 Europe/Berlin; see flowbroker instances --workflow nightlyReport)"
exit $failed
