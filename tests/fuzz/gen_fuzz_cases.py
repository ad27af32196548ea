#!/usr/bin/env python3
"""Generates tests/fuzz/fuzz_cases.inc: random elementwise expression DAGs for
the differential fuzzer (fused host() vs unfused(), see fuzz_main.cpp).

fusor expressions are C++ types, so their *structure* is fixed at compile time:
this script draws ~60 expression templates once (fixed seed, stdlib only) and
the committed output is compiled into the fuzzer. Everything else (extents,
broadcasting, strides, alignment, aliasing, values, run-time scalars) is drawn
at run time by the driver from a 64-bit seed per draw.

Each case is

    template <class V0, class V1, class V2>
    auto case_K(const V0& a, const V1& b, const V2& c);

returning one expression or a fusor::siblings(...) set, plus `cfg_K`, the view
types it is instantiated with (element type, static/dynamic extents, const),
and `info_K`, a one-line description. The cases are split into PARTS
translation units (FZ_CASES_PART<p>) of about equal estimated compile cost.

What the cases contain: the elementwise ops of the op registry
(include/fusor/ops/registry.hpp: unary, attribute ops with default, literal
or run-time attributes, binary; not those with bool results nor the
integer-only bitwise ops, see NOT_DRAWN), gelu, clip, where, the C++
operators, run-time scalars (fz::sf/sd/si/sb: float, double,
int64 and bool, values drawn per draw), compile-time constants (0.5_c, 1.0_c,
-0.0_c, ...), identity-tagged inputs used several times next to untagged views
of the same tensor, reused subexpressions (a DAG; reused provably identical
subexpressions become shared producers), fusor::materialize / fusor::fuse
hints, formulas the canonicalizer rewrites (x * sigmoid(x), the GELU erf
formula, relu(relu(x)), x * 1, x - 0, x + -0), multi-output siblings, input
ranks 0..4 (missing leading dims broadcast), static extents (static 1s and
fully static shapes), f32, f16, mixed f32/f16, i32 and i32/f32 inputs
(sometimes a bool tensor), and per root an output type (f32, f16, f64, i32).

Size: compile time is the budget (fusor costs ~0.5 s of g++ CPU per expanded
node per case, README.md), so --nodes caps the expanded nodes over all cases.
Cases 0..11 pin rare shapes (a bare view, materialize(fuse(x)), lean chains of
depth 8, 7, 6, 5, siblings x2, x2, x3, siblings with a bare view root, two
shared producers); the others get 2..6 nodes each at random.

Known-bug avoidance (see README.md in this folder): by default the generator
avoids the constructs of open library bugs it found, so that the CI run stays
green and keeps testing everything else; --allow-bug FZ-n lifts that. Fixed
bugs' constructs are always generated: nodes with only weak operands
(scalars/constants; FZ-1) and fusor::materialize over a subexpression with a
shared producer (FZ-2).

Usage:
    gen_fuzz_cases.py                 # rewrite fuzz_cases.inc next to this script
    gen_fuzz_cases.py --check         # exit 1 if fuzz_cases.inc is not up to date
    gen_fuzz_cases.py --seed 7 --cases 80 --out /tmp/x.inc
"""
import argparse
import os
import random
import re
import sys

DEFAULT_SEED = 20261129
DEFAULT_CASES = 60
DEFAULT_NODES = 180
# Open library bugs (README.md); their constructs are not generated unless --allow-bug.
KNOWN_BUGS = []
# Fixed ones: their constructs are always generated (regressions).
FIXED_BUGS = ['FZ-1', 'FZ-2']
PARTS = 3
# Compile time is the budget: fusor costs ~0.5 s of g++ -O3 CPU per expanded
# node and case (fused + unfused instantiations), see README.md.
MAX_NODES = 10
# Depths 2..8; most cases are small (compile time), a few are deep chains.
DEPTH_WEIGHTS = [36, 24, 13, 8, 6, 6, 7]

# ---------------------------------------------------------------- op tables
# The elementwise ops come from fusor's op registry
# (include/fusor/ops/registry.hpp, read by tools/op_registry.py): a new
# registry line is drawn without editing this script. Not drawn, and why:
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools'))
import op_registry  # noqa: E402

NOT_DRAWN = {
    'bitwise_not': 'integer operands only, and the cases mix float and int operands',
    'bitwise_and': 'integer operands only, and the cases mix float and int operands',
    'bitwise_or': 'integer operands only, and the cases mix float and int operands',
    'bitwise_xor': 'integer operands only, and the cases mix float and int operands',
}
# Ops with bool results (comparisons, logical ops, isnan, isinf) are not
# drawn either: the generator's operand kinds are float and int
# (tests/host/test_ops_comparison.cpp covers them, fused vs unfused).
try:
    _ALL_OPS = op_registry.ops()
