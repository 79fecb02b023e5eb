#!/usr/bin/env bash
# Fuzzes every untrusted input with AFL++ (afl.rs, stable toolchain): workflow files, expressions,
# Kafka records, HTTP CloudEvents, config. Usage:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 60 s for each of the five targets
#
# Installs cargo-afl and builds AFL++ the first time (under ~/.cache/flowbroker-tools and
# ~/.local/share/afl.rs), writes the seed corpora from the fixtures, runs each target for
# SECONDS, replays fuzz/regressions/TARGET, and fails if any input crashed a target. Findings
# stay in $FLOWBROKER_FUZZ_OUT (default ~/.cache/flowbroker/fuzz), outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(workflow expr record http config)

TOOLS="${FLOWBROKER_TOOLS:-$HOME/.cache/flowbroker-tools}"
OUT="${FLOWBROKER_FUZZ_OUT:-$HOME/.cache/flowbroker/fuzz}"
export PATH="$TOOLS/afl/bin:$PATH"
export CARGO_TARGET_DIR="${FLOWBROKER_FUZZ_TARGET:-$HOME/.cache/flowbroker-fuzz-target}/afl"

if ! command -v cargo-afl >/dev/null; then
  echo "== installing cargo-afl 0.18.2" >&2
  cargo install cargo-afl --version 0.18.2 --locked --root "$TOOLS/afl" >&2
fi
# builds AFL++ for this rustc once; says so (and fails) when it is already there
cargo afl config --build >/dev/null 2>&1 || true

cd fuzz
echo "== building the targets (afl instrumentation)"
# every binary, the helpers (seeds, replay) too: instrumented binaries run as usual outside
# afl-fuzz, and one build is all a fresh machine pays for
cargo afl build --release --locked --bins 2>&1 | tail -1
BIN="$CARGO_TARGET_DIR/release"
SEEDS="$OUT/seeds"
rm -rf "$SEEDS"
"$BIN/seeds" "$SEEDS" ..

export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1
status=0
for t in "${TARGETS[@]}"; do
  findings="$OUT/findings/$t"
  rm -rf "$findings"
  mkdir -p "$findings"
  echo "== fuzzing $t for ${SECS}s"
  cargo afl fuzz -i "$SEEDS/$t" -o "$findings" -V "$SECS" "$BIN/$t" >"$findings/afl.log" 2>&1 || {
    echo "afl-fuzz failed for $t; its log:" >&2
    tail -30 "$findings/afl.log" >&2
    status=1
    continue
  }
  stats="$findings/default/fuzzer_stats"
  execs=$(awk -F: '/^execs_done/ {gsub(/ /, "", $2); print $2}' "$stats")
  corpus=$(awk -F: '/^corpus_count/ {gsub(/ /, "", $2); print $2}' "$stats")
  crashes=$(find "$findings/default/crashes" -type f ! -name README.txt | wc -l)
  hangs=$(find "$findings/default/hangs" -type f ! -name README.txt | wc -l)
  echo "$t: ${SECS}s, $execs executions, corpus $corpus, $crashes crashes, $hangs hangs"
  if [ "$crashes" -gt 0 ]; then
    "$BIN/replay" "$t" "$findings/default/crashes" || true
    status=1
  fi
  if [ -d "regressions/$t" ]; then
    "$BIN/replay" "$t" "regressions/$t" || status=1
  fi
done
exit $status
