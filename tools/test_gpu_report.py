#!/usr/bin/env python3
"""ctest gpu_report.fake_outdir: tools/gpu_report.py on a made-up OUTDIR of
bench/gpu_suite.sh (every file the suite writes, in its format), so that
the report is checked without a GPU: the tables and their numbers, missing
variants shown as such, --summary, --write between the markers (and
idempotent), and the errors (no suite.json, no markers). Exit 0 on success.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "gpu_report.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True)


def fake_outdir(d):
    steps = [("bundle", "ok", 1, 10, "commit abc"), ("facts", "ok", 12, 25, "NVIDIA H200"),
             ("bench_gpu_attention", "TIMEOUT", 50, 50, "partial"), ("memcheck", "FAILED", 20, 30, "ERROR SUMMARY: 1 error")]
    suite = {"dry_run": False, "deadline_s": 465, "result": "FAILED", "host": "gpu-host Linux 6.1 x86_64",
             "budgets_s": {s[0]: s[3] for s in steps},
             "steps": [{"step": n, "status": st, "exit": "0", "start_unix": 1764000000 + i, "seconds": sec, "limit_s": lim,
                        "detail": det} for i, (n, st, sec, lim, det) in enumerate(steps)],
             "bundle": {"commit": "0123456789abcdef", "uncommitted_changes": True, "nvcc": "Cuda compilation tools, release 13.0",
                        "cuda_architectures": "90a-real;90-virtual", "cuda_runtime": "static"}}
    json.dump(suite, open(os.path.join(d, "suite.json"), "w"))
    lines = [
        {"program": "bench_gpu_ceilings", "name": "device", "device": "NVIDIA H200", "compute_capability": "9.0",
         "sm_count": 132, "sm_clock_max_mhz": 1980.0, "memory_clock_max_mhz": 3201.0, "memory_bus_bits": 6144,
         "l2_bytes": 62914560, "memory_total_bytes": 150754820096, "driver_version": 13000, "runtime_version": 13000, "ecc": True},
        {"program": "bench_gpu_ceilings", "name": "d2d_copy", "gb_per_s": 4321.5, "nominal_fraction": 0.9},
        {"program": "bench_gpu_ceilings", "name": "gemm_peak", "precision": "bf16", "shape": {"m": 8192, "n": 8192, "k": 8192},
         "tflop_per_s": 777.7, "datasheet_fraction": 0.786},
        {"program": "torch_baselines", "name": "gemm_peak", "case": "gemm_peak/bf16/8192", "variant": "torch_matmul",
         "precision": "bf16", "shape": {"m": 8192, "n": 8192, "k": 8192}, "seconds": 0.0014, "tflop_per_s": 785.0},
        {"program": "bench_gpu_contraction", "name": "linear_bias_gelu", "case": "linear_bias_gelu/bf16/llm/4096x4096x11008",
         "check": "x", "pass": True},
        {"program": "bench_gpu_contraction", "name": "linear_bias_gelu", "case": "linear_bias_gelu/f16/bert/128x768x3072",
         "check": "x", "pass": False},
        {"program": "bench_gpu_contraction", "name": "linear_bias_gelu", "case": "linear_bias_gelu/bf16/llm/4096x4096x11008",
         "variant": "fused", "seconds": 0.002, "tflop_per_s": 184.5},
        {"program": "bench_gpu_contraction", "name": "linear_bias_gelu", "case": "linear_bias_gelu/bf16/llm/4096x4096x11008",
         "variant": "cublaslt", "seconds": 0.0005, "tflop_per_s": 738.1},
        {"program": "torch_baselines", "name": "linear_bias_gelu", "case": "linear_bias_gelu/bf16/llm/4096x4096x11008",
         "variant": "torch_eager", "seconds": 0.0006, "tflop_per_s": 615.0},
        {"program": "torch_baselines", "name": "linear_bias_gelu", "case": "linear_bias_gelu/bf16/llm/4096x4096x11008",
         "variant": "torch_compile", "error": "RuntimeError: no compiler"},
        {"program": "bench_gpu_contraction", "name": "linear_bias_gelu", "case": "linear_bias_gelu/f16/llm/4096x4096x11008",
         "backend": "cuda", "not_run": "time budget (--budget-s 35) spent"},
        {"program": "bench_gpu_attention", "name": "attention_llm_d128_s4096_causal",
         "case": "attention/bf16/llm/b1_h32_d128_s4096_causal", "variant": "fused", "seconds": 0.001, "tflop_per_s": 137.4},
        {"program": "torch_baselines", "name": "attention_llm_d128_s4096_causal",
         "case": "attention/bf16/llm/b1_h32_d128_s4096_causal", "variant": "torch_sdpa_flash", "seconds": 0.0004,
         "tflop_per_s": 343.6},
        {"program": "bench_gpu_attention", "name": "attention_decode_d128_q1_kv4096",
         "case": "attention/bf16/decode/b16_h32_d128_q1_kv4096", "variant": "fused", "seconds": 0.0002, "tflop_per_s": 1.3,
         "gb_per_s": 2684.4},
        {"program": "bench_gpu_reduction", "bench": "reduction", "case": "reduction/f16/layer_norm_residual/16384x4096",
         "op": "layer_norm_residual", "variant": "fused", "seconds": 0.0001, "gbps": 3210.9, "roofline_fraction": 0.743},
        {"program": "torch_baselines", "bench": "reduction", "case": "reduction/f16/layer_norm_residual/16384x4096",
         "variant": "torch_eager", "seconds": 0.0002, "gb_per_s": 1605.4},
        {"program": "bench_gpu_elementwise", "name": "chain6_mem", "variant": "fused", "elements": 67108864,
         "seconds": 0.00031, "gb_per_s": 3464.1, "roofline_fraction": 0.80},
        {"program": "torch_baselines", "name": "chain6_mem", "case": "chain6_mem/f32/67108864", "variant": "torch_eager",
         "seconds": 0.0015, "gb_per_s": 715.8},
    ]
    with open(os.path.join(d, "results.jsonl"), "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")
    with open(os.path.join(d, "clocks.csv"), "w") as f:
        f.write("timestamp, pstate, clocks.current.sm [MHz], clocks.current.memory [MHz], clocks.max.sm [MHz], "
                "power.draw [W], temperature.gpu, utilization.gpu [%], clocks_event_reasons.active\n")
        for sm, pw, t in ((345, 80.1, 30), (1980, 650.5, 55), (1755, 700.0, 61)):
            f.write(f"2026/12/01 10:00:0{t % 10}.000, P0, {sm} MHz, 3201 MHz, 1980 MHz, {pw} W, {t}, 99 %, "
                    f"{'0x0000000000000000' if sm > 1800 else '0x0000000000000001'}\n")
    with open(os.path.join(d, "ncu.csv"), "w") as f:
        f.write("# gemm\n")
        f.write('"ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed",'
                '"launch__registers_per_thread"\n')
        f.write('"","","us","%","register/thread"\n')
        f.write('"0","void fusor::exec::fused_gemm<K>(K)","2051.3","61.2","128"\n')
    for n in ("suite.log", "ncu.txt", "summary.md"):
        open(os.path.join(d, n), "w").write("x\n")


def main():
    tmp = tempfile.mkdtemp(prefix="gpu_report_test.")
    try:
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        fake_outdir(out)
        r = run(out)
        check(r.returncode == 0, f"report exit {r.returncode}: {r.stderr}")
        t = r.stdout
        for want in ("GPU run of", "`0123456789ab`", "(with uncommitted changes)", "Result: **FAILED**",
                     "NVIDIA H200: compute capability 9.0, 132 SMs", "4,322 GB/s", "778 TFLOP/s", "785 TFLOP/s",
                     "| bf16/llm/4096x4096x11008 | 184 | – | 738 | – | 615 | error | 0.250 |",
                     "| f16/llm/4096x4096x11008 | not run |",
                     "| bf16/llm/b1_h32_d128_s4096_causal | TFLOP/s | 137 | – | 344 | – | – | 0.400 |",
                     "| bf16/decode/b16_h32_d128_q1_kv4096 | GB/s | 2,684 |",
                     "| f16/layer_norm_residual/16384x4096 | 3,211 | – | 1,605 | – | 0.743 |",
                     "| chain6_mem | fused | 3,464 | 0.800 |", "| chain6_mem | torch_eager | 716 |",
                     "SM clock during the benchmarks: min 345, median 1,755, max 1,980 MHz over 3 samples",
                     "power max 700 W", "temperature max 61.0 C", "clock event reasons seen: 0x0000000000000001",
                     "Result checks: 1 passed, 1 failed", "| gemm | void fusor::exec::fused_gemm<K>(K) | 2051.3 us | 61.2 % |",
                     "| memcheck | FAILED | 20 / 30 | ERROR SUMMARY: 1 error |", "Failed checks:",
                     "linear_bias_gelu/f16/bert/128x768x3072"):
            check(want in t, f"report lacks {want!r}")
        r = run(out, "--summary")
        check(r.returncode == 0 and "| linear+GELU bf16 4096x4096x11008 | fused 184 | cublaslt 738 |" in r.stdout,
              f"--summary: {r.stdout}{r.stderr}")
        check("| attention bf16 LLM prefill | fused 137 | torch_sdpa_flash 344 |" in r.stdout, "--summary attention")
        # --write: only between the markers, idempotent
        docs = os.path.join(tmp, "docs")
        os.mkdir(docs)
        for n in ("status", "benchmarks"):
            open(os.path.join(docs, n + ".md"), "w").write(
                f"# {n}\nbefore\n<!-- gpu-report:{n}:begin -->\nold table\n<!-- gpu-report:{n}:end -->\nafter\n")
        r = run(out, "--write", "--docs", docs)
        check(r.returncode == 0 and r.stdout.count("rewritten") == 2, f"--write: {r.stdout}{r.stderr}")
        s = open(os.path.join(docs, "benchmarks.md")).read()
        check(s.startswith("# benchmarks\nbefore\n<!-- gpu-report:benchmarks:begin -->\n") and s.endswith(
            "<!-- gpu-report:benchmarks:end -->\nafter\n") and "old table" not in s and "### Attention" in s,
            "--write: benchmarks.md not rewritten between its markers")
        st = open(os.path.join(docs, "status.md")).read()
        check("| memcheck | FAILED |" in st and "### Attention" not in st, "--write: status.md section")
        r = run(out, "--write", "--docs", docs)
        check(r.returncode == 0 and r.stdout.count("unchanged") == 2, f"--write twice: {r.stdout}")
        # errors
        open(os.path.join(docs, "status.md"), "w").write("no markers\n")
        r = run(out, "--write", "--docs", docs, "--section", "status")
        check(r.returncode != 0 and "no <!-- gpu-report:status:begin -->" in r.stderr and
              open(os.path.join(docs, "status.md")).read() == "no markers\n", f"missing markers: {r.stderr}")
        r = run(tmp)
        check(r.returncode != 0 and "no suite.json" in r.stderr, f"no suite.json: {r.stderr}")
        # an OUTDIR of a dry run: only suite.json and skipped lines
        dry = os.path.join(tmp, "dry")
        os.mkdir(dry)
        json.dump({"dry_run": True, "deadline_s": 465, "result": "ok", "steps": [], "bundle": {}},
                  open(os.path.join(dry, "suite.json"), "w"))
        open(os.path.join(dry, "results.jsonl"), "w").write(json.dumps({"program": "bench_gpu_attention",
                                                                        "name": "attention", "skipped": "no CUDA device"}) + "\n")
        r = run(dry)
        check(r.returncode == 0 and "Dry run of" in r.stdout and "No clock log" in r.stdout, f"dry OUTDIR: {r.stdout}{r.stderr}")
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        print("FAIL:", f)
    print(f"gpu_report.fake_outdir: {'FAILED' if failures else 'ok'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
