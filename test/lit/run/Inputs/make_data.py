"""Writes small IDX data sets, good and broken, for dtnn-run's error tests.

Usage: make_data.py DIR KIND

KIND is one of:
  good         8x8 images with labels 0..3, gzipped like the Debian package
  big-images   28x28 images (the wrong size for an 8x8 model)
  bad-label    a label of 7: valid Fashion-MNIST, out of range for a model with 4 outputs
  truncated    an image file cut short
  bad-magic    an image file whose magic number is wrong
  no-labels    image files only
  huge-header  a training image file whose header promises 2^64 - 2^33 + 1 bytes
  overflow     a training image file whose header promises over 2^64 bytes
  zeros-bomb   a training image file with 64 MiB of zeros after its data, compressed to 64 KiB
"""
import gzip
import os
import struct
import sys


def idx_images(count, side):
    header = struct.pack(">IIII", 0x00000803, count, side, side)
    return header + bytes((i * 7 + j) % 256 for i in range(count) for j in range(side * side))


def idx_labels(labels):
    return struct.pack(">II", 0x00000801, len(labels)) + bytes(labels)


def write(path, data, compress=True):
    if compress:
        with open(path + ".gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


def write_zeros_bomb(path, data, zeros):
    with open(path + ".gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
        chunk = bytes(1 << 20)
        for _ in range(zeros >> 20):
            f.write(chunk)


def main():
    out, kind = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    side = 28 if kind == "big-images" else 8
    for prefix, count in (("train", 64), ("t10k", 32)):
        if kind == "empty-test" and prefix == "t10k":
            count = 0
        images = idx_images(count, side)
        labels = [i % 4 for i in range(count)]
        if kind == "bad-label" and prefix == "train":
            labels[5] = 7
        if kind == "truncated" and prefix == "train":
            images = images[: len(images) // 2]
        if kind == "bad-magic" and prefix == "t10k":
            images = struct.pack(">I", 0x00000802) + images[4:]
        if kind == "huge-header" and prefix == "train":
            images = struct.pack(">IIII", 0x00000803, 0xFFFFFFFF, 0xFFFF, 0x10001) + images[16:]
        if kind == "overflow" and prefix == "train":
            images = struct.pack(">IIII", 0x00000803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF) + images[16:]
        if kind == "zeros-bomb" and prefix == "train":
            write_zeros_bomb(os.path.join(out, prefix + "-images-idx3-ubyte"), images, 64 << 20)
            images = None
        if images is not None:
            write(os.path.join(out, prefix + "-images-idx3-ubyte"), images)
        if kind != "no-labels":
            write(os.path.join(out, prefix + "-labels-idx1-ubyte"), idx_labels(labels))


main()
