"""PyTorch twin of dtnn's GPT-style byte language model: train-step time, held-out bits per byte.

Usage:
  /usr/bin/python3 bench/gpt_pytorch.py [--steps N] [--attention manual|mha] [--threads K]
                                        [--batch 32] [--layers 4] [--heads 4] [--embd 128]
                                        [--block 128] [--lr 1e-3] [--wd 0.1] [--seed 1]
                                        [--warmup 5] [--dir /usr/share/games/fortunes]
                                        [--held-out 0.05]
  /usr/bin/python3 bench/gpt_pytorch.py --seconds S [options as above]
  /usr/bin/python3 bench/gpt_pytorch.py --best [--steps N] [options as above]

The corpus is bench/char_trigram.py's: every regular text file of DIR (not the strfile indexes
`*.dat`, nor the `*.u8` links, nor any symlink), read as bytes in sorted name order and joined;
the last int(len * HELD_OUT) bytes are the held-out split, the rest the training split. Each
split's bytes t[0..n) are cut, as dtnn's text source cuts them, at stride T into windows
t[iT : iT+T+1], the first T bytes the inputs and the last T the targets (the next bytes). The
training split keeps its whole windows only; the held-out split covers every one of its n-1
targets once, its last window padded (inputs with 0, targets with -100, which the loss ignores).
The windows are kept in memory as int64 tensors.

The model (vocabulary 256, the byte values): a token embedding wte [256, E] plus a learned
position embedding wpe [T, E]; L pre-norm blocks, x = x + attn(ln_1(x)) and
x = x + mlp(ln_2(x)), with LayerNorm (eps 1e-5, weight and bias), causal self-attention over H
heads (a packed q/k/v Linear(E, 3E), scaled dot-product attention with scale 1/sqrt(E/H), an
output Linear(E, E)) and an MLP Linear(E, 4E), exact GELU, Linear(4E, E); every Linear has a
bias; a final LayerNorm; logits = h @ wte^T (tied, no bias). No dropout. Initialized as GPT-2
(nanoGPT): Linear weights and both embeddings normal(0, 0.02), biases 0, the attention output
and the MLP's second Linear normal(0, 0.02 / sqrt(2 L)), LayerNorm 1 and 0. The parameter count,
V E + T E + L (12 E^2 + 13 E) + 2 E (842,496 at the defaults), is asserted and printed.
--attention manual (the default) computes q k^T * scale, masked_fill with -inf above the
diagonal (a precomputed causal mask), softmax and @ v, as nanoGPT does without flash attention;
--attention mha uses nn.MultiheadAttention(E, H, batch_first=True) with a boolean causal
attn_mask (the same parameters). torch 1.13 has no F.scaled_dot_product_attention.

Training: the mean cross entropy of logits.view(-1, 256) against targets.view(-1)
(ignore_index -100), AdamW (lr --lr, betas 0.9 and 0.95, weight decay --wd on every parameter,
eps 1e-8), batch --batch; each epoch shuffles the training windows with a torch.Generator seeded
by --seed (which also seeds the initialization) and keeps its last, partial batch.

Modes:
  --steps N (the default, N = 20): --warmup (5) untimed steps, then N steps, each timed with
      time.perf_counter around forward, loss, backward, optimizer.step and zero_grad (the batch
      is gathered before). Prints the median step time, min-max, tokens/s (batch T / median)
      and the settings, then a line `RESULT {json}` with attention, threads, batch, params,
      step_ms_median, step_ms_min, step_ms_max, tokens_per_s (and omp_wait_policy, steps).
  --seconds S: trains for S seconds of wall time (the clock read between steps, epochs
      repeating as needed), then evaluates the whole held-out split under torch.no_grad() and
      prints its cross entropy in nats per byte and bits per byte (over the counted targets),
      the steps, epochs (training windows seen / training windows) and tokens seen, then a
      `RESULT {json}` line with nats_per_byte, bits_per_byte, steps, epochs, tokens_seen,
      attention, threads, batch, params, seconds.
  --best: runs the --steps mode as subprocesses of this script, one per setting: attention
      manual and mha, each with 1 thread, all usable cores, and all usable cores with
      OMP_WAIT_POLICY=PASSIVE (OMP_WAIT_POLICY is unset otherwise); prints a table and the
      best setting (the lowest median step time) as a last `RESULT {json}` line with a
      "setting" key. This is PyTorch at its best setting, for a side-by-side comparison.

Threads: --threads K (default: the usable cores, os.sched_getaffinity) calls
torch.set_num_threads(K) and sets OPENBLAS_NUM_THREADS=K before loading torch (Debian's torch
uses the system BLAS). Needs Debian's python3-torch (1.13); run it with /usr/bin/python3.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

from char_trigram import read_corpus  # the same corpus, read the same way

VOCAB = 256


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def expected_params(a):
    E = a.embd
    return VOCAB * E + a.block * E + a.layers * (12 * E * E + 13 * E) + 2 * E


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/usr/share/games/fortunes")
    ap.add_argument("--held-out", type=float, default=0.05)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--block", type=int, default=128, help="the context length T")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.1, help="AdamW's weight decay")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--attention", choices=["manual", "mha"], default="manual")
    ap.add_argument("--threads", type=int, default=usable_cores(),
                    help="torch.set_num_threads (default: the usable cores)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps before --steps")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--steps", type=int, default=None, help="timed steps (default 20)")
    mode.add_argument("--seconds", type=float, default=None,
                      help="train this long, then evaluate on the held-out split")
    ap.add_argument("--best", action="store_true",
                    help="time every thread/attention setting in subprocesses, report the best")
    a = ap.parse_args()
    if a.best and a.seconds is not None:
        ap.error("--best times steps; it does not take --seconds")
    if a.steps is None:
        a.steps = 20
    if not os.path.isdir(a.dir):
        ap.error(f"{a.dir} is not a folder (Debian's fortunes package installs "
                 "/usr/share/games/fortunes)")
    if not 0 < a.held_out < 1:
        ap.error("--held-out must be in (0, 1)")
    if a.embd % a.heads:
        ap.error("--embd must be a multiple of --heads")
    for k in ("layers", "heads", "embd", "block", "batch", "threads", "steps"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} must be positive")
    if a.warmup < 0:
        ap.error("--warmup must not be negative")
    if a.seconds is not None and not a.seconds > 0:
        ap.error("--seconds must be positive")
    return a


def define_model(torch, nn, F):
    """The model's classes, defined once torch is loaded (after OPENBLAS_NUM_THREADS is set)."""

    class ManualAttention(nn.Module):
        def __init__(self, E, H, T):
            super().__init__()
            self.H = H
            self.qkv = nn.Linear(E, 3 * E)
            self.proj = nn.Linear(E, E)
            self.scale = 1.0 / math.sqrt(E // H)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)  # True: a future position

        def out_proj(self):
            return self.proj

        def forward(self, x):
            B, T, E = x.shape
            q, k, v = self.qkv(x).split(E, dim=2)
            q, k, v = (t.view(B, T, self.H, E // self.H).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * self.scale
            att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, E)
            return self.proj(y)

    class MHAttention(nn.Module):
        def __init__(self, E, H, T):
            super().__init__()
            self.mha = nn.MultiheadAttention(E, H, batch_first=True)  # in_proj (3E x E) + out_proj
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)  # True: not attended

        def out_proj(self):
            return self.mha.out_proj

        def forward(self, x):
            T = x.shape[1]
            return self.mha(x, x, x, attn_mask=self.mask[:T, :T], need_weights=False)[0]

    class Block(nn.Module):
        def __init__(self, E, H, T, attention):
            super().__init__()
            self.ln_1 = nn.LayerNorm(E, eps=1e-5)
            self.attn = (ManualAttention if attention == "manual" else MHAttention)(E, H, T)
            self.ln_2 = nn.LayerNorm(E, eps=1e-5)
            self.mlp = nn.Sequential(nn.Linear(E, 4 * E), nn.GELU(), nn.Linear(4 * E, E))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, L, H, E, T, attention, seed):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, E)
            self.wpe = nn.Embedding(T, E)
            self.blocks = nn.ModuleList(Block(E, H, T, attention) for _ in range(L))
            self.ln_f = nn.LayerNorm(E, eps=1e-5)
            self.register_buffer("pos", torch.arange(T), persistent=False)
            self.init_weights(L, seed)

        def init_weights(self, L, seed):
            # Reseeded so that the constructors' own draws do not matter: both attentions take
            # the same draws in the same order (wte, wpe, per block q/k/v, output, MLP), hence
            # start from the same weights and compute the same function.
            torch.manual_seed(seed)
            for m in self.modules():
                if isinstance(m, nn.Linear):  # MultiheadAttention's out_proj included
                    nn.init.normal_(m.weight, 0.0, 0.02)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight, 0.0, 0.02)
                elif isinstance(m, nn.LayerNorm):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.MultiheadAttention):  # its packed q/k/v projection
                    nn.init.normal_(m.in_proj_weight, 0.0, 0.02)
                    nn.init.zeros_(m.in_proj_bias)
            for b in self.blocks:  # the residual projections, scaled as GPT-2
                nn.init.normal_(b.attn.out_proj().weight, 0.0, 0.02 / math.sqrt(2 * L))
                nn.init.normal_(b.mlp[2].weight, 0.0, 0.02 / math.sqrt(2 * L))

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(self.pos[:idx.shape[1]])
            for b in self.blocks:
                x = b(x)
            return F.linear(self.ln_f(x), self.wte.weight)  # tied to wte, no bias

    return GPT


