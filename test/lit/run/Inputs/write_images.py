"""Writes a safetensors file with one float32 tensor NAME of shape D0xD1x... holding
sin(k) for element k, to the published format: write_images.py OUT NAME D0xD1..."""
import json
import math
import struct
import sys

out, name, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split("x")]
count = 1
for d in dims:
    count *= d
data = struct.pack("<%df" % count, *[math.sin(k) for k in range(count)])
header = json.dumps({name: {"dtype": "F32", "shape": dims, "data_offsets": [0, len(data)]}}).encode()
header += b" " * (-len(header) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + data)
