"""Prints one "N passed, N failed, N skipped" line over the GoogleTest counts (written by
bin/tests when SA_COUNTS_FILE is set) and pytest's JUnit XML report; a missing file counts as one
failure (the suite did not run to its end)."""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
try:
    with open(sys.argv[1]) as f:
        p, fl, s = (int(x) for x in f.read().split())
    passed, failed, skipped = p, fl, s
except (OSError, ValueError):
    failed += 1
try:
    root = ET.parse(sys.argv[2]).getroot()
    for suite in root.iter("testsuite"):
        tests, fails = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skips = int(suite.get("skipped", 0))
        passed += tests - fails - skips
        failed += fails
        skipped += skips
except (OSError, ET.ParseError):
    failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
