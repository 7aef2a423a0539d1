"""What fusion gains: dtnn at its default settings against dtnn-run --no-fuse, same models.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/fusion_gain.py                the five models of compare.py, 5 repeats
  /usr/bin/python3 bench/fusion_gain.py --models resnet20 --repeat 3
  /usr/bin/python3 bench/fusion_gain.py --against=--no-jit   what the jit alone gains
  options: --threads T (default: the usable cores), --build-dir DIR (default build)

Each repeat runs bench/compare.py's dtnn runs of a model (training, inference at the training
batch, batch-1 latency; the same synthetic copies, steps and batches) twice, once with the
fusion passes (the default) and once with --no-fuse (or the flag --against names), in
alternating order, and prints the medians and the ratios fused / unfused (above 1: fusion is
faster; for latency, unfused / fused) and the peak resident memory of training of each.
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(compare.MODELS))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=compare.usable_cores())
    p.add_argument("--build-dir", default="build")
    p.add_argument("--against", default="--no-fuse", choices=["--no-fuse", "--no-jit"],
                   help="the dtnn-run flag of the other side (default --no-fuse)")
    a = p.parse_args()
    a.models = compare.model_list(p, a.models)
    if a.repeat < 1 or a.threads < 1:
        p.error("--repeat and --threads must be positive")
    a.build_dir = os.path.join(compare.REPO, a.build_dir)
    a.quick, a.timeout = False, 900
    dtnn_run = compare.wait_for(os.path.join(a.build_dir, "bin", "dtnn-run"))
    tmp = tempfile.mkdtemp(prefix="dtnn-fusion-")
    sides = {"fused": (), "unfused": (a.against,)}
    rows = []
    try:
        for name in a.models:
            cfg = dict(compare.MODELS[name])
            cfg["infer_batch"] = cfg["batch"]
            recs = {k: [] for k in sides}
            for rep in range(a.repeat):
                order = list(sides) if rep % 2 == 0 else list(reversed(sides))
                for side in order:
                    r = compare.run_dtnn(a, name, cfg, tmp, f"{side}.{rep}", dtnn_run, None,
                                         sides[side])
                    recs[side].append(r)
                    compare.log(f"  [{rep + 1}/{a.repeat}] {name:12s} {side:8s} train "
                                f"{compare.fmt(r['train_images_per_s'])} img/s, infer "
                                f"{compare.fmt(r['infer_images_per_s'])} img/s, b1 "
                                f"{compare.fmt(r['latency_ms_b1'], 3)} ms")
            med = {s: {k: compare.med(r.get(k) for r in recs[s]) for k in
                       ("train_images_per_s", "infer_images_per_s", "latency_ms_b1",
                        "peak_rss_train_bytes")} for s in sides}
            f, u = med["fused"], med["unfused"]
            mib = lambda b: compare.fmt(b / (1 << 20) if b else None)
            rows.append([name, compare.fmt(f["train_images_per_s"]),
                         compare.fmt(u["train_images_per_s"]),
                         compare.ratio(f["train_images_per_s"], u["train_images_per_s"]),
                         compare.fmt(f["infer_images_per_s"]), compare.fmt(u["infer_images_per_s"]),
                         compare.ratio(f["infer_images_per_s"], u["infer_images_per_s"]),
                         compare.fmt(f["latency_ms_b1"], 3), compare.fmt(u["latency_ms_b1"], 3),
                         compare.ratio(u["latency_ms_b1"], f["latency_ms_b1"]),
                         mib(f["peak_rss_train_bytes"]), mib(u["peak_rss_train_bytes"])])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    head = ["model", "train fused", "unfused", "gain", "infer fused", "unfused", "gain",
            "b1 ms fused", "unfused", "gain", "RSS MiB fused", "unfused"]
    print(f"dtnn with and without fusion ({a.against}), {a.threads} threads, medians of "
          f"{a.repeat} repeat(s); images/s, batch-1 ms")
    compare.print_table(head, rows)


if __name__ == "__main__":
    main()
