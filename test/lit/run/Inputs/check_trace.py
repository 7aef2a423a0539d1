"""Checks a dtnn-run trace (--trace FILE.json) and prints what it holds, a line each:

    check_trace.py TRACE.json RANKS

Valid trace-event JSON (the object form: traceEvents, displayTimeUnit); every event has the
fields its phase needs; each rank is a process named "rank R" whose tracks are named; per rank:
the train steps recorded, kernels named by layer and backend on the compute track nested in their
step, layout conversions, allreduce starts and waits with their bucket and bytes, each bucket's
flight as a begin/end pair, waits for data, batches of the data workers, the epoch and the
evaluation; and the ranks' clocks start together.
"""
import collections
import json
import sys

path, ranks = sys.argv[1], int(sys.argv[2])
trace = json.load(open(path))
assert set(trace) == {"traceEvents", "displayTimeUnit", "otherData"}, set(trace)
events = trace["traceEvents"]
names = {}
for e in events:
    assert e["ph"] in "XMbe", e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    if e["ph"] == "M":
        names[(e["pid"], e["tid"], e["name"])] = e["args"].get("name")
        continue
    assert e["ts"] >= 0 or e["ph"] == "e", e
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
print("events", len(events) > 0, "ranks", sorted({e["pid"] for e in events}) == list(range(ranks)))
for r in range(ranks):
    mine = [e for e in events if e["pid"] == r and e["ph"] != "M"]
    cats = collections.Counter(e.get("cat") for e in mine)
    steps = [e for e in mine if e.get("cat") == "step"]
    kernels = [e for e in mine if e.get("cat") == "kernel"]
    # Every kernel of the compute track lies inside a step.
    nested = all(any(s["ts"] <= k["ts"] and k["ts"] + k["dur"] <= s["ts"] + s["dur"] + 1e-3
                     for s in steps) for k in kernels if k["tid"] == 0)
    named = all(k["name"].endswith(")") and "(" in k["name"] for k in kernels)
    starts = [e for e in mine if e.get("cat") == "allreduce" and e["ph"] == "X"
              and e["name"].startswith("allreduce_start")]
    waits = [e for e in mine if e.get("cat") == "allreduce" and e["ph"] == "X"
             and e["name"].startswith("allreduce_wait")]
    flights = collections.Counter(e["ph"] for e in mine if e.get("cat") == "allreduce" and e["ph"] in "be")
    buckets = all("bucket" in e["args"] and e["args"]["bytes"] > 0 for e in starts + waits)
    workers = [e for e in mine if e.get("cat") == "data" and e["tid"] >= 10]
    print(f"rank {r}: process {names.get((r, 0, 'process_name'))}, tracks "
          f"{names.get((r, 0, 'thread_name'))}/{names.get((r, 1, 'thread_name'))}; "
          f"steps {len(steps)}, kernels {len(kernels) > 0} nested {nested} named {named}, "
          f"conversions {cats['convert'] > 0}, allreduce starts {len(starts) > 0} waits "
          f"{len(waits) == len(starts)} buckets {buckets} flights {flights['b'] == flights['e'] > 0}, "
          f"data workers {len(workers) > 0}, epochs {cats['epoch']}, evaluations {cats['evaluation']}")
firsts = [min(e["ts"] for e in events if e["pid"] == r and e.get("cat") == "step") for r in range(ranks)]
print("clocks aligned", max(firsts) - min(firsts) < 1e6)
