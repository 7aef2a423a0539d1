#!/usr/bin/env python3
"""Data-parallel scaling on this machine: two ranks against one.

For LeNet (Fashion-MNIST), ResNet-20 and the VGG-style CIFAR net (synthetic data) it measures,
in one run, interleaving the configurations so that drift hits all of them alike:
  - the global images/s of one rank with one thread and of two ranks with one thread each, and
    their ratio (the done-when target is 1.8, 90% efficiency), and the ratio with communication
    skipped (no-comm), which bounds it from above;
  - the step time of two ranks with and without communication (--skip-comm): their difference is
    the communication a step exposes;
  - the time blocking allreduces of the same buckets take when measured alone
    (build/bin/allreduce_buckets), and the exposed time as a share of it (target: 20% or less).
The ratio and the exposed time are medians of figures paired within each round.

usage: python3 bench/scaling.py [--quick] [--repeats N] [--build DIR] [--models a,b]
Run it on an otherwise idle machine; it prints the median of N runs (default 3) per figure.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, file, extra flags, steps (full run), steps (quick)
MODELS = [
    ("lenet", "examples/lenet.dtnn", [], 900, 200),
    ("resnet20", "examples/resnet20.dtnn", ["--synthetic"], 60, 15),
    ("vgg_cifar", "examples/vgg_cifar.dtnn", ["--synthetic"], 40, 10),
]


def mpirun(ranks):
    cmd = ["mpirun", "-np", str(ranks), "--mca", "btl", "self,vader"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if (os.cpu_count() or 1) < ranks:
        cmd.append("--oversubscribe")
    return cmd


def train(build, model, flags, steps, ranks, extra=()):
    """Returns (images/s, global batch) of one training run, from its metrics file."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        cmd = [os.path.join(build, "bin", "dtnn-run"), os.path.join(ROOT, model), *flags,
               "--steps", str(steps), "--threads", "1", "--no-progress", "--metrics", metrics,
               *extra]
        if ranks > 1:
            cmd = mpirun(ranks) + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=tmp)
        with open(metrics) as f:
            rec = [json.loads(line) for line in f][-1]
        return rec["images_per_s"]


def batch_of(model):
    """The batch of the model's train section."""
    with open(os.path.join(ROOT, model)) as f:
        m = re.search(r"^\s*batch\s*=\s*(\d+)", f.read(), re.M)
    return int(m.group(1)) if m else 64


def bucket_sizes(build, model, flags, steps):
    """The bytes of each bucket of a two-rank train step, from its profile."""
    cmd = mpirun(2) + [os.path.join(build, "bin", "dtnn-run"), os.path.join(ROOT, model), *flags,
                       "--steps", str(max(steps // 3, 8)), "--threads", "1", "--no-progress",
                       "--profile"]
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp).stdout
    return [int(m.group(1)) for m in re.finditer(r"^\s+bucket \d+\s+(\d+)", out, re.M)]


def blocking(build, sizes):
    cmd = mpirun(2) + [os.path.join(build, "bin", "allreduce_buckets"), *map(str, sizes)]
    return float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=",".join(m[0] for m in MODELS))
    args = ap.parse_args()
    wanted = args.models.split(",")
    print("%-10s %9s %9s %6s %8s %12s %12s %10s %10s %8s" % (
        "model", "1 rank", "2 ranks", "ratio", "no-comm", "step 2r ms", "no-comm ms", "exposed ms",
        "alone ms", "exposed%"))
    for name, model, flags, steps, quick in MODELS:
        if name not in wanted:
            continue
        n = quick if args.quick else steps
        batch = batch_of(model)
        one, two, skip = [], [], []
        for _ in range(args.repeats):
            one.append(train(args.build, model, flags, n, 1))
            two.append(train(args.build, model, flags, n, 2))
            skip.append(train(args.build, model, flags, n, 2, ["--skip-comm"]))
        sizes = bucket_sizes(args.build, model, flags, n)
        alone = blocking(args.build, sizes)
        # Medians of figures paired within a round, so that drift between rounds cancels.
        r1, r2, rs = (statistics.median(x) for x in (one, two, skip))
        ratio = statistics.median(b / a for a, b in zip(one, two))
        ceiling = statistics.median(c / a for a, c in zip(one, skip))
        step2, steps_ = batch / r2, batch / rs
        exposed = max(0.0, statistics.median(batch / b - batch / c for b, c in zip(two, skip)))
        print("%-10s %9.1f %9.1f %6.2f %8.2f %12.3f %12.3f %10.3f %10.3f %7.0f%%" % (
            name, r1, r2, ratio, ceiling, 1e3 * step2, 1e3 * steps_, 1e3 * exposed, 1e3 * alone,
            100 * exposed / alone if alone > 0 else 0))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
