"""dtnn next to PyTorch on one NVIDIA GPU: training images/s of the same models, side by side.

Usage (from the repository root, on a machine with a GPU, PyTorch with CUDA and a dtnn build
with the cuda backend):
  python3 bench/gpu_compare.py [--build-dir DIR] [--models resnet20,resnet50] [--steps N]
                               [--warmup W] [--batch NAME=B,...] [--sides dtnn,eager,...]
                               [--timeout S] [--json FILE]

Sides, each a process of its own, one after the other, per model:
  dtnn           DIR/bin/dtnn-run MODEL.dtnn --backend cuda --synthetic --batch B
                 --steps W+N --epochs 1 --metrics FILE: synthetic data of the model's input shape
                 (W+N batches of u8 images; the model normalizes them on the device), its train
                 section's loss and optimizer (SGD with momentum 0.9, as PyTorch's below, and
                 resnet50's weight decay) at lr 0.01, TF32 in convolutions only (PyTorch's
                 default); images/s from the metrics record, which leaves the first 5 steps out
                 (so W must be 5). The step is captured as a CUDA graph and replayed.
  eager          the PyTorch twin (bench/pytorch_twins.py's, or the ResNet-50 below), NCHW,
                 torch.backends.cudnn.benchmark = True, TF32 as PyTorch's defaults;
  channels_last  the same with the model and the batches in channels_last;
  compile        torch.compile(model) (default mode), channels_last; its warm-up steps include
                 the compilation, whose time is reported apart.
PyTorch's step: random float32 batches already on the GPU, SGD (lr 0.01, momentum 0.9), softmax
cross entropy; W untimed steps, then N timed between torch.cuda.synchronize() calls. Both sides
check the model's parameter count against `dtnnc summary`.

Prints a table (images/s, and dtnn's ratio to each PyTorch side: above 1, dtnn is faster) and,
with --json, one JSON object per run. A side that fails or passes --timeout is reported as such
and the others still run. Needs only Python's standard library, and torch for its sides.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))

# name: (dtnn file, input shape C,H,W, classes, default batch)
MODELS = {
    "lenet": ("examples/lenet.dtnn", (1, 28, 28), 10, 256),
    "resnet20": ("examples/resnet20.dtnn", (3, 32, 32), 10, 128),
    "vgg_cifar": ("examples/vgg_cifar.dtnn", (3, 32, 32), 10, 128),
    "resnet50": ("examples/resnet50.dtnn", (3, 224, 224), 1000, 64),
}
SIDES = ("dtnn", "eager", "channels_last", "compile")
DTNN_WARMUP = 5  # the steps dtnn-run leaves out of images_per_s


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--models", default="resnet20,resnet50")
    p.add_argument("--sides", default=",".join(SIDES))
    p.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=int, default=DTNN_WARMUP, help="untimed steps (default 5)")
    p.add_argument("--batch", default="", help="NAME=B,... batch sizes (defaults: per model)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per process (default 120)")
    p.add_argument("--json", default=None, help="also append each run's record to this file")
    p.add_argument("--torch-worker", nargs=3, metavar=("MODEL", "SIDE", "BATCH"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_worker:
        return a
    a.models = [m for m in a.models.split(",") if m]
    a.sides = [s for s in a.sides.split(",") if s]
    for m in a.models:
        if m not in MODELS:
            p.error(f"unknown model '{m}'; choose from {', '.join(MODELS)}")
    for s in a.sides:
        if s not in SIDES:
            p.error(f"unknown side '{s}'; choose from {', '.join(SIDES)}")
    if "dtnn" in a.sides and a.warmup != DTNN_WARMUP:
        p.error(f"dtnn-run times the steps after its first {DTNN_WARMUP}: --warmup must be {DTNN_WARMUP}")
    a.batches = {m: MODELS[m][3] for m in a.models}
    for item in filter(None, a.batch.split(",")):
        name, _, b = item.partition("=")
        if name not in a.batches or not b.isdigit() or int(b) < 1:
            p.error(f"--batch expects NAME=B for a chosen model, got '{item}'")
        a.batches[name] = int(b)
    return a


def dtnn_params(build_dir, model):
    out = subprocess.run([os.path.join(build_dir, "bin", "dtnnc"), "summary",
                          os.path.join(REPO, MODELS[model][0])], capture_output=True, text=True)
    m = re.search(r"^Total params: (\d+)$", out.stdout, re.M)
    return int(m.group(1)) if m else None


# --- the PyTorch side (a worker process per run) ----------------------------------------------

def resnet50(nn):
    """torchvision's resnet50 (v1.5: the bottleneck strides on its 3x3), without torchvision."""
    def conv_bn(cin, cout, k, stride=1):
        return [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, bias=False), nn.BatchNorm2d(cout)]

    class Bottleneck(nn.Module):
        def __init__(self, cin, c, stride):
            super().__init__()
            self.body = nn.Sequential(*conv_bn(cin, c, 1), nn.ReLU(inplace=True),
                                      *conv_bn(c, c, 3, stride), nn.ReLU(inplace=True),
                                      *conv_bn(c, 4 * c, 1))
            self.short = (nn.Identity() if stride == 1 and cin == 4 * c
                          else nn.Sequential(*conv_bn(cin, 4 * c, 1, stride)))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.body(x) + self.short(x))

    layers, cin = [*conv_bn(3, 64, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)], 64
    for i, (n, c) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
        for j in range(n):
            layers.append(Bottleneck(cin, c, 2 if i > 0 and j == 0 else 1))
            cin = 4 * c
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))


