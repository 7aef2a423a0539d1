"""LeNet on Fashion-MNIST with and without augmentation: test accuracy after E epochs per seed.

Trains examples/lenet.dtnn (its train section: SGD lr 0.01 momentum 0.9, batch 64) for --epochs
(15) epochs with each of seeds 1-5, once with augment none and once with --augment (crop_flip: a
random 28x28 crop of the image padded by 4 zeros, and a flip with probability 0.5), and prints the
test accuracy of the last epoch per seed, the difference, and the means.

  python3 bench/augment_accuracy.py [--epochs 15] [--seeds 1,2,3,4,5] [--augment crop_flip]
                                    [--threads T] [--build build]
"""
import argparse
import json
import os
import subprocess
import sys


def run(args, seed, augment, out):
    metrics = os.path.join(out, f"{augment}-seed{seed}.jsonl")
    cmd = [os.path.join(args.build, "bin", "dtnn-run"), "examples/lenet.dtnn", "--epochs",
           str(args.epochs), "--seed", str(seed), "--augment", augment, "--no-progress",
           "--metrics", metrics]
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
    ap.add_argument("--augment", default="crop_flip")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = os.path.join(args.build, "bench-augment")
    os.makedirs(out, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"LeNet, Fashion-MNIST, test accuracy after epoch {args.epochs}")
    print(f"{'seed':>4} {'none':>8} {args.augment:>10} {'gain':>7}")
    base, aug = [], []
    for seed in seeds:
        base.append(run(args, seed, "none", out))
        aug.append(run(args, seed, args.augment, out))
        print(f"{seed:>4} {base[-1]:>7.2f}% {aug[-1]:>9.2f}% {aug[-1] - base[-1]:>+6.2f}",
              flush=True)
    mb, ma = sum(base) / len(base), sum(aug) / len(aug)
    print(f"{'mean':>4} {mb:>7.2f}% {ma:>9.2f}% {ma - mb:>+6.2f}")
    wins = sum(a > b for a, b in zip(aug, base))
    print(f"{args.augment} beats none for {wins} of {len(seeds)} seeds")
    sys.exit(0)


if __name__ == "__main__":
    main()
