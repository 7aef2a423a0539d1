#!/usr/bin/env python3
"""Starts an MPI job, stops or kills one of its ranks once a file appears,
and reports how the job ended.

Usage: mpi_fault.py SIGNAL RANK WAIT_FOR_FILE LIMIT -- MPIRUN [ARGS...]

SIGNAL is STOP or KILL. The signal goes to the process whose environment
says OMPI_COMM_WORLD_RANK=RANK, among the launcher's descendants, as soon as
WAIT_FOR_FILE exists (a checkpoint, so that training is under way); no
launcher is told, as when a machine hangs or dies. The job gets LIMIT
seconds to end. Prints the job's stderr, then "ended: status N" or
"ended: signal N", or "hang" after killing what is left. Exits 0 unless the
signal could not be sent.
"""
import os
import signal
import subprocess
import sys
import time


def descendants(root):
    """The pids of root's descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def rank_of(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                    return int(item.split(b"=", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def main(argv):
    if len(argv) < 7 or argv[5] != "--" or argv[1] not in ("STOP", "KILL"):
        sys.stderr.write(__doc__)
        return 2
    sig = signal.SIGSTOP if argv[1] == "STOP" else signal.SIGKILL
    rank, wait_for, limit = int(argv[2]), argv[3], float(argv[4])
    job = subprocess.Popen(argv[6:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    start = time.monotonic()
    while not os.path.exists(wait_for):
        if job.poll() is not None or time.monotonic() - start > limit:
            print("the job ended or stalled before %s appeared" % wait_for)
            job.kill()
            return 1
        time.sleep(0.05)
    target = [p for p in descendants(job.pid) if rank_of(p) == rank and
              open("/proc/%d/comm" % p).read().strip().startswith("dtnn-run")]
    if not target:
        print("no process of rank %d" % rank)
        job.kill()
        return 1
    os.kill(target[0], sig)
    try:
        _, err = job.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        for p in descendants(job.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        job.kill()
        job.communicate()
        print("hang")
        return 0
    sys.stdout.write(err.decode(errors="replace"))
    if job.returncode < 0:
        print("ended: signal %d" % -job.returncode)
    else:
        print("ended: status %d" % job.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
