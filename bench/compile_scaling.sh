#!/usr/bin/env bash
# Checks that compile time grows about linearly with the size of the input, in two cases, each
# at N = 500, 1000, 2000, ... up to the largest N:
#
#   import-chain  N files, each defining a block and importing the next; the main file imports
#                 the first and calls every block in turn (`dtnnc compile main.dtnn`);
#   plan-vgg      a VGG deepened to N 3x3 convolutions with ReLU at 8x8 (std/vgg.dtnn's vgg),
#                 its train and eval plans (`dtnnc compile --emit=plan --batch 8`).
#
# Prints, per case and N, the best of RUNS times and its ratio to the previous N's; fails,
# naming the case, when a doubling of N costs more than 2.5 times the time (a case over the
# limit is measured RUNS times more first, and its best times count).
#
#   bash bench/compile_scaling.sh [MAX_N]     # default 4000, or $MAX_N
#
# Environment: DTNN_BUILD_DIR (default build), DTNNC (default $DTNN_BUILD_DIR/bin/dtnnc), RUNS
# (default 3), FLOOR (default 0.05 seconds: a smaller time counts as FLOOR in a ratio, so that
# the timer noise of small runs cannot fail the check).
#
# The time is CPU time (user + system) of dtnnc, which other processes on a shared machine
# disturb less than wall-clock time; wall-clock seconds are printed beside it. The runs of all
# N alternate, so a busy moment slows them alike. OMP_NUM_THREADS defaults to 1 here: otherwise
# dtnnc samples the CPUs' load for 50 ms and the plan's kernels depend on it.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
DTNNC="${DTNNC:-${DTNN_BUILD_DIR:-build}/bin/dtnnc}"
MAX_N="${1:-${MAX_N:-4000}}"
RUNS="${RUNS:-3}"
FLOOR="${FLOOR:-0.05}"
LIMIT=2.5
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

die() { echo "compile_scaling.sh: error: $*" >&2; exit 2; }
[[ -x "$DTNNC" ]] || die "$DTNNC not built"
[[ "$MAX_N" =~ ^[1-9][0-9]*$ ]] && ((MAX_N >= 500)) || die "the largest N must be an integer of at least 500"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
[[ "$FLOOR" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "FLOOR must be a number of seconds"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

SIZES=()
for ((n = 500; n <= MAX_N; n *= 2)); do SIZES+=("$n"); done

# Writes the import chain of $2 files into folder $1: main.dtnn imports f1.dtnn, fI.dtnn defines
# block bI and imports f(I+1).dtnn.
write_chain() {
  local dir="$1" n="$2" i
  mkdir -p "$dir"
  {
    printf 'import "f1.dtnn"\n\nmodel Chain(x: f32[N, 8]) -> f32[N, 8] {\n  var h = x\n'
    for ((i = 1; i <= n; i++)); do printf '  h = b%d(h)\n' "$i"; done
    printf '  return h\n}\n'
  } >"$dir/main.dtnn"
  for ((i = 1; i <= n; i++)); do
    {
      ((i == n)) || printf 'import "f%d.dtnn"\n\n' "$((i + 1))"
      printf 'block b%d(x) { return x |> relu }\n' "$i"
    } >"$dir/f$i.dtnn"
  done
}

# Writes a VGG of $2 convolutions to file $1.
write_vgg() {
  printf 'import "std/vgg.dtnn"\n\nmodel DeepVGG(x: f32[N, 3, 8, 8]) -> f32[N, 10] {\n  return x |> vgg([(8, %d)]) |> flatten |> dense(10)\n}\n' "$2" >"$1"
}

# Runs case $1 at size $2.
run_case() {
  case "$1" in
  import-chain) "$DTNNC" compile "$WORK/chain$2/main.dtnn" -o /dev/null ;;
  plan-vgg) "$DTNNC" compile "$WORK/vgg$2.dtnn" --emit=plan --batch 8 -o /dev/null ;;
  esac
}

# Prints "CPU_SECONDS WALL_SECONDS" of one run of $@; fails if the command fails.
time_once() {
  local TIMEFORMAT='%3U %3S %3R' t
  t="$( { time "$@" >/dev/null 2>"$WORK/stderr"; } 2>&1 )" || {
    cat "$WORK/stderr" >&2
    die "'$*' failed"
  }
  awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' <<<"$t"
}

for n in "${SIZES[@]}"; do
  write_chain "$WORK/chain$n" "$n"
  write_vgg "$WORK/vgg$n.dtnn" "$n"
done

declare -A cpu wall

# Runs case $1 RUNS times at every N, alternating the sizes so that each run of each N sees the
# machine in a similar state, and keeps each N's best time in cpu and wall.
measure() {
  local r n t c w
  for ((r = 0; r < RUNS; r++)); do
    for n in "${SIZES[@]}"; do
      t="$(time_once run_case "$1" "$n")" || exit 2
      read -r c w <<<"$t"
      if [[ -z "${cpu[$n]:-}" ]] || awk -v a="$c" -v b="${cpu[$n]}" 'BEGIN { exit !(a < b) }'; then
        cpu[$n]="$c"
        wall[$n]="$w"
      fi
    done
  done
}

# Prints the ratio of the best time at N=$1 to that at N=$2, which counts as FLOOR if smaller.
ratio_of() {
  awk -v a="${cpu[$1]}" -v b="${cpu[$2]}" -v f="$FLOOR" 'BEGIN { printf "%.2f", a / (b > f ? b : f) }'
}

# Prints the first doubling of case $1 that costs more than LIMIT times the time, if any.
first_failure() {
  local n prev="" ratio
  for n in "${SIZES[@]}"; do
    if [[ -n "$prev" ]]; then
      ratio="$(ratio_of "$n" "$prev")"
      if awk -v r="$ratio" -v l="$LIMIT" 'BEGIN { exit !(r > l) }'; then
        echo "$1: N=$n took ${ratio}x the time of N=$prev (${cpu[$n]} s against ${cpu[$prev]} s; the limit is ${LIMIT}x)"
        return
      fi
    fi
    prev="$n"
  done
}

failures=()
printf '%-13s %6s %9s %9s %7s\n' case N cpu_s wall_s ratio
for case in import-chain plan-vgg; do
  cpu=()
  wall=()
  measure "$case"
  # A doubling over the limit is measured again before it counts: a busy moment on a shared
  # machine may slow one size more than another, a regression slows it every time.
  [[ -z "$(first_failure "$case")" ]] || measure "$case"
  failure="$(first_failure "$case")"
  [[ -z "$failure" ]] || failures+=("$failure")
  prev=""
  for n in "${SIZES[@]}"; do
    ratio="-"
    [[ -z "$prev" ]] || ratio="$(ratio_of "$n" "$prev")"
    printf '%-13s %6d %9s %9s %7s\n' "$case" "$n" "${cpu[$n]}" "${wall[$n]}" "$ratio"
    prev="$n"
  done
done

if ((${#failures[@]} > 0)); then
  for f in "${failures[@]}"; do echo "compile_scaling.sh: error: $f" >&2; done
  exit 1
fi
