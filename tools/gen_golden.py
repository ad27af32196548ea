#!/usr/bin/python3
"""Write tests/data/torch/: PyTorch golden outputs for realistic contraction and attention blocks.

Needs PyTorch and NumPy. On the project's Debian machines only the system
interpreter has them, so run it as

    /usr/bin/python3 tools/gen_golden.py            # rewrite tests/data/torch/
    /usr/bin/python3 tools/gen_golden.py --check    # regenerate into a temporary
                                                    # folder, compare, exit 1 on a difference
    /usr/bin/python3 tools/gen_golden.py OUT_DIR    # write somewhere else

from the repository root (plain `python3` on PATH may lack torch; the script
then stops with a message saying so).

Inputs and weights are NOT stored: every tensor is produced by the
deterministic generator below, implemented identically in C++
(tests/support/golden.hpp), and only its seed, scale and offset go into the
case's manifest.json. What is stored: the outputs of each block and of its
intermediate stages (float32 .npy, little-endian, C order) and, per tensor,
its first 8 generated values ("probes") so the C++ generator can be checked
bitwise.

Generator (tests/data/torch/README.md has the same text):
    splitmix64(z): z += 0x9E3779B97F4A7C15
                   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
                   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
                   return z ^ (z >> 31)                       (all mod 2^64)
    element i (row-major) of a tensor with seed s:
        u = float64(splitmix64(s * 0x100000001B3 + i) >> 40) * 2^-24 * 2 - 1   in [-1, 1), exact
        value = float32(offset + scale * u)     (float64 arithmetic, one rounding to float32)

Layouts follow PyTorch: NCHW activations, conv weights [Cout, Cin/groups, kh,
kw], linear weights [out, in]; parameter names follow torchvision / nn.Module
state_dict names where there is one (bn1.running_var, downsample.0.weight).
Padding is recorded as [top, left, bottom, right] (ONNX's order for 2-D).
"""
import json
import math
import pathlib
import re
import shutil
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # plain python3 on PATH has no torch on the dev machines
    sys.exit(f"gen_golden.py: needs PyTorch and NumPy ({e}).\n"
             f"Run it with the interpreter that has them: /usr/bin/python3 tools/gen_golden.py\n"
             f"(this is {sys.executable})")

M64 = (1 << 64) - 1
PROBES = 8  # generated values stored per tensor for the bitwise check


# ---------------------------------------------------------------------------
# The generator (keep in sync with tests/support/golden.hpp)

