"""dtnn next to PyTorch on the GPT-style byte model: train-step time, in one run.

Usage (from anywhere; paths are relative to the repository root):
  /usr/bin/python3 bench/gpt_step.py [--steps 30] [--repeat 3] [--threads T] [--build-dir build]

Each repeat runs both sides as separate processes, in alternating order:
  dtnn:    build/bin/dtnn-run examples/gpt.dtnn --steps 5+N --threads T --no-progress
           --metrics FILE on the fortunes text (the model's train section: byte tokens,
           sequences of 128, batch 32, AdamW); dtnn-run leaves the first 5 steps out of its
           images_per_s, so a step is batch / images_per_s.
  PyTorch: bench/gpt_pytorch.py --best --steps N, the twin with the same sizes and parameter
           count on the same sequences, which tries nanoGPT's attention and
           nn.MultiheadAttention at 1 and T threads (and T threads with OMP_WAIT_POLICY=PASSIVE)
           and reports its best median step.
The table shows the medians over the repeats and dtnn's speed relative to PyTorch (above 1:
dtnn is faster). Run it on an otherwise idle machine. Needs the built binaries, Debian's
python3-torch, libopenblas0-pthread and fortunes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32  # examples/gpt.dtnn's train section and the twin's default


def dtnn_step_ms(args, tmp):
    metrics = os.path.join(tmp, "gpt-metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [os.path.join(ROOT, args.build_dir, "bin", "dtnn-run"), os.path.join(ROOT, "examples", "gpt.dtnn"),
           "--steps", str(5 + args.steps), "--threads", str(args.threads), "--no-progress",
           "--metrics", metrics]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        rate = json.loads(f.readlines()[-1])["images_per_s"]
    return 1000.0 * BATCH / rate


def torch_step(args):
    cmd = [args.python, os.path.join(ROOT, "bench", "gpt_pytorch.py"), "--best", "--steps", str(args.steps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = [line for line in out.splitlines() if line.startswith("RESULT ")][-1]
    r = json.loads(result[len("RESULT "):])
    return r["step_ms_median"], r["setting"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30, help="timed steps a process (default 30)")
    ap.add_argument("--repeat", type=int, default=3, help="repeats (default 3)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python with torch")
    args = ap.parse_args()
    dtnn, torch, settings = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            order = ["dtnn", "torch"] if rep % 2 == 0 else ["torch", "dtnn"]
            for side in order:
                if side == "dtnn":
                    dtnn.append(dtnn_step_ms(args, tmp))
                    print(f"repeat {rep + 1}: dtnn {dtnn[-1]:.1f} ms a step", flush=True)
                else:
                    ms, setting = torch_step(args)
                    torch.append(ms)
                    settings.append(setting)
                    print(f"repeat {rep + 1}: PyTorch {ms:.1f} ms a step ({setting})", flush=True)
    d, t = statistics.median(dtnn), statistics.median(torch)
    best = max(set(settings), key=settings.count)
    print(f"\nGPT (4 layers, 128 wide, 842,496 parameters), batch {BATCH} x 128 bytes, "
          f"{args.threads} threads, medians of {args.repeat}:")
    print(f"  dtnn     {d:8.1f} ms a step   {BATCH * 128 / d * 1000:8.0f} tokens/s")
    print(f"  PyTorch  {t:8.1f} ms a step   {BATCH * 128 / t * 1000:8.0f} tokens/s   (best setting: {best})")
    print(f"  dtnn / PyTorch speed: {t / d:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
