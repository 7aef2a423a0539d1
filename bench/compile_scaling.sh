#!/usr/bin/env bash
# Checks that compile time grows about linearly with the size of the input, in two cases, each
# at N = 500, 1000, 2000, ... up to the largest N:
#
#   import-chain  N files, each defining a block and importing the next; the main file imports
#                 the first and calls every block in turn (`dtnnc compile main.dtnn`);
#   plan-vgg      a VGG deepened to N 3x3 convolutions with ReLU at 8x8 (std/vgg.dtnn's vgg),
#                 its train and eval plans (`dtnnc compile --emit=plan --batch 8`).
#
# Prints, per case and N, the best of RUNS CPU times, the instructions dtnnc executed (one run
# under valgrind's cachegrind, without its cache simulation) and each one's ratio to the
# previous N's. Fails, naming the case, when a doubling of N costs more than 2.1 times the
# instructions: work that grows with N^2 shows there long before it dominates the time.
#
# The check is on instructions, not on time, because the count is the same on every run while
# the time is not: the memory system makes a doubling cost 2.0 to 2.4 times the time on a quiet
# machine (the plans of 4000 layers hold 600 MB), and a shared machine's other tenants move it
# further. The time is CPU time (user + system), which they disturb less than wall-clock time;
# wall-clock seconds are printed beside it, and the runs of all N alternate, so a busy moment
# slows them alike.
#
#   bash bench/compile_scaling.sh [MAX_N]     # default 4000, or $MAX_N
#
# Environment: DTNN_BUILD_DIR (default build), DTNNC (default $DTNN_BUILD_DIR/bin/dtnnc), RUNS
# (default 3), FLOOR (default 0.05 seconds: a smaller time counts as FLOOR in a ratio).
# OMP_NUM_THREADS defaults to 1 here: otherwise dtnnc samples the CPUs' load for 50 ms and the
# plan's kernels depend on it. Needs valgrind (Debian's package `valgrind`).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
DTNNC="${DTNNC:-${DTNN_BUILD_DIR:-build}/bin/dtnnc}"
MAX_N="${1:-${MAX_N:-4000}}"
RUNS="${RUNS:-3}"
FLOOR="${FLOOR:-0.05}"
LIMIT=2.1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

die() { echo "compile_scaling.sh: error: $*" >&2; exit 2; }
[[ -x "$DTNNC" ]] || die "$DTNNC not built"
[[ "$MAX_N" =~ ^[1-9][0-9]*$ ]] && ((MAX_N >= 500)) || die "the largest N must be an integer of at least 500"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
[[ "$FLOOR" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "FLOOR must be a number of seconds"
command -v valgrind >/dev/null || die "valgrind not found (Debian: apt-get install valgrind)"

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

# Sets CMD to the dtnnc command of case $1 at size $2.
command_of() {
  case "$1" in
  import-chain) CMD=("$DTNNC" compile "$WORK/chain$2/main.dtnn" -o /dev/null) ;;
  plan-vgg) CMD=("$DTNNC" compile "$WORK/vgg$2.dtnn" --emit=plan --batch 8 -o /dev/null) ;;
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

declare -A cpu wall instr

# Runs case $1 RUNS times at every N, alternating the sizes so that each run of each N sees the
# machine in a similar state, and keeps each N's best time in cpu and wall.
measure() {
  local r n t c w
  for ((r = 0; r < RUNS; r++)); do
    for n in "${SIZES[@]}"; do
      command_of "$1" "$n"
      t="$(time_once "${CMD[@]}")" || exit 2
      read -r c w <<<"$t"
      if [[ -z "${cpu[$n]:-}" ]] || awk -v a="$c" -v b="${cpu[$n]}" 'BEGIN { exit !(a < b) }'; then
        cpu[$n]="$c"
        wall[$n]="$w"
      fi
    done
  done
}

# Prints the instructions case $1 executes at size $2 (cachegrind's "I refs", summed over the
# processes, should DTNNC be a wrapper).
count_instructions() {
  local count
  command_of "$1" "$2"
  rm -f "$WORK"/valgrind.*
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --trace-children=yes \
    --log-file="$WORK/valgrind.%p" "${CMD[@]}" >/dev/null 2>"$WORK/stderr" || {
    cat "$WORK/stderr" "$WORK"/valgrind.* >&2
    die "'${CMD[*]}' failed under valgrind"
  }
  count="$(sed -n 's/.*I[[:space:]]*refs:[[:space:]]*//p' "$WORK"/valgrind.* | tr -d ',' |
    awk '{ s += $1 } END { if (NR) printf "%d\n", s }')"
  [[ "$count" =~ ^[0-9]+$ ]] || die "no instruction count in valgrind's output"
  echo "$count"
}

# Prints $1 / $2, with $2 counted as $3 if smaller.
ratio() {
  awk -v a="$1" -v b="$2" -v f="${3:-0}" 'BEGIN { printf "%.2f", a / (b > f ? b : f) }'
}

failures=()
printf '%-13s %6s %9s %9s %7s %15s %7s\n' case N cpu_s wall_s ratio instructions ratio
for case in import-chain plan-vgg; do
  cpu=()
  wall=()
  instr=()
  measure "$case"
  prev=""
  for n in "${SIZES[@]}"; do
    instr[$n]="$(count_instructions "$case" "$n")" || exit 2
    time_ratio="-"
    instr_ratio="-"
    if [[ -n "$prev" ]]; then
      time_ratio="$(ratio "${cpu[$n]}" "${cpu[$prev]}" "$FLOOR")"
      instr_ratio="$(ratio "${instr[$n]}" "${instr[$prev]}")"
      if awk -v r="$instr_ratio" -v l="$LIMIT" 'BEGIN { exit !(r > l) }'; then
        failures+=("$case: N=$n executed ${instr_ratio}x the instructions of N=$prev (${instr[$n]} against ${instr[$prev]}; the limit is ${LIMIT}x)")
      fi
    fi
    printf '%-13s %6d %9s %9s %7s %15s %7s\n' "$case" "$n" "${cpu[$n]}" "${wall[$n]}" \
      "$time_ratio" "${instr[$n]}" "$instr_ratio"
    prev="$n"
  done
done

if ((${#failures[@]} > 0)); then
  for f in "${failures[@]}"; do echo "compile_scaling.sh: error: $f" >&2; done
  exit 1
fi