def splitmix64(z):
    """splitmix64 finalizer on a uint64 array, wrapping mod 2^64."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def splitmix64_int(z):
    """Reference on Python ints, to check the numpy version."""
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def generate(seed, shape, scale, offset):
    n = math.prod(shape)
    base = np.uint64((seed * 0x100000001B3) & M64)
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + base
    bits = splitmix64(z) >> np.uint64(40)                     # 24 bits
    u = bits.astype(np.float64) * (2.0 ** -24) * 2.0 - 1.0    # exact: [-1, 1)
    v = np.float64(offset) + np.float64(scale) * u           # two float64 roundings, no FMA
    return v.astype(np.float32).reshape(shape)


def self_check_generator():
    # splitmix64(0) is the first output of the reference splitmix64 PRNG
    # seeded with 0 (Vigna's splitmix64.c): 0xE220A8397B1DCDAF.
    assert splitmix64_int(0) == 0xE220A8397B1DCDAF
    zs = [0, 1, 2 ** 63, M64, 0x100000001B3 * 12345 & M64]
    got = splitmix64(np.array(zs, dtype=np.uint64))
    assert [int(g) for g in got] == [splitmix64_int(z) for z in zs], "numpy splitmix64 disagrees with the int version"
    # Element-wise Python reference for a few values, float64 then float32.
    seed, scale, offset = 7, 0.3, -0.25
    vals = generate(seed, [5], scale, offset)
    for i in range(5):
        u = (splitmix64_int((seed * 0x100000001B3 + i) & M64) >> 40) * 2.0 ** -24 * 2.0 - 1.0
        assert np.float32(offset + scale * u) == vals[i]


# ---------------------------------------------------------------------------
# Case bookkeeping

class Case:
    def __init__(self, name, description, seed_base):
        self.name = name
        self.description = description
        self.seed_base = seed_base  # tensors get seed_base + 0, 1, 2, ... (distinct across cases)
        self.tensors = {}
        self.attributes = {}
        self.outputs = {}
        self.arrays = {}
        self.probes = {}

    def tensor(self, name, shape, scale, offset=0.0):
        assert name not in self.tensors, name
        seed = self.seed_base + len(self.tensors)
        data = generate(seed, shape, scale, offset)
        self.tensors[name] = {"shape": list(shape), "seed": seed, "scale": float(scale), "offset": float(offset)}
        self.probes[name] = [float(v) for v in data.reshape(-1)[:PROBES]]
        return torch.from_numpy(data)

    def conv_weight(self, name, cout, cin_per_group, kh, kw):
        return self.tensor(name, [cout, cin_per_group, kh, kw], 1.0 / math.sqrt(cin_per_group * kh * kw))

    def bn(self, prefix, c):
        """Eval-mode BatchNorm parameters with the PyTorch names."""
        return dict(
            weight=self.tensor(prefix + ".weight", [c], 0.2, 1.0),
            bias=self.tensor(prefix + ".bias", [c], 0.1),
            running_mean=self.tensor(prefix + ".running_mean", [c], 0.1),
            running_var=self.tensor(prefix + ".running_var", [c], 0.5, 1.0),
        )

    def attr(self, stage, **kw):
        self.attributes[stage] = kw

    def output(self, name, t, formula):
        assert name not in self.outputs, name
        a = np.ascontiguousarray(t.detach().numpy(), dtype="<f4")
        assert np.isfinite(a).all(), name
        self.outputs[name] = {"file": f"out_{name}.npy", "shape": list(a.shape), "formula": formula}
        self.arrays[name] = a
        return t

    def write(self, root):
        d = root / self.name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        manifest = {
            "case": self.name,
            "description": self.description,
            "torch_version": torch.__version__,
            "tensors": self.tensors,
            "attributes": self.attributes,
            "outputs": self.outputs,
            "probes": self.probes,
        }
        (d / "manifest.json").write_text(dump_json(manifest) + "\n")
        for name, a in self.arrays.items():
            np.save(d / self.outputs[name]["file"], a, allow_pickle=False)
        return sum(f.stat().st_size for f in d.iterdir())


def dump_json(obj):
    """json.dumps with indentation, but every list of scalars on one line."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(p.strip() for p in m.group(1).split(",")) + "]", text)


def conv_attr(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, bias=False):
    return dict(op="conv2d", stride=list(stride), padding=list(padding), dilation=list(dilation),
                groups=groups, bias=bias)


def bn_eval(x, p, eps):
    return F.batch_norm(x, p["running_mean"], p["running_var"], p["weight"], p["bias"], training=False, eps=eps)


# ---------------------------------------------------------------------------
# Cases

def resnet_basic_block_s2():
    c = Case("resnet_basic_block_s2",
             "torchvision ResNet BasicBlock with stride 2 and a 1x1 projection shortcut (layer2.0 of "
             "ResNet-18 at a reduced 16x16 input), eval-mode BatchNorm.", 100)
    eps = 1e-5
    x = c.tensor("x", [1, 64, 16, 16], 1.0)
    w1 = c.conv_weight("conv1.weight", 128, 64, 3, 3)
    bn1 = c.bn("bn1", 128)
    w2 = c.conv_weight("conv2.weight", 128, 128, 3, 3)
    bn2 = c.bn("bn2", 128)
    wd = c.conv_weight("downsample.0.weight", 128, 64, 1, 1)
    bnd = c.bn("downsample.1", 128)
    c.attr("conv1", **conv_attr(stride=(2, 2), padding=(1, 1, 1, 1)))
    c.attr("bn1", op="batch_norm", eps=eps)
    c.attr("conv2", **conv_attr(padding=(1, 1, 1, 1)))
    c.attr("bn2", op="batch_norm", eps=eps)
    c.attr("downsample.0", **conv_attr(stride=(2, 2)))
    c.attr("downsample.1", op="batch_norm", eps=eps)

    conv1 = c.output("conv1", F.conv2d(x, w1, stride=2, padding=1),
                     "F.conv2d(x, conv1.weight, stride=2, padding=1)")
    stage1 = c.output("stage1", F.relu(bn_eval(conv1, bn1, eps)),
                      "F.relu(F.batch_norm(conv1, bn1.running_mean, bn1.running_var, bn1.weight, bn1.bias, "
                      "training=False, eps=1e-5))")
    conv2 = c.output("conv2", F.conv2d(stage1, w2, stride=1, padding=1),
                     "F.conv2d(stage1, conv2.weight, stride=1, padding=1)")
    main = c.output("main", bn_eval(conv2, bn2, eps),
                    "F.batch_norm(conv2, bn2.running_mean, bn2.running_var, bn2.weight, bn2.bias, "
                    "training=False, eps=1e-5)")
    sconv = c.output("shortcut_conv", F.conv2d(x, wd, stride=2),
                     "F.conv2d(x, downsample.0.weight, stride=2)")
    short = c.output("shortcut", bn_eval(sconv, bnd, eps),
                     "F.batch_norm(shortcut_conv, downsample.1.running_mean, downsample.1.running_var, "
                     "downsample.1.weight, downsample.1.bias, training=False, eps=1e-5)")
    c.output("out", F.relu(main + short), "F.relu(main + shortcut)")
    return c


