#!/usr/bin/env bash
# Prints the path of a Python interpreter that has simpleflow, a maintained framework for
# Amazon SWF deciders and activity workers, making its virtualenv first if needed
# ($FLOWBROKER_CACHE/swf-venv, default ~/.cache/flowbroker/swf-venv). The SWF tests run
# simpleflow's own processes (decider, workers, standalone) against the broker with it.
#
# Pinned: simpleflow 0.36.0 (MIT) and the boto3/botocore it runs on.
set -euo pipefail

CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
VENV="$CACHE/swf-venv"
PKGS=(simpleflow==0.36.0 boto3==1.44.5 botocore==1.44.5)
STAMP="$VENV/.flowbroker-$(echo "${PKGS[*]}" | md5sum | cut -c1-12)"

if [ ! -e "$STAMP" ]; then
  echo "installing simpleflow (${PKGS[*]}) into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PKGS[@]}" >&2
  touch "$STAMP"
fi
echo "$VENV/bin/python"
