# lit configuration of dtnn's FileCheck tests. The build writes lit.site.cfg.py, which sets the
# paths used here and then loads this file.
import os

import lit.formats

config.name = "dtnn"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".dtnn", ".dtir", ".test"]

# Inputs folders hold files that tests read, never tests; unit and fuzz are run by ctest directly.
config.excludes = [
    "Inputs",
    "fuzz",
    "unit",
    "CMakeLists.txt",
    "lit.cfg.py",
    "lit.site.cfg.py",
]

examples_dir = os.path.join(config.dtnn_src_root, "examples")
lit_inputs_dir = os.path.join(config.test_source_root, "lit", "Inputs")

# lit applies substitutions in order, so a name that is a prefix of another must come later.
config.substitutions.append(("%dtnn_tools_dir", config.dtnn_tools_dir))
config.substitutions.append(("%onnx_data", "/usr/include/onnx/backend/test/data"))
config.substitutions.append(("%dtnn_run", os.path.join(config.dtnn_tools_dir, "dtnn-run")))
config.substitutions.append(("%dtnnc", os.path.join(config.dtnn_tools_dir, "dtnnc")))
config.substitutions.append(("%dtnn_sim", os.path.join(config.dtnn_tools_dir, "dtnn-sim")))
config.substitutions.append(("%dtnn_plot", os.path.join(config.dtnn_tools_dir, "dtnn-plot")))
config.substitutions.append(("%train_lenet", os.path.join(config.dtnn_tools_dir, "train_lenet")))
# test/extensions: dtnnc and dtnn-run with extensions registered from outside dtnn's sources.
config.substitutions.append(
    ("%dtnn_extensions", os.path.join(config.dtnn_tools_dir, "dtnn-extensions")))
# The example plugins (examples/plugins) and the test's plugin of another API version, as built.
config.substitutions.append(
    ("%plugins", os.path.join(config.dtnn_obj_root, "examples", "plugins")))
config.substitutions.append(
    ("%wrong_version_plugin", os.path.join(config.dtnn_obj_root, "test", "extensions", "wrong_version.so")))
config.substitutions.append(
    ("%expect_exit", config.python_executable + " " + os.path.join(lit_inputs_dir, "expect_exit.py"))
)
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%examples", examples_dir))
config.substitutions.append(("%bench", os.path.join(config.dtnn_src_root, "bench")))
config.substitutions.append(("%lit_inputs", lit_inputs_dir))

# A small, fixed environment so that results do not depend on the caller's locale or settings.
config.environment["LC_ALL"] = "C"
config.environment["LANG"] = "C"
config.environment["TZ"] = "UTC"
config.environment["PYTHONHASHSEED"] = "0"
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
# The jit's kernel cache of the runs the tests make, in the build tree rather than the user's.
config.environment["DTNN_JIT_CACHE"] = os.path.join(config.test_exec_root, "jit-cache")

# FileCheck, not and count come from LLVM; the build's own tools come first.
config.environment["PATH"] = os.pathsep.join(
    [config.dtnn_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)

if os.path.exists(os.path.join(config.dtnn_tools_dir, "dtnn-run")):
    config.available_features.add("dtnn-run")

# A build with the jit backend: its code generator lies beside libdtnn.
if os.path.exists(os.path.join(os.path.dirname(config.dtnn_tools_dir), "lib", "libdtnn-jit.so")):
    config.available_features.add("jit")

# A build with the cuda backend: its device module lies beside libdtnn. Its tests plan for the
# device and compile generated kernels (NVRTC); none of them needs a GPU.
if os.path.exists(os.path.join(os.path.dirname(config.dtnn_tools_dir), "lib", "libdtnn-cuda.so")):
    config.available_features.add("cuda")

# The CPU's vector ISA, from the kernel's flags: bf16 runs on oneDNN need AVX-512 (avx512), and
# run natively with AVX512-BF16 (avx512-bf16).
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    flags = []
if all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
    config.available_features.add("avx512")
    if "avx512_bf16" in flags:
        config.available_features.add("avx512-bf16")

# Tests that keep one CPU busy and let dtnn use the others.
if len(os.sched_getaffinity(0)) >= 2:
    config.available_features.add("two-cpus")

# Multi-rank runs: Open MPI's launcher on this machine only, over shared memory (never the
# network), as root if need be, and with more ranks than cores when a test asks for them.
import shutil

mpirun = shutil.which("mpirun")
if mpirun:
    config.available_features.add("mpi")
    config.substitutions.insert(
        0,
        ("%mpirun", mpirun + " --oversubscribe --mca btl self,vader --bind-to none"),
    )
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # Open MPI keeps its session files under TMPDIR; lit may leave it unset.
    config.environment["TMPDIR"] = os.environ.get("TMPDIR", "/tmp")
# An emulated cluster (tools/netns-cluster.sh): network namespaces joined by shaped links, which
# need root (or the capabilities to make namespaces) and iproute2; probed by making one.
import subprocess

if mpirun and all(shutil.which(t) for t in ("ip", "tc", "unshare")):
    probe = "dtnn-probe-%d" % os.getpid()
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        config.available_features.add("netns")
config.substitutions.append(
    ("%netns_cluster", os.path.join(config.dtnn_src_root, "tools", "netns-cluster.sh")))
# For scripts whose multi-rank checks are optional: the launcher, or nothing.
config.substitutions.insert(
    0, ("%mpirun_or_nothing", mpirun + " --oversubscribe --mca btl self,vader --bind-to none" if mpirun else ""))
config.substitutions.append(
    ("%check_layers",
     config.python_executable + " " + os.path.join(config.test_source_root, "tools", "check_layers.py"))
)
config.substitutions.append(("%dtnn_src_root", config.dtnn_src_root))
config.substitutions.append(("%dtnn_obj_root", config.dtnn_obj_root))
config.substitutions.append(
    ("%compare_checkpoints",
     config.python_executable + " " + os.path.join(config.test_source_root, "tools", "compare_checkpoints.py"))
)