def mobilenet_ir(name, description, seed_base, cin, hw, expand, cout, stride, residual, x_scale):
    c = Case(name, description, seed_base)
    eps = 1e-5
    hidden = cin * expand
    x = c.tensor("x", [1, cin, hw, hw], x_scale)
    we = c.conv_weight("expand.conv.weight", hidden, cin, 1, 1)
    bne = c.bn("expand.bn", hidden)
    wd = c.conv_weight("dw.conv.weight", hidden, 1, 3, 3)
    bnd = c.bn("dw.bn", hidden)
    wp = c.conv_weight("project.conv.weight", cout, hidden, 1, 1)
    bnp = c.bn("project.bn", cout)
    c.attr("expand.conv", **conv_attr())
    c.attr("expand.bn", op="batch_norm", eps=eps)
    c.attr("dw.conv", **conv_attr(stride=(stride, stride), padding=(1, 1, 1, 1), groups=hidden))
    c.attr("dw.bn", op="batch_norm", eps=eps)
    c.attr("project.conv", **conv_attr())
    c.attr("project.bn", op="batch_norm", eps=eps)

    bn_f = ("F.batch_norm({0}, {1}.running_mean, {1}.running_var, {1}.weight, {1}.bias, "
            "training=False, eps=1e-5)")
    e = c.output("expand", F.relu6(bn_eval(F.conv2d(x, we), bne, eps)),
                 "F.relu6(" + bn_f.format("F.conv2d(x, expand.conv.weight)", "expand.bn") + ")")
    assert (e == 6).any() and (e == 0).any(), f"{name}: ReLU6 should clamp on both sides after the expansion"
    d = c.output("dw", F.relu6(bn_eval(F.conv2d(e, wd, stride=stride, padding=1, groups=hidden), bnd, eps)),
                 "F.relu6(" + bn_f.format(f"F.conv2d(expand, dw.conv.weight, stride={stride}, padding=1, "
                                          f"groups={hidden})", "dw.bn") + ")")
    p = c.output("project", bn_eval(F.conv2d(d, wp), bnp, eps),
                 bn_f.format("F.conv2d(dw, project.conv.weight)", "project.bn"))
    if residual:
        c.output("out", x + p, "x + project")
    return c


def mobilenet_v2_ir_s1():
    return mobilenet_ir(
        "mobilenet_v2_ir_s1",
        "MobileNetV2 inverted residual, stride 1 with residual (expand 6, 24 channels at 14x14), "
        "eval-mode BatchNorm. Input scale 6 so that ReLU6 clamps at 6 as well as at 0.",
        200, cin=24, hw=14, expand=6, cout=24, stride=1, residual=True, x_scale=6.0)


def mobilenet_v2_ir_s2():
    return mobilenet_ir(
        "mobilenet_v2_ir_s2",
        "MobileNetV2 inverted residual, stride 2 without residual (expand 6, 16 -> 24 channels, "
        "16x16 -> 8x8), eval-mode BatchNorm. Input scale 6 so that ReLU6 clamps at 6 as well as at 0.",
        300, cin=16, hw=16, expand=6, cout=24, stride=2, residual=False, x_scale=6.0)


