"""Stops and limits: every way a run can be stopped or limited, each checked for what the user
is owed. A run stopped by a signal says why and either wrote a whole checkpoint or says it did
not; a limit (file size, open files, address space), a full disk or a failed write is an error
message, never a death by a signal; no output is left half-written or as a stray temporary.

    stops_and_limits.py DTNN_RUN DTNNC MODEL_DIR WORK_DIR [MPIRUN...]

Prints one line per check, "ok NAME: what held", "FAIL NAME: what did not" or "skipped NAME:
why", and exits 1 when a check failed.
"""
import os
import signal
import subprocess
import sys
import time

DTNN_RUN, DTNNC, MODELS, WORK = sys.argv[1:5]
MPIRUN = sys.argv[5:]
failures = 0


def report(ok, name, what):
    global failures
    print(("ok " if ok else "FAIL ") + name + ": " + what, flush=True)
    failures += 0 if ok else 1


def skipped(name, why):
    print("skipped " + name + ": " + why, flush=True)


def folder(name):
    path = os.path.join(WORK, name)
    os.makedirs(path, exist_ok=True)
    return path


def strays(path):
    """Temporary files left in `path`."""
    return [n for n in os.listdir(path) if ".tmp." in n]


def long_model(path):
    """The tiny model of the suite, with epochs enough to run until stopped."""
    with open(os.path.join(os.path.dirname(__file__), "tiny.dtnn")) as f:
        text = f.read().replace("epochs    = 2", "epochs    = 100000")
    with open(path, "w") as f:
        f.write(text)
    return path


def handles(pid, sig):
    """Whether process `pid` has installed a handler for `sig` (SigCgt in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) >> (sig - 1) & 1 == 1
    except OSError:
        pass
    return False


def wait_for(predicate, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def loads(checkpoint, model):
    """Whether dtnn-run resumes `checkpoint` (it is whole)."""
    r = subprocess.run([DTNN_RUN, model, "--resume", checkpoint, "--eval-only", "--threads", "1"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "test_loss" in r.stdout


def run_until(args, marker, env=None):
    """Starts dtnn-run; returns the process once its output shows `marker`."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    for line in proc.stdout:
        if marker in line:
            break
    return proc


def finish(proc):
    out, err = proc.communicate(timeout=120)
    return proc.returncode, err


def check_signal_in_training(sig):
    name = signal.Signals(sig).name
    where = folder("sig-" + name)
    model = long_model(os.path.join(where, "long.dtnn"))
    ck = os.path.join(where, "ck.st")
    proc = run_until([DTNN_RUN, model, "--threads", "1", "--save", ck], "epoch 2/")
    proc.send_signal(sig)
    rc, err = finish(proc)
    said = f"interrupted by {name} " in err and "wrote the checkpoint" in err
    ok = rc == 128 + sig and said and loads(ck, model) and not strays(where)
    report(ok, f"{name} in training", f"exit {rc}, {err.strip()[:160]!r}")


