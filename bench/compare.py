"""dtnn next to PyTorch: training and inference throughput and peak memory of five zoo models.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/compare.py                   all five models, 7 repeats (long: 3 repeats
                                                       of the four small models took 9 min on two
                                                       cores with the oneDNN backend)
  /usr/bin/python3 bench/compare.py --quick           smoke run: 2 timed steps, 2 inference
                                                       batches, 1 repeat (about 4 min)
  /usr/bin/python3 bench/compare.py --models resnet20,vgg_cifar --repeat 5 --backend reference
  options: --steps N | --steps mlp=500,vgg_cifar=4   timed training steps (all, or per model)
           --infer-batches N | NAME=N,...            timed inference batches
           --batch N, --infer-batch N                override the batch sizes of every model
           --threads T (default: the usable cores)   --build-dir DIR (default build)
           --json FILE                               also write every run's record as JSON lines
           --python PY                               the Python with torch (default: this one if
                                                     it has torch, else /usr/bin/python3)
           --keep                                    keep the temporary folder (model copies, logs)

Models: mlp, lenet, vgg_cifar, resnet20 (examples/*.dtnn) at batch 64 and mobilenet_v2 at batch
16 (224x224); inference uses the same batch by default. vit_b_16 (torchvision's, as the tests
write it) runs only when named: training at batch 8, inference at batch 1. Each is run as
separate processes, both sides in every repeat (the order of the sides alternates), and the
table shows medians over the repeats:

  dtnn:    build/bin/dtnn-run MODEL.dtnn --backend B --threads T --steps 5+N --epochs E
           --no-progress --metrics FILE on a copy of the model file, in a temporary folder,
           whose train section reads `data = synthetic(shape=[C,H,W], classes=K, train_size=S,
           test_size=B)` and `batch = B`, with PyTorch's optimizer (`sgd(lr=0.01, momentum=0.9)`,
           `schedule = constant()`, `metrics = [accuracy]`). dtnn-run leaves the first 5 steps of a run out of its
           images_per_s, so it runs 5 + N steps and times N. The synthetic training set holds at
           most 8 MiB of samples (stored as bytes), so a long run of a small model takes several
           epochs; the training rate is then combined over the epochs' records (the timed
           images over the timed seconds), and the peak RSS is that of the last record.
           Inference: dtnn-run COPY.dtnn --eval-only --metrics FILE2 on a copy with batch = the
           inference batch, train_size=1 and test_size = batch x inference batches; it reads
           images_per_s and peak_rss_bytes from FILE2's last JSON line (n/a when dtnn-run
           writes none). Batch-1 latency: the same with batch = 1 over a few hundred samples
           (tens for the big models), 1000 / images_per_s in ms: the mean time of a single-sample
           forward and its loss, leaving out the first. --backend defaults to dtnn-run --help's
           default.
  PyTorch: bench/pytorch_twins.py (same architecture and parameter count, asserted; random data
           of the same shape held in memory; SGD lr 0.01 momentum 0.9; softmax cross entropy):
           5 untimed steps, then N timed; inference under torch.no_grad(). Each repeat runs
           three settings, 1 thread, T threads and T threads with OMP_WAIT_POLICY=PASSIVE; the
           table takes the best median per column and names the setting that gave it
           (train/inference). It also reports PyTorch's batch-1 latency (median).

Run it on an otherwise idle machine: a multi-threaded run, dtnn's or PyTorch's, slows down
many times over when another process holds one of its cores.
Each sample (a process of either side) also records the cores other processes kept busy while
it ran (the machine's busy time in /proc/stat less the process's own CPU time, over its wall
time); samples above --max-others (default 0.1 core) are left out of the medians, and the last
line says how many were kept.

Columns: images/s in training and in inference, dtnn/PyTorch ratios (above 1: dtnn is
faster), and the peak resident memory (getrusage's ru_maxrss) of training: dtnn's training
run (which also evaluates one batch), PyTorch's process after its timed training steps. Both
include the data held in memory: dtnn's synthetic set (at most 8 MiB of bytes), one batch
in PyTorch. Needs the built binaries and Debian's python3-torch, python3-torchvision and
libopenblas0-pthread. This script itself needs only Python's standard library; it runs
pytorch_twins.py with a Python that has torch (see --python).

Then, for dtnn: achieved GFLOP/s in training (6 FLOPs per forward multiply-accumulate of
`dtnnc summary`: 2 a multiply-accumulate, backward about twice forward) against the machine's
peak measured in the same run (build/bin/fma_peak, bench/fma_peak.cpp, at --threads threads),
and a train step's time over the sum of its kernels' times from --profile (the rest is the
runtime's overhead; the timed training run itself runs with --profile, which reads the clock
twice a kernel).
"""
import argparse
import importlib.util
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWINS = os.path.join(REPO, "bench", "pytorch_twins.py")
DTNN_WARMUP = 5  # dtnn-run's images_per_s leaves out the first 5 steps of a run
DATA_CAP = 8 << 20  # bytes of synthetic samples at most in dtnn's data sets

