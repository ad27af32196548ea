#!/usr/bin/env python3
"""Every must-not-compile test in tests/fail/ is named in
docs/troubleshooting.md (which shows each message and what to do).

Usage: check_troubleshooting.py SOURCE_DIR. Python 3 stdlib only.
"""
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
page = (root / "docs" / "troubleshooting.md").read_text()
missing = [f.name for f in sorted((root / "tests" / "fail").glob("*.cpp")) if f"`{f.name}`" not in page]
for name in missing:
    print(f"docs/troubleshooting.md does not name tests/fail/{name}")
print(f"{len(list((root / 'tests' / 'fail').glob('*.cpp')))} must-not-compile files, {len(missing)} not in the page")
sys.exit(1 if missing else 0)
