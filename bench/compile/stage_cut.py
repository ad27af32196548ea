#!/usr/bin/env python3
"""Where fusor's compile time goes: compiles the fused TU of compile_bench.py
cut after each stage and prints the user CPU seconds (min of --repeat runs,
the build machine is shared) per stage:
  inc  only #include <fusor/fusor.hpp>
  e    + build the expression
  c    + canonicalize
  p    + plan under host_policy (match, cost, budgets, shared producers)
  f    + fusor::run(out, e, host()) (bind, validate, kernel, -O2 codegen)
  u    the unfused op-by-op TU of compile_bench.py
Usage: stage_cut.py [--nodes 64] [--shapes chain,wide,mixed,net] [--repeat 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_bench as cb  # noqa: E402


def cut(shape, n, stage):
    src = cb.fused_tu(shape, n)
    if stage == "inc":
        return cb.HEADER + "void f() {}\n"
    head, _, _ = src.partition("  fusor::run(")
    if stage == "e":
        return head + "  (void)e;\n}\n"
    if stage == "c":
        return head + "  auto c = fusor::canonicalize(e);\n  (void)c;\n}\n"
    if stage == "p":
        return head + "  auto c = fusor::canonicalize(e);\n  auto p = fusor::plan<fusor::host_policy>(c);\n  (void)p;\n}\n"
    if stage == "u":
        return cb.unfused_tu(shape, n)
    return src


def user_seconds(src_text, include, cuda_inc, repeat, tmp):
    path = os.path.join(tmp, "t.cpp")
    open(path, "w").write(src_text)
    cmd = ["g++", "-std=c++20", "-O2", "-ffp-contract=off", "-c", path, "-o", path + ".o", f"-I{include}",
           f"-I{cuda_inc}/cccl", f"-I{cuda_inc}"]
    best = None
    for _ in range(repeat):
        r = subprocess.run(["/usr/bin/time", "-f", "%U"] + cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-3000:])
            raise SystemExit("compile failed")
        t = float(r.stderr.strip().splitlines()[-1])
        best = t if best is None else min(best, t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="64")
    ap.add_argument("--shapes", default="chain,wide,mixed,net")
    ap.add_argument("--stages", default="inc,e,c,p,f,u")
    ap.add_argument("--repeat", type=int, default=3)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--include", default=os.path.normpath(os.path.join(here, "..", "..", "include")))
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            for n in [int(v) for v in a.nodes.split(",")]:
                rec = {"nodes": n, "shape": shape}
                for st in a.stages.split(","):
                    rec[st] = user_seconds(cut(shape, n, st), a.include, a.cuda_include, a.repeat, tmp)
                print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
