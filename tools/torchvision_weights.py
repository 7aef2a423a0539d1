#!/usr/bin/env python3
"""Converts weights between a torchvision model's state_dict and a dtnn checkpoint.

    torchvision_weights.py to-dtnn ARCH MODEL.dtnn OUT.safetensors
                                   [--state-dict IN.pth | --pretrained] [--seed S] [--dtnnc PATH]
    torchvision_weights.py to-torch ARCH MODEL.dtnn IN.safetensors OUT.pth [--dtnnc PATH]

ARCH is a torchvision model (resnet18, mobilenet_v2, ...) and MODEL.dtnn the dtnn model written
as it is (examples/resnet18.dtnn). to-dtnn takes the state_dict of --state-dict, or torchvision's
pretrained weights with --pretrained (downloaded by torchvision), or else a freshly initialized
model seeded by --seed; it writes a safetensors file for `dtnn-run --init-from`. to-torch writes
a dtnn checkpoint's weights back as a state_dict for torch.load.

Pairing. The keys of ARCH's own state_dict (torchvision's model built without weights), in its
order and without batch norm's num_batches_tracked, which dtnn does not keep, and without the
auxiliary classifiers of GoogLeNet and Inception-v3 (aux1, aux2, AuxLogits), which only their
training uses, pair in order with the dtnn model's parameters and buffers as `dtnnc compile
--no-fuse` declares them. Each pair must agree in shape and kind (a weight with a weight, batch
norm's weight and bias with gamma and beta, running statistics with running statistics, a
`param` with the key of its own name, as class_token), so a model written in another order is
refused, naming the first pair that differs. (With pretrained
weights GoogLeNet and Inception-v3 also rescale their input inside the model, transform_input;
dtnn's do not, so give them inputs normalized the way torchvision's transform_input leaves
them.) Batch norm's running variance is unbiased in both.

Every tensor is then looked up by name, never by position. to-dtnn takes each key of ARCH's
state_dict from the input state_dict and refuses, naming every one, keys that are missing,
keys ARCH does not have (its num_batches_tracked and auxiliary classifiers may be present or
not), tensors of another shape and tensors that are not floating point (they are converted to
float32). to-torch takes each dtnn tensor by name from the checkpoint and refuses what
`dtnn-run --init-from` refuses: missing tensors, tensors of another type, and tensors that are
neither the model's nor its optimizer state (NAME.momentum, NAME.adam_m, ...).

Inputs are not trusted. --state-dict must be what torch.save writes (a zip archive, PyTorch 1.6
or later); it is unpickled with torch.load(weights_only=True), which builds tensors and plain
containers and nothing else, so loading it runs no code of the file. Legacy (pre-1.6) files and
TorchScript archives, which torch.load would hand to torch.jit.load, are refused before loading.
The result must be a dict of str to dense tensors, with no key set twice in the pickle; a dict
wrapping one (such as {'state_dict': ...}) is refused, not searched. A checkpoint is validated
rule for rule as dtnn's reader validates it (dtnn_safetensors.py). The model file is compiled,
never written.

Outputs never replace an input: an output that is (after symlinks, `..` and hard links) the
model, the state_dict, the checkpoint or dtnnc, or any .dtnn file (so also the files a model
imports), is refused, as is one that exists and is not a regular file. An output is written to
a temporary file in its folder, synced, and renamed over the name, so it is either the old file
or the whole new one; a symlink at the output's name is replaced, never written through.

Errors are one line, `torchvision_weights.py: error: FILE: problem`, with exit status 1; usage
errors exit with 2.
"""
import argparse
import inspect
import os
import pickletools
import re
import stat
import subprocess
import sys
import warnings

import dtnn_safetensors

PROG = "torchvision_weights.py"
# The auxiliary classifiers of GoogLeNet and Inception-v3, which only their training uses.
AUXILIARY = ("aux1", "aux2", "AuxLogits")
# dtnn's last name part and the state_dict's that it pairs with; any other part (a `param`'s
# name, as class_token or in_proj_weight) pairs with the same name.
KINDS = {"weight": "weight", "bias": "bias", "gamma": "weight", "beta": "bias",
         "running_mean": "running_mean", "running_var": "running_var"}