def torch_worker(a):
    import torch
    import torch.nn as nn
    name, side, batch = a.torch_worker[0], a.torch_worker[1], int(a.torch_worker[2])
    _, shape, classes, _ = MODELS[name]
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    if name == "resnet50":
        model = resnet50(nn)
    else:
        from pytorch_twins import build
        model = build(name, nn)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    dev = torch.device("cuda")
    fmt = torch.channels_last if side in ("channels_last", "compile") else torch.contiguous_format
    model = model.to(dev, memory_format=fmt)
    x = torch.randn(batch, *shape, device=dev).to(memory_format=fmt)
    y = torch.randint(0, classes, (batch,), device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    step_model = torch.compile(model) if side == "compile" else model

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(step_model(x), y).backward()
        opt.step()

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    timed = time.perf_counter() - t0
    print(json.dumps({"params": params, "images_per_s": a.steps * batch / timed, "warmup_s": warm_s,
                      "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                      "peak_bytes": torch.cuda.max_memory_allocated()}), flush=True)


# --- running the sides ------------------------------------------------------------------------

def run(cmd, timeout, log):
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"") + (e.stderr or b"")
    out = out.decode(errors="replace")
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    return rc, out, time.perf_counter() - t0


def run_dtnn(a, name, batch, tmp):
    file, _, _, _ = MODELS[name]
    metrics = os.path.join(tmp, f"{name}.jsonl")
    total = a.warmup + a.steps
    cmd = [os.path.join(a.build_dir, "bin", "dtnn-run"), os.path.join(REPO, file), "--backend", "cuda",
           "--synthetic", "--synthetic-size", f"{total * batch},{batch}", "--batch", str(batch),
           "--lr", "0.01", "--steps", str(total), "--epochs", "1", "--no-progress",
           "--metrics", metrics]
    rc, out, wall = run(cmd, a.timeout, os.path.join(tmp, f"{name}.dtnn.log"))
    rec = {"side": "dtnn", "rc": rc, "wall_s": wall}
    if rc == 0 and os.path.exists(metrics):
        lines = [json.loads(l) for l in open(metrics) if l.strip()]
        train = [r for r in lines if r.get("images_per_s")]
        rec["images_per_s"] = train[-1]["images_per_s"] if train else None
    else:
        rec["error"] = out.strip().splitlines()[-1] if out.strip() else str(rc)
    return rec


def run_torch(a, name, side, batch, tmp):
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", name, side, str(batch),
           "--steps", str(a.steps), "--warmup", str(a.warmup)]
    rc, out, wall = run(cmd, a.timeout, os.path.join(tmp, f"{name}.{side}.log"))
    rec = {"side": side, "rc": rc, "wall_s": wall}
    found = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    if rc == 0 and found:
        rec.update(found[-1])
    else:
        rec["error"] = out.strip().splitlines()[-1] if out.strip() else str(rc)
    return rec


def main():
    a = parse_args()
    if a.torch_worker:
        return torch_worker(a)
    a.build_dir = os.path.abspath(a.build_dir)
    tmp = tempfile.mkdtemp(prefix="gpu_compare.")
    rows = []
    for name in a.models:
        batch = a.batches[name]
        want = dtnn_params(a.build_dir, name)
        recs = {}
        for side in a.sides:
            rec = run_dtnn(a, name, batch, tmp) if side == "dtnn" else run_torch(a, name, side, batch, tmp)
            rec.update({"model": name, "batch": batch, "steps": a.steps, "dtnn_params": want})
            if "params" in rec and want is not None and rec["params"] != want:
                rec["error"] = f"PyTorch's twin has {rec['params']} parameters, dtnn's model {want}"
                rec.pop("images_per_s", None)
            recs[side] = rec
            print(f"gpu_compare: {name} {side}: " +
                  (f"{rec['images_per_s']:.0f} images/s" if rec.get("images_per_s") else
                   f"failed ({rec.get('error')})") + f" [{rec['wall_s']:.0f} s]", flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")
        rows.append((name, batch, recs))
    print(f"\nimages/s in training (logs in {tmp}); ratio: dtnn / that side")
    print(f"{'model':10} {'batch':>5} " + " ".join(f"{s:>14}" for s in a.sides) +
          "".join(f" {'x ' + s:>16}" for s in a.sides if s != "dtnn"))
    for name, batch, recs in rows:
        ips = {s: recs[s].get("images_per_s") for s in a.sides}
        cells = " ".join(f"{ips[s]:14.0f}" if ips[s] else f"{'failed':>14}" for s in a.sides)
        ratios = "".join(f" {ips['dtnn'] / ips[s]:16.2f}" if ips.get("dtnn") and ips[s] else f" {'-':>16}"
                         for s in a.sides if s != "dtnn")
        print(f"{name:10} {batch:5d} {cells}{ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
