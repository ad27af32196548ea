#!/usr/bin/env python3
"""Import ONNX backend node test cases into tests/data/onnx (issue 21, item 6).

The `onnx` pip package does not ship the node suite's .pb files; it ships the
generators that make them (onnx.backend.test.case.node: each op's reference
computed with NumPy, the data that `backend-test-tools generate-data`
writes). This script runs those generators and writes each selected
single-node case in fusor's format (tests/data/onnx/README.md): case.json
plus setK_input_I.npy / setK_output_I.npy. Run at data-preparation time,
never by the tests:

    python3 -m venv build/onnx-venv
    build/onnx-venv/bin/pip install onnx numpy
    build/onnx-venv/bin/python tools/import_onnx_node_cases.py --ops Sin,Cos,Less
    python3 tools/onnx_index.py          # refresh index.json

Selection: cases whose single node has one of --ops as its op_type (the
`_expanded` function bodies have several nodes and are skipped here; the
multi-node harness is future work), whose tensors all have a dtype the C++
.npy reader knows (tests/support/npy.hpp: f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64
bool),
and whose data is at most --max-bytes in total. A case already in the
directory is overwritten only with --overwrite. Skipped cases are printed
with the reason.
"""
import argparse
import json
import pathlib
import sys

KNOWN_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "bool"}


def attribute_value(attr, helper):
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    if isinstance(value, (int, float, str)):
        return value
    raise TypeError(f"attribute {attr.name}: unsupported kind {type(value).__name__}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", required=True, help="comma-separated ONNX op_types")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "onnx"))
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)

    import numpy as np
    from onnx import helper
    from onnx.backend.test.case import node as node_cases

    ops = [o for o in args.ops.split(",") if o]
    out_dir = pathlib.Path(args.out)
    written = skipped = 0
    # (collect_testcases gathers every op's cases once per process: filter here)
    all_cases = node_cases.collect_testcases(None)
    for op in ops:
        # single-node cases of op; its expanded bodies (several nodes) are counted
        cases = [c for c in all_cases if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type == op]
        expanded = [c for c in all_cases if len(c.model.graph.node) > 1 and c.name.endswith("_expanded")
                    and any(c.name == k.name + "_expanded" for k in cases)]
        if expanded:
            print(f"skip {len(expanded)} expanded bodies of {op} (several nodes)")
            skipped += len(expanded)
        if not cases:
            print(f"{op}: no cases in onnx {__import__('onnx').__version__}", file=sys.stderr)
        for case in cases:
            graph = case.model.graph
            arrays = [(k, "input", i, np.asarray(a)) for k, (ins, outs) in enumerate(case.data_sets)
                      for i, a in enumerate(ins)]
            arrays += [(k, "output", i, np.asarray(a)) for k, (ins, outs) in enumerate(case.data_sets)
                       for i, a in enumerate(outs)]
            bad = sorted({str(a.dtype) for *_, a in arrays if str(a.dtype) not in KNOWN_DTYPES})
            if bad:
                print(f"skip {case.name}: dtype {', '.join(bad)}")
                skipped += 1
                continue
            size = sum(a.nbytes for *_, a in arrays)
            if size > args.max_bytes:
                print(f"skip {case.name}: {size} bytes of data")
                skipped += 1
                continue
            dest = out_dir / case.name
            if dest.exists() and not args.overwrite:
                print(f"keep {case.name}: already present")
                continue
            n = graph.node[0]
            meta = {
                "name": case.name,
                "opset": [{"domain": o.domain, "version": o.version} for o in case.model.opset_import],
                "inputs": [i.name for i in graph.input],
                "outputs": [o.name for o in graph.output],
                "nodes": [{
                    "op_type": n.op_type,
                    "inputs": list(n.input),
                    "outputs": list(n.output),
                    "attributes": {a.name: attribute_value(a, helper) for a in n.attribute},
                }],
                "initializers": [],
                "rtol": float(case.rtol),
                "atol": float(case.atol),
                "data_sets": len(case.data_sets),
                "source": f"onnx {__import__('onnx').__version__}, onnx.backend.test.case.node",
            }
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
            for k, kind, i, a in arrays:
                np.save(dest / f"set{k}_{kind}_{i}.npy", np.ascontiguousarray(a))
            written += 1
            print(f"wrote {case.name}")
    print(f"import_onnx_node_cases: {written} written, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
