#!/usr/bin/env python3
"""Compile-time benchmark of fusor's type-level pipeline.

Generates translation units with expressions of N nodes in three shapes and
compiles each twice:
  fused    fusor::run(out, e, fusor::host()): canonicalize + match + plan of
           the whole expression and one fused kernel instantiation;
  unfused  the same computation written op by op against fusor::unfused():
           one run() per node into a temporary (no multi-node canonicalization
           or planning, one small kernel per op).
Prints one JSON object per line:
  {"nodes", "shape", "compiler", "seconds_fused", "seconds_unfused",
   "peak_rss_mb", "peak_rss_mb_unfused"}
Shapes: chain (a unary/binary chain), wide (a balanced sum over many tagged
inputs), mixed (a deep tree mixing ops over a few shared tagged inputs).

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


HEADER = """#include <fusor/fusor.hpp>
#include <vector>
struct X; struct Y; template <int K> struct In;
"""


def fused_tu(shape, n):
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


def compile_once(compiler, src, include, cuda_inc):
    obj = src + ".o"
    if compiler == "nvcc":
        cmd = ["nvcc", "-std=c++20", "-arch=sm_90", "-O2", "-c", src, "-o", obj, f"-I{include}"]
    else:
        cmd = [compiler, "-std=c++20", "-O2", "-ffp-contract=off", "-c", src, "-o", obj, f"-I{include}",
               f"-I{cuda_inc}/cccl", f"-I{cuda_inc}"]
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-3000:])
        raise SystemExit(f"compile failed: {' '.join(cmd)}")
    secs, rss_kb = r.stderr.strip().splitlines()[-1].split()
    return float(secs), float(rss_kb) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="8,16,32,64,128")
    ap.add_argument("--shapes", default="chain,wide,mixed")
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
                    open(fs, "w").write(fused_tu(shape, n))
                    open(us, "w").write(unfused_tu(shape, n))
                    tf, mf = compile_once(compiler, fs, a.include, a.cuda_include)
                    tu, mu = compile_once(compiler, us, a.include, a.cuda_include)
                    rec = {"nodes": n, "shape": shape, "compiler": compiler, "seconds_fused": tf,
                           "seconds_unfused": tu, "peak_rss_mb": round(mf, 1), "peak_rss_mb_unfused": round(mu, 1)}
                    line = json.dumps(rec)
                    print(line, flush=True)
                    if sink:
                        sink.write(line + "\n")


if __name__ == "__main__":
    main()
