#!/usr/bin/env python3
"""PyTorch baselines beside fusor's GPU benchmarks (run by bench/gpu_suite.sh).

The same cases as bench_gpu_contraction, bench_gpu_attention,
bench_gpu_reduction and bench_gpu_elementwise, at the same shapes and dtypes,
with the same `case` ids (so tools/gpu_report.py puts them side by side) and
the same timing rule: CUDA events around batches of 4 back-to-back calls,
one warmup, the best of --repeats batches, divided by 4.

Variants:
  torch_eager         the formula written with torch.nn.functional (cuBLAS,
                      cuDNN and PyTorch's own kernels, one per op)
  torch_compile       the same function through torch.compile (Inductor,
                      Triton), timed after its compile; only a few cases,
                      since each compile takes seconds (--no-compile: none)
  torch_sdpa_flash    F.scaled_dot_product_attention restricted to
  torch_sdpa_cudnn    one backend with torch.nn.attention.sdpa_kernel
  torch_sdpa_efficient (FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION)
  torch_matmul        a bf16 / f16 8192^3 torch.matmul (the GEMM ceiling
                      through PyTorch, next to bench_gpu_ceilings' cuBLASLt)

Output: JSON lines, one per case and variant, each with "program":
"torch_baselines"; a case a backend cannot run prints a line with "error".
With no torch or no CUDA device it prints one "skipped" line and exits 77
(the exit status of every skipped GPU program here). --budget-s S: no new
case starts after S seconds (those print "not_run" lines), so the suite's
timeout never cuts a case in half.

Only torch is imported (inside main, so that --help works without it);
nothing else outside the standard library.
"""
import argparse
import json
import math
import sys
import time

START = time.monotonic()
BATCH = 4


def emit(obj):
    obj.setdefault("program", "torch_baselines")
    print(json.dumps(obj), flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=10, help="timed batches of 4 calls (default 10)")
    p.add_argument("--budget-s", type=float, default=1e30, help="start no new case after S seconds")
    p.add_argument("--compile-budget-s", type=float, default=90.0,
                   help="start no torch.compile case after S seconds (compiles are slow; default 90)")
    p.add_argument("--only", default="", help="comma-separated substrings of case ids")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile variants")
    p.add_argument("--quick", action="store_true", help="the smallest shapes only (a smoke run)")
    a = p.parse_args(argv)
    if a.repeats < 1 or not a.budget_s > 0:
        p.error("--repeats and --budget-s must be positive")
    a.only = [s for s in a.only.split(",") if s]
    return a


