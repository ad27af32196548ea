#!/usr/bin/env python3
"""Checks a must-not-compile file with one expected diagnostic per line.

Usage: check_diagnostics.py [--registry] COMPILER SOURCE [compiler flags...]

Compiles SOURCE with `COMPILER -std=c++20 -fsyntax-only FLAGS` (g++) or
`nvcc -std=c++20 -arch=sm_90 -c FLAGS` (as a .cu file), again without the
lines already reported while a compilation reports new ones (compilers skip
pending instantiations after errors). Each line of
SOURCE that ends with `// expect: TEXT` must produce a static_assert whose
message starts with TEXT, in an instantiation required from that line (or
on that line itself). Any error reported for a line of SOURCE that is not
such a static_assert (e.g. "no matching function for call") fails the test,
and so does a marked line that compiles. Prints one line per problem and
exits 1 if there is one. Python 3 stdlib only.

--registry appends one marked line per op of fusor's op registry
(include/fusor/ops/registry.hpp, read by tools/op_registry.py): the op
called with a non-expression operand must stop with "fusor: <name>: an
operand is not a fusor expression". A new op is checked by adding its
registry line; SOURCE keeps the operators and the forms the registry does
not describe (run, views, the inspection functions, wrong argument orders).
"""

import os
import re
import subprocess
import sys

EXPECT = re.compile(r"//\s*expect:\s*(.+?)\s*$")


def compile_and_collect(compiler, source, flags, text):
    """Compiles `text` (the source with some marked lines blanked) and returns
    ({line: [messages]}, [problems], compiler return code)."""
    nvcc = os.path.basename(compiler).startswith("nvcc")
    suffix = ".cu" if nvcc else os.path.splitext(source)[1]
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fusor_diag_{os.getpid()}{suffix}")
    with open(tmp, "w") as f:
        f.write(text)
    if nvcc:
        cmd = [compiler, "-std=c++20", "-arch=sm_90", "-c", "-o", os.devnull, *flags, tmp]
    else:
        cmd = [compiler, "-std=c++20", "-fsyntax-only", "-fmax-errors=0", *flags, tmp]
    r = subprocess.run(cmd, capture_output=True, text=True)
    os.remove(tmp)
    name = re.escape(os.path.basename(tmp))
    found, problems = {}, []
    if nvcc:
        # EDG: 'FILE(LINE): error: static assertion failed with "MSG"', then
        # 'detected during ... at line N of SOURCE' (the outermost is last).
        error = re.compile(r"\(\d+\): error: (.*)")
        at_line = re.compile(rf"at line (\d+) of \S*{name}")
        direct = re.compile(rf"{name}\((\d+)\): error: (.*)")
        pending = None

        def flush():
            if pending is None:
                return
            line, message = pending
            a = re.match(r'static assertion failed with "(.*)"?$', message)
            text = a.group(1).rstrip('"') if a else "(not a static_assert) " + message
            if line is None:
                problems.append(f"an error outside any line of the source: {text[:200]}")
            else:
                found.setdefault(line, []).append(text)

        for text in r.stderr.splitlines():
            m = direct.search(text)
            if m:
                flush()
                pending = (int(m.group(1)), m.group(2))
                continue
            m = error.search(text)
            if m:
                flush()
                pending = (None, m.group(1))
                continue
            m = at_line.search(text)
            if m and pending is not None:
                pending = (int(m.group(1)), pending[1])
        flush()
        return found, problems, r.returncode
    # g++: "<source>:LINE:COL:   required from here" (or "required from
    # 'f()'") marks the line an instantiation comes from; an error on a line
    # of the source itself names that line directly.
    context = re.compile(rf"{name}:(\d+):\d+:\s+required from")
    direct = re.compile(rf"{name}:(\d+):\d+: error: (.*)")
    assertion = re.compile(r": error: static assertion failed: (.*)")
    last_context = None
    for text in r.stderr.splitlines():
        m = context.search(text)
        if m:
            last_context = int(m.group(1))
            continue
        m = direct.search(text)
        if m:
            line, message = int(m.group(1)), m.group(2)
            a = re.match(r"static assertion failed: (.*)", message)
            found.setdefault(line, []).append(a.group(1) if a else "(not a static_assert) " + message)
            last_context = None
            continue
        m = assertion.search(text)
        if m:
            if last_context is None:
                problems.append(f"a static_assert outside any marked line's instantiation: {m.group(1)[:160]}")
            else:
                found.setdefault(last_context, []).append(m.group(1))
            last_context = None  # the next error names its own context
            continue
        if ": error: " in text:
            where = f"line {last_context}" if last_context else "no line of the source"
            problems.append(f"{where}: an error that is not a fusor static_assert: {text.strip()[:200]}")
    return found, problems, r.returncode


def registry_lines():
    """One marked line per registry op with a misuse call, and a label per line."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
    import op_registry
    out = ["", "// Generated by check_diagnostics.py --registry (include/fusor/ops/registry.hpp)."]
    labels = [None, None]
    try:
        entries = op_registry.ops()
    except op_registry.RegistryError as e:
        sys.exit(f"check_diagnostics: {e}")
    for i, op in enumerate(entries):
        call = op_registry.misuse_call(op)
        if not call:
            continue
        out.append(f"void registry_{i}() {{ (void)fusor::{call}; }}"
                   f"  // expect: fusor: {op.name}: an operand is not a fusor expression")
        labels.append(f"registry.hpp:{op.line} {op.name}")
    return out, labels


def main():
    args = [a for a in sys.argv[1:] if a != "--registry"]
    if len(args) < 2:
        sys.exit(__doc__)
    compiler, source, flags = args[0], args[1], args[2:]
    with open(source) as f:
        lines = f.read().split("\n")
    labels = {}
    if "--registry" in sys.argv[1:]:
        extra, extra_labels = registry_lines()
        for k, label in enumerate(extra_labels):
            if label:
                labels[len(lines) + 1 + k] = label
        lines += extra
    expected = {n: m.group(1) for n, l in enumerate(lines, 1) if (m := EXPECT.search(l))}
    # Compilers skip pending instantiations after errors (nvcc: those made at
    # the end of the TU), so compile again with the lines not yet reported
    # until a round reports nothing new.
    found, problems, active, rounds = {}, [], set(expected), 0
    while active:
        text = "\n".join("" if (n in expected and n not in active) else l for n, l in enumerate(lines, 1))
        got, round_problems, rc = compile_and_collect(compiler, source, flags, text)
        rounds += 1
        problems += round_problems
        for line, messages in got.items():
            found.setdefault(line, []).extend(messages)
        if rc == 0 or not (set(got) & active):
            break
        active -= set(got)
    for line, want in sorted(expected.items()):
        got = found.get(line, [])
        if not got:
            problems.append(f"{source}:{line}: compiled, but should fail with '{want}'")
        elif not any(g.startswith(want) for g in got):
            problems.append(f"{source}:{line}: expected '{want}', got: " + " | ".join(g[:160] for g in got))
        bad = [g for g in got if not g.startswith("fusor:")]
        if bad:
            problems.append(f"{source}:{line}: a message that does not start with 'fusor:': {bad[0][:200]}")
    for line in sorted(set(found) - set(expected)):
        problems.append(f"{source}:{line}: an unexpected error: {found[line][0][:200]}")
    for line, label in labels.items():
        problems = [p.replace(f"{source}:{line}:", f"{source}:{line} ({label}):") for p in problems]
    for p in problems:
        print(p)
    print(f"{compiler}: {len(expected)} marked lines, {rounds} compilations, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
