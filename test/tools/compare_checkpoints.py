#!/usr/bin/env python3
"""Compares the tensors of two safetensors checkpoints.

usage: compare_checkpoints.py A B [--rtol X] [--atol Y] [--prefix P] [--exact]

For each tensor of A (optionally only names starting with P), computes
|A - B|_2 / max(|A|_2, Y) and fails (exit 1) when it exceeds --rtol (default
1e-4; Y defaults to 0: a tensor whose gradient is rounding noise, such as the
bias of a convolution followed by batch norm, needs a floor), or, with
--exact, when the bytes differ at all. A tensor holding a NaN or an infinity
fails too (except with --exact, which compares bytes). Both files must hold
the same tensors. Uses the standard library only.
"""
import array
import json
import math
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], body[begin:end])
    return tensors


def values(dtype, data):
    code = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}.get(dtype)
    if code is None:
        return None
    a = array.array(code)
    a.frombytes(data)
    return a


def main():
    args = sys.argv[1:]
    rtol, atol, prefix, exact = 1e-4, 0.0, "", False
    if "--atol" in args:
        i = args.index("--atol")
        atol = float(args[i + 1])
        del args[i:i + 2]
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    if "--prefix" in args:
        i = args.index("--prefix")
        prefix = args[i + 1]
        del args[i:i + 2]
    if "--exact" in args:
        exact = True
        args.remove("--exact")
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = load(args[0]), load(args[1])
    if set(a) != set(b):
        print("the checkpoints hold different tensors:", sorted(set(a) ^ set(b)))
        return 1
    worst, bad = 0.0, []
    for name in sorted(a):
        if not name.startswith(prefix):
            continue
        (ta, da), (tb, db) = a[name], b[name]
        if ta != tb or len(da) != len(db):
            bad.append(name)
            continue
        if exact:
            if da != db:
                bad.append(name)
            continue
        va, vb = values(ta, da), values(tb, db)
        if va is None:
            continue
        # A NaN or infinity fails: the norms below would let a NaN through.
        if not all(math.isfinite(x) for x in va) or not all(math.isfinite(x) for x in vb):
            bad.append("%s (not finite)" % name)
            continue
        norm = math.sqrt(sum(x * x for x in va))
        diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(va, vb)))
        scale = max(norm, atol)
        rel = diff / scale if scale > 0 else diff
        worst = max(worst, rel)
        if rel > rtol:
            bad.append("%s (%.3g: |diff| %.3g, |a| %.3g)" % (name, rel, diff, norm))
    if bad:
        more = " and %d more" % (len(bad) - 5) if len(bad) > 5 else ""
        print("differ:", ", ".join(bad[:5]) + more)
        return 1
    print("match:", "bytes equal" if exact else "worst relative difference %.3g" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
