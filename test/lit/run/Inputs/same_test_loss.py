"""Checks that two dtnn-run metrics files report the same test loss, epoch by epoch, to 1e-5
relative or to the relative tolerance given third: usage same_test_loss.py A.jsonl B.jsonl [TOL]."""
import json
import sys


def losses(path):
    return [json.loads(line)["test_loss"] for line in open(path) if line.strip()]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
if len(a) != len(b) or not a:
    sys.exit(f"{len(a)} and {len(b)} records")
for i, (x, y) in enumerate(zip(a, b)):
    if not abs(x - y) <= tol * abs(y):
        sys.exit(f"record {i + 1}: test loss {x!r} against {y!r}")
print(f"{len(a)} record(s) agree")
