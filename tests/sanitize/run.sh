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
# Line tables only (-g1): reports keep file and line; the build takes about a quarter less.
echo "sanitize: building in $tree (log: build-san/build.log)"
make -C "$tree" -j"$(nproc)" CUDA=0 MPI=0 OPT="-O1 -march=x86-64-v3" EXTRA_CXXFLAGS=-g1 SANITIZE=address,undefined all \
  > build-san/build.log 2>&1 || { tail -40 build-san/build.log; echo "sanitize: the build failed" >&2; exit 1; }
cd "$tree"
# The fault-injection tests preload bin/fault_inject.so (kill at a rename or write) into the tools:
# ASan must then accept a library loaded before its runtime. The shim only wraps rename/write and
# calls through, so ASan's interceptors still see every call.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
mkdir -p build/test-counts
SA_COUNTS_FILE=${SA_COUNTS_FILE:-build/test-counts/gtest} ./bin/tests "$@"
