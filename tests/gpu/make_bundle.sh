#!/usr/bin/env bash
# Packs what a GPU machine without our Debian packages needs to run the report and the
# experiment: the tools built MPI=0 against one shared engine library (build-bundle/tree, a mirror
# of the sources), stripped; the shared libraries the machine lacks; the data they read; the
# scripts. Then checks that every binary starts with only the bundle's libraries on its path
# (tests/gpu/check_bundle.sh). Usage: tests/gpu/make_bundle.sh BUNDLE_DIR
# CUDA's own libraries (cudart, cuBLAS, cuDNN, NCCL) are left out: the GPU machine has them.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: make_bundle.sh BUNDLE_DIR}
tree=build-bundle/tree
tests/mirror_tree.sh build-bundle
echo "gpu-bundle: building MPI=0 SHARED=1 in $tree (log: build-bundle/build.log)"
make -C "$tree" -j"$(nproc)" MPI=0 SHARED=1 all > build-bundle/build.log 2>&1 ||
  { tail -30 build-bundle/build.log; echo "gpu-bundle: the build failed" >&2; exit 1; }
data=${SHARED_DATA:-../shared/data}
rm -rf "$out" && mkdir -p "$out/stage/bin" "$out/stage/lib" "$out/stage/data"
bins=()
for b in "$tree"/bin/*; do [ -x "$b" ] && [ "${b%.so}" = "$b" ] && bins+=("$b"); done
for b in "${bins[@]}"; do strip -o "$out/stage/bin/$(basename "$b")" "$b"; done
cp "$tree/bin/fault_inject.so" "$out/stage/bin/"
strip --strip-unneeded -o "$out/stage/lib/libsensealign.so" "$tree/build/libsensealign.so"
# The libraries the binaries load, less glibc, the compiler's runtime (the GPU machine's is
# newer) and CUDA's.
skip='linux-vdso|/libc\.so|ld-linux|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|/libresolv\.so|libstdc\+\+|libgcc_s|libcuda|libcublas|libcudnn|libnccl|libsensealign'
# gperftools' CPU profiler is opened at run time by `bench train --profile` (ldd does not list it).
make -s deps DEB_PACKAGES=libgoogle-perftools4 > /dev/null
profiler=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null)
[ -n "$profiler" ] && cp -L "$profiler" "$out/stage/lib/"
for b in "${bins[@]}" "$tree/build/libsensealign.so" $profiler; do LD_LIBRARY_PATH="$tree/build" ldd "$b"; done |
  awk '/=> \//{print $3}' | sort -u | grep -Ev "$skip" | while read -r lib; do cp -L "$lib" "$out/stage/lib/"; done
# Data: what the tests, the report and the experiment read (a subset of shared/data).
if [ -d "$data" ]; then
  mkdir -p "$out/stage/data/corpus" "$out/stage/data/wsd"
  cp -r "$data/fixtures" "$out/stage/data/"
  cp "$data"/corpus/{brown.txt,lm1b-heldout-dev.txt,wiki-de.txt} "$out/stage/data/corpus/"
  cp "$data"/README.md "$out/stage/data/"
  [ -d "$data/wsd/eval" ] && cp -r "$data/wsd/eval" "$out/stage/data/wsd/"
  # SemCor converted here (the GPU machine has no WordNet package), and WordNet's sense index.
  mkdir -p build-bundle/semcor
  [ -f build-bundle/semcor/semcor.data.xml ] ||
    (cd "$tree" && ./bin/wsd_eval convert-semcor "../shared/data/wsd/semcor3.0" -o ../semcor/semcor.data.xml)
  cp build-bundle/semcor/semcor.{data.xml,gold.key.txt} "$out/stage/data/wsd/"
fi
mkdir -p "$out/stage/data/wordnet" && cp /usr/share/wordnet/index.sense "$out/stage/data/wordnet/"
tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$out/stage"
cp tests/gpu/run_on_gpu.sh tests/gpu/check_bundle.sh "$out/"
du -sh "$out"/*
tests/gpu/check_bundle.sh "$out"
