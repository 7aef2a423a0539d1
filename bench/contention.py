"""dtnn on a shared machine: training speed while another process keeps one core busy.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/contention.py                 the five models of compare.py, 5 repeats
  /usr/bin/python3 bench/contention.py --models lenet,resnet20 --repeat 3
  options: --steps N | NAME=N,...   timed training steps (default: 1000 for the MLP and LeNet,
                                    10 for VGG and ResNet-20, 6 for MobileNet-v2: a few seconds a
                                    run at one thread, enough to average the machine's noise)
           --build-dir DIR          (default build)

For each model and repeat, five training runs of the same synthetic copy of the model that
bench/compare.py trains (same batch, data and optimizer), in turn:
  idle-1t    dtnn-run --threads 1 on the otherwise idle machine: the baseline;
  busy       dtnn-run at its default settings (no --threads) while a busy loop, a separate
             process, keeps one core busy;
  idle       dtnn-run at its default settings on the idle machine again;
  busy-2t    dtnn-run --threads 2 beside the busy loop: more threads than free cores, which
             dtnn runs with OMP_WAIT_POLICY=passive;
  spin-2t    the same with OMP_WAIT_POLICY=active, as every such run was before: threads that
             spin at barriers on the core the thread they wait for needs.
It prints the medians of training images/s and the ratios busy / idle-1t (the goal: at least 0.9,
stretch 1.1), idle / idle-1t, busy-2t / idle-1t and spin-2t / idle-1t, with the thread count
dtnn-run chose in each setting.
"""
import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the models, their synthetic copies and the rate over epochs)

REPO = compare.REPO
STEPS = {"mlp": 1000, "lenet": 1000, "vgg_cifar": 10, "resnet20": 10, "mobilenet_v2": 6}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(compare.MODELS))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--steps", default=None, help="timed training steps: N, or NAME=N,...")
    p.add_argument("--build-dir", default="build")
    a = p.parse_args()
    a.models = compare.model_list(p, a.models)
    if a.repeat < 1:
        p.error("--repeat must be positive")
    a.steps = compare.per_model(a.steps, a.models, "--steps")
    a.build_dir = os.path.join(REPO, a.build_dir)
    return a


def busy_loop():
    """A separate process that keeps one core busy until killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def train(dtnn_run, model, steps, batch, batches, threads, log_path, env=None):
    """One training run; returns (images/s, the thread count dtnn-run reported)."""
    total = compare.DTNN_WARMUP + steps
    epochs = -(-total // batches)
    metrics = log_path + ".jsonl"
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [dtnn_run, model, "--steps", str(total), "--epochs", str(epochs), "--metrics", metrics,
           "--no-progress"] + (["--threads", str(threads)] if threads else [])
    with open(log_path, "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True,
                       env=dict(os.environ, **(env or {})))
    header = open(log_path).read()
    m = re.search(r"(\d+) threads?", header)
    return compare.train_rate(compare.last_json(metrics) or [], batch), (m.group(1) if m else "?")


def main():
    a = parse_args()
    dtnn_run = compare.wait_for(os.path.join(a.build_dir, "bin", "dtnn-run"))
    tmp = tempfile.mkdtemp(prefix="dtnn-contention-")
    rows = []
    try:
        for name in a.models:
            cfg = compare.MODELS[name]
            steps = a.steps.get(name, STEPS.get(name, cfg["steps"]))
            sample = math.prod(cfg["shape"])
            batch = cfg["batch"]
            batches = max(1, min(compare.DTNN_WARMUP + steps, compare.DATA_CAP // (batch * sample)))
            model = os.path.join(tmp, f"{name}.dtnn")
            compare.synthetic_copy(os.path.join(REPO, cfg["file"]), model, cfg["shape"],
                                   cfg["classes"], batches * batch, batch, batch)
            runs = {"idle-1t": [], "busy": [], "idle": [], "busy-2t": [], "spin-2t": []}
            threads = {}
            for rep in range(a.repeat):
                for label in runs:
                    loop = busy_loop() if label != "idle" and label != "idle-1t" else None
                    count = {"idle-1t": 1, "busy-2t": 2, "spin-2t": 2}.get(label)
                    env = {"OMP_WAIT_POLICY": "active"} if label == "spin-2t" else None
                    try:
                        log = os.path.join(tmp, f"{name}.{label}.{rep}.log")
                        rate, t = train(dtnn_run, model, steps, batch, batches, count, log, env)
                    finally:
                        if loop:
                            loop.kill()
                            loop.wait()
                    runs[label].append(rate)
                    threads[label] = t
                    compare.log(f"  [{rep + 1}/{a.repeat}] {name:12s} {label:8s} "
                                f"{compare.fmt(rate)} img/s ({t} threads)")
            med = {k: statistics.median(v) for k, v in runs.items()}
            rows.append([name, compare.fmt(med["idle-1t"]), compare.fmt(med["busy"]),
                         compare.fmt(med["idle"]), compare.ratio(med["busy"], med["idle-1t"]),
                         compare.ratio(med["idle"], med["idle-1t"]),
                         compare.ratio(med["busy-2t"], med["idle-1t"]),
                         compare.ratio(med["spin-2t"], med["idle-1t"]),
                         f"{threads['idle-1t']}/{threads['busy']}/{threads['idle']}"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    head = ["model", "idle 1 thread", "one core busy", "idle default", "busy/idle-1t",
            "idle/idle-1t", "busy-2t/idle-1t", "spin-2t/idle-1t", "threads"]
    print(f"dtnn training images/s, medians of {a.repeat} repeat(s); one core busy: a separate "
          "busy-loop process")
    compare.print_table(head, rows)


if __name__ == "__main__":
    main()
