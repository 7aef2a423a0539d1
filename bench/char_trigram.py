"""The baseline a language model must beat: held-out bits per byte of a smoothed byte trigram.

Usage:
  /usr/bin/python3 bench/char_trigram.py [--dir /usr/share/games/fortunes] [--held-out 0.05]
                                         [--discount 0.75]

The corpus is every regular text file of DIR (not the strfile indexes `*.dat`, nor the `*.u8`
links), read as bytes in sorted name order and joined; the last HELD_OUT of its bytes are the
held-out split, the rest the training split. The model is an interpolated Kneser-Ney trigram
over the 256 byte values, with one absolute discount D at every order and add-one
continuation counts at the unigram order (so no byte has probability 0). The script prints the
held-out bits per byte (the mean of -log2 p(b_i | b_{i-2} b_{i-1})) of the bigram and trigram
models fitted on the training split, and the trigram's perplexity per byte. On Debian 12's
fortunes package the trigram gives 3.17 bits per byte.
"""
import argparse
import math
import os
import sys
from collections import Counter, defaultdict


def read_corpus(folder):
    names = sorted(n for n in os.listdir(folder)
                   if not n.endswith((".dat", ".u8")) and
                   os.path.isfile(os.path.join(folder, n)) and
                   not os.path.islink(os.path.join(folder, n)))
    if not names:
        sys.exit(f"char_trigram.py: {folder} holds no text files")
    data = b"".join(open(os.path.join(folder, n), "rb").read() for n in names)
    return names, data


class KneserNey:
    """Interpolated Kneser-Ney over bytes, to order 3."""

    def __init__(self, data, discount):
        self.d = discount
        self.tri = Counter(zip(data, data[1:], data[2:]))
        self.ctx2 = Counter()               # C(ab.)
        self.types2 = Counter()             # N1+(ab.)
        for (a, b, _), n in self.tri.items():
            self.ctx2[a, b] += n
            self.types2[a, b] += 1
        bigrams = set(zip(data, data[1:]))
        self.cont2 = Counter((b, c) for (_, b, c) in self.tri)  # N1+(.bc)
        self.ctx1 = Counter()               # N1+(.b.)
        self.types1 = Counter()             # N1+(b.) over continuation bigrams
        for (b, _), n in self.cont2.items():
            self.ctx1[b] += n
            self.types1[b] += 1
        self.cont1 = Counter(c for (_, c) in bigrams)  # N1+(.c)
        self.cont1_total = sum(self.cont1.values())

    def p1(self, c):
        return (self.cont1[c] + 1) / (self.cont1_total + 256)

    def p2(self, b, c):
        total = self.ctx1[b]
        if total == 0:
            return self.p1(c)
        return (max(self.cont2[b, c] - self.d, 0) + self.d * self.types1[b] * self.p1(c)) / total

    def p3(self, a, b, c):
        total = self.ctx2[a, b]
        if total == 0:
            return self.p2(b, c)
        return (max(self.tri[a, b, c] - self.d, 0) +
                self.d * self.types2[a, b] * self.p2(b, c)) / total


def bits_per_byte(prob, held):
    total = 0.0
    for i in range(2, len(held)):
        total -= math.log2(prob(held[i - 2], held[i - 1], held[i]))
    return total / (len(held) - 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/usr/share/games/fortunes")
    ap.add_argument("--held-out", type=float, default=0.05)
    ap.add_argument("--discount", type=float, default=0.75)
    args = ap.parse_args()
    if not os.path.isdir(args.dir):
        sys.exit(f"char_trigram.py: {args.dir} is not a folder (Debian's fortunes package "
                 "installs /usr/share/games/fortunes)")
    if not 0 < args.held_out < 1:
        sys.exit("char_trigram.py: --held-out must be in (0, 1)")
    names, data = read_corpus(args.dir)
    cut = len(data) - int(len(data) * args.held_out)
    train, held = data[:cut], data[cut:]
    if len(held) < 3:
        sys.exit("char_trigram.py: the held-out split is shorter than 3 bytes")
    model = KneserNey(train, args.discount)
    print(f"corpus: {len(names)} files of {args.dir}, {len(data):,} bytes; "
          f"training split {len(train):,} bytes, held-out {len(held):,} (last {args.held_out:.0%})")
    bigram = bits_per_byte(lambda a, b, c: model.p2(b, c), held)
    trigram = bits_per_byte(model.p3, held)
    print(f"  bigram:  held-out bits per byte {bigram:.4f}")
    print(f"  trigram: held-out bits per byte {trigram:.4f}, perplexity per byte "
          f"{2 ** trigram:.3f} (the baseline)")


if __name__ == "__main__":
    main()
