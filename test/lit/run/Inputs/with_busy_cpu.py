"""Runs a command while a child process keeps one CPU busy.

usage: with_busy_cpu.py CPU -- COMMAND...
The child spins on CPU (its affinity); the command runs with the CPUs this
process may use. Exits with the command's status.
"""
import os
import subprocess
import sys
import time


def main():
    cpu = int(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpu})
        while True:
            pass
    try:
        time.sleep(0.3)  # let the spinner show up in the CPU statistics
        return subprocess.call(cmd)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    sys.exit(main())
