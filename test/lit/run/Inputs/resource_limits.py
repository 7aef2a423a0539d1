"""Runs a command under a sweep of resource limits and checks how each run ends.

usage: resource_limits.py [options] -- COMMAND...

  --limit RES=VALUES  the limits to sweep, one run each: RES is as (ulimit -v), data
                      (ulimit -d), nofile (ulimit -n) or nproc (ulimit -u); VALUES is a list of
                      values and ranges FIRST:LAST:STEP, comma-separated, with a K, M or G suffix
                      (as=64M:1G:64M,1500M). Repeated, the sweeps run one after another.
  --ranks N           run the command under mpirun with N ranks, the limit on each rank
  --user NAME         run the command as user NAME when run as root, whose limit of processes
                      the kernel does not enforce; without root, as the current user
  --timeout S         end a run that takes longer than S seconds (default 300)
  --quiet             print only the runs that went wrong and the summary

Every run must either succeed (exit 0) or end with the tool's own message ("NAME: error: ..."
or "NAME: rank R: error: ...") and exit status 1. A run that ends by a signal (a status of
128 or more under mpirun), one whose output holds a crash report ("Segmentation fault",
"Aborted", "core dumped", "libgomp:", "terminate called") or one that exits otherwise is a
failure. Prints one line per run, "RES=VALUE: trained", "RES=VALUE: refused: MESSAGE" or
"RES=VALUE: FAILED (why): LAST LINE", then "N runs: T trained, R refused, F failed"; exits 1
if any run failed.
"""
import os
import pwd
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

RESOURCES = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA,
             "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}
PRLIMIT_FLAGS = {"as": "--as", "data": "--data", "nofile": "--nofile", "nproc": "--nproc"}
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
CRASH = re.compile(r"Segmentation fault|Aborted|core dumped|libgomp:|terminate called|"
                   r"exited on signal|signal \d+ \(")


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m:
        raise SystemExit("resource_limits.py: bad value '%s'" % text)
    return int(m.group(1)) * UNITS[m.group(2)]


def parse_values(text):
    values = []
    for part in text.split(","):
        if ":" in part:
            first, last, step = (parse_size(x) for x in part.split(":"))
            values.extend(range(first, last + 1, step))
        else:
            values.append(parse_size(part))
    return values


def show(res, value):
    if res not in ("as", "data") or value % (1 << 20):
        return "%s=%d" % (res, value)
    return "%s=%dM" % (res, value >> 20)


def tool_message(text):
    """The last line that holds the tool's own error message, or None. The ranks of a job
    write to one pipe, so a message may start after another rank's unfinished line."""
    lines = [l for l in text.splitlines() if re.search(r"[\w.-]+: (rank \d+: )?error: ", l)]
    return lines[-1] if lines else None


def run_one(cmd, res, value, args):
    user = pwd.getpwnam(args.user) if args.user else None

    def limit_child():
        if user:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        if args.ranks == 1:
            resource.setrlimit(RESOURCES[res], (value, value))

    if args.ranks > 1:
        # mpirun itself runs without the limit; each rank sets it before it starts.
        cmd = [shutil.which("mpirun") or "mpirun", "-np", str(args.ranks), "--oversubscribe",
               "--allow-run-as-root", "--mca", "btl", "self,vader", "--bind-to", "none",
               "prlimit", "%s=%d" % (PRLIMIT_FLAGS[res], value), "--"] + cmd
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, preexec_fn=limit_child,
                                  timeout=args.timeout, cwd=args.cwd)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    last = text.strip().splitlines()[-1] if text.strip() else ""
    if status is None:
        return "failed", "timed out after %d s" % args.timeout, last
    if status < 0:
        return "failed", "killed by %s" % signal.Signals(-status).name, last
    crash = CRASH.search(text)
    if crash:
        return "failed", "'%s' in the output" % crash.group(0), last
    if status == 0:
        return "trained", "", ""
    message = tool_message(text)
    if status == 1 and message:
        return "refused", "", message
    return "failed", "exit %d%s" % (status, "" if message else " without the tool's message"), last


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit(__doc__)
    cmd = argv[argv.index("--") + 1:]
    opts = argv[:argv.index("--")]

    class Args:
        ranks, user, timeout, quiet, cwd = 1, None, 300, False, None

    args, sweeps = Args(), []
    i = 0
    while i < len(opts):
        name = opts[i]
        if name == "--quiet":
            args.quiet = True
            i += 1
            continue
        if i + 1 >= len(opts):
            raise SystemExit("resource_limits.py: %s needs a value" % name)
        value = opts[i + 1]
        if name == "--limit":
            res, _, values = value.partition("=")
            if res not in RESOURCES:
                raise SystemExit("resource_limits.py: unknown resource '%s'" % res)
            sweeps.append((res, parse_values(values)))
        elif name == "--ranks":
            args.ranks = int(value)
        elif name == "--user":
            args.user = value
        elif name == "--timeout":
            args.timeout = int(value)
        else:
            raise SystemExit("resource_limits.py: unknown option %s" % name)
        i += 2
    if args.user and os.geteuid() != 0:
        args.user = None
    if args.user:
        # The user must be able to write where the command writes: a folder of its own.
        args.cwd = tempfile.mkdtemp(prefix="limits-")
        entry = pwd.getpwnam(args.user)
        os.chown(args.cwd, entry.pw_uid, entry.pw_gid)
    counts = {"trained": 0, "refused": 0, "failed": 0}
    for res, values in sweeps:
        for value in values:
            outcome, why, line = run_one(cmd, res, value, args)
            counts[outcome] += 1
            if outcome == "failed":
                print("%s: FAILED (%s): %s" % (show(res, value), why, line))
            elif not args.quiet:
                print("%s: %s%s" % (show(res, value), outcome, ": " + line if line else ""))
            sys.stdout.flush()
    if args.cwd:
        shutil.rmtree(args.cwd, ignore_errors=True)
    total = sum(counts.values())
    print("%d runs: %d trained, %d refused, %d failed" % (total, counts["trained"],
                                                         counts["refused"], counts["failed"]))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
