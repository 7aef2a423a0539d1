"""Writes a small text corpus to the file argv[1]: 1200 words drawn from a 13-word sentence with a
fixed seed, as one line (5749 bytes)."""
import random
import sys

words = "the quick brown fox jumps over the lazy dog and then it rests".split()
r = random.Random(5)
with open(sys.argv[1], "w") as f:
    f.write(" ".join(r.choice(words) for _ in range(1200)) + "\n")
