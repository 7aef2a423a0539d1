"""Squeeze-and-excitation networks: dtnn with its jit against torchvision's own models in PyTorch.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/se_nets.py                 three networks, 3 repeats (about 10 minutes
                                                     on two cores)
  /usr/bin/python3 bench/se_nets.py --models efficientnet_b0 --repeat 5 --steps 8
  options: --batch B (default 8)   --threads T (default: the usable cores)
           --build-dir DIR (default build)   --python PY (the Python with torch, as compare.py)
           --min-mb M (default 1): the kernels the bandwidth check looks at

Networks: EfficientNet-B0, MobileNet-v3-Small and RegNetY-400MF, each written as its
torchvision source is (test/lit/run/Inputs/torchvision/, where their logits are checked against
torchvision's), at 224x224 and batch B. Each repeat runs, for each network, in an order that
rotates between repeats, one process of each side:

  dtnn:       build/bin/dtnn-run on a copy of the model with a train section over synthetic data
              (compare.py's settings: SGD lr 0.01 momentum 0.9, softmax cross entropy), 5 + N
              steps with --profile; dtnn-run leaves the first 5 out of its images/s.
  dtnn-nojit: the same with --no-jit (the fused groups run unfused, on oneDNN and the
              reference backend).
  torch:      torchvision.models.NAME(weights=None) in training mode on random data of the same
              shape, the same optimizer and loss, 3 untimed steps then N timed, at T threads, in
              NCHW and in channels_last (two processes); the best of the two is PyTorch's figure.

It prints the medians (images/s), dtnn / best PyTorch (the issue's target: at least 1.5) and
the jit's gain over --no-jit. Then the bandwidth check: build/bin/stream_triad (bench/
stream_triad.cpp) measures the machine's memory bandwidth at T threads in every repeat, and
every fused kernel of the dtnn runs (from --profile's "fused regions" table, each kernel at its
best repeat, as the triad reports its best run) that moves at least --min-mb megabytes is
compared with the median triad; the worst five are listed (the target: each at least 50% of the
triad). Bytes are the kernel's operand and result buffers, padding
included; a kernel whose data stays in the caches may exceed the triad.

Run it on an otherwise idle machine: the figures of one run are compared with each other only.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

INPUTS = os.path.join(compare.REPO, "test", "lit", "run", "Inputs", "torchvision")
MODELS = ("efficientnet_b0", "mobilenet_v3_small", "regnet_y_400mf")
TORCH_WARMUP = 3


# --- PyTorch (run in a process of its own, with the Python that has torch) -----------------

def torch_worker(a):
    """Times torchvision's model in training; prints one JSON line."""
    import time
    import torch
    import torchvision
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = getattr(torchvision.models, a.torch)(weights=None)
    net.train()
    x = torch.randn(a.batch, 3, 224, 224)
    y = torch.randint(0, 1000, (a.batch,))
    if a.channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()

    for _ in range(TORCH_WARMUP):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    sec = time.perf_counter() - t0
    print(json.dumps({"images_per_s": a.batch * a.steps / sec}))


def run_torch(a, name, tmp, rep, channels_last):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    cmd = [a.python, os.path.abspath(__file__), "--torch", name, "--batch", str(a.batch),
           "--threads", str(a.threads), "--steps", str(a.steps)] + \
          (["--channels-last"] if channels_last else [])
    log = os.path.join(tmp, f"{name}.torch{'-cl' if channels_last else ''}.{rep}.log")
    rc, _, _ = compare.run_logged(cmd, log, a, env)
    if rc != 0:
        return None
    for line in open(log).read().splitlines():
        if line.startswith("{"):
            return json.loads(line).get("images_per_s")
    return None


# --- dtnn ----------------------------------------------------------------------------------

def train_copy(name, tmp, batch):
    """The model with a train section over synthetic data, compare.py's settings."""
    src = os.path.join(INPUTS, f"{name}.dtnn")
    text = open(src).read()
    model = re.search(r"^model\s+(\w+)", text, re.M).group(1)
    staged = os.path.join(tmp, f"{name}.src.dtnn")
    with open(staged, "w") as f:
        f.write(text + f"\ntrain {model} {{\n  loss = softmax_cross_entropy\n  epochs = 1\n}}\n")
    dst = os.path.join(tmp, f"{name}.dtnn")
    compare.synthetic_copy(staged, dst, (3, 224, 224), 1000, batch * 4, batch, batch)
    return dst


