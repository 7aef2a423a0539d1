"""Copies a safetensors file with changes, to make checkpoints that dtnn-run must refuse:

    edit_checkpoint.py IN OUT [KEY=VALUE ...] [--nan NAME ...]

KEY=VALUE sets a metadata entry; --nan NAME makes the first value of float32 tensor NAME a NaN.
"""
import json
import struct
import sys

src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(src, "rb") as f:
    raw = f.read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
args = iter(edits)
for arg in args:
    if arg == "--nan":
        entry = header[next(args)]
        assert entry["dtype"] == "F32"
        begin = entry["data_offsets"][0]
        data[begin:begin + 4] = struct.pack("<f", float("nan"))
    else:
        key, value = arg.split("=", 1)
        header.setdefault("__metadata__", {})[key] = value
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + bytes(data))
