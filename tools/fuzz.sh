#!/usr/bin/env bash
# Fuzzes the front end (.dtnn source) or the textual IR (parser, verifier and the passes of the
# compile and train pipelines) with libFuzzer.
#
#   bash tools/fuzz.sh [SECONDS] [frontend|ir]     # default 60 seconds, frontend
#
# Fuzzing needs its own build directory (default build-fuzz, or DTNN_FUZZ_BUILD_DIR), configured
# with clang and -DDTNN_BUILD_FUZZERS=ON, in which every target is compiled with
# -fsanitize=address,undefined,fuzzer-no-link: the front end and the IR library are then
# instrumented for coverage and memory errors, not only the fuzz entry point. The normal build
# stays on g++ and only replays the corpus (ctest's fuzz-corpus-replay).
#
# The fuzzer works on a copy of its committed corpus (test/fuzz/corpus, test/fuzz/ir-corpus) in
# BUILD/fuzz-corpus-TARGET and saves the new interesting inputs it finds there; crashes go to
# BUILD/fuzz-artifacts-TARGET. To add the new inputs to the committed corpus, minimised:
#   BUILD/bin/dtnn-fuzz-frontend -merge=1 -max_len=4096 test/fuzz/corpus BUILD/fuzz-corpus-frontend
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
SECONDS_TO_RUN="${1:-60}"
TARGET="${2:-frontend}"
case "$TARGET" in
  frontend) CORPUS=test/fuzz/corpus; MAX_LEN=4096 ;;
  ir) CORPUS=test/fuzz/ir-corpus; MAX_LEN=16384 ;;
  *) echo "tools/fuzz.sh: unknown target '$TARGET' (frontend or ir)" >&2; exit 2 ;;
esac
BUILD_DIR="${DTNN_FUZZ_BUILD_DIR:-build-fuzz}"
SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

bash tools/quickstart.sh deps

# clang rejects a header of Debian's ANTLR 4.9 C++ runtime (Vocabulary.h: const std::vector
# members without an initializer make its defaulted constructor deleted; g++ accepts it). The
# fuzz build therefore puts a copy of the headers, with `{}` added to those members, ahead of
# the system copy with -I. The class layout is unchanged, so the installed library still fits.
ANTLR_HEADERS="$BUILD_DIR/antlr4-runtime-clang"
if [[ ! -f "$ANTLR_HEADERS/antlr4-runtime.h" ]]; then
  mkdir -p "$BUILD_DIR"
  rm -rf "$ANTLR_HEADERS"
  cp -r /usr/include/antlr4-runtime "$ANTLR_HEADERS"
  sed -i -E 's/^( *std::vector<std::string> const _[A-Za-z]+);/\1{};/' "$ANTLR_HEADERS/Vocabulary.h"
fi

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DDTNN_BUILD_FUZZERS=ON \
    -DCMAKE_CXX_FLAGS="-I$(realpath "$ANTLR_HEADERS") $SANITIZE -fsanitize=fuzzer-no-link" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)" --target "dtnn-fuzz-$TARGET"

WORK_CORPUS="$BUILD_DIR/fuzz-corpus-$TARGET"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts-$TARGET"
mkdir -p "$WORK_CORPUS" "$ARTIFACTS"
cp -n "$CORPUS"/* "$WORK_CORPUS/"
before="$(find "$WORK_CORPUS" -type f | wc -l)"

"$BUILD_DIR/bin/dtnn-fuzz-$TARGET" \
  -max_len="$MAX_LEN" \
  -max_total_time="$SECONDS_TO_RUN" \
  -timeout=10 \
  -rss_limit_mb=4096 \
  -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS/" \
  "$WORK_CORPUS"

after="$(find "$WORK_CORPUS" -type f | wc -l)"
echo "fuzz corpus: $before -> $after inputs in $WORK_CORPUS"
