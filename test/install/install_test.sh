#!/bin/sh
# Installs dtnn from the build tree BUILD into a temporary prefix, then builds and runs programs
# against it from a folder outside the source tree: test/install (CMake, find_package(dtnn)) and
# the same source with pkg-config. Prints what the programs print; exits non-zero on any failure.
# Usage: install_test.sh BUILD SOURCE_DIR
set -eu
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
echo "installed: $(cd "$work/prefix" && ls lib/libdtnn.so* lib/cmake/dtnn lib/pkgconfig include/dtnn/*.h bin | tr '\n' ' ')"

# The program's sources, copied out of the tree: nothing of the build tree or the sources is on
# any path it is built with.
mkdir "$work/app"
cp "$src/CMakeLists.txt" "$src/use_dtnn.cpp" "$work/app/"
mkdir "$work/app/extensions"
(cd "$src/../extensions" && cp Extensions.h Main.cpp Square.cpp "$work/app/extensions/")
cmake -S "$work/app" -B "$work/app/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/app/build" > "$work/build.log"
# It loads the installed libdtnn, not the build tree's.
unset LD_LIBRARY_PATH
echo "cmake: built use_dtnn, linked with $(ldd "$work/app/build/use_dtnn" | grep -o 'libdtnn[^ ]* => [^ ]*' | sed "s|$work/prefix|PREFIX|")"
"$work/app/build/use_dtnn" ops > "$work/use_dtnn.out"
grep -v "^param\|^buffer\|^  %" "$work/use_dtnn.out" | head -n 18

# The example plugins, built on their own against the installed library (their folder copied
# out of the tree), with the test's plugin of another API version beside them.
cp -r "$src/../../examples/plugins" "$work/plugins"
cp "$src/../extensions/WrongVersion.cpp" "$work/plugins/"
printf 'add_library(wrong_version MODULE WrongVersion.cpp)\ntarget_link_libraries(wrong_version PRIVATE dtnn::dtnn)\nset_target_properties(wrong_version PROPERTIES PREFIX "")\n' >> "$work/plugins/CMakeLists.txt"
cmake -S "$work/plugins" -B "$work/plugins/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/plugins-configure.log"
cmake --build "$work/plugins/build" > "$work/plugins-build.log"
p="$work/plugins/build"
bin="$work/prefix/bin"
echo "plugins: $(cd "$p" && ls *.so | tr '\n' ' ')linked with $(ldd "$p/mish.so" | grep -o 'libdtnn[^ ]* => [^ ]*' | sed "s|$work/prefix|PREFIX|")"
# The installed programs load them: the activation's gradient checked, LeNet trained with it for
# an epoch, the pass run from --passes=, the optimizer and the data source in a run; the plugin
# of another API version is refused.
"$bin/dtnnc" gradcheck mish --plugin "$p/mish.so"
"$bin/dtnn-run" "$work/plugins/lenet_mish.dtnn" --plugin "$p/mish.so" --epochs 1 --no-progress
"$bin/dtnnc" compile "$work/plugins/lenet_mish.dtnn" --plugin "$p/mish.so" --plugin "$p/op_stats.so" \
  --passes=op-stats 2>&1 >/dev/null | head -n 1
printf 'model Blobs(x: f32[N, 1, 8, 8]) -> f32[N, 3] {\n  return x |> flatten |> dense(16) |> mish |> dense(3)\n}\ntrain Blobs {\n  data = toy_blobs()\n  optimizer = signsgd(lr=0.01)\n  loss = softmax_cross_entropy\n  batch = 30\n}\n' > "$work/blobs.dtnn"
DTNN_PLUGINS="$p/mish.so:$p/sign_sgd.so:$p/toy_blobs.so" "$bin/dtnn-run" "$work/blobs.dtnn" --threads 1 --epochs 2 | grep -v '^ *$'
if "$bin/dtnnc" ops --plugin "$p/wrong_version.so" > /dev/null 2> "$work/wrong.txt"; then
  echo "the plugin of another API version was loaded"; exit 1
fi
sed "s|$p/||" "$work/wrong.txt"

# The C++ API's example, built on its own against the installed library: its model, written with
# C++ calls, compiles as examples/lenet.dtnn does.
cp -r "$src/../../examples/cpp" "$work/cpp"
cmake -S "$work/cpp" -B "$work/cpp/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cpp-configure.log"
cmake --build "$work/cpp/build" > "$work/cpp-build.log"
"$work/cpp/build/train_lenet" --print-model | sed 's/ loc([^)]*)//' > "$work/api.ir"
"$bin/dtnnc" compile "$src/../../examples/lenet.dtnn" | sed 's/ loc([^)]*)//' > "$work/file.ir"
echo "cpp: train_lenet built, linked with $(ldd "$work/cpp/build/train_lenet" | grep -o 'libdtnn[^ ]* => [^ ]*' | sed "s|$work/prefix|PREFIX|"); model $(cmp -s "$work/api.ir" "$work/file.ir" && echo same as || echo differs from) examples/lenet.dtnn"

# The program that links libdtnn with its own op, built against the installed library: it
# compiles a model that uses its op.
ext="$work/app/build/dtnn-extensions"
echo "extensions: linked with $(ldd "$ext" | grep -o 'libdtnn[^ ]* => [^ ]*' | sed "s|$work/prefix|PREFIX|")"
"$ext" dtnnc compile "$src/../lit/extensions/Inputs/square.dtnn" --plugin "$p/sign_sgd.so" \
  --plugin "$p/toy_blobs.so" --plugin "$p/op_stats.so" --passes=op-stats > "$work/stats.txt" 2>&1
grep -m1 -i "square" "$work/stats.txt" | sed "s|$src/../lit/extensions/Inputs/||"

# pkg-config, for builds without CMake.
echo "pkg-config: dtnn $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --modversion dtnn)"
c++ -std=c++20 -o "$work/use_dtnn_pc" "$work/app/use_dtnn.cpp" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs dtnn) \
  -Wl,-rpath,"$work/prefix/lib"
echo "pkg-config: built use_dtnn"
"$work/use_dtnn_pc" > "$work/pc.out"
head -n 1 "$work/pc.out"

# The installed programs run from the prefix and find the installed standard library: a block
# added to the installed std/resnet.dtnn resolves.
printf 'block install_marker(x) {\n  return x |> relu\n}\n' >> "$work/prefix/share/dtnn/std/resnet.dtnn"
printf 'import "std/resnet.dtnn"\nmodel M(x: f32[N, 4]) -> f32[N, 4] {\n  return x |> install_marker\n}\n' > "$work/marker.dtnn"
"$work/prefix/bin/dtnnc" compile "$work/marker.dtnn" | grep relu | sed "s|$work/||"
"$work/prefix/bin/dtnnc" compile "$src/../../examples/resnet18.dtnn" > "$work/resnet18.dtir"
echo "installed dtnnc: $(ldd "$work/prefix/bin/dtnnc" | grep -o 'libdtnn[^ ]* => [^ ]*' | sed "s|$work/prefix|PREFIX|"); ResNet-18 compiled, $(grep -c "std/resnet.dtnn" "$work/resnet18.dtir") lines from std/resnet.dtnn"
