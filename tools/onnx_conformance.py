#!/usr/bin/python3
"""Runs ONNX's backend tests (Debian's libonnx-testdata) through dtnn.

    onnx_conformance.py [--data DIR] [--suite node,simple,...] [--filter TEXT]
                        [--backend NAME]... [--expect FILE] [--write-expect FILE] [--jobs J]

Each test (a model.onnx and test_data_set_*/input_*.pb, output_*.pb) is imported with `dtnnc
import`, its integer and boolean inputs bound as constants of the import (`--constant`: dtnn
needs shapes, axes and indices known when compiling) and its float inputs written as
safetensors under the names of the imported model's inputs (in order), run with `dtnn-run
--predict` on each backend, and each output compared with the
expected one at ONNX's tolerances (rtol 1e-3, atol 1e-7, as its runner). A test is `passed`,
`failed` (with the largest difference), or `refused` (with dtnnc's message). The table gives
the totals per operator (for node tests, the operator tested). With --expect, the tests listed
in FILE must pass: the run fails, naming them, if any does not.
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtnn_safetensors  # noqa: E402

DATA = "/usr/include/onnx/backend/test/data"
RTOL, ATOL = 1e-3, 1e-7


def operator(test_dir):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    ops = [n.op_type for n in model.graph.node]
    return ops[0] if len(set(ops)) == 1 else (ops[0] + "+" if ops else "(none)")


def graph_inputs(test_dir):
    """The graph's inputs that are not initializers, in order (input_i.pb is the i-th), each with
    whether it is a tensor (a sequence or an optional is left for the import to refuse)."""
    g = onnx.load(os.path.join(test_dir, "model.onnx")).graph
    inits = {i.name for i in g.initializer}
    return [(i.name, i.type.HasField("tensor_type")) for i in g.input if i.name not in inits]


def run_test(test_dir, bin_dir, backends):
    """(status, detail) of one test. Integer and boolean inputs (a Slice's starts, a Gather's
    indices, a Reshape's shape) are bound as constants of the import (`--constant`), as dtnn needs
    shapes, axes and indices known when compiling; floating-point inputs are fed to the model."""
    names = graph_inputs(test_dir)
    data_sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    if not data_sets:
        return "refused", "the test has no data set"
    for data_set in data_sets:
        status = run_data_set(test_dir, data_set, names, bin_dir, backends)
        if status[0] != "passed":
            return status
    return "passed", ""


def run_data_set(test_dir, data_set, names, bin_dir, backends):
    with tempfile.TemporaryDirectory() as tmp:
        inputs, constants = [], []
        for i, (name, is_tensor) in enumerate(names):
            if not is_tensor:
                continue
            path = os.path.join(data_set, "input_%d.pb" % i)
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            a = numpy_helper.to_array(t)
            if a.dtype.kind in "iub":
                constants += ["--constant", "%s=%s" % (name, path)]
            elif a.dtype != np.float32:
                return "refused", "input '%s' is %s; the runner writes float32 inputs only" % (name, a.dtype)
            else:
                inputs.append((name, a))
        src, weights = os.path.join(tmp, "model.dtnn"), os.path.join(tmp, "w.safetensors")
        r = subprocess.run([os.path.join(bin_dir, "dtnnc"), "import", os.path.join(test_dir, "model.onnx"),
                            "-o", src, "--weights", weights] + constants,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            msg = r.stderr.strip().splitlines()
            return "refused", (msg[0].split("model.onnx: ", 1)[-1] if msg else "exit %d" % r.returncode)
        text = open(src).read()
        signature = re.search(r"^model \w+\((.*)\) ->", text, re.M).group(1)
        fed = re.findall(r"(\w+): \w+\[", signature)
        # The imported model's inputs are the graph's float inputs, in order, under names of
        # their own (an identifier made of the ONNX name).
        if len(fed) != len(inputs):
            return "failed", "the imported model takes %d inputs, the test feeds %d" % (len(fed), len(inputs))
        inputs = [(n, a) for n, (_, a) in zip(fed, inputs)]
        expected = []
        for path in sorted(glob.glob(os.path.join(data_set, "output_*.pb")),
                           key=lambda p: int(re.search(r"(\d+)\.pb$", p).group(1))):
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            expected.append(numpy_helper.to_array(t))
        inp = os.path.join(tmp, "in.safetensors")
        with open(inp, "wb") as f:
            dtnn_safetensors.write(f, inputs, {})
        for backend in backends:
            out = os.path.join(tmp, "out.safetensors")
            args = [os.path.join(bin_dir, "dtnn-run"), src, "--predict", inp, "--predictions", out,
                    "--threads", "1"]
            if os.path.exists(weights):
                args += ["--init-from", weights]
            if backend:
                args += ["--backend", backend]
            r = subprocess.run(args, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return "failed", "%s: dtnn-run: %s" % (backend or "default", r.stderr.strip()[-300:])
            _, tensors = dtnn_safetensors.read(out)
            keys = ["output"] if len(expected) == 1 else ["output.%d" % i for i in range(len(expected))]
            for k, want in zip(keys, expected):
                t = tensors[k]
                have = np.frombuffer(t.data, dtype="<f4").reshape(t.shape) if t.dtype == "F32" else None
                if have is None or have.shape != want.shape:
                    return "failed", "%s: %s is %s %s, expected %s %s" % (
                        backend or "default", k, t.dtype, list(t.shape), want.dtype, list(want.shape))
                if not np.allclose(have, want, rtol=RTOL, atol=ATOL, equal_nan=True):
                    diff = float(np.max(np.abs(have.astype(np.float64) - want)))
                    return "failed", "%s: %s differs by up to %.3g" % (backend or "default", k, diff)
        return "passed", ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DATA)
    p.add_argument("--suite", default="node,simple,pytorch-converted,pytorch-operator")
    p.add_argument("--filter", default="")
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    p.add_argument("--backend", action="append", default=None)
    p.add_argument("--expect")
    p.add_argument("--write-expect")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    backends = a.backend or ["reference", ""]
    tests = []
    for suite in a.suite.split(","):
        for d in sorted(glob.glob(os.path.join(a.data, suite, "test_*"))):
            if a.filter in d:
                tests.append((suite, d))
    if not tests:
        sys.exit("onnx_conformance.py: error: no tests under %s" % a.data)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(run_test, d, a.bin, backends): (s, d) for s, d in tests}
        for fut in concurrent.futures.as_completed(futures):
            s, d = futures[fut]
            try:
                results[(s, d)] = fut.result()
            except Exception as e:  # a crash of the runner itself is a failure of the test
                results[(s, d)] = ("failed", "runner: %s" % e)
    table = collections.defaultdict(collections.Counter)
    for (s, d), (status, detail) in sorted(results.items()):
        name = "%s/%s" % (s, os.path.basename(d))
        if a.verbose or status == "failed":
            print("%s %s%s" % (status, name, (": " + detail) if detail else ""))
        table[(s, operator(d))][status] += 1
    print("\n| suite | operator | passed | failed | refused |\n|---|---|---|---|---|")
    totals = collections.Counter()
    for (s, op), c in sorted(table.items()):
        print("| %s | %s | %d | %d | %d |" % (s, op, c["passed"], c["failed"], c["refused"]))
        totals.update(c)
    print("| all | | %d | %d | %d |" % (totals["passed"], totals["failed"], totals["refused"]))
    passed = sorted("%s/%s" % (s, os.path.basename(d)) for (s, d), (st, _) in results.items() if st == "passed")
    if a.write_expect:
        with open(a.write_expect, "w") as f:
            f.write("".join(t + "\n" for t in passed))
    if a.expect:
        want = [l.strip() for l in open(a.expect) if l.strip() and not l.startswith("#")]
        lost = sorted(set(want) - set(passed))
        if lost:
            print("onnx_conformance.py: error: %d test(s) that passed before do not pass now: %s"
                  % (len(lost), ", ".join(lost)), file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
