"""Turns Fashion-MNIST into a small ImageNet-style folder of coloured JPEGs for the loader's tests.

  python3 test/tools/make_image_folder.py OUT [--train 200] [--val 100] [--sizes 28,64,100,320]
                                          [--corrupt] [--seed 0] [--data DIR]

Reads the IDX files (gzipped or plain) from DIR (default /usr/share/datasets/fashion-mnist, the
Debian package dataset-fashion-mnist) and writes the first --train training images to
OUT/train/<class>/ and the first --val test images to OUT/val/<class>/, one folder per class
named after Fashion-MNIST's class ("t-shirt_top", "trouser", ...). Labels follow the sorted
folder names, as torchvision's ImageFolder numbers them, so "ankle_boot" is 0; OUT/classes.txt
gives, one line per folder in that order, "folder original_fashion_mnist_label".

Each image is coloured so that its channels differ (the grey image times a random per-image
tint, plus a faint horizontal gradient in red and a vertical one in blue), then resized with
Pillow's bicubic filter to a width taken from --sizes in rotation; every third image is
w x round(w*3/4). Files are named n<label>_<index>.JPEG (JPEG quality 90), except every 7th
one, a lower-case .jpg, and every 11th, a .png. OUT/train_list.txt lists the training images
as "path label" lines, the path relative to OUT/train and the label ImageFolder's.

--corrupt also puts bad files in train/, each in its own class folder: a JPEG cut to half its
bytes, an empty .JPEG, a text file named .JPEG, and a README.txt; prints their paths, relative
to OUT, as "corrupt: PATH" lines. They are not in train_list.txt. OUT must not exist or be
empty. The output is the same for the same arguments (--seed fixes the colours). All ten class
folders are made; with very small --train or --val some stay empty, which ImageFolder rejects.
"""
import argparse
import gzip
import os
import struct
import sys

import numpy as np
from PIL import Image

# Folder name of each Fashion-MNIST label, in label order.
CLASS_NAMES = ["t-shirt_top", "trouser", "pullover", "dress", "coat",
               "sandal", "shirt", "sneaker", "bag", "ankle_boot"]


def read_idx(data_dir, name):
    """Returns the array in the IDX file `name`, gzipped (name.gz) or plain."""
    path = os.path.join(data_dir, name)
    opener = open
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path, opener = path + ".gz", gzip.open
    with opener(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows, cols)
    if magic == 0x801:
        return np.frombuffer(data, np.uint8, count, 8)
    sys.exit(f"{path}: not an IDX file of unsigned bytes (magic {magic:#x})")


def colour(grey, rng):
    """Returns the 28x28 grey image as RGB whose channels differ: tinted plus faint gradients."""
    tint = rng.uniform(0.4, 1.0, 3)
    rows, cols = grey.shape
    rgb = grey[:, :, None].astype(np.float32) * tint
    rgb[:, :, 0] += np.linspace(0, 40, cols)[None, :]
    rgb[:, :, 2] += np.linspace(0, 40, rows)[:, None]
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB")


def file_name(label, index):
    """Returns the file name of image `index`: mostly .JPEG, a few .jpg and .png."""
    ext = ".png" if index % 11 == 10 else ".jpg" if index % 7 == 6 else ".JPEG"
    return f"n{label}_{index:05d}{ext}"


def write_split(out, split, images, labels, sizes, rng):
    """Writes one split's images; returns their (path relative to the split, original label)."""
    written = []
    for i, (grey, label) in enumerate(zip(images, labels)):
        w = sizes[i % len(sizes)]
        h = round(w * 3 / 4) if i % 3 == 2 else w
        img = colour(grey, rng).resize((w, h), Image.BICUBIC)
        rel = os.path.join(CLASS_NAMES[label], file_name(label, i))
        if rel.endswith(".png"):
            img.save(os.path.join(out, split, rel))
        else:
            img.save(os.path.join(out, split, rel), "JPEG", quality=90)
        written.append((rel, int(label)))
    return written


def write_corrupt(out, written):
    """Writes the bad files into train/, each in its own class folder; returns their paths."""
    folders = sorted(CLASS_NAMES)
    jpegs = [os.path.join(out, "train", rel) for rel, _ in written if rel.endswith(".JPEG")]
    with open(max(jpegs, key=os.path.getsize), "rb") as f:  # the largest: cut mid-scan
        jpeg = f.read()
    bad = {
        os.path.join("train", folders[0], "bad_truncated.JPEG"): jpeg[:len(jpeg) // 2],
        os.path.join("train", folders[1], "bad_empty.JPEG"): b"",
        os.path.join("train", folders[2], "bad_text.JPEG"): b"This is not a JPEG file.\n",
        os.path.join("train", folders[3], "README.txt"): b"Not an image: a loader skips it.\n",
    }
    for rel, data in bad.items():
        with open(os.path.join(out, rel), "wb") as f:
            f.write(data)
    return list(bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=200, help="training images to write")
    ap.add_argument("--val", type=int, default=100, help="test images to write")
    ap.add_argument("--sizes", default="28,64,100,320", help="widths, taken in rotation")
    ap.add_argument("--corrupt", action="store_true", help="add bad files to train/")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if os.path.isdir(args.out) and os.listdir(args.out):
        sys.exit(f"{args.out} is not empty; give a new folder")

    rng = np.random.default_rng(args.seed)
    folders = sorted(CLASS_NAMES)
    for split in ("train", "val"):
        for name in folders:
            os.makedirs(os.path.join(args.out, split, name), exist_ok=True)
    with open(os.path.join(args.out, "classes.txt"), "w") as f:
        f.writelines(f"{name} {CLASS_NAMES.index(name)}\n" for name in folders)

    for split, prefix, n in (("train", "train", args.train), ("val", "t10k", args.val)):
        images = read_idx(args.data, f"{prefix}-images-idx3-ubyte")[:n]
        labels = read_idx(args.data, f"{prefix}-labels-idx1-ubyte")[:n]
        written = write_split(args.out, split, images, labels, sizes, rng)
        if split == "train":
            with open(os.path.join(args.out, "train_list.txt"), "w") as f:
                f.writelines(f"{rel} {folders.index(CLASS_NAMES[label])}\n"
                             for rel, label in written)
            if args.corrupt:
                for rel in write_corrupt(args.out, written):
                    print(f"corrupt: {rel}")


if __name__ == "__main__":
    main()
