"""PyTorch twins of five zoo models, and their training and inference speed on the CPU.

Usage:
  /usr/bin/python3 bench/pytorch_twins.py MODEL [--batch B] [--threads T] [--steps N]
      [--warmup W] [--infer-batch B] [--infer-steps N] [--infer-warmup W]
      [--latency-reps N] [--expect-params P] [--build-dir DIR]
  /usr/bin/python3 bench/pytorch_twins.py --check [MODEL ...]

MODEL is one of mlp, lenet, vgg_cifar, resnet20, mobilenet_v2: the twins of examples/mlp.dtnn,
examples/lenet.dtnn, examples/vgg_cifar.dtnn, examples/resnet20.dtnn (with std/resnet.dtnn:
projection shortcuts, a 1x1 convolution and batch norm, where a block changes the shape) and
examples/mobilenet_v2.dtnn (torchvision's mobilenet_v2, 1000 classes, 224x224). Each twin has
exactly the number of trainable parameters that `dtnnc summary` reports for the dtnn model; the
script asserts it (against --expect-params, else against `BUILD_DIR/bin/dtnnc summary`) and
prints both. PyTorch's default initialization is kept.

In one process it measures, on random data of the model's input shape held in memory:
  - training images/s: SGD (lr 0.01, momentum 0.9), softmax cross entropy, batch B;
    W warm-up steps (not timed), then N timed steps;
  - inference images/s: model.eval() under torch.no_grad(), batch --infer-batch (default 64),
    --infer-warmup untimed batches, then --infer-steps timed ones;
  - batch-1 latency: the median of --latency-reps timed single-sample forwards (after warm-up);
  - peak RSS (getrusage ru_maxrss) after training, and at the end (after inference).
It prints one JSON object per line: {"kind": "params", ...}, then {"kind": "bench", ...}.
--check only prints the parameter lines. Warnings go to stderr.

Threads: PyTorch's own default here is 1; the script calls torch.set_num_threads(T) and sets
OPENBLAS_NUM_THREADS=T before loading torch (T defaults to the usable cores). Set
OMP_WAIT_POLICY in the environment to try another OpenMP wait policy. Needs Debian's
python3-torch (and python3-torchvision for mobilenet_v2); Debian's torch uses the system BLAS,
which should be OpenBLAS's pthread build (libopenblas0-pthread); the script warns otherwise.
Run it with /usr/bin/python3. bench/compare.py runs it next to dtnn-run.
"""
import argparse
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLAS = "/usr/lib/x86_64-linux-gnu/libblas.so.3"

# name: (dtnn file, input shape C,H,W, classes)
MODELS = {
    "mlp": ("examples/mlp.dtnn", (1, 28, 28), 10),
    "lenet": ("examples/lenet.dtnn", (1, 28, 28), 10),
    "vgg_cifar": ("examples/vgg_cifar.dtnn", (3, 32, 32), 10),
    "resnet20": ("examples/resnet20.dtnn", (3, 32, 32), 10),
    "mobilenet_v2": ("examples/mobilenet_v2.dtnn", (3, 224, 224), 1000),
    "vit_b_16": ("test/lit/run/Inputs/torchvision/vit_b_16.dtnn", (3, 224, 224), 1000),
}


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", metavar="MODEL", help=", ".join(MODELS))
    p.add_argument("--check", action="store_true", help="only check the parameter counts")
    p.add_argument("--batch", type=int, default=64, help="training batch (default 64)")
    p.add_argument("--threads", type=int, default=usable_cores(),
                   help="torch.set_num_threads (default: the usable cores)")
    p.add_argument("--steps", type=int, default=20, help="timed training steps (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed training steps (default 5)")
    p.add_argument("--infer-batch", type=int, default=64, help="inference batch (default 64)")
    p.add_argument("--infer-steps", type=int, default=20, help="timed inference batches (default 20)")
    p.add_argument("--infer-warmup", type=int, default=3, help="untimed inference batches (default 3)")
    p.add_argument("--latency-reps", type=int, default=20,
                   help="timed batch-1 forwards for the latency median (default 20)")
    p.add_argument("--expect-params", type=int, default=None,
                   help="dtnn's trainable parameter count (default: ask BUILD_DIR/bin/dtnnc)")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                   help="dtnn build folder, for bin/dtnnc (default: build/ of the repository)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--autocast", choices=["bf16"], default=None,
                   help="train and infer under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--channels-last", action="store_true",
                   help="the model and its 4-d inputs in torch.channels_last")
    a = p.parse_args()
    if not a.models and not a.check:
        p.error("name a model: " + ", ".join(MODELS))
    if a.check and not a.models:
        a.models = list(MODELS)
    for m in a.models:
        if m not in MODELS:
            p.error(f"unknown model '{m}'; choose from {', '.join(MODELS)}")
    if not a.check and len(a.models) != 1:
        p.error("benchmark one model per process (for its peak RSS)")
    if min(a.batch, a.threads, a.steps, a.infer_batch, a.infer_steps, a.latency_reps) < 1 \
            or min(a.warmup, a.infer_warmup) < 0:
        p.error("sizes, steps and threads must be positive, warm-up counts not negative")
    return a


