"""dtnn's safetensors reader, in Python, for tools that read checkpoints (torchvision_weights.py).

It accepts exactly the files that the runtime's reader accepts (runtime/train/Checkpoint.cpp for the
file, runtime/train/SafetensorsHeader.cpp for the JSON header) and refuses the others with the same
messages, so that a file a tool reads is one `dtnn-run --init-from` would read, and the other way
round. The rules, in the order they are checked:

  - the path is a regular file (not a directory, FIFO or device);
  - it holds at least the 8-byte little-endian header length N, N is at most the file size
    less 8 and at most 100,000,000;
  - the header is valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
    U+10FFFF);
  - the header is exactly the safetensors schema, in the strict JSON the runtime parses:
      header   ::= '{' (member (',' member)*)? '}'
      member   ::= '"__metadata__"' ':' (metadata | 'null') | string ':' tensor
      metadata ::= '{' (string ':' string (',' string ':' string)*)? '}'
      tensor   ::= '{' field (',' field)* '}'   with each of dtype, shape, data_offsets once
      field    ::= '"dtype"' ':' string | '"shape"' ':' ints | '"data_offsets"' ':' ints
      ints     ::= '[' (integer (',' integer)*)? ']'
    with integers 0 to 2^64 - 1 without sign, fraction, exponent or leading zero; strings
    without control characters or unpaired surrogate escapes; no duplicate tensor, metadata
    key, '__metadata__' or field; dtypes F32, F64, I32, I64, U8 and BOOL; at most 64
    dimensions whose nonzero sizes multiply to at most 2^63 - 1; two data offsets; nothing
    after the object but white space;
  - each tensor's data_offsets [begin, end) has begin <= end and spans exactly its shape's
    elements of its dtype;
  - the ranges, sorted by offset, neither overlap nor leave gaps, none runs past the data,
    and together they cover the data exactly;
  - a BOOL tensor holds only the bytes 0 and 1.

Errors are ReadError, whose message names no file (the caller adds it, as the runtime does).
"""
import json
import os
import re
import stat
import struct

# The largest JSON header the runtime accepts (kMaxCheckpointHeaderBytes).
MAX_HEADER_BYTES = 100_000_000
# The most dimensions a stored tensor may have (kMaxRank).
MAX_RANK = 64
UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1

# Safetensors dtype: (dtnn's name of it, numpy's, element size).
DTYPES = {"F32": ("f32", "<f4", 4), "F64": ("f64", "<f8", 8), "I32": ("i32", "<i4", 4),
          "I64": ("i64", "<i8", 8), "U8": ("u8", "u1", 1), "BOOL": ("bool", "u1", 1)}

