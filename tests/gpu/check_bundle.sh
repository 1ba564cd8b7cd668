#!/usr/bin/env bash
# Checks a GPU bundle where it was made: unpacked alone, every binary must find each library in the
# bundle's lib/ or among what a CUDA machine has (glibc, the C++ runtime, CUDA's own libraries),
# and must start (--help; bin/tests lists its tests). Usage: tests/gpu/check_bundle.sh BUNDLE_DIR
set -uo pipefail
bundle=$(cd "${1:?bundle dir}" && pwd)
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
tar -C "$x" -xJf "$bundle/bundle.tar.xz" || { echo "check_bundle: cannot unpack $bundle/bundle.tar.xz"; exit 1; }
machine='linux-vdso|/libc\.so|ld-linux|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|/libresolv\.so|libstdc\+\+|libgcc_s|/libcuda\.so|libcudart|libcublas|libcudnn|libnccl'
# Only the bundle's folder and CUDA's on the library path; the binaries' run path ($ORIGIN/../lib)
# names the bundle's too.
path="$x/lib:/usr/local/cuda/lib64"
failed=0 n=0
for b in "$x"/bin/*; do
  [ -x "$b" ] && [ "${b%.so}" = "$b" ] || continue
  n=$((n + 1))
  name=$(basename "$b")
  # every library from the bundle or from the machine's allowed set
  outside=$(env -i LD_LIBRARY_PATH="$path" ldd "$b" | awk -v dir="$x/lib/" '
    /not found/ {print "  missing: " $1; next}
    /=> \// && index($3, dir) != 1 {print "  from outside the bundle: " $3}' | grep -Ev "$machine")
  if [ -n "$outside" ]; then echo "check_bundle: $name:"; echo "$outside"; failed=1; continue; fi
  args=--help
  [ "$name" = tests ] && args=--gtest_list_tests
  if ! log=$(cd "$x" && env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$path" "./bin/$name" $args 2>&1); then
    echo "check_bundle: $name $args failed:"; echo "$log" | tail -5; failed=1
  fi
done
[ "$n" -gt 0 ] || { echo "check_bundle: no binaries in the bundle"; exit 1; }
if [ "$failed" = 0 ]; then echo "check_bundle: all $n binaries start with only the bundle's libraries (and CUDA's)"; fi
exit "$failed"
