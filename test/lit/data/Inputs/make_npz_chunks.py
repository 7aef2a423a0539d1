"""Writes Fashion-MNIST as PyDTNN's ImageNet chunks: OUT/train/*.npz and OUT/val/*.npz, each
numpy.savez_compressed of x (uint8 [N, 1, 28, 28]) and y (int16 [N, 1], 1-based as PyDTNN's).

  python3 make_npz_chunks.py OUT [TRAIN] [VAL] [PER_CHUNK]
"""
import gzip
import os
import sys

import numpy as np

out = sys.argv[1]
counts = {"train": int(sys.argv[2]) if len(sys.argv) > 2 else 600,
          "val": int(sys.argv[3]) if len(sys.argv) > 3 else 200}
per = int(sys.argv[4]) if len(sys.argv) > 4 else 256
src = "/usr/share/datasets/fashion-mnist"


def idx(name):
    path = os.path.join(src, name)
    data = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


for split, prefix in (("train", "train"), ("val", "t10k")):
    x = idx(prefix + "-images-idx3-ubyte")[:counts[split], None]
    y = idx(prefix + "-labels-idx1-ubyte")[:counts[split]].astype(np.int16)[:, None] + 1
    os.makedirs(os.path.join(out, split), exist_ok=True)
    for k, start in enumerate(range(0, len(x), per)):
        np.savez_compressed(os.path.join(out, split, f"{split}-{k:05d}-of-01024.npz"),
                            x=x[start:start + per], y=y[start:start + per])