class Runner:
    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.device = torch.cuda.get_device_name(0)

    def selected(self, case):
        return not self.args.only or any(s in case for s in self.args.only)

    def over_budget(self, compile_case=False):
        t = time.monotonic() - START
        return t > self.args.budget_s or (compile_case and t > self.args.compile_budget_s)

    def best_seconds(self, fn):
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = math.inf
        for _ in range(self.args.repeats):
            start.record()
            for _ in range(BATCH):
                fn()
            stop.record()
            stop.synchronize()
            best = min(best, start.elapsed_time(stop) * 1e-3 / BATCH)
        return best

    def case(self, base, variant, fn, flops=None, nbytes=None, compile_case=False):
        """Times fn (a thunk) and prints one line: base + variant + timings."""
        if not self.selected(base["case"]):
            return
        line = dict(base, variant=variant, backend="cuda", device=self.device)
        if self.over_budget(compile_case):
            line["not_run"] = "time budget spent (--budget-s / --compile-budget-s)"
            emit(line)
            return
        try:
            t0 = time.monotonic()
            if compile_case:
                fn()  # the compile, outside the timing
                self.torch.cuda.synchronize()
                line["compile_seconds"] = time.monotonic() - t0
            s = self.best_seconds(fn)
        except Exception as e:  # a backend that cannot run this case: say so, go on
            line["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400]
            emit(line)
            return
        line.update(seconds=s, repeats=self.args.repeats, runs_per_timed_batch=BATCH)
        if flops is not None:
            line.update(flops=flops, tflop_per_s=flops / s / 1e12)
        if nbytes is not None:
            line.update(bytes=nbytes, gb_per_s=nbytes / s / 1e9)
        emit(line)


def dtype_of(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]


def bench_matmul(r):
    torch = r.torch
    for prec in ("bf16", "f16"):
        n = 8192
        a = torch.rand(n, n, device="cuda", dtype=dtype_of(torch, prec)) * 2 - 1
        b = torch.rand(n, n, device="cuda", dtype=dtype_of(torch, prec)) * 2 - 1
        base = {"name": "gemm_peak", "case": f"gemm_peak/{prec}/{n}", "precision": prec,
                "shape": {"m": n, "n": n, "k": n}}
        r.case(base, "torch_matmul", lambda: torch.matmul(a, b), flops=2.0 * n ** 3)


# The shapes of bench/gpu_contraction.cu (tokens, in, out) per dtype and suite.
LINEAR = [("f16", "bert", 128, 768, 3072), ("f16", "bert", 4096, 768, 3072), ("f16", "bert", 4096, 1024, 4096),
          ("bf16", "bert", 4096, 768, 3072), ("bf16", "decode", 1, 4096, 11008), ("bf16", "decode", 16, 4096, 11008),
          ("bf16", "llm", 4096, 4096, 11008), ("f16", "llm", 4096, 4096, 11008)]
LINEAR_COMPILE = {"linear_bias_gelu/bf16/llm/4096x4096x11008", "linear_bias_gelu/bf16/decode/16x4096x11008"}


def bench_linear(r, compile_):
    torch, F = r.torch, r.torch.nn.functional
    shapes = LINEAR[:1] if r.args.quick else LINEAR
    for prec, suite, m, k, n in shapes:
        case = f"linear_bias_gelu/{prec}/{suite}/{m}x{k}x{n}"
        if not r.selected(case) or (compile_ and case not in LINEAR_COMPILE):
            continue
        dt = dtype_of(torch, prec)
        x = (torch.rand(m, k, device="cuda") * 2 - 1).to(dt)
        w = ((torch.rand(n, k, device="cuda") * 2 - 1) * 0.05).to(dt)
        b = ((torch.rand(n, device="cuda") * 2 - 1) * 0.5).to(dt)
        def f(x, w, b):
            return F.gelu(F.linear(x, w, b), approximate="tanh")
        base = {"name": "linear_bias_gelu", "case": case, "precision": prec,
                "dtype": f"{prec} in, f32 accumulate, {prec} out", "shape": {"tokens": m, "in": k, "out": n}}
        if compile_:
            g = torch.compile(f, dynamic=False)
            r.case(base, "torch_compile", lambda: g(x, w, b), flops=2.0 * m * n * k, compile_case=True)
        else:
            r.case(base, "torch_eager", lambda: f(x, w, b), flops=2.0 * m * n * k)


def bench_conv(r, compile_):
    torch, F = r.torch, r.torch.nn.functional
    for nb in ((1,) if r.args.quick else (1, 32)):
        c, hw, k = 64, 56, 64
        case = f"conv_bias_relu/f16/{nb}x{c}x{hw}x{hw}"
        if not r.selected(case) or (compile_ and nb != 32):
            continue
        x = (torch.rand(nb, c, hw, hw, device="cuda") * 2 - 1).half().to(memory_format=torch.channels_last)
        w = ((torch.rand(k, c, 3, 3, device="cuda") * 2 - 1) * 0.1).half().to(memory_format=torch.channels_last)
        b = ((torch.rand(k, device="cuda") * 2 - 1) * 0.5).half()
        def f(x, w, b):
            return F.relu(F.conv2d(x, w, b, padding=1))
        base = {"name": "conv_bias_relu", "case": case, "precision": "f16", "layout": "channels_last (NHWC)",
                "shape": {"n": nb, "c": c, "h": hw, "w": hw, "cout": k, "kernel": 3, "padding": 1}}
        flops = 2.0 * nb * hw * hw * k * c * 9
        if compile_:
            g = torch.compile(f, dynamic=False)
            r.case(base, "torch_compile", lambda: g(x, w, b), flops=flops, compile_case=True)
        else:
            r.case(base, "torch_eager", lambda: f(x, w, b), flops=flops)


def attention_cases(quick):
    """(precision, suite, B, H, Sq, Sk, D, causal) as bench/gpu_attention.cu."""
    out = []
    for d in (64, 128):
        for s in ((512, 1024) if quick else (512, 1024, 2048, 4096, 8192)):
            for causal in (False, True):
                out.append(("f16", "square", max(1, 8192 // s), 16, s, s, d, causal))
    out.append(("bf16", "decode", 16, 32, 1, 4096, 128, False))
    if not quick:
        out += [("bf16", "decode", 4, 32, 1, 16384, 128, False), ("bf16", "llm", 1, 32, 4096, 4096, 128, True),
                ("f16", "llm", 1, 32, 4096, 4096, 128, True)]
    return out


def attention_names(prec, suite, b, h, sq, sk, d, causal):
    tail = f"d{d}" + (f"_s{sq}" if sq == sk else f"_q{sq}_kv{sk}") + ("_causal" if causal else "")
    name = f"attention_{tail}" if suite == "square" else f"attention_{suite}_{tail}"
    return name, f"attention/{prec}/{suite}/b{b}_h{h}_{tail}"


def bench_attention(r):
    torch, F = r.torch, r.torch.nn.functional
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        emit({"name": "attention", "error": f"torch.nn.attention not available: {e}"})
        return
    backends = [("torch_sdpa_flash", "FLASH_ATTENTION"), ("torch_sdpa_cudnn", "CUDNN_ATTENTION"),
                ("torch_sdpa_efficient", "EFFICIENT_ATTENTION")]
    for prec, suite, b, h, sq, sk, d, causal in attention_cases(r.args.quick):
        name, case = attention_names(prec, suite, b, h, sq, sk, d, causal)
        if not r.selected(case):
            continue
        dt = dtype_of(torch, prec)
        q = (torch.rand(b, h, sq, d, device="cuda") * 2 - 1).to(dt)
        k = (torch.rand(b, h, sk, d, device="cuda") * 2 - 1).to(dt)
        v = (torch.rand(b, h, sk, d, device="cuda") * 2 - 1).to(dt)
        base = {"name": name, "case": case, "precision": prec,
                "shape": {"batch": b, "heads": h, "seq": sk if sq != sk else sq, "seq_q": sq, "seq_k": sk,
                          "head_dim": d, "causal": causal, "layout": "bhsd"}}
        flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
        nbytes = float(q.element_size() * (2 * q.numel() + 2 * k.numel()))
        for variant, backend in backends:
            bk = getattr(SDPBackend, backend, None)
            if bk is None:
                emit(dict(base, variant=variant, error=f"SDPBackend.{backend} not in this torch"))
                continue
            def run(bk=bk):
                with sdpa_kernel(bk):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            r.case(base, variant, run, flops=flops, nbytes=nbytes)
        del q, k, v


# bench/reduction_cases.hpp's byte model, in elements: (R C multiple, C multiple)
RED_BYTES = {"softmax": (2, 0), "layer_norm": (2, 2), "layer_norm_residual": (3, 2), "rms_norm": (2, 1)}
RED_COMPILE = {"reduction/f16/layer_norm_residual/16384x4096", "reduction/f16/rms_norm/16384x4096"}


def bench_reduction(r, compile_):
    torch, F = r.torch, r.torch.nn.functional
    rows_list, cols_list = ((1024,), (768, 4096)) if r.args.quick else ((4096, 16384, 65536), (768, 4096, 8192))
    for rows in rows_list:
        for cols in cols_list:
            for prec in ("f32", "f16"):
                dt = dtype_of(torch, prec)
                ids = {op: f"reduction/{prec}/{op}/{rows}x{cols}" for op in RED_BYTES}
                ids = {op: c for op, c in ids.items() if r.selected(c) and (not compile_ or c in RED_COMPILE)}
                if not ids:
                    continue
                x = (torch.rand(rows, cols, device="cuda") * 2 - 1).to(dt)
                res = (torch.rand(rows, cols, device="cuda") * 2 - 1).to(dt)
                g = (torch.rand(cols, device="cuda") + 0.5).to(dt)
                bb = (torch.rand(cols, device="cuda") - 0.5).to(dt)
                fns = {
                    "softmax": lambda x, r_, g, b: torch.softmax(x, -1),
                    "layer_norm": lambda x, r_, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
                    "layer_norm_residual": lambda x, r_, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5) + r_,
                    "rms_norm": lambda x, r_, g, b: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * g,
                }
                for op, case in ids.items():
                    rc, c = RED_BYTES[op]
                    nbytes = float(x.element_size() * (rc * rows * cols + c * cols))
                    base = {"bench": "reduction", "name": op, "case": case, "op": op, "rows": rows, "cols": cols,
                            "dtype": prec, "precision": prec}
                    fn = fns[op]
                    if compile_:
                        cf = torch.compile(fn, dynamic=False)
                        r.case(base, "torch_compile", lambda cf=cf: cf(x, res, g, bb), nbytes=nbytes, compile_case=True)
                    else:
                        r.case(base, "torch_eager", lambda fn=fn: fn(x, res, g, bb), nbytes=nbytes)
                del x, res


def bench_elementwise(r, compile_):
    torch, F = r.torch, r.torch.nn.functional
    n = 1 << (20 if r.args.quick else 26)
    x = torch.rand(n, device="cuda") * 8 - 4
    b = torch.rand(n, device="cuda") * 2 - 1
    c = torch.rand(n, device="cuda") + 0.5
    a = 0.75  # chain6::a
    chains = {
        "chain6": lambda x, b, c: (F.gelu(x * a + b) - torch.sigmoid(x)) * c,
        "chain6_mem": lambda x, b, c: torch.maximum(torch.relu(x * a + b) * c - x, b),
    }
    for name, fn in chains.items():
        base = {"name": name, "case": f"{name}/f32/{n}", "precision": "f32", "elements": n}
        nbytes = 16.0 * n  # x, b, c read + y written (bench/chain6.hpp's convention)
        if compile_:
            cf = torch.compile(fn, dynamic=False)
            r.case(base, "torch_compile", lambda cf=cf: cf(x, b, c), nbytes=nbytes, compile_case=True)
        else:
            r.case(base, "torch_eager", lambda fn=fn: fn(x, b, c), nbytes=nbytes)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        emit({"name": "torch_baselines", "skipped": f"no usable torch: {type(e).__name__}: {e}"})
        return 77
    if not torch.cuda.is_available():
        emit({"name": "torch_baselines", "skipped": "no CUDA device (torch.cuda.is_available() is False)"})
        return 77
    r = Runner(torch, args)
    env = {"name": "torch_env", "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "device": r.device}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = None
    emit(env)
    # eager first (cheap, every case), compile last (slow, a few cases)
    with torch.inference_mode():
        bench_matmul(r)
        bench_attention(r)
        bench_linear(r, False)
        bench_conv(r, False)
        bench_reduction(r, False)
        bench_elementwise(r, False)
        if not args.no_compile:
            bench_linear(r, True)
            bench_reduction(r, True)
            bench_elementwise(r, True)
            bench_conv(r, True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
