#!/usr/bin/env bash
# make fuzz [FUZZ_S=60] [FUZZ_TARGETS="vocab corpus"]: builds build-fuzz/fuzz (the readers with
# clang's libFuzzer, ASan and UBSan) and fuzzes each target FUZZ_S seconds, one after another.
# Seeds: tests/fuzz/seeds/NAME and the kept regressions tests/fuzz/regressions/NAME; what the
# fuzzer finds grows build-fuzz/corpus/NAME. A crash, leak, timeout or sanitizer report is written to
# build-fuzz/findings/NAME/ and fails the run: fix it, and copy the input into
# tests/fuzz/regressions/NAME/ so that `make test` keeps it. build-fuzz/totals.tsv adds up every
# sitting (seconds, executions, findings per target).
# FUZZ_BIN=PATH FUZZ_DIR=DIR: fuzz with a driver built elsewhere (tests/sanitize/run.sh links it
# from the sanitized build's objects, which carry coverage counters too), keeping corpora and
# findings under DIR.
set -uo pipefail
cd "$(dirname "$0")/../.."
FUZZ_S=${FUZZ_S:-60}
dir=${FUZZ_DIR:-build-fuzz}
bin=${FUZZ_BIN:-}
mkdir -p "$dir"
if [ -z "$bin" ]; then
  bin=build-fuzz/fuzz
  echo "fuzz: building $bin (log: build-fuzz/build.log)"
  make -j"$(nproc)" BUILD=build-fuzz CXX=clang++ CUDA=0 MPI=0 SHARED=0 OPT="-O1 -march=x86-64-v3" \
    SANITIZE=fuzzer-no-link,address,undefined build-fuzz/fuzz > build-fuzz/build.log 2>&1 ||
    { tail -40 build-fuzz/build.log; echo "fuzz: the build failed" >&2; exit 1; }
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(SA_FUZZ_TARGET=? $bin 2>&1 | sed -n 's/^SA_FUZZ_TARGET must name one of: //p' | tr ' ' '\n')
fi
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0"
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t" "$dir/findings/$t" "$dir/logs" "tests/fuzz/seeds/$t" "tests/fuzz/regressions/$t"
  log="$dir/logs/$t.log"
  # -rss_limit_mb: a reader that allocates beyond the file's size shows as an out-of-memory finding.
  # libhdf5 (not ours, not instrumented) mallocs sizes from the file's metadata and handles a
  # failed malloc: for that target malloc may fail as it can outside ASan (a C++ `new` of ours that
  # cannot be served is still reported), and only memory actually used counts.
  # It also crashes inside itself on some damaged files (tests/fuzz/library-crashes/hdf5/): that
  # target runs in fork mode, going on after a crash, whose input still lands in findings/.
  extra=() asan=$ASAN_OPTIONS
  if [ "$t" = hdf5 ]; then
    extra=(-malloc_limit_mb=1048576 -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
    asan="$ASAN_OPTIONS:allocator_may_return_null=1"
  fi
  touch $dir/.sitting  # findings are counted from here: earlier ones stay, fixed or not
  start=$SECONDS
  ASAN_OPTIONS=$asan SA_FUZZ_TARGET=$t $bin -max_total_time="$FUZZ_S" -timeout=10 -rss_limit_mb=2048 -max_len=65536 "${extra[@]}" \
    -print_final_stats=1 -artifact_prefix="$dir/findings/$t/" \
    "$dir/corpus/$t" "tests/fuzz/seeds/$t" "tests/fuzz/regressions/$t" > "$log" 2>&1
  rc=$?
  took=$((SECONDS - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)  # fork mode: its last progress line
  secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ "$t" = hdf5 ]; then  # a finding whose first frame of real code is libhdf5's is the library's
    mkdir -p $dir/library-crashes/hdf5
    for f in $dir/findings/hdf5/*; do
      [ -f "$f" ] && [ "$f" -nt $dir/.sitting ] || continue
      # Rerun alone; the malloc limit makes an out-of-memory finding print its allocation's stack.
      top=$(ASAN_OPTIONS=$asan SA_FUZZ_TARGET=hdf5 $bin -timeout=10 -malloc_limit_mb=2048 -rss_limit_mb=2048 "$f" 2>&1 |
        grep -E '^ +#[0-9]+ ' | grep -vE '__interceptor_|__asan|__sanitizer|fuzzer::|sysdeps|libc\.so| in (malloc|calloc|realloc|free|operator new)' |
        head -1)
      case "$top" in *libhdf5*) mv "$f" $dir/library-crashes/hdf5/ ;; esac
    done
    echo "fuzz hdf5: $(find $dir/library-crashes/hdf5 -type f | wc -l) inputs crash inside libhdf5 ($dir/library-crashes/hdf5)"
  fi
  findings=$(find "$dir/findings/$t" -type f -newer $dir/.sitting | wc -l)
  printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$took" "${runs:-0}" "$findings" "$(date -u +%FT%TZ)" >> $dir/totals.tsv
  printf 'fuzz %-14s %5ss  %9s executions  %s/s  rc %s  findings %s\n' "$t" "$took" "${runs:-0}" "${secs:-0}" "$rc" "$findings"
  if [ "$rc" -ne 0 ] || [ "$findings" -gt 0 ]; then failed=1; grep -m3 -E "ERROR|SUMMARY|Test unit written" "$log"; fi
done
echo "fuzz: totals per target over every sitting ($dir/totals.tsv):"
awk -F'\t' '{s[$1]+=$2; r[$1]+=$3; f[$1]=$4} END {for (t in s) printf "  %-14s %6d s %12d executions\n", t, s[t], r[t]}' $dir/totals.tsv | sort
exit $failed
