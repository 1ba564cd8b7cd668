#!/usr/bin/env bash
# Packs what a GPU machine without our Debian packages needs to run the report and the
# experiment: stripped binaries, the shared libraries it lacks, the data they read, and the
# scripts. Usage: tests/gpu/make_bundle.sh BUNDLE_DIR [binaries...]
# CUDA's own libraries (cudart, cuBLAS, cuDNN, NCCL) are left out: the GPU machine has them.
set -euo pipefail
out=${1:?usage: make_bundle.sh BUNDLE_DIR [binaries...]}
shift
bins=("$@")
# Every tool by default: the tests run them.
[ ${#bins[@]} -gt 0 ] || for b in bin/*; do [ -x "$b" ] && [ "${b%.so}" = "$b" ] && bins+=("${b#bin/}"); done
data=${SHARED_DATA:-../shared/data}
rm -rf "$out" && mkdir -p "$out/stage/bin" "$out/stage/lib" "$out/stage/data"
for b in "${bins[@]}"; do strip -o "$out/stage/bin/$b" "bin/$b"; done
cp bin/fault_inject.so "$out/stage/bin/"
# The libraries the binaries load, less glibc, the compiler's runtime (the GPU machine's is
# newer) and CUDA's.
skip='linux-vdso|/libc\.so|ld-linux|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|/libresolv\.so|libstdc\+\+|libgcc_s|libcuda|libcublas|libcudnn|libnccl'
for b in "${bins[@]}"; do ldd "bin/$b"; done | awk '/=> \//{print $3}' | sort -u | grep -Ev "$skip" |
  while read -r lib; do cp -L "$lib" "$out/stage/lib/"; done
# Data: what the tests, the report and the experiment read (a subset of shared/data).
if [ -d "$data" ]; then
  mkdir -p "$out/stage/data/corpus" "$out/stage/data/wsd"
  cp -r "$data/fixtures" "$out/stage/data/"
  cp "$data"/corpus/{brown.txt,lm1b-heldout-dev.txt,wiki-de.txt} "$out/stage/data/corpus/"
  cp "$data"/README.md "$out/stage/data/"
  [ -d "$data/wsd/eval" ] && cp -r "$data/wsd/eval" "$out/stage/data/wsd/"
  # SemCor converted here (the GPU machine has no WordNet package), and WordNet's sense index.
  [ -f build/semcor/semcor.data.xml ] || ./bin/wsd_eval convert-semcor "$data/wsd/semcor3.0" -o build/semcor/semcor.data.xml
  cp build/semcor/semcor.{data.xml,gold.key.txt} "$out/stage/data/wsd/"
fi
mkdir -p "$out/stage/data/wordnet" && cp /usr/share/wordnet/index.sense "$out/stage/data/wordnet/"
tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$out/stage"
cp tests/gpu/run_on_gpu.sh "$out/"
du -sh "$out"/*
