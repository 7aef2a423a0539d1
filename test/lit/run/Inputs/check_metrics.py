"""Summarizes a metrics file: the record count, then per record its epoch, steps and sorted
keys, then the learning rates. Fails if a line is not a JSON object."""
import json
import sys

records = [json.loads(line) for line in open(sys.argv[1])]
print("records", len(records))
for r in records:
    assert isinstance(r, dict)
    print("epoch", r["epoch"], "steps", r["steps"], "keys", ",".join(sorted(r)))
print("lr", " ".join(f"{r['lr']:g}" for r in records))
