#!/usr/bin/env python3
"""Converts weights between a torchvision model's state_dict and a dtnn checkpoint.

    torchvision_weights.py to-dtnn ARCH MODEL.dtnn OUT.safetensors [--state-dict IN.pth]
                                   [--pretrained] [--seed S] [--dtnnc PATH]
    torchvision_weights.py to-torch ARCH MODEL.dtnn IN.safetensors OUT.pth [--dtnnc PATH]

ARCH is a torchvision model (resnet18, mobilenet_v2, ...) and MODEL.dtnn the dtnn model written
as it is (examples/resnet18.dtnn). to-dtnn takes the state_dict of --state-dict, or torchvision's
pretrained weights with --pretrained (downloaded by torchvision), or else a freshly initialized
model seeded by --seed; it writes a safetensors file for `dtnn-run --init-from`. to-torch writes
a dtnn checkpoint's weights back as a state_dict for torch.load.

The two lists of tensors are paired in order: the dtnn model's parameters and buffers as
`dtnnc compile --no-fuse` declares them, and the state_dict's entries without batch norm's
num_batches_tracked, which dtnn does not keep, and without the auxiliary classifiers of
GoogLeNet and Inception-v3 (aux1, aux2, AuxLogits), which only their training uses. (With
pretrained weights those two models also rescale their input inside the model,
transform_input; dtnn's do not, so give them inputs normalized the way torchvision's
transform_input leaves them.) Each pair must agree in shape and kind (a weight
with a weight, batch norm's weight and bias with gamma and beta, running statistics with
running statistics), so a model written in another order is refused, naming the first pair that
differs. Batch norm's running variance is unbiased in both.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

# dtnn's last name part and the state_dict's that it pairs with.
AUXILIARY = ("aux1", "aux2", "AuxLogits")
KINDS = {"weight": "weight", "bias": "bias", "gamma": "weight", "beta": "bias",
         "running_mean": "running_mean", "running_var": "running_var"}
DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def fail(message):
    sys.exit("torchvision_weights.py: error: " + message)


def dtnn_tensors(model, dtnnc):
    """The (name, shape) of every parameter and buffer of MODEL, in declaration order."""
    try:
        text = subprocess.run([dtnnc, "compile", model, "--no-fuse"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"cannot compile {model} with {dtnnc}: {getattr(e, 'stderr', '') or e}")
    out = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] in ("param", "buffer") and words[2] == ":":
            dims = words[3][words[3].index("[") + 1:words[3].index("]")]
            out.append((words[1][1:], [int(d) for d in dims.split(",")] if dims else []))
    return out


def pair(dtnn, state):
    """Pairs the dtnn tensors with the state_dict's entries, checking shape and kind."""
    keys = [k for k in state
            if not k.endswith("num_batches_tracked") and k.split(".")[0] not in AUXILIARY]
    if len(keys) != len(dtnn):
        fail(f"the dtnn model has {len(dtnn)} tensors, the state_dict {len(keys)} "
             "(without num_batches_tracked)")
    pairs = []
    for (name, shape), key in zip(dtnn, keys):
        kind = KINDS.get(name.rsplit(".", 1)[-1])
        if kind != key.rsplit(".", 1)[-1] or list(state[key].shape) != shape:
            fail(f"'{name}' {shape} does not pair with '{key}' {list(state[key].shape)}: "
                 "the models differ, or declare their layers in another order")
        pairs.append((name, key))
    return pairs


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, array in tensors:
        data = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(path + ".tmp", path)


def read_safetensors(path):
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        if e["dtype"] not in DTYPES:
            fail(f"{path}: '{name}' has dtype {e['dtype']}")
        begin, end = e["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end],
                                  dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
    return out


def torch_model(arch, seed):
    import torch
    import torchvision
    if not hasattr(torchvision.models, arch):
        fail(f"torchvision has no model '{arch}'")
    torch.manual_seed(seed)
    return getattr(torchvision.models, arch)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("direction", choices=["to-dtnn", "to-torch"])
    parser.add_argument("arch")
    parser.add_argument("model")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--state-dict")
    parser.add_argument("--pretrained", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtnnc", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                        "bin", "dtnnc"))
    args = parser.parse_args(argv)
    import torch
    dtnn = dtnn_tensors(args.model, args.dtnnc)
    if args.direction == "to-dtnn":
        if len(args.files) != 1:
            fail("to-dtnn takes one output file")
        build = torch_model(args.arch, args.seed)
        if args.state_dict:
            state = torch.load(args.state_dict, map_location="cpu")
        else:
            state = build(weights="DEFAULT" if args.pretrained else None).state_dict()
        tensors = [(name, state[key].detach().float().numpy()) for name, key in pair(dtnn, state)]
        write_safetensors(args.files[0], tensors, {"converted_from": "torchvision " + args.arch})
    else:
        if len(args.files) != 2:
            fail("to-torch takes an input and an output file")
        weights = read_safetensors(args.files[0])
        extra = {"aux_logits": False} if args.arch in ("googlenet", "inception_v3") else {}
        reference = torch_model(args.arch, args.seed)(weights=None, **extra).state_dict()
        state = {}
        names = dict((key, name) for name, key in pair(dtnn, reference))
        for key, value in reference.items():
            if key.endswith("num_batches_tracked"):
                state[key] = value
            elif names[key] not in weights:
                fail(f"{args.files[0]}: lacks '{names[key]}'")
            else:
                state[key] = torch.from_numpy(weights[names[key]].astype("float32").copy())
        torch.save(state, args.files[1])


if __name__ == "__main__":
    main(sys.argv[1:])
