#!/usr/bin/python3
"""Exports a torchvision model with torch.onnx.export (opset 17, batch axis dynamic) for dtnnc
import, with PyTorch's logits on a batch to compare with:

    onnx_export_torchvision.py OUT_DIR NAME [--batch B] [--training]

NAME is one of torchvision.models' builders (resnet50, vit_b_16, ...), at 224x224, or a small
instance of a family for tests: small_vit (ViT's encoder, two layers of width 32, 32x32),
small_convnext (two stages), small_mobilenet (MobileNet-v3-Small), small_efficientnet
(EfficientNet-B0), at 64x64 unless said. Every parameter and batch-norm statistic is perturbed
from torchvision's initialization, so that no two are equal (the exporter would share equal
initializers) and a comparison exercises each. Writes NAME.onnx, NAME.in.safetensors (the
batch, as input "input") and NAME.torch.safetensors (PyTorch's logits in eval mode, as
"output"). With --training the graph is exported in training mode instead (as NAME.train.onnx),
where batch norm and dropout stay the training layers rather than being folded away (stochastic
depth, whose random draw torch.onnx cannot export, is left out)."""
import argparse
import os
import sys

import torch
import torchvision
from torchvision.models import convnext, vision_transformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtnn_safetensors  # noqa: E402


def build(name):
    """The model and its input size."""
    if name == "small_vit":
        return vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                    hidden_dim=32, mlp_dim=64, num_classes=10), 32
    if name == "small_convnext":
        return convnext.ConvNeXt([convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, None, 1)],
                                 num_classes=10), 64
    if name == "small_mobilenet":
        return torchvision.models.mobilenet_v3_small(num_classes=10), 64
    if name == "small_efficientnet":
        return torchvision.models.efficientnet_b0(num_classes=10), 64
    if not hasattr(torchvision.models, name):
        sys.exit("onnx_export_torchvision.py: unknown model " + name)
    return getattr(torchvision.models, name)(weights=None), 224


def replace_stochastic_depth(module):
    for name, child in module.named_children():
        if isinstance(child, torchvision.ops.StochasticDepth):
            setattr(module, name, torch.nn.Identity())
        else:
            replace_stochastic_depth(child)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("name")
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--training", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    m, size = build(a.name)
    m.eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.02)
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    x = torch.randn(a.batch, 3, size, size)
    mode = torch.onnx.TrainingMode.TRAINING if a.training else torch.onnx.TrainingMode.EVAL
    if a.training:  # torch.onnx cannot export stochastic depth's random draw: left out
        replace_stochastic_depth(m)
    torch.onnx.export(m, (x,), os.path.join(a.out, a.name + (".train.onnx" if a.training else ".onnx")),
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, opset_version=17,
                      training=mode, do_constant_folding=not a.training)
    m.eval()
    with torch.no_grad():
        y = m(x)
    with open(os.path.join(a.out, a.name + ".in.safetensors"), "wb") as f:
        dtnn_safetensors.write(f, [("input", x.numpy())], {})
    with open(os.path.join(a.out, a.name + ".torch.safetensors"), "wb") as f:
        dtnn_safetensors.write(f, [("output", y.numpy())], {})


if __name__ == "__main__":
    main()
