#!/usr/bin/env python3
"""Generates tests/fuzz/fuzz_blocks_cases.inc: the expression structures of the
block fuzzer (fuzz_blocks: fused host() vs unfused() around reductions,
normalizations, contractions and attention; see fuzz_blocks_main.cpp).

fusor expressions are C++ types, so a case's structure is fixed at compile
time: this script draws the cases once (fixed seed, stdlib only) and the
committed output is compiled into the fuzzer. The driver draws everything
else per draw from a 64-bit seed: the problem geometry (extents incl. 0 and
1, batch broadcasting, reduced axes, keepdims, normalized axis, conv stride /
padding / dilation / groups / layout, GEMM transposes, alpha, beta, attention
layout, heads, GQA, causal, scale), strides and padding of every view, dtype
values (NaN/Inf mixes) and the run-time scalars.

Each case is

    struct fn_K {
      template <class In>  // std::tuple of the input views
      auto operator()(const In& in, const fz::battrs& at) const;
    };
    using cfg_K = fz::bcfg<fz::family::F, Out, Aux, fz::bin<T, Extents, fz::role::R>...>;

`family` selects the driver's geometry and comparison, `Aux` is the
family's static parameter (reduce: -1 keepdims / number of dropped axes;
batch_norm: the channel axis; conv + BN: the layout the BN's channel axis
needs), each input has a role (its shape is derived from the geometry:
fuzz_blocks_main.cpp, `plan_block`). Around each core op the case puts an
elementwise prologue on its main operand (a unary op, or a binary op with a
broadcast `like_x` input) and an epilogue (unary ops, a run-time scalar, a
broadcast residual `like_out`), so that the planner's prologue / epilogue
fusion runs. Weights, keys and values sometimes get a prologue of their own,
attention masks an expression. Besides the single ops, the planner's
composite patterns are cases of their own: norm -> linear, swiglu (two
contractions), linear -> layer_norm, depthwise -> pointwise, the
multi-head-attention block, and chains of two reductions/normalizations. Families whose fused result is documented to differ from the
unfused one by rounding (conv2d followed by batch_norm: BN folding; attention
written by hand: the flash kernel's online softmax) get no prologue and only
1-Lipschitz epilogues (relu, clip, residual add), which the driver's error
bound covers.

Usage:
    gen_fuzz_blocks.py            # rewrite fuzz_blocks_cases.inc next to this script
    gen_fuzz_blocks.py --check    # exit 1 if fuzz_blocks_cases.inc is not up to date
"""
import argparse
import os
import random
import sys

DEFAULT_SEED = 20261130
PARTS = 3

DT = {'f32': 'float', 'f16': '__half', 'bf16': '__nv_bfloat16'}
UNARY = ['fusor::relu({})', 'fusor::exp({})', 'fusor::tanh({})', 'fusor::sigmoid({})', 'fusor::abs({})',
         'fusor::silu({})', 'fusor::gelu({})', 'fusor::square({})', 'fusor::neg({})', 'fusor::sqrt({})',
         'fusor::clip({}, -1.0f, 2.0f)', '({} * fz::sf(0))', '({} * 0.5_c)']
BINARY = ['({} + {})', '({} * {})', '({} - {})', 'fusor::max({}, {})']
LIPSCHITZ = ['fusor::relu({})', 'fusor::clip({}, -1.0f, 2.0f)']

# family -> weight (number of cases drawn comes from the list below)
CASE_PLAN = (
    ['reduce'] * 9 + ['softmax'] * 2 + ['layer_norm'] * 3 + ['rms_norm'] * 2 + ['instance_norm'] + ['batch_norm'] * 2 +
    ['matmul'] * 4 + ['linear'] * 4 + ['gemm'] * 3 + ['conv2d'] * 4 + ['depthwise'] * 2 + ['conv_bn'] * 2 +
    ['sdpa'] * 4 + ['attn_hand'] * 2 +
    # the composite patterns of the planner (docs/user_guide.md, "Fusion patterns")
    ['norm_linear'] * 2 + ['swiglu'] + ['linear_norm'] + ['dwpw'] + ['mha'] +
    # two reductions / normalizations in a row (two row kernels, or a prologue)
    ['reduce_chain'] * 3)
REDUCERS = ['sum', 'mean', 'max_reduce', 'min_reduce', 'sum_square', 'l2_norm', 'logsumexp']


