"""Exports a model whose layers repeat: four residual units held as modules named first ...
fourth (a repeat whose instances are not numbered), then six parameterless squashes (a repeat
that names no layer): export_repeats.py OUT_DIR TOOLS_DIR. Writes repeats.onnx,
input.safetensors and PyTorch's output torch.safetensors."""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, sys.argv[2])
import dtnn_safetensors  # noqa: E402


class Unit(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second, self.third, self.fourth = Unit(), Unit(), Unit(), Unit()

    def forward(self, x):
        x = self.fourth(self.third(self.second(self.first(x))))
        for _ in range(6):
            x = torch.tanh(x * 0.5 + 0.25)
        return x


torch.manual_seed(0)
out = sys.argv[1]
m = Net().eval()
x = torch.randn(3, 8)
torch.onnx.export(m, (x,), os.path.join(out, "repeats.onnx"), input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=13)
with torch.no_grad():
    y = m(x)
with open(os.path.join(out, "input.safetensors"), "wb") as f:
    dtnn_safetensors.write(f, [("x", x.numpy())], {})
with open(os.path.join(out, "torch.safetensors"), "wb") as f:
    dtnn_safetensors.write(f, [("output", y.numpy())], {})