def windows(torch, data, T, pad):
    """The split's bytes cut at stride T: inputs [n, T] and targets [n, T], int64."""
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    labels = max(len(data) - 1, 0)
    n = (labels + T - 1) // T if pad else labels // T
    m = min(labels, n * T)
    x = torch.zeros(n * T, dtype=torch.long)
    y = torch.full((n * T,), -100, dtype=torch.long)
    x[:m] = t[:m]
    y[:m] = t[1:m + 1]
    return x.view(n, T), y.view(n, T)


def batches(torch, n, batch, gen):
    """Index tensors of training batches, epoch after epoch: (epoch, indices)."""
    epoch = 0
    while True:
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, batch):
            yield epoch, perm[i:i + batch]
        epoch += 1


def run_best(a):
    """Times each setting in its own process (OMP_WAIT_POLICY acts at OpenMP's start)."""
    cores = usable_cores()
    settings = []
    for attention in ("manual", "mha"):
        settings.append((f"{attention} 1t", attention, 1, None))
        if cores > 1:
            settings.append((f"{attention} {cores}t", attention, cores, None))
            settings.append((f"{attention} {cores}t passive", attention, cores, "PASSIVE"))
    common = ["--dir", a.dir, "--held-out", str(a.held_out), "--layers", str(a.layers),
              "--heads", str(a.heads), "--embd", str(a.embd), "--block", str(a.block),
              "--batch", str(a.batch), "--lr", str(a.lr), "--wd", str(a.wd),
              "--seed", str(a.seed), "--warmup", str(a.warmup), "--steps", str(a.steps)]
    results = []
    for label, attention, threads, policy in settings:
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)
        if policy:
            env["OMP_WAIT_POLICY"] = policy
        cmd = [sys.executable, os.path.abspath(__file__), *common,
               "--attention", attention, "--threads", str(threads)]
        print(f"[{label}] {'OMP_WAIT_POLICY=' + policy + ' ' if policy else ''}"
              f"--attention {attention} --threads {threads}", flush=True)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        res = None
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                res = json.loads(line[len("RESULT "):])
        if p.returncode != 0 or res is None:
            tail = (p.stdout + p.stderr).strip().splitlines()[-10:]
            print(f"  failed ({p.returncode}):\n    " + "\n    ".join(tail), flush=True)
            continue
        res["setting"] = label
        results.append(res)
        print(f"  median {res['step_ms_median']:.1f} ms", flush=True)
    if not results:
        sys.exit("gpt_pytorch.py: every setting failed")
    print(f"\n{'setting':<22} {'median ms':>10} {'min-max ms':>16} {'tokens/s':>10}")
    for r in results:
        print(f"{r['setting']:<22} {r['step_ms_median']:>10.1f} "
              f"{r['step_ms_min']:>7.1f}-{r['step_ms_max']:<8.1f} {r['tokens_per_s']:>10.0f}")
    best = min(results, key=lambda r: r["step_ms_median"])
    print(f"best: {best['setting']}, {best['step_ms_median']:.1f} ms per step, "
          f"{best['tokens_per_s']:.0f} tokens/s")
    print("RESULT " + json.dumps(best), flush=True)


