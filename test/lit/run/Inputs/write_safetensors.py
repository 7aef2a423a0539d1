"""Writes a safetensors file of float32 zeros, to the published format, with nothing but the
standard library: write_safetensors.py OUT NAME=D0xD1... [NAME=...]   (NAME= for a scalar)."""
import json
import struct
import sys

header, offset = {}, 0
for arg in sys.argv[2:]:
    name, dims = arg.split("=")
    shape = [int(d) for d in dims.split("x")] if dims else []
    count = 1
    for d in shape:
        count *= d
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + 4 * count]}
    offset += 4 * count
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + bytes(offset))
