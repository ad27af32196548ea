#!/usr/bin/env python3
"""Compile-time benchmark of fusor's type-level pipeline.

Generates translation units with expressions of N nodes in four shapes and
compiles each twice:
  fused    fusor::run(out, e, fusor::host()): canonicalize + match + plan of
           the whole expression and one fused kernel instantiation;
  unfused  the same computation written op by op against fusor::unfused():
           one run() per node into a temporary (no multi-node canonicalization
           or planning, one small kernel per op).
With nvcc the TUs are .cu files over device_view with fusor::cuda() and
fusor::unfused(fusor::cuda()) (CUDA kernels for sm_90: what an nvcc user
compiles); they are compiled, never run.
Prints one JSON object per line:
  {"nodes", "shape", "compiler", "seconds_fused", "seconds_unfused",
   "wall_seconds_fused", "wall_seconds_unfused", "peak_rss_mb",
   "peak_rss_mb_unfused"}
A TU that does not compile gives null seconds and "failed": "fused" or
"unfused" (the run goes on). seconds_* are CPU seconds (user + system, the compiler and its
subprocesses: cudafe, cicc, ptxas), which a shared machine disturbs less
than wall time; peak_rss_mb is the largest single process.
Shapes: chain (a unary/binary chain), wide (a balanced sum over many tagged
inputs), mixed (a deep tree mixing ops over a few shared tagged inputs), net
(a deep 2-D graph of blocks mixing contractions, reductions and elementwise
ops: linear, gelu, residual add, mean-centering, softmax, layer_norm, tanh).

Usage: compile_bench.py [--nodes 8,16,32,64,128] [--compilers g++,nvcc]
                        [--include DIR] [--out FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

UNARY = ["relu", "sigmoid", "tanh", "exp", "abs", "silu", "softsign", "gelu"]
BINARY = ["+", "*", "-"]


def chain(n):
    """n nodes: x -> f1 -> ... with a binary op against y every third node."""
    lines, expr, steps = [], "x", []
    for i in range(n):
        if i % 3 == 2:
            op = BINARY[i % len(BINARY)]
            steps.append(("bin", op, "y"))
            expr = f"({expr} {op} y)"
        else:
            f = UNARY[i % len(UNARY)]
            steps.append(("un", f, None))
            expr = f"fusor::{f}({expr})"
    return expr, steps


def wide(n):
    """A balanced add tree with n add nodes over n+1 distinct tagged inputs."""
    leaves = [f"in[{i % 8}]" for i in range(n + 1)]
    exprs = [f"fusor::relu({l})" if i % 2 else l for i, l in enumerate(leaves)]
    count = sum(1 for i in range(len(leaves)) if i % 2)
    # each relu is a node too: trim to keep the node count n
    while count + len(exprs) - 1 > n and count > 0:
        for i, e in enumerate(exprs):
            if e.startswith("fusor::relu("):
                exprs[i] = e[len("fusor::relu("):-1]
                count -= 1
                break
    while len(exprs) > 1:
        exprs = [f"({exprs[i]} + {exprs[i + 1]})" if i + 1 < len(exprs) else exprs[i] for i in range(0, len(exprs), 2)]
    return exprs[0]


def mixed(n):
    """A deep tree: alternately f(a) and g(a, b) over two shared tagged inputs."""
    def build(k, depth):
        if k <= 0:
            return "x" if depth % 2 else "y"
        if k % 2:
            return f"fusor::{UNARY[(k + depth) % len(UNARY)]}({build(k - 1, depth + 1)})"
        left = (k - 1) // 2
        return f"fusor::max({build(left, depth + 1)}, {build(k - 1 - left, depth + 2)} * 0.5f)"
    # max + mul per binary level: approximate n nodes
    return build(n // 2 + 1, 0)


# One block of the "net" shape: (nodes, fused text with {h}, unfused steps).
# Unfused steps: (expression with {h}, output columns: "k" or "1").
NET_BLOCK = [
    ("fusor::linear({h}, w, b)", "k"),
    ("fusor::gelu({h})", "k"),
    ("({h} + x)", "k"),
    ("fusor::mean(y, {{-1}})", "1"),  # a reduction whose result broadcasts back
    ("({h} - {m})", "k"),
    ("fusor::softmax({h})", "k"),
    ("fusor::layer_norm({h}, g, b)", "k"),
    ("fusor::tanh({h})", "k"),
]


def net(n):
    """n nodes (rounded down to whole 8-node blocks, at least one) over tagged
    [rows, 64] inputs x, y and a [64, 64] weight: every block one contraction
    (linear) and three reductions (mean, softmax, layer_norm)."""
    h = "x"
    for _ in range(max(1, n // len(NET_BLOCK))):
        h = f"fusor::layer_norm(fusor::softmax(((fusor::gelu(fusor::linear({h}, w, b)) + x) - fusor::mean(y, {{-1}}))), g, b)"
        h = f"fusor::tanh({h})"
    return h


HEADER = """#include <fusor/fusor.hpp>
#include <vector>
struct X; struct Y; template <int K> struct In;
"""


NET_VIEWS = """  auto x = fusor::host_view(px, 8, 64){tx};
  auto y = fusor::host_view(py, 8, 64){ty};
  auto w = fusor::host_view(px, 64, 64){tw};
  auto b = fusor::host_view(py, 64){tb};
  auto g = fusor::host_view(py + 64, 64){tg};