def dtnn_params(build_dir, model):
    """The 'Total params' of `dtnnc summary` for the model's dtnn file."""
    dtnnc = os.path.join(build_dir, "bin", "dtnnc")
    path = os.path.join(REPO, MODELS[model][0])
    for attempt in range(12):  # the binary may be missing for a moment during a rebuild
        if os.access(dtnnc, os.X_OK):
            break
        print(f"pytorch_twins: waiting for {dtnnc}", file=sys.stderr)
        time.sleep(5)
    out = subprocess.run([dtnnc, "summary", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^Total params: (\d+)$", out, re.M)
    if not m:
        raise SystemExit(f"pytorch_twins: no 'Total params' in dtnnc summary {path}")
    return int(m.group(1))


# --- the twins ---------------------------------------------------------------------------

def build(model, nn):
    """The PyTorch twin of a zoo model (nn is torch.nn, imported late)."""
    if model == "mlp":  # examples/mlp.dtnn: 784-512-256-10 with ReLU
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                             nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    if model == "lenet":  # examples/lenet.dtnn
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10))
    if model == "vgg_cifar":  # examples/vgg_cifar.dtnn
        layers, cin = [], 3
        for c in (64, 128, 256):
            for _ in range(2):
                layers += [nn.Conv2d(cin, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                           nn.ReLU(inplace=True)]
                cin = c
            layers.append(nn.MaxPool2d(2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(256 * 4 * 4, 512), nn.ReLU(inplace=True),
                             nn.Linear(512, 10))
    if model == "resnet20":  # examples/resnet20.dtnn with examples/std/resnet.dtnn
        return resnet_cifar(nn, [3, 3, 3], [16, 32, 64], 10)
    if model in ("mobilenet_v2", "vit_b_16"):  # the torchvision models of the same names
        import torchvision
        build = getattr(torchvision.models, model)
        try:
            return build(weights=None, num_classes=1000)
        except TypeError:  # torchvision before 0.13
            return build(pretrained=False, num_classes=1000)
    raise KeyError(model)


def resnet_cifar(nn, repeats, widths, classes):
    def conv_bn(cin, cout, kernel=3, stride=1):
        return [nn.Conv2d(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, bias=False),
                nn.BatchNorm2d(cout)]

    class Basic(nn.Module):  # std/resnet.dtnn's basic block with its shortcut
        def __init__(self, cin, c, stride):
            super().__init__()
            self.body = nn.Sequential(*conv_bn(cin, c, stride=stride), nn.ReLU(inplace=True),
                                      *conv_bn(c, c))
            self.short = (nn.Identity() if stride == 1 and cin == c
                          else nn.Sequential(*conv_bn(cin, c, kernel=1, stride=stride)))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.body(x) + self.short(x))

    layers, cin = [*conv_bn(3, widths[0]), nn.ReLU(inplace=True)], widths[0]
    for i, (n, c) in enumerate(zip(repeats, widths)):
        for j in range(n):
            layers.append(Basic(cin, c, 2 if i > 0 and j == 0 else 1))
            cin = c
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


# --- measuring ---------------------------------------------------------------------------

def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def blas_check():
    path = os.path.realpath(BLAS)
    if "openblas-pthread" not in path:
        print(f"pytorch_twins: warning: {BLAS} resolves to {path}, not OpenBLAS's pthread build; "
              "install libopenblas0-pthread (update-alternatives --config libblas.so.3-x86_64-linux-gnu)",
              file=sys.stderr)
    return path


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    a = parse_args()
    # Before torch loads OpenBLAS, which reads its thread count once.
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    blas = blas_check()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    models = {}
    for name in a.models:
        model = build(name, nn)
        mine = sum(p.numel() for p in model.parameters() if p.requires_grad)
        theirs = (a.expect_params if a.expect_params is not None and not a.check
                  else dtnn_params(a.build_dir, name))
        emit({"kind": "params", "model": name, "torch_params": mine, "dtnn_params": theirs})
        assert mine == theirs, f"{name}: the PyTorch twin has {mine} parameters, dtnn's model {theirs}"
        models[name] = model
    if a.check:
        return

    name = a.models[0]
    model = models[name]
    shape, classes = MODELS[name][1], MODELS[name][2]

    # channels_last for the convolutional models, when asked; autocast (bf16 where PyTorch's
    # CPU autocast lists the op) around the forward pass and the loss.
    fmt = torch.channels_last if a.channels_last and len(shape) == 3 else torch.contiguous_format
    model = model.to(memory_format=fmt)
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.autocast \
        else contextlib.nullcontext

    # Training on one fixed random batch.
    x = torch.randn(a.batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (a.batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()

    def train_step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        train_step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = train_step()
    train_s = time.perf_counter() - t0
    loss = loss.item()
    rss_train = peak_rss_bytes()

    # Inference.
    model.eval()
    xi = torch.randn(a.infer_batch, *shape).contiguous(memory_format=fmt)
    x1 = torch.randn(1, *shape).contiguous(memory_format=fmt)
    with torch.no_grad(), autocast():
        for _ in range(a.infer_warmup):
            model(xi)
        t0 = time.perf_counter()
        for _ in range(a.infer_steps):
            model(xi)
        infer_s = time.perf_counter() - t0
        for _ in range(min(3, a.latency_reps)):
            model(x1)
        lat = []
        for _ in range(a.latency_reps):
            t0 = time.perf_counter()
            model(x1)
            lat.append(time.perf_counter() - t0)

    emit({
        "kind": "bench", "model": name, "params": sum(p.numel() for p in model.parameters()),
        "threads": a.threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "batch": a.batch, "steps": a.steps, "warmup": a.warmup,
        "train_images_per_s": a.steps * a.batch / train_s, "train_seconds": train_s,
        "final_loss": loss,
        "infer_batch": a.infer_batch, "infer_steps": a.infer_steps,
        "infer_images_per_s": a.infer_steps * a.infer_batch / infer_s,
        "latency_ms_b1": 1000 * statistics.median(lat), "latency_reps": a.latency_reps,
        "peak_rss_train_bytes": rss_train, "peak_rss_bytes": peak_rss_bytes(),
        "torch": torch.__version__, "blas": blas, "autocast": a.autocast,
        "channels_last": fmt == torch.channels_last,
    })


if __name__ == "__main__":
    main()
