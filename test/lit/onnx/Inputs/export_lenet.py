"""Exports a small LeNet with torch.onnx.export (batch axis dynamic, x.view(x.size(0), -1) for
the exporters' Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain), and writes an input
batch and PyTorch's logits for it as safetensors: export_lenet.py OUT_DIR."""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, sys.argv[2])
import dtnn_safetensors  # noqa: E402


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 84)
        self.fc2 = nn.Linear(84, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.max_pool2d(torch.sigmoid(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        return torch.log_softmax(self.fc2(torch.tanh(self.fc1(x)) * 0.5), dim=1)


torch.manual_seed(0)
out = sys.argv[1]
m = LeNet().eval()
with torch.no_grad():
    m.bn1.running_mean.uniform_(-0.5, 0.5)
    m.bn1.running_var.uniform_(0.5, 2.0)
x = torch.randn(3, 1, 28, 28)
torch.onnx.export(m, (x,), os.path.join(out, "lenet.onnx"), input_names=["image"],
                  output_names=["logits"], dynamic_axes={"image": {0: "batch"}}, opset_version=13)
with torch.no_grad():
    y = m(x)
with open(os.path.join(out, "input.safetensors"), "wb") as f:
    dtnn_safetensors.write(f, [("image", x.numpy())], {})
with open(os.path.join(out, "torch.safetensors"), "wb") as f:
    dtnn_safetensors.write(f, [("output", y.numpy())], {})
