#!/usr/bin/env python3
"""Runs a command and checks its exit status.

Usage: expect_exit.py CODE CMD [ARGS...]

The command's stdout and stderr pass through unchanged. The script fails (exit 1) if the command
was killed by a signal (a crash or a timeout) or exited with a status other than CODE; otherwise
it exits 0. Unlike `not`, it tells a clean error exit from a crash. The reason for a failure is
written to stdout as well as stderr, so that lit shows it even when the test sends the command's
stderr to a file.
"""
import signal
import subprocess
import sys


def complain(message):
    for stream in (sys.stdout, sys.stderr):
        stream.write("expect_exit.py: %s\n" % message)
        stream.flush()


def main(argv):
    if len(argv) < 3 or not argv[1].lstrip("-").isdigit():
        sys.stderr.write("usage: expect_exit.py CODE CMD [ARGS...]\n")
        return 2
    expected = int(argv[1])
    try:
        status = subprocess.call(argv[2:])
    except OSError as e:
        complain("cannot run %s: %s" % (argv[2], e.strerror))
        return 1
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        complain("%s was killed by %s" % (argv[2], name))
        return 1
    if status != expected:
        complain("%s exited with %d, expected %d" % (argv[2], status, expected))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
