"""Feeds the same malformed safetensors files to dtnn's reader and to the weight converter's:

    reader_agreement.py MODEL.dtnn DTNNC DTNN_RUN CONVERTER WORKDIR

For each file it writes into WORKDIR (for MODEL, test/lit/run/Inputs/tiny.dtnn), it runs
`dtnn-run MODEL --init-from FILE --eval-only` and `CONVERTER to-torch resnet18 MODEL FILE OUT`,
and prints `NAME: MESSAGE` when both refuse it with the same message (after their program
names), or `NAME: accepted by both` when both read it. Any disagreement is printed with both
messages and fails the script at the end. A file both accept fails later in the converter, at
pairing MODEL with resnet18, which names the model, not the file.
"""
import json
import os
import struct
import subprocess
import sys

# The tensors of tiny.dtnn, as `dtnnc compile` declares them.
TINY = [("conv2d.0.weight", [4, 1, 3, 3]), ("conv2d.0.bias", [4]), ("batchnorm.0.gamma", [4]),
        ("batchnorm.0.beta", [4]), ("batchnorm.0.running_mean", [4]),
        ("batchnorm.0.running_var", [4]), ("dense.0.weight", [4, 64]), ("dense.0.bias", [4])]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def entries(tensors=TINY):
    """The header entries of float32 tensors, back to back, and the length of their data."""
    header, offset = {}, 0
    for name, shape in tensors:
        end = offset + 4 * numel(shape)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, end]}
        offset = end
    return header, offset


def file_of(header_text, data):
    if isinstance(header_text, str):
        header_text = header_text.encode()
    return struct.pack("<Q", len(header_text)) + header_text + data


def good(header=None, data_bytes=None, extra_text=""):
    """A file of header (entries() by default) whose JSON text is followed by extra_text."""
    if header is None:
        header, data_bytes = entries()
    return file_of(json.dumps(header) + extra_text, bytes(data_bytes))


def edited(old, new):
    """The valid file with one substring of its header text replaced."""
    header, n = entries()
    return file_of(json.dumps(header).replace(old, new, 1), bytes(n))


def raw_edited(old, new):
    """The valid file with one byte string of its header replaced."""
    header, n = entries()
    return file_of(json.dumps(header).encode().replace(old, new, 1), bytes(n))


