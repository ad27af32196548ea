#!/usr/bin/env python3
"""Checks the stage order of fusor's headers (issue 16; DESIGN.md, "The pipeline").

Every `#include <fusor/...>` in include/fusor must name a header of the same
stage or of an earlier one:

    core (and config.hpp, version.hpp) < expr < ops < canon < recognize
      < pattern < cost < plan < exec < inspect < fusor.hpp

kernels/ is a side branch below exec: a kernel family header
(kernels/<family>.hpp), kernels/parts/ and kernels/tuning/ (the tile and
grid values, keyed by the device model) include only core, expr, ops,
kernels/parts and kernels/tuning, never another family; only exec/ (and
later) include kernels/ families and parts. kernels/tuning holds values and
pure functions of shapes keyed by the device model (no kernel code): the
cost model and the planner (cost/ and later) may read it, e.g. the split of
long reduction rows (plan_guard::whole_rows). No header is longer than
MAX_LINES.

Usage: check_layout.py [repository root]. Prints each violation and exits 1
when there is one.
"""
import pathlib
import re
import sys

MAX_LINES = 450  # "no header over about 400 lines"

RANK = {"core": 0, "expr": 1, "ops": 2, "canon": 3, "recognize": 4, "pattern": 5, "cost": 6, "plan": 7,
        "exec": 8, "inspect": 9}
TOP_LEVEL = {"config.hpp": 0, "version.hpp": 0, "fusor.hpp": 10}
INCLUDE = re.compile(r'^\s*#\s*include\s*<fusor/([^>]+)>', re.M)


def stage_of(rel):
    """(stage name, rank) of a header path relative to include/fusor."""
    parts = rel.split("/")
    if len(parts) == 1:
        return parts[0], TOP_LEVEL.get(parts[0], 0)
    if parts[0] == "kernels":
        if parts[1] == "tuning":
            return "kernels/tuning", None
        return ("kernels/parts" if parts[1] == "parts" else "kernels"), None
    return parts[0], RANK.get(parts[0])


def violation(includer, included):
    s_from, r_from = stage_of(includer)
    s_to, r_to = stage_of(included)
    if s_from in ("kernels", "kernels/parts", "kernels/tuning"):
        if s_to in ("kernels/parts", "kernels/tuning") or (r_to is not None and r_to <= RANK["ops"]):
            if s_from == "kernels/tuning" and s_to == "kernels/parts":
                return "kernels/tuning includes only core, expr, ops and kernels/tuning (the planner reads it)"
            return None
        return "a kernel family, kernels/parts and kernels/tuning include only core, expr, ops, kernels/parts and kernels/tuning"
    if s_to == "kernels/tuning":
        if r_from is not None and r_from >= RANK["cost"]:
            return None
        return "kernels/tuning is included by kernels/, cost/ and later stages only"
    if s_to in ("kernels", "kernels/parts"):
        if r_from is not None and r_from >= RANK["exec"]:
            return None
        return "kernels/ is included by exec/ and later stages only"
    if r_from is None or r_to is None:
        return "unknown stage (add it to tools/check_layout.py and DESIGN.md)"
    if r_to > r_from:
        return "includes a later stage"
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    base = root / "include" / "fusor"
    errors = []
    headers = sorted(base.rglob("*.hpp"))
    for h in headers:
        rel = h.relative_to(base).as_posix()
        text = h.read_text()
        n = text.count("\n")
        if n > MAX_LINES:
            errors.append(f"{rel}: {n} lines (at most {MAX_LINES}: split it by concept)")
        for inc in INCLUDE.findall(text):
            if not (base / inc).is_file():
                errors.append(f"{rel}: includes <fusor/{inc}>, which does not exist")
                continue
            why = violation(rel, inc)
            if why:
                errors.append(f"{rel}: includes <fusor/{inc}>: {why} (stage order: tools/check_layout.py)")
    for e in errors:
        print(e)
    print(f"check_layout: {len(headers)} headers, {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
