"""Builds the image pipeline's benchmark folder: JPEG crops of real photographs in class folders.

  python3 bench/make_photo_folder.py OUT [--count 2000] [--classes 10] [--width 500]
                                     [--height 375] [--quality 90] [--seed 0]
                                     [--link-to-count M]

The photographs are the wallpapers of Debian's plasma-workspace-wallpapers
(/usr/share/wallpapers/*/contents/images/*.jpg and *.png, sorted; those smaller than the crop
are skipped). Image i (from 0) comes from photograph i mod the number of photographs: a copy of
the photograph scaled down by a random factor, from none down to the one where the crop just
fits, is cropped to width x height at a random place and saved as a JPEG of that quality in
OUT/class_<i mod classes>/img_<i+1>.JPEG. The scaling is done on the cropped region alone
(Pillow's resize with a box), which gives the same pixels as cropping a scaled-down copy, and
is never an enlargement, so the content is real photographic detail. The same arguments give
the same files.

--link-to-count M then fills OUT up to M files by hard-linking the real ones over and over,
names continuing in the same class folders: a folder of 100,000 files for a memory test that
costs no disk. Prints the number of files, their total and mean size in bytes, and the number
of photographs used.
"""
import argparse
import glob
import os
import sys

import numpy as np
from PIL import Image

WALLPAPERS = "/usr/share/wallpapers/*/contents/images/*."


def photographs(width, height):
    """Returns the sorted paths of the wallpapers at least width x height."""
    paths = sorted(glob.glob(WALLPAPERS + "jpg") + glob.glob(WALLPAPERS + "png"))
    if not paths:
        sys.exit("no photographs in /usr/share/wallpapers: install the Debian package "
                 "plasma-workspace-wallpapers")
    usable = []
    for path in paths:
        with Image.open(path) as img:
            if img.width >= width and img.height >= height:
                usable.append(path)
    if not usable:
        sys.exit(f"no wallpaper is at least {width}x{height}")
    return usable


def crop(photo, width, height, rng):
    """Returns a width x height crop of `photo` scaled down by a random factor."""
    # The region's width runs from the crop's (no scaling) to the widest the photo allows.
    widest = min(photo.width, photo.height * width / height)
    region_w = rng.uniform(width, widest)
    region_h = region_w * height / width
    x = rng.uniform(0, photo.width - region_w)
    y = rng.uniform(0, photo.height - region_h)
    box = (x, y, min(x + region_w, photo.width), min(y + region_h, photo.height))
    return photo.resize((width, height), Image.BICUBIC, box=box, reducing_gap=3.0)


def path_of(out, index, classes, digits):
    """Returns the path of file `index` (from 0): class folders in rotation."""
    return os.path.join(out, f"class_{index % classes:02d}", f"img_{index + 1:0{digits}d}.JPEG")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=2000, help="JPEGs to write")
    ap.add_argument("--classes", type=int, default=10, help="class folders")
    ap.add_argument("--width", type=int, default=500)
    ap.add_argument("--height", type=int, default=375)
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--link-to-count", type=int, default=0, metavar="M",
                    help="then hard-link the files until OUT holds M")
    args = ap.parse_args()
    if args.count < 1 or args.classes < 1 or args.link_to_count not in range(0, 10**8):
        sys.exit("--count and --classes must be positive, --link-to-count below 10^8")
    if 0 < args.link_to_count < args.count:
        sys.exit("--link-to-count must be at least --count")
    if os.path.isdir(args.out) and os.listdir(args.out):
        sys.exit(f"{args.out} is not empty; give a new folder")

    sources = photographs(args.width, args.height)
    total = max(args.count, args.link_to_count)
    digits = max(5, len(str(total)))
    for c in range(args.classes):
        os.makedirs(os.path.join(args.out, f"class_{c:02d}"), exist_ok=True)

    # Photograph by photograph, so that each is decoded once; each image has its own generator.
    for s, source in enumerate(sources[:args.count]):
        with Image.open(source) as img:
            photo = img.convert("RGB")
        for i in range(s, args.count, len(sources)):
            rng = np.random.default_rng([args.seed, i])
            out = crop(photo, args.width, args.height, rng)
            out.save(path_of(args.out, i, args.classes, digits), "JPEG", quality=args.quality)

    for i in range(args.count, total):
        os.link(path_of(args.out, i % args.count, args.classes, digits),
                path_of(args.out, i, args.classes, digits))

    sizes = [os.path.getsize(path_of(args.out, i, args.classes, digits))
             for i in range(args.count)]
    total_bytes = sum(sizes[i % args.count] for i in range(total))
    print(f"files: {total} ({args.count} written, {total - args.count} hard links)")
    print(f"total bytes: {total_bytes}")
    print(f"mean bytes per file: {total_bytes / total:.0f}")
    used = sources[:args.count]
    wallpapers = len({path.split(os.sep)[-4] for path in used})
    print(f"source photos used: {len(used)} files of {wallpapers} wallpapers")


if __name__ == "__main__":
    main()
