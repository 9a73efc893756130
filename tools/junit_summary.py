"""Print one closing line, 'total: N passed, N failed, N skipped', over pytest JUnit XML files.

Exits 1 if any test failed or errored, or if a file is missing.
"""
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as err:
            print(f"junit_summary: cannot read {path}: {err}")
            return 1
        for suite in root.iter("testsuite"):
            tests = int(suite.get("tests", 0))
            f = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            s = int(suite.get("skipped", 0))
            passed += tests - f - s
            failed += f
            skipped += s
    print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
