"""Checks dtnn's image decoding and transforms against Pillow's and torchvision's.

For every JPEG and PNG under a folder, runs dtnn-image-transform and compares its output with:
  - decode: Image.open(f).convert("RGB"), byte for byte;
  - rrc: RandomResizedCrop(size) + RandomHorizontalFlip() given the same random values (torch's
    own, recorded as torchvision draws them): the same crop box, pixels within 1/255; and with
    DCT scaling on, the mean difference;
  - center: Resize(resize) + CenterCrop(size): pixels within 1/255;
  - padcrop: RandomCrop(the image's size, padding=4) + RandomHorizontalFlip(): byte for byte.
Prints one summary line per check and exits 1 when any image fails one.

  python3 check_transforms.py DIR [--tool dtnn-image-transform] [--size 32] [--draws-per-image 2]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

recorded = []  # the values torch's generators gave since the last reset
boxes = []     # the boxes RandomResizedCrop cropped


def record(fn):
    def wrapper(*args, **kwargs):
        r = fn(*args, **kwargs)
        recorded.append(float(r.reshape(-1)[0].item()))
        return r
    return wrapper


torch.Tensor.uniform_ = record(torch.Tensor.uniform_)
torch.randint = record(torch.randint)
torch.rand = record(torch.rand)
_resized_crop = F.resized_crop


def resized_crop(img, top, left, height, width, *args, **kwargs):
    boxes.append((left, top, width, height))
    return _resized_crop(img, top, left, height, width, *args, **kwargs)


F.resized_crop = resized_crop


def run_tool(tool, args):
    with tempfile.NamedTemporaryFile(suffix=".ppm") as out:
        p = subprocess.run([tool, args[0], args[1], out.name] + args[2:], capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit("dtnn-image-transform failed: " + p.stderr)
        info = dict(line.split(" ", 1) for line in p.stdout.splitlines())
        return np.asarray(Image.open(out.name).convert("RGB")).astype(int), info


def torch_run(transform, img, seed):
    recorded.clear()
    boxes.clear()
    torch.manual_seed(seed)
    out = np.asarray(transform(img)).astype(int)
    return out, ",".join(repr(v) for v in recorded)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--tool", default="dtnn-image-transform")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--draws-per-image", type=int, default=2)
    a = ap.parse_args()
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.dir) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg", ".png")))
    s = a.size
    counts = {k: [0, 0] for k in ("decode", "box", "rrc", "center", "padcrop")}
    dct_diffs = []

    def tally(key, ok, what):
        counts[key][0] += ok
        counts[key][1] += 1
        if not ok:
            print("MISMATCH", key, what)

    for n, path in enumerate(files):
        img = Image.open(path).convert("RGB")
        ours, _ = run_tool(a.tool, ["decode", path])
        tally("decode", np.array_equal(ours, np.asarray(img)), path)
        for k in range(a.draws_per_image):
            seed = 1000 * n + k
            rrc = T.Compose([T.RandomResizedCrop(s), T.RandomHorizontalFlip()])
            ref, draws = torch_run(rrc, img, seed)
            args = ["rrc", path, "--size", str(s), str(s), "--flip", "0.5", "--draws", draws]
            ours, info = run_tool(a.tool, args + ["--no-dct"])
            box = tuple(int(v) for v in info["box"].split())
            tally("box", box == boxes[0], f"{path}: {box} != {boxes[0]}")
            tally("rrc", np.abs(ours - ref).max() <= 1, f"{path} seed {seed}")
            scaled, _ = run_tool(a.tool, args)
            dct_diffs.append(np.abs(scaled - ref).mean())
            resize = round(s / 0.875)
            center = T.Compose([T.Resize(resize), T.CenterCrop(s)])
            ref, _ = torch_run(center, img, seed)
            ours, _ = run_tool(a.tool, ["center", path, "--size", str(s), str(s), "--resize",
                                        str(resize), "--no-dct"])
            tally("center", np.abs(ours - ref).max() <= 1, f"{path}")
            w, h = img.size
            pad = T.Compose([T.RandomCrop((h, w), padding=4), T.RandomHorizontalFlip()])
            ref, draws = torch_run(pad, img, seed)
            ours, _ = run_tool(a.tool, ["padcrop", path, "--size", str(h), str(w), "--pad", "4",
                                        "--flip", "0.5", "--draws", draws])
            tally("padcrop", np.array_equal(ours, ref), f"{path} seed {seed}")

    names = {"decode": "decoded images equal Pillow's",
             "box": "random_resized_crop boxes equal torchvision's",
             "rrc": "random_resized_crop + flip within 1/255 of torchvision's",
             "center": "resize + center_crop within 1/255 of torchvision's",
             "padcrop": "random_crop(padding=4) + flip equal torchvision's"}
    for k, (ok, total) in counts.items():
        print(f"{k}: {ok} of {total} {names[k]}")
    print(f"random_resized_crop with DCT scaling: mean difference {np.mean(dct_diffs):.2f} "
          f"(worst image {np.max(dct_diffs):.2f}) of 255")
    sys.exit(0 if all(ok == total for ok, total in counts.values()) else 1)


if __name__ == "__main__":
    main()
