#!/usr/bin/env python3
"""Turns the OUTDIR of bench/gpu_suite.sh into markdown: the GPU tables of
docs/status.md and docs/benchmarks.md.

  tools/gpu_report.py OUTDIR                 print both sections
  tools/gpu_report.py OUTDIR --section status|benchmarks
  tools/gpu_report.py OUTDIR --write [--docs DIR]
        rewrite, in place, the marked section of DIR/status.md and
        DIR/benchmarks.md (default: this repository's docs/), between
        <!-- gpu-report:status:begin --> and <!-- gpu-report:status:end -->
        (benchmarks: gpu-report:benchmarks:...); a file without its markers
        is an error and is left unchanged
  tools/gpu_report.py OUTDIR --summary       the short table gpu_suite.sh
                                             prints (summary.md)

Reads suite.json, results.jsonl, clocks.csv and ncu.csv (what exists).
Python 3 standard library only. Exit status: 0, or 1 for a missing or
unreadable OUTDIR or missing markers.
"""
import argparse
import csv
import io
import json
import os
import statistics
import sys

MARK = "<!-- gpu-report:{}:{} -->"


def load(outdir):
    if not os.path.isfile(os.path.join(outdir, "suite.json")):
        raise SystemExit(f"gpu_report: {outdir}: no suite.json (not an OUTDIR of bench/gpu_suite.sh)")
    with open(os.path.join(outdir, "suite.json")) as f:
        suite = json.load(f)
    results = []
    p = os.path.join(outdir, "results.jsonl")
    if os.path.isfile(p):
        for line in open(p, errors="replace"):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict):
                results.append(o)
    return suite, results, read_clocks(outdir), read_ncu(outdir)


def read_clocks(outdir):
    """nvidia-smi's CSV: header 'timestamp, clocks.current.sm [MHz], ...'."""
    p = os.path.join(outdir, "clocks.csv")
    if not os.path.isfile(p):
        return None
    rows = list(csv.reader(open(p, errors="replace"), skipinitialspace=True))
    if len(rows) < 2:
        return None
    head = [h.strip() for h in rows[0]]
    cols = {}
    for r in rows[1:]:
        if len(r) != len(head):
            continue
        for h, v in zip(head, r):
            cols.setdefault(h, []).append(v.strip())
    return cols


def read_ncu(outdir):
    """ncu.csv: blocks of '# family' then ncu's raw CSV (names, units, values)."""
    p = os.path.join(outdir, "ncu.csv")
    if not os.path.isfile(p):
        return {}
    blocks, fam, buf = {}, None, []
    for line in open(p, errors="replace"):
        if line.startswith("# "):
            if fam and buf:
                blocks[fam] = buf
            fam, buf = line[2:].strip(), []
        elif fam is not None:
            buf.append(line)
    if fam and buf:
        blocks[fam] = buf
    out = {}
    for fam, lines in blocks.items():
        rows = [r for r in csv.reader(io.StringIO("".join(l for l in lines if l.startswith('"'))))]
        if len(rows) >= 3:
            out[fam] = dict(zip(rows[0], rows[2]))
            out[fam]["_units"] = dict(zip(rows[0], rows[1]))
    return out


def num(x, digits=3):
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        if x == 0:
            return "0"
        a = abs(x)
        if a >= 1000:
            return f"{x:,.0f}"
        if a >= 100:
            return f"{x:.0f}"
        if a >= 10:
            return f"{x:.1f}"
        return f"{x:.{digits - 1}f}" if a >= 1 else f"{x:.{digits}f}"
    return str(x)


def cuda_version(v):
    """cudaDriverGetVersion's 13000 as 13.0."""
    return f"{v // 1000}.{v % 1000 // 10}" if isinstance(v, int) and v > 0 else str(v)


