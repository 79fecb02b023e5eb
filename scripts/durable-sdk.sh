#!/usr/bin/env bash
# Prints the path of a Python interpreter that has AWS's durable execution SDK for Python,
# making its virtualenv first if needed ($FLOWBROKER_CACHE/durable-venv, default
# ~/.cache/flowbroker/durable-venv). scripts/durable-host.py runs under it: the demo host of
# scripts/run.sh and the durable-function tests.
#
# Pinned: aws-durable-execution-sdk-python 3.0.0 (Apache-2.0), its testing package (the
# reference backend the tests compare results with) and the boto3/botocore whose
# `lambda` model has the durable execution API (>= 1.43.114).
set -euo pipefail

CACHE="${FLOWBROKER_CACHE:-$HOME/.cache/flowbroker}"
VENV="$CACHE/durable-venv"
PKGS=(aws-durable-execution-sdk-python==3.0.0 aws-durable-execution-sdk-python-testing==1.4.0
      boto3==1.44.5 botocore==1.44.5)
STAMP="$VENV/.flowbroker-$(echo "${PKGS[*]}" | md5sum | cut -c1-12)"

if [ ! -e "$STAMP" ]; then
  echo "installing the durable execution SDK for Python (${PKGS[*]}) into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PKGS[@]}" >&2
  touch "$STAMP"
fi
echo "$VENV/bin/python"
