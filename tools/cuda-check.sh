#!/usr/bin/env bash
# The prepared check of the cuda backend on a GPU machine, run from the repository root there with
# the bundle tools/cuda-bundle.sh made: each step under its own time limit, its whole log kept in
# $OUT (or ./cuda-check-logs), its last lines printed. The limits add up to 550 s, so that the
# whole check fits one call of at most 600 s on a machine lent for 15 minutes.
#   1 versions    the GPU, the driver, PyTorch, and the libraries every carried file finds
#   2 kernels     every cuda kernel against the reference backend (the differential tests)
#   3 steps       20 train steps on the GPU against the same steps on the CPU (strict float32)
#   4 lenet       LeNet on Fashion-MNIST, 5 epochs, on the GPU (target: 88.5% test accuracy)
#   5 profile     the profile of ResNet-50 train steps at batch 256, by layer and by kernel
#   6 ranks       two ranks sharing the GPU over MPI (the bundle's mpirun; host copies staged
#                 through pinned memory): --deterministic bit-identical to one rank, and the
#                 exposed communication of ResNet-50's train step (NCCL as a one-rank
#                 communicator is CudaDevice.NcclOneRankAllreduce, in step 2)
#   7 bench       bench/gpu_compare.py: dtnn against PyTorch on the same GPU
#
#   bash tools/cuda-check.sh [BUNDLE] [STEP...]    (default build-device, all steps)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUNDLE="${1:-build-device}"
shift || true
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(versions kernels steps lenet profile ranks bench)
LOGS="${OUT:-cuda-check-logs}"
mkdir -p "$LOGS"
B="$(cd "$BUNDLE" && pwd)"

# cuDNN, cuBLAS, NVRTC and NCCL from PyTorch's wheels, then what the bundle carries.
SP="$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || true)"
LIBS=""
for d in "$SP"/nvidia/*/lib; do [[ -d "$d" ]] && LIBS="$LIBS:$d"; done
export LD_LIBRARY_PATH="$B/lib${LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DTNN_CUDA_CACHE="$LOGS/kernel-cache" OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
# The bundle's Open MPI (tools/openmpi-bundle.sh).
export OPAL_PREFIX="$B/openmpi" PMIX_PREFIX="$B/openmpi/pmix2" PATH="$B/openmpi/bin:$PATH"
export PMIX_MCA_mca_base_component_path="$B/openmpi/pmix2/lib/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0
RUN="$B/bin/dtnn-run"

# step NAME SECONDS FUNCTION: runs the function in a shell of its own under the time limit, with
# its log, then prints the log's tail and the status.
step() {
  local name=$1 limit=$2 fn=$3
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" bash -c "$fn" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0)) s (limit $limit s)"
  tail -n "${TAIL:-40}" "$LOGS/$name.log"
}

versions() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  for f in "$B"/bin/* "$B"/lib/*.so*; do
    missing=$(ldd "$f" 2>&1 | grep "not found")
    [[ -n "$missing" ]] && echo "$f: $missing"
  done
  "$RUN" examples/lenet.dtnn --backend cuda --synthetic --steps 1 --no-progress 2>&1 | tail -n 3
  echo "libraries found: $(ldd "$B/lib/libdtnn-cuda.so" | grep -E 'cudnn|cublas|nvrtc' | awk '{print $1, $3}' | tr '\n' ' ')"
}

kernels() {
  local t="$B/bin/dtnn_unit_tests" rc=0
  "$t" --gtest_filter='DifferentialDevice.*:CudaDevice.*-CudaDevice.AsynchronousFault*' --gtest_color=no || rc=1
  # A fault leaves the device unusable for the rest of its process: a process of its own.
  "$t" --gtest_filter='CudaDevice.AsynchronousFault*' --gtest_color=no || rc=1
  return $rc
}

# The same 20 steps from the same initial weights on the GPU and on the CPU, compared tensor by
# tensor (the weights after the steps), in strict float32 and with TF32 convolutions.
trainSteps() {
  local rc=0
  for model in lenet resnet20; do
    "$RUN" "examples/$model.dtnn" --backend reference --synthetic --steps 20 --batch 32 --seed 3 \
      --no-progress --save "$LOGS/$model-cpu.st" || rc=1
    for tf32 in off conv; do
      "$RUN" "examples/$model.dtnn" --backend cuda --tf32 $tf32 --synthetic --steps 20 --batch 32 \
        --seed 3 --no-progress --save "$LOGS/$model-gpu-$tf32.st" || rc=1
      local tol=1e-5
      [[ $tf32 == conv ]] && tol=3e-3
      echo "$model, tf32 $tf32, 20 steps: GPU against CPU within $tol:"
      python3 test/tools/compare_checkpoints.py "$LOGS/$model-gpu-$tf32.st" "$LOGS/$model-cpu.st" \
        --rtol $tol --atol 1e-6 || rc=1
    done
  done
  return $rc
}

lenet() {
  # The bundle's training images are xz (for size): unpacked beside the other files first.
  local data
  data=$(mktemp -d)
  ln -s "$B"/data/fashion-mnist/*.gz "$data/"
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$B/data/fashion-mnist/train-images-idx3-ubyte.xz" "$data/train-images-idx3-ubyte"
  "$RUN" examples/lenet.dtnn --backend cuda --data "$data" --epochs 5 \
    --metrics "$LOGS/lenet-metrics.jsonl"
}

profile() {
  "$RUN" examples/resnet50.dtnn --backend cuda --synthetic --synthetic-size 1280,256 --batch 256 \
    --steps 8 --profile --no-progress
}

# Two ranks on the one GPU reduce over MPI (NCCL refuses two ranks on a device): bit-identical
# to one rank with --deterministic; then ResNet-50's step profiled, its reductions exposed.
ranks() {
  set -o pipefail
  local rc=0 mpi="mpirun --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH -x DTNN_CUDA_CACHE"
  local args="--backend cuda --synthetic --steps 10 --batch 32 --seed 5 --deterministic --no-progress"
  "$RUN" examples/lenet.dtnn $args --save "$LOGS/det1.st" | tail -n 2 || rc=1
  $mpi -np 2 "$RUN" examples/lenet.dtnn $args --save "$LOGS/det2.st" | tail -n 2 || rc=1
  if cmp "$LOGS/det1.st" "$LOGS/det2.st"; then echo "deterministic: 2 ranks on one GPU = 1 rank, bit for bit"; else rc=1; fi
  $mpi -np 2 "$RUN" examples/resnet50.dtnn --backend cuda --synthetic --synthetic-size 1024,64 \
    --batch 128 --steps 8 --profile --no-progress | grep -E -A14 "^communication|^train step|images/s" || rc=1
  return $rc
}

bench() {
  python3 bench/gpu_compare.py --build-dir "$B" --json "$LOGS/bench.jsonl" ${BENCH_ARGS:-}
}

export B RUN LOGS
export -f versions kernels trainSteps lenet profile ranks bench
for s in "${STEPS[@]}"; do
  case "$s" in
  versions) step versions 30 versions ;;
  kernels) step kernels 90 kernels ;;
  steps) step steps 90 trainSteps ;;
  lenet) step lenet 60 lenet ;;
  profile) TAIL=80 step profile 45 profile ;;
  ranks) TAIL=60 step ranks 60 ranks ;;
  bench) TAIL=80 step bench 175 bench ;;
  *) echo "cuda-check: unknown step '$s'" >&2 ;;
  esac
done