def check_sigpipe():
    where = folder("sigpipe")
    model = long_model(os.path.join(where, "long.dtnn"))
    ck = os.path.join(where, "ck.st")
    # As `dtnn-run ... | head -1`: the reader goes after the first line.
    proc = subprocess.Popen([DTNN_RUN, model, "--threads", "1", "--save", ck],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    rc = proc.wait(timeout=120)
    ok = rc == 128 + signal.SIGPIPE and "interrupted by SIGPIPE" in err and loads(ck, model)
    report(ok, "SIGPIPE (the reader of the output went away)", f"exit {rc}, {err.strip()[:160]!r}")


def check_cpu_limit():
    where = folder("sigxcpu")
    model = long_model(os.path.join(where, "long.dtnn"))
    ck = os.path.join(where, "ck.st")
    r = subprocess.run(["prlimit", "--cpu=2:60", DTNN_RUN, model, "--threads", "1", "--save", ck],
                       capture_output=True, text=True, timeout=120)
    ok = r.returncode == 128 + signal.SIGXCPU and "interrupted by SIGXCPU" in r.stderr and loads(ck, model)
    report(ok, "SIGXCPU (ulimit -t)", f"exit {r.returncode}, {r.stderr.strip()[:160]!r}")


def check_before_training():
    where = folder("setup")
    # The real Fashion-MNIST takes a second to load: the signal comes while it does.
    proc = subprocess.Popen([DTNN_RUN, os.path.join(MODELS, "lenet.dtnn"), "--threads", "1",
                             "--save", os.path.join(where, "ck.st")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: handles(proc.pid, signal.SIGHUP))
    proc.send_signal(signal.SIGHUP)
    rc, err = finish(proc)
    ok = rc == 128 + signal.SIGHUP and "before training began" in err and not os.listdir(where)
    report(ok, "SIGHUP before training", f"exit {rc}, {err.strip()[:160]!r}")


def check_second_signal_during_save():
    where = folder("second")
    model = long_model(os.path.join(where, "long.dtnn"))
    ck = os.path.join(where, "ck.st")
    with open(ck, "w") as f:
        f.write("earlier")
    env = dict(os.environ, DTNN_TEST_WRITE_DELAY_MS="1000")
    proc = run_until([DTNN_RUN, model, "--threads", "1", "--save", ck], "epoch 2/", env)
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: strays(where))
    proc.send_signal(signal.SIGTERM)
    rc, err = finish(proc)
    with open(ck) as f:
        kept = f.read() == "earlier"
    ok = rc == 143 and "a second SIGTERM ended the run at once" in err and kept and not strays(where)
    report(ok, "a second SIGTERM while the checkpoint is written",
           f"exit {rc}, earlier file kept: {kept}, {err.strip()[:160]!r}")


def check_rank_signal():
    if not MPIRUN:
        skipped("SIGTERM to rank 1 under mpirun", "no mpirun")
        return
    where = folder("rank")
    model = long_model(os.path.join(where, "long.dtnn"))
    ck = os.path.join(where, "ck.st")
    proc = run_until(MPIRUN + ["-np", "2", DTNN_RUN, model, "--threads", "1", "--save", ck],
                     "epoch 2/")
    ranks = subprocess.run(["pgrep", "-f", "-P", str(proc.pid), "dtnn-run"], capture_output=True,
                           text=True).stdout.split()
    # Rank 1 is the second child of mpirun.
    os.kill(int(sorted(ranks, key=int)[1]), signal.SIGTERM)
    rc, err = finish(proc)
    said = "interrupted by SIGTERM (sent to rank 1)" in err and "wrote the checkpoint" in err
    ok = rc != 0 and said and loads(ck, model) and "has waited" not in err
    report(ok, "SIGTERM to rank 1 under mpirun", f"exit {rc}, {err.strip()[:200]!r}")


def check_write_failures():
    where = folder("writes")
    model = os.path.join(os.path.dirname(__file__), "tiny.dtnn")
    out = os.path.join(where, "out.dtir")
    ck = os.path.join(where, "ck.st")
    metrics = os.path.join(where, "m.jsonl")
    for path in (out, ck):
        with open(path, "w") as f:
            f.write("earlier")

    def unchanged(path):
        with open(path) as f:
            return f.read() == "earlier"

    big = os.path.join(MODELS, "resnet50.dtnn")
    cases = [
        ("ulimit -f on dtnnc -o", ["prlimit", "--fsize=20000", DTNNC, "compile", big, "-o", out],
         None, out, "File too large (the file-size limit, ulimit -f, is 20000 bytes)"),
        ("ulimit -f on --save", ["prlimit", "--fsize=2000", DTNN_RUN, model, "--steps", "1",
                                 "--threads", "1", "--save", ck],
         None, ck, "File too large"),
        ("/dev/full as dtnnc -o", [DTNNC, "compile", model, "-o", "/dev/full"], None, None,
         "cannot write '/dev/full': No space left on device"),
        ("/dev/full as --save", [DTNN_RUN, model, "--steps", "1", "--threads", "1", "--save",
                                 "/dev/full"], None, None, "No space left on device"),
        ("a full disk under -o (fault hook)", [DTNNC, "compile", model, "-o", out],
         {"DTNN_TEST_WRITE_FAULT": "ENOSPC@100"}, out, "No space left on device"),
        ("a failing disk under --save (fault hook)", [DTNN_RUN, model, "--steps", "1",
                                                      "--threads", "1", "--save", ck],
         {"DTNN_TEST_WRITE_FAULT": "EIO@1000"}, ck, "Input/output error"),
    ]
    for name, args, extra, kept, message in cases:
        r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(extra or {})))
        ok = r.returncode == 1 and message in r.stderr and (kept is None or unchanged(kept))
        report(ok and not strays(where), name, f"exit {r.returncode}, {r.stderr.strip()[:160]!r}")
    # The metrics of the first epoch stay when the second's cannot be written.
    r = subprocess.run([DTNN_RUN, model, "--threads", "1", "--metrics", metrics],
                       capture_output=True, text=True, env=dict(os.environ, DTNN_TEST_WRITE_FAULT="ENOSPC@400"))
    with open(metrics) as f:
        lines = f.read().splitlines()
    ok = r.returncode == 1 and len(lines) == 1 and lines[0].startswith('{"epoch": 1') and not strays(where)
    report(ok, "a full disk under --metrics keeps the epochs written",
           f"exit {r.returncode}, {len(lines)} line(s), {r.stderr.strip()[:120]!r}")
    # Output to a file past the limit: the log is cut, the run is not killed.
    with open(os.path.join(where, "log"), "w") as log:
        r = subprocess.run(["prlimit", "--fsize=100", DTNN_RUN, model, "--threads", "1"],
                           stdout=log, stderr=subprocess.PIPE, text=True)
    report(r.returncode == 0, "ulimit -f on the log (stdout)", f"exit {r.returncode}")


