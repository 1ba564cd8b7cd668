"""Prints one "N passed, N failed, N skipped" line over every suite's report given as an argument:
GoogleTest counts ("P F S", written by bin/tests when SA_COUNTS_FILE is set) or pytest's JUnit XML
(a .xml file). A missing or unreadable report counts as one failure (its suite did not run to its
end)."""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        if path.endswith(".xml"):
            for suite in ET.parse(path).getroot().iter("testsuite"):
                tests = int(suite.get("tests", 0))
                fails = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
                skips = int(suite.get("skipped", 0))
                passed += tests - fails - skips
                failed += fails
                skipped += skips
        else:
            with open(path) as f:
                p, fl, s = (int(x) for x in f.read().split())
            passed, failed, skipped = passed + p, failed + fl, skipped + s
    except (OSError, ValueError, ET.ParseError):
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
