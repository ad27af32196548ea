#!/usr/bin/env python3
"""Write tests/data/onnx/index.json: one entry per ONNX conformance case.

Reads every <case>/case.json under the data directory (default:
tests/data/onnx next to this repository's tools/ folder) and writes
index.json there, sorted by case name:

    [{"case": "test_abs", "op_type": "Abs", "family": "elementwise",
      "opset": 13}, ...]

The C++ test helper fusor::testing::onnx_cases_of() reads this file, so
tests can ask for "all Softmax cases" without listing directories.

Usage:
    tools/onnx_index.py [DATA_DIR]          write DATA_DIR/index.json
    tools/onnx_index.py --markdown [DIR]    print the cases grouped by op_type
                                            (for tests/data/onnx/README.md)
    tools/onnx_index.py --check [DIR]       exit 1 if index.json or the table
                                            in DIR/README.md is stale

Fails (exit 1) on a case with more than one node or an op_type that no op
of the registry implements: a new case must be classified on purpose, never
skipped silently.
Uses only the standard library, so it runs anywhere python3 does.
"""
import json
import pathlib
import sys

# op_type -> family: the family of the fusor op that implements the
# op_type, read from the op registry (include/fusor/ops/registry.hpp, via
# tools/op_registry.py), so a new op's cases are classified by adding the
# op's registry line. Families follow how fusor runs an op, not ONNX's own
# grouping: softmax/log-softmax normalize along an axis like layer norm
# ("normalization"); GlobalAveragePool is a mean over the spatial axes and
# MaxPool/AveragePool reduce a window ("reduction", the row family), as do
# ArgMax/ArgMin, Gather, Pad and Concat (an index accumulator, an indexed
# read, one output per thread reading its source position).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import op_registry  # noqa: E402

try:
    FAMILIES = op_registry.onnx_families()
except op_registry.RegistryError as e:
    sys.exit(f"onnx_index: {e}")


def default_dir():
    return pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "onnx"


def build_index(data_dir):
    entries, errors = [], []
    for case_json in sorted(data_dir.glob("*/case.json")):
        case = json.loads(case_json.read_text())
        name = case_json.parent.name
        nodes = case.get("nodes", [])
        if case.get("name", name) != name:
            errors.append(f"{name}: case.json names itself {case['name']!r}")
        if len(nodes) != 1:
            errors.append(f"{name}: {len(nodes)} nodes; only single-node cases are indexed")
            continue
        op = nodes[0]["op_type"]
        if op not in FAMILIES:
            errors.append(f"{name}: op_type {op!r} has no family; give the fusor op that implements it "
                          f"its ONNX name in include/fusor/ops/registry.hpp")
            continue
        opset = next((o["version"] for o in case.get("opset", []) if o.get("domain", "") == ""), None)
        entries.append({"case": name, "op_type": op, "family": FAMILIES[op], "opset": opset})
    return entries, errors


def render(entries):
    # One line per entry keeps diffs of index.json readable.
    return "[\n" + ",\n".join("  " + json.dumps(e) for e in entries) + "\n]\n"


def markdown(entries):
    by_op = {}
    for e in entries:
        by_op.setdefault((e["family"], e["op_type"]), []).append(e["case"])
    lines = ["| family | op_type | cases |", "|---|---|---|"]
    for (family, op), cases in sorted(by_op.items()):
        lines.append(f"| {family} | {op} | {', '.join('`' + c + '`' for c in cases)} |")
    return "\n".join(lines) + "\n"


def main(argv):
    flags = [a for a in argv if a.startswith("--")]
    args = [a for a in argv if not a.startswith("--")]
    unknown = set(flags) - {"--markdown", "--check"}
    if unknown or len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    data_dir = pathlib.Path(args[0]) if args else default_dir()
    entries, errors = build_index(data_dir)
    for e in errors:
        print(f"onnx_index: {e}", file=sys.stderr)
    if errors:
        return 1
    if not entries:
        print(f"onnx_index: no */case.json under {data_dir}", file=sys.stderr)
        return 1
    out = data_dir / "index.json"
    if "--markdown" in flags:
        sys.stdout.write(markdown(entries))
    elif "--check" in flags:
        if not out.exists() or out.read_text() != render(entries):
            print(f"onnx_index: {out} is stale; rerun tools/onnx_index.py", file=sys.stderr)
            return 1
        readme = data_dir / "README.md"
        header = markdown(entries).splitlines()[0]
        lines = readme.read_text().splitlines() if readme.exists() else []
        start = next((i for i, l in enumerate(lines) if l == header), None)
        table = []
        if start is not None:
            for l in lines[start:]:
                if not l.startswith("|"):
                    break
                table.append(l)
        if "\n".join(table) + "\n" != markdown(entries):
            print(f"onnx_index: the cases table in {readme} is stale or missing; replace it with the output "
                  f"of tools/onnx_index.py --markdown", file=sys.stderr)
            return 1
    else:
        out.write_text(render(entries))
        print(f"onnx_index: wrote {len(entries)} cases to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
