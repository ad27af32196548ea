#!/usr/bin/env python3
"""Check that every C++ snippet in fusor's documentation is compiled code.

Usage: check_doc_snippets.py [SOURCE_DIR]   (default: the repository root)

Extracts every fenced code block tagged ``cpp`` or ``c++`` from README.md and
docs/*.md. Each line of such a block, stripped of leading and trailing
whitespace, must equal a line (also stripped) of some C++ source file under
examples/ or tests/ (.cpp .hpp .h .cu .cuh .inc), except lines that are
empty, only `...`, only braces/brackets/parentheses/semicolons/commas, or
comments (`//`, `/*`, `*`, `*/`). Blocks tagged otherwise (sh, bash, cmake,
text, json, none) are not checked.

Prints `<doc>:<line>: <missing line>` for every line not found and exits 1 if
there is one; prints a summary and exits 0 otherwise. Python 3 stdlib only.
"""

import pathlib
import re
import sys

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".inc", ".cc", ".cxx"}
CHECKED_TAGS = {"cpp", "c++"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
ONLY_PUNCT = re.compile(r"^[{}()\[\];,]+$")


def doc_files(root):
    files = []
    readme = root / "README.md"
    if readme.is_file():
        files.append(readme)
    files.extend(sorted((root / "docs").glob("*.md")))
    return files


def code_blocks(path):
    """Yield (tag, [(line_number, text), ...]) for every fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(2)
        tag = m.group(3).lower()
        body = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2)[0] == fence[0] and len(close.group(2)) >= len(fence) \
                    and not close.group(3):
                break
            body.append((i + 1, lines[i]))
            i += 1
        yield tag, body
        i += 1  # past the closing fence


def ignorable(stripped):
    if not stripped or stripped == "...":
        return True
    if ONLY_PUNCT.match(stripped):
        return True
    return stripped.startswith(("//", "/*", "*"))


def source_lines(root):
    known = set()
    count = 0
    for top in ("examples", "tests"):
        base = root / top
        if not base.is_dir():
            continue
        for f in base.rglob("*"):
            if f.suffix not in SOURCE_SUFFIXES or not f.is_file():
                continue
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            count += 1
            known.update(line.strip() for line in text.splitlines())
    return known, count


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    known, nfiles = source_lines(root)
    if nfiles == 0:
        print(f"check_doc_snippets: no C++ sources under {root}/examples or {root}/tests", file=sys.stderr)
        return 2
    missing = 0
    blocks = checked = 0
    for doc in doc_files(root):
        rel = doc.relative_to(root)
        for tag, body in code_blocks(doc):
            if tag not in CHECKED_TAGS:
                continue
            blocks += 1
            for number, text in body:
                stripped = text.strip()
                if ignorable(stripped):
                    continue
                checked += 1
                if stripped not in known:
                    missing += 1
                    print(f"{rel}:{number}: not in any compiled example or test: {stripped}")
    if missing:
        print(f"check_doc_snippets: {missing} of {checked} snippet lines ({blocks} C++ blocks) "
              f"are not in examples/ or tests/", file=sys.stderr)
        return 1
    print(f"check_doc_snippets: ok: {checked} lines in {blocks} C++ blocks, all found in "
          f"{nfiles} files under examples/ and tests/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
