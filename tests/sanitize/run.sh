#!/usr/bin/env bash
# make sanitize: the CPU code, the tools and the tests built with AddressSanitizer and UBSan, then
# the GoogleTest suite run with them. Any report fails: UBSan halts on the first finding, ASan on
# any memory error, LeakSanitizer on a leak at exit.
#
# The build lives in build-san/tree, a mirror of the sources (links) with its own build/ and bin/,
# so the tests run the sanitized tools as ./bin/NAME exactly as `make test` runs them here; ../shared
# is linked beside it. No CUDA (the sanitizers do not see device code), no MPI (OpenMPI's own
# allocations would drown the leak report; the data-parallel tests skip), no Python module.
# Arguments go to bin/tests (e.g. --gtest_filter=BadInput.*).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tree=build-san/tree
tests/mirror_tree.sh build-san
# clang, as the fuzzers: one sanitized build serves the suite and the fuzz driver (linked from the
# same objects), so code clang rejects fails here too. Line tables only (the Makefile's default
# -g1): reports keep file and line.
make -s deps DEB_PACKAGES="clang libclang-rt-14-dev libomp-dev" > build-san/deps.log 2>&1 ||
  { tail -20 build-san/deps.log; echo "sanitize: installing clang failed" >&2; exit 1; }
echo "sanitize: building in $tree with clang (log: build-san/build.log)"
# Coverage counters too (fuzzer-no-link): the fuzz driver needs them to fuzz at all.
make -C "$tree" -j"$(nproc)" CXX=clang++ CUDA=0 MPI=0 OPT="-O1 -march=x86-64-v3" \
  SANITIZE=fuzzer-no-link,address,undefined \
  all build/fuzz > build-san/build.log 2>&1 || { tail -40 build-san/build.log; echo "sanitize: the build failed" >&2; exit 1; }
# SAN_FUZZ_S=N: each fuzz target for N seconds over its seeds and kept regressions after the suite.
fuzz_s=${SAN_FUZZ_S:-0}
cd "$tree"
# The fault-injection tests preload bin/fault_inject.so (kill at a rename or write) into the tools:
# ASan must then accept a library loaded before its runtime. The shim only wraps rename/write and
# calls through, so ASan's interceptors still see every call.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
mkdir -p build/test-counts
suite=0
SA_COUNTS_FILE=${SA_COUNTS_FILE:-build/test-counts/gtest} ./bin/tests "$@" || suite=$?
fuzz=0
if [ "$fuzz_s" != 0 ]; then
  cd "$root"
  FUZZ_S=$fuzz_s FUZZ_BIN=$tree/build/fuzz FUZZ_DIR=build-san/fuzz tests/fuzz/run.sh > build-san/fuzz.log 2>&1 || fuzz=$?
  echo "sanitize: fuzzed $(grep -c '^fuzz ' build-san/fuzz.log) targets ${fuzz_s} s each (build-san/fuzz.log)"
  [ $fuzz -eq 0 ] || { tail -30 build-san/fuzz.log; echo "sanitize: a fuzz target failed (build-san/fuzz.log)" >&2; }
fi
[ $suite -eq 0 ] && [ $fuzz -eq 0 ]
