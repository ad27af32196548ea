#!/usr/bin/env python3
"""Translate ONNX's `_expanded` node cases into fusor expressions (issue 21, item 6).

Each ONNX function op (Softmax, RMSNormalization, Celu, ...) has a node case
`test_X` and a twin `test_X_expanded` whose graph is the op's function body:
the same computation written with primitive ops, on the same data. fusor
must compute those bodies right AND plan them as the fused op (one kernel
where the op is one kernel). This script, run at data-preparation time with
the `onnx` pip package (never by the tests), reads every `_expanded` case,
folds what is constant once the input shapes are known (Constant, Shape,
Size, Range, Cast of constants, axes given as inputs: onnx.reference
evaluates them), and writes the rest as a C++ expression over the graph's
inputs in tests/conformance/onnx_expanded_cases.inc. The data are the base
case's (tests/data/onnx/test_X) where equal, so mostly nothing new is
stored (the rules below say when it is).

    build/onnx-venv/bin/python tools/import_onnx_expanded.py          # rewrite the .inc
    build/onnx-venv/bin/python tools/import_onnx_expanded.py --list   # what is skipped, and why
    build/onnx-venv/bin/python tools/import_onnx_expanded.py --markdown  # the README's table

Translation rules: tensors are viewed at rank R = 4, or the body's highest
rank when above (at most 8) (ONNX shapes left-padded with 1s, as the other
conformance tests), so axes shift by R - rank;
reductions keep their dims (a keepdims=0 reduction's data equal the kept
layout; where it meets another tensor it is reshaped to ONNX's shape); a
constant of one element becomes a compile-time fusor::constant (floats, in
hexadecimal: exact) or a scalar of the operand's dtype, a larger one
(a causal mask) an input of the case, stored with its data; Cast / CastLike to
the same dtype, Identity and Slices that keep every element are no-ops;
only what the first output needs is translated; an int64 input read only
as axes / shapes / pads is a constant, other int64 inputs (labels) are
data; a final Reshape / Flatten / Squeeze / Unsqueeze of a reduction's
result is left to the output buffer's view (same elements, same order);
a Reshape whose operands' strides cannot express the new shape (modelled
with NumPy views: NumPy copies there) reads fusor::contiguous(x); Split is
a slice per output; Gather of 1-D data keeps the indices' layout;
a node of a function op the body calls (SoftmaxCrossEntropyLoss's body
calls NegativeLogLikelihoodLoss) is replaced by that op's own body
(onnx.defs' context-dependent function for its attributes and input
types); every other node maps to the fusor function of the same ONNX op
(ops/registry.hpp). A case is skipped, with its reason, when a node has no
such mapping, or a tensor has a rank above 8 or a dtype the tests do not
read. The data: the base
case's in tests/data/onnx when equal (checked), else written to
tests/data/onnx_expanded.
"""
import argparse
import json
import pathlib
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
RANK = 4
MAX_RANK = 8

# NumPy dtype name -> C++ element type
CPP_TYPES = {"float32": "float", "float64": "double", "int64": "std::int64_t", "int32": "std::int32_t",
             "bool": "bool", "int8": "std::int8_t", "uint8": "std::uint8_t", "int16": "std::int16_t",
             "uint16": "std::uint16_t", "uint32": "std::uint32_t", "uint64": "std::uint64_t"}

UNARY = {"Neg": "neg", "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Reciprocal": "reciprocal",
         "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Relu": "relu", "Softplus": "softplus",
         "Softsign": "softsign", "Sin": "sin", "Cos": "cos", "Floor": "floor", "Ceil": "ceil", "Round": "round",
         "Sign": "sign", "IsNaN": "isnan", "Not": "logical_not", "HardSwish": "hardswish"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Max": "max", "Min": "min",
          "Equal": "equal", "Less": "less", "LessOrEqual": "less_equal", "Greater": "greater",
          "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
          "PRelu": "prelu"}
REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max_reduce", "ReduceMin": "min_reduce",
          "ReduceSumSquare": "sum_square", "ReduceL2": "l2_norm", "ReduceL1": "l1_norm"}
# attribute-carrying unary ops: ONNX attribute -> fusor argument order (with ONNX defaults)
UNARY_ATTR = {"Elu": ("elu", [("alpha", 1.0)]), "LeakyRelu": ("leaky_relu", [("alpha", 0.01)]),
              "HardSigmoid": ("hardsigmoid", [("alpha", 0.2), ("beta", 0.5)])}
# ops whose inputs after the first are axes, shapes, pads or bounds (an int64
# graph input read only there is a constant of the case)
ATTRIBUTE_INPUTS = {"Reshape", "Unsqueeze", "Squeeze", "Expand", "Slice", "Pad", "Tile", "TopK", "Range",
                    "ConstantOfShape", "Resize", "CumSum", "OneHot", "Split", "Clip"}
