#!/usr/bin/env python3
"""Writes a main file that imports many files, for the test of the import limit.

Usage: write_imports.py DIR COUNT

Writes COUNT empty files DIR/i0.dtnn ... and DIR/main.dtnn, which imports each of them, one
per line, and defines a model that returns its input.
"""
import os
import sys

folder, count = sys.argv[1], int(sys.argv[2])
os.makedirs(folder, exist_ok=True)
for i in range(count):
    open(os.path.join(folder, "i%d.dtnn" % i), "w").close()
with open(os.path.join(folder, "main.dtnn"), "w") as main:
    for i in range(count):
        main.write('import "i%d.dtnn"\n' % i)
    main.write("model M(x: f32[N, 4]) -> f32[N, 4] {\n  return x\n}\n")
