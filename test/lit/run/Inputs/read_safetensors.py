"""Prints the metadata and the tensors (name, dtype, shape) of a safetensors file, checking
that the offsets tile the data exactly."""
import json
import os
import struct
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
data_size = os.path.getsize(path) - 8 - n
meta = header.pop("__metadata__", {})
print("metadata " + " ".join(f"{k}={v}" for k, v in sorted(meta.items())))
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
    begin, stop = t["data_offsets"]
    assert begin == end, f"gap or overlap before {name}"
    end = stop
for name in sorted(header):
    print(name, header[name]["dtype"], header[name]["shape"])
assert end == data_size, f"data holds {data_size} bytes, offsets cover {end}"