# integer ops through which a shape-like input stays shape-like
SHAPE_ARITHMETIC = {"Max", "Min", "Add", "Sub", "Mul", "Div", "Concat", "Cast", "Neg", "Abs"}
# shape ops: an index map inside the consumer's kernel (over a reduction, norm or
# contraction: over its temporary, ops/view_map.hpp)
SHAPE_OPS = {"Reshape", "Flatten", "Unsqueeze", "Squeeze", "Expand", "Transpose"}


def literal(value, dtype):
    """A constant of the graph as C++: a finite float a compile-time
    fusor::constant (its double value in hexadecimal, exact for float32 and
    float64; rewrite rules see it, as they would `2.0_c`), NaN / Inf and
    integers run-time scalars of the operand's type."""
    v = value.item() if hasattr(value, "item") else value
    if dtype in ("float32", "float64"):
        t = CPP_TYPES[dtype]
        if v != v:
            return f"std::numeric_limits<{t}>::quiet_NaN()"
        if abs(v) == float("inf"):
            return f"{'-' if v < 0 else ''}std::numeric_limits<{t}>::infinity()"
        return f"fusor::constant<{float(v).hex()}>{{}}"
    if dtype == "bool":
        return "true" if v else "false"
    return f"{CPP_TYPES[dtype]}({int(v)})"


class Skip(Exception):
    pass


class Value:
    """A computed (not folded) tensor: its C++ name, dtype, ONNX rank,
    whether a keepdims=0 reduction dropped dims on the way (then only unary
    ops may follow) and whether it holds a reduction, norm, gather or
    contraction (heavy: fusor's shape ops do not take it)."""

    def __init__(self, cpp, dtype, rank, dropped=False, heavy=False):
        self.cpp, self.dtype, self.rank, self.dropped, self.heavy = cpp, dtype, rank, dropped, heavy


# function ops a body may call as nodes (SoftmaxCrossEntropyLoss's body calls
# NegativeLogLikelihoodLoss): replaced by their own function bodies
INLINED = {"NegativeLogLikelihoodLoss"}


def inline_functions(model, every):
    """model with each node of an INLINED op replaced by that op's function
    body for the node's attributes and input types (ONNX's context-dependent
    function, as onnx.defs builds it), its inner tensors renamed apart."""
    import copy
    from onnx import FunctionProto, defs, helper
    m = copy.deepcopy(model)
    g = m.graph
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    out_nodes = []
    for k, node in enumerate(g.node):
        if node.op_type not in INLINED:
            out_nodes.append(node)
            continue
        schema = defs.get_schema(node.op_type, opset)
        types = [helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(every[i].dtype), every[i].shape)
                 .SerializeToString() for i in node.input if i]
        fn = FunctionProto()
        fn.ParseFromString(schema.get_context_dependent_function(node.SerializeToString(), types))
        rename = dict(zip(fn.input, node.input))
        rename.update(zip(fn.output, node.output))
        for inner in fn.node:
            inner = copy.deepcopy(inner)
            for lst in (inner.input, inner.output):
                for j, name in enumerate(lst):
                    if name:
                        lst[j] = rename.setdefault(name, f"_inl{k}_{name}")
            out_nodes.append(inner)
    del g.node[:]
    g.node.extend(out_nodes)
    return m


def intermediates(case, np, model=None):
    """Every tensor of the case's graph (or of `model`, the case's graph
    rewritten) on its data set (onnx.reference), for the shapes that Shape /
    Reshape nodes of the body read."""
    import copy
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    m = copy.deepcopy(model if model is not None else case.model)
    g = m.graph
    have = {o.name for o in g.output}
    for n in g.node:
        for o in n.output:
            if o and o not in have:
                g.output.append(helper.make_empty_tensor_value_info(o))
                have.add(o)
    ins, _ = case.data_sets[0]
    res = ReferenceEvaluator(m).run(None, {i.name: np.asarray(a) for i, a in zip(g.input, ins)})
    return {o.name: np.asarray(r) for o, r in zip(g.output, res)}