def bert_mlp():
    c = Case("bert_mlp",
             "Pre-LayerNorm transformer MLP block at BERT-base sizes (hidden 768, intermediate 3072), "
             "16 tokens: out = x + fc2(gelu(fc1(layer_norm(x)))); GELU in its exact erf form.", 400)
    eps = 1e-12
    x = c.tensor("x", [16, 768], 1.0)
    g = c.tensor("ln.weight", [768], 0.2, 1.0)
    b = c.tensor("ln.bias", [768], 0.1)
    w1 = c.tensor("fc1.weight", [3072, 768], 1 / math.sqrt(768))
    b1 = c.tensor("fc1.bias", [3072], 1 / math.sqrt(768))
    w2 = c.tensor("fc2.weight", [768, 3072], 1 / math.sqrt(3072))
    b2 = c.tensor("fc2.bias", [768], 1 / math.sqrt(3072))
    c.attr("ln", op="layer_norm", normalized_shape=[768], eps=eps)
    c.attr("fc1", op="linear", bias=True)
    c.attr("gelu", op="gelu", approximate="none")
    c.attr("fc2", op="linear", bias=True)
    ln = c.output("ln", F.layer_norm(x, [768], g, b, eps=eps),
                  "F.layer_norm(x, [768], ln.weight, ln.bias, eps=1e-12)")
    h = c.output("h", F.gelu(F.linear(ln, w1, b1)), "F.gelu(F.linear(ln, fc1.weight, fc1.bias))")
    y = c.output("y", F.linear(h, w2, b2), "F.linear(h, fc2.weight, fc2.bias)")
    c.output("out", x + y, "x + y")
    return c


