#!/usr/bin/env python3
"""Writes a test input that a text file cannot hold.

Usage: write_bytes.py OUT TEXT

TEXT is decoded with Python's backslash escapes (\\x00, \\xff, \\n) and each
resulting code point below 256 is written as one byte.
"""
import sys

with open(sys.argv[1], "wb") as f:
    f.write(sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))
