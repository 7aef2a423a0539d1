#!/usr/bin/env python3
"""Writes the hostile inputs of test/lit/hostile at test time, so that no large or binary file
is committed, and checks that an output file stayed small.

Usage: hostile.py KIND OUT [N]    write input KIND to OUT (N: a size, where KIND takes one)
       hostile.py small FILE LIMIT  fail if FILE is larger than LIMIT bytes
"""
import os
import random
import sys

# A small valid model; the inputs below break or pad it.
VALID = (
    "model M(x: f32[N, 4]) -> f32[N, 2] {\n"
    "  let h = x |> dense(8) |> relu\n"
    "  return h |> dense(2)\n"
    "}\n"
)


def empty(_):
    return b""


def junk(n):
    return random.Random(20240601).randbytes(n or 65536)


def nul(_):
    # The NUL byte sits on line 2, inside the let statement.
    return VALID.replace("dense(8)", "dense(8)\0").encode()


def utf8_ident(_):
    # An identifier on line 2 contains a byte that is never valid in UTF-8.
    return VALID.replace("let h = x", "let h\xff = x").encode("latin-1")


def utf8_comment(_):
    # Line 1 is a comment holding a Latin-1 byte that is not valid UTF-8.
    return b"# caf\xe9 au lait\n" + VALID.encode()


def crlf_valid(_):
    return VALID.replace("\n", "\r\n").encode()


def crlf_invalid(_):
    # Line 3, column 13 holds `$`, a character the language does not have.
    text = VALID.replace("  return", "  let y = x $ 2\n  return")
    return text.replace("\n", "\r\n").encode()


def unterminated_comment(_):
    # The comment opens at line 3, column 3 and is never closed.
    return VALID.replace("  return", "  /* never closed\n  return").encode()


def unterminated_string(_):
    # The string opens at line 1, column 8 and ends at the line break.
    return ('import "std/resnet.dtnn\n' + VALID).encode()


def nested_parens(n):
    n = n or 100000
    return ("model M(x: f32[N, 4]) -> f32[N, 4] {\n  return " + "(" * n + "x" + ")" * n + "\n}\n").encode()


def long_ident(n):
    # An unknown name of n bytes on line 2, column 10.
    return ("model M(x: f32[N, 4]) -> f32[N, 4] {\n  return " + "a" * (n or 10 << 20) + "\n}\n").encode()


def comment_lines(n):
    return (VALID + "#\n" * (n or 2000000)).encode()


def garbage_lines(n):
    return ("$\n" * (n or 2000000)).encode()


def recursive_blocks(_):
    return (
        "block a(x) { return b(x) }\n"
        "block b(x) { return a(x) }\n"
        "model M(x: f32[N, 4]) -> f32[N, 4] { return a(x) }\n"
    ).encode()


def block_chain(n):
    n = n or 5000
    lines = ["block b0(x) { return x |> relu }"]
    lines += ["block b%d(x) { return b%d(x) }" % (i, i - 1) for i in range(1, n)]
    lines.append("model M(x: f32[N, 4]) -> f32[N, 4] { return b%d(x) }" % (n - 1))
    return ("\n".join(lines) + "\n").encode()


KINDS = {
    "empty": empty,
    "junk": junk,
    "nul": nul,
    "utf8-ident": utf8_ident,
    "utf8-comment": utf8_comment,
    "crlf-valid": crlf_valid,
    "crlf-invalid": crlf_invalid,
    "unterminated-comment": unterminated_comment,
    "unterminated-string": unterminated_string,
    "nested-parens": nested_parens,
    "long-ident": long_ident,
    "comment-lines": comment_lines,
    "garbage-lines": garbage_lines,
    "recursive-blocks": recursive_blocks,
    "block-chain": block_chain,
}


def main(argv):
    if len(argv) == 4 and argv[1] == "small":
        size = os.path.getsize(argv[2])
        if size > int(argv[3]):
            sys.stderr.write("%s has %d bytes, more than %s\n" % (argv[2], size, argv[3]))
            return 1
        return 0
    if len(argv) not in (3, 4) or argv[1] not in KINDS:
        sys.stderr.write(__doc__)
        return 2
    n = int(argv[3]) if len(argv) == 4 else 0
    with open(argv[2], "wb") as f:
        f.write(KINDS[argv[1]](n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
