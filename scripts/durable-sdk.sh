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

exec "$(dirname "$0")/venv.sh" durable-venv "the durable execution SDK for Python" \
  aws-durable-execution-sdk-python==3.0.0 aws-durable-execution-sdk-python-testing==1.4.0 \
  boto3==1.44.5 botocore==1.44.5
