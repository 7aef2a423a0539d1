"""LeNet-5 on Fashion-MNIST in PyTorch, with the settings of examples/lenet.dtnn.

Usage: python3 bench/lenet_pytorch.py [--epochs N] [--seed S] [--threads T]
                                      [--init he_normal|he_uniform|default] [--cosine]

Reads the IDX files of the Debian package dataset-fashion-mnist, normalizes like dtnn (mean
0.2860, std 0.3530), and trains with batch 64, SGD with momentum 0.9 and learning rate 0.01.
--init he_normal (the default) uses dtnn's default initialization, He's Gaussian (std
sqrt(2/fan_in), zero biases); --init he_uniform uses He's uniform one (bound sqrt(6/fan_in));
--init default keeps PyTorch's own. --cosine anneals the learning rate per epoch from 0.01
to 0 over the run (CosineAnnealingLR, like dtnn's `schedule = cosine()`). Prints one line per
epoch with the test accuracy and the training images per second, measured like dtnn-run's
images_per_s (the first 5 steps of the run are left out). Needs Debian's python3-torch.
"""
import argparse
import gzip
import math
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = "/usr/share/datasets/fashion-mnist/"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return torch.frombuffer(bytearray(data[16:]), dtype=torch.uint8).view(count, 1, rows, cols)
    return torch.frombuffer(bytearray(data[8:]), dtype=torch.uint8).long()


def load(prefix):
    x = read_idx(ROOT + prefix + "-images-idx3-ubyte.gz").float() / 255.0
    y = read_idx(ROOT + prefix + "-labels-idx1-ubyte.gz")
    return (x - 0.2860) / 0.3530, y


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(400, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


def he_init(model, normal):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            if normal:
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_in))
            else:
                bound = math.sqrt(6.0 / fan_in)
                nn.init.uniform_(m.weight, -bound, bound)
            nn.init.zeros_(m.bias)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--init", choices=["he_normal", "he_uniform", "default"], default="he_normal")
    p.add_argument("--cosine", action="store_true")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    model = LeNet()
    if a.init != "default":
        he_init(model, a.init == "he_normal")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs) if a.cosine else None
    steps = 0
    for epoch in range(1, a.epochs + 1):
        model.train()
        perm = torch.randperm(len(xtr))
        timed, images = 0.0, 0
        for i in range(0, len(xtr), 64):
            idx = perm[i : i + 64]
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            steps += 1
            if steps > 5:
                timed += time.perf_counter() - t0
                images += len(idx)
        if sched:
            sched.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(xte[i : i + 1000]).argmax(1) == yte[i : i + 1000]).sum().item()
                          for i in range(0, len(xte), 1000))
        print(f"epoch {epoch}: test_acc {100 * correct / len(xte):.2f}% "
              f"images_per_s {images / timed:.0f}", flush=True)


main()