"""


def net_views(tagged):
    tags = dict(tx=".with_id<X>()", ty=".with_id<Y>()", tw=".with_id<In<0>>()", tb=".with_id<In<1>>()",
                tg=".with_id<In<2>>()")
    return NET_VIEWS.format(**(tags if tagged else {k: "" for k in tags}))


def fused_tu(shape, n):
    if shape == "net":
        body = HEADER + "void f(const float* px, const float* py, float* po, long) {\n" + net_views(True)
        body += f"  auto e = {net(n)};\n  fusor::run(fusor::host_view(po, 8, 64), e, fusor::host());\n}}\n"
        return body
    body = HEADER + "void f(const float* px, const float* py, float* po, long n) {\n"
    body += "  auto x = fusor::host_view(px, n).with_id<X>();\n  auto y = fusor::host_view(py, n).with_id<Y>();\n"
    body += "  auto in = std::make_tuple(" + ", ".join(
        f"fusor::host_view(px + {k}, n - 8).with_id<In<{k}>>()" for k in range(8)) + ");\n"
    if shape == "chain":
        expr, _ = chain(n)
    elif shape == "wide":
        expr = re.sub(r"in\[(\d+)\]", r"std::get<\1>(in)", wide(n))
        body = body.replace("fusor::host_view(po, n)", "fusor::host_view(po, n - 8)")
    else:
        expr = mixed(n)
    out = "fusor::host_view(po, n - 8)" if shape == "wide" else "fusor::host_view(po, n)"
    body += f"  auto e = {expr};\n  (void)x; (void)y;\n  fusor::run({out}, e, fusor::host());\n}}\n"
    return body


def unfused_tu(shape, n):
    """Op by op: each node its own run() into a temporary."""
    if shape == "net":
        body = HEADER + "void f(const float* px, const float* py, float* po, long) {\n" + net_views(False)
        body += "  std::vector<std::vector<float>> t;\n  t.reserve(512);\n"
        prev, mean, i = "x", None, 0
        for _ in range(max(1, n // len(NET_BLOCK))):
            for expr, cols in NET_BLOCK:
                c = "64" if cols == "k" else "1"
                body += "  t.emplace_back(8 * 64);\n"
                e = expr.format(h=prev, m=mean)
                body += (f"  {{ auto o = fusor::host_view(t.back().data(), 8, {c}); "
                         f"fusor::run(o, {e}, fusor::unfused()); }}\n")
                if cols == "1":
                    mean = f"fusor::host_view(t[{i}].data(), 8, 1)"
                else:
                    prev = f"fusor::host_view(t[{i}].data(), 8, 64)"
                i += 1
        body += f"  fusor::run(fusor::host_view(po, 8, 64), fusor::abs({prev}), fusor::unfused());\n}}\n"
        return body
    body = HEADER + "void f(const float* px, const float* py, float* po, long n) {\n"
    body += "  auto x = fusor::host_view(px, n);\n  auto y = fusor::host_view(py, n);\n"
    body += "  std::vector<std::vector<float>> t;\n  t.reserve(512);\n"
    # emit a generic op-by-op program with the same node count and op mix
    prev = "x"
    for i in range(n):
        body += "  t.emplace_back(n);\n"
        if i % 3 == 2:
            op = BINARY[i % len(BINARY)]
            rhs = "y"
            e = f"{prev} {op} {rhs}"
        else:
            e = f"fusor::{UNARY[i % len(UNARY)]}({prev})"
        body += f"  {{ auto o = fusor::host_view(t.back().data(), n); fusor::run(o, {e}, fusor::unfused()); }}\n"
        prev = f"fusor::host_view(t[{i}].data(), n)"
    body += f"  fusor::run(fusor::host_view(po, n), fusor::abs({prev}), fusor::unfused());\n}}\n"
    return body


def for_device(src):
    """The nvcc variant of a TU: device views, the CUDA executor."""
    src = src.replace("fusor::host_view(", "fusor::device_view(")
    src = src.replace("fusor::unfused()", "fusor::unfused(fusor::cuda())")
    return src.replace("fusor::host()", "fusor::cuda()")


def compile_once(compiler, src, include, cuda_inc):
    obj = src + ".o"
    if compiler == "nvcc":
        cmd = ["nvcc", "-std=c++20", "-arch=sm_90", "-O2", "-c", src, "-o", obj, f"-I{include}"]
    else:
        cmd = [compiler, "-std=c++20", "-O2", "-ffp-contract=off", "-c", src, "-o", obj, f"-I{include}",
               f"-I{cuda_inc}/cccl", f"-I{cuda_inc}"]
    r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        first = next((l for l in r.stderr.splitlines() if "error" in l), "?")
        sys.stderr.write(f"compile failed: {' '.join(cmd)}\n{first[:300]}\n")
        return None, None, None
    wall, user, system, rss_kb = r.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), float(wall), float(rss_kb) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="8,16,32,64,128")
    ap.add_argument("--shapes", default="chain,wide,mixed,net")
    ap.add_argument("--compilers", default="g++")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--include", default=os.path.normpath(os.path.join(here, "..", "..", "include")))
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    sink = open(a.out, "w") if a.out else None
    with tempfile.TemporaryDirectory() as tmp:
        for compiler in a.compilers.split(","):
            ext = ".cu" if compiler == "nvcc" else ".cpp"
            for shape in a.shapes.split(","):
                for n in [int(v) for v in a.nodes.split(",")]:
                    fs, us = os.path.join(tmp, f"f_{shape}_{n}{ext}"), os.path.join(tmp, f"u_{shape}_{n}{ext}")
                    device = for_device if compiler == "nvcc" else (lambda src: src)
                    open(fs, "w").write(device(fused_tu(shape, n)))
                    open(us, "w").write(device(unfused_tu(shape, n)))
                    tf, wf, mf = compile_once(compiler, fs, a.include, a.cuda_include)
                    tu, wu, mu = compile_once(compiler, us, a.include, a.cuda_include)
                    r2 = (lambda v, d: None if v is None else round(v, d))
                    rec = {"nodes": n, "shape": shape, "compiler": compiler, "seconds_fused": r2(tf, 2),
                           "seconds_unfused": r2(tu, 2), "wall_seconds_fused": wf, "wall_seconds_unfused": wu,
                           "peak_rss_mb": r2(mf, 1), "peak_rss_mb_unfused": r2(mu, 1)}
                    if tf is None or tu is None:
                        rec["failed"] = "fused" if tf is None else "unfused"
                    line = json.dumps(rec)
                    print(line, flush=True)
                    if sink:
                        sink.write(line + "\n")


if __name__ == "__main__":
    main()