def table(head, rows):
    if not rows:
        return ""
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def index(results):
    """{(case, variant): line} for timed lines, and the other line kinds."""
    timed, checks, summaries, other = {}, [], [], []
    for o in results:
        if "pass" in o:
            checks.append(o)
        elif o.get("summary"):
            summaries.append(o)
        elif "variant" in o:
            key = o.get("case") or f"{o.get('name')}/f32/{o.get('elements', '')}"
            if o.get("program") == "bench_gpu_elementwise":
                key = f"{o.get('name')}/f32/{o.get('elements')}"  # its lines have no case id
            timed[(key, o["variant"])] = o
        elif "not_run" in o and "case" in o:
            timed[(o["case"], "fused")] = o  # a case a benchmark's --budget-s left out: shown as "not run"
        else:
            other.append(o)
    return timed, checks, summaries, other


def first(results, program=None, name=None, **match):
    for o in results:
        if program and o.get("program") != program:
            continue
        if name and o.get("name") != name:
            continue
        if all(o.get(k) == v for k, v in match.items()):
            return o
    return None


def cell(line, key):
    """A timing cell: the value, or why there is none."""
    if line is None:
        return "–"
    if "error" in line:
        return "error"
    if "not_run" in line:
        return "not run"
    if "skipped" in line:
        return "skipped"
    return num(line.get(key))


def ceilings(results):
    dev = first(results, name="device", program="bench_gpu_ceilings")
    cp = first(results, name="d2d_copy")
    lines = []
    if dev:
        lines.append(f"{dev.get('device')}: compute capability {dev.get('compute_capability')}, {dev.get('sm_count')} SMs, "
                     f"SM clock up to {num(dev.get('sm_clock_max_mhz'))} MHz, memory clock {num(dev.get('memory_clock_max_mhz'))} MHz "
                     f"x {dev.get('memory_bus_bits')} bits, L2 {num((dev.get('l2_bytes') or 0) / 2**20)} MiB, "
                     f"{num((dev.get('memory_total_bytes') or 0) / 2**30)} GiB, CUDA driver API {cuda_version(dev.get('driver_version'))}, "
                     f"runtime {cuda_version(dev.get('runtime_version'))}, ECC {num(dev.get('ecc'))}.")
    rows = []
    if cp:
        rows.append(["device-to-device copy (cudaMemcpyAsync, read + write)", cell(cp, "gb_per_s") + " GB/s",
                     num(cp.get("nominal_fraction")) + " of nominal" if cp.get("nominal_fraction") else "–"])
    for o in results:
        if o.get("name") == "gemm_peak" and "variant" not in o:
            rows.append([f"{o.get('precision')} GEMM {o['shape']['m']}^3, cuBLASLt, random data", cell(o, "tflop_per_s") + " TFLOP/s",
                         num(o.get("datasheet_fraction")) + " of the FP16 datasheet peak" if o.get("datasheet_fraction") else "–"])
        elif o.get("name") == "gemm_peak" and o.get("variant") == "torch_matmul":
            rows.append([f"{o.get('precision')} GEMM {o['shape']['m']}^3, torch.matmul", cell(o, "tflop_per_s") + " TFLOP/s", "–"])
    return "\n".join(lines) + ("\n\n" if lines else "") + table(["ceiling", "measured", "fraction"], rows)


def clocks_text(clocks):
    if not clocks:
        return "No clock log (nvidia-smi absent or not queried).\n"
    out = []
    for key in clocks:
        if key.startswith("clocks.current.sm") or key.startswith("clocks.sm"):
            v = [float(x.split()[0]) for x in clocks[key] if x and x.split()[0].replace(".", "").isdigit()]
            if v:
                out.append(f"SM clock during the benchmarks: min {num(min(v))}, median {num(statistics.median(v))}, "
                           f"max {num(max(v))} MHz over {len(v)} samples")
        if key.startswith("power.draw"):
            v = [float(x.split()[0]) for x in clocks[key] if x and x.split()[0].replace(".", "").isdigit()]
            if v:
                out.append(f"power max {num(max(v))} W")
        if key.startswith("temperature.gpu"):
            v = [float(x) for x in clocks[key] if x.replace(".", "").isdigit()]
            if v:
                out.append(f"temperature max {num(max(v))} C")
        if "reasons" in key:
            seen = sorted(set(clocks[key]) - {"0x0000000000000000"})
            if seen:
                out.append(f"clock event reasons seen: {', '.join(seen)}")
    return ("; ".join(out) + ".\n") if out else "Clock log present but unreadable.\n"


