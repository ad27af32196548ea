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

Run as a script it prints the registry (`--onnx`: the op_type -> family map).
"""
import pathlib
import re
import sys
from dataclasses import dataclass, field

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
    fields: dict = field(default_factory=dict)


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


def unquote(s):
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1]
    raise ValueError(f"expected a string literal, got {s}")


def ops(header=HEADER):
    """All registry entries, in table order. Raises ValueError on a malformed line."""
    text = pathlib.Path(header).read_text()
    out = []
    for table, columns in TABLES.items():
        m = re.search(r"^#define " + table + r"\(X\)[^\n]*\\\n((?:[^\n]*\\\n)*[^\n]*\n)", text, re.M)
        if not m:
            raise ValueError(f"{header}: no #define {table}(X)")
        body = m.group(1).replace("\\\n", "\n")
        first_line = text[:m.start(1)].count("\n") + 1
        # entries may span lines: join, then find X( ... ) at depth 0
        flat = body.replace("\n", " ")
        pos = 0
        while True:
            k = flat.find("X(", pos)
            if k < 0:
                break
            depth, j = 0, k + 1
            while True:
                if flat[j] == '"':
                    j = flat.index('"', j + 1)
                elif flat[j] == "(":
                    depth += 1
                elif flat[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            args = split_args(flat[k + 2:j])
            pos = j + 1
            if len(args) != len(columns):
                raise ValueError(f"{header}: {table}: X({', '.join(args)}) has {len(args)} columns, "
                                 f"expected {len(columns)} ({', '.join(columns)})")
            f = dict(zip(columns, args))
            # flat and body have the same length: k is the entry's offset in body
            op = Op(table=table, name=f["name"], family=f.get("family", "elementwise"), fields=f,
                    line=first_line + body[:k].count("\n"))
            if table == "FUSOR_REDUCTION_OPS":
                op.family, op.kind = "reduction", f["kind"]
            op.onnx = tuple(t for t in unquote(f["onnx"]).split("|") if t)
            if "result" in f:
                op.result = f["result"]
                if op.result not in RESULTS:
                    raise ValueError(f"{header}: {op.name}: result {op.result} is not one of {RESULTS}")
            if "attributes" in f:
                op.attributes = int(f["attributes"])
            if "misuse" in f:
                op.misuse = unquote(f["misuse"])
            if op.family not in FAMILIES:
                raise ValueError(f"{header}: {op.name}: family {op.family} is not one of {FAMILIES}")
            out.append(op)
    return out


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
    """ONNX op_type -> the family of the fusor op implementing it. Raises
    ValueError when two ops claim one op_type with different families."""
    fam = {}
    for op in entries if entries is not None else ops():
        for t in op.onnx:
            if fam.setdefault(t, op.family) != op.family:
                raise ValueError(f"ONNX {t} is claimed by two families: {fam[t]} and {op.family} ({op.name})")
    return fam


def main(argv):
    if "--onnx" in argv:
        for t, f in sorted(onnx_families().items()):
            print(f"{t:24} {f}")
        return 0
    for op in ops():
        print(f"{op.table:20} {op.name:30} {op.family:14} {'|'.join(op.onnx):24} {misuse_call(op)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