def translate(case, np):
    """Returns (params, lines, out_value) for the case's graph (its first
    output: LayerNormalization's Mean and InvStdDev are fusor ops of their
    own), or raises Skip."""
    from onnx import helper, numpy_helper
    g = case.model.graph
    ins, outs = case.data_sets[0]
    try:
        given = {gi.name: np.asarray(a) for gi, a in zip(g.input, ins)}  # (inputs: for their shapes)
        every = {**given, **intermediates(case, np)}
        if any(n.op_type in INLINED for n in g.node):
            model = inline_functions(case.model, every)
            g = model.graph
            every = {**given, **intermediates(case, np, model)}
    except Exception as e:  # noqa: BLE001 - a body the reference cannot run is skipped with its reason
        raise Skip(f"onnx.reference cannot run the body: {type(e).__name__}")
    # the views' rank: 4, or the body's highest (ONNX shapes are left-padded with 1s to it)
    R = max([RANK] + [np.asarray(v).ndim for v in every.values()])
    if R > MAX_RANK:
        raise Skip(f"rank {R} tensor (fusor's reductions take rank <= {MAX_RANK})")
    known, values, params, lines, constants = {}, {}, [], [], {}
    for init in g.initializer:
        known[init.name] = numpy_helper.to_array(init)
    # an int64 input read only where ONNX takes axes, shapes, pads or bounds
    # (input 1 and after of these ops) is a constant of the case; other
    # int64 inputs (labels, indices) are data
    def attribute_like(name, depth=0):
        """Read only as axes / shapes / pads, directly or through integer
        arithmetic on them (CenterCropPad's target shape: Max, Sub, Div,
        Concat with the input's Shape, then Pad's pads and Slice's bounds)."""
        uses = [(n, k) for n in g.node for k, i in enumerate(n.input) if i == name]
        def use_ok(n, k):
            if k >= 1 and (n.op_type.startswith("Reduce") or n.op_type in ATTRIBUTE_INPUTS):
                return True
            return (n.op_type in SHAPE_ARITHMETIC and depth < 8 and
                    all(attribute_like(o, depth + 1) for o in n.output))
        return bool(uses) and all(use_ok(n, k) for n, k in uses)

    for gi, a in zip(g.input, ins):
        a = np.asarray(a)
        if a.dtype == np.int64 and a.ndim <= 1 and attribute_like(gi.name):
            known[gi.name] = a  # axes / shapes given as inputs: constants of this case
        else:
            if str(a.dtype) not in CPP_TYPES:
                raise Skip(f"input dtype {a.dtype}")
            if a.ndim > R:
                raise Skip(f"rank {a.ndim} input")
            name = f"in{len(params)}"
            params.append((gi.name, name, str(a.dtype)))
            values[gi.name] = Value(name, str(a.dtype), a.ndim)
    counter = [0]

    def emit(expr, dtype, rank, dropped, heavy):
        """A new C++ variable holding expr; heavy when it holds a reduction or
        contraction (the op itself, or an operand that does)."""
        name = f"v{counter[0]}"
        counter[0] += 1
        lines.append(f"auto {name} = {expr};")
        return Value(name, dtype, rank, dropped, heavy)

    def operand(name, like):
        """C++ text of input `name` of a node whose computed operand is `like`."""
        if name in values:
            return values[name]
        a = known[name]
        if a.size != 1:
            # a non-scalar constant (a causal mask, a position table): data of the case, an input of its own
            if str(a.dtype) not in CPP_TYPES or a.ndim > R:
                raise Skip(f"a non-scalar constant {list(a.shape)} of dtype {a.dtype} in the computed part")
            cpp = f"in{len(params)}"
            params.append((name, cpp, str(a.dtype)))
            constants[name] = np.asarray(a)
            values[name] = Value(cpp, str(a.dtype), a.ndim)
            return values[name]
        dtype = like.dtype if like is not None else str(a.dtype)
        return Value(literal(a.reshape(()), dtype), dtype, 0)

    def undropped(v, name):
        """v (a keepdims=0 result, held in its keepdims layout) reshaped to
        its ONNX shape at rank 4: the same elements in the same order, so a
        shape op (over a computed value: ops/view_map.hpp)."""
        if not v.dropped:
            return v
        shape = list(every[name].shape)
        padded = [1] * (R - len(shape)) + shape
        expr = f"fusor::reshape({v.cpp}, fusor::shape<{R}>{{{', '.join(map(str, padded))}}})"
        return emit(expr, v.dtype, len(shape), False, v.heavy)

    def slice_args(node):
        """A Slice node's known starts, ends, axes and steps (ONNX defaults)."""
        starts = [int(v) for v in known[node.input[1]].reshape(-1)]
        ends = [int(v) for v in known[node.input[2]].reshape(-1)]
        axes = ([int(v) for v in known[node.input[3]].reshape(-1)] if len(node.input) > 3 and node.input[3]
                else list(range(len(starts))))
        steps = ([int(v) for v in known[node.input[4]].reshape(-1)] if len(node.input) > 4 and node.input[4]
                 else [1] * len(starts))
        return starts, ends, axes, steps

    producer = {o: n for n in g.node for o in n.output if o}
    elementwise_ops = set(UNARY) | set(UNARY_ATTR) | set(BINARY) | {
        "Identity", "Cast", "CastLike", "Swish", "Sum", "Clip", "Where"}

    def padded_shape(name):
        shape = list(every[name].shape)
        return [1] * (R - len(shape)) + shape

    def leaves_of(name):
        """The views fusor's expression for tensor `name` reads, modelled with
        NumPy views of the same shapes and strides (element size 1): shape ops
        re-stride the views under elementwise ops; a computed value (or an
        input) is one row-major array. Where a Reshape cannot view a leaf,
        fusor's reshape throws, so the translation inserts contiguous()."""
        if name in leaf_memo:
            return leaf_memo[name]
        node = producer.get(name)
        op = node.op_type if node is not None else None
        fresh = [np.empty(padded_shape(name), np.int8)]
        if node is None or name in known or name in constants:
            out = fresh if name not in known or name in constants else []
        elif op in elementwise_ops:
            out = [np.broadcast_to(v, padded_shape(name)) for i in node.input if i and i not in known
                   for v in leaves_of(i)]
        elif op == "Transpose":
            r = len(every[node.input[0]].shape)
            perm = list(helper.get_attribute_value(a) for a in node.attribute if a.name == "perm")
            perm = perm[0] if perm else list(reversed(range(r)))
            pp = list(range(R - r)) + [p + R - r for p in perm]
            out = [np.transpose(v, pp) for v in leaves_of(node.input[0])]
        elif op == "Expand":
            out = [np.broadcast_to(v, padded_shape(name)) for v in leaves_of(node.input[0])]
        elif op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
            try:
                out = [np.reshape(v, padded_shape(name), copy=False) for v in leaves_of(node.input[0])]
            except ValueError:
                out = fresh  # translated through contiguous(): a row-major temporary
        elif op == "Slice" and every[name].shape == every[node.input[0]].shape:
            out = leaves_of(node.input[0])
        elif op == "Slice" and all(i in known for i in node.input[1:] if i):
            r = len(every[node.input[0]].shape)
            starts, ends, axes, steps = slice_args(node)
            index = [slice(None)] * R
            for a, b, e, st in zip(axes, starts, ends, steps):
                index[(a + r if a < 0 else a) + (R - r)] = slice(b, e, st)
            out = [v[tuple(index)] for v in leaves_of(node.input[0])]
        else:
            out = fresh  # a computed value: its kernel writes a row-major temporary
        leaf_memo[name] = out
        return out
    leaf_memo = {}

    # only what the first output needs (LayerNormalization's Mean and
    # InvStdDev are fusor ops of their own)
    nodes = list(g.node)
    needed, live = set(), {g.output[0].name}
    for k in reversed(range(len(nodes))):
        if any(o in live for o in nodes[k].output):
            needed.add(k)
            live.update(i for i in nodes[k].input if i)
    result = g.output[0].name
    for node in (nodes[k] for k in sorted(needed)):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in ("Shape", "Size") and node.input[0] in values:
            v = values[node.input[0]]
            known[node.output[0]] = every[node.output[0]]
            continue
        if all((not i) or i in known for i in node.input):
            if node.op_type.startswith("Random") or node.op_type in ("If", "Loop", "Scan"):
                raise Skip(f"{node.op_type} (not a fusor op)")
            for o in node.output:  # folded: its value on this data set
                if o:
                    known[o] = every[o]
            continue
        op = node.op_type
        first = next((values[i] for i in node.input if i in values), None)
        if first is None:
            raise Skip(f"{node.op_type} reads a value of no translated node")
        if op in ("Identity",) or (op == "Cast" and helper.tensor_dtype_to_np_dtype(attrs["to"]) == np.dtype(first.dtype)):
            values[node.output[0]] = first
        elif op == "Cast":
            to = str(helper.tensor_dtype_to_np_dtype(attrs["to"]))
            if to not in CPP_TYPES:
                raise Skip(f"Cast to {to}")
            values[node.output[0]] = emit(f"fusor::cast<{CPP_TYPES[to]}>({first.cpp})", to, first.rank, first.dropped, first.heavy)
        elif op == "CastLike" and node.input[0] in known:
            known[node.output[0]] = known[node.input[0]].astype(values[node.input[1]].dtype)
        elif op == "CastLike":
            x = operand(node.input[0], None)
            target = values[node.input[1]].dtype if node.input[1] in values else str(known[node.input[1]].dtype)
            if node.input[0] not in values:
                raise Skip("CastLike of a constant onto a computed value")
            values[node.output[0]] = x if x.dtype == target else emit(
                f"fusor::cast<{CPP_TYPES[target]}>({x.cpp})", target, x.rank, x.dropped, x.heavy)
        elif op in UNARY:
            values[node.output[0]] = emit(f"fusor::{UNARY[op]}({first.cpp})", first.dtype, first.rank, first.dropped, first.heavy)
        elif op == "Swish":  # x * sigmoid(alpha * x): silu for alpha 1
            alpha = attrs.get("alpha", 1.0)
            expr = (f"fusor::silu({first.cpp})" if alpha == 1.0 else
                    f"fusor::mul({first.cpp}, fusor::sigmoid(fusor::mul({first.cpp}, {literal(np.float64(alpha), first.dtype)})))")
            values[node.output[0]] = emit(expr, first.dtype, first.rank, first.dropped, first.heavy)
        elif op in UNARY_ATTR:
            fn, spec = UNARY_ATTR[op]
            args = ", ".join(f"{float(np.float32(attrs.get(k, d))).hex()}f" for k, d in spec)  # float attributes
            values[node.output[0]] = emit(f"fusor::{fn}({first.cpp}, {args})", first.dtype, first.rank, first.dropped, first.heavy)
        elif op == "Sum":  # ONNX Sum folds left
            ops_ = [operand(n, first) for n in node.input]
            expr = ops_[0].cpp
            for o in ops_[1:]:
                expr = f"fusor::add({expr}, {o.cpp})"
            values[node.output[0]] = emit(expr, first.dtype, max(o.rank for o in ops_), any(o.dropped for o in ops_),
                                          any(o.heavy for o in ops_))
        elif op == "Clip":
            # ONNX Clip: absent bounds are -inf / +inf (fusor::clip takes both, in ONNX's order)
            bounds = []
            for k, inf in ((1, "-"), (2, "")):
                if len(node.input) > k and node.input[k]:
                    bounds.append(operand(node.input[k], first).cpp)
                else:
                    t = CPP_TYPES[first.dtype]
                    if first.dtype not in ("float32", "float64"):
                        raise Skip("Clip of integers with an absent bound")
                    bounds.append(f"{inf}std::numeric_limits<{t}>::infinity()")
            values[node.output[0]] = emit(f"fusor::clip({first.cpp}, {bounds[0]}, {bounds[1]})", first.dtype,
                                          first.rank, first.dropped, first.heavy)
        elif op in BINARY or op == "Where":
            names = list(node.input)
            ops_ = [operand(n, first) for n in names]
            if op == "Where":  # condition is bool; the branches share a dtype
                # (both branches constants: each keeps its own dtype, not the condition's bool)
                branch = next((values[n] for n in names[1:] if n in values), None)
                ops_ = [operand(names[0], None)] + [operand(n, branch) for n in names[1:]]
            tensors = [o for o in ops_ if o.rank > 0 or o.cpp.startswith(("in", "v"))]
            if sum(1 for o in tensors if o.dropped) and len(tensors) > 1:
                ops_ = [undropped(o, n) for o, n in zip(ops_, names)]
            rank = max(o.rank for o in ops_)
            if op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
                dtype = "bool"
            elif op == "Where":
                dtype = ops_[1].dtype
            else:
                dtype = first.dtype
            if op == "Where":
                expr = f"fusor::where({ops_[0].cpp}, {ops_[1].cpp}, {ops_[2].cpp})"
            else:
                expr = f"fusor::{BINARY[op]}({ops_[0].cpp}, {ops_[1].cpp})"
            values[node.output[0]] = emit(expr, dtype, rank, any(o.dropped for o in ops_), any(o.heavy for o in ops_))
        elif op in REDUCE:
            axes = list(attrs.get("axes", []))
            if len(node.input) > 1 and node.input[1]:
                if node.input[1] not in known:
                    raise Skip("computed axes")
                axes = [int(a) for a in known[node.input[1]].reshape(-1)]
            keep = attrs.get("keepdims", 1)
            noop = attrs.get("noop_with_empty_axes", 0)
            r = first.rank
            first = undropped(first, node.input[0])
            if not axes and noop:
                values[node.output[0]] = first
                continue
            if not axes:
                axes = list(range(r))
            padded = sorted({(a + r if a < 0 else a) + (R - r) for a in axes})
            expr = f"fusor::{REDUCE[op]}({first.cpp}, fusor::axis_list{{{', '.join(map(str, padded))}}})"
            values[node.output[0]] = emit(expr, first.dtype, r if keep else r - len(padded), not keep, True)
        elif op in ("Softmax", "LogSoftmax"):
            axis = attrs.get("axis", -1)
            axis = (axis + first.rank if axis < 0 else axis) + (R - first.rank)
            fn = "softmax" if op == "Softmax" else "log_softmax"
            values[node.output[0]] = emit(f"fusor::{fn}({first.cpp}, {axis})", first.dtype, first.rank, first.dropped, True)
        elif op == "MatMul":
            a, b = values.get(node.input[0]), values.get(node.input[1])
            if a is None or b is None or a.rank < 2 or b.rank < 2:
                raise Skip("MatMul with a constant or a 1-D operand")
            values[node.output[0]] = emit(f"fusor::matmul({a.cpp}, {b.cpp})", a.dtype, max(a.rank, b.rank),
                                          a.dropped or b.dropped, True)
        elif op == "Slice" and every[node.output[0]].shape == every[node.input[0]].shape and \
                all(i in known for i in node.input[1:] if i) and \
                (len(node.input) < 5 or not node.input[4] or np.all(known[node.input[4]] == 1)) and \
                np.all(known[node.input[1]] == 0):
            values[node.output[0]] = first  # a Slice that keeps every element: a no-op
        elif op == "Slice":
            if not all(i in known for i in node.input[1:] if i):
                raise Skip("Slice with computed starts / ends")
            first = undropped(first, node.input[0])
            r = first.rank
            starts, ends, axes, steps = slice_args(node)
            expr = first.cpp
            for a, b, e, st in zip(axes, starts, ends, steps):
                a = (a + r if a < 0 else a) + (R - r)
                big = 2 ** 62  # (ONNX's INT64 extremes clamp the same as these)
                expr = f"fusor::slice({expr}, {a}, {max(-big, min(big, b))}, {max(-big, min(big, e))}, {st})"
            values[node.output[0]] = emit(expr, first.dtype, r, False, first.heavy)
        elif op == "Concat":
            parts = [operand(n, first) for n in node.input if n]
            if any(v.dropped for v in parts):
                parts = [undropped(v, n) for v, n in zip(parts, [n for n in node.input if n])]
            r = max(v.rank for v in parts)
            axis = attrs["axis"]
            axis = (axis + r if axis < 0 else axis) + (R - r)
            values[node.output[0]] = emit(f"fusor::concat({axis}, {', '.join(v.cpp for v in parts)})", first.dtype,
                                          r, False, any(v.heavy for v in parts))
        elif op == "Pad":
            if node.input[1] not in known or (len(node.input) > 3 and node.input[3] and node.input[3] not in known):
                raise Skip("Pad with computed pads or axes")
            if len(node.input) > 2 and node.input[2] and node.input[2] not in known:
                raise Skip("Pad with a computed value")
            first = undropped(first, node.input[0])
            r = first.rank
            pads = [int(v) for v in known[node.input[1]].reshape(-1)]
            axes = list(range(r))
            if len(node.input) > 3 and node.input[3]:
                axes = [int(a) for a in known[node.input[3]].reshape(-1)]
            axes = [(a + r if a < 0 else a) + (R - r) for a in axes]
            value = float(known[node.input[2]].reshape(())) if len(node.input) > 2 and node.input[2] else 0.0
            value = (("-" if value < 0 else "") + "std::numeric_limits<double>::infinity()" if abs(value) == float("inf")
                     else "std::numeric_limits<double>::quiet_NaN()" if value != value else repr(value))
            mode = attrs.get("mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            expr = (f"fusor::pad({first.cpp}, {{{', '.join(map(str, pads))}}}, fusor::pad_mode::{mode}, "
                    f"{value}, fusor::axis_list{{{', '.join(map(str, axes))}}})")
            values[node.output[0]] = emit(expr, first.dtype, r, False, True)
        elif op == "Split":
            # each output a slice of the input along the axis (its extent from the evaluated output)
            first = undropped(first, node.input[0])
            r = first.rank
            axis = attrs.get("axis", 0)
            axis_r = axis + r if axis < 0 else axis
            start = 0
            for o in node.output:
                n = every[o].shape[axis_r]
                if o:
                    values[o] = emit(f"fusor::slice({first.cpp}, {axis_r + R - r}, {start}, {start + n})", first.dtype,
                                     r, False, first.heavy)
                start += n
        elif op == "Gather":
            # at the operands' own ranks (reshaped from their padded views),
            # then the result reshaped back to rank R: a shape op over the
            # gather's computed value (ops/view_map.hpp)
            d, i = values.get(node.input[0]), values.get(node.input[1])
            if d is None or i is None:
                raise Skip("Gather with a constant operand")
            dshape, ishape = list(every[node.input[0]].shape), list(every[node.input[1]].shape)
            oshape = list(every[node.output[0]].shape)
            if len(oshape) > R or not dshape:
                raise Skip("Gather to a rank above the views'")
            axis = attrs.get("axis", 0)
            axis = axis + len(dshape) if axis < 0 else axis
            d_own = f"fusor::reshape({undropped(d, node.input[0]).cpp}, fusor::shape<{len(dshape)}>{{{', '.join(map(str, dshape))}}})"
            i_own = (f"fusor::reshape({undropped(i, node.input[1]).cpp}, fusor::shape<{len(ishape)}>{{{', '.join(map(str, ishape))}}})"
                     if ishape else None)
            if i_own is None:
                raise Skip("Gather with a scalar index")
            padded = [1] * (R - len(oshape)) + oshape
            gathered = f"fusor::gather({d_own}, {i_own}, {axis})"
            if len(dshape) == 1:  # (1-D data: the indices' padded layout is the result's, no reshape back)
                gathered = f"fusor::gather({d_own}, {undropped(i, node.input[1]).cpp}, 0)"
                oshape = padded
            expr = (gathered if len(oshape) == R else
                    f"fusor::reshape({gathered}, fusor::shape<{R}>{{{', '.join(map(str, padded))}}})")
            values[node.output[0]] = emit(expr, d.dtype, len(oshape), False, True)
        elif op == "Conv":
            # 2-D as conv2d; 1-D over [N, C, L] as conv2d over [N, C, 1, L]
            # with a 1 x k kernel; the operands reshaped from their padded
            # views, the result reshaped back to rank R
            x, w = values.get(node.input[0]), values.get(node.input[1])
            has_bias = len(node.input) > 2 and bool(node.input[2])
            b = values.get(node.input[2]) if has_bias else None
            if x is None or w is None or (has_bias and b is None):
                raise Skip("Conv with a constant operand")
            xs, ws = list(every[node.input[0]].shape), list(every[node.input[1]].shape)
            os_ = list(every[node.output[0]].shape)
            spatial = len(xs) - 2
            if spatial not in (1, 2):
                raise Skip(f"{spatial}-D Conv")
            mode = attrs.get("auto_pad", b"NOTSET")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            if mode != "NOTSET":
                raise Skip("Conv with auto_pad")
            pads = list(attrs.get("pads", [0] * (2 * spatial)))
            strides = list(attrs.get("strides", [1] * spatial))
            dil = list(attrs.get("dilations", [1] * spatial))
            if spatial == 1:
                xs, ws = xs[:2] + [1] + xs[2:], ws[:2] + [1] + ws[2:]
                pads, strides, dil = [0, pads[0], 0, pads[1]], [1] + strides, [1] + dil
            own = lambda v, n, s: f"fusor::reshape({undropped(v, n).cpp}, fusor::shape<{len(s)}>{{{', '.join(map(str, s))}}})"
            conv_params = (f"fusor::conv2d_params{{.stride = {{{strides[0]}, {strides[1]}}}, .padding = {{{', '.join(map(str, pads))}}}, "
                      f".dilation = {{{dil[0]}, {dil[1]}}}, .groups = {attrs.get('group', 1)}}}")
            bias = own(b, node.input[2], [ws[0]]) if has_bias else "nullptr"
            conv = f"fusor::conv2d({own(x, node.input[0], xs)}, {own(w, node.input[1], ws)}, {bias}, {conv_params})"
            padded = [1] * (R - len(os_)) + os_
            values[node.output[0]] = emit(f"fusor::reshape({conv}, fusor::shape<{R}>{{{', '.join(map(str, padded))}}})",
                                          x.dtype, len(os_), False, True)
        elif op == "GatherElements":
            d, i = values.get(node.input[0]), values.get(node.input[1])
            if d is None or i is None:
                raise Skip("GatherElements with a constant operand")
            axis = attrs.get("axis", 0)
            axis = (axis + d.rank if axis < 0 else axis) + (R - d.rank)
            values[node.output[0]] = emit(f"fusor::gather_elements({d.cpp}, {i.cpp}, {axis})", d.dtype, d.rank, False, True)
        elif op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze") and node.output[0] == result and first.heavy:
            # the result reshaped: the same elements in the same order, so the
            # test views its output buffer at the body's shape (as a user would)
            # and compares the element count and the data, not the shape
            values[result] = Value(first.cpp, first.dtype, first.rank, True, True)
        elif op in SHAPE_OPS:
            shape = list(every[node.output[0]].shape)
            if len(shape) > R:
                raise Skip(f"{op} to rank {len(shape)}")
            first = undropped(first, node.input[0])
            padded = [1] * (R - len(shape)) + shape
            if op == "Transpose":
                perm = list(attrs.get("perm", reversed(range(first.rank))))
                pp = list(range(R - first.rank)) + [p + R - first.rank for p in perm]
                expr = f"fusor::permute({first.cpp}, {{{', '.join(map(str, pp))}}})"
            elif op == "Expand":
                expr = f"fusor::expand({first.cpp}, fusor::shape<{R}>{{{', '.join(map(str, padded))}}})"
            else:
                x = first.cpp
                try:
                    for v in leaves_of(node.input[0]):
                        np.reshape(v, padded, copy=False)
                except ValueError:  # strides that cannot express the shape: NumPy's reshape copies here
                    x = f"fusor::contiguous({x})"
                expr = f"fusor::reshape({x}, fusor::shape<{R}>{{{', '.join(map(str, padded))}}})"
            values[node.output[0]] = emit(expr, first.dtype, len(shape), False, first.heavy)
        else:
            raise Skip(f"no mapping for {op}")
    out = g.output[0].name
    if out not in values:
        raise Skip("output folded to a constant")
    return params, lines, values[out], R, constants


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "tests" / "conformance" / "onnx_expanded_cases.inc"))
    ap.add_argument("--data", default=str(ROOT / "tests" / "data" / "onnx"))
    ap.add_argument("--own-data", default=str(ROOT / "tests" / "data" / "onnx_expanded"))
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--list", action="store_true", help="print every case with its outcome")
    ap.add_argument("--markdown", action="store_true",
                    help="print the skipped cases as a table by op and reason (tests/conformance/README.md)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import numpy as np
    import onnx
    from onnx.backend.test.case import node as node_cases

    data = pathlib.Path(args.data)
    cases = [c for c in node_cases.collect_testcases(None) if c.name.endswith("_expanded")]
    entries, skipped = [], []
    own = pathlib.Path(args.own_data)
    # the function op each body spells: the op of its base case's single node
    singles = {c.name: c.model.graph.node[0].op_type for c in node_cases.collect_testcases(None)
               if len(c.model.graph.node) == 1}
    op_of = {c.name: singles.get(c.name[: -len("_expanded")], "?") for c in cases}
    for case in sorted(cases, key=lambda c: c.name):
        base = case.name[: -len("_expanded")]
        try:
            params, lines, out, rank, constants = translate(case, np)
            if out.dtype not in CPP_TYPES:
                raise Skip(f"output dtype {out.dtype}")
            ins, outs = case.data_sets[0]
            graph_inputs = [i.name for i in case.model.graph.input]
            arrays = [constants[gname] if gname in constants else np.asarray(ins[graph_inputs.index(gname)])
                      for gname, _, _ in params]
            want = np.asarray(outs[0])
            if sum(a.nbytes for a in arrays) + want.nbytes > args.max_bytes:
                raise Skip("data over --max-bytes")
        except Skip as why:
            skipped.append((case.name, str(why)))
            continue
        # the base case's data where they are the same (the computed inputs in
        # its order, the same expected output), else the case's own data in
        # tests/data/onnx_expanded (the opset-13 base cases drew other random data)
        source, index = None, list(range(len(params)))
        if (data / base / "case.json").exists():
            meta = json.loads((data / base / "case.json").read_text())
            try:
                idx = [meta["inputs"].index(gname) for gname, _, _ in params]
                same = meta["data_sets"] >= 1 and all(
                    np.array_equal(np.load(data / base / f"set0_input_{k}.npy"), a, equal_nan=True)
                    for k, a in zip(idx, arrays)) and np.array_equal(
                    np.load(data / base / "set0_output_0.npy"), want, equal_nan=True)
            except (ValueError, FileNotFoundError):
                same = False
            if same:
                source, index = f"onnx/{base}", idx
        if source is None:
            dest = own / case.name
            dest.mkdir(parents=True, exist_ok=True)
            meta = {"name": case.name,
                    "opset": [{"domain": o.domain, "version": o.version} for o in case.model.opset_import],
                    "inputs": [gname for gname, _, _ in params], "outputs": [case.model.graph.output[0].name],
                    "nodes": [{"op_type": n.op_type, "inputs": list(n.input), "outputs": list(n.output),
                               "attributes": {}} for n in case.model.graph.node],
                    "initializers": [], "rtol": float(case.rtol), "atol": float(case.atol), "data_sets": 1,
                    "source": f"onnx {onnx.__version__}, onnx.backend.test.case.node (the _expanded body; "
                              "attributes omitted: the body is tests/conformance/onnx_expanded_cases.inc)"}
            (dest / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
            for k, a in enumerate(arrays):
                np.save(dest / f"set0_input_{k}.npy", np.ascontiguousarray(a))
            np.save(dest / "set0_output_0.npy", np.ascontiguousarray(want))
            source = f"onnx_expanded/{case.name}"
        entries.append((case.name, source, index, params, lines, out, rank))

    text = ["// Generated by tools/import_onnx_expanded.py from onnx " + onnx.__version__ + ": do not edit.",
            "// Each ONNX `_expanded` node case (a function op written as its function body)",
            "// as a fusor expression over rank-4 views of the base case's inputs (the",
            "// body's highest rank where it is above 4); see",
            "// test_onnx_expanded.cpp and tests/conformance/README.md.",
            f"// {len(entries)} cases translated, {len(skipped)} skipped (--list prints them).", ""]
    # two translation units (test_onnx_expanded.cpp, _part1.cpp) of about equal size: they compile in parallel
    sizes = [len(e[4]) + 4 for e in entries]
    half = next((k for k in range(len(entries)) if 2 * sum(sizes[:k]) >= sum(sizes)), len(entries))
    for k, (name, base, base_index, params, lines, out, rank) in enumerate(entries):
        if k in (0, half):
            if k:
                text.append("#endif")
            text.append(f"#if !defined(FUSOR_EXPANDED_PART) || FUSOR_EXPANDED_PART == {int(k == half)}")
        dtypes = ", ".join(CPP_TYPES[d] for _, _, d in params)
        text.append(f"FUSOR_ONNX_EXPANDED({name}, \"{base}\", ({', '.join(map(str, base_index))}), ({dtypes}), {CPP_TYPES[out.dtype]}, {int(out.dropped)}, {rank},")
        text.append(f"    [](const auto& case_inputs) {{")
        text.append(f"      auto [{', '.join(p for _, p, _ in params)}] = case_inputs;")
        for ln in lines:
            text.append("      " + ln)
        text.append(f"      return {out.cpp};")
        text.append("    })")
    if entries:
        text.append("#endif")
    pathlib.Path(args.out).write_text("\n".join(text) + "\n")
    if args.list:
        for name, why in skipped:
            print(f"skip {name}: {why}")
        for name, *_ in entries:
            print(f"ok   {name}")
    if args.markdown:
        groups = {}
        for name, why in skipped:
            op = op_of.get(name, "?")
            groups.setdefault((op, why), []).append(name)
        print("| op | cases | reason |\n|---|---|---|")
        for (op, why), names in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
            print(f"| {op} | {len(names)} | {why} |")
    print(f"import_onnx_expanded: {len(entries)} translated, {len(skipped)} skipped -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