def main():
    a = parse_args()
    if a.best:
        return run_best(a)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)

    names, data = read_corpus(a.dir)
    cut = len(data) - int(len(data) * a.held_out)  # as bench/char_trigram.py splits it
    T = a.block
    train_x, train_y = windows(torch, data[:cut], T, pad=False)
    held_x, held_y = windows(torch, data[cut:], T, pad=True)
    if len(train_x) == 0 or len(held_x) == 0:
        sys.exit(f"gpt_pytorch.py: a split of {a.dir} is too short for one window of {T} + 1 bytes")
    print(f"corpus: {len(names)} files of {a.dir}, {len(data):,} bytes; training split "
          f"{cut:,} bytes ({len(train_x):,} windows of {T}), held-out {len(data) - cut:,} "
          f"({len(held_x):,} windows, last {a.held_out:.0%})")

    torch.manual_seed(a.seed)
    model = define_model(torch, nn, F)(a.layers, a.heads, a.embd, T, a.attention, a.seed)
    params = sum(p.numel() for p in model.parameters())
    assert params == expected_params(a), (params, expected_params(a))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95),
                            weight_decay=a.wd, eps=1e-8)
    policy = os.environ.get("OMP_WAIT_POLICY")
    print(f"model: {params:,} parameters ({a.layers} layers, {a.heads} heads, embd {a.embd}, "
          f"block {T}), attention {a.attention}; batch {a.batch}, AdamW lr {a.lr:g} wd {a.wd:g}; "
          f"threads {a.threads}, OMP_WAIT_POLICY {policy or 'unset'}; torch {torch.__version__}",
          flush=True)

    def step(x, y):
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1), ignore_index=-100)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    gen = torch.Generator()
    gen.manual_seed(a.seed)
    feed = batches(torch, len(train_x), a.batch, gen)
    model.train()

    if a.seconds is None:
        times, tokens = [], []
        for i in range(a.warmup + a.steps):
            _, idx = next(feed)
            x, y = train_x[idx], train_y[idx]
            t0 = time.perf_counter()
            loss = step(x, y)
            dt = time.perf_counter() - t0
            if i == 0:
                print(f"first step's loss {loss.item():.4f} nats (ln 256 = {math.log(256):.4f})")
            if i >= a.warmup:
                times.append(dt)
                tokens.append(x.numel())
        med = statistics.median(times)
        res = {"attention": a.attention, "threads": a.threads, "batch": a.batch, "params": params,
               "step_ms_median": 1e3 * med, "step_ms_min": 1e3 * min(times),
               "step_ms_max": 1e3 * max(times), "tokens_per_s": a.batch * T / med,
               "omp_wait_policy": policy, "steps": a.steps}
        print(f"step time over {a.steps} steps (after {a.warmup} warm-up): median "
              f"{res['step_ms_median']:.1f} ms, min-max {res['step_ms_min']:.1f}-"
              f"{res['step_ms_max']:.1f} ms; {res['tokens_per_s']:.0f} tokens/s (batch {a.batch} "
              f"x {T} / median)")
        print("RESULT " + json.dumps(res), flush=True)
        return

    steps = seen = 0
    start = time.perf_counter()
    while time.perf_counter() - start < a.seconds:
        _, idx = next(feed)
        loss = step(train_x[idx], train_y[idx])
        if steps == 0:
            print(f"first step's loss {loss.item():.4f} nats (ln 256 = {math.log(256):.4f})")
        steps += 1
        seen += len(idx)
    trained = time.perf_counter() - start
    model.eval()
    total, counted = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(held_x), a.batch):
            y = held_y[i:i + a.batch]
            logits = model(held_x[i:i + a.batch])
            total += F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1), ignore_index=-100,
                                     reduction="sum").item()
            counted += int((y != -100).sum())
    nats = total / counted
    res = {"nats_per_byte": nats, "bits_per_byte": nats / math.log(2), "steps": steps,
           "epochs": seen / len(train_x), "tokens_seen": seen * T, "attention": a.attention,
           "threads": a.threads, "batch": a.batch, "params": params, "seconds": trained}
    print(f"trained {trained:.1f} s: {steps} steps, {res['epochs']:.3f} epochs, "
          f"{res['tokens_seen']:,} tokens seen; last training loss {loss.item():.4f} nats")
    print(f"held-out: {nats:.4f} nats per byte, {res['bits_per_byte']:.4f} bits per byte "
          f"over {counted:,} bytes")
    print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