def run_dtnn(a, name, model, tmp, rep, extra):
    total = compare.DTNN_WARMUP + a.steps
    tag = "nojit" if extra else "jit"
    metrics = os.path.join(tmp, f"{name}.{tag}.{rep}.jsonl")
    log = os.path.join(tmp, f"{name}.{tag}.{rep}.log")
    cmd = [a.dtnn_run, model, "--threads", str(a.threads), "--no-progress", "--steps", str(total),
           "--epochs", str(-(-total // 4)), "--metrics", metrics, "--profile"] + list(extra)
    rc, _, _ = compare.run_logged(cmd, log, a)
    if rc != 0:
        return None, []
    rate = compare.train_rate(compare.last_json(metrics) or [], a.batch)
    return rate, fused_kernels(open(log).read())


def fused_kernels(profile):
    """(label, source, MB, ms, GB/s) of each row of --profile's fused-regions table."""
    out = []
    section = profile.split("fused regions:", 1)
    if len(section) < 2:
        return out
    for line in section[1].splitlines()[2:]:
        m = re.match(r"\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", line)
        if not m:
            break
        out.append((m.group(1), m.group(2), float(m.group(4)), float(m.group(5)), float(m.group(6))))
    return out


# --- the run -------------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=6, help="timed training steps (default 6)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=compare.usable_cores())
    p.add_argument("--build-dir", default="build")
    p.add_argument("--python", default=None)
    p.add_argument("--min-mb", type=float, default=1.0)
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--torch", default=None, help=argparse.SUPPRESS)
    p.add_argument("--channels-last", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.repeat < 1 or a.steps < 1 or a.batch < 1 or a.threads < 1:
        p.error("--repeat, --steps, --batch and --threads must be positive")
    if a.torch is None:
        a.models = [m for m in a.models.split(",") if m]
        unknown = [m for m in a.models if m not in MODELS]
        if unknown:
            p.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    return a


def main():
    a = parse_args()
    if a.torch:
        torch_worker(a)
        return
    if a.python is None:
        has_torch = importlib.util.find_spec("torch") is not None
        a.python = sys.executable if has_torch else "/usr/bin/python3"
    a.build_dir = os.path.join(compare.REPO, a.build_dir)
    a.dtnn_run = compare.wait_for(os.path.join(a.build_dir, "bin", "dtnn-run"))
    triad_exe = compare.wait_for(os.path.join(a.build_dir, "bin", "stream_triad"))
    tmp = tempfile.mkdtemp(prefix="dtnn-se-")
    sides = ("dtnn", "dtnn-nojit", "torch", "torch-cl")
    rates = {m: {s: [] for s in sides} for m in a.models}
    kernels = {m: [] for m in a.models}
    triads = []
    try:
        models = {m: train_copy(m, tmp, a.batch) for m in a.models}
        for rep in range(a.repeat):
            out = subprocess.run([triad_exe, str(a.threads)], capture_output=True, text=True)
            try:
                triads.append(float(out.stdout.strip()))
            except ValueError:
                pass
            for name in a.models:
                order = sides[rep % len(sides):] + sides[:rep % len(sides)]
                for side in order:
                    if side == "dtnn":
                        r, ks = run_dtnn(a, name, models[name], tmp, rep, ())
                        kernels[name].append(ks)
                    elif side == "dtnn-nojit":
                        r, _ = run_dtnn(a, name, models[name], tmp, rep, ("--no-jit",))
                    else:
                        r = run_torch(a, name, tmp, rep, side == "torch-cl")
                    rates[name][side].append(r)
                    compare.log(f"  [{rep + 1}/{a.repeat}] {name:20s} {side:10s} "
                                f"{compare.fmt(r, 2)} img/s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    triad = compare.med(triads)
    print(f"Squeeze-and-excitation networks, training at batch {a.batch}, 224x224, {a.threads} "
          f"threads; medians of {a.repeat} repeat(s), images/s")
    rows = []
    for name in a.models:
        med = {s: compare.med(rates[name][s]) for s in sides}
        best = max((v for v in (med["torch"], med["torch-cl"]) if v), default=None)
        rows.append([name, compare.fmt(med["dtnn"], 2), compare.fmt(med["dtnn-nojit"], 2),
                     compare.fmt(med["torch"], 2), compare.fmt(med["torch-cl"], 2),
                     compare.ratio(med["dtnn"], best), compare.ratio(med["dtnn"], med["dtnn-nojit"])])
    compare.print_table(["model", "dtnn", "--no-jit", "torch NCHW", "torch CL",
                         "dtnn/best torch", "jit gain"], rows)
    print(f"\nSTREAM-style triad at {a.threads} threads: {compare.fmt(triad, 2)} GB/s "
          f"(median of {len(triads)})")
    # Each kernel (a row of the table, the same in every run) by its best run, as the triad's
    # figure is its best: what the kernel reaches when nothing else disturbs it.
    big = []
    for name in a.models:
        runs = [ks for ks in kernels[name] if ks]
        for i, k in enumerate(runs[0] if runs else []):
            same = [ks[i] for ks in runs if len(ks) > i and ks[i][:3] == k[:3]]
            gbs = max((x[4] for x in same), default=None)
            if k[2] >= a.min_mb and gbs:
                big.append((gbs, name, (k[0], k[1], k[2], min(x[3] for x in same))))
    big.sort(key=lambda t: t[0])
    below = sum(1 for gbs, _, _ in big if gbs < 0.5 * triad)
    print(f"fused kernels of at least {a.min_mb:g} MB (each at its best run): {len(big)}, "
          f"{below} below 50% of the triad; the worst five:")
    compare.print_table(["model", "kernel", "source", "MB", "ms", "GB/s", "of triad"],
                        [[name, k[0], k[1], f"{k[2]:.2f}", f"{k[3]:.3f}", f"{gbs:.1f}",
                          f"{100 * gbs / triad:.0f}%"] for gbs, name, k in big[:5]])


if __name__ == "__main__":
    main()
