"""LeNet on Fashion-MNIST with and without augmentation: test accuracy after E epochs per seed.

Trains examples/lenet.dtnn (its train section: SGD lr 0.01 momentum 0.9, batch 64) for --epochs
(15) epochs with each of seeds 1-5, once without augmentation and once with --augment (default
crop_flip(pad=2): a random 28x28 crop of the image padded by 2 zeros, and a flip with probability
0.5, added to a copy of the train section), and prints the test accuracy of the last epoch per
seed, the difference, and the means.

  python3 bench/augment_accuracy.py [--epochs 15] [--seeds 1,2,3,4,5] [--augment CALL]
                                    [--threads T] [--build build]
"""
import argparse
import json
import os
import subprocess
import sys


def run(args, seed, model, name, out):
    metrics = os.path.join(out, f"{name}-seed{seed}.jsonl")
    cmd = [os.path.join(args.build, "bin", "dtnn-run"), model, "--epochs",
           str(args.epochs), "--seed", str(seed), "--no-progress", "--metrics", metrics]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if os.path.exists(metrics):
        os.remove(metrics)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    records = [json.loads(line) for line in open(metrics)]
    return records[-1]["test_acc"] * 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--augment", default="crop_flip(pad=2)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = os.path.join(args.build, "bench-augment")
    os.makedirs(out, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    # The model with the augmentation added to its train section.
    text = open("examples/lenet.dtnn").read()
    augmented = os.path.join(out, "lenet_augmented.dtnn")
    marker = "  data      = fashion_mnist()\n"
    assert marker in text, "examples/lenet.dtnn's train section changed"
    open(augmented, "w").write(text.replace(marker, marker + f"  augment   = {args.augment}\n"))
    print(f"LeNet, Fashion-MNIST, test accuracy after epoch {args.epochs}")
    print(f"{'seed':>4} {'none':>8} {'augmented':>10} {'gain':>7}   ({args.augment})")
    base, aug = [], []
    for seed in seeds:
        base.append(run(args, seed, "examples/lenet.dtnn", "none", out))
        aug.append(run(args, seed, augmented, "augmented", out))
        print(f"{seed:>4} {base[-1]:>7.2f}% {aug[-1]:>9.2f}% {aug[-1] - base[-1]:>+6.2f}",
              flush=True)
    mb, ma = sum(base) / len(base), sum(aug) / len(aug)
    print(f"{'mean':>4} {mb:>7.2f}% {ma:>9.2f}% {ma - mb:>+6.2f}")
    wins = sum(a > b for a, b in zip(aug, base))
    print(f"{args.augment} beats no augmentation for {wins} of {len(seeds)} seeds")
    sys.exit(0)


if __name__ == "__main__":
    main()
