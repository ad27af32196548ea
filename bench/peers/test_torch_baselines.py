#!/usr/bin/env python3
"""ctest peers.torch_baselines_fake: runs torch_baselines.py against a fake
`torch` module (shapes only, no arithmetic), so that the script's own logic
is checked on a machine without torch or a GPU: every case is emitted with
the case ids, shapes, FLOP and byte counts of fusor's benchmarks, the
variants, --only, --no-compile, --budget-s (not_run lines), a backend
error becoming an "error" line, and the exit 77 "skipped" paths (no torch,
no CUDA device). Exit 0 on success.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torch_baselines.py")

FAKE = textwrap.dedent('''
    """A fake torch: tensors carry a shape and a dtype, every op returns one."""
    import contextlib, os, time
    __version__ = "0.0-fake"
    float16, bfloat16, float32 = "f16", "bf16", "f32"
    channels_last = "channels_last"
    SIZES = {"f16": 2, "bf16": 2, "f32": 4}

    class T:
        def __init__(self, shape, dtype="f32"):
            self.shape, self.dtype = tuple(shape), dtype
        def numel(self):
            n = 1
            for s in self.shape:
                n *= s
            return n
        def element_size(self):
            return SIZES[self.dtype]
        def to(self, x=None, memory_format=None):
            return T(self.shape, x if x in SIZES else self.dtype)
        def half(self):
            return T(self.shape, "f16")
        def float(self):
            return T(self.shape, "f32")
        def pow(self, _):
            return self
        def mean(self, dim, keepdim=False):
            return T(self.shape[:-1] + ((1,) if keepdim else ()), self.dtype)
        def _bin(self, other):
            return self
        __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _bin

    def rand(*shape, device=None, dtype="f32"):
        assert device == "cuda"
        return T(shape, dtype)
    def matmul(a, b):
        return T(a.shape[:-1] + b.shape[-1:], a.dtype)
    def softmax(x, dim):
        return x
    def sigmoid(x):
        return x
    def relu(x):
        return x
    def rsqrt(x):
        return x
    def maximum(a, b):
        return a
    def compile(f, dynamic=None):
        def g(*a):
            time.sleep(0.01)
            return f(*a)
        return g
    inference_mode = contextlib.nullcontext

    class _Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0
        def record(self):
            self.t = time.perf_counter()
        def synchronize(self):
            pass
        def elapsed_time(self, other):
            return max(other.t - self.t, 1e-6) * 1e3

    class cuda:
        Event = _Event
        @staticmethod
        def is_available():
            return os.environ.get("FAKE_NO_CUDA") != "1"
        @staticmethod
        def get_device_name(i):
            return "Fake GPU"
        @staticmethod
        def synchronize():
            pass

    class version:
        cuda = "13.0"

    class backends:
        class cudnn:
            @staticmethod
            def version():
                return 91900

    class _F:
        @staticmethod
        def linear(x, w, b):
            assert x.shape[-1] == w.shape[1] and b.shape == (w.shape[0],)
            return T(x.shape[:-1] + (w.shape[0],), x.dtype)
        @staticmethod
        def gelu(x, approximate="none"):
            return x
        @staticmethod
        def relu(x):
            return x
        @staticmethod
        def conv2d(x, w, b, padding=0):
            return T((x.shape[0], w.shape[0]) + x.shape[2:], x.dtype)
        @staticmethod
        def layer_norm(x, shape, g, b, eps):
            return x
        @staticmethod
        def scaled_dot_product_attention(q, k, v, is_causal=False):
            import torch.nn.attention as att
            if att.CURRENT == "CUDNN_ATTENTION" and q.shape[2] == 1:
                raise RuntimeError("No available kernel. Aborting execution.")
            return T(q.shape, q.dtype)

    from . import nn  # the package torch/nn: functional (= _F) and attention
''')

FAKE_ATTENTION = textwrap.dedent('''
    import contextlib
    CURRENT = None
    class SDPBackend:
        FLASH_ATTENTION = "FLASH_ATTENTION"
        CUDNN_ATTENTION = "CUDNN_ATTENTION"
        EFFICIENT_ATTENTION = "EFFICIENT_ATTENTION"
    @contextlib.contextmanager
    def sdpa_kernel(b):
        global CURRENT
        CURRENT = b
        yield
        CURRENT = None
''')

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(args, env_extra, fake=True):
    with tempfile.TemporaryDirectory() as d:
        if fake:
            os.makedirs(os.path.join(d, "torch", "nn"))
            open(os.path.join(d, "torch", "__init__.py"), "w").write(FAKE)
            open(os.path.join(d, "torch", "nn", "__init__.py"), "w").write("from .. import _F as functional\n")
            open(os.path.join(d, "torch", "nn", "attention.py"), "w").write(FAKE_ATTENTION)
        env = dict(os.environ, PYTHONPATH=d, **env_extra)
        r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    return r.returncode, lines, r.stderr


def main():
    rc, lines, err = run(["--repeats", "2"], {})
    check(rc == 0, f"exit {rc}: {err[-2000:]}")
    by = {(l.get("case"), l.get("variant")): l for l in lines}
    check(lines and lines[0].get("name") == "torch_env" and lines[0].get("torch") == "0.0-fake", "first line: torch_env")
    check(all(l.get("program") == "torch_baselines" for l in lines), "every line has program")
    l = by.get(("linear_bias_gelu/bf16/llm/4096x4096x11008", "torch_eager"))
    check(l is not None and l["flops"] == 2.0 * 4096 * 4096 * 11008 and l["shape"] == {"tokens": 4096, "in": 4096, "out": 11008}
          and l["precision"] == "bf16" and l["seconds"] > 0, f"linear llm eager: {l}")
    check(("linear_bias_gelu/bf16/llm/4096x4096x11008", "torch_compile") in by, "linear llm compile")
    check(("linear_bias_gelu/f16/bert/128x768x3072", "torch_compile") not in by, "compile only the chosen cases")
    n_linear = sum(1 for (c, v) in by if c and c.startswith("linear_bias_gelu/") and v == "torch_eager")
    check(n_linear == 8, f"8 linear cases as bench_gpu_contraction, got {n_linear}")
    a = by.get(("attention/bf16/llm/b1_h32_d128_s4096_causal", "torch_sdpa_flash"))
    check(a is not None and a["flops"] == 4.0 * 32 * 4096 * 4096 * 128 * 0.5 and a["name"] == "attention_llm_d128_s4096_causal",
          f"attention llm: {a}")
    d = by.get(("attention/bf16/decode/b16_h32_d128_q1_kv4096", "torch_sdpa_cudnn"))
    check(d is not None and "error" in d and "No available kernel" in d["error"], f"a backend error is an error line: {d}")
    d = by.get(("attention/bf16/decode/b16_h32_d128_q1_kv4096", "torch_sdpa_flash"))
    check(d is not None and d["bytes"] == 2.0 * (2 * 16 * 32 * 128 + 2 * 16 * 32 * 4096 * 128) and "gb_per_s" in d,
          f"decode bytes: {d}")
    check(("attention/f16/square/b1_h16_d128_s8192", "torch_sdpa_efficient") in by, "square sweep up to 8192")
    n_att = len({c for (c, v) in by if c and c.startswith("attention/")})
    check(n_att == 24, f"24 attention cases as bench_gpu_attention, got {n_att}")
    r = by.get(("reduction/f16/layer_norm_residual/16384x4096", "torch_eager"))
    check(r is not None and r["bytes"] == 2.0 * (3 * 16384 * 4096 + 2 * 4096) and r["op"] == "layer_norm_residual",
          f"reduction bytes: {r}")
    check(("reduction/f16/layer_norm_residual/16384x4096", "torch_compile") in by, "reduction compile")
    e = by.get(("chain6_mem/f32/67108864", "torch_eager"))
    check(e is not None and e["bytes"] == 16.0 * 67108864 and e["name"] == "chain6_mem", f"chain6_mem: {e}")
    check(("conv_bias_relu/f16/32x64x56x56", "torch_compile") in by and ("conv_bias_relu/f16/1x64x56x56", "torch_eager") in by,
          "conv cases")
    check(("gemm_peak/bf16/8192", "torch_matmul") in by, "matmul ceiling")

    rc, lines, err = run(["--only", "attention/bf16/decode", "--no-compile", "--repeats", "1"], {})
    cases = {l.get("case") for l in lines if "case" in l}
    check(rc == 0 and cases == {"attention/bf16/decode/b16_h32_d128_q1_kv4096", "attention/bf16/decode/b4_h32_d128_q1_kv16384"},
          f"--only: {cases} {err[-500:]}")
    rc, lines, _ = run(["--budget-s", "0.001", "--repeats", "1"], {})
    check(rc == 0 and lines[1:] and all("not_run" in l for l in lines[1:]), "--budget-s: the rest are not_run")
    rc, lines, _ = run([], {"FAKE_NO_CUDA": "1"})
    check(rc == 77 and len(lines) == 1 and "no CUDA device" in lines[0].get("skipped", ""), f"no CUDA: {rc} {lines}")
    rc, lines, _ = run([], {}, fake=False)
    try:
        import torch  # noqa: F401  (a real torch here: the no-torch path cannot be shown)
        have_torch = True
    except ImportError:
        have_torch = False
    if not have_torch:
        check(rc == 77 and "no usable torch" in lines[0].get("skipped", ""), f"no torch: {rc} {lines}")
    for f in failures:
        print("FAIL:", f)
    print(f"peers.torch_baselines_fake: {'FAILED' if failures else 'ok'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
