#!/usr/bin/env bash
# Prints the path of a tansu broker binary with the sqlite storage engine, building it first if
# needed (about 10 min on 2 cores, once; cached in $FLOWBROKER_CACHE, default ~/.cache/flowbroker).
#
# The prebuilt tansu of scripts/tansu.sh keeps its data in memory, so it cannot be restarted
# mid-run. This build, `--storage-engine sqlite://FILE`, keeps topics, records and group offsets
# across a restart: tests/kafka_restart.rs uses it. From crates.io (tansu, Apache-2.0), with
# the version pinned and its lock file (--locked).
set -euo pipefail

VERSION=0.6.0
CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
ROOT="$CACHE/tansu-sqlite-$VERSION"
BIN="$ROOT/bin/tansu"

if [ ! -x "$BIN" ]; then
  echo "building tansu $VERSION with sqlite storage (once; about 10 min)" >&2
  CARGO_TARGET_DIR="$CACHE/tansu-sqlite-build" \
    cargo install tansu --version "$VERSION" --locked --features dynostore,libsql \
    --root "$ROOT" >&2
  rm -rf "$CACHE/tansu-sqlite-build"
fi
echo "$BIN"
