#!/usr/bin/env bash
# Sets up a Debian 12 machine for dtnn, builds it, and runs either the main job or the test suite.
#
#   bash tools/quickstart.sh run    # install what is missing, build, run the main job
#   bash tools/quickstart.sh test   # install what is missing, build, run ctest
#   bash tools/quickstart.sh deps   # only install what is missing
#   bash tools/quickstart.sh build  # install what is missing and build
#
# Environment:
#   DTNN_BUILD_DIR    build directory (default: build, relative to the repository root)
#   DTNN_CMAKE_ARGS   extra arguments for the first configure, e.g. "-DCMAKE_BUILD_TYPE=Debug"
#
# It needs root (or sudo) only when a package is missing. It never prompts, so it runs the same
# with or without a terminal and under CI=true.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
BUILD_DIR="${DTNN_BUILD_DIR:-build}"
JOBS="$(nproc)"

# Debian 12 packages the build, the tests and the main job need. The antlr4 package pulls a Java
# runtime itself; libcairo2-dev draws dtnn-plot's PNGs; ocl-icd-opencl-dev must be named because
# oneDNN's CMake package needs the OpenCL headers and --no-install-recommends would leave them
# out. python3-psutil lets lit enforce its per-test timeout. dataset-fashion-mnist and fortunes
# are the data the examples train on: images, and text for the language model.
PACKAGES=(
  build-essential cmake ninja-build git python3 python3-psutil
  antlr4 libantlr4-runtime-dev
  llvm-19-dev llvm-19-tools
  libdnnl-dev ocl-icd-opencl-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  libjpeg62-turbo-dev libpng-dev libturbojpeg0-dev libcairo2-dev
  libonnx-dev libprotobuf-dev libonnx-testdata
  dataset-fashion-mnist fortunes
  clang libclang-rt-14-dev
)
# What the test suite needs besides: PyTorch and torchvision, to check converted torchvision
# weights against torchvision's own outputs (with OpenBLAS's threaded build, which PyTorch
# would otherwise replace with the slow reference BLAS).
# pkg-config builds a program against an installed libdtnn, as the install test does; valgrind
# counts the instructions compile_scaling.sh checks; graphviz renders `dtnnc --emit=dot`; python3-onnx
# reads the expected tensors of ONNX's backend tests (tools/onnx_conformance.py).
TEST_PACKAGES=(python3-torchvision python3-onnx libopenblas0-pthread pkg-config valgrind graphviz)

log() { printf '==> %s\n' "$*"; }
die() { printf 'quickstart: error: %s\n' "$*" >&2; exit 1; }

# Prints the packages of PACKAGES that dpkg does not report as installed.
missing_packages() {
  local pkg status
  for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || printf '%s\n' "$pkg"
  done
}

# Installs the missing packages; runs `apt-get update` once, and only if something is missing.
ensure_packages() {
  command -v dpkg-query >/dev/null || die "dpkg-query not found; this script expects Debian 12"
  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    log "all ${#PACKAGES[@]} required packages are installed"
    return
  fi
  log "installing: ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "missing packages and not root: ${missing[*]}"
    sudo=(sudo -n)
  fi
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
  "${apt[@]}" update
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
}

# Configures the build directory with Ninja the first time; later runs reuse its cache (and its
# generator), so a developer's own configuration is kept.
configure() {
  if [[ -f "$BUILD_DIR/CMakeCache.txt" ]]; then
    log "reconfiguring $BUILD_DIR"
    cmake -S . -B "$BUILD_DIR"
  else
    log "configuring $BUILD_DIR"
    local extra=()
    if [[ -n "${DTNN_CMAKE_ARGS:-}" ]]; then
      read -r -a extra <<<"$DTNN_CMAKE_ARGS"
    fi
    cmake -S . -B "$BUILD_DIR" -G Ninja -DPython3_EXECUTABLE=/usr/bin/python3 "${extra[@]}"
  fi
}

build() {
  log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" --parallel "$JOBS"
}

# The main job: train examples/lenet.dtnn on the real Fashion-MNIST (from the Debian package
# dataset-fashion-mnist) with the settings of its train section on two MPI ranks (each reads its
# half of every batch; mpirun gives each its own core), and print the test accuracy.
main_job() {
  local run="$BUILD_DIR/bin/dtnn-run"
  [[ -x "$run" ]] || die "$run was not built"
  local mpi=(mpirun -np 2 --mca btl self,vader)
  if ((EUID == 0)); then mpi+=(--allow-run-as-root); fi
  if (($(nproc) < 2)); then mpi+=(--oversubscribe); fi
  log "training examples/lenet.dtnn on Fashion-MNIST with 2 MPI ranks (5 epochs, default backend)"
  "${mpi[@]}" "$run" examples/lenet.dtnn --metrics "$BUILD_DIR/lenet-metrics.jsonl"
  log "per-epoch metrics: $BUILD_DIR/lenet-metrics.jsonl"
}

# Runs the whole test suite; the script's exit code is ctest's.
run_tests() {
  log "running ctest in $BUILD_DIR"
  local rc=0
  (cd "$BUILD_DIR" && ctest --output-on-failure --parallel "$JOBS") || rc=$?
  return "$rc"
}

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

case "${1:-}" in
  deps) ensure_packages ;;
  build) ensure_packages; configure; build ;;
  run) ensure_packages; configure; build; main_job ;;
  test) PACKAGES+=("${TEST_PACKAGES[@]}"); ensure_packages; configure; build; run_tests ;;
  *) usage ;;
esac
