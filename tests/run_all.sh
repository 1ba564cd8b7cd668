#!/usr/bin/env bash
# make test: the GoogleTest suites (bin/tests), then the Python module's pytest suite
# (tests/python), and one closing line "N passed, N failed, N skipped" over both, which CI reads.
# The exit status is non-zero when either failed.
set -u
cd "$(dirname "$0")/.."
mkdir -p build/test-counts
rm -f build/test-counts/*
SA_COUNTS_FILE=build/test-counts/gtest ./bin/tests
gtest=$?
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python --junitxml=build/test-counts/pytest.xml
pytest=$?
/usr/bin/python3 tests/closing_line.py build/test-counts/gtest build/test-counts/pytest.xml
[ $gtest -eq 0 ] && [ $pytest -eq 0 ]