def check_small_tmpfs():
    where = folder("tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", where],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        skipped("a full tmpfs under --save",
                "cannot mount one here: " + (mounted.stderr.strip() or "not root"))
        return
    try:
        ck = os.path.join(where, "ck.st")
        with open(ck, "w") as f:
            f.write("earlier")
        r = subprocess.run([DTNN_RUN, os.path.join(MODELS, "lenet.dtnn"), "--synthetic",
                            "--steps", "1", "--threads", "1", "--save", ck],
                           capture_output=True, text=True)
        with open(ck) as f:
            kept = f.read() == "earlier"
        ok = r.returncode == 1 and "No space left on device" in r.stderr and kept and not strays(where)
        report(ok, "a full tmpfs under --save", f"exit {r.returncode}, {r.stderr.strip()[:160]!r}")
    finally:
        subprocess.run(["umount", where])


def check_open_files():
    model = os.path.join(os.path.dirname(__file__), "tiny.dtnn")
    for n in (8, 16, 32):
        r = subprocess.run(["prlimit", f"--nofile={n}", DTNN_RUN, model, "--threads", "2",
                            "--save", os.path.join(folder("nofile"), "ck.st")],
                           capture_output=True, text=True)
        ok = r.returncode in (0, 1) and (r.returncode == 0 or "error:" in r.stderr)
        report(ok, f"ulimit -n {n}", f"exit {r.returncode}, {r.stderr.strip()[:120]!r}")


def check_address_space():
    """The limits at which LeNet on the real data crashed inside oneDNN's code generator
    (Inputs/resource_limits.py sweeps the whole range)."""
    for mb in (160, 200, 400):
        r = subprocess.run(["prlimit", f"--as={mb << 20}", DTNN_RUN, os.path.join(MODELS, "lenet.dtnn"),
                            "--steps", "3", "--no-progress"], capture_output=True, text=True)
        ok = r.returncode == 0 or (r.returncode == 1 and "dtnn-run: error:" in r.stderr)
        report(ok, f"ulimit -v {mb} MB", f"exit {r.returncode}, {r.stderr.strip()[:120]!r}")


for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
            signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM):
    check_signal_in_training(sig)
check_sigpipe()
check_cpu_limit()
check_before_training()
check_second_signal_during_save()
check_rank_signal()
check_write_failures()
check_small_tmpfs()
check_open_files()
check_address_space()
sys.exit(1 if failures else 0)