except op_registry.RegistryError as e:
    sys.exit(f"gen_fuzz_cases: {e}")
for _name in NOT_DRAWN:
    if not any(op.name == _name for op in _ALL_OPS):
        sys.exit(f"gen_fuzz_cases: NOT_DRAWN names {_name}, which the op registry does not list")
_REGISTRY = [op for op in _ALL_OPS if op.name not in NOT_DRAWN and op.result != 'boolean']
# Unary ops: name -> True when the result is floating even for integer input
# (uminus is the operator -x; gelu is the erf form, a factory of its own).
UNARY = {op.name: op.result == 'floating' for op in _REGISTRY if op.table == 'FUSOR_UNARY_OPS'}
UNARY.update({'uminus': False, 'gelu': True})
# Attribute ops: name -> number of float attributes.
ATTR_UNARY = {op.name: op.attributes for op in _REGISTRY if op.table == 'FUSOR_ATTRIBUTE_OPS'}
BINARY = [op.name for op in _REGISTRY if op.table == 'FUSOR_BINARY_OPS'] + ['+', '-', '*', '/']
# Binary ops whose result is floating even for integer operands (none yet).
BINARY_FLOATING = {op.name for op in _REGISTRY if op.table == 'FUSOR_BINARY_OPS' and op.result == 'floating'}
TERNARY = ['clip', 'where']
HINTS = ['materialize', 'fuse']
ARITHMETIC = ['add', 'sub', 'mul', 'div', 'pow', '+', '-', '*', '/']

# Compile-time constants (C++ spelling, value class). Rule-relevant ones
# (1, 0, -0) are frequent on purpose.
CONSTANTS = ['0.5_c', '1.0_c', '1.0_c', '0.0_c', '(-0.0_c)', '(-0.0_c)', '2.0_c', '(-3.0_c)', '0.1_c',
             '1e-3_c', '20.0_c', '6.0_c', '0.7071067811865476_c', '1e30_c', '(-1e-40_c)']
# Integer literals with _c are int64 constants (so int tensors stay integral).
INT_CONSTANTS = ['2_c', '1_c', '0_c', '(-1_c)', '3_c']
FLOAT_LITERALS = ['2.0f', '0.5f', '-1.5f', '3.0f', '1e-3f', '-0.0f', '0.25f', '100.0f']
ATTR_LITERALS = ['0.1f', '2.0f', '-1.5f', '0.0f', '1.0f', '0.3f', '-0.0f', '1e-20f']


SHORT = {'float': 'f32', '__half': 'f16', 'std::int32_t': 'i32', 'bool': 'bool', 'double': 'f64'}


class Expr:
    """A C++ expression with what the generator needs to know about its type."""

    def __init__(self, code, nodes, depth, inputs, weak, kind, si, number=False, atom=False, subs=None):
        self.code = code      # C++ text
        self.key = code       # structure (a named reference keeps its expression's key)
        self.subs = dict(subs or {})  # provably identical node subtrees inside: key -> occurrences
        self.nodes = nodes    # nodes once expanded into a tree (compile-time size)
        self.depth = depth    # longest leaf-to-root path in nodes
        self.inputs = inputs  # frozenset of input indices used
        self.weak = weak      # only scalars/constants below (weakly typed)
        self.kind = kind      # 'int' or 'float' (value class of the result)
        self.si = si          # provably identical (tagged views, constants, attribute-free ops)
        self.number = number  # a C++ number (not a fusor expression)
        self.atom = atom      # needs no parentheses

    def shared_inside(self):
        """True when a provably identical node subtree occurs twice (a shared producer)."""
        return any(v >= 2 for v in self.subs.values())


def merge_subs(parts, self_key=None):
    out = {}
    for p in parts:
        for k, v in p.subs.items():
            out[k] = out.get(k, 0) + v
    if self_key is not None:
        out[self_key] = out.get(self_key, 0) + 1
    return out


