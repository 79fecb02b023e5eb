#!/usr/bin/env bash
# Prints the path of a tansu broker binary with the sqlite and slatedb storage engines, building
# it first if needed (about 15 min on 2 cores, once per change of tools/tansu; cached in
# $FLOWBROKER_CACHE, default ~/.cache/flowbroker).
#
# The prebuilt tansu of scripts/tansu.sh keeps its data in memory and does not implement
# DeleteRecords. This build (tools/tansu: tansu 0.6.0 from crates.io, Apache-2.0, with its lock
# file) adds `--storage-engine sqlite://FILE`, which keeps topics, records and group offsets
# across a restart (tests/kafka_restart.rs), and `--storage-engine slatedb://memory`, which
# deletes records before an offset on DeleteRecords (tests/trim.rs). Its tansu-storage is
# patched (tools/tansu/*.patch, in this order): a produce or DeleteRecords on slatedb is retried
# after a transaction conflict instead of failing, ListOffsets answers the log start offset
# that DeleteRecords set instead of 0 once a partition's every record is deleted, the sqlite
# engine keeps the records of a topic with retention.ms = -1 instead of deleting them all at
# every start, and the sqlite engine's storage task outlives a client that went away instead
# of ending (and failing every later request). docs/kafka.md has the details. The build
# directory is kept, so a change of a patch rebuilds tansu-storage and what depends on it, not
# every dependency.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
TOOL=tools/tansu
STAMP="$(cat scripts/tansu-engines.sh $TOOL/Cargo.toml $TOOL/Cargo.lock $TOOL/src/main.rs $TOOL/*.patch | sha256sum | cut -c1-12)"
ROOT="$CACHE/tansu-engines-$STAMP"
BIN="$ROOT/bin/tansu"
STORAGE=tansu-storage-0.6.0
STORAGE_SHA=720d2ed8e6010c70f7f06e5af5a7274ebbf6e42fdcd9e46de542b10dc4d2f35d

build() {
  echo "building tansu 0.6.0 with the sqlite and slatedb engines (once; about 15 min)" >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # the crate to patch: from cargo's download cache when it is intact, else from crates.io
  crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/$STORAGE.crate 2>/dev/null | head -1 || true)"
  if [ -z "$crate" ] || [ "$(sha256sum "$crate" | cut -d' ' -f1)" != "$STORAGE_SHA" ]; then
    crate="$tmp/$STORAGE.crate"
    curl -sSfL -o "$crate" "https://static.crates.io/crates/tansu-storage/$STORAGE.crate"
  fi
  got="$(sha256sum "$crate" | cut -d' ' -f1)"
  if [ "$got" != "$STORAGE_SHA" ]; then
    echo "error: $crate has sha256 $got, expected $STORAGE_SHA" >&2
    exit 1
  fi
  tar xzf "$crate" -C "$tmp"
  for patch in slate-retry slate-earliest lite-retention channel-requester; do
    (cd "$tmp/$STORAGE" && git apply -p2 "$OLDPWD/$TOOL/$patch.patch")
  done
  rm -rf "$TOOL/vendor"
  mkdir -p "$TOOL/vendor"
  mv "$tmp/$STORAGE" "$TOOL/vendor/tansu-storage"
  local out="$CACHE/tansu-engines-build"
  CARGO_TARGET_DIR="$out" cargo build --release --locked --manifest-path $TOOL/Cargo.toml >&2
  mkdir -p "$ROOT/bin"
  cp "$out/release/tansu" "$BIN.tmp"
  mv "$BIN.tmp" "$BIN"
}

if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE"
  # one build at a time (tests run this script in parallel); the others wait and reuse it
  exec 9>"$CACHE/tansu-engines.lock"
  flock 9
  if [ ! -x "$BIN" ]; then
    build
  fi
fi
echo "$BIN"