def ext(rank, static=None):
    """fusor::dextents<rank>, or fusor::extents<...> with the static extents in `static` (None: dynamic)."""
    if not static or all(v is None for v in static):
        return 'fusor::dextents<%d>' % rank
    return 'fusor::extents<{}>'.format(', '.join('fusor::dyn' if v is None else str(v) for v in static))


# Families whose geometry starts from x's shape (static extents of x are honoured
# by the driver), and those whose W [N, K] fixes N and K (static extents of w).
STATIC_X_FAMILIES = ('reduce', 'softmax', 'layer_norm', 'rms_norm', 'instance_norm', 'batch_norm', 'reduce_chain')
STATIC_W_FAMILIES = ('linear', 'norm_linear', 'swiglu', 'linear_norm')


def draw_twice(seed, c):
    """About 15% of the cases use their whole expression twice through a tag
    (fz::twice: t = fusor::tag<...>(e); t + abs(t)): the tagged value, with the
    reduction / contraction / attention inside it, is computed once and read
    twice. Drawn from a generator of its own so the other cases do not change."""
    rs = random.Random(seed * 104729 + c.k)
    if rs.random() < 0.15:
        c.expr = 'fz::twice({})'.format(c.expr)
        c.notes.append('used twice through a tag')


def draw_static(seed, c):
    """Static extents for some cases (about 30% of those that can have them):
    drawn from their own generator so the other cases do not change."""
    rs = random.Random(seed * 7919 + c.k)
    if rs.random() >= 0.3:
        return
    want = 'x' if c.family in STATIC_X_FAMILIES else 'w' if c.family in STATIC_W_FAMILIES else None
    if want is None:
        return
    for i, (n, d, rk, role) in enumerate(c.inputs):
        if role != want:
            continue
        static = [rs.randint(1, 6) if rs.random() < 0.6 else None for _ in range(rk)]
        if all(v is None for v in static):
            static[rs.randrange(rk)] = rs.randint(1, 6)
        c.static[i] = static
        c.notes.append('static extents of ' + n)


class Case:
    def __init__(self, k, family):
        self.k = k
        self.family = family
        self.inputs = []  # (name, dtype, rank, role)
        self.aux = 0
        self.out = 'f32'
        self.expr = ''
        self.notes = []
        self.static = {}  # input index -> static extents (None: dynamic)

    def add(self, name, dtype, rank, role):
        self.inputs.append((name, dtype, rank, role))
        return name


def pick_dtypes(r):
    """Main operand dtype, weight dtype, output dtype."""
    p = r.random()
    if p < 0.6:
        main = wt = 'f32'
    elif p < 0.75:
        main = wt = 'f16'
    elif p < 0.85:
        main = wt = 'bf16'
    else:
        main, wt = r.choice([('f16', 'f32'), ('f32', 'bf16'), ('bf16', 'f32')])
    out = r.choice(['f32', 'f32', 'f32', 'f16', 'bf16'])
    return main, wt, out


def prologue(r, c, operand, dtype, rank, role, allow=True):
    """An elementwise prologue around `operand` (maybe none)."""
    if not allow:
        return operand
    p = r.random()
    if p < 0.3:
        return operand
    if p < 0.7:
        e = r.choice(UNARY).format(operand)
        if r.random() < 0.3:
            e = r.choice(UNARY).format(e)
        c.notes.append('prologue')
        return e
    aux = c.add('p%d' % len(c.inputs), dtype, r.randint(0, rank), role)
    c.notes.append('prologue with a broadcast input')
    return r.choice(BINARY).format(operand, aux)


def weight_prologue(r, c, w, dtype, rank):
    """An elementwise producer of a weight / key / value operand (30%): loaded inside the tiles."""
    if r.random() >= 0.3:
        return w
    c.notes.append('prologue on ' + w)
    return r.choice(UNARY).format(w)


def epilogue(r, c, e, out_rank, dtype, lipschitz=False):
    p = r.random()
    if p < 0.25:
        return e
    if lipschitz:
        if p < 0.6:
            c.notes.append('epilogue')
            return r.choice(LIPSCHITZ).format(e)
        res = c.add('r%d' % len(c.inputs), dtype, r.randint(0, out_rank), 'like_out')
        c.notes.append('residual epilogue')
        e = '({} + {})'.format(e, res)
        return r.choice(LIPSCHITZ + ['{}']).format(e)
    if p < 0.6:
        c.notes.append('epilogue')
        e = r.choice(UNARY).format(e)
        if r.random() < 0.4:
            e = r.choice(UNARY).format(e)
        return e
    res = c.add('r%d' % len(c.inputs), dtype, r.randint(0, out_rank), 'like_out')
    c.notes.append('epilogue with a broadcast input')
    e = r.choice(BINARY).format(e, res)
    if r.random() < 0.5:
        e = r.choice(UNARY).format(e)
    return e


