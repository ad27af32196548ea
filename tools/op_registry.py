#!/usr/bin/env python3
"""Reads fusor's op registry (include/fusor/ops/registry.hpp) for the tools.

The registry is a set of X-macro tables, one op per `X(...)` line:

    FUSOR_UNARY_OPS      X(name, ONNX, result)
    FUSOR_BINARY_OPS     X(name, ONNX, result)
    FUSOR_ATTRIBUTE_OPS  X(name, ONNX, attribute count)
    FUSOR_REDUCTION_OPS  X(name, reduce_kind, ONNX)
    FUSOR_LAYER_OPS      X(name, family, ONNX, misuse call)

`ops()` returns them as one list of Op records in table order, each with
`table`, `name`, `family`, `onnx` (a tuple of op_types), `result`,
`attributes` and `misuse` (the call that must fail with `fusor: <name>:`).
The consumers: tests/fuzz/gen_fuzz_cases.py (which ops to draw),
tests/fail/check_diagnostics.py --registry (one misuse line per op) and
tools/onnx_index.py (op_type -> family). Standard library only.

Run as a script it prints the registry (`--onnx`: the op_type -> family map;
`--check-compiler CXX [flags]`: exit 1 unless CXX's preprocessor expands
the tables to the same op names, the ctest registry.parsed_like_the_compiler).
Malformed lines raise RegistryError naming registry.hpp:LINE.
"""
import pathlib
import re
import sys
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parent.parent
HEADER = REPO / "include" / "fusor" / "ops" / "registry.hpp"

TABLES = {
    "FUSOR_UNARY_OPS": ("name", "onnx", "result"),
    "FUSOR_BINARY_OPS": ("name", "onnx", "result"),
    "FUSOR_ATTRIBUTE_OPS": ("name", "onnx", "attributes"),
    "FUSOR_REDUCTION_OPS": ("name", "kind", "onnx"),
    "FUSOR_LAYER_OPS": ("name", "family", "onnx", "misuse"),
}
FAMILIES = ("elementwise", "reduction", "normalization", "contraction", "attention", "shape")
RESULTS = ("same", "floating", "boolean")


@dataclass
class Op:
    table: str
    name: str
    family: str
    onnx: tuple = ()
    result: str = ""
    attributes: int = 0
    kind: str = ""
    misuse: str = ""
    line: int = 0


class RegistryError(ValueError):
    """A malformed registry line; the message starts with file:line."""


SPLICE = "\x00"  # a removed backslash-newline: keeps physical line numbers countable
ONNX_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def logical_text(text, where):
    """The registry as the compiler's translation phases 2-3 see it: each
    backslash-newline (a backslash followed by spaces too, as g++ accepts it
    with a warning) spliced, each /* */ comment a space. A // comment on a
    line of a table is refused: the splice would make it swallow the rest of
    the table, silently for the compiler."""
    text = re.sub(r"\\[ \t]*\n", SPLICE, text)
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\n":
                    line = text[:j].count("\n") + text[:j].count(SPLICE) + 1
                    raise RegistryError(f"{where}:{line}: a string literal is not closed")
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise RegistryError(f"{where}: a /* comment is not closed")
            out.append(" " + "\n" * text[i:j].count("\n") + SPLICE * text[i:j].count(SPLICE))
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if SPLICE in text[i:j]:
                line = text[:i].count("\n") + text[:i].count(SPLICE) + 1
                raise RegistryError(f"{where}:{line}: a // comment inside a macro table swallows the rest of the "
                                    f"table (a backslash ends the line); use /* */ or a line above the table")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(text):
    """Splits a macro argument list at top-level commas (strings and
    parentheses protect theirs, as the preprocessor's do)."""
    args, depth, cur, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur += text[i:j + 1]
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    args.append(cur.strip())
    return args


def unquote(s, where):
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1]
    raise RegistryError(f"{where}: expected a string literal, got {s}")


def entries(body, first_line, where, table):
    """(line, argument text) of each X(...) of a table's logical line; anything
    else there is an error."""
    i, n = 0, len(body)
    line_at = lambda k: first_line + body[:k].count(SPLICE) + body[:k].count("\n")  # noqa: E731
    while i < n:
        if body[i] in " \t" + SPLICE:
            i += 1
            continue
        m = re.compile(r"X\s*\(").match(body, i)
        if not m:
            raise RegistryError(f"{where}:{line_at(i)}: {table}: expected X(...), found "
                                f"{body[i:i + 30].replace(SPLICE, ' ').strip()!r}")
        depth, j = 1, m.end()
        while depth:
            if j >= n:
                raise RegistryError(f"{where}:{line_at(i)}: {table}: X( is not closed")
            if body[j] == '"':
                j += 1
                while j < n and body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
            elif body[j] == "(":
                depth += 1
            elif body[j] == ")":
                depth -= 1
            j += 1
        yield line_at(i), body[m.end():j - 1].replace(SPLICE, " ")
        i = j


