"""Writes the inputs of torchvision-converter-errors.test:

    converter_inputs.py state-dicts WORKDIR
    converter_inputs.py checkpoints RESNET18.safetensors WORKDIR

state-dicts writes ResNet-18's state_dict with random batch norm statistics (resnet18.pth), the
same entries with two of equal shape in each other's place (reordered.pth), a copy with keys
missing, renamed, added, misshapen and of integer type (bad-keys.pth), and files that are not
plain state_dicts: pickles that would run os.system to create a marker file if unpickled without
weights_only (malicious.pth, and malicious-proof.pth with its own marker, to show that the
payload works), a whole module, a TorchScript archive, the legacy format, a plain pickle, a list,
a non-tensor value, a non-string key, a key set twice, a truncated archive and an empty file.

checkpoints rewrites a converted ResNet-18 checkpoint: with one tensor stored as I32
(i32.safetensors), with one tensor's data_offsets overlapping another's (overlap.safetensors),
with an extra tensor whose name holds a line break (newline-name.safetensors), and with the
data in the reverse order of the names (permuted.safetensors, which is valid).
"""
import collections
import json
import os
import pickle
import shlex
import struct
import sys

import torch
import torchvision

# The dtnn names of layer1.0.bn1.running_mean and layer1.0.bn2.running_mean.
BN1_MEAN = "resnet.0.basic.0.conv_bn.0.batchnorm.0.running_mean"
BN2_MEAN = "resnet.0.basic.0.conv_bn.1.batchnorm.0.running_mean"


class Payload:
    """Unpickles to os.system(touch MARKER)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + shlex.quote(self.marker),))


class Duplicated:
    """Pickles as an OrderedDict whose items set one key twice."""

    def __init__(self, items):
        self.items = items

    def __reduce__(self):
        return (collections.OrderedDict, (), None, None, iter(self.items))


def state_dicts(work):
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    state = net.state_dict()
    torch.save(state, os.path.join(work, "resnet18.pth"))

    # Two running means of 64 channels change places; each keeps its name and values.
    keys = list(state)
    a, b = keys.index("layer1.0.bn1.running_mean"), keys.index("layer1.0.bn2.running_mean")
    keys[a], keys[b] = keys[b], keys[a]
    torch.save(collections.OrderedDict((k, state[k]) for k in keys),
               os.path.join(work, "reordered.pth"))

    bad = collections.OrderedDict(state)
    del bad["layer4.1.bn2.running_var"]
    bad["fc.b"] = bad.pop("fc.bias")
    bad["conv1.weight"] = bad["conv1.weight"].to(torch.int64)
    bad["layer1.0.conv1.weight"] = bad["layer1.0.conv1.weight"][:, :, :1, :1].clone()
    bad["head.weight"] = torch.zeros(10, 512)
    torch.save(bad, os.path.join(work, "bad-keys.pth"))

    small = collections.OrderedDict(conv1=torch.zeros(2), fc=torch.ones(2))
    for name, marker in (("malicious", "marker"), ("malicious-proof", "proof-marker")):
        torch.save({"conv1.weight": Payload(os.path.join(work, marker))},
                   os.path.join(work, name + ".pth"))
    torch.save(torch.nn.Linear(2, 2), os.path.join(work, "module.pth"))
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(work, "torchscript.pt"))
    torch.save(small, os.path.join(work, "legacy.pth"), _use_new_zipfile_serialization=False)
    with open(os.path.join(work, "plain-pickle.pth"), "wb") as f:
        pickle.dump(dict(small), f)
    torch.save(list(small.values()), os.path.join(work, "list.pth"))
    torch.save({"conv1.weight": "weights"}, os.path.join(work, "string-value.pth"))
    torch.save({7: torch.zeros(2)}, os.path.join(work, "int-key.pth"))
    torch.save(Duplicated([("conv1.weight", torch.zeros(2)), ("fc.weight", torch.zeros(2)),
                           ("conv1.weight", torch.ones(2))]),
               os.path.join(work, "duplicate-key.pth"))
    raw = open(os.path.join(work, "resnet18.pth"), "rb").read()
    with open(os.path.join(work, "truncated.pth"), "wb") as f:
        f.write(raw[:len(raw) // 2])
    open(os.path.join(work, "empty.pth"), "wb").close()


def checkpoints(path, work):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]

    def save(name, header, data):
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(work, name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + data)

    i32 = json.loads(json.dumps(header))
    i32[BN1_MEAN]["dtype"] = "I32"
    save("i32.safetensors", i32, data)

    # bn2's running mean starts where bn1's does, on bytes that hold bn1's: the file's length
    # and each tensor's span are right, but two tensors share their bytes.
    overlap = json.loads(json.dumps(header))
    first = header[BN1_MEAN]["data_offsets"]
    second = header[BN2_MEAN]["data_offsets"]
    if first[0] > second[0]:
        first, second = second, first
    for entry in overlap.values():
        if isinstance(entry, dict) and entry.get("data_offsets") == second:
            entry["data_offsets"] = list(first)
    save("overlap.safetensors", overlap, data)

    # A name that would break the one-line message.
    newline = json.loads(json.dumps(header))
    newline["extra\nname"] = {"dtype": "F32", "shape": [1],
                               "data_offsets": [len(data), len(data) + 4]}
    save("newline-name.safetensors", newline, data + bytes(4))

    permuted, chunks, offset = {"__metadata__": header.get("__metadata__", {})}, [], 0
    for name in sorted((k for k in header if k != "__metadata__"), reverse=True):
        begin, end = header[name]["data_offsets"]
        permuted[name] = dict(header[name], data_offsets=[offset, offset + end - begin])
        chunks.append(data[begin:end])
        offset += end - begin
    save("permuted.safetensors", permuted, b"".join(chunks))


if __name__ == "__main__":
    if sys.argv[1] == "state-dicts":
        state_dicts(sys.argv[2])
    else:
        checkpoints(sys.argv[2], sys.argv[3])