class CaseGen:
    def __init__(self, rng, k, allow, cap=None):
        self.rng = rng
        self.k = k
        self.cap = cap      # node budget of this case (None: MAX_NODES)
        self.allow = allow  # known bugs whose constructs may be generated ('FZ-1', 'FZ-2')
        self.lines = []
        self.names = 0
        self.pool = []          # named subexpressions available for reuse (DAG)
        self.tags_used = set()
        self.features = set()
        self.reused = 0
        self.allowed = [0, 1, 2]  # inputs leaves may read

    # ------------------------------------------------------------ config
    def draw_config(self):
        r = self.rng
        mode = r.choices(['f32', 'f16', 'mixed', 'i32', 'i32f32'], weights=[36, 18, 18, 16, 12])[0]
        if mode == 'f32':
            dts = ['float'] * 3
        elif mode == 'f16':
            dts = ['__half'] * 3
        elif mode == 'mixed':
            dts = [r.choice(['float', '__half']) for _ in range(3)]
            if len(set(dts)) == 1:
                dts[r.randrange(3)] = 'float' if dts[0] == '__half' else '__half'
        elif mode == 'i32':
            dts = ['std::int32_t'] * 3
        else:
            dts = [r.choice(['std::int32_t', 'float']) for _ in range(3)]
            if len(set(dts)) == 1:
                dts[r.randrange(3)] = 'float' if dts[0] == 'std::int32_t' else 'std::int32_t'
        if mode != 'f16' and r.random() < 0.07:
            dts[2] = 'bool'  # a bool tensor (a natural where condition)
        self.mode = mode
        self.dtypes = dts
        self.kinds = ['float' if d in ('float', '__half') else 'int' for d in dts]
        ranks = [r.choices([0, 1, 2, 3, 4], weights=[8, 24, 26, 22, 20])[0] for _ in range(3)]
        if max(ranks) == 0 and r.random() < 0.7:
            ranks[r.randrange(3)] = r.randint(1, 4)
        self.ranks = ranks
        rmax = max(ranks)
        ext_mode = r.choices(['dyn', 'static1', 'static'], weights=[68, 22, 10])[0]
        self.ext_mode = ext_mode
        exts = []
        if ext_mode == 'static':
            out = [r.choice([0, 1, 2, 3, 4, 5, 7]) if r.random() < 0.12 else r.choice([1, 2, 3, 4, 5, 7])
                   for _ in range(rmax)]
            for i in range(3):
                e = []
                for d in range(ranks[i]):
                    od = out[rmax - ranks[i] + d]
                    e.append('1' if r.random() < 0.3 else str(od))
                exts.append(e)
        else:
            for i in range(3):
                e = []
                for d in range(ranks[i]):
                    e.append('1' if ext_mode == 'static1' and r.random() < 0.3 else 'fusor::dyn')
                exts.append(e)
        self.exts = exts
        self.const = [r.random() < 0.7 for _ in range(3)]
        # Output element type of floating results (integer results are written
        # in their own type); siblings may get different ones. f32 -> i32
        # saturates, f64 widens.
        def one():
            p = r.random()
            if p < 0.06:
                return 'std::int32_t'
            if p < 0.11:
                return 'double'
            if mode == 'f16':
                return r.choice(['__half', '__half', 'float'])
            if mode == 'mixed':
                return r.choice(['__half', 'float'])
            return r.choice(['float', 'float', '__half'])
        self.outs = [one() for _ in range(3)]

    def view_type(self, i):
        t = ('const ' if self.const[i] else '') + self.dtypes[i]
        return 'fz::in<%s, fusor::extents<%s>>' % (t, ', '.join(self.exts[i]))

    def short_type(self, i):
        n = SHORT[self.dtypes[i]]
        ex = ['?' if e == 'fusor::dyn' else e for e in self.exts[i]]
        return '%s%s[%s]' % ('const ' if self.const[i] else '', n, ','.join(ex))

    # ------------------------------------------------------------ leaves
    def input_leaf(self, i=None, tagged=None):
        r = self.rng
        if i is None:
            i = r.choice(self.allowed)
        if tagged is None:
            tagged = r.random() < 0.65
        name = 'abc'[i]
        if tagged:
            self.tags_used.add(i)
            return Expr('t' + name, 0, 0, frozenset([i]), False, self.kinds[i], True, atom=True)
        return Expr(name, 0, 0, frozenset([i]), False, self.kinds[i], False, atom=True)

    def weak_leaf(self, for_int=False):
        """A run-time scalar, literal or compile-time constant."""
        r = self.rng
        p = r.random()
        if for_int or (self.mode.startswith('i32') and p < 0.35):
            if r.random() < 0.8:
                return Expr('fz::si(%d)' % r.randrange(8), 0, 0, frozenset(), True, 'int', False, number=True, atom=True)
            return Expr(r.choice(['2', '-1', '3', '0']), 0, 0, frozenset(), True, 'int', False, number=True, atom=True)
        if p < 0.38:
            return Expr('fz::sf(%d)' % r.randrange(8), 0, 0, frozenset(), True, 'float', False, number=True, atom=True)
        if p < 0.50:
            return Expr('fz::sd(%d)' % r.randrange(8), 0, 0, frozenset(), True, 'float', False, number=True, atom=True)
        if p < 0.60:
            return Expr(r.choice(FLOAT_LITERALS), 0, 0, frozenset(), True, 'float', False, number=True, atom=True)
        if p < 0.65 and not self.mode.startswith('i32'):
            return Expr('fz::si(%d)' % r.randrange(8), 0, 0, frozenset(), True, 'int', False, number=True, atom=True)
        if self.mode.startswith('i32') and p < 0.8:
            return Expr(r.choice(INT_CONSTANTS), 0, 0, frozenset(), True, 'int', True, atom=True)
        return Expr(r.choice(CONSTANTS), 0, 0, frozenset(), True, 'float', True, atom=True)

    def as_expression(self, e):
        """e as a fusor expression (numbers wrapped as fusor::scalar)."""
        if not e.number:
            return e.code
        t = 'float' if e.code.startswith('fz::sf') or e.code.endswith('f') else (
            'double' if e.code.startswith('fz::sd') else 'std::int64_t')
        if e.code.startswith('fz::sb'):
            t = 'bool'
        return 'fusor::scalar<%s>{%s}' % (t, e.code)

    # ------------------------------------------------------------ nodes
    def name(self, e):
        """Binds e to a local (so it can be reused: a DAG) and returns the reference."""
        n = 't%d' % self.names
        self.names += 1
        self.lines.append('  const auto %s = %s;' % (n, e.code))
        ref = Expr(n, e.nodes, e.depth, e.inputs, e.weak, e.kind, e.si, atom=True, subs=e.subs)
        ref.key = e.key
        self.pool.append(ref)
        return ref

    def node(self, op, args, attrs=None):
        """Builds op(args...) (args are Expr); returns None if not allowed."""
        e = self.node_impl(op, args, attrs)
        if e is None:
            return None
        if not e.weak and any(a.weak and a.nodes > 0 for a in args) and op in ARITHMETIC:
            self.features.add('weak node in arithmetic')
        e.key = e.code
        for a in args:
            if a.code != a.key:  # a named reference: use its expression's structure
                e.key = re.sub(r'\b%s\b' % re.escape(a.code), lambda m, k=a.key: k, e.key)
        e.subs = merge_subs(args, e.key if (e.si and e.nodes > 0) else None)
        return e

    def node_impl(self, op, args, attrs=None):
        weak = all(a.weak for a in args)
        if weak and 'FZ-1' not in self.allow:
            return None
        if op == 'materialize' and args[0].shared_inside() and 'FZ-2' not in self.allow:
            return None
        kinds = [a.kind for a in args]
        strong_kinds = [a.kind for a in args if not a.weak]
        inputs = frozenset().union(*[a.inputs for a in args])
        nodes = 1 + sum(a.nodes for a in args)
        depth = 1 + max(a.depth for a in args)
        si = all(a.si for a in args) and attrs is None
        if op in UNARY or op in ATTR_UNARY or op in HINTS:
            x = args[0]
            if x.number:
                return None
            if op in UNARY:
                floating = UNARY[op]
            else:
                floating = op in ATTR_UNARY
            kind = 'float' if floating else x.kind
            if op == 'uminus':
                code = '(-%s)' % x.code
            elif op in ATTR_UNARY:
                code = 'fusor::%s(%s%s)' % (op, x.code, ''.join(', ' + a for a in attrs or []))
            else:
                code = 'fusor::%s(%s)' % (op, x.code)
            if op in HINTS:
                self.features.add(op)
                si = x.si
            if op in ATTR_UNARY:
                si = False
            return Expr(code, nodes, depth, inputs, weak, kind, si, atom=not code.startswith('('))
        if op in BINARY:
            x, y = args
            if x.number and y.number:
                return None
            if op == 'pow':
                # ONNX Pow: the result has the base's type; an integer base with a
                # floating exponent converts pow(double, double) back to the
                # integer type (undefined when out of range): never generated.
                if x.kind == 'int' and y.kind == 'float':
                    return None
                kind = x.kind if not x.weak else ('float' if 'float' in kinds else 'int')
            elif op in BINARY_FLOATING:
                kind = 'float'  # the registry's result column: f32 even for integer operands
            else:
                kind = self.promote(args)
            if op in '+-*/':
                code = '(%s %s %s)' % (x.code, op, y.code)
                atom = False
            else:
                code = 'fusor::%s(%s, %s)' % (op, x.code, y.code)
                atom = True
            return Expr(code, nodes, depth, inputs, weak, kind, si, atom=atom)
        if op == 'clip':
            x, lo, hi = args
            if x.number:
                return None
            return Expr('fusor::clip(%s, %s, %s)' % (x.code, lo.code, hi.code), nodes, depth, inputs, weak,
                        self.promote(args), si, atom=True)
        if op == 'where':
            c, x, y = args
            if c.number and x.number and y.number:
                return None
            return Expr('fusor::where(%s, %s, %s)' % (c.code, x.code, y.code), nodes, depth, inputs, weak,
                        self.promote([x, y]), si, atom=True)
        raise ValueError(op)

    @staticmethod
    def promote(args):
        strong = [a.kind for a in args if not a.weak]
        weak = [a.kind for a in args if a.weak]
        if 'float' in strong:
            return 'float'
        if strong:  # all strong operands int: a weak float keeps its floating nature
            return 'float' if 'float' in weak else 'int'
        return 'float' if 'float' in weak else 'int'

    def operand(self, budget, want_strong=False, max_depth=2):
        """A non-spine operand: a leaf, a reused subexpression or a small node."""
        r = self.rng
        p = r.random()
        fits = [e for e in self.pool if e.nodes <= budget[0] and e.depth <= max_depth + 2]
        if fits and p < 0.28:
            e = r.choice(fits)
            budget[0] -= e.nodes
            self.reused += 1
            if e.si and e.nodes > 0:
                self.features.add('shared producer')
            return e
        if budget[0] >= 1 and max_depth >= 1 and p < 0.42:
            x = self.input_leaf()
            op = r.choice(list(UNARY) + list(ATTR_UNARY))
            e = self.make(op, [x])
            if e is not None:
                budget[0] -= e.nodes
                return e
        if want_strong or p < 0.74:
            return self.input_leaf()
        if 'FZ-1' in self.allow and r.random() < 0.5:
            # a weak node: only scalars/constants below (FZ-1)
            c = Expr(r.choice(INT_CONSTANTS if self.mode.startswith('i32') else CONSTANTS), 0, 0, frozenset(), True,
                     'int' if self.mode.startswith('i32') else 'float', True, atom=True)
            w = self.node(r.choice(['add', 'sub', 'mul', 'max', '+', '*', '/']), [self.weak_leaf(), c])
            if w is not None:
                return w
        return self.weak_leaf()

    def attrs_for(self, op):
        r = self.rng
        n = ATTR_UNARY[op]
        p = r.random()
        if p < 0.4:
            return None
        out = []
        for _ in range(n if r.random() < 0.7 else 1):
            out.append(('fz::sf(%d)' % r.randrange(8)) if r.random() < 0.5 else r.choice(ATTR_LITERALS))
        return out

    def make(self, op, args):
        attrs = self.attrs_for(op) if op in ATTR_UNARY else None
        return self.node(op, args, attrs)

    def pick_op(self, x_kind):
        r = self.rng
        p = r.random()
        if p < 0.36:
            return r.choice(list(UNARY))
        if p < 0.46:
            return r.choice(list(ATTR_UNARY))
        if p < 0.86:
            return r.choice(BINARY)
        if p < 0.96:
            return r.choice(TERNARY)
        return r.choice(HINTS)

    def step(self, x, budget, levels_left):
        """One spine step on x (depth +1, or more for a rewrite pattern)."""
        r = self.rng
        # rewrite-rule patterns (the canonicalizer turns them into other ops)
        if levels_left >= 2 and budget[0] >= 2 and x.si and r.random() < 0.12:
            kind = r.choice(['silu', 'relu2', 'gelu'] if levels_left >= 4 and budget[0] >= 5 else ['silu', 'relu2'])
            if kind == 'silu':
                e = Expr('(%s * fusor::sigmoid(%s))' % (x.code, x.code), 2 + 2 * x.nodes, x.depth + 2,
                         x.inputs, False, 'float', True, subs=merge_subs([x, x]))
                budget[0] -= 2 + x.nodes
                self.features.add('x*sigmoid(x)')
                return e, 2
            if kind == 'relu2':
                e = Expr('fusor::relu(fusor::relu(%s))' % x.code, 2 + x.nodes, x.depth + 2, x.inputs, False, x.kind,
                         True, atom=True, subs=x.subs)
                budget[0] -= 2
                self.features.add('relu(relu(x))')
                return e, 2
            e = Expr('((0.5_c * %s) * (1.0_c + fusor::erf(%s * 0.7071067811865476_c)))' % (x.code, x.code),
                     5 + 2 * x.nodes, x.depth + 4, x.inputs, False, 'float', True, subs=merge_subs([x, x]))
            budget[0] -= 5 + x.nodes
            self.features.add('gelu formula')
            return e, 4
        force = self.k in (10, 11) and 'shared producer' not in self.features
        if levels_left >= 2 and (force or (budget[0] >= 4 and r.random() < 0.14)):
            # a shared producer: one provably identical subexpression read by two
            # consumers (the planner recomputes or materializes it; run-time choice)
            y = self.node(r.choice([u for u in UNARY if u != 'uminus']), [self.input_leaf(tagged=True)])
            if y is not None:
                y = self.name(y)
                for op1 in r.sample(['add', 'mul', 'max', '-', '/', 'min', 'prelu'], 3):
                    e1 = self.node(op1, [x, y])
                    if e1 is None:
                        continue
                    for op2 in r.sample(['add', 'mul', 'sub', '*', '+', 'min', 'div'], 3):
                        e2 = self.node(op2, [y, e1] if r.random() < 0.5 else [e1, y])
                        if e2 is not None:
                            budget[0] -= 2 + 2 * y.nodes
                            self.features.add('shared producer')
                            return e2, 2
        for _ in range(40):
            op = self.pick_op(x.kind)
            if op in UNARY or op in ATTR_UNARY or op in HINTS:
                args = [x]
            elif op in BINARY:
                y = self.operand(budget, max_depth=min(2, levels_left))
                if r.random() < 0.15 and op in ('add', 'sub', 'mul', 'div', '+', '-', '*', '/'):
                    y = Expr(r.choice(['1.0_c', '0.0_c', '(-0.0_c)']), 0, 0, frozenset(), True, 'float', True, atom=True)
                    self.features.add('identity constant')
                if op == 'pow' and x.kind == 'int':
                    y = self.weak_leaf(for_int=True) if r.random() < 0.5 else self.int_operand()
                    if y is None:
                        continue
                args = [x, y] if r.random() < 0.6 else [y, x]
            elif op == 'clip':
                lo = self.weak_leaf() if r.random() < 0.6 else self.operand(budget, max_depth=0)
                hi = self.weak_leaf() if r.random() < 0.6 else self.operand(budget, max_depth=0)
                args = [x, lo, hi]
            else:  # where
                c = self.operand(budget, max_depth=1) if r.random() < 0.7 else Expr(
                    'fz::sb(%d)' % r.randrange(4), 0, 0, frozenset(), True, 'int', False, number=True, atom=True)
                y = self.operand(budget, max_depth=1)
                pos = r.randrange(3)
                args = [c, x, y] if pos == 0 else ([x, c, y] if pos == 1 else [c, y, x])
            e = self.make(op, args)
            if e is not None:
                budget[0] -= 1
                return e, 1
        raise RuntimeError('no op fits')

    def int_operand(self):
        ints = [i for i in self.allowed if self.kinds[i] == 'int']
        if not ints:
            return None
        return self.input_leaf(self.rng.choice(ints))

    def spine(self, depth, budget):
        """An expression of exactly `depth` levels built along one spine."""
        r = self.rng
        x = self.input_leaf()
        if r.random() < 0.15:
            h = self.node(r.choice(HINTS), [x])
            x = h
            level = 1
        else:
            level = 0
        while level < depth:
            x, used = self.step(x, budget, depth - level)
            level += used
            if level < depth and r.random() < 0.35:
                x = self.name(x)
        return x

    def ensure_inputs(self, e, need):
        """Combines e with every input in `need` it does not use yet."""
        r = self.rng
        for i in sorted(need - e.inputs):
            y = self.input_leaf(i)
            for _ in range(20):
                op = r.choice(['add', 'sub', 'mul', 'max', 'min', '+', '-', '*', '/', 'div', 'prelu'])
                f = self.node(op, [e, y] if r.random() < 0.5 else [y, e])
                if f is not None:
                    e = f
                    break
        return e

    # ------------------------------------------------------------ a case
    def generate(self):
        r = self.rng
        self.draw_config()
        special = None
        if self.k == 0:
            special = 'view'       # a bare tagged view: the identity-copy path
        elif self.k == 1:
            special = 'hint'       # materialize(fuse(x)) of a view
        elif self.k == 9:
            special = 'sibview'    # siblings with a bare view: no multi-output kernel
        self.outputs = 1
        if special == 'view':
            root = self.input_leaf(0, tagged=True)
            self.depth = 0
            roots = [root]
        elif special == 'hint':
            root = self.node('materialize', [self.node('fuse', [self.input_leaf(1, tagged=False)])])
            self.depth = 2
            roots = [root]
        elif special == 'sibview':
            self.outputs = 2
            roots = [self.input_leaf(1, tagged=True), self.spine(2, [2])]
            self.depth = 2
            self.features.add('a bare view root')
        else:
            kind = r.choices(['single', 'siblings2', 'siblings3'], weights=[88, 9, 3])[0]
            # cases 2..8 pin the rare shapes: depths 8..5 and multi-output sets
            kind = {6: 'siblings2', 7: 'siblings2', 8: 'siblings3'}.get(self.k, kind if self.k > 11 else 'single')
            self.outputs = {'single': 1, 'siblings2': 2, 'siblings3': 3}[kind]
            if self.outputs == 1:
                self.depth = r.choices([2, 3, 4, 5, 6, 7, 8], weights=DEPTH_WEIGHTS)[0]
                if 2 <= self.k <= 5:
                    self.depth = 10 - self.k  # a lean deep chain: no extra nodes
                    total = self.depth
                elif self.k in (10, 11):
                    self.depth = 3  # a shared producer (forced in step)
                elif self.cap:
                    self.depth = max(2, self.cap - r.choice([0, 0, 1, 2]))
                if not 2 <= self.k <= 5:
                    total = self.depth + r.choice([0, 0, 0, 1, 1, 2])
            else:
                # siblings must have equal shapes: every root reads the same inputs
                self.allowed = [0, 1] if r.random() < 0.6 else [0, 1, 2]
                if self.k in (6, 7):
                    self.allowed = [0, 1]
                self.depth = 2
                total = 2 * self.outputs
            roots = []
            for o in range(self.outputs):
                d = self.depth if o == 0 else 2
                budget = [max(d, total // self.outputs)]
                e = self.spine(d, budget)
                if self.outputs > 1:
                    e = self.ensure_inputs(e, set(self.allowed))
                roots.append(e)
        nodes = sum(e.nodes for e in roots)
        self.nodes = nodes
        self.roots = roots
        used = frozenset().union(*[e.inputs for e in roots])
        self.used = used
        if self.outputs > 1:
            self.features.add('siblings x%d' % self.outputs)
        if self.reused:
            self.features.add('DAG reuse')
        if any(l.count('t' + n) for l in self.lines for n in 'abc'):
            pass
        return self

    def emit(self):
        out = []
        desc = self.describe()
        out.append('// case %d: %s' % (self.k, desc))
        out.append('template <class V0, class V1, class V2>')
        out.append('auto case_%d(const V0& a, const V1& b, const V2& c) {' % self.k)
        body = []
        text = '\n'.join(self.lines) + '\n' + '\n'.join(e.code for e in self.roots)
        for i, n in enumerate('abc'):
            if i in self.tags_used and ('t' + n) in tokens(text):
                body.append('  const auto t%s = %s.template with_id<fz::tag_%s>();' % (n, n, n))
        body += self.lines
        unused = [n for n in 'abc' if n not in tokens(text) and ('t' + n) not in tokens(text)]
        for n in unused:
            body.append('  (void)%s;' % n)
        if len(self.roots) == 1:
            body.append('  return %s;' % self.roots[0].code)
        else:
            body.append('  return fusor::siblings(%s);' % ', '.join(e.code for e in self.roots))
        out += body
        out.append('}')
        outs = ', '.join(self.outs[:self.outputs])
        out.append('using cfg_%d = fz::cfg<%s, %s, %s, %s>;' % (self.k, self.view_type(0), self.view_type(1),
                                                                self.view_type(2), outs))
        out.append('struct fn_%d {' % self.k)
        out.append('  template <class A, class B, class C>')
        out.append('  auto operator()(const A& a, const B& b, const C& c) const { return case_%d(a, b, c); }' % self.k)
        out.append('};')
        out.append('inline constexpr const char* info_%d = "%s";' % (self.k, desc))
        return '\n'.join(out)

    def describe(self):
        ins = ', '.join('%s%s' % ('abc'[i], ':' + self.short_type(i)) for i in range(3))
        feats = sorted(self.features)
        return 'depth %d, %d nodes, %s; %s -> %s%s' % (
            self.depth, self.nodes, 'single output' if self.outputs == 1 else '%d outputs' % self.outputs,
            ins, ','.join(SHORT[o] for o in self.outs[:self.outputs]), ('; ' + ', '.join(feats)) if feats else '')


def tokens(text):
    out = set()
    cur = ''
    for ch in text:
        if ch.isalnum() or ch == '_':
            cur += ch
        else:
            if cur:
                out.add(cur)
            cur = ''
    if cur:
        out.add(cur)
    return out


def generate(seed, ncases, allow, total_nodes):
    """ncases cases of about total_nodes expanded nodes in all (the compile-time budget)."""
    rng = random.Random(seed)
    # Node budget per case: the pinned cases 0..11 take what they need, the
    # others start at 2 nodes and share the rest at random (up to 6 each).
    pinned = min(ncases, 12)
    caps = [MAX_NODES] * pinned + [2] * (ncases - pinned)
    spare = total_nodes - 60 - 2 * (ncases - pinned)  # ~60: what the pinned cases use
    free = list(range(pinned, ncases))
    while spare > 0 and free:
        k = rng.choice(free)
        caps[k] += 1
        spare -= 1
        if caps[k] >= 6:
            free.remove(k)
    cases = []
    for k in range(ncases):
        best = None
        for attempt in range(200):
            sub = random.Random(rng.getrandbits(64))
            try:
                g = CaseGen(sub, k, allow, None if k < pinned else caps[k]).generate()
            except RuntimeError:
                continue
            if best is None or g.nodes < best.nodes:
                best = g
            if g.nodes <= caps[k]:
                best = g
                break
        cases.append(best)
    return cases


def partition(cases, parts):
    """Greedy balance of estimated compile cost (nodes + a fixed per-case cost)."""
    load = [0.0] * parts
    sets = [[] for _ in range(parts)]
    for g in sorted(cases, key=lambda g: -(g.nodes + 4)):
        p = min(range(parts), key=lambda i: load[i])
        load[p] += g.nodes + 4
        sets[p].append(g.k)
    return [sorted(s) for s in sets]


def render(seed, ncases, allow, total_nodes):
    cases = generate(seed, ncases, set(allow) | set(FIXED_BUGS), total_nodes)
    parts = partition(cases, PARTS)
    args = '--seed %d --cases %d --nodes %d%s' % (seed, ncases, total_nodes,
                                                  ''.join(' --allow-bug ' + b for b in sorted(set(allow) - set(FIXED_BUGS))))
    out = ['// Generated by tests/fuzz/gen_fuzz_cases.py %s -- do not edit.' % args,
           '// Regenerate: python3 tests/fuzz/gen_fuzz_cases.py (see tests/fuzz/README.md).',
           '// %d cases over three input views a, b, c (tagged copies: ta, tb, tc).' % ncases,
           '#pragma once',
           '',
           '#define FZ_CASE_COUNT %d' % ncases,
           '',
           'namespace fz_cases {',
           'using namespace fusor::literals;',
           '']
    for g in cases:
        out.append(g.emit())
        out.append('')
    out.append('}  // namespace fz_cases')
    out.append('')
    total_nodes = sum(g.nodes for g in cases)
    out.append('// Translation-unit split (estimated cost: expanded nodes + 4 per case; %d nodes in all).' % total_nodes)
    for p, ks in enumerate(parts):
        out.append('#define FZ_CASES_PART%d(X) %s' % (p, ' '.join('X(%d)' % k for k in ks)))
    out.append('')
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', type=int, default=DEFAULT_SEED)
    ap.add_argument('--cases', type=int, default=DEFAULT_CASES)
    ap.add_argument('--nodes', type=int, default=DEFAULT_NODES,
                    help='about this many expanded nodes over all cases (compile time: see README.md)')
    ap.add_argument('--allow-bug', action='append', default=[], choices=KNOWN_BUGS,
                    help='also generate the constructs of a known bug (see README.md): FZ-1 nodes whose operands '
                         'are all scalars/constants, FZ-2 fusor::materialize over a shared producer')
    ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fuzz_cases.inc'))
    ap.add_argument('--check', action='store_true', help='exit 1 when --out differs from what would be generated')
    a = ap.parse_args()
    text = render(a.seed, a.cases, set(a.allow_bug), a.nodes)
    if a.check:
        try:
            with open(a.out) as f:
                old = f.read()
        except OSError:
            old = None
        if old != text:
            print('%s is not up to date: run python3 %s' % (a.out, sys.argv[0]))
            return 1
        print('%s is up to date' % a.out)
        return 0
    with open(a.out, 'w') as f:
        f.write(text)
    print('wrote %s' % a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
