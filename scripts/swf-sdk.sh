#!/usr/bin/env bash
# Prints the path of a Python interpreter that has simpleflow, a maintained framework for
# Amazon SWF deciders and activity workers, making its virtualenv first if needed
# ($FLOWBROKER_CACHE/swf-venv, default ~/.cache/flowbroker/swf-venv). The SWF tests run
# simpleflow's own processes (decider, workers, standalone) against the broker with it.
#
# Pinned: simpleflow 0.36.0 (MIT) and the boto3/botocore it runs on.
set -euo pipefail

exec "$(dirname "$0")/venv.sh" swf-venv "simpleflow" \
  simpleflow==0.36.0 \
  boto3==1.44.5 botocore==1.44.5