# Defaults sized for the reference backend on two cores: one dtnn training run of a model
# takes about 10-30 s (MobileNet-v2 longer: its 5 untimed steps alone take about 40 s).
# steps: timed training steps; infer: timed inference batches; latency: dtnn's timed batch-1
# forwards.
MODELS = {
    "mlp": dict(file="examples/mlp.dtnn", shape=(1, 28, 28), classes=10, batch=64,
                steps=2000, infer=160, latency=2000),
    "lenet": dict(file="examples/lenet.dtnn", shape=(1, 28, 28), classes=10, batch=64,
                  steps=2000, infer=160, latency=1000),
    "vgg_cifar": dict(file="examples/vgg_cifar.dtnn", shape=(3, 32, 32), classes=10, batch=64,
                      steps=3, infer=8, latency=40),
    "resnet20": dict(file="examples/resnet20.dtnn", shape=(3, 32, 32), classes=10, batch=64,
                     steps=12, infer=20, latency=60),
    "mobilenet_v2": dict(file="examples/mobilenet_v2.dtnn", shape=(3, 224, 224), classes=1000,
                         batch=16, steps=2, infer=2, latency=20),
    "vit_b_16": dict(file="test/lit/run/Inputs/torchvision/vit_b_16.dtnn", shape=(3, 224, 224),
                     classes=1000, batch=8, infer_batch=1, steps=2, infer=8, latency=8),
}
# Run only when asked for (--models vit_b_16): a repeat of it takes several minutes.
OPTIONAL = ("vit_b_16",)
QUICK = dict(steps=2, infer=2, repeat=1, torch_warmup=1, torch_infer_warmup=1, latency_reps=3)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu_description():
    """The CPU's model name and its vector ISA as the bench sees it: AVX-512, AVX512-BF16, AMX."""
    name, flags = "?", []
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and name == "?":
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    isa = [n for f, n in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX512-BF16"),
                          ("amx_bf16", "AMX-BF16")) if f in flags]
    masked = os.environ.get("ONEDNN_MAX_CPU_ISA")
    return f"{name}, {' '.join(isa) or 'no AVX2'}" + (f" (ONEDNN_MAX_CPU_ISA={masked})" if masked else "")


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def per_model(text, models, what):
    """'N' or 'name=N,name=N' -> {name: N} (missing names absent)."""
    out = {}
    if text is None:
        return out
    for part in text.split(","):
        part = part.strip()
        if "=" in part:
            name, _, v = part.partition("=")
            if name not in MODELS:
                raise SystemExit(f"compare.py: {what}: unknown model '{name}'")
            out[name] = int(v)
        else:
            for m in models:
                out[m] = int(part)
    if any(v < 1 for v in out.values()):
        raise SystemExit(f"compare.py: {what} must be positive")
    return out