def make_case(r, k, family):
    c = Case(k, family)
    main, wt, c.out = pick_dtypes(r)
    if family == 'reduce':
        rank = r.randint(1, 4)
        x = c.add('x', main, rank, 'x')
        red = r.choice(REDUCERS)
        if r.random() < 0.55:
            c.aux, out_rank, keep = -1, rank, True
        else:
            c.aux = r.randint(1, rank)  # dropped axes
            out_rank, keep = rank - c.aux, False
        core = 'fusor::{}<{}>({}, at.axes, at.keepdims, at.noop)'.format(
            red, -1 if keep else out_rank, prologue(r, c, x, main, rank, 'like_x'))
        if keep and r.random() < 0.25:
            # the reduced value broadcast back against the operand: 2 kernels
            core = 'fusor::exp({} - {})'.format(x, core)
            c.notes.append('broadcast back')
            c.aux = -2
        c.expr = epilogue(r, c, core, out_rank if c.aux != -2 else rank, main)
        c.notes.insert(0, red + (' keepdims' if keep else ' dropping %d axes' % c.aux))
    elif family == 'softmax':
        rank = r.randint(1, 4)
        x = c.add('x', main, rank, 'x')
        fn = r.choice(['softmax', 'log_softmax'])
        c.expr = epilogue(r, c, 'fusor::{}({}, at.axis)'.format(fn, prologue(r, c, x, main, rank, 'like_x')), rank, main)
        c.notes.insert(0, fn)
    elif family in ('layer_norm', 'rms_norm'):
        rank = r.randint(1, 4)
        x = c.add('x', main, rank, 'x')
        g = c.add('g', wt, r.randint(0, rank), 'gamma') if r.random() < 0.8 else 'nullptr'
        pro = prologue(r, c, x, main, rank, 'like_x')
        if family == 'layer_norm':
            b = c.add('b', wt, r.randint(0, rank), 'gamma') if r.random() < 0.7 else 'nullptr'
            core = 'fusor::layer_norm({}, {}, {}, at.axis, at.eps)'.format(pro, g, b)
        else:
            core = 'fusor::rms_norm({}, {}, at.eps, at.axis)'.format(pro, g)
        c.expr = epilogue(r, c, core, rank, main)
        c.notes.insert(0, family)
    elif family == 'instance_norm':
        rank = r.randint(3, 4)
        x = c.add('x', main, rank, 'x')
        s = c.add('s', wt, 1, 'chan') if r.random() < 0.8 else 'nullptr'
        b = c.add('b', wt, 1, 'chan') if r.random() < 0.8 else 'nullptr'
        c.expr = epilogue(r, c, 'fusor::instance_norm({}, {}, {}, at.eps)'.format(
            prologue(r, c, x, main, rank, 'like_x'), s, b), rank, main)
        c.notes.insert(0, family)
    elif family == 'batch_norm':
        rank = r.randint(2, 4)
        x = c.add('x', main, rank, 'x')
        c.aux = r.choice([1, -1])
        ps = [c.add(n, wt, 1, 'var' if n == 'bv' else 'chan') for n in ('bg', 'bb', 'bm', 'bv')]
        c.expr = epilogue(r, c, 'fusor::batch_norm<{}>({}, fusor::batch_norm_params{{{}}}, at.eps)'.format(
            c.aux, prologue(r, c, x, main, rank, 'like_x'), ', '.join(ps)), rank, main)
        c.notes.insert(0, 'batch_norm channel axis %d' % c.aux)
    elif family == 'matmul':
        ra, rb = r.randint(2, 4), r.randint(2, 4)
        x = c.add('x', main, ra, 'x')
        pro = prologue(r, c, x, main, ra, 'like_x')
        if r.random() < 0.35:
            w = c.add('w', wt, rb, 'wt')
            wexpr = 'fusor::transpose({})'.format(w)
            c.notes.append('transposed weight view')
        else:
            w = c.add('w', wt, rb, 'w')
            wexpr = prologue(r, c, w, wt, rb, 'like_w') if r.random() < 0.3 else w
        c.expr = epilogue(r, c, 'fusor::matmul({}, {})'.format(pro, wexpr), max(ra, rb), main)
        c.notes.insert(0, 'matmul ranks %d x %d' % (ra, rb))
    elif family == 'linear':
        rx = r.randint(1, 3)
        x = c.add('x', main, rx, 'x')
        w = c.add('w', wt, 2, 'w')
        b = c.add('b', wt, 1, 'bias') if r.random() < 0.7 else 'nullptr'
        pro = prologue(r, c, x, main, rx, 'like_x')
        if rx >= 2 and r.random() < 0.3:
            core = 'fusor::matmul({}, fusor::transpose({}))'.format(pro, w)
            if b != 'nullptr':
                core = '({} + {})'.format(core, b)
            c.notes.append('matmul(x, transpose(W)) form')
        else:
            core = 'fusor::linear({}, {}, {})'.format(pro, weight_prologue(r, c, w, wt, 2), b)
        c.expr = epilogue(r, c, core, rx, main)
        c.notes.insert(0, 'linear rank %d' % rx)
    elif family == 'gemm':
        x = c.add('x', main, 2, 'x')
        w = c.add('w', wt, 2, 'w')
        cc = c.add('c', wt, r.randint(0, 2), 'like_out') if r.random() < 0.7 else 'nullptr'
        c.expr = epilogue(r, c, 'fusor::gemm({}, {}, {}, at.gemm)'.format(
            prologue(r, c, x, main, 2, 'like_x'), weight_prologue(r, c, w, wt, 2), cc), 2, main)
        c.notes.insert(0, 'gemm')
    elif family in ('conv2d', 'depthwise'):
        x = c.add('x', main, 4, 'x')
        w = c.add('w', wt, 4, 'w')
        b = c.add('b', wt, 1, 'bias') if r.random() < 0.6 else 'nullptr'
        fn = 'conv2d' if family == 'conv2d' else 'depthwise_conv2d'
        c.expr = epilogue(r, c, 'fusor::{}({}, {}, {}, at.conv)'.format(
            fn, prologue(r, c, x, main, 4, 'like_x'), weight_prologue(r, c, w, wt, 4), b), 4, main)
        c.notes.insert(0, fn)
    elif family == 'conv_bn':
        x = c.add('x', main, 4, 'x')
        w = c.add('w', wt, 4, 'w')
        b = c.add('b', wt, 1, 'bias') if r.random() < 0.6 else 'nullptr'
        c.aux = r.choice([0, 1])  # 0: nchw (BN axis 1), 1: nhwc (BN axis -1)
        ps = [c.add(n, wt, 1, 'var' if n == 'bv' else 'chan') for n in ('bg', 'bb', 'bm', 'bv')]
        core = 'fusor::batch_norm<{}>(fusor::conv2d({}, {}, {}, at.conv), fusor::batch_norm_params{{{}}}, at.eps)'.format(
            1 if c.aux == 0 else -1, x, w, b, ', '.join(ps))
        c.expr = epilogue(r, c, core, 4, main, lipschitz=True)
        c.notes.insert(0, 'conv2d + batch_norm (folded) ' + ('nchw' if c.aux == 0 else 'nhwc'))
    elif family == 'sdpa':
        rank = 3 if c.k % 2 else 4
        q = c.add('q', main, rank, 'x')
        k = c.add('k', wt, rank, 'w')
        v = c.add('v', wt, rank, 'v')
        m = c.add('m', main, r.randint(0, 4), 'mask') if r.random() < 0.5 else 'nullptr'
        mexpr = m
        if m != 'nullptr' and r.random() < 0.4:
            mexpr = '({} * 2.0f)'.format(m)
            c.notes.append('mask expression')
        c.expr = epilogue(r, c, 'fusor::scaled_dot_product_attention({}, {}, {}, at.att, {})'.format(
            prologue(r, c, q, main, rank, 'like_x'), weight_prologue(r, c, k, wt, rank),
            weight_prologue(r, c, v, wt, rank), mexpr), rank, main)
        c.notes.insert(0, 'sdpa rank %d' % rank + (' masked' if m != 'nullptr' else ''))
    elif family == 'attn_hand':
        q = c.add('q', main, 4, 'x')
        k = c.add('k', main, 4, 'w')
        v = c.add('v', main, 4, 'v')
        s = 'fusor::matmul(q, fusor::transpose(k)) * at.scale'
        if r.random() < 0.6:
            m = c.add('m', main, r.randint(0, 4), 'mask')
            s = '({} + {})'.format(s, m)
            c.notes.append('mask')
        c.expr = epilogue(r, c, 'fusor::matmul(fusor::softmax({}), v)'.format(s), 4, main, lipschitz=True)
        c.notes.insert(0, 'attention by hand')
    elif family == 'norm_linear':
        # LayerNorm / RMSNorm -> linear: the norm computed while loading A (when its axis is the last)
        rx = r.randint(2, 3)
        x = c.add('x', main, rx, 'x')
        g = c.add('g', wt, r.randint(0, rx), 'gamma') if r.random() < 0.7 else 'nullptr'
        if r.random() < 0.6:
            b = c.add('b', wt, r.randint(0, rx), 'gamma') if r.random() < 0.6 else 'nullptr'
            norm = 'fusor::layer_norm({}, {}, {}, at.axis, at.eps)'.format(x, g, b)
        else:
            norm = 'fusor::rms_norm({}, {}, at.eps, at.axis)'.format(x, g)
        w = c.add('w', wt, 2, 'w')
        bias = c.add('bias', wt, 1, 'bias') if r.random() < 0.6 else 'nullptr'
        c.expr = epilogue(r, c, 'fusor::linear({}, {}, {})'.format(norm, w, bias), rx, main)
        c.notes.insert(0, 'norm -> linear rank %d' % rx)
    elif family == 'swiglu':
        # two contractions: one is the kernel's core, the other is split off
        rx = r.randint(1, 3)
        x = c.add('x', main, rx, 'x')
        w = c.add('w', wt, 2, 'w')
        w3 = c.add('w3', wt, 2, 'w2')
        b = c.add('b', wt, 1, 'bias') if r.random() < 0.5 else 'nullptr'
        c.expr = epilogue(r, c, '(fusor::silu(fusor::linear({}, {}, {})) * fusor::linear({}, {}))'.format(
            prologue(r, c, x, main, rx, 'like_x'), w, b, x, w3), rx, main)
        c.notes.insert(0, 'swiglu rank %d' % rx)
    elif family == 'linear_norm':
        # contraction -> norm: GEMM + residual epilogue, then the row reduction
        rx = r.randint(2, 3)
        x = c.add('x', main, rx, 'x')
        w = c.add('w', wt, 2, 'w')
        b = c.add('b', wt, 1, 'bias') if r.random() < 0.7 else 'nullptr'
        res = c.add('r', main, r.randint(1, rx), 'like_out')
        g = c.add('g', wt, 1, 'like_out') if r.random() < 0.7 else 'nullptr'
        c.expr = epilogue(r, c, 'fusor::layer_norm(fusor::linear({}, {}, {}) + {}, {}, nullptr, -1, at.eps)'.format(
            x, w, b, res, g), rx, main)
        c.notes.insert(0, 'linear -> layer_norm rank %d' % rx)
    elif family == 'dwpw':
        # depthwise -> clip -> pointwise 1x1: the depthwise result computed in the pointwise conv's loads
        x = c.add('x', main, 4, 'x')
        dw = c.add('dw', wt, 4, 'w')
        pw = c.add('pw', wt, 4, 'w2')
        c.expr = epilogue(r, c, 'fusor::conv2d(fusor::clip(fusor::depthwise_conv2d({}, {}, nullptr, at.conv), 0.0f, 6.0f), '
                          '{}, nullptr, at.conv2)'.format(prologue(r, c, x, main, 4, 'like_x'), dw, pw), 4, main)
        c.notes.insert(0, 'depthwise -> pointwise')
    elif family == 'mha':
        x = c.add('x', main, 3, 'x')
        wq = c.add('wq', wt, 2, 'w')
        wk = c.add('wk', wt, 2, 'wkv')
        wv = c.add('wv', wt, 2, 'wkv')
        wo = c.add('wo', wt, 2, 'w2')
        bq = c.add('bq', wt, 1, 'bias') if r.random() < 0.6 else 'nullptr'
        bk = c.add('bk', wt, 1, 'bias_kv') if r.random() < 0.6 else 'nullptr'
        bv = c.add('bv', wt, 1, 'bias_kv') if r.random() < 0.6 else 'nullptr'
        bo = c.add('bo', wt, 1, 'bias') if r.random() < 0.6 else 'nullptr'
        c.expr = '(fusor::multi_head_attention({}, fusor::attention_weights{{{}}}, at.att) + {})'.format(
            x, ', '.join([wq, wk, wv, wo, bq, bk, bv, bo]), x)
        c.notes.insert(0, 'multi_head_attention + x')
    elif family == 'reduce_chain':
        rank = r.randint(1, 4)
        x = c.add('x', main, rank, 'x')
        red = r.choice(REDUCERS)
        variant = r.randint(0, 2)
        if variant == 0:  # a reduction of a normalization
            core = 'fusor::{}(fusor::softmax({}, at.axis), at.axes, true, at.noop)'.format(
                red, prologue(r, c, x, main, rank, 'like_x'))
            c.notes.insert(0, red + ' of softmax')
        elif variant == 1:  # a normalization of a reduction's broadcast-back
            core = 'fusor::layer_norm(fusor::exp({} - fusor::max_reduce({}, at.axes)), nullptr, nullptr, at.axis, at.eps)'.format(x, x)
            c.notes.insert(0, 'layer_norm of x - max_reduce(x)')
        else:  # a reduction of a reduction (keepdims)
            core = 'fusor::{}(fusor::sum({}, at.axes, true, at.noop), {{}}, true)'.format(
                red, prologue(r, c, x, main, rank, 'like_x'))
            c.notes.insert(0, red + ' of sum')
        c.aux = -1
        p = r.random()
        c.expr = core if p < 0.4 else r.choice(UNARY).format(core)
    else:
        raise ValueError(family)
    return c


