"""Checks dtnn's logits against torchvision's for converted weights:

    torchvision_logits.py ARCH MODEL.dtnn DTNNC DTNN_RUN WORKDIR

It builds torchvision's ARCH with random weights and random batch norm statistics (so that
inference uses them; a vision transformer's class token and head, zero at first, are drawn
too), converts its state_dict with tools/torchvision_weights.py, runs `dtnn-run --init-from
--predict` on a random batch of two images (random bytes for a model of u8 images, which
torchvision sees normalized by ImageNet's mean and std), and compares the logits with torchvision's in eval
mode: the largest difference must stay within float32 rounding of the logits' scale (1e-4 of
the largest magnitude). It also converts the weights back (to-torch) and checks that the
state_dict is the original one, bit for bit.
"""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = os.path.join(HERE, "..", "..", "..", "..", "tools", "torchvision_weights.py")


def main(arch, model, dtnnc, dtnn_run, work):
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = getattr(torchvision.models, arch)(weights=None)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
        # A vision transformer starts with a zero class token and a zero head, whose logits
        # would all be zero: draw them.
        for name, p in net.named_parameters():
            if name == "class_token" or name.startswith("heads."):
                p.normal_(std=0.02)
    net.eval()
    state_path = os.path.join(work, arch + ".pth")
    torch.save(net.state_dict(), state_path)
    weights = os.path.join(work, arch + ".safetensors")
    subprocess.run([sys.executable, CONVERTER, "to-dtnn", arch, model, weights,
                    "--state-dict", state_path, "--dtnnc", dtnnc], check=True)

    # A model of u8 images normalizes them itself (ImageNet's mean and std), as torchvision's
    # transforms ToTensor and Normalize do before the network.
    if re.search(r"\(x: u8\[", open(model).read()):
        pixels = torch.randint(0, 256, (2, 3, 224, 224), dtype=torch.uint8)
        data, dtype = pixels.numpy().tobytes(), "U8"
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        x = (pixels.float() / 255 - mean) / std
    else:
        x = torch.randn(2, 3, 224, 224)
        data, dtype = x.numpy().astype("<f4").tobytes(), "F32"
    header = json.dumps({"x": {"dtype": dtype, "shape": list(x.shape),
                               "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    inputs = os.path.join(work, "x.safetensors")
    with open(inputs, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    outputs = os.path.join(work, "logits.safetensors")
    subprocess.run([dtnn_run, model, "--init-from", weights, "--predict", inputs,
                    "--predictions", outputs], check=True, stdout=subprocess.DEVNULL)
    raw = open(outputs, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + n])["output"]
    begin, end = entry["data_offsets"]
    ours = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(entry["shape"])
    with torch.no_grad():
        theirs = net(x).numpy()
    scale = float(np.abs(theirs).max())
    diff = float(np.abs(ours - theirs).max())
    print(f"{arch}: logits {list(ours.shape)}, largest |logit| {scale:.4g}, "
          f"largest difference {diff:.3g} ({diff / scale:.2g} of it)")
    if ours.shape != theirs.shape or not diff <= 1e-4 * scale:
        sys.exit(f"{arch}: dtnn's logits differ from torchvision's")
    if (ours.argmax(1) != theirs.argmax(1)).any():
        sys.exit(f"{arch}: the predicted classes differ")

    back = os.path.join(work, arch + ".back.pth")
    subprocess.run([sys.executable, CONVERTER, "to-torch", arch, model, weights, back,
                    "--dtnnc", dtnnc], check=True)
    original, returned = net.state_dict(), torch.load(back)
    if list(original) != list(returned) or any(
            not torch.equal(original[k], returned[k]) for k in original
            if not k.endswith("num_batches_tracked")):
        sys.exit(f"{arch}: the state_dict does not survive to-dtnn and to-torch")
    print(f"{arch}: the state_dict survives to-dtnn and to-torch")


if __name__ == "__main__":
    main(*sys.argv[1:])
