#!/usr/bin/env bash
# Trains examples/lenet.dtnn on Fashion-MNIST with seeds 1, 2 and 3 and reports the test accuracy
# per epoch, the mean after epoch 5 and after the last epoch, the training images per second and
# the peak memory, from dtnn-run's --metrics files.
#
#   bash bench/lenet_accuracy.sh [EPOCHS] [THREADS]      (defaults: 5 and all cores)
#
# Environment: DTNN_BUILD_DIR (default build), DTNN_BACKEND (default: dtnn-run's), DTNN_MODEL
# (default examples/lenet.dtnn: another model file with the same train section to compare, for
# example one with a schedule), DTNN_OUT (default BUILD_DIR/bench-lenet).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR="${DTNN_BUILD_DIR:-build}"
EPOCHS="${1:-5}"
THREADS="${2:-$(nproc)}"
MODEL="${DTNN_MODEL:-examples/lenet.dtnn}"
OUT="${DTNN_OUT:-$BUILD_DIR/bench-lenet}"
mkdir -p "$OUT"
BACKEND=()
[[ -n "${DTNN_BACKEND:-}" ]] && BACKEND=(--backend "$DTNN_BACKEND")
for seed in 1 2 3; do
  "$BUILD_DIR/bin/dtnn-run" "$MODEL" --epochs "$EPOCHS" --seed "$seed" \
    --threads "$THREADS" "${BACKEND[@]}" --no-progress \
    --metrics "$OUT/seed$seed.jsonl" >"$OUT/seed$seed.log"
  echo "seed $seed: $(tail -n 1 "$OUT/seed$seed.log")"
done
/usr/bin/python3 - "$OUT" "$EPOCHS" <<'PY'
import json, sys
out, epochs = sys.argv[1], int(sys.argv[2])
runs = {s: [json.loads(l) for l in open(f"{out}/seed{s}.jsonl")] for s in (1, 2, 3)}
print("epoch  " + "  ".join(f"seed{s} test_acc" for s in runs) + "   mean")
for e in range(epochs):
    accs = [runs[s][e]["test_acc"] * 100 for s in runs]
    print(f"{e + 1:5d}  " + "  ".join(f"{a:14.2f}" for a in accs) + f"  {sum(accs) / 3:6.2f}")
ips = [r["images_per_s"] for s in runs for r in runs[s] if r["images_per_s"] is not None]
rss = max(r["peak_rss_bytes"] for s in runs for r in runs[s])
print(f"images/s per epoch: min {min(ips):.0f}, median {sorted(ips)[len(ips) // 2]:.0f}, max {max(ips):.0f}")
print(f"peak RSS: {rss / 2**20:.1f} MiB")
PY
