#!/usr/bin/env bash
# Copies this machine's Open MPI launcher (mpirun, orted), its components, help texts and the
# libraries they need into BUNDLE/openmpi and BUNDLE/lib, for a machine that has no MPI (the GPU
# machine), where
#   export OPAL_PREFIX=BUNDLE/openmpi PMIX_PREFIX=BUNDLE/openmpi/pmix2 \
#          PMIX_MCA_mca_base_component_path=BUNDLE/openmpi/pmix2/lib/pmix \
#          PATH=BUNDLE/openmpi/bin:$PATH LD_LIBRARY_PATH=BUNDLE/lib:...
# makes `mpirun` start ranks there (tools/cuda-check.sh does). Debian's layout: components in
# lib/x86_64-linux-gnu/openmpi/lib/openmpi3 under the prefix, PMIx's under pmix2/lib/pmix.
# Checked on a machine whose own Open MPI was hidden (bind mounts over its folders).
#
#   bash tools/openmpi-bundle.sh BUNDLE
set -euo pipefail
BUNDLE="$1"
ARCH=x86_64-linux-gnu
SRC=/usr/lib/$ARCH/openmpi/lib/openmpi3
[[ -d "$SRC" ]] || { echo "openmpi-bundle: no Open MPI components in $SRC" >&2; exit 1; }
O="$BUNDLE/openmpi"
mkdir -p "$O/bin" "$O/lib/$ARCH/openmpi/lib" "$O/share" "$O/pmix2/lib" "$BUNDLE/lib"
cp -L "$(command -v mpirun)" "$O/bin/mpirun"
cp -L "$(command -v orted)" "$O/bin/orted"
cp -rL "$SRC" "$O/lib/$ARCH/openmpi/lib/"
cp -rL /usr/share/openmpi "$O/share/"
[[ -d /usr/lib/$ARCH/pmix2/lib/pmix ]] && cp -rL /usr/lib/$ARCH/pmix2/lib/pmix "$O/pmix2/lib/"
[[ -d /usr/lib/$ARCH/pmix2/share ]] && cp -rL /usr/lib/$ARCH/pmix2/share "$O/pmix2/"
# Components for networks a single machine lacks (InfiniBand, OFI, UCX, PSM) and OpenSHMEM go:
# their libraries alone are larger than the rest.
fabric='lib(fabric|ucp|ucs|uct|ucm|ibverbs|rdmacm|psm|psm2|infinipath|efa|oshmem|mca_common_(ofi|ucx|verbs))[.]'
find "$O" -name '*.so' | while read -r f; do
  if ldd "$f" 2>/dev/null | awk '{print $1}' | grep -Eq "^$fabric"; then rm -f "$f"; fi
done
# What the launcher and every component link, but the C library's own.
system='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso)\.'
find "$O" -type f \( -name '*.so*' -o -path '*/bin/*' \) | while read -r f; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $system || -e "$BUNDLE/lib/$name" ]] && continue
  cp -L "$path" "$BUNDLE/lib/$name"
done
find "$O" "$BUNDLE/lib" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
du -sh "$O"