def model_list(parser, text):
    """The comma-separated model names of `text`; a usage error for an unknown one."""
    models = [m.strip() for m in text.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            parser.error(f"unknown model '{m}'; choose from {', '.join(MODELS)}")
    return models


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(m for m in MODELS if m not in OPTIONAL),
                   help="comma-separated (default: all but vit_b_16)")
    p.add_argument("--repeat", type=int, default=None, help="repeats (default 7; --quick 1)")
    p.add_argument("--steps", default=None, help="timed training steps: N, or NAME=N,...")
    p.add_argument("--infer-batches", default=None, help="timed inference batches: N, or NAME=N,...")
    p.add_argument("--batch", type=int, default=None, help="training batch of every model")
    p.add_argument("--infer-batch", type=int, default=None,
                   help="inference batch of every model (default: the training batch)")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 timed steps, 2 inference batches, 1 repeat")
    p.add_argument("--threads", type=int, default=usable_cores(),
                   help="dtnn's threads and PyTorch's multi-threaded setting (default: usable cores)")
    p.add_argument("--backend", default=None, help="dtnn-run backend (default: dtnn-run's default)")
    p.add_argument("--build-dir", default="build", help="build folder, relative to the repository "
                   "root unless absolute (default build)")
    p.add_argument("--timeout", type=int, default=900, help="seconds allowed per process (default 900)")
    p.add_argument("--python", default=None, help="the Python that runs pytorch_twins.py (default: "
                   "this one if it has torch, else /usr/bin/python3)")
    p.add_argument("--max-others", type=float, default=0.1,
                   help="leave out samples during which other processes kept more than this many "
                        "cores busy (default 0.1)")
    p.add_argument("--json", default=None, help="also write each run's record to this JSON-lines file")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--precision", default="f32",
                   help="f32, bf16 or f32,bf16: dtnn-run --precision and PyTorch's CPU autocast "
                        "(PyTorch's float32 runs whenever bf16 does, for its column)")
    a = p.parse_args()
    a.precisions = [x for x in a.precision.split(",") if x]
    if not a.precisions or any(x not in ("f32", "bf16") for x in a.precisions):
        p.error("--precision takes f32, bf16 or f32,bf16")
    a.torch_precisions = sorted(set(a.precisions) | ({"f32"} if "bf16" in a.precisions else set()),
                                key=["f32", "bf16"].index)
    a.models = model_list(p, a.models)
    if a.repeat is None:
        a.repeat = QUICK["repeat"] if a.quick else 7
    if a.repeat < 1 or a.threads < 1:
        p.error("--repeat and --threads must be positive")
    a.steps = per_model(a.steps, a.models, "--steps")
    a.infer_batches = per_model(a.infer_batches, a.models, "--infer-batches")
    a.build_dir = os.path.join(REPO, a.build_dir)
    if a.python is None:
        has_torch = importlib.util.find_spec("torch") is not None
        a.python = sys.executable if has_torch or not os.path.exists("/usr/bin/python3") \
            else "/usr/bin/python3"
    return a


# --- dtnn ----------------------------------------------------------------------------------

def wait_for(path):
    for _ in range(12):  # another build may replace the binaries for a moment
        if os.access(path, os.X_OK):
            return path
        log(f"compare.py: waiting for {path}")
        time.sleep(5)
    raise SystemExit(f"compare.py: {path} is missing; build the project first")


