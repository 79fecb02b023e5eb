#!/usr/bin/env bash
# Prints the path of the Python of virtualenv NAME under $FLOWBROKER_CACHE (default
# ~/.cache/flowbroker), made with PACKAGES first if it does not have exactly them (a stamp
# names the pinned set). Used by durable-sdk.sh and swf-sdk.sh.
#   venv.sh NAME WHAT PACKAGE...
set -euo pipefail

NAME="$1" WHAT="$2"
shift 2
CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
VENV="$CACHE/$NAME"
STAMP="$VENV/.flowbroker-$(echo "$*" | md5sum | cut -c1-12)"

if [ ! -e "$STAMP" ]; then
  echo "installing $WHAT ($*) into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" >&2
  touch "$STAMP"
fi
echo "$VENV/bin/python"