def ops(header=HEADER):
    """All registry entries, in table order. Raises RegistryError (a
    ValueError naming file:line) on a malformed line."""
    where = pathlib.Path(header).name
    text = logical_text(pathlib.Path(header).read_text(), where)
    out, onnx_owner = [], {}
    for table, columns in TABLES.items():
        m = re.search(r"^[ \t]*#[ \t]*define[ \t]+" + table + r"\(X\)([^\n]*)", text, re.M)
        if not m:
            raise RegistryError(f"{where}: no #define {table}(X)")
        first_line = text[:m.start(1)].count("\n") + text[:m.start(1)].count(SPLICE) + 1
        for line, arg_text in entries(m.group(1), first_line, where, table):
            at = f"{where}:{line}"
            args = split_args(arg_text)
            if len(args) != len(columns):
                raise RegistryError(f"{at}: {table}: X({', '.join(args)}) has {len(args)} columns, "
                                    f"expected {len(columns)} ({', '.join(columns)})")
            f = dict(zip(columns, args))
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", f["name"]):
                raise RegistryError(f"{at}: {table}: {f['name']!r} is not an op name")
            op = Op(table=table, name=f["name"], family=f.get("family", "elementwise"), line=line)
            if table == "FUSOR_REDUCTION_OPS":
                op.family, op.kind = "reduction", f["kind"]
            op.onnx = tuple(t.strip() for t in unquote(f["onnx"], at).split("|") if t.strip())
            for t in op.onnx:
                if not ONNX_NAME.match(t):
                    raise RegistryError(f"{at}: {op.name}: {t!r} is not an ONNX op_type")
                if t in onnx_owner:
                    raise RegistryError(f"{at}: {op.name}: ONNX {t} is already implemented by "
                                        f"{onnx_owner[t].name} ({where}:{onnx_owner[t].line}); "
                                        f"an op_type names one op")
                onnx_owner[t] = op
            if "result" in f:
                op.result = f["result"]
                if op.result not in RESULTS:
                    raise RegistryError(f"{at}: {op.name}: result {op.result} is not one of {RESULTS}")
            if "attributes" in f:
                if not f["attributes"].isdigit():
                    raise RegistryError(f"{at}: {op.name}: the attribute count {f['attributes']!r} is not a number")
                op.attributes = int(f["attributes"])
            if "misuse" in f:
                op.misuse = unquote(f["misuse"], at)
            if op.family not in FAMILIES:
                raise RegistryError(f"{at}: {op.name}: family {op.family} is not one of {FAMILIES}")
            out.append(op)
    names = {(o.table, o.name) for o in out}
    for o in out:
        if o.table == "FUSOR_LAYER_OPS" and not o.misuse and not any(n == o.name for t, n in names if t != o.table):
            raise RegistryError(f"{where}:{o.line}: {o.name}: an empty misuse column means another table's line of "
                                f"the same name checks it, and none does")
    return out


def compiler_names(compiler, flags=()):
    """{table: [names]} as the compiler's preprocessor expands the tables."""
    import subprocess
    import tempfile
    src = "#include <fusor/ops/registry.hpp>\n#define FUSOR_NAME_OF(n, ...) @n\n" + "".join(
        f"table {t}: {t}(FUSOR_NAME_OF)\n" for t in TABLES)
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(src)
    try:
        r = subprocess.run([compiler, "-E", "-P", "-x", "c++", "-I", str(REPO / "include"), *flags, f.name],
                           capture_output=True, text=True)
    finally:
        pathlib.Path(f.name).unlink()
    if r.returncode != 0:
        raise RegistryError(f"{compiler} -E failed: {r.stderr.strip()[:400]}")
    got = {}
    for line in r.stdout.splitlines():
        m = re.match(r"table (\w+):(.*)", line)
        if m:
            got[m.group(1)] = re.findall(r"@\s*(\w+)", m.group(2))
    return got


def misuse_call(op):
    """The call with a non-expression operand that must stop with
    `fusor: <name>:` ("" when the op has none of its own)."""
    if op.table == "FUSOR_UNARY_OPS":
        return f"{op.name}(buf)"
    if op.table == "FUSOR_BINARY_OPS":
        return f"{op.name}(x, ptr)"
    if op.table == "FUSOR_ATTRIBUTE_OPS":
        return f"{op.name}(buf{', 0.5f' * op.attributes})"
    if op.table == "FUSOR_REDUCTION_OPS":
        return f"{op.name}(buf, {{1}})"
    return op.misuse


def onnx_families(entries=None):
    """ONNX op_type -> the family of the fusor op implementing it (ops()
    refuses an op_type claimed twice)."""
    return {t: op.family for op in (entries if entries is not None else ops()) for t in op.onnx}


def main(argv):
    try:
        entries_ = ops()
    except RegistryError as e:
        print(f"op_registry: {e}", file=sys.stderr)
        return 1
    if argv[:1] == ["--check-compiler"] and len(argv) >= 2:
        # the tables as the compiler expands them must list what ops() read
        try:
            got = compiler_names(argv[1], argv[2:])
        except RegistryError as e:
            print(f"op_registry: {e}", file=sys.stderr)
            return 1
        bad = 0
        for t in TABLES:
            mine = [o.name for o in entries_ if o.table == t]
            if got.get(t) != mine:
                bad += 1
                print(f"op_registry: {t}: the compiler expands {got.get(t)}, tools/op_registry.py read {mine}",
                      file=sys.stderr)
        print(f"op_registry: {len(entries_)} ops; the compiler's expansion {'differs' if bad else 'agrees'}")
        return 1 if bad else 0
    if "--onnx" in argv:
        for t, f in sorted(onnx_families().items()):
            print(f"{t:24} {f}")
        return 0
    for op in entries_:
        print(f"{op.table:20} {op.name:30} {op.family:14} {'|'.join(op.onnx):24} {misuse_call(op)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
