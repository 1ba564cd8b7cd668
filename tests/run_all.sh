#!/usr/bin/env bash
# make test: the GoogleTest suites (bin/tests), then the Python module's pytest suite
# (tests/python), and one closing line "N passed, N failed, N skipped" over all, which CI reads.
# With CI set (.ci/run sets it) the GoogleTest suites run a second time under AddressSanitizer and
# UBSan (tests/sanitize/run.sh, what `make sanitize` runs), counted in the same line.
# The exit status is non-zero when any failed.
set -u
cd "$(dirname "$0")/.."
mkdir -p build/test-counts
rm -f build/test-counts/*
SA_COUNTS_FILE=build/test-counts/gtest ./bin/tests
gtest=$?
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python --junitxml=build/test-counts/pytest.xml
pytest=$?
reports=(build/test-counts/gtest build/test-counts/pytest.xml)
sanitized=0
if [ -n "${CI:-}" ]; then
  # ... and each fuzz target for a second, its driver linked from the same sanitized objects.
  SAN_FUZZ_S=${SAN_FUZZ_S:-1} SA_COUNTS_FILE=$PWD/build/test-counts/gtest-sanitized tests/sanitize/run.sh
  sanitized=$?
  reports+=(build/test-counts/gtest-sanitized)
fi
/usr/bin/python3 tests/closing_line.py "${reports[@]}"
[ $gtest -eq 0 ] && [ $pytest -eq 0 ] && [ $sanitized -eq 0 ]
