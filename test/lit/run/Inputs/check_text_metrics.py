"""Checks the metrics file of a language model's run (argv[1]): bits per byte is the loss in bits
(byte tokens: one byte a label), perplexity its exp, for the training and the held-out set of
every epoch, and the held-out bits per byte fell below 8 (a uniform guess over 256 bytes) and
fell from the first epoch to the last."""
import json
import math
import sys

records = [json.loads(line) for line in open(sys.argv[1])]
for r in records:
    for split in ("train", "test"):
        loss = r[split + "_loss"]
        assert math.isclose(r[split + "_bpb"], loss / math.log(2), rel_tol=1e-4), r
        assert math.isclose(r[split + "_ppl"], math.exp(loss), rel_tol=1e-4), r
first, last = records[0]["test_bpb"], records[-1]["test_bpb"]
assert last < first < 8, (first, last)
print(f"{len(records)} epochs: held-out bits per byte {first:.2f} -> {last:.2f}")
