"""Accuracy of mixed precision: trains a model in float32 and in bf16 (dtnn-run --precision) with
several seeds and prints, epoch by epoch, the mean test accuracy and training loss of each side by
side, and the difference of the means after epoch 5 and after the last epoch.

Usage (from the repository root):
  /usr/bin/python3 bench/precision_accuracy.py                       LeNet, 15 epochs, seeds 1-5
  /usr/bin/python3 bench/precision_accuracy.py --model bench/models/resnet_fmnist.dtnn --epochs 5
  options: --seeds 1,2,3  --precisions f32,bf16  --threads T  --backend B  --build-dir DIR
           --out DIR (the metrics files; default BUILD_DIR/bench-precision)

Each run is `dtnn-run MODEL --precision P --seed S --epochs E --metrics FILE` on the model's own
data (Fashion-MNIST from Debian's dataset-fashion-mnist for both models here).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="examples/lenet.dtnn")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--precisions", default="f32,bf16")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--backend", default=None)
    p.add_argument("--build-dir", default="build")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    precisions = a.precisions.split(",")
    build = os.path.join(REPO, a.build_dir)
    out = a.out or os.path.join(build, "bench-precision")
    os.makedirs(out, exist_ok=True)
    stem = os.path.splitext(os.path.basename(a.model))[0]
    runs = {}
    for prec in precisions:
        for seed in seeds:
            metrics = os.path.join(out, f"{stem}.{prec}.seed{seed}.jsonl")
            cmd = [os.path.join(build, "bin", "dtnn-run"), os.path.join(REPO, a.model),
                   "--precision", prec, "--seed", str(seed), "--epochs", str(a.epochs),
                   "--threads", str(a.threads), "--no-progress", "--metrics", metrics]
            cmd += ["--backend", a.backend] if a.backend else []
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
            runs[prec, seed] = [json.loads(l) for l in open(metrics) if l.strip()]
            last = runs[prec, seed][-1]
            print(f"{stem} {prec} seed {seed}: test accuracy {100 * last['test_acc']:.2f}% "
                  f"({last.get('images_per_s') or 0:.0f} images/s)", flush=True)

    def mean(prec, epoch, key, scale=1.0):
        return statistics.mean(scale * runs[prec, s][epoch][key] for s in seeds)

    head = "epoch" + "".join(f"  {p} test_acc  {p} train_loss" for p in precisions)
    print(f"\n{stem}: means over seeds {a.seeds}")
    print(head)
    for e in range(a.epochs):
        print(f"{e + 1:5d}" + "".join(f"  {mean(p, e, 'test_acc', 100):12.2f}"
                                      f"  {mean(p, e, 'train_loss'):14.4f}" for p in precisions))
    if len(precisions) == 2:
        for e in sorted({min(5, a.epochs), a.epochs}):
            d = mean(precisions[1], e - 1, "test_acc", 100) - mean(precisions[0], e - 1, "test_acc", 100)
            print(f"after epoch {e}: {precisions[1]} - {precisions[0]} = {d:+.2f} points")


if __name__ == "__main__":
    main()
