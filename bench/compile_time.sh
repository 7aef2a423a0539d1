#!/usr/bin/env bash
# Times `dtnnc compile MODEL -o /dev/null` over several runs and prints the best and the median
# wall-clock time.
#
#   bash bench/compile_time.sh [MODEL...]     # default: examples/resnet152.dtnn
#
# Paths are relative to the repository root.
#
# Environment: DTNN_BUILD_DIR (default build), RUNS (default 10).
# Run it on a quiet machine; the best time is the one to compare.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
DTNNC="${DTNN_BUILD_DIR:-build}/bin/dtnnc"
RUNS="${RUNS:-10}"
MODELS=("$@")
((${#MODELS[@]} > 0)) || MODELS=(examples/resnet152.dtnn)

[[ -x "$DTNNC" ]] || { echo "compile_time.sh: error: $DTNNC not built" >&2; exit 1; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "compile_time.sh: error: RUNS must be a positive integer" >&2; exit 2; }

# Prints the wall-clock seconds of one compile of $1; fails if the compile fails.
time_once() {
  local start end
  start="$(date +%s.%N)"
  "$DTNNC" compile "$1" -o /dev/null
  end="$(date +%s.%N)"
  echo "$end - $start" | awk '{ printf "%.4f\n", $1 - $3 }'
}

printf '%-36s %5s %10s %10s\n' model runs best_s median_s
for model in "${MODELS[@]}"; do
  [[ -f "$model" ]] || { echo "compile_time.sh: error: $model not found" >&2; exit 1; }
  "$DTNNC" compile "$model" -o /dev/null   # warm-up: page cache and dynamic loader
  times=()
  for ((i = 0; i < RUNS; i++)); do
    times+=("$(time_once "$model")")
  done
  sorted="$(printf '%s\n' "${times[@]}" | sort -g)"
  best="$(head -n1 <<<"$sorted")"
  median="$(awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }' <<<"$sorted")"
  printf '%-36s %5d %10s %10s\n' "$model" "$RUNS" "$best" "$median"
done
