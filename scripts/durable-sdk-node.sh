#!/usr/bin/env bash
# Prints a NODE_PATH under which AWS's durable execution SDK for JavaScript is installed,
# installing it first if needed ($FLOWBROKER_CACHE/durable-node, default
# ~/.cache/flowbroker/durable-node): what scripts/durable-host-node.js's handlers require.
# Pinned: @aws/durable-execution-sdk-js 2.4.0 (Apache-2.0), with the AWS SDK v3 Lambda client.
set -euo pipefail

CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
DIR="$CACHE/durable-node"
PKG=@aws/durable-execution-sdk-js@2.4.0
STAMP="$DIR/.flowbroker-$(echo "$PKG" | md5sum | cut -c1-12)"

command -v npm >/dev/null 2>&1 || { echo "error: npm is needed for the JavaScript durable SDK" >&2; exit 1; }
if [ ! -e "$STAMP" ]; then
  echo "installing the durable execution SDK for JavaScript ($PKG) into $DIR" >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  (cd "$DIR" && echo '{"private": true}' > package.json \
    && npm install --silent --no-audit --no-fund --loglevel=error "$PKG" >&2)
  touch "$STAMP"
fi
echo "$DIR/node_modules"