def render(c):
    ins = ', '.join('fz::bin<{}, {}, fz::role::{}>'.format(DT[d], ext(rk, c.static.get(i)), role)
                    for i, (_, d, rk, role) in enumerate(c.inputs))

    def dims(i, rk):
        st = c.static.get(i)
        return str(rk) if not st else ','.join('?' if v is None else str(v) for v in st)
    dtypes = ', '.join('{}:{}[{}]:{}'.format(n, d, dims(i, rk), role) for i, (n, d, rk, role) in enumerate(c.inputs))
    info = '{}: {}; {} -> {}'.format(c.family, ', '.join(c.notes), dtypes, c.out)
    lines = ['// case {}: {}'.format(c.k, info), 'struct fn_{} {{'.format(c.k), '  template <class In>',
             '  auto operator()(const In& in, const fz::battrs& at) const {']
    for i, (n, _, _, _) in enumerate(c.inputs):
        lines.append('    const auto& {} = std::get<{}>(in);'.format(n, i))
    lines.append('    (void)at;')
    lines.append('    return {};'.format(c.expr))
    lines += ['  }', '};']
    lines.append('using cfg_{} = fz::bcfg<fz::family::{}, {}, {}, {}>;'.format(c.k, c.family, DT[c.out], c.aux, ins))
    lines.append('inline constexpr const char* info_{} = "{}";'.format(c.k, info))
    return '\n'.join(lines)


