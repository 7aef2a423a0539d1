"""Runs a command, sends it a signal once its output shows a line with a marker, and exits
with the command's status; its output and errors pass through.

    interrupt.py SIGNAL MARKER COMMAND...
"""
import signal
import subprocess
import sys


def main(argv):
    sig = getattr(signal, argv[1])
    marker = argv[2]
    proc = subprocess.Popen(argv[3:], stdout=subprocess.PIPE, text=True)
    sent = False
    for line in proc.stdout:
        sys.stdout.write(line)
        if not sent and marker in line:
            proc.send_signal(sig)
            sent = True
    status = proc.wait()
    if not sent:
        sys.stderr.write("interrupt.py: the marker never appeared\n")
        return 99
    return 128 - status if status < 0 else status


sys.exit(main(sys.argv))
