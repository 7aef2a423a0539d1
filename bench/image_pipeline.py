"""The image input pipeline side by side with torchvision's, and feeding ResNet-18 from files.

  python3 bench/image_pipeline.py [--count 2000] [--quick] [--build build] [--skip-resnet]

Makes (once) a folder of JPEG crops of real photographs (bench/make_photo_folder.py: 500x375,
quality 90, from Debian's plasma-workspace-wallpapers) under BUILD/bench-images, then in one run:

1. The pipeline alone on one thread: build/bin/image_pipeline times a full-size tjDecompress2 of
   every file, and dtnn's loader (decode, random_resized_crop to 224x224, flip, normalised into
   the NCHW input) on the calling thread; bench/image_pipeline_torch.py times torchvision's
   ImageFolder with RandomResizedCrop(224), RandomHorizontalFlip() and PILToTensor() under a
   DataLoader with 0 workers (the main process) and with 1 worker.
2. ResNet-18 (examples/resnet18.dtnn, batch 32, 2 threads): the step time on synthetic data, the
   step time training from the folder (augment random_resized_crop), and the bound
   1.05 x (synthetic step + decode core-seconds per batch / 2); the share of the step spent
   waiting for data.
3. Resident memory: peak RSS of three steps of a small classifier of 32x32 images
   (test/lit/data/Inputs/small_rgb.dtnn, so that the model's own memory does not hide the data
   set's) over a folder of 10,000 files and one of 100,000 (hard links), against the bound
   16 MB + 200 bytes per extra file.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, **kw).stdout


def photo_folder(path, count, link_to=0):
    if not os.path.isdir(path):
        cmd = [sys.executable, "bench/make_photo_folder.py", path, "--count", str(count)]
        if link_to:
            cmd += ["--link-to-count", str(link_to)]
        sh(cmd)
    return path


def split_folder(path, train, val):
    """An image_folder layout: path/train -> the train folder, path/val -> a small one."""
    os.makedirs(path, exist_ok=True)
    for name, target in (("train", train), ("val", val)):
        link = os.path.join(path, name)
        if not os.path.islink(link):
            os.symlink(os.path.abspath(target), link)
    return path


def dtnn_run(args, extra):
    out = sh([os.path.join(args.build, "bin", "dtnn-run"), "examples/resnet18.dtnn", "--batch",
              str(args.batch), "--threads", "2", "--no-progress"] + extra)
    return out


def step_seconds(out, batch):
    """Seconds per step from the epoch line's images_per_s (after warm-up steps)."""
    rate = float(re.search(r"images_per_s (\S+)", out).group(1))
    return batch / rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--build", default="build")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--skip-resnet", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    base = os.path.join(ROOT, args.build, "bench-images")
    os.makedirs(base, exist_ok=True)
    photos = photo_folder(os.path.join(base, f"photos{args.count}"), args.count)

    # 1. The pipeline alone.
    ours = json.loads(sh([os.path.join(args.build, "bin", "image_pipeline"), photos,
                          "--workers", "0"]))
    torch = {w: json.loads(sh([sys.executable, "bench/image_pipeline_torch.py", photos,
                               "--workers", str(w), "--threads", "1"]))
             for w in (0, 1)}
    best_torch = max(t["images_per_s"] for t in torch.values())
    print(f"pipeline on {ours['files']} JPEGs of 500x375 (q90), to 224x224, one thread")
    print(f"{'':40} {'images/s':>9} {'ratio':>7}")
    print(f"{'tjDecompress2, full size':40} {ours['tjdecompress_per_s']:>9.1f} {1:>7.2f}")
    print(f"{'dtnn: decode+crop+flip+normalise':40} {ours['pipeline_per_s']:>9.1f} "
          f"{ours['pipeline_over_tjdecompress']:>7.2f}")
    for w, t in torch.items():
        print(f"{'torchvision, DataLoader workers=' + str(w):40} {t['images_per_s']:>9.1f} "
              f"{t['images_per_s'] / ours['tjdecompress_per_s']:>7.2f}")
    print(f"dtnn / tjDecompress2: {ours['pipeline_over_tjdecompress']:.2f} (target >= 0.90); "
          f"dtnn / best torchvision: {ours['pipeline_per_s'] / best_torch:.2f} (target >= 2)")

    if not args.skip_resnet:
        # 2. ResNet-18 fed from the folder against synthetic data.
        val = photo_folder(os.path.join(base, "photos64"), 64)
        data = split_folder(os.path.join(base, "resnet-folder"), photos, val)
        steps = ["--steps", str(args.steps), "--epochs", "1"]
        synth = dtnn_run(args, steps + ["--synthetic", "--synthetic-size",
                                        f"{args.batch * args.steps},{args.batch}"])
        files = dtnn_run(args, steps + ["--data", data, "--augment", "random_resized_crop",
                                        "--data-workers", "1"])
        t_syn, t_files = step_seconds(synth, args.batch), step_seconds(files, args.batch)
        decode = args.batch / ours["pipeline_per_s"]
        bound = 1.05 * (t_syn + decode / 2)
        wait = re.search(r"data_wait (\S+)%", files)
        print(f"\nResNet-18, batch {args.batch}, 2 threads, 1 data worker")
        print(f"  step on synthetic data        {t_syn * 1000:8.1f} ms")
        print(f"  decode core-seconds per batch {decode * 1000:8.1f} ms")
        print(f"  step from the JPEG folder     {t_files * 1000:8.1f} ms "
              f"(bound 1.05 x (synthetic + decode/2) = {bound * 1000:.1f} ms: "
              f"{'within' if t_files <= bound else 'OVER'})")
        print(f"  share of the step waiting for data: {wait.group(1) if wait else '?'}%")

    if not args.skip_memory:
        # 3. Resident memory against the number of files.
        small = photo_folder(os.path.join(base, "links10000"), 200, 10000)
        large = photo_folder(os.path.join(base, "links100000"), 200, 100000)
        val = photo_folder(os.path.join(base, "photos64"), 64)
        rss = {}
        for n, folder in ((10000, small), (100000, large)):
            data = split_folder(os.path.join(base, f"memory-{n}"), folder, val)
            sh([os.path.join(args.build, "bin", "dtnn-run"), "test/lit/data/Inputs/small_rgb.dtnn",
                "--steps", "3", "--epochs", "1", "--threads", "1", "--no-progress", "--data", data,
                "--data-workers", "1", "--metrics", os.path.join(data, "m.jsonl")])
            rss[n] = json.loads(open(os.path.join(data, "m.jsonl")).readlines()[-1])["peak_rss_bytes"]
        grow = rss[100000] - rss[10000]
        limit = 16e6 + 200 * 90000
        print(f"\npeak RSS: {rss[10000] / 2**20:.1f} MiB with 10,000 files, "
              f"{rss[100000] / 2**20:.1f} MiB with 100,000: grows {grow / 1e6:.2f} MB "
              f"(bound {limit / 1e6:.1f} MB: {'within' if grow < limit else 'OVER'}), "
              f"{grow / 90000:.0f} bytes per file")


if __name__ == "__main__":
    main()