def conv_variants():
    c = Case("conv_variants",
             "Small independent convolutions covering the attributes: groups with asymmetric padding "
             "and unequal strides, dilation, depthwise with channel multiplier, 1x1 pointwise, 1x3 "
             "kernel. Every conv has a bias. Tensors and outputs are prefixed by the conv's name.", 500)

    def conv(name, x_shape, cout, k, stride, padding, dilation, groups, note):
        cin = x_shape[1]
        x = c.tensor(name + ".x", x_shape, 1.0)
        fan_in = cin // groups * k[0] * k[1]
        w = c.tensor(name + ".weight", [cout, cin // groups, k[0], k[1]], 1 / math.sqrt(fan_in))
        b = c.tensor(name + ".bias", [cout], 1 / math.sqrt(fan_in))
        c.attr(name, **conv_attr(stride, padding, dilation, groups, bias=True))
        top, left, bottom, right = padding
        if top == bottom and left == right:
            y = F.conv2d(x, w, b, stride=stride, padding=(top, left), dilation=dilation, groups=groups)
            formula = (f"F.conv2d({name}.x, {name}.weight, {name}.bias, stride={tuple(stride)}, "
                       f"padding={(top, left)}, dilation={tuple(dilation)}, groups={groups})")
        else:
            y = F.conv2d(F.pad(x, (left, right, top, bottom)), w, b, stride=stride, dilation=dilation, groups=groups)
            formula = (f"F.conv2d(F.pad({name}.x, {(left, right, top, bottom)}), {name}.weight, {name}.bias, "
                       f"stride={tuple(stride)}, dilation={tuple(dilation)}, groups={groups})")
        c.output(name, y, formula + note)

    conv("grouped", [2, 8, 9, 7], 12, (3, 3), (2, 1), (1, 0, 2, 1), (1, 1), 4,
         "  # padding [top,left,bottom,right] = [1,0,2,1]")
    conv("dilated", [1, 6, 11, 10], 5, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, "")
    conv("depthwise", [1, 6, 13, 11], 12, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 6,
         "  # channel multiplier 2: output channel o reads input channel o // 2")
    conv("pointwise", [2, 16, 5, 6], 24, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "")
    conv("k1x3", [1, 4, 6, 9], 7, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1, "")
    return c


def matmul_variants():
    c = Case("matmul_variants",
             "Matrix products: batched matmul with broadcast batch dims, a 2-D matmul with odd sizes, "
             "ONNX-style Gemm (alpha, beta, transA, transB, C broadcast over rows) and a linear layer "
             "on a 3-D input. Tensors and outputs are prefixed by the product's name.", 600)
    a = c.tensor("bmm.A", [2, 1, 5, 7], 1.0)
    b = c.tensor("bmm.B", [3, 7, 4], 1 / math.sqrt(7))
    c.attr("bmm", op="matmul")
    c.output("bmm", torch.matmul(a, b), "torch.matmul(bmm.A, bmm.B)  # [2,1,5,7] @ [3,7,4] -> [2,3,5,4]")

    a = c.tensor("mm.A", [33, 17], 1.0)
    b = c.tensor("mm.B", [17, 65], 1 / math.sqrt(17))
    c.attr("mm", op="matmul")
    c.output("mm", torch.matmul(a, b), "torch.matmul(mm.A, mm.B)")

    M, K, N = 13, 11, 10
    alpha, beta = 0.5, 2.0
    a = c.tensor("gemm.A", [K, M], 1.0)                # stored transposed: transA = 1
    b = c.tensor("gemm.B", [N, K], 1 / math.sqrt(K))   # stored transposed: transB = 1
    cc = c.tensor("gemm.C", [1, N], 1.0)
    c.attr("gemm", op="gemm", alpha=alpha, beta=beta, transA=1, transB=1)
    c.output("gemm", alpha * torch.matmul(a.t(), b.t()) + beta * cc,
             "0.5 * torch.matmul(gemm.A.t(), gemm.B.t()) + 2.0 * gemm.C  # Y[M,N], M=13 K=11 N=10")

    x = c.tensor("linear.x", [2, 5, 19], 1.0)
    w = c.tensor("linear.weight", [23, 19], 1 / math.sqrt(19))
    bb = c.tensor("linear.bias", [23], 1 / math.sqrt(19))
    c.attr("linear", op="linear", bias=True)
    c.output("linear", F.linear(x, w, bb), "F.linear(linear.x, linear.weight, linear.bias)")
    return c


# ---------------------------------------------------------------------------
# Attention cases. Their outputs are computed in float64 from the float32
# inputs (the explicit formula softmax(q k^T * scale + mask) v) and rounded
# once to float32, so they are within 0.5 ulp of the exact result; each case
# also checks torch's own float32 computation (F._scaled_dot_product_attention
# where it applies, nn.MultiheadAttention for mha_block) against them.

def sdpa64(q, k, v, scale, mask=None, causal=False):
    """softmax(q k^T * scale + mask [causal: -inf where key j > query i]) v in float64, bhsd."""
    q, k, v = q.double(), k.double(), v.double()
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask.double()
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(sq, sk, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def check_f32(name, got32, want64, rtol=1e-4, atol=1e-5):
    """torch's float32 result must agree with the float64 one (a self-check of the case)."""
    err = (got32.double() - want64).abs()
    bound = atol + rtol * want64.abs()
    assert bool((err <= bound).all()), f"{name}: torch float32 differs from float64 by {float(err.max())}"


def attention_bert():
    c = Case("attention_bert",
             "BERT-style self-attention core, bhsd, not causal, with an additive padding mask [B,1,1,S]: "
             "mask = mask_bias + (-inf where key j >= key_lengths[b]); the second sequence is padded. "
             "Output computed in float64 (explicit formula) and rounded to float32.", 700)
    B, H, S, D = 2, 4, 37, 64
    key_lengths = [37, 23]
    q = c.tensor("q", [B, H, S, D], 2.0)     # scale 2: a peakier softmax than scale 1
    k = c.tensor("k", [B, H, S, D], 1.0)
    v = c.tensor("v", [B, H, S, D], 1.0)
    mb = c.tensor("mask_bias", [B, 1, 1, S], 1.0)
    pad = torch.zeros(B, 1, 1, S, dtype=torch.float32)
    for b, n in enumerate(key_lengths):
        pad[b, :, :, n:] = float("-inf")
    mask = mb + pad
    scale = 1 / math.sqrt(D)
    c.attr("attention", op="scaled_dot_product_attention", layout="bhsd", scale=scale, causal=False,
           key_lengths=key_lengths,
           mask="mask_bias + (-inf where key index j >= key_lengths[b]), shape [B,1,1,S]")
    out = sdpa64(q, k, v, scale, mask)
    check_f32("attention_bert", F._scaled_dot_product_attention(q, k, v, mask)[0], out)
    c.output("out", out.float(),
             "softmax(q @ k.transpose(-2,-1) * (1/sqrt(64)) + mask, dim=-1) @ v  # float64, then float32")
    return c


def attention_llama_gqa():
    c = Case("attention_llama_gqa",
             "LLaMA-style grouped-query causal attention, bhsd: 8 query heads share 2 key/value heads "
             "(query head h reads kv head h // 4). Output computed in float64 (explicit formula, k and v "
             "expanded with repeat_interleave) and rounded to float32.", 800)
    B, Hq, Hkv, S, D = 1, 8, 2, 29, 32
    q = c.tensor("q", [B, Hq, S, D], 2.0)
    k = c.tensor("k", [B, Hkv, S, D], 1.0)
    v = c.tensor("v", [B, Hkv, S, D], 1.0)
    scale = 1 / math.sqrt(D)
    c.attr("attention", op="scaled_dot_product_attention", layout="bhsd", scale=scale, causal=True,
           heads=Hq, kv_heads=Hkv)
    g = Hq // Hkv
    kr, vr = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    out = sdpa64(q, kr, vr, scale, causal=True)
    check_f32("attention_llama_gqa", F._scaled_dot_product_attention(q, kr, vr, is_causal=True)[0], out)
    c.output("out", out.float(),
             "softmax(q @ k.repeat_interleave(4, 1).transpose(-2,-1) * (1/sqrt(32)) + causal(-inf where j > i), "
             "dim=-1) @ v.repeat_interleave(4, 1)  # float64, then float32")
    return c


def attention_cross():
    c = Case("attention_cross",
             "Cross-attention, bshd layout ([B, S, H, D] operands and output), 5 queries over 67 keys, "
             "head_dim 80, no mask. Output computed in float64 (explicit formula on the bhsd transposes) "
             "and rounded to float32.", 900)
    B, H, Sq, Sk, D = 2, 3, 5, 67, 80
    q = c.tensor("q", [B, Sq, H, D], 2.0)
    k = c.tensor("k", [B, Sk, H, D], 1.0)
    v = c.tensor("v", [B, Sk, H, D], 1.0)
    scale = 1 / math.sqrt(D)
    c.attr("attention", op="scaled_dot_product_attention", layout="bshd", scale=scale, causal=False)
    t = lambda x: x.transpose(1, 2)
    out = t(sdpa64(t(q), t(k), t(v), scale))
    check_f32("attention_cross", t(F._scaled_dot_product_attention(t(q), t(k), t(v))[0]), out)
    c.output("out", out.contiguous().float(),
             "(softmax(q.transpose(1,2) @ k.transpose(1,2).transpose(-2,-1) * (1/sqrt(80)), dim=-1) "
             "@ v.transpose(1,2)).transpose(1,2)  # float64, then float32")
    return c


def mha_block():
    c = Case("mha_block",
             "Causal multi-head self-attention block with residual, batch_first, packed heads: "
             "out = x + out_proj(attention(q_proj(x), k_proj(x), v_proj(x))), E = 64, 4 heads of 16; "
             "nn.MultiheadAttention's math with its in_proj split into separate q/k/v weights. Stages in "
             "float64 (each from the previous stage's stored output) rounded to float32; checked against "
             "torch.nn.MultiheadAttention in float32.", 1000)
    B, S, E, H = 2, 11, 64, 4
    D = E // H
    x = c.tensor("x", [B, S, E], 1.0)
    w = {}
    for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
        w[n + ".weight"] = c.tensor(n + ".weight", [E, E], 1 / math.sqrt(E))
        w[n + ".bias"] = c.tensor(n + ".bias", [E], 1 / math.sqrt(E))
    scale = 1 / math.sqrt(D)
    for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
        c.attr(n, op="linear", bias=True)
    c.attr("attention", op="scaled_dot_product_attention", layout="packed", scale=scale, causal=True,
           heads=H, kv_heads=H)

    def lin(t, n):
        return F.linear(t.double(), w[n + ".weight"].double(), w[n + ".bias"].double())

    def heads(t):  # [B, S, E] -> [B, H, S, D]
        return t.reshape(B, S, H, D).transpose(1, 2)

    q = c.output("q", lin(x, "q_proj").float(), "F.linear(x, q_proj.weight, q_proj.bias)  # float64, then float32")
    k = c.output("k", lin(x, "k_proj").float(), "F.linear(x, k_proj.weight, k_proj.bias)  # float64, then float32")
    v = c.output("v", lin(x, "v_proj").float(), "F.linear(x, v_proj.weight, v_proj.bias)  # float64, then float32")
    attn = sdpa64(heads(q), heads(k), heads(v), scale, causal=True).transpose(1, 2).reshape(B, S, E)
    attn = c.output("attn", attn.float(),
                    "heads(q), heads(k), heads(v) = t.reshape(2, 11, 4, 16).transpose(1, 2); softmax(heads(q) @ "
                    "heads(k).transpose(-2,-1) * (1/sqrt(16)) + causal(-inf where j > i), dim=-1) @ heads(v), "
                    "transposed back to [2, 11, 64]  # float64, then float32")
    y = c.output("y", lin(attn, "out_proj").float(),
                 "F.linear(attn, out_proj.weight, out_proj.bias)  # float64, then float32")
    out = c.output("out", (x.double() + y.double()).float(), "x + y")

    # Self-check: torch's own float32 nn.MultiheadAttention on x gives the same block.
    m = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True)
    m.in_proj_weight.copy_(torch.cat([w["q_proj.weight"], w["k_proj.weight"], w["v_proj.weight"]]))
    m.in_proj_bias.copy_(torch.cat([w["q_proj.bias"], w["k_proj.bias"], w["v_proj.bias"]]))
    m.out_proj.weight.copy_(w["out_proj.weight"])
    m.out_proj.bias.copy_(w["out_proj.bias"])
    m.eval()
    causal = torch.ones(S, S, dtype=torch.bool).triu(1)
    got, _ = m(x, x, x, attn_mask=causal, need_weights=False)
    check_f32("mha_block", x + got, out.double())
    return c


CASES = [resnet_basic_block_s2, mobilenet_v2_ir_s1, mobilenet_v2_ir_s2, bert_mlp, conv_variants, matmul_variants,
         attention_bert, attention_llama_gqa, attention_cross, mha_block]
ATTENTION_CASE_LIMIT = 150_000  # bytes per attention case
CASE_LIMIT = 360_000    # bytes per case (bert_mlp's intermediate h alone is 16 x 3072 floats)
TOTAL_LIMIT = 1_500_000


def generate_all(root):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_grad_enabled(False)
    self_check_generator()
    total = 0
    names = []
    for make in CASES:
        case = make()
        size = case.write(root)
        assert size <= CASE_LIMIT, f"{case.name}: {size} bytes, over {CASE_LIMIT}"
        if case.name.startswith(("attention_", "mha_")):
            assert size <= ATTENTION_CASE_LIMIT, f"{case.name}: {size} bytes, over {ATTENTION_CASE_LIMIT}"
        total += size
        names.append(case.name)
        print(f"{case.name:24s} {size:8d} bytes  outputs: {', '.join(case.outputs)}")
    assert total <= TOTAL_LIMIT, f"total {total} bytes, over {TOTAL_LIMIT}"
    print(f"{'total':24s} {total:8d} bytes")
    return names


def main(argv):
    repo = pathlib.Path(__file__).resolve().parent.parent
    default = repo / "tests" / "data" / "torch"
    args = [a for a in argv if a != "--check"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        sys.exit(__doc__)
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            names = generate_all(pathlib.Path(tmp))
            target = pathlib.Path(args[0]) if args else default
            stale = []
            for name in names:
                for f in sorted((pathlib.Path(tmp) / name).iterdir()):
                    g = target / name / f.name
                    if not g.exists() or g.read_bytes() != f.read_bytes():
                        stale.append(f"{name}/{f.name}")
            if stale:
                print("differs from a fresh run (other CPUs or torch versions may round differently):\n  "
                      + "\n  ".join(stale))
                return 1
            print("up to date")
            return 0
    root = pathlib.Path(args[0]) if args else default
    root.mkdir(parents=True, exist_ok=True)
    generate_all(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
