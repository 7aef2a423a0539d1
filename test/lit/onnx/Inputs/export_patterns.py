"""Exports a transformer MLP block at opset 13, where torch.onnx.export writes nn.LayerNorm as
ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add, nn.GELU as Div/Erf/Add/Mul/Mul and
nn.Linear on [N, T, C] as MatMul/Add, and a twin whose GELU's erf is also an output (so that
the pattern must not be fused): export_patterns.py OUT_DIR TOOLS_DIR. Writes block.onnx,
shared.onnx, input.safetensors and PyTorch's outputs block.torch.safetensors and
shared.torch.safetensors."""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, sys.argv[2])
import dtnn_safetensors  # noqa: E402


class Block(nn.Module):
    def __init__(self, shared=False):
        super().__init__()
        self.norm = nn.LayerNorm(16, eps=1e-6)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)
        self.shared = shared

    def forward(self, x):
        h = self.fc1(self.norm(x))
        e = torch.erf(h / 1.4142135381698608)
        y = x + self.fc2(h * (1.0 + e) * 0.5)
        return (y, e) if self.shared else y


torch.manual_seed(0)
out = sys.argv[1]
x = torch.randn(2, 5, 16)
for name, m in (("block", Block()), ("shared", Block(shared=True))):
    m.eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
        y = m(x)
    outputs = ["y", "e"] if m.shared else ["y"]
    torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), input_names=["x"], output_names=outputs,
                      dynamic_axes={"x": {0: "N"}, **{o: {0: "N"} for o in outputs}}, opset_version=13)
    ys = y if isinstance(y, tuple) else (y,)
    names = ["output"] if len(ys) == 1 else ["output.%d" % i for i in range(len(ys))]
    with open(os.path.join(out, name + ".torch.safetensors"), "wb") as f:
        dtnn_safetensors.write(f, [(n, t.numpy()) for n, t in zip(names, ys)], {})
with open(os.path.join(out, "input.safetensors"), "wb") as f:
    dtnn_safetensors.write(f, [("x", x.numpy())], {})
