"""Measures torchvision's image input pipeline on a folder, the twin of bench/image_pipeline.cpp.

  python3 bench/image_pipeline_torch.py DIR [--workers 0] [--batch 32] [--size 224] [--epochs 2]
                                        [--threads 1] [--normalize] [--baseline-decode]
                                        [--seed 0]

DIR is a folder of class folders of images (bench/make_photo_folder.py makes one), read with
torchvision.datasets.ImageFolder and the transforms RandomResizedCrop(size),
RandomHorizontalFlip() and PILToTensor() (uint8 CHW: the work of putting the image into the
input layout, without normalisation); --normalize puts ToTensor() + Normalize(ImageNet's mean
and std) in place of PILToTensor(). A DataLoader (shuffled, batch B, the last batch kept, W
worker processes, persistent, or the main process when W is 0) runs E epochs; the first 2
batches of the run are a warm-up left out of the count and the time. Needs Debian's
python3-torch and python3-torchvision.

Prints one line of JSON: images_per_s, images, seconds, workers, batch, size; with
--baseline-decode also pil_decode_per_s, the images per second of Image.open(f).convert("RGB")
on every file once in the main process, measured first (so it also warms the page cache).
"""
import argparse
import json
import time

import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

WARMUP_BATCHES = 2


def pil_decode_per_s(paths):
    """Returns images per second of a plain full-size decode to RGB of every file."""
    start = time.perf_counter()
    for path in paths:
        with Image.open(path) as img:
            img.convert("RGB")
    return len(paths) / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=0, help="loader processes; 0: main process")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224, help="side of the crops")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--normalize", action="store_true",
                    help="ToTensor() + Normalize() instead of PILToTensor()")
    ap.add_argument("--baseline-decode", action="store_true",
                    help="also time a plain PIL decode of every file")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    to_tensor = ([T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
                 if args.normalize else [T.PILToTensor()])
    transform = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip()] + to_tensor)
    dataset = torchvision.datasets.ImageFolder(args.dir, transform=transform)
    result = {}
    if args.baseline_decode:
        result["pil_decode_per_s"] = round(pil_decode_per_s([p for p, _ in dataset.samples]), 1)

    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        drop_last=False, persistent_workers=args.workers > 0)
    images, start = 0, None
    for epoch in range(args.epochs):
        for step, (batch, _) in enumerate(loader):
            if start is None:
                if step + 1 == WARMUP_BATCHES:
                    start = time.perf_counter()
                continue
            images += batch.shape[0]
    seconds = time.perf_counter() - start if start is not None else 0.0

    result = {"images_per_s": round(images / seconds, 1) if seconds > 0 else None,
              "images": images, "seconds": round(seconds, 3), "workers": args.workers,
              "batch": args.batch, "size": args.size, **result}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