def cases():
    header, n = entries()
    weight = '"conv2d.0.weight": {"dtype": "F32", "shape": [4, 1, 3, 3], "data_offsets": [0, 144]}'
    yield "empty", b""
    yield "short", b"\x05\0\0\0\0"
    yield "header-past-end", struct.pack("<Q", 1000) + b"{}"
    yield "non-utf8", raw_edited(b"conv2d.0.bias", b"conv\xff.0.bias")
    yield "overlong-utf8", raw_edited(b"dense.0.bias", b"dense\xc0\xae0.bias")
    yield "encoded-surrogate", raw_edited(b"dense.0.bias", b"dense\xed\xa0\x80.bias")
    yield "syntax", edited('], "data_offsets"', '] "data_offsets"')
    yield "not-an-object", file_of("[]", b"")
    yield "after-object", good(extra_text=" x")
    yield "duplicate-tensor", edited("{" + weight, "{" + weight + ", " + weight)
    yield "duplicate-metadata", edited("{", '{"__metadata__": {}, "__metadata__": null, ')
    yield "duplicate-metadata-key", edited("{", '{"__metadata__": {"a": "1", "a": "2"}, ')
    yield "metadata-not-string", edited("{", '{"__metadata__": {"epoch": 3}, ')
    yield "metadata-not-object", edited("{", '{"__metadata__": [], ')
    yield "unknown-field", edited('"dtype": "F32", "shape": [4, 1, 3, 3]',
                                  '"dtype": "F32", "offsets": [], "shape": [4, 1, 3, 3]')
    yield "field-twice", edited('"dtype": "F32"', '"dtype": "F32", "dtype": "F32"')
    yield "dtype-f16", edited('"dtype": "F32"', '"dtype": "F16"')
    yield "dtype-not-string", edited('"dtype": "F32"', '"dtype": 32')
    yield "field-missing", edited('"dtype": "F32", ', "")
    yield "offsets-three", edited('"data_offsets": [0, 144]', '"data_offsets": [0, 144, 288]')
    yield "offsets-one", edited('"data_offsets": [0, 144]', '"data_offsets": [0]')
    yield "rank-65", edited('"shape": [4, 1, 3, 3]', '"shape": [' + ", ".join(["1"] * 65) + "]")
    yield "negative", edited('"shape": [4, 1, 3, 3]', '"shape": [4, -1, 3, 3]')
    yield "fraction", edited('"shape": [4, 1, 3, 3]', '"shape": [4, 1.0, 3, 3]')
    yield "exponent", edited('"shape": [4, 1, 3, 3]', '"shape": [4, 1e0, 3, 3]')
    yield "leading-zero", edited('"shape": [4, 1, 3, 3]', '"shape": [4, 01, 3, 3]')
    yield "integer-too-large", edited('"data_offsets": [0, 144]',
                                      '"data_offsets": [0, 18446744073709551616]')
    yield "too-many-elements", edited('"shape": [4, 1, 3, 3]',
                                      '"shape": [4294967296, 4294967296, 3, 3]')
    yield "unpaired-surrogate", edited('"conv2d.0.weight"', '"conv2d.0.weight\\ud800"')
    yield "invalid-escape", edited('"conv2d.0.weight"', '"conv2d.0.weight\\x"')
    yield "control-character", edited('"conv2d.0.weight"', '"conv2d.0.weight\t"')
    yield "unterminated", file_of('{"conv2d.0.weight', b"")
    yield "offsets-backwards", edited('"data_offsets": [0, 144]', '"data_offsets": [144, 0]')
    yield "span-mismatch", edited('"data_offsets": [0, 144]', '"data_offsets": [0, 140]')
    overlap = dict(header)
    overlap["conv2d.0.bias"] = dict(header["conv2d.0.bias"], data_offsets=[128, 144])
    yield "overlap", good(overlap, n)
    gap = {k: dict(v, data_offsets=[v["data_offsets"][0] + (k != "conv2d.0.weight") * 8,
                                    v["data_offsets"][1] + (k != "conv2d.0.weight") * 8])
           for k, v in header.items()}
    yield "gap", good(gap, n + 8)
    yield "truncated", good()[:-100]
    yield "trailing-data", good(header, n + 4)
    boolean, m = entries(TINY[:1] + [("mask", [4])])
    boolean["mask"]["dtype"], boolean["mask"]["data_offsets"] = "BOOL", [144, 148]
    yield "bool-byte", file_of(json.dumps(boolean), bytes(144) + b"\0\1\2\0")
    ints = dict(header)
    ints["conv2d.0.weight"] = dict(header["conv2d.0.weight"], dtype="I32")
    yield "i32-tensor", good(ints, n)
    yield "missing-tensor", good(*entries(TINY[:-1]))
    yield "extra-tensor", good(*entries(TINY + [("fc.weight", [10, 64])]))
    yield "escaped-name", good(*entries(TINY + [("\U0001F600", [1])]))
    accepted, m = entries(TINY + [("conv2d.0.weight.momentum", [4, 1, 3, 3])])
    accepted["__metadata__"] = None
    # Tabs and line breaks between tokens, escapes in keys, null metadata, optimizer state.
    text = json.dumps(accepted, indent="\t").replace('"dtype"', '"\\u0064type"')
    yield "accepted", file_of(text, bytes(m))


def message(command, prefix, cwd):
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    lines = done.stderr.strip().splitlines()
    if done.returncode == 0:
        return None
    if done.returncode != 1 or len(lines) != 1 or not lines[0].startswith(prefix):
        return f"exit {done.returncode}: {done.stderr.strip()}"
    return lines[0][len(prefix):]


def main(model, dtnnc, dtnn_run, converter, work):
    os.makedirs(work, exist_ok=True)
    files = []
    for name, data in cases():
        with open(os.path.join(work, name + ".safetensors"), "wb") as f:
            f.write(data)
        files.append(name + ".safetensors")
    # A header length past the limit, in a sparse file large enough to hold it.
    with open(os.path.join(work, "header-over-limit.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 100_000_001))
        f.truncate(100_000_100)
    files.append("header-over-limit.safetensors")
    os.makedirs(os.path.join(work, "folder.safetensors"), exist_ok=True)
    if not os.path.exists(os.path.join(work, "fifo.safetensors")):
        os.mkfifo(os.path.join(work, "fifo.safetensors"))
    files += ["folder.safetensors", "fifo.safetensors", "absent.safetensors"]

    disagreements = 0
    for name in files:
        ours = message([dtnn_run, model, "--init-from", name, "--eval-only", "--threads", "1"],
                       "dtnn-run: error: ", work)
        theirs = message([sys.executable, converter, "to-torch", "resnet18", model, name,
                          "out.pth", "--dtnnc", dtnnc], "torchvision_weights.py: error: ", work)
        label = name[:-len(".safetensors")]
        if ours is None and theirs is not None and theirs.startswith(model + ": declares"):
            print(f"{label}: accepted by both")
        elif ours is not None and ours == theirs:
            print(f"{label}: {ours}")
        else:
            disagreements += 1
            print(f"{label}: DISAGREE: dtnn-run: {ours}; converter: {theirs}")
    if disagreements:
        sys.exit(f"the readers disagree on {disagreements} files")


if __name__ == "__main__":
    main(*sys.argv[1:])
