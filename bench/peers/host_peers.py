#!/usr/bin/env python3
"""Host (CPU) peer baselines beside fusor's host benchmarks.

PyTorch eager, torch.compile (Inductor, CPU), ONNX Runtime (CPU execution
provider) and JAX (XLA CPU) on the cases of fusor's host benchmarks, on the
same shapes and data, fp32, printing JSON lines in the host benchmarks'
schema. The packages are not needed by the tests: `--setup` installs them
with pip into a virtual environment (default build/peers-venv), and
`--run-in-venv` runs this script with that environment's python:

  python3 bench/peers/host_peers.py --setup
  python3 bench/peers/host_peers.py --run-in-venv [--quick] [--only rows/] ...

Variants:
  torch_eager     the formula written with torch / torch.nn.functional,
                  torch.set_num_threads(--threads)
  torch_compile   the same function through torch.compile (Inductor, C++
                  kernels built with the system compiler), timed after its
                  compile (reported as compile_seconds; --no-compile: none)
  onnxruntime     the formula as an ONNX graph built with onnx.helper (the
                  parameters as initializers, as in an exported model),
                  run by an InferenceSession on CPUExecutionProvider with
                  intra_op_num_threads = --threads, all graph optimizations
  jax             jax.jit of the formula, block_until_ready (XLA_FLAGS
                  --xla_cpu_multi_thread_eigen=true
                  intra_op_parallelism_threads=N set before jax is imported,
                  best effort: dropped if this jax rejects them)

Cases (ids as in fusor's host benchmarks; --quick: smaller shapes, the same
ids, the shapes actually run in "shape"):
  elementwise/chain6, elementwise/chain6_mem           2^25 floats
  rows/{softmax,log_softmax,layer_norm,rms_norm}/{8192x1024,512x32768}
  linear_bias_gelu/M{M}_K{K}_N{N}                       gelu(x W^T + b)
  conv3x3_bn_relu/{nchw,nhwc}/N{N}_C{C}_H{H}_W{W}_K{K}
  depthwise_pointwise/N8_C144_H56_W56_K24               MobileNetV2 block
  se_block/N8_C256_H28_W28                              squeeze-excitation

Inputs: numpy uniform(-1, 1) from a fixed seed per case (weights scaled by
1/sqrt(fan_in), batch-norm variances and gammas uniform(0.5, 2)), shared by
every variant. Timing (fusor's host rule): one warmup call (also the smoke
check: the output must be finite; it is also compared with the first
variant's output, "max_err_rel"), then --repeats timed calls
(time.perf_counter); "seconds" is the median, "seconds_min" the minimum;
gb_per_s / gflop_per_s are computed from the median. "bytes": compulsory
traffic, each input read once and the output written once (elementwise,
rows and se_block cases); "flops": 2 per multiply-add of the
contraction(s) only (linear and conv cases).

Output: JSON lines with "program": "host_peers": first one environment line
("name": "host_peers_env"), then one line per case and variant; a variant
whose package is missing prints "skipped", one that fails prints "error", a
case past --budget-s or over --max-gib prints "not_run". With none of the
packages importable (numpy is needed by all) it prints one "skipped" line
and exits 77. FUSOR_PEERS_FAKE_MISSING=1 (or a comma list of module names)
makes those imports fail, for the self-test.

Only the standard library is imported at the top (so --help, --setup and the
self-test work without the packages).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import zlib

START = time.monotonic()
PROGRAM = "host_peers"
VARIANTS = ("torch_eager", "torch_compile", "onnxruntime", "jax")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_VENV = os.path.join(REPO, "build", "peers-venv")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SEED = 2026
CHAIN_A = 0.75  # bench/chain6.hpp's a
LN_EPS, RMS_EPS, BN_EPS = 1e-5, 1e-6, 1e-5


def emit(obj):
    obj = dict(obj)
    obj.setdefault("program", PROGRAM)
    print(json.dumps(obj), flush=True)


# --------------------------------------------------------------------------
# The cases (pure Python: no numpy needed to list them or count their bytes)


class Case:
    """One benchmark case. inputs: (name, logical shape, distribution,
    is_parameter); distribution "u" = uniform(-1, 1), "pos" = uniform(0.5,
    2), "w<F>" = uniform(-1, 1) / sqrt(F). Conv tensors are logically NCHW
    (weights OIHW) whatever the layout a variant runs in."""

    def __init__(self, cid, kind, op, shape, inputs, out, flops=None, with_bytes=False, layout=None):
        self.id, self.kind, self.op, self.shape = cid, kind, op, shape
        self.inputs, self.out, self.flops, self.with_bytes, self.layout = inputs, out, flops, with_bytes, layout

    def io_bytes(self):
        """Every input read once + the output written once (fp32)."""
        return 4 * (sum(numel(s) for _, s, _, _ in self.inputs) + numel(self.out))

    def bytes(self):
        return self.io_bytes() if self.with_bytes else None


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def case_table(quick=False):
    out = []
    n = 1 << (20 if quick else 25)
    for name in ("chain6", "chain6_mem"):
        out.append(Case(f"elementwise/{name}", "elementwise", name, {"elements": n},
                        [("x", (n,), "u", False), ("b", (n,), "u", False), ("c", (n,), "u", False)], (n,),
                        with_bytes=True))
    params = {"softmax": [], "log_softmax": [], "layer_norm": [("gamma", "pos"), ("beta", "u")],
              "rms_norm": [("gamma", "pos")]}
    for op, ps in params.items():
        for rows, cols in ((8192, 1024), (512, 32768)):
            r, c = (rows // 16, cols if cols <= 4096 else cols // 16) if quick else (rows, cols)
            ins = [("x", (r, c), "u", False)] + [(p, (c,), d, True) for p, d in ps]
            out.append(Case(f"rows/{op}/{rows}x{cols}", "rows", op, {"rows": r, "cols": c}, ins, (r, c),
                            with_bytes=True))
    for M, K, N in ((1, 4096, 11008), (16, 4096, 11008), (512, 1024, 4096), (2048, 1024, 4096)):
        m, k, nn = (M if M <= 16 else M // 16, K // 16, N // 16) if quick else (M, K, N)
        out.append(Case(f"linear_bias_gelu/M{M}_K{K}_N{N}", "linear", "linear_bias_gelu",
                        {"m": m, "k": k, "n": nn},
                        [("x", (m, k), "u", False), ("w", (nn, k), f"w{k}", True), ("b", (nn,), "u", True)],
                        (m, nn), flops=2 * m * k * nn))
    for layout in ("nchw", "nhwc"):
        for N, C, H, W, K in ((8, 64, 56, 56, 64), (8, 256, 14, 14, 256)):
            nb, c, h, w, k = (1, C // 4, max(H // 4, 7), max(W // 4, 7), K // 4) if quick else (N, C, H, W, K)
            ins = [("x", (nb, c, h, w), "u", False), ("w", (k, c, 3, 3), f"w{9 * c}", True)] + bn_inputs("", k)
            out.append(Case(f"conv3x3_bn_relu/{layout}/N{N}_C{C}_H{H}_W{W}_K{K}", "conv", "conv3x3_bn_relu",
                            {"n": nb, "c": c, "h": h, "w": w, "k": k, "layout": layout}, ins, (nb, k, h, w),
                            flops=2 * nb * h * w * k * c * 9, layout=layout))
    N, C, H, W, K = (1, 144, 14, 14, 24) if quick else (8, 144, 56, 56, 24)
    ins = ([("x", (N, C, H, W), "u", False), ("wd", (C, 1, 3, 3), "w9", True)] + bn_inputs("1", C)
           + [("wp", (K, C, 1, 1), f"w{C}", True)] + bn_inputs("2", K))
    out.append(Case("depthwise_pointwise/N8_C144_H56_W56_K24", "conv", "depthwise_pointwise",
                    {"n": N, "c": C, "h": H, "w": W, "k": K, "layout": "nchw"}, ins, (N, K, H, W),
                    flops=2 * N * H * W * C * 9 + 2 * N * H * W * K * C, layout="nchw"))
    N, C, H, W = (1, 256, 7, 7) if quick else (8, 256, 28, 28)
    ins = [("x", (N, C, H, W), "u", False), ("w1", (C // 16, C), f"w{C}", True), ("b1", (C // 16,), "u", True),
           ("w2", (C, C // 16), f"w{C // 16}", True), ("b2", (C,), "u", True)]
    out.append(Case("se_block/N8_C256_H28_W28", "se", "se_block",
                    {"n": N, "c": C, "h": H, "w": W, "reduction": 16, "layout": "nchw"}, ins, (N, C, H, W),
                    with_bytes=True, layout="nchw"))
    return out


def bn_inputs(tag, ch):
    """Inference batch norm: gamma, beta, running mean, running var (> 0)."""
    return [(f"gamma{tag}", (ch,), "pos", True), (f"beta{tag}", (ch,), "u", True),
            (f"mean{tag}", (ch,), "u", True), (f"var{tag}", (ch,), "pos", True)]


# --------------------------------------------------------------------------
# Arguments, setup, re-execution in the virtual environment


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:3]))
    p.add_argument("--setup", action="store_true",
                   help="create the virtual environment (--venv) and pip-install torch, onnx, onnxruntime, jax[cpu], numpy")
    p.add_argument("--venv", default=DEFAULT_VENV, help=f"the virtual environment (default {DEFAULT_VENV})")
    p.add_argument("--torch-index-url", default=TORCH_CPU_INDEX,
                   help="--setup tries torch from this index first (the CPU-only wheels), then plain pip; '' skips it")
    p.add_argument("--run-in-venv", action="store_true", help="re-execute this script with the venv's python")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads per variant (default: all CPUs)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls after the warmup (default 5)")
    p.add_argument("--budget-s", type=float, default=1e30, help="start no new case after S seconds")
    p.add_argument("--max-gib", type=float, default=8.0,
                   help="skip a case whose inputs + output exceed this many GiB (default 8)")
    p.add_argument("--only", default="", help="comma-separated substrings of case ids")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {','.join(VARIANTS)}")
    p.add_argument("--no-compile", action="store_true", help="skip torch_compile")
    p.add_argument("--quick", action="store_true", help="much smaller shapes, the same case ids (a smoke run)")
    p.add_argument("--list", action="store_true", help="print the cases (id, shape, bytes, flops) and exit")
    a = p.parse_args(argv)
    if a.repeats < 1 or a.threads < 1 or not a.budget_s > 0 or not a.max_gib > 0:
        p.error("--repeats, --threads, --budget-s and --max-gib must be positive")
    a.only = [s for s in a.only.split(",") if s]
    a.variants = [v for v in a.variants.split(",") if v]
    bad = [v for v in a.variants if v not in VARIANTS]
    if bad:
        p.error(f"unknown variants {bad}; known: {', '.join(VARIANTS)}")
    if a.no_compile and "torch_compile" in a.variants:
        a.variants.remove("torch_compile")
    return a


def venv_python(venv):
    return os.path.join(venv, "Scripts" if os.name == "nt" else "bin", "python")


def setup(args):
    """python3 -m venv, then pip: torch (CPU index first, then plain pip),
    numpy + onnx + onnxruntime, jax[cpu]. Each step separately, so one that
    fails leaves the others installed. Exit 0 when every step succeeded."""
    def say(msg):
        print(f"host_peers --setup: {msg}", file=sys.stderr, flush=True)

    def run(cmd):
        say("$ " + " ".join(cmd))
        return subprocess.call(cmd)

    py = venv_python(args.venv)
    if not os.path.exists(py):
        rc = run([sys.executable, "-m", "venv", args.venv])
        if rc != 0:
            say(f"python3 -m venv failed (exit {rc}); on Debian: apt-get install python3-venv")
            return 1
    pip = [py, "-m", "pip", "install", "--disable-pip-version-check"]
    failed = []
    rc = 1
    if args.torch_index_url:
        rc = run(pip + ["--timeout", "20", "--retries", "1", "--index-url", args.torch_index_url, "torch"])
        if rc != 0:
            say(f"torch from {args.torch_index_url} failed (exit {rc}); trying the default index "
                "(its Linux wheel pulls the CUDA libraries: large, but it runs on the CPU)")
    if rc != 0 and run(pip + ["torch"]) != 0:
        failed.append("torch")
    if run(pip + ["numpy", "onnx", "onnxruntime"]) != 0:
        failed.append("numpy onnx onnxruntime")
    if run(pip + ["jax[cpu]"]) != 0 and run(pip + ["jax", "jaxlib"]) != 0:
        failed.append("jax")
    probe = ("import importlib, json\nv = {}\n"
             "for m in ('numpy', 'torch', 'onnx', 'onnxruntime', 'jax', 'jaxlib'):\n"
             "    try:\n        v[m] = importlib.import_module(m).__version__\n"
             "    except Exception as e:\n        v[m] = 'not importable: %s: %s' % (type(e).__name__, e)\n"
             "print(json.dumps(v))\n")
    out = subprocess.run([py, "-c", probe], capture_output=True, text=True)
    versions = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {"probe": out.stderr[-400:]}
    emit({"name": "host_peers_setup", "venv": args.venv, "failed": failed, "versions": versions})
    return 1 if failed else 0


def run_in_venv(args, argv):
    py = venv_python(args.venv)
    if not os.path.exists(py):
        emit({"name": PROGRAM, "skipped": f"no virtual environment at {args.venv}: run {sys.argv[0]} --setup first"})
        return 77
    rest = [a for a in argv if a != "--run-in-venv"]  # everything else (--venv too: harmless)
    sys.stdout.flush()
    os.execv(py, [py, os.path.abspath(__file__)] + rest)
    return 1  # not reached


# --------------------------------------------------------------------------
# Imports (inside functions; FUSOR_PEERS_FAKE_MISSING makes them fail)


def fake_missing(name):
    v = os.environ.get("FUSOR_PEERS_FAKE_MISSING", "")
    if not v or v == "0":
        return False
    return v == "1" or name in v.split(",")


def imp(name):
    if fake_missing(name.split(".")[0]):
        raise ImportError(f"{name} made unimportable by FUSOR_PEERS_FAKE_MISSING")
    import importlib
    return importlib.import_module(name)


def why(e):
    s = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {s}"[:400]


def jax_xla_flags(threads):
    """The XLA_FLAGS to use for jax, or None when this jax rejects them
    (XLA aborts on flags it does not know, so they are probed in a child)."""
    flags = f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"
    old = os.environ.get("XLA_FLAGS", "")
    env = dict(os.environ, XLA_FLAGS=(old + " " + flags).strip(), JAX_PLATFORMS="cpu")
    try:
        r = subprocess.run([sys.executable, "-c", "import jax.numpy as j; j.zeros(4).block_until_ready()"],
                           env=env, capture_output=True, text=True, timeout=300)
    except Exception:
        return None
    return env["XLA_FLAGS"] if r.returncode == 0 else None


class Backends:
    """The imported packages, or why not."""

    def __init__(self, args):
        self.mods, self.missing, self.versions = {}, {}, {}
        self.xla_flags = None
        try:
            self.np = imp("numpy")
            self.versions["numpy"] = self.np.__version__
        except Exception as e:
            self.np = None
            self.missing = {v: f"no numpy: {why(e)}" for v in VARIANTS}
            return
        wanted = set(args.variants)
        if wanted & {"torch_eager", "torch_compile"}:
            try:
                torch = imp("torch")
                torch.set_num_threads(args.threads)
                try:
                    torch.set_num_interop_threads(1)
                except Exception:
                    pass
                torch.set_grad_enabled(False)
                self.mods["torch"] = torch
                self.versions["torch"] = torch.__version__
            except Exception as e:
                self.missing["torch_eager"] = self.missing["torch_compile"] = f"no usable torch: {why(e)}"
        if "onnxruntime" in wanted:
            try:
                self.mods["onnx"] = imp("onnx")
                self.mods["onnxruntime"] = imp("onnxruntime")
                self.versions["onnx"] = self.mods["onnx"].__version__
                self.versions["onnxruntime"] = self.mods["onnxruntime"].__version__
            except Exception as e:
                self.missing["onnxruntime"] = f"no usable onnx + onnxruntime: {why(e)}"
        if "jax" in wanted:
            try:
                if fake_missing("jax"):
                    raise ImportError("jax made unimportable by FUSOR_PEERS_FAKE_MISSING")
                import importlib.util
                if importlib.util.find_spec("jax") is None:
                    raise ImportError("No module named 'jax'")
                self.xla_flags = jax_xla_flags(args.threads)
                if self.xla_flags:
                    os.environ["XLA_FLAGS"] = self.xla_flags
                os.environ.setdefault("JAX_PLATFORMS", "cpu")
                jax = imp("jax")
                self.mods["jax"] = jax
                self.versions["jax"] = jax.__version__
                try:
                    self.versions["jaxlib"] = imp("jaxlib").__version__
                except Exception:
                    pass
            except Exception as e:
                self.missing["jax"] = f"no usable jax: {why(e)}"

    def version_of(self, variant):
        key = {"torch_eager": "torch", "torch_compile": "torch", "onnxruntime": "onnxruntime", "jax": "jax"}[variant]
        return self.versions.get(key)


# --------------------------------------------------------------------------
# Inputs


def make_inputs(np, case):
    rng = np.random.default_rng(SEED ^ zlib.crc32(case.id.encode()))
    arrs = {}
    for name, shape, dist, _ in case.inputs:
        a = rng.random(shape, dtype=np.float32)
        if dist == "pos":
            a *= 1.5
            a += 0.5
        else:
            a *= 2
            a -= 1
            if dist.startswith("w"):
                a *= np.float32(1 / math.sqrt(int(dist[1:])))
        arrs[name] = a
    return arrs


def input_names(case):
    return [name for name, _, _, _ in case.inputs]


# --------------------------------------------------------------------------
# The formulas, one per package. Each builder returns (thunk, to_numpy):
# thunk() runs the case once (synchronously), to_numpy(result) gives the
# output as a logically NCHW / row-major numpy array.


def torch_function(torch, case):
    F = torch.nn.functional
    a = CHAIN_A
    op = case.op
    if op == "chain6":
        return lambda x, b, c: (F.gelu(x * a + b) - torch.sigmoid(x)) * c
    if op == "chain6_mem":
        return lambda x, b, c: torch.maximum(torch.relu(x * a + b) * c - x, b)
    if op == "softmax":
        return lambda x: torch.softmax(x, -1)
    if op == "log_softmax":
        return lambda x: torch.log_softmax(x, -1)
    if op == "layer_norm":
        return lambda x, g, b: F.layer_norm(x, (x.shape[-1],), g, b, LN_EPS)
    if op == "rms_norm":
        if hasattr(F, "rms_norm"):
            return lambda x, g: F.rms_norm(x, (x.shape[-1],), g, RMS_EPS)
        return lambda x, g: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + RMS_EPS) * g
    if op == "linear_bias_gelu":
        return lambda x, w, b: F.gelu(F.linear(x, w, b))

    def bn(t, g, b, m, v):
        return F.batch_norm(t, m, v, g, b, False, 0.0, BN_EPS)
    if op == "conv3x3_bn_relu":
        return lambda x, w, g, b, m, v: F.relu(bn(F.conv2d(x, w, padding=1), g, b, m, v))
    if op == "depthwise_pointwise":
        def f(x, wd, g1, b1, m1, v1, wp, g2, b2, m2, v2):
            t = F.relu6(bn(F.conv2d(x, wd, padding=1, groups=x.shape[1]), g1, b1, m1, v1))
            return bn(F.conv2d(t, wp), g2, b2, m2, v2)
        return f
    if op == "se_block":
        def f(x, w1, b1, w2, b2):
            s = torch.relu(F.linear(x.mean((2, 3)), w1, b1))
            return x * torch.sigmoid(F.linear(s, w2, b2))[:, :, None, None]
        return f
    raise ValueError(op)


def build_torch(bk, case, arrs, compiled):
    torch = bk.mods["torch"]
    fmt = torch.channels_last if case.layout == "nhwc" else None
    args = []
    for name in input_names(case):
        t = torch.from_numpy(arrs[name])
        if fmt is not None and t.dim() == 4:
            t = t.contiguous(memory_format=fmt)
        args.append(t)
    fn = torch_function(torch, case)
    if compiled:
        torch._dynamo.reset()  # a fresh compile per case: no recompile limit, no cache from another shape
        fn = torch.compile(fn, dynamic=False)
    return (lambda: fn(*args)), (lambda y: y.numpy())


def onnx_model(bk, case, arrs, rms_op):
    """The case as an ONNX model: activations as graph inputs, parameters as
    initializers. opset 17 (23 for RMSNormalization when rms_op)."""
    onnx, np = bk.mods["onnx"], bk.np
    helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    nodes, inits, count = [], [], [0]

    def fresh(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def const(value):
        name = fresh("k")
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def node(op, ins, **attrs):
        out = fresh("t")
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def gelu(t):  # 0.5 t (1 + erf(t / sqrt 2)); ORT fuses it into Gelu
        e = node("Erf", [node("Mul", [t, const(1 / math.sqrt(2))])])
        return node("Mul", [node("Mul", [t, node("Add", [e, const(1.0)])]), const(0.5)])

    def bn(t, tag):
        return node("BatchNormalization", [t, f"gamma{tag}", f"beta{tag}", f"mean{tag}", f"var{tag}"], epsilon=BN_EPS)

    graph_inputs = []
    for name, shape, _, is_param in case.inputs:
        if is_param:
            inits.append(numpy_helper.from_array(arrs[name], name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, TP.FLOAT, list(shape)))
    op, opset = case.op, 17
    if op == "chain6":
        t = node("Add", [node("Mul", ["x", const(CHAIN_A)]), "b"])
        y = node("Mul", [node("Sub", [gelu(t), node("Sigmoid", ["x"])]), "c"])
    elif op == "chain6_mem":
        t = node("Relu", [node("Add", [node("Mul", ["x", const(CHAIN_A)]), "b"])])
        y = node("Max", [node("Sub", [node("Mul", [t, "c"]), "x"]), "b"])
    elif op == "softmax":
        y = node("Softmax", ["x"], axis=-1)
    elif op == "log_softmax":
        y = node("LogSoftmax", ["x"], axis=-1)
    elif op == "layer_norm":
        y = node("LayerNormalization", ["x", "gamma", "beta"], axis=-1, epsilon=LN_EPS)
    elif op == "rms_norm" and rms_op:
        opset = 23
        y = node("RMSNormalization", ["x", "gamma"], axis=-1, epsilon=RMS_EPS)
    elif op == "rms_norm":  # the pattern ORT fuses into SimplifiedLayerNormalization
        ms = node("ReduceMean", [node("Pow", ["x", const(2.0)])], axes=[-1], keepdims=1)
        y = node("Mul", [node("Div", ["x", node("Sqrt", [node("Add", [ms, const(RMS_EPS)])])]), "gamma"])
    elif op == "linear_bias_gelu":
        y = gelu(node("Gemm", ["x", "w", "b"], transB=1))
    elif op == "conv3x3_bn_relu":
        y = node("Relu", [bn(node("Conv", ["x", "w"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), "")])
    elif op == "depthwise_pointwise":
        c = case.shape["c"]
        t = bn(node("Conv", ["x", "wd"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c), "1")
        t = node("Clip", [t, const(0.0), const(6.0)])
        y = bn(node("Conv", [t, "wp"], kernel_shape=[1, 1]), "2")
    elif op == "se_block":
        s = node("Flatten", [node("ReduceMean", ["x"], axes=[2, 3], keepdims=1)], axis=1)
        s = node("Relu", [node("Gemm", [s, "w1", "b1"], transB=1)])
        s = node("Sigmoid", [node("Gemm", [s, "w2", "b2"], transB=1)])
        shape = numpy_helper.from_array(np.asarray([0, -1, 1, 1], dtype=np.int64), fresh("shape"))
        inits.append(shape)
        y = node("Mul", ["x", node("Reshape", [s, shape.name])])
    else:
        raise ValueError(op)
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, case.op, graph_inputs,
                              [helper.make_tensor_value_info("y", TP.FLOAT, list(case.out))], inits)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="fusor host_peers")
    model.ir_version = helper.find_min_ir_version_for(opsets)
    onnx.checker.check_model(model)
    return model


def build_onnxruntime(bk, case, arrs, threads):
    ort = bk.mods["onnxruntime"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    extra = {}
    sess = None
    if case.op == "rms_norm":  # the RMSNormalization op where onnx and onnxruntime have it (opset 23)
        try:
            if bk.mods["onnx"].defs.onnx_opset_version() < 23:
                raise RuntimeError(f"onnx opset {bk.mods['onnx'].defs.onnx_opset_version()} < 23")
            model = onnx_model(bk, case, arrs, True)
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            extra["onnx_graph"] = "RMSNormalization (opset 23)"
        except Exception as e:
            extra["onnx_graph"] = f"explicit formula (RMSNormalization: {why(e)[:160]})"
    if sess is None:
        model = onnx_model(bk, case, arrs, False)
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {name: arrs[name] for name, _, _, is_param in case.inputs if not is_param}
    if case.layout == "nhwc":
        extra["onnx_layout"] = "nchw (ONNX's layout; onnxruntime picks its own internally)"
    return (lambda: sess.run(["y"], feeds)[0]), (lambda y: y), extra


def jax_function(jax, case):
    jnp, lax = jax.numpy, jax.lax
    a = CHAIN_A
    op = case.op
    if op == "chain6":
        return lambda x, b, c: (jax.nn.gelu(x * a + b, approximate=False) - jax.nn.sigmoid(x)) * c
    if op == "chain6_mem":
        return lambda x, b, c: jnp.maximum(jax.nn.relu(x * a + b) * c - x, b)
    if op == "softmax":
        return lambda x: jax.nn.softmax(x, axis=-1)
    if op == "log_softmax":
        return lambda x: jax.nn.log_softmax(x, axis=-1)
    if op == "layer_norm":
        def f(x, g, b):
            d = x - jnp.mean(x, axis=-1, keepdims=True)
            return d * lax.rsqrt(jnp.mean(d * d, axis=-1, keepdims=True) + LN_EPS) * g + b
        return f
    if op == "rms_norm":
        return lambda x, g: x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + RMS_EPS) * g
    if op == "linear_bias_gelu":
        return lambda x, w, b: jax.nn.gelu(jnp.matmul(x, w.T) + b, approximate=False)
    nhwc = case.layout == "nhwc"
    dn = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")

    def ch(p):  # a per-channel vector broadcast along the channel axis
        return p if nhwc else p[:, None, None]

    def bn(t, g, b, m, v):
        return (t - ch(m)) * ch(lax.rsqrt(v + BN_EPS) * g) + ch(b)

    def conv(x, w, pad, groups=1):
        return lax.conv_general_dilated(x, w, (1, 1), ((pad, pad), (pad, pad)), dimension_numbers=dn,
                                        feature_group_count=groups)
    if op == "conv3x3_bn_relu":
        return lambda x, w, g, b, m, v: jax.nn.relu(bn(conv(x, w, 1), g, b, m, v))
    if op == "depthwise_pointwise":
        c = case.shape["c"]

        def f(x, wd, g1, b1, m1, v1, wp, g2, b2, m2, v2):
            t = jnp.clip(bn(conv(x, wd, 1, c), g1, b1, m1, v1), 0.0, 6.0)
            return bn(conv(t, wp, 0), g2, b2, m2, v2)
        return f
    if op == "se_block":
        def f(x, w1, b1, w2, b2):
            s = jax.nn.relu(jnp.mean(x, axis=(2, 3)) @ w1.T + b1)
            return x * jax.nn.sigmoid(s @ w2.T + b2)[:, :, None, None]
        return f
    raise ValueError(op)


def build_jax(bk, case, arrs):
    jax, np = bk.mods["jax"], bk.np
    nhwc = case.layout == "nhwc"
    args = []
    for name in input_names(case):
        a = arrs[name]
        if nhwc and a.ndim == 4:  # activations NCHW -> NHWC, weights OIHW -> HWIO
            a = np.ascontiguousarray(a.transpose(0, 2, 3, 1) if name == "x" else a.transpose(2, 3, 1, 0))
        args.append(jax.device_put(a))
    fn = jax.jit(jax_function(jax, case))

    def to_numpy(y):
        y = np.asarray(y)
        return y.transpose(0, 3, 1, 2) if nhwc else y
    return (lambda: fn(*args).block_until_ready()), to_numpy


# --------------------------------------------------------------------------
# Running


class Runner:
    def __init__(self, args, bk):
        self.args, self.bk = args, bk

    def base(self, case, variant):
        return {"case": case.id, "variant": variant, "dtype": "f32", "shape": case.shape,
                "threads": self.args.threads}

    def run_case(self, case):
        args, bk, np = self.args, self.bk, self.bk.np
        variants = args.variants
        if time.monotonic() - START > args.budget_s:
            for v in variants:
                emit(dict(self.base(case, v), not_run="time budget spent (--budget-s)"))
            return
        gib = case.io_bytes() / 2 ** 30
        if gib > args.max_gib:
            for v in variants:
                emit(dict(self.base(case, v), not_run=f"inputs + output {gib:.2f} GiB > --max-gib {args.max_gib}"))
            return
        arrs = make_inputs(np, case) if np is not None else None
        ref = None  # (variant, output) of the first variant that ran
        for v in variants:
            line = dict(self.base(case, v))
            if v in bk.missing:
                emit(dict(line, skipped=bk.missing[v]))
                continue
            line["version"] = bk.version_of(v)
            extra = {}
            try:
                if v in ("torch_eager", "torch_compile"):
                    thunk, to_numpy = build_torch(bk, case, arrs, v == "torch_compile")
                elif v == "onnxruntime":
                    thunk, to_numpy, extra = build_onnxruntime(bk, case, arrs, args.threads)
                else:
                    thunk, to_numpy = build_jax(bk, case, arrs)
                    if bk.xla_flags:
                        extra["xla_flags"] = bk.xla_flags
                line.update(extra)
                t0 = time.perf_counter()
                y = to_numpy(thunk())  # warmup (a compile for torch_compile and jax) + smoke check
                warm = time.perf_counter() - t0
                if v in ("torch_compile", "jax"):
                    line["compile_seconds"] = warm
                else:
                    line["warmup_seconds"] = warm
                if tuple(y.shape) != tuple(case.out):
                    raise RuntimeError(f"output shape {tuple(y.shape)}, expected {tuple(case.out)}")
                if not np.isfinite(y).all():
                    raise RuntimeError("non-finite output")
                if ref is None:
                    ref = (v, np.array(y, copy=True))
                else:
                    scale = float(np.max(np.abs(ref[1]))) or 1.0
                    err = float(np.max(np.abs(y - ref[1]))) / scale
                    line.update(check_vs=ref[0], max_err_rel=err)
                    if err > 1e-3:
                        line["check"] = "MISMATCH (max |y - y_ref| / max |y_ref| > 1e-3)"
                del y
                times = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    r = thunk()
                    times.append(time.perf_counter() - t0)
                    del r
            except Exception as e:  # a package that cannot run this case: say so, go on
                emit(dict(line, error=why(e)))
                continue
            s = statistics.median(times)
            line.update(repeats=args.repeats, seconds=s, seconds_min=min(times))
            if case.bytes() is not None:
                line.update(bytes=case.bytes(), gb_per_s=case.bytes() / s / 1e9)
            if case.flops is not None:
                line.update(flops=case.flops, gflop_per_s=case.flops / s / 1e9)
            emit(line)


def main(argv):
    args = parse_args(argv)
    if args.list:
        for c in case_table(args.quick):
            print(json.dumps({"case": c.id, "shape": c.shape, "bytes": c.bytes(), "flops": c.flops,
                              "io_bytes": c.io_bytes()}))
        return 0
    if args.setup:
        return setup(args)
    if args.run_in_venv:
        return run_in_venv(args, argv)
    cases = [c for c in case_table(args.quick) if not args.only or any(s in c.id for s in args.only)]
    bk = Backends(args)
    if all(v in bk.missing for v in args.variants):
        reasons = sorted(set(bk.missing[v] for v in args.variants))
        emit({"name": PROGRAM, "skipped": "none of the peers is importable: " + "; ".join(reasons)
              + f" (install them: {sys.argv[0]} --setup, then --run-in-venv)"})
        return 77
    env = {"name": "host_peers_env", "python": sys.version.split()[0], "threads": args.threads,
           "cpu_count": os.cpu_count(), "versions": bk.versions, "variants": args.variants,
           "missing": bk.missing, "xla_flags": bk.xla_flags, "quick": args.quick, "repeats": args.repeats}
    try:
        env["loadavg_1min_before"] = os.getloadavg()[0]
    except OSError:
        pass
    emit(env)
    r = Runner(args, bk)
    for case in cases:
        r.run_case(case)
    try:
        emit({"name": "host_peers_done", "seconds": time.monotonic() - START,
              "loadavg_1min_after": os.getloadavg()[0]})
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
