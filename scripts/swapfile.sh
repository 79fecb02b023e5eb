#!/usr/bin/env bash
# Adds (or, with `off`, removes) a swap file for long load benches, as root:
#   scripts/swapfile.sh 24     # a 24 GiB swap file at $FLOWBROKER_SWAPFILE
#   scripts/swapfile.sh off
#
# The test tansu (scripts/tansu.sh) keeps every record in memory: a 10-minute overload of
# `cargo bench --bench sustained` and its drain outgrow a 24 GiB machine. Records already
# consumed are not read again, so the kernel can page them out. Nothing in `scripts/test.sh`
# uses swap; the bench counts the broker's own swapped memory with its RSS.
set -euo pipefail

# as `swapon --show` names it: absolute, links resolved
FILE="$(realpath -m "${FLOWBROKER_SWAPFILE:-/var/tmp/flowbroker.swap}")"
# (grep reads all of it: with -q it could stop early, and pipefail report the SIGPIPE)
in_use() { swapon --show=NAME --noheadings | grep -Fx -- "$FILE" >/dev/null; }
case "${1:-}" in
  off)
    if in_use; then swapoff "$FILE"; fi
    rm -f "$FILE"
    ;;
  '' | *[!0-9]*)
    echo "usage: $0 <GiB> | off" >&2
    exit 2
    ;;
  *)
    if in_use; then
      echo "$FILE is already in use" >&2
      exit 1
    fi
    rm -f "$FILE"
    fallocate -l "${1}G" "$FILE"
    chmod 600 "$FILE"
    mkswap -q "$FILE"
    swapon "$FILE"
    swapon --show
    ;;
esac
