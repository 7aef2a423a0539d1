"""The fused optimizer update of ResNet-50's parameters against the machine's memory bandwidth.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/update_bandwidth.py          SGD with momentum, Adam and AdamW, 3 repeats
  /usr/bin/python3 bench/update_bandwidth.py --optimizers sgd --repeat 5
  options: --threads T (default: the usable cores)   --steps N (default 4)
           --build-dir DIR (default build)

ResNet-50 (25.6 M parameters) trains on synthetic 224x224 images at batch 1, so that a step is
short and the update is all of its parameters. Each repeat runs, for each optimizer in an order
that rotates between repeats, build/bin/stream_triad (bench/stream_triad.cpp) at T threads and
two dtnn-run processes with --profile: the default one, where fuse-updates makes the update one
fused_update kernel on the jit, and --no-jit, where each parameter's update op runs alone on the
reference backend. The fused kernel's megabytes come from --profile's fused-regions table (its
operand and result buffers: the parameters and states read and written, the gradients read);
the time of both sides from the "optimizer updates" row.

It prints, per optimizer, the medians: the fused kernel's bandwidth and its share of the median
triad (the target: at least 70%), and the time of the updates one by one. Parameters and states
far exceed the caches, so both sides stream memory; the triad counts the bytes it names, as
STREAM does. Run it on an otherwise idle machine: the figures of one run are compared with each
other only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import se_nets  # noqa: E402

OPTIMIZERS = {
    "sgd": "sgd(lr=0.01, momentum=0.9)",
    "adam": "adam(lr=0.001)",
    "adamw": "adamw(lr=0.001, weight_decay=0.01)",
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--optimizers", nargs="+", choices=sorted(OPTIMIZERS), default=list(OPTIMIZERS))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=compare.usable_cores())
    p.add_argument("--build-dir", default="build")
    p.add_argument("--timeout", type=int, default=900)
    return p.parse_args()


def model_copy(tmp, optimizer):
    """ResNet-50 over synthetic data at batch 1, with `optimizer`."""
    src = os.path.join(compare.REPO, "examples", "resnet50.dtnn")
    shutil.copytree(os.path.join(compare.REPO, "examples", "std"), os.path.join(tmp, "std"),
                    dirs_exist_ok=True)
    dst = os.path.join(tmp, f"resnet50_{optimizer}.dtnn")
    compare.synthetic_copy(src, dst, (3, 224, 224), 1000, 16, 1, 1)
    text = open(dst).read()
    text = re.sub(r"optimizer = sgd\(lr=0\.01, momentum=0\.9\)",
                  "optimizer = " + OPTIMIZERS[optimizer], text)
    open(dst, "w").write(text)
    return dst


def updates_ms(profile):
    """The time of --profile's "optimizer updates" row (its backward column), or None."""
    m = re.search(r"^\s+optimizer updates\s+\S+\s+[\d.]+\s+([\d.]+)", profile, re.M)
    return float(m.group(1)) if m else None


def run(a, model, tmp, tag, extra):
    log = os.path.join(tmp, f"{tag}.log")
    cmd = [a.dtnn_run, model, "--steps", str(compare.DTNN_WARMUP + a.steps), "--threads",
           str(a.threads), "--profile", "--no-progress", *extra]
    rc, _, _ = compare.run_logged(cmd, log, a)
    if rc != 0:
        return None, None
    text = open(log).read()
    fused = [k for k in se_nets.fused_kernels(text) if k[0].startswith("fused_update")]
    return updates_ms(text), (fused[0] if fused else None)


def main():
    a = parse_args()
    a.build_dir = os.path.join(compare.REPO, a.build_dir)
    a.dtnn_run = compare.wait_for(os.path.join(a.build_dir, "bin", "dtnn-run"))
    triad_exe = compare.wait_for(os.path.join(a.build_dir, "bin", "stream_triad"))
    tmp = tempfile.mkdtemp(prefix="dtnn-update-")
    triads, fused_gbs, fused_ms, alone_ms, mb = [], {}, {}, {}, {}
    try:
        models = {o: model_copy(tmp, o) for o in a.optimizers}
        for rep in range(a.repeat):
            order = a.optimizers[rep % len(a.optimizers):] + a.optimizers[:rep % len(a.optimizers)]
            for o in order:
                out = subprocess.run([triad_exe, str(a.threads)], capture_output=True, text=True)
                try:
                    triads.append(float(out.stdout.strip()))
                except ValueError:
                    pass
                ms, kernel = run(a, models[o], tmp, f"{o}-{rep}", ())
                if kernel:
                    mb[o] = kernel[2]
                    fused_gbs.setdefault(o, []).append(kernel[4])
                    fused_ms.setdefault(o, []).append(kernel[3])
                alone, _ = run(a, models[o], tmp, f"{o}-{rep}-nojit", ("--no-jit",))
                if alone is not None:
                    alone_ms.setdefault(o, []).append(alone)
                compare.log(f"  [{rep + 1}/{a.repeat}] {o:6s} fused "
                            f"{compare.fmt(kernel[3] if kernel else None, 2)} ms, one by one "
                            f"{compare.fmt(alone, 2)} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    triad = compare.med(triads)
    print(f"ResNet-50's optimizer update at {a.threads} threads; medians of {a.repeat} repeat(s)")
    print(f"STREAM-style triad: {compare.fmt(triad, 2)} GB/s (median of {len(triads)})")
    rows = []
    for o in a.optimizers:
        gbs = compare.med(fused_gbs.get(o, []))
        rows.append([o, compare.fmt(mb.get(o), 1), compare.fmt(compare.med(fused_ms.get(o, [])), 2),
                     compare.fmt(gbs, 1),
                     f"{100 * gbs / triad:.0f}%" if gbs and triad else "-",
                     compare.fmt(compare.med(alone_ms.get(o, [])), 2)])
    compare.print_table(["optimizer", "MB", "fused ms", "GB/s", "of triad", "one by one ms"], rows)


if __name__ == "__main__":
    main()