_SPACE = re.compile(rb"[ \t\n\r]*")
_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
_DIGITS = re.compile(rb"[0-9]*")
_ESCAPES = {ord("b"): b"\b", ord("f"): b"\f", ord("n"): b"\n", ord("r"): b"\r",
            ord("t"): b"\t", ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/"}


class ReadError(Exception):
    """A file that dtnn's reader refuses; the message says why, without the path."""


class Tensor:
    """One entry of the header: its name, dtype, shape and byte range in the data."""

    def __init__(self, name):
        self.name, self.dtype, self.shape, self.begin, self.end = name, None, [], 0, 0
        self.data = b""

    def type_str(self):
        """dtnn's name of the type, as its messages print it: f32[64,3,7,7]."""
        return DTYPES[self.dtype][0] + dims_str(self.shape)

    def array(self):
        """The data as a numpy array of the tensor's shape."""
        import numpy as np
        array = np.frombuffer(self.data, dtype=DTYPES[self.dtype][1]).reshape(self.shape)
        return array.astype(bool) if self.dtype == "BOOL" else array


def quoted(s):
    """s in single quotes, shortened to 80 bytes as the runtime's messages do."""
    raw = s.encode("utf-8", "surrogatepass")
    short = raw[:80].decode("utf-8", "replace")
    return "'" + short + ("...'" if len(raw) > 80 else "'")


def dims_str(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


def range_str(begin, end):
    return f"[{begin}, {end})"


class _HeaderParser:
    """The runtime's recursive-descent parser of the header (SafetensorsHeader.cpp), rule for
    rule, so that a malformed header fails at the same byte with the same message."""

    def __init__(self, text):
        self.text, self.pos = text, 0
        self.metadata, self.tensors = {}, []

    def fail(self, message):
        raise ReadError(f"invalid header JSON at byte {self.pos}: {message}")

    def skip_space(self):
        self.pos = _SPACE.match(self.text, self.pos).end()

    def accept(self, c):
        self.skip_space()
        if self.text[self.pos:self.pos + 1] == c:
            self.pos += 1
            return True
        return False

    def expect(self, c):
        if not self.accept(c):
            self.fail(f"expected '{c.decode()}'")

    def parse_list(self, close, element):
        if self.accept(close):
            return
        element()
        while self.accept(b","):
            element()
        self.expect(close)

    def parse_object(self, member):
        self.expect(b"{")

        def one():
            key = self.parse_string()
            self.expect(b":")
            member(key)
        self.parse_list(b"}", one)

    def parse_hex4(self):
        value = 0
        for _ in range(4):
            c = self.text[self.pos:self.pos + 1]
            if not c or c not in b"0123456789abcdefABCDEF":
                self.fail("expected four hex digits after \\u")
            value = value << 4 | int(c, 16)
            self.pos += 1
        return value

    def parse_string(self):
        self.expect(b'"')
        out = bytearray()
        while True:
            end = _PLAIN.match(self.text, self.pos).end()
            out += self.text[self.pos:end]
            self.pos = end
            if self.pos >= len(self.text):
                self.fail("unterminated string")
            c = self.text[self.pos]
            if c == ord('"'):
                self.pos += 1
                return out.decode("utf-8")
            if c < 0x20:
                self.fail("control character in string")
            self.pos += 1
            esc = 0
            if self.pos < len(self.text):
                esc = self.text[self.pos]
                self.pos += 1
            if esc in _ESCAPES:
                out += _ESCAPES[esc]
            elif esc == ord("u"):
                out += self.parse_code_point().encode("utf-8")
            else:
                self.pos -= 1
                self.fail("invalid escape in string")

    def parse_code_point(self):
        cp = self.parse_hex4()
        if 0xDC00 <= cp <= 0xDFFF:
            self.fail("unpaired surrogate in \\u escape")
        if 0xD800 <= cp <= 0xDBFF:
            if self.text[self.pos:self.pos + 2] != b"\\u":
                self.fail("unpaired surrogate in \\u escape")
            self.pos += 2
            low = self.parse_hex4()
            if not 0xDC00 <= low <= 0xDFFF:
                self.fail("unpaired surrogate in \\u escape")
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        return chr(cp)

    def parse_integer(self):
        self.skip_space()
        c = self.text[self.pos:self.pos + 1]
        if c == b"-":
            self.fail("expected a non-negative integer")
        digits = _DIGITS.match(self.text, self.pos).group()
        if not digits:
            self.fail("expected an integer")
        if digits[0] == ord("0") and len(digits) > 1:
            self.fail("integer with a leading zero")
        # The runtime stops at the first digit that takes the value past 2^64 - 1.
        for k in range(min(len(digits), 21)):
            if int(digits[:k + 1]) > UINT64_MAX:
                self.pos += k
                self.fail("integer too large")
        self.pos += len(digits)
        if self.text[self.pos:self.pos + 1] in (b".", b"e", b"E"):
            self.fail("expected an integer")
        return int(digits)

    def parse_integers(self, max_count, what):
        out = []
        self.expect(b"[")

        def one():
            if len(out) == max_count:
                self.fail(f"{what} has more than {max_count} elements")
            out.append(self.parse_integer())
        self.parse_list(b"]", one)
        return out

    def parse_metadata(self):
        self.skip_space()
        if self.text[self.pos:self.pos + 4] == b"null":
            self.pos += 4
            return

        def member(key):
            self.skip_space()
            if self.pos < len(self.text) and self.text[self.pos] != ord('"'):
                self.fail(f"metadata value of {quoted(key)} is not a string")
            value = self.parse_string()
            if key in self.metadata:
                raise ReadError(f"duplicate metadata key {quoted(key)}")
            self.metadata[key] = value
        self.parse_object(member)

    def parse_tensor(self, tensor):
        what = "tensor " + quoted(tensor.name)
        seen, shape, offsets = set(), [], []

        def field(key):
            nonlocal shape, offsets
            if key not in ("dtype", "shape", "data_offsets"):
                raise ReadError(f"{what} has an unknown field {quoted(key)}")
            if key in seen:
                raise ReadError(f"{what} has the field {quoted(key)} twice")
            seen.add(key)
            if key == "shape":
                shape = self.parse_integers(MAX_RANK, "the shape of " + what)
            elif key == "data_offsets":
                offsets = self.parse_integers(2, "data_offsets of " + what)
            else:
                dtype = self.parse_string()
                if dtype not in DTYPES:
                    raise ReadError(f"{what} has the unsupported dtype {quoted(dtype)}")
                tensor.dtype = dtype
        self.parse_object(field)
        for key in ("dtype", "shape", "data_offsets"):
            if key not in seen:
                raise ReadError(f"{what} lacks the field '{key}'")
        if len(offsets) != 2:
            raise ReadError(f"data_offsets of {what} must hold two integers")
        tensor.begin, tensor.end = offsets
        product = 1
        for d in shape:
            if d != 0 and product > INT64_MAX // d:
                raise ReadError(f"the shape of {what} has too many elements")
            product *= d or 1
        tensor.shape = shape

    def parse_header(self):
        names = set()

        def member(key):
            if key == "__metadata__":
                if "__metadata__" in names:
                    raise ReadError("duplicate key '__metadata__'")
                names.add(key)
                self.parse_metadata()
                return
            if key in names:
                raise ReadError("duplicate tensor " + quoted(key))
            names.add(key)
            self.tensors.append(Tensor(key))
            self.parse_tensor(self.tensors[-1])
        self.parse_object(member)
        self.skip_space()
        if self.pos != len(self.text):
            self.fail("unexpected characters after the header object")


def parse_header(text):
    """The metadata and the tensors (in the header's order) of header bytes."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReadError(f"header is not valid UTF-8 (byte {e.start})") from None
    parser = _HeaderParser(text)
    parser.parse_header()
    return parser.metadata, parser.tensors


def check_layout(tensors, data_bytes):
    """Checks that each tensor's range matches its type and that the ranges tile data_bytes
    bytes exactly; returns the tensors sorted by offset (Checkpoint.cpp's checkLayout)."""
    for t in tensors:
        what = "tensor " + quoted(t.name)
        if t.begin > t.end:
            raise ReadError(f"{what} has data_offsets [{t.begin}, {t.end}] that end before "
                            "they begin")
        span, size = t.end - t.begin, DTYPES[t.dtype][2]
        numel = 1
        for d in t.shape:
            numel *= d
        if span % size != 0 or span // size != numel:
            raise ReadError(f"{what} has shape {dims_str(t.shape)} ({numel} elements of "
                            f"{t.dtype}) but its data_offsets {range_str(t.begin, t.end)} span "
                            f"{span} bytes")
    ordered = sorted(tensors, key=lambda t: (t.begin, t.end))
    covered = 0
    for i, t in enumerate(ordered):
        if t.begin < covered:
            p = ordered[i - 1]
            raise ReadError(f"tensors {quoted(p.name)} and {quoted(t.name)} overlap (bytes "
                            f"{range_str(p.begin, p.end)} and {range_str(t.begin, t.end)})")
        if t.begin > covered:
            raise ReadError(f"bytes {range_str(covered, t.begin)} of the data belong to no tensor")
        covered = t.end
    for t in ordered:
        if t.end > data_bytes:
            raise ReadError(f"truncated: tensor {quoted(t.name)} needs bytes "
                            f"{range_str(t.begin, t.end)} but the data holds {data_bytes}")
    if covered < data_bytes:
        raise ReadError(f"the data holds {data_bytes} bytes but the tensors use only {covered}")
    return ordered


def _file_type(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular_file(path):
    """path opened for reading, and its size, if it is a regular file (ir/Files.cpp's
    openRegularFile): a FIFO neither blocks the open nor is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise ReadError("cannot open: " + os.strerror(e.errno)) from None
    try:
        st = os.fstat(fd)
    except OSError as e:
        os.close(fd)
        raise ReadError("cannot stat: " + os.strerror(e.errno)) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ReadError("is a directory" if stat.S_ISDIR(st.st_mode) else
                        f"is {_file_type(st.st_mode)}, not a regular file")
    return os.fdopen(fd, "rb"), st.st_size


def _read_exactly(f, n):
    try:
        data = f.read(n)
    except OSError as e:
        raise ReadError("read failed: " + os.strerror(e.errno)) from None
    if len(data) != n:
        raise ReadError("read failed: unexpected end of file")
    return data


def read(path):
    """The metadata and the tensors, by name, of the safetensors file path; ReadError if dtnn's
    reader would refuse it. Memory stays bounded by the file size."""
    f, size = open_regular_file(path)
    with f:
        if size < 8:
            raise ReadError(f"not a safetensors file ({size} bytes, too short for the 8-byte "
                            "header length)")
        (n,) = struct.unpack("<Q", _read_exactly(f, 8))
        if n > size - 8:
            raise ReadError(f"not a safetensors file (header length {n} exceeds file size "
                            f"{size})")
        if n > MAX_HEADER_BYTES:
            raise ReadError(f"header length {n} exceeds the limit of {MAX_HEADER_BYTES}")
        metadata, tensors = parse_header(_read_exactly(f, n))
        ordered = check_layout(tensors, size - 8 - n)
        for t in ordered:
            t.data = _read_exactly(f, t.end - t.begin)
            if t.dtype == "BOOL" and t.data.translate(None, b"\0\1"):
                raise ReadError(f"tensor {quoted(t.name)} of dtype BOOL holds a byte that is "
                                "neither 0 nor 1")
    return metadata, {t.name: t for t in ordered}


def write(f, tensors, metadata):
    """Writes (name, numpy array) pairs and string metadata to the binary stream f, laid out as
    the runtime lays out its checkpoints: sorted keys, data 8-byte aligned. uint8, int32 and int64
    arrays keep their type (images, token ids); any other becomes float32."""
    header, offset = {"__metadata__": dict(metadata)}, 0
    blobs = []
    kept = {"uint8": ("U8", "u1"), "int32": ("I32", "<i4"), "int64": ("I64", "<i8")}
    for name, array in sorted(tensors, key=lambda pair: pair[0]):
        dtype, code = kept.get(str(array.dtype), ("F32", "<f4"))
        data = array.astype(code).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    f.write(struct.pack("<Q", len(text)) + text)
    for blob in blobs:
        f.write(blob)