# How many problems one message names.
SHOWN = 10


class ConvertError(Exception):
    """A refused input or a failed step: the file it concerns (or None) and why."""

    def __init__(self, path, message):
        super().__init__(message)
        self.path = path

    def line(self):
        """The message as one line: control characters (in a path, or a tensor name from a
        file) are written as escapes."""
        where = f"{self.path}: " if self.path is not None else ""
        text = f"{where}{self}"
        return f"{PROG}: error: " + "".join(
            c if " " <= c != "\x7f" else repr(c)[1:-1] for c in text)


def fail(path, message):
    raise ConvertError(path, message)


def first_line(error):
    """The first line of an exception's text, for a one-line message."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def problem_list(problems):
    text = "; ".join(problems[:SHOWN])
    return text + (f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else "")


#===------------------------------------------------------------------------===#
# Paths
#===------------------------------------------------------------------------===#

def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path, inputs):
    """Refuses an output path that is one of inputs ((path, what it is) pairs), a .dtnn file,
    not a regular file, or in a folder that does not exist."""
    real = os.path.realpath(path)
    for other, what in inputs:
        if other is not None and (real == os.path.realpath(other) or same_file(path, other)):
            fail(path, f"is {what} ({other}); an output never replaces an input")
    if real.endswith(".dtnn"):
        fail(path, "is a .dtnn file; models and the files they import are inputs, not outputs")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        fail(path, "cannot stat: " + os.strerror(e.errno))
    if mode is not None and not stat.S_ISREG(mode):
        fail(path, "not a regular file, so it is not replaced")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        fail(path, f"the folder '{folder}' does not exist")


def write_atomically(path, write):
    """Writes path with write(binary stream) through a temporary file in its folder that is
    synced and renamed over it (ir/Output.cpp's recipe); an existing file keeps its
    permissions. On failure path is as it was and the temporary file is removed."""
    folder, base = os.path.dirname(path) or ".", os.path.basename(path)
    try:
        old = os.stat(path)
    except FileNotFoundError:
        old = None
    temporary, fd = None, -1
    for attempt in range(100):
        name = os.path.join(folder, f".{base[:64]}.tmp.{os.getpid()}.{attempt}")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            temporary = name
            break
        except FileExistsError:
            continue
        except OSError as e:
            fail(path, f"cannot create a temporary file in '{folder}': {os.strerror(e.errno)}")
    if temporary is None:
        fail(path, f"cannot create a temporary file in '{folder}'")
    try:
        if old is not None:
            os.fchmod(fd, stat.S_IMODE(old.st_mode))
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        temporary = None
    except OSError as e:
        fail(path, "write failed: " + (os.strerror(e.errno) if e.errno else first_line(e)))
    finally:
        if temporary is not None:
            os.unlink(temporary)
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as e:
        if e.errno != getattr(os, "EINVAL", 22):
            fail(path, f"written, but syncing folder '{folder}' failed: {os.strerror(e.errno)}")


#===------------------------------------------------------------------------===#
# The dtnn side
#===------------------------------------------------------------------------===#

DECLARATION = re.compile(r"\s*(?:param|buffer) @(\S+) : ([a-z0-9]+)\[([0-9,]*)\]")


def dtnn_tensors(model, dtnnc):
    """The (name, dtype, shape) of every parameter and buffer of model, in declaration order."""
    try:
        dtnn_safetensors.open_regular_file(model)[0].close()
    except dtnn_safetensors.ReadError as e:
        fail(model, str(e))
    try:
        done = subprocess.run([dtnnc, "compile", model, "--no-fuse"], capture_output=True,
                              text=True, errors="replace")
    except OSError as e:
        fail(dtnnc, "cannot run it: " + (os.strerror(e.errno) if e.errno else first_line(e)))
    if done.returncode != 0:
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        reason = next((l for l in lines if "error" in l), lines[0] if lines else
                      f"exit status {done.returncode}")
        fail(model, "dtnnc cannot compile it: " + reason)
    out = []
    for line in done.stdout.splitlines():
        m = DECLARATION.match(line)
        if m:
            dims = [int(d) for d in m.group(3).split(",")] if m.group(3) else []
            out.append((m.group(1), m.group(2), dims))
    if not out:
        fail(model, "declares no parameters or buffers")
    return out


def read_checkpoint(path, declared):
    """The tensors of the checkpoint path by dtnn name, validated as `dtnn-run --init-from`
    validates them (runtime/train/TrainState.cpp's loadWeights): every declared tensor present with
    the model's type, nothing else but optimizer state named after one."""
    try:
        _, tensors = dtnn_safetensors.read(path)
    except dtnn_safetensors.ReadError as e:
        fail(path, str(e))
    types = {name: dtype + dtnn_safetensors.dims_str(shape) for name, dtype, shape in declared}
    problems = []
    for name in sorted(types):
        t = tensors.get(name)
        if t is None:
            problems.append(f"'{name}' is missing (the model's is {types[name]})")
        elif t.type_str() != types[name]:
            problems.append(f"'{name}' is {t.type_str()}, the model's {types[name]}")
    for name in sorted(tensors):
        if name not in types and name.rpartition(".")[0] not in types:
            problems.append(f"'{name}' ({tensors[name].type_str()}) is not a tensor of the model")
    if problems:
        fail(path, "cannot take the model's weights from it: " + problem_list(problems))
    return tensors


#===------------------------------------------------------------------------===#
# The torchvision side
#===------------------------------------------------------------------------===#

def import_torch():
    try:
        import torch
        import torchvision
    except ImportError as e:
        fail(None, f"needs PyTorch and torchvision (Debian: python3-torchvision): {e}")
    if "weights_only" not in inspect.signature(torch.load).parameters:
        fail(None, f"needs PyTorch 1.13 or later (torch.load's weights_only); this is "
             f"{torch.__version__}")
    return torch, torchvision


def torchvision_builder(torchvision, arch):
    builder = getattr(torchvision.models, arch, None)
    if (arch.startswith("_") or not inspect.isfunction(builder)
            or "weights" not in inspect.signature(builder).parameters):
        fail(None, f"torchvision has no model '{arch}'")
    return builder


def build(builder, arch, weights, auxiliary):
    """torchvision's arch with weights (None: fresh), with its auxiliary classifiers or not."""
    extra = {} if auxiliary or arch not in ("googlenet", "inception_v3") else {"aux_logits": False}
    with warnings.catch_warnings():
        # GoogLeNet and Inception-v3 warn that their default initialization will change.
        warnings.simplefilter("ignore")
        return builder(weights=weights, **extra)


def ignored(key):
    """Whether a state_dict key has no dtnn tensor: num_batches_tracked, auxiliary classifiers."""
    return key.rsplit(".", 1)[-1] == "num_batches_tracked" or key.split(".")[0] in AUXILIARY


def pair(model, dtnn, arch, reference):
    """Pairs the dtnn tensors with the keys of arch's reference state_dict, in order, checking
    shape and kind; returns (dtnn name, key) pairs."""
    keys = [k for k in reference if not ignored(k)]
    if len(keys) != len(dtnn):
        fail(model, f"declares {len(dtnn)} tensors, torchvision's {arch} {len(keys)} "
             "(without num_batches_tracked)")
    pairs = []
    for (name, dtype, shape), key in zip(dtnn, keys):
        last = name.rsplit(".", 1)[-1]
        kind = KINDS.get(last, last)
        if kind != key.rsplit(".", 1)[-1] or list(reference[key].shape) != shape:
            fail(model, f"'{name}' {shape} does not pair with {arch}'s '{key}' "
                 f"{list(reference[key].shape)}: the models differ, or declare their layers in "
                 "another order")
        if dtype != "f32":
            fail(model, f"'{name}' is {dtype}; torchvision's weights convert to f32 tensors")
        pairs.append((name, key))
    return pairs


# Opcodes that change the object below their arguments and leave it on the stack.
KEEPS_TARGET = {"BUILD", "APPEND", "APPENDS", "ADDITEMS", "SETITEM", "SETITEMS"}


class _Object:
    """An object of a pickle whose string keys are followed."""

    def __init__(self):
        self.keys, self.duplicate = set(), None

    def set_keys(self, keys):
        for k in keys:
            if isinstance(k, str):
                if k in self.keys and self.duplicate is None:
                    self.duplicate = k
                self.keys.add(k)


def duplicate_key(data):
    """The first key that the pickle data sets twice in the object it returns, or None (a dict
    keeps the last value of a key, silently). It reads the opcodes only, building nothing."""
    stack, memo, mark = [], {}, object()

    def pop_to_mark():
        i = len(stack) - 1
        while stack[i] is not mark:
            i -= 1
        items = stack[i + 1:]
        del stack[i:]
        return items

    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            memo[arg if name != "MEMOIZE" else len(memo)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
        elif name == "DUP":
            stack.append(stack[-1])
        elif name == "STOP":
            result = stack.pop()
            return result.duplicate if isinstance(result, _Object) else None
        elif pickletools.markobject in op.stack_before:
            items = pop_to_mark()
            for _ in range(op.stack_before.index(pickletools.markobject) - (name in KEEPS_TARGET)):
                stack.pop()
            if name == "SETITEMS":
                stack[-1].set_keys(items[0::2])
            elif name == "DICT":
                stack.append(_Object())
                stack[-1].set_keys(items[0::2])
            elif name not in KEEPS_TARGET:
                stack.extend(_Object() for _ in op.stack_after)
        else:
            args = [stack.pop() for _ in op.stack_before[name in KEEPS_TARGET:]][::-1]
            if name == "SETITEM":
                stack[-1].set_keys(args[:1])
            elif name == "MARK":
                stack.append(mark)
            elif name not in KEEPS_TARGET:
                stack.extend(arg if isinstance(arg, str) else _Object() for _ in op.stack_after)
    return None


def load_state_dict(torch, path):
    """The state_dict of path, loaded without running any code of the file: a dict of str to
    dense tensors."""
    try:
        f, _ = dtnn_safetensors.open_regular_file(path)
    except dtnn_safetensors.ReadError as e:
        fail(path, str(e))
    with f:
        if f.read(4) != b"PK\x03\x04":
            fail(path, "is not a state_dict saved by torch.save (the zip archive of PyTorch 1.6 "
                 "or later; older formats are not read)")
        f.seek(0)
        try:
            records = torch._C.PyTorchFileReader(f)
            names = records.get_all_records()
            data = records.get_record("data.pkl") if "data.pkl" in names else None
        except RuntimeError as e:
            fail(path, "is not a readable zip archive: " + first_line(e))
        if "constants.pkl" in names or any(n.startswith("code/") for n in names):
            fail(path, "is a TorchScript archive, not a state_dict; it is not loaded, as that "
                 "could run its code")
        if data is None:
            fail(path, "is a zip archive without data.pkl, not a state_dict saved by torch.save")
        f.seek(0)
        try:
            state = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as e:  # Whatever torch.load raises, the file is not a state_dict.
            reason = str(e).rsplit("WeightsUnpickler error: ", 1)[-1]
            fail(path, "torch.load(weights_only=True) refuses it: " + first_line(reason))
    if not isinstance(state, dict):
        fail(path, f"holds a {type(state).__name__}, not a state_dict (a dict of names to tensors)")
    for key, value in state.items():
        if not isinstance(key, str):
            fail(path, f"has the key {key!r} of type {type(key).__name__}; keys are strings")
        if not isinstance(value, torch.Tensor):
            fail(path, f"'{key}' holds a {type(value).__name__}, not a tensor")
        if value.layout != torch.strided or value.is_quantized:
            fail(path, f"'{key}' is not a dense tensor ({value.layout}"
                 f"{', quantized' if value.is_quantized else ''})")
    try:
        duplicate = duplicate_key(data)
    except (ValueError, IndexError, KeyError, AttributeError) as e:
        fail(path, "cannot read its pickle for duplicate keys: " + first_line(e))
    if duplicate is not None:
        fail(path, f"sets the key '{duplicate}' twice")
    return state


def take_by_name(torch, source, state, pairs, reference, arch):
    """The float32 array of each dtnn tensor, taken by name from state; refuses missing, extra,
    misshapen and non-floating-point entries, naming them."""
    problems, wanted = [], {key for _, key in pairs}
    for _, key in pairs:
        want = list(reference[key].shape)
        if key not in state:
            problems.append(f"'{key}' is missing ({arch}'s is {want})")
        elif not state[key].is_floating_point():
            problems.append(f"'{key}' is {state[key].dtype}, not floating point")
        elif list(state[key].shape) != want:
            problems.append(f"'{key}' is {list(state[key].shape)}, {arch}'s {want}")
    for key in state:
        if key not in wanted and not (key in reference and ignored(key)):
            problems.append(f"'{key}' is not in {arch}'s state_dict")
    if problems:
        fail(source, f"cannot take {arch}'s weights from it: " + problem_list(problems))
    return [(name, state[key].detach().to(torch.float32).contiguous().numpy())
            for name, key in pairs]


#===------------------------------------------------------------------------===#
# Driver
#===------------------------------------------------------------------------===#

def to_dtnn(args, dtnn):
    torch, torchvision = import_torch()
    builder = torchvision_builder(torchvision, args.arch)
    if args.state_dict:
        state = load_state_dict(torch, args.state_dict)
        reference = build(builder, args.arch, None, auxiliary=True).state_dict()
        source = args.state_dict
    else:
        torch.manual_seed(args.seed)
        state = build(builder, args.arch, "DEFAULT" if args.pretrained else None,
                      auxiliary=True).state_dict()
        reference, source = state, None
    pairs = pair(args.model, dtnn, args.arch, reference)
    tensors = take_by_name(torch, source, state, pairs, reference, args.arch)
    metadata = {"converted_from": "torchvision " + args.arch}
    write_atomically(args.files[0], lambda f: dtnn_safetensors.write(f, tensors, metadata))


def to_torch(args, dtnn):
    weights = read_checkpoint(args.files[0], dtnn)
    torch, torchvision = import_torch()
    builder = torchvision_builder(torchvision, args.arch)
    reference = build(builder, args.arch, None, auxiliary=False).state_dict()
    names = {key: name for name, key in pair(args.model, dtnn, args.arch, reference)}
    state = type(reference)()
    for key, value in reference.items():
        if key in names:
            array = weights[names[key]].array().copy()
            state[key] = torch.from_numpy(array).to(value.dtype)
        else:
            state[key] = value
    write_atomically(args.files[1], lambda f: torch.save(state, f))


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("direction", choices=["to-dtnn", "to-torch"])
    parser.add_argument("arch")
    parser.add_argument("model")
    parser.add_argument("files", nargs="+")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--state-dict")
    source.add_argument("--pretrained", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtnnc", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                        "bin", "dtnnc"))
    args = parser.parse_args(argv)
    if args.direction == "to-dtnn" and len(args.files) != 1:
        parser.error("to-dtnn takes one output file")
    if args.direction == "to-torch":
        if len(args.files) != 2:
            parser.error("to-torch takes an input and an output file")
        if args.state_dict or args.pretrained:
            parser.error("--state-dict and --pretrained are for to-dtnn")
    return args


def run(args):
    inputs = [(args.model, "the model"), (args.dtnnc, "dtnnc"),
              (args.state_dict, "the state_dict")]
    if args.direction == "to-torch":
        inputs.append((args.files[0], "the checkpoint"))
    check_output(args.files[-1], inputs)
    dtnn = dtnn_tensors(args.model, args.dtnnc)
    (to_dtnn if args.direction == "to-dtnn" else to_torch)(args, dtnn)


def main(argv):
    args = parse_args(argv)
    try:
        run(args)
        return 0
    except ConvertError as e:
        message = e.line()
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else first_line(e)
        message = ConvertError(e.filename, reason).line()
    except MemoryError:
        message = f"{PROG}: error: out of memory"
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    sys.stderr.write(message + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