def generate(seed):
    r = random.Random(seed)
    cases = [make_case(r, k, f) for k, f in enumerate(CASE_PLAN)]
    for c in cases:
        draw_static(seed, c)
        draw_twice(seed, c)
    out = ['// Generated by tests/fuzz/gen_fuzz_blocks.py --seed {} -- do not edit.'.format(seed),
           '// Regenerate: python3 tests/fuzz/gen_fuzz_blocks.py (see tests/fuzz/README.md).',
           '#pragma once', '', '#define FZB_CASE_COUNT {}'.format(len(cases)), '',
           'namespace fzb_cases {', 'using namespace fusor::literals;', '']
    for c in cases:
        out += [render(c), '']
    out.append('}  // namespace fzb_cases')
    out.append('')
    # parts: round-robin keeps the families spread over the translation units
    for p in range(PARTS):
        ids = [c.k for c in cases if c.k % PARTS == p]
        out.append('#define FZB_CASES_PART{}(X) {}'.format(p, ' '.join('X({})'.format(i) for i in ids)))
    out.append('')
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', type=int, default=DEFAULT_SEED)
    ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fuzz_blocks_cases.inc'))
    ap.add_argument('--check', action='store_true', help='exit 1 when --out differs from what would be generated')
    a = ap.parse_args()
    text = generate(a.seed)
    if a.check:
        try:
            with open(a.out) as f:
                same = f.read() == text
        except OSError:
            same = False
        if not same:
            print('{} is not up to date: run python3 {}'.format(a.out, os.path.relpath(__file__)))
            return 1
        print('{} is up to date'.format(a.out))
        return 0
    with open(a.out, 'w') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
