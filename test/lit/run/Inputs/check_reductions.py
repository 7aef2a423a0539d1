"""Checks dtnn's reductions against PyTorch's on the same random input:

    check_reductions.py MODELS.dtnn DTNN_RUN WORKDIR

For each model of reductions.dtnn it runs `dtnn-run --predict` on a batch of two and compares
the output with the PyTorch expression below, to float32 rounding (relative to the output's
largest magnitude).
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

def attention(q, k, v, mask=None, causal=False, scale=None):
    """F.scaled_dot_product_attention, which this torch may not have, written out."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * (scale or q.shape[-1] ** -0.5)
    if mask is not None:
        scores = scores + mask
    if causal:
        hidden = torch.ones(q.shape[-2], k.shape[-2]).triu(1).bool()
        scores = scores.masked_fill(hidden, float("-inf"))
    return torch.matmul(scores.softmax(-1), v)


EXPECTED = {
    "Adaptive": lambda x: F.adaptive_avg_pool2d(x, (4, 5)),
    "AdaptiveRows": lambda x: F.adaptive_avg_pool2d(x, (3, 9)),
    "MeanChannelsWidth": lambda x: x.mean([1, 3]),
    "MeanLastKeep": lambda x: x.mean([-1], keepdim=True),
    "MeanAll": lambda x: x.mean([3, 1, 2]),
    "MeanSpatial": lambda x: x.mean([2, 3], keepdim=True),
    "SumMaxVar": lambda x: x.sum(2) * x.amax(-2) + x.var([2]) - x.var(2, correction=0),
    "MaxKeep": lambda x: x.amax([1, 3], keepdim=True),
    "Math": lambda x: (lambda p: x.exp() + p.log() + torch.log10(p) + torch.erf(x) + p.sqrt() +
                       p.rsqrt() + p.pow(1.5) + x.pow(3))(x * x + 0.5),
    "LayerNormLast": lambda x: F.layer_norm(x, [9], eps=1e-6),
    "LayerNormTwo": lambda x: F.layer_norm(x, [10, 9]),
    "LayerNormByHand": lambda x: F.layer_norm(x, [9]),
    "MatmulTransposed": lambda x: 2 * torch.matmul(x, x.transpose(-2, -1)),
    "MatmulGram": lambda x: torch.matmul(x.transpose(-2, -1), x),
    "AttentionPlain": lambda x: attention(x, x * 0.5, x),
    "AttentionCausal": lambda x: attention(x, x, x.exp(), causal=True, scale=0.3),
    "AttentionMask": lambda x: attention(x, x, x, mask=torch.matmul(x, x.transpose(-2, -1)) * 0.1),
    "GroupNormThree": lambda x: F.group_norm(x, 3),
    "GroupNormOne": lambda x: F.group_norm(x, 1, eps=0.01),
    "BatchMerged": lambda x: torch.matmul(x.flatten(0, 1), x.reshape(-1, 9).softmax(-1).view(
        -1, 3, 10, 9).flatten(0, 1).transpose(-2, -1)).reshape(-1, 3, 10, 10),
    "BatchConcat": lambda x: torch.cat([x, x * 2], 0).reshape(2, -1, 3, 10, 9).transpose(0, 1).sum(1),
}


def write(path, name, array):
    data = array.astype("<f4").tobytes()
    header = json.dumps({name: {"dtype": "F32", "shape": list(array.shape),
                                "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def read(path, name):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + n])[name]
    begin, end = entry["data_offsets"]
    return np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(entry["shape"])


def main(models, dtnn_run, work):
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(2, 3, 10, 9)
    inputs = os.path.join(work, "x.safetensors")
    write(inputs, "x", x.numpy())
    for name, expected in EXPECTED.items():
        out = os.path.join(work, name + ".safetensors")
        subprocess.run([dtnn_run, models, "--model", name, "--predict", inputs,
                        "--predictions", out], check=True, stdout=subprocess.DEVNULL)
        ours, theirs = read(out, "output"), expected(x).numpy()
        diff = float(np.abs(ours - theirs).max()) if ours.shape == theirs.shape else float("inf")
        print(f"{name}: {list(ours.shape)}, largest difference {diff:.2g}")
        if not diff <= 1e-6 * max(1.0, float(np.abs(theirs).max())):
            sys.exit(f"{name}: dtnn's output {list(ours.shape)} differs from PyTorch's "
                     f"{list(theirs.shape)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