def steps_table(suite, width=None):
    rows = []
    for s in suite.get("steps", []):
        d = s.get("detail", "")
        if width and len(d) > width:
            d = d[: width - 1] + "…"
        rows.append([s["step"], s["status"], f"{s['seconds']} / {s['limit_s']}", d])
    return table(["step", "status", "seconds / limit", "detail"], rows)


def header(suite):
    b = suite.get("bundle", {})
    total = sum(s.get("seconds", 0) for s in suite.get("steps", []))
    starts = [s["start_unix"] for s in suite.get("steps", []) if "start_unix" in s]
    import datetime
    when = datetime.datetime.fromtimestamp(min(starts), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if starts else "?"
    return (f"{'Dry run' if suite.get('dry_run') else 'GPU run'} of {when} on {suite.get('host', '?')}: bundle of commit "
            f"`{(b.get('commit') or '?')[:12]}`{' (with uncommitted changes)' if b.get('uncommitted_changes') else ''}, "
            f"{b.get('nvcc') or '?'}, CUDA architectures {b.get('cuda_architectures')}, CUDA runtime {b.get('cuda_runtime')}; "
            f"{total} s of steps (deadline {suite.get('deadline_s')} s). Result: **{suite.get('result')}**.\n")


def section_status(suite, results, clocks, ncu):
    out = ["\n".join(p for p in (header(suite), ceilings(results), steps_table(suite, 160)) if p)]
    fails = [c for c in results if c.get("pass") is False]
    if fails:
        out.append("\nFailed checks:\n\n")
        out += [f"- {c.get('program')}: {c.get('case') or c.get('name') or c.get('op')}: {json.dumps(c)[:300]}\n" for c in fails]
    return "".join(out)


def section_benchmarks(suite, results, clocks, ncu):
    timed, checks, summaries, other = index(results)
    out = [header(suite), "\n### Ceilings\n\n", ceilings(results), "\n", clocks_text(clocks)]
    passed = sum(1 for c in checks if c.get("pass") is True)
    out.append(f"\nResult checks: {passed} passed, {len(checks) - passed} failed (each program checks its results before timing).\n")

    # elementwise
    rows = []
    for (case, variant), o in sorted(timed.items()):
        if o.get("program") == "bench_gpu_elementwise" or (
                o.get("program") == "torch_baselines" and o.get("name") in ("chain6", "chain6_mem")):
            rows.append([o.get("name"), variant, cell(o, "gb_per_s"), num(o.get("roofline_fraction")),
                         num(o["seconds"] * 1e3) if "seconds" in o else "–"])
    if rows:
        out += ["\n### Elementwise chains (f32, GB/s with 16 B per element; fraction of the measured copy)\n\n",
                table(["chain", "variant", "GB/s", "fraction of copy", "ms"], rows)]

    # contraction: linear
    cases = sorted({c for (c, _) in timed if c.startswith("linear_bias_gelu/")}, key=case_order)
    rows = []
    for c in cases:
        g = {v: timed.get((c, v)) for v in ("fused", "unfused", "cublaslt", "cublaslt_then_gelu", "torch_eager", "torch_compile")}
        f, l = g["fused"], g["cublaslt"]
        ratio = num(l["seconds"] / f["seconds"]) if f and l and "seconds" in f and "seconds" in l else "–"
        rows.append([c.split("/", 1)[1]] + [cell(g[v], "tflop_per_s") for v in g] + [ratio])
    if rows:
        out += ["\n### linear + bias + GELU (TFLOP/s; last column: cuBLASLt time / fused time, above 1: fused faster)\n\n",
                table(["dtype/suite/MxKxN", "fused", "unfused", "cuBLASLt GELU_BIAS", "cuBLASLt + GELU kernel",
                       "torch eager", "torch.compile", "cuBLASLt / fused"], rows)]
    cases = sorted({c for (c, _) in timed if c.startswith("conv_bias_relu/")}, key=case_order)
    rows = []
    for c in cases:
        g = {v: timed.get((c, v)) for v in ("fused_nhwc", "fused_nchw", "unfused_nhwc", "cudnn_nhwc", "torch_eager", "torch_compile")}
        rows.append([c.split("/", 1)[1]] + [cell(g[v], "tflop_per_s") for v in g])
    if rows:
        out += ["\n### conv 3x3 + bias + ReLU, 64 -> 64 channels, 56 x 56 (TFLOP/s)\n\n",
                table(["dtype/NxCxHxW", "fused NHWC", "fused NCHW", "unfused", "cuDNN fused", "torch eager", "torch.compile"], rows)]

    # attention
    cases = sorted({c for (c, _) in timed if c.startswith("attention/")}, key=case_order)
    rows = []
    for c in cases:
        g = {v: timed.get((c, v)) for v in ("fused", "unfused", "torch_sdpa_flash", "torch_sdpa_cudnn", "torch_sdpa_efficient")}
        decode = "/decode/" in c
        key = "gb_per_s" if decode else "tflop_per_s"
        f, fl = g["fused"], g["torch_sdpa_flash"]
        ratio = num(fl["seconds"] / f["seconds"]) if f and fl and "seconds" in f and "seconds" in fl else "–"
        rows.append([c.split("/", 1)[1], "GB/s" if decode else "TFLOP/s"] + [cell(g[v], key) for v in g] + [ratio])
    if rows:
        out += ["\n### Attention (forward; TFLOP/s, decode cases in GB/s; last column: flash time / fused time)\n\n",
                table(["dtype/suite/case", "unit", "fused", "unfused", "SDPA flash", "SDPA cuDNN", "SDPA efficient",
                       "flash / fused"], rows)]

    # reductions
    cases = sorted({c for (c, _) in timed if c.startswith("reduction/")}, key=case_order)
    rows = []
    for c in cases:
        g = {v: timed.get((c, v)) for v in ("fused", "unfused", "torch_eager", "torch_compile")}
        f = g["fused"]
        rows.append([c.split("/", 1)[1]] + [cell(g[v], "gbps" if v in ("fused", "unfused") else "gb_per_s") for v in g] +
                    [num(f.get("roofline_fraction")) if f else "–"])
    if rows:
        out += ["\n### Reductions (GB/s under the byte model of bench/reduction_cases.hpp; fraction: fused of the measured copy)\n\n",
                table(["dtype/op/RxC", "fused", "unfused", "torch eager", "torch.compile", "fused fraction of copy"], rows)]

    # ncu
    if ncu:
        rows = []
        for fam, m in ncu.items():
            def g(*names):
                for n in names:
                    if n in m and m[n] not in ("", "n/a"):
                        u = m["_units"].get(n, "")
                        return f"{m[n]} {u}".strip()
                return "–"
            rows.append([fam, (m.get("Kernel Name") or "–")[:60], g("gpu__time_duration.sum"),
                         g("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                         g("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
                         g("dram__bytes.sum.per_second"), g("sm__warps_active.avg.pct_of_peak_sustained_active"),
                         g("launch__registers_per_thread"), g("launch__grid_size"), g("launch__block_size")])
        out += ["\n### Nsight Compute (one kernel per family, --clock-control none)\n\n",
                table(["family", "kernel", "duration", "SM throughput", "memory throughput", "DRAM", "achieved occupancy",
                       "registers", "grid", "block"], rows)]
    out += ["\n### Steps\n\n", steps_table(suite, 200)]
    return "".join(out)


def case_order(c):
    """Sort case ids by their text, numbers compared as numbers."""
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", c)]


def summary(suite, results):
    out = [header(suite), "\n", steps_table(suite, 110)]
    timed, checks, _, _ = index(results)
    heads = []
    dev = first(results, name="device", program="bench_gpu_ceilings")
    cp = first(results, name="d2d_copy")
    gb = first(results, name="gemm_peak", program="bench_gpu_ceilings", precision="bf16")
    if dev:
        heads.append(["device", f"{dev.get('device')}, {dev.get('sm_count')} SMs", ""])
    if cp:
        heads.append(["copy bandwidth", cell(cp, "gb_per_s") + " GB/s", ""])
    if gb:
        heads.append(["bf16 GEMM (cuBLASLt)", cell(gb, "tflop_per_s") + " TFLOP/s", ""])
    for label, case, fused, peer, key in (
            ("linear+GELU bf16 4096x4096x11008", "linear_bias_gelu/bf16/llm/4096x4096x11008", "fused", "cublaslt", "tflop_per_s"),
            ("attention bf16 LLM prefill", "attention/bf16/llm/b1_h32_d128_s4096_causal", "fused", "torch_sdpa_flash", "tflop_per_s"),
            ("attention bf16 decode 4096 keys", "attention/bf16/decode/b16_h32_d128_q1_kv4096", "fused", "torch_sdpa_flash", "gb_per_s"),
            ("layer_norm+residual f16 16384x4096", "reduction/f16/layer_norm_residual/16384x4096", "fused", "torch_eager", None)):
        f, p = timed.get((case, fused)), timed.get((case, peer))
        if f or p:
            k = key or "gbps"
            heads.append([label, f"fused {cell(f, k)}", f"{peer} {cell(p, key or 'gb_per_s')}"])
    passed = sum(1 for c in checks if c.get("pass") is True)
    if checks:
        heads.append(["result checks", f"{passed} passed", f"{len(checks) - passed} failed"])
    if heads:
        out += ["\n", table(["headline", "fusor / measured", "baseline"], heads)]
    return "".join(out)


def rewrite(path, name, body):
    begin, end = MARK.format(name, "begin"), MARK.format(name, "end")
    text = open(path).read()
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"gpu_report: {path}: no {begin} ... {end} section; left unchanged")
    new = text[: i + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[j:]
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return new != text


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--section", choices=("status", "benchmarks"), help="print only this section")
    ap.add_argument("--write", action="store_true", help="rewrite the marked sections of the docs in place")
    ap.add_argument("--docs", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs"),
                    help="the docs folder for --write (default: this repository's docs/)")
    ap.add_argument("--summary", action="store_true", help="the short table of summary.md")
    a = ap.parse_args(argv)
    suite, results, clocks, ncu = load(a.outdir)
    if a.summary:
        sys.stdout.write(summary(suite, results))
        return 0
    sections = {"status": section_status(suite, results, clocks, ncu),
                "benchmarks": section_benchmarks(suite, results, clocks, ncu)}
    if a.write:
        for name, fname in (("status", "status.md"), ("benchmarks", "benchmarks.md")):
            if a.section and a.section != name:
                continue
            changed = rewrite(os.path.join(a.docs, fname), name, sections[name])
            print(f"gpu_report: {os.path.join(a.docs, fname)}: {'rewritten' if changed else 'unchanged'}")
        return 0
    for name in ("status", "benchmarks"):
        if not a.section or a.section == name:
            sys.stdout.write(f"<!-- {name} -->\n" if not a.section else "")
            sys.stdout.write(sections[name] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