def default_backend(dtnn_run):
    out = subprocess.run([dtnn_run, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--backend\S*\s.*\(default:?\s*([\w-]+)\)", out)
    return m.group(1) if m else None


def dtnn_summary(dtnnc, path):
    """The model's parameter count and multiply-accumulates per sample (forward)."""
    out = subprocess.run([dtnnc, "summary", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^Total params: (\d+)$", out, re.M)
    macs = re.search(r"^MACs per sample: (\d+)$", out, re.M)
    if not m or not macs:
        raise SystemExit(f"compare.py: no 'Total params' or 'MACs per sample' in `dtnnc summary {path}`")
    return int(m.group(1)), int(macs.group(1))


def fma_peak(build_dir, threads):
    """The machine's single-precision peak in GFLOP/s at `threads` threads (bench/fma_peak.cpp)."""
    exe = os.path.join(build_dir, "bin", "fma_peak")
    if not os.path.exists(exe):
        return None
    out = subprocess.run([exe, str(threads)], capture_output=True, text=True)
    try:
        return float(out.stdout.strip())
    except ValueError:
        return None


def synthetic_copy(src, dst, shape, classes, train_size, test_size, batch):
    """Writes src with its train section's data, batch, optimizer, schedule and metrics set
    (a file without one, as the torchvision tests' models, gets one for its model)."""
    text = open(src).read()
    if not re.search(r"^\s*train\s+\w+\s*\{", text, re.M):
        model = re.search(r"^model\s+(\w+)", text, re.M)
        if not model:
            raise SystemExit(f"compare.py: {src} has no model")
        text += f"\ntrain {model.group(1)} {{\n  loss = softmax_cross_entropy\n}}\n"
    m = re.search(r"^\s*train\s+\w+\s*\{", text, re.M)
    start, end = m.end(), text.index("}", m.end())
    body = text[start:end]
    data = (f"data = synthetic(shape=[{','.join(map(str, shape))}], classes={classes}, "
            f"train_size={train_size}, test_size={test_size})")
    for key, value in (("data", data), ("batch", f"batch = {batch}"),
                       ("optimizer", "optimizer = sgd(lr=0.01, momentum=0.9)"),
                       ("schedule", "schedule = constant()"), ("metrics", "metrics = [accuracy]")):
        # The value may span lines when it is a call: match up to its closing parenthesis.
        pat = re.compile(rf"^([ \t]*){key}\s*=\s*(?:\w+\s*\([^)]*\)|\[[^\]]*\]|[^\n]*)", re.M)
        if pat.search(body):
            body = pat.sub(lambda mm: mm.group(1) + value, body, count=1)
        else:
            body = f"\n  {value}" + body
    with open(dst, "w") as f:
        f.write(text[:start] + body + text[end:])


def last_json(path):
    try:
        lines = [l for l in open(path).read().splitlines() if l.strip()]
    except OSError:
        return None
    if not lines:
        return None
    try:
        return [json.loads(l) for l in lines]
    except json.JSONDecodeError:
        return None


def train_rate(records, batch):
    """Training images/s over all epoch records: timed images / timed seconds.

    Step s (1-based, across the run) is timed when s > 5; each record's images_per_s covers
    its epoch's timed steps."""
    images = seconds = 0.0
    prev = 0
    for r in records:
        steps = int(r.get("steps") or 0)
        timed = max(0, steps - max(prev, DTNN_WARMUP)) * batch
        ips = r.get("images_per_s")
        if timed and ips:
            images += timed
            seconds += timed / ips
        prev = steps
    return images / seconds if seconds else None


def run_dtnn(a, name, cfg, tmp, rep, dtnn_run, backend, precision="f32", extra=()):
    """One training run and --eval-only runs (batch and batch 1) at `precision`, each with the
    dtnn-run flags `extra` too; returns a record."""
    shape, classes, batch, ibatch = cfg["shape"], cfg["classes"], cfg["batch"], cfg["infer_batch"]
    sample = math.prod(shape)
    steps = cfg["steps"]
    total = DTNN_WARMUP + steps
    batches = max(1, min(total, DATA_CAP // (batch * sample)))  # training set, in batches
    epochs = -(-total // batches)
    common = (["--threads", str(a.threads), "--no-progress", "--precision", precision]
              + (["--backend", backend] if backend else []) + list(extra))
    rec = {"side": "dtnn", "model": name, "repeat": rep, "batch": batch, "steps": steps,
           "infer_batch": ibatch, "threads": a.threads, "backend": backend, "precision": precision}

    model = os.path.join(tmp, f"{name}.train.dtnn")
    metrics = os.path.join(tmp, f"{name}.train.{precision}.{rep}.jsonl")
    synthetic_copy(os.path.join(REPO, cfg["file"]), model, shape, classes, batches * batch, batch, batch)
    cmd = [dtnn_run, model, "--steps", str(total), "--epochs", str(epochs), "--metrics", metrics,
           "--profile"] + common
    log_path = os.path.join(tmp, f"{name}.train.{precision}.{rep}.log")
    rec["train_rc"], rec["train_wall_s"], rec["train_others"] = run_logged(cmd, log_path, a)
    # The profile's mean step time and the sum of its kernels' times.
    prof = re.search(r"([0-9.]+) ms a step, ([0-9.]+) ms in kernels", open(log_path).read())
    rec["step_ms"], rec["kernel_ms"] = (float(prof.group(1)), float(prof.group(2))) if prof else (None, None)
    recs = last_json(metrics) or []
    rec["train_images_per_s"] = train_rate(recs, batch)
    rec["train_last_images_per_s"] = recs[-1].get("images_per_s") if recs else None
    rec["peak_rss_train_bytes"] = recs[-1].get("peak_rss_bytes") if recs else None

    nb = max(1, min(cfg["infer"], DATA_CAP // (ibatch * sample)))
    rec["infer_batches"] = nb
    (rec["infer_rc"], rec["infer_wall_s"], rec["infer_others"], rec["infer_images_per_s"],
     rec["peak_rss_infer_bytes"]) = run_eval(a, name, cfg, tmp, rep, dtnn_run, common, ibatch, nb,
                                             "eval." + precision)
    # Batch-1 latency: the mean time of a timed single-sample forward (loss included).
    reps = QUICK["latency_reps"] if a.quick else cfg["latency"]
    rc, _, rec["latency_others"], ips, _ = run_eval(a, name, cfg, tmp, rep, dtnn_run, common, 1,
                                                    reps, "b1." + precision)
    rec["latency_ms_b1"] = 1000 / ips if rc == 0 and ips else None
    return rec


def run_eval(a, name, cfg, tmp, rep, dtnn_run, common, batch, batches, tag):
    """dtnn-run --eval-only on `batches` synthetic batches of `batch`; returns its exit status,
    wall time, others' load, images/s (dtnn-run times every batch but the first) and peak RSS."""
    model = os.path.join(tmp, f"{name}.{tag}.dtnn")
    metrics = os.path.join(tmp, f"{name}.{tag}.{rep}.jsonl")
    synthetic_copy(os.path.join(REPO, cfg["file"]), model, cfg["shape"], cfg["classes"], 1,
                   batches * batch, batch)
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [dtnn_run, model, "--eval-only", "--metrics", metrics] + common
    rc, wall, others = run_logged(cmd, os.path.join(tmp, f"{name}.{tag}.{rep}.log"), a)
    recs = last_json(metrics)
    last = recs[-1] if recs else {}
    return rc, wall, others, last.get("images_per_s"), last.get("peak_rss_bytes")


def busy_seconds():
    """CPU seconds the whole machine has spent busy (not idle, not waiting), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_logged(cmd, logpath, a, env=None):
    """Runs cmd; returns its exit status, its wall time and the cores other processes kept busy
    meanwhile (the machine's busy time less the command's own CPU time, over the wall time)."""
    busy0, own0 = busy_seconds(), children_cpu_seconds()
    t0 = time.perf_counter()
    with open(logpath, "w") as logf:
        try:
            p = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, timeout=a.timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    wall = time.perf_counter() - t0
    busy1, own1 = busy_seconds(), children_cpu_seconds()
    others = None
    if busy0 is not None and busy1 is not None and wall > 0:
        others = max(0.0, (busy1 - busy0) - (own1 - own0)) / wall
    if rc != 0:
        tail = open(logpath).read().splitlines()[-5:]
        log(f"compare.py: {' '.join(cmd)} failed ({rc}):\n  " + "\n  ".join(tail))
    return rc, wall, others


# --- PyTorch -------------------------------------------------------------------------------

def torch_settings(threads, shape=()):
    """PyTorch's settings: (label, threads, OMP_WAIT_POLICY, channels_last); channels_last for the
    models with image inputs."""
    s = [("1t", 1, None, False)]
    if threads > 1:
        s += [(f"{threads}t", threads, None, False), (f"{threads}t-passive", threads, "PASSIVE", False)]
    if len(shape) == 3:
        s += [(f"{threads}t-cl", threads, None, True)]
    return s


def check_bf16_dispatch(a, name, cfg, tmp, dtnn_run, backend):
    """Fails the bench when a bf16 convolution, inner product or matmul of a short dtnn run
    dispatches to one of oneDNN's reference (non-jit) implementations (ONEDNN_VERBOSE)."""
    model = os.path.join(tmp, f"{name}.verbose.dtnn")
    synthetic_copy(os.path.join(REPO, cfg["file"]), model, cfg["shape"], cfg["classes"],
                   cfg["batch"], cfg["batch"], cfg["batch"])
    cmd = [dtnn_run, model, "--steps", "2", "--epochs", "1", "--no-progress", "--precision", "bf16",
           "--threads", str(a.threads)] + (["--backend", backend] if backend else [])
    out = subprocess.run(cmd, env=dict(os.environ, ONEDNN_VERBOSE="1"), capture_output=True,
                         text=True, timeout=a.timeout).stdout
    heavy = [l for l in out.splitlines() if l.startswith("onednn_verbose,exec,cpu,")
             and l.split(",")[3] in ("convolution", "inner_product", "matmul") and "bf16" in l]
    slow = [l for l in heavy if "ref" in l.split(",")[4]]
    if slow:
        sys.exit(f"compare.py: {name}: {len(slow)} bf16 primitive(s) run oneDNN's reference code, "
                 "first: " + slow[0])
    log(f"  {name}: {len(heavy)} bf16 convolution/inner product/matmul runs, none on reference code")


def run_torch(a, name, cfg, tmp, rep, setting, params, precision="f32"):
    label, threads, policy, channels_last = setting
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    q = a.quick
    cmd = [a.python, TWINS, name, "--batch", str(cfg["batch"]), "--threads", str(threads),
           "--steps", str(cfg["steps"]),
           "--warmup", str(QUICK["torch_warmup"] if q else DTNN_WARMUP),
           "--infer-batch", str(cfg["infer_batch"]), "--infer-steps", str(cfg["infer"]),
           "--infer-warmup", str(QUICK["torch_infer_warmup"] if q else 3),
           "--latency-reps", str(QUICK["latency_reps"] if q else 20),
           "--expect-params", str(params), "--build-dir", a.build_dir]
    cmd += ["--channels-last"] if channels_last else []
    cmd += ["--autocast", "bf16"] if precision == "bf16" else []
    logpath = os.path.join(tmp, f"{name}.torch.{label}.{precision}.{rep}.log")
    rec = {"side": "pytorch", "model": name, "repeat": rep, "setting": label, "precision": precision}
    rec["rc"], rec["wall_s"], rec["others"] = run_logged(cmd, logpath, a, env)
    for line in open(logpath).read().splitlines():
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if obj.get("kind") == "bench":
                rec.update({k: v for k, v in obj.items() if k != "kind"})
    return rec


# --- the table -----------------------------------------------------------------------------

def med(values):
    values = [v for v in values if isinstance(v, (int, float)) and v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


def fmt(v, digits=0):
    """v with `digits` decimals, or two where a smaller number would round away its value."""
    if v is None:
        return "n/a"
    return f"{v:,.{2 if digits == 0 and abs(v) < 10 else digits}f}"


def ratio(x, y):
    return f"{x / y:.2f}" if x is not None and y else "n/a"


def print_table(head, rows):
    """Prints `rows` under `head`, the first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(head))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))


def quiet(a, r, load_key):
    """Whether other processes left the machine alone during sample r (unknown counts as quiet)."""
    others = r.get(load_key)
    return others is None or others <= a.max_others


def summarize(a, records):
    mib = 1 << 20
    rows = []
    # Samples taken while other processes used the machine are left out (of copies: the
    # caller's records keep every value).
    records = [dict(r) for r in records]
    kept = {"dtnn train": [0, 0], "dtnn infer": [0, 0], "dtnn b1": [0, 0], "PyTorch": [0, 0]}
    for r in records:
        for label, key, value in (("dtnn train", "train", "train_images_per_s"),
                                  ("dtnn infer", "infer", "infer_images_per_s"),
                                  ("dtnn b1", "latency", "latency_ms_b1")):
            if r["side"] == "dtnn":
                kept[label][1] += 1
                if quiet(a, r, key + "_others"):
                    kept[label][0] += 1
                else:
                    r[value] = None
        if r["side"] == "pytorch":
            kept["PyTorch"][1] += 1
            if quiet(a, r, "others"):
                kept["PyTorch"][0] += 1
            else:
                for k in ("train_images_per_s", "infer_images_per_s", "latency_ms_b1"):
                    r[k] = None
    def torch_best(name, precision, key):
        rs = [r for r in records if r["side"] == "pytorch" and r["model"] == name
              and r.get("precision", "f32") == precision]
        meds = [med(r.get(key) for r in rs if r["setting"] == s[0])
                for s in torch_settings(a.threads, MODELS[name]["shape"])]
        meds = [m for m in meds if m is not None]
        return max(meds) if meds else None

    for name, precision in [(n, p) for n in a.models for p in a.precisions]:
        cfg = MODELS[name]
        d = [r for r in records if r["side"] == "dtnn" and r["model"] == name
             and r.get("precision", "f32") == precision]
        t = [r for r in records if r["side"] == "pytorch" and r["model"] == name
             and r.get("precision", "f32") == precision]
        d_train = med(r["train_images_per_s"] for r in d)
        d_inf = med(r["infer_images_per_s"] for r in d)
        d_rss = med(r["peak_rss_train_bytes"] for r in d)
        d_lat = med(r.get("latency_ms_b1") for r in d)
        best = {}
        for label, *_ in torch_settings(a.threads, cfg["shape"]):
            rs = [r for r in t if r["setting"] == label]
            best[label] = {k: med(r.get(k) for r in rs) for k in
                           ("train_images_per_s", "infer_images_per_s", "peak_rss_train_bytes",
                            "latency_ms_b1")}
        def pick(key, better):
            cands = [(v[key], l) for l, v in best.items() if v[key] is not None]
            return better(cands) if cands else (None, "-")
        t_train, t_train_l = pick("train_images_per_s", max)
        t_inf, t_inf_l = pick("infer_images_per_s", max)
        t_lat, t_lat_l = pick("latency_ms_b1", min)
        t_rss = best[t_train_l]["peak_rss_train_bytes"] if t_train_l in best else None
        # Training FLOPs: 2 a multiply-accumulate, and backward about twice forward.
        gflops = d_train * 6 * a.macs[name] / 1e9 if d_train else None
        step_over_kernels = med(r["step_ms"] / r["kernel_ms"] for r in d
                                if r.get("step_ms") and r.get("kernel_ms"))
        t_f32 = torch_best(name, "f32", "train_images_per_s")
        d_f32 = med(r["train_images_per_s"] for r in records if r["side"] == "dtnn"
                    and r["model"] == name and r.get("precision", "f32") == "f32")
        rows.append([name, precision, str(cfg["batch"]), fmt(d_train), fmt(t_train),
                     ratio(d_train, t_train), fmt(t_f32), ratio(d_train, d_f32),
                     fmt(d_inf), fmt(t_inf), ratio(d_inf, t_inf),
                     fmt(d_rss / mib if d_rss else None), fmt(t_rss / mib if t_rss else None),
                     f"{t_train_l}/{t_inf_l}", fmt(d_lat, 2), fmt(t_lat, 2), fmt(gflops, 1),
                     fmt(100 * gflops / a.peak if gflops and a.peak else None) + "%",
                     fmt(step_over_kernels, 2)])
    head = ["model", "precision", "batch", "dtnn train", "torch train", "ratio", "torch f32 train",
            "dtnn /f32", "dtnn infer", "torch infer",
            "ratio", "dtnn RSS MiB", "torch RSS MiB", "torch setting", "dtnn b1 ms", "torch b1 ms",
            "dtnn GFLOP/s", "of peak", "step/kernels"]
    print_table(head, rows)
    print("peak: %s GFLOP/s (bench/fma_peak.cpp, %d threads); dtnn GFLOP/s counts 6 FLOPs per "
          "forward multiply-accumulate in training; step/kernels: a train step's time over the sum "
          "of its kernels' times (--profile); torch f32 train: PyTorch's float32 training beside "
          "each row; dtnn /f32: dtnn's training over its float32 row's" % (fmt(a.peak, 1), a.threads))
    print("cpu: %s" % cpu_description())
    print("samples kept (other processes below %.2f cores): " % a.max_others +
          ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in kept.items()))


def main():
    a = parse_args()
    dtnn_run = wait_for(os.path.join(a.build_dir, "bin", "dtnn-run"))
    dtnnc = wait_for(os.path.join(a.build_dir, "bin", "dtnnc"))
    backend = a.backend or default_backend(dtnn_run)
    cfgs, params = {}, {}
    a.macs = {}
    a.peak = fma_peak(a.build_dir, a.threads)
    for name in a.models:
        cfg = dict(MODELS[name])
        if a.batch:
            cfg["batch"] = a.batch
        cfg["infer_batch"] = a.infer_batch or cfg.get("infer_batch", cfg["batch"])
        cfg["steps"] = a.steps.get(name, QUICK["steps"] if a.quick else cfg["steps"])
        cfg["infer"] = a.infer_batches.get(name, QUICK["infer"] if a.quick else cfg["infer"])
        cfgs[name] = cfg
        params[name], a.macs[name] = dtnn_summary(dtnnc, os.path.join(REPO, cfg["file"]))
    tmp = tempfile.mkdtemp(prefix="dtnn-compare-")
    jf = open(a.json, "w") if a.json else None
    log(f"compare.py: backend {backend or '(dtnn-run default)'}, {a.threads} threads, "
        f"{a.repeat} repeat(s); logs in {tmp}")
    records = []
    try:
        if "bf16" in a.precisions:
            for name in a.models:
                check_bf16_dispatch(a, name, cfgs[name], tmp, dtnn_run, backend)
        for rep in range(a.repeat):
            for name in a.models:
                cfg = cfgs[name]
                torch_runs = [lambda s=s, p=p: run_torch(a, name, cfg, tmp, rep, s, params[name], p)
                              for p in a.torch_precisions
                              for s in torch_settings(a.threads, cfg["shape"])]
                dtnn_runs = [lambda p=p: run_dtnn(a, name, cfg, tmp, rep, dtnn_run, backend, p)
                             for p in a.precisions]
                order = dtnn_runs + torch_runs if rep % 2 == 0 else torch_runs + dtnn_runs
                for run in order:
                    rec = run()
                    records.append(rec)
                    if jf:
                        jf.write(json.dumps(rec) + "\n")
                        jf.flush()
                    if rec["side"] == "dtnn":
                        log(f"  [{rep + 1}/{a.repeat}] {name:12s} dtnn {rec['precision']:>4s}   train "
                            f"{fmt(rec['train_images_per_s'])} img/s ({rec['train_wall_s']:.1f} s), "
                            f"infer {fmt(rec['infer_images_per_s'])} img/s ({rec['infer_wall_s']:.1f} s), "
                            f"b1 {fmt(rec['latency_ms_b1'], 2)} ms")
                    else:
                        log(f"  [{rep + 1}/{a.repeat}] {name:12s} torch {rec['setting']:>9s} "
                            f"{rec['precision']} train "
                            f"{fmt(rec.get('train_images_per_s'))} img/s, infer "
                            f"{fmt(rec.get('infer_images_per_s'))} img/s, b1 "
                            f"{fmt(rec.get('latency_ms_b1'), 2)} ms ({rec['wall_s']:.1f} s)")
    finally:
        if jf:
            jf.close()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"dtnn ({backend or 'default backend'}, {a.threads} threads) vs PyTorch; images/s, "
          f"medians of {a.repeat} repeat(s); ratio = dtnn / PyTorch")
    for name in a.models:
        p = params[name]
        print(f"  {name}: {p:,} parameters (dtnn = PyTorch), "
              f"{cfgs[name]['steps']} timed training steps, inference batch {cfgs[name]['infer_batch']}")
    summarize(a, records)
    if any(r["side"] == "dtnn" and r["infer_images_per_s"] is None for r in records):
        print("dtnn infer n/a: dtnn-run --eval-only --metrics wrote no images_per_s")


if __name__ == "__main__":
    main()
