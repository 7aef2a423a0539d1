#!/usr/bin/python3
"""torchvision's models through ONNX: each is exported by torch.onnx.export (opset 17, batch axis
dynamic), imported with `dtnnc import`, and its logits from `dtnn-run --predict` compared with
PyTorch's on the same batch; then the model exported in training mode is imported and trains a
few steps on synthetic data from the imported weights. One row per model: lines of imported source, import seconds, the
largest logit difference relative to the largest logit, and the training loss of each quarter of
the steps.

    bench/onnx_torchvision.py --bin build/bin [--models resnet50,vit_b_16] [--steps 20] [--work DIR]

tools/onnx_export_torchvision.py exports each: torchvision's initialization with every
parameter and batch-norm statistic perturbed, so that no two are equal (the exporter would
share equal initializers) and the comparison exercises every one."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
sys.path.insert(0, TOOLS)
import dtnn_safetensors  # noqa: E402

MODELS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny", "vit_b_16"]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + " failed:\n" + r.stderr[-3000:])
    return r


def one(name, args, work):
    t0 = time.perf_counter()
    run([sys.executable, os.path.join(TOOLS, "onnx_export_torchvision.py"), work, name, "--batch", "2"])
    export_s = time.perf_counter() - t0
    onnx_path = os.path.join(work, name + ".onnx")
    _, tensors = dtnn_safetensors.read(os.path.join(work, name + ".torch.safetensors"))
    want = tensors["output"].array()
    src, weights = os.path.join(work, name + ".dtnn"), os.path.join(work, name + ".safetensors")
    t0 = time.perf_counter()
    run([os.path.join(args.bin, "dtnnc"), "import", onnx_path, "-o", src, "--weights", weights])
    seconds = time.perf_counter() - t0
    with open(src) as f:
        lines = sum(1 for line in f if line.strip())
    inp, out = os.path.join(work, name + ".in.safetensors"), os.path.join(work, name + ".out.safetensors")
    run([os.path.join(args.bin, "dtnn-run"), src, "--init-from", weights, "--predict", inp, "--predictions", out])
    _, tensors = dtnn_safetensors.read(out)
    got = next(iter(tensors.values())).array()
    rel = float(abs(got.reshape(want.shape) - want).max() / abs(want).max())
    # Training: the graph exported in training mode (batch norm and dropout kept as the training
    # layers; in eval mode the exporter folds batch norm into the convolutions), 20 steps as 4
    # epochs of 5, so that the metrics show the training loss falling.
    run([sys.executable, os.path.join(TOOLS, "onnx_export_torchvision.py"), work, name, "--batch", "2", "--training"])
    src, weights = os.path.join(work, name + ".train.dtnn"), os.path.join(work, name + ".train.safetensors")
    run([os.path.join(args.bin, "dtnnc"), "import", os.path.join(work, name + ".train.onnx"), "-o", src,
         "--weights", weights])
    metrics = os.path.join(work, name + ".jsonl")
    per_epoch = max(1, args.steps // 4)
    run([os.path.join(args.bin, "dtnn-run"), src, "--init-from", weights, "--synthetic", "--synthetic-size",
         "%d,%d" % (args.batch * per_epoch, args.batch), "--batch", str(args.batch), "--epochs",
         str(args.steps // per_epoch), "--lr", str(args.lr), "--metrics", metrics, "--no-progress"])
    losses = [round(json.loads(line)["train_loss"], 4) for line in open(metrics) if "train_loss" in line]
    return {"model": name, "lines": lines, "export_s": round(export_s, 1), "import_s": round(seconds, 2),
            "logit_rel_diff": rel, "losses": losses}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="onnx_tv_")
    os.makedirs(work, exist_ok=True)
    print("%-20s %6s %9s %14s  %s" % ("model", "lines", "import s", "logit rel diff", "train loss per 5 steps"))
    failed = False
    for name in args.models.split(","):
        try:
            r = one(name, args, work)
            print("%-20s %6d %9.2f %14.2e  %s" % (r["model"], r["lines"], r["import_s"], r["logit_rel_diff"],
                                                 " ".join(str(x) for x in r["losses"])), flush=True)
        except Exception as e:  # one model's failure is its row
            failed = True
            print("%-20s failed: %s" % (name, e), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
