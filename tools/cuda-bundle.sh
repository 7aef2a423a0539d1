#!/usr/bin/env bash
# Builds dtnn for a GPU machine and assembles what travels there, under 64 MiB: a build with the
# cuda backend and without oneDNN and the LLVM jit (which the GPU machine lacks), its programs,
# libdtnn and the cuda device module stripped, the libraries they need that a machine with
# PyTorch's CUDA wheels may lack (the ANTLR runtime, Open MPI's libraries, libjpeg, libpng,
# libgomp, ...; never cuDNN, cuBLAS, NVRTC or the CUDA runtime, which come from the wheels there),
# the standard library of blocks, and Fashion-MNIST. Open MPI is only loaded, never started: a
# run outside mpirun is one rank. tools/cuda-check.sh runs it there.
#
#   bash tools/cuda-bundle.sh [BUNDLE]     (default build-device; its build in build-cuda)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUNDLE="${1:-build-device}"
BUILD="${DTNN_CUDA_BUILD_DIR:-build-cuda}"

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -G Ninja -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDTNN_WITH_ONEDNN=OFF \
    -DDTNN_WITH_JIT=OFF -DDTNN_WITH_CUDA=ON -DDTNN_BUILD_TESTS=ON \
    -DPython3_EXECUTABLE=/usr/bin/python3
fi
ninja -C "$BUILD" -j"$(nproc)" dtnn-run dtnnc dtnn_unit_tests dtnn-cuda
[[ -f "$BUILD/lib/libdtnn-cuda.so" ]] || { echo "cuda-bundle: no cuda module was built" >&2; exit 1; }

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/share/dtnn" "$BUNDLE/data/fashion-mnist"
for p in dtnn-run dtnnc dtnn_unit_tests; do cp "$BUILD/bin/$p" "$BUNDLE/bin/"; done
cp -P "$BUILD"/lib/libdtnn.so* "$BUILD/lib/libdtnn-cuda.so" "$BUNDLE/lib/"
cp -r examples/std "$BUNDLE/share/dtnn/"

# The shared libraries the programs load besides the C and C++ runtimes and CUDA's own.
system='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso)\.'
cuda='^lib(cudnn|cublas|cublasLt|nvrtc|cudart|cuda|nccl)'
for f in "$BUNDLE"/bin/* "$BUNDLE"/lib/libdtnn-cuda.so "$BUNDLE"/lib/libdtnn.so.*.*; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $system || "$name" =~ $cuda || "$name" == libdtnn* ]] && continue
  cp -L "$path" "$BUNDLE/lib/$name"
done
find "$BUNDLE/bin" "$BUNDLE/lib" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
# mpirun and its components, for two ranks that share the GPU (the machine has no MPI).
bash tools/openmpi-bundle.sh "$BUNDLE" >/dev/null

# The training images in xz (22.6 MB against gzip's 26.4), which the check unpacks there.
for f in /usr/share/datasets/fashion-mnist/*.gz; do
  case "$f" in
  */train-images-idx3-ubyte.gz) zcat "$f" | xz -9 -T2 >"$BUNDLE/data/fashion-mnist/train-images-idx3-ubyte.xz" ;;
  *) cp "$f" "$BUNDLE/data/fashion-mnist/" ;;
  esac
done
du -sh "$BUNDLE"
size=$(du -sb "$BUNDLE" | cut -f1)
if ((size > 60 * 1024 * 1024)); then
  echo "cuda-bundle: $BUNDLE holds $size bytes, more than the 60 MiB that may travel" >&2
  exit 1
fi
echo "cuda-bundle: $BUNDLE is ready; on the GPU machine: bash tools/cuda-check.sh $BUNDLE"
