#!/usr/bin/env python3
"""Data-parallel training across the nodes of an emulated cluster (tools/netns-cluster.sh).

For each layout (2 nodes x 1 rank, 2 nodes x 2 ranks; links of --rate, 1 Gbit/s by default) and
each model (ResNet-20 and the VGG-style CIFAR net, synthetic data), in one cluster, rounds
interleaving the configurations so that drift hits all alike:
  - the step time with the buckets as the cost model sends them (auto: flat or hierarchical,
    from a network file that dtnn-run --calibrate measured on this cluster first), with every
    bucket flat (--allreduce flat), and with communication skipped (--skip-comm);
  - the exposed communication of auto and flat: their step time less the skipped one;
  - the time the same buckets take reduced alone, one after another, each the way the step sends
    it (build/bin/allreduce_buckets), and exposed / alone (target: at most 1.2);
  - on 2 x 2, flat's exposed communication over auto's (target: at least 1.3);
  - dtnn-sim's step time for auto, from the network file and the op times of a profiled run
    without communication on the same cluster, over the measured one (target: within 15%).
With 2 cores the ranks are oversubscribed: the figures measure communication, not compute.

usage: python3 bench/cluster_scaling.py [--rate 1gbit] [--repeats N] [--build DIR] [--quick]
It needs what tools/netns-cluster.sh needs (root, iproute2). Prints one table.
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

# name, file, steps, quick steps
MODELS = [
    ("resnet20", "examples/resnet20.dtnn", 30, 10),
    ("vgg_cifar", "examples/vgg_cifar.dtnn", 12, 4),
]
LAYOUTS = [(2, 1), (2, 2)]  # nodes, ranks a node


def mpirun(ranks):
    return os.environ["DTNN_MPIRUN"].split() + ["-np", str(ranks)]


def run(build, model, steps, ranks, net, extra=()):
    """The seconds of a train step, from the run's metrics."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        cmd = mpirun(ranks) + [os.path.join(build, "bin", "dtnn-run"), os.path.join(ROOT, model),
                               "--synthetic", "--batch", str(32 * ranks), "--steps", str(steps),
                               "--threads", "1", "--no-progress", "--net", net, "--metrics",
                               metrics, *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=tmp)
        with open(metrics) as f:
            rec = [json.loads(line) for line in f][-1]
        return 32 * ranks / rec["images_per_s"]


def buckets(build, model, steps, ranks, net, extra=()):
    """Each bucket's bytes, with ":h" where it goes hierarchically, from a profiled run."""
    cmd = mpirun(ranks) + [os.path.join(build, "bin", "dtnn-run"), os.path.join(ROOT, model),
                           "--synthetic", "--batch", str(32 * ranks), "--steps", str(steps),
                           "--threads", "1", "--no-progress", "--net", net, "--profile", *extra]
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp).stdout
    return [m.group(2) + (":h" if m.group(1) else "")
            for m in re.finditer(r"^\s+bucket \d+( hierarchical)?\s+(\d+)", out, re.M)]


def predicted(build, model, steps, ranks, per, net):
    """dtnn-sim's step time (seconds) from op times measured here without communication."""
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "ops.prof")
        # The profile skips 5 warm-up steps.
        run(build, model, max(steps, 12), ranks, net, ["--skip-comm", "--op-profile-out", prof])
        out = subprocess.run([os.path.join(build, "bin", "dtnn-sim"), os.path.join(ROOT, model),
                              "--ranks", str(ranks), "--ranks-per-node", str(per), "--batch",
                              "32", "--net", net, "--op-profile", prof],
                             check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1].split()[7]) / 1e3


def alone(build, ranks, sizes):
    cmd = mpirun(ranks) + [os.path.join(build, "bin", "allreduce_buckets"), *sizes]
    return float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def inside(args):
    nodes = int(os.environ["DTNN_CLUSTER_NODES"])
    per = args.per_node
    ranks = nodes * per
    with tempfile.TemporaryDirectory() as tmp:
        net = os.path.join(tmp, "cluster.net")
        subprocess.run(mpirun(ranks) + [os.path.join(args.build, "bin", "dtnn-run"),
                                        os.path.join(ROOT, "examples", "lenet.dtnn"),
                                        "--threads", "1", "--calibrate", net],
                       check=True, stdout=subprocess.DEVNULL)
        with open(net) as f:
            share = [l.split("=")[1].strip() for l in f if l.startswith("host_share")]
        print("# %dx%d: host_share %s" % (nodes, per, share[0] if share else "0"))
        for name, model, steps, quick in MODELS:
            n = quick if args.quick else steps
            auto, flat, skip = [], [], []
            for _ in range(args.repeats):
                auto.append(run(args.build, model, n, ranks, net))
                flat.append(run(args.build, model, n, ranks, net, ["--allreduce", "flat"]))
                skip.append(run(args.build, model, n, ranks, net, ["--skip-comm"]))
            exp_auto = statistics.median(max(0.0, a - s) for a, s in zip(auto, skip))
            exp_flat = statistics.median(max(0.0, f - s) for f, s in zip(flat, skip))
            # The profile skips 5 warm-up steps.
            sizes = buckets(args.build, model, 8, ranks, net)
            bare = alone(args.build, ranks, sizes)
            hier = sum(s.endswith(":h") for s in sizes)
            sim = predicted(args.build, model, n, ranks, per, net)
            print("%-10s %2dx%d %8.1f %8.1f %8.1f %10.1f %10.1f %9.1f %5d/%-3d %8.2f %8.2f %8.1f %8.2f" % (
                name, nodes, per, 1e3 * statistics.median(auto), 1e3 * statistics.median(flat),
                1e3 * statistics.median(skip), 1e3 * exp_auto, 1e3 * exp_flat, 1e3 * bare, hier,
                len(sizes), exp_auto / bare if bare > 0 else 0,
                exp_flat / exp_auto if exp_auto > 0 else 0, 1e3 * sim,
                sim / statistics.median(auto)))
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--per-node", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        return inside(args)
    print("links of %s; step, exposed and alone in ms (medians of %d rounds)" % (
        args.rate, args.repeats))
    print("%-10s %4s %8s %8s %8s %10s %10s %9s %9s %8s %8s %8s %8s" % (
        "model", "nxr", "auto", "flat", "no-comm", "exp auto", "exp flat", "alone", "hier/all",
        "exp/alone", "flat/auto", "sim", "sim/auto"))
    sys.stdout.flush()
    for nodes, per in LAYOUTS:
        cmd = [os.path.join(ROOT, "tools", "netns-cluster.sh"), "--nodes", str(nodes), "--slots",
               str(per), "--rate", args.rate, "--", sys.executable, os.path.abspath(__file__),
               "--inside", "--per-node", str(per), "--repeats", str(args.repeats), "--build",
               os.path.abspath(args.build)] + (["--quick"] if args.quick else [])
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    sys.exit(main())
