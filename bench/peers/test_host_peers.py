#!/usr/bin/env python3
"""Self-test of host_peers.py, runnable with a plain python3 (no numpy,
torch, onnxruntime or jax needed): --help works; the case list has the
expected, unique ids (also with --quick); the byte and FLOP formulas of a
few cases; with every package made unimportable (FUSOR_PEERS_FAKE_MISSING=1)
the script prints one "skipped" line and exits 77; --run-in-venv without a
virtual environment exits 77 too. Exit 0 on success.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "host_peers.py")

EXPECTED_IDS = (
    ["elementwise/chain6", "elementwise/chain6_mem"]
    + [f"rows/{op}/{s}" for op in ("softmax", "log_softmax", "layer_norm", "rms_norm")
       for s in ("8192x1024", "512x32768")]
    + [f"linear_bias_gelu/M{m}_K{k}_N{n}" for m, k, n in
       ((1, 4096, 11008), (16, 4096, 11008), (512, 1024, 4096), (2048, 1024, 4096))]
    + [f"conv3x3_bn_relu/{layout}/{s}" for layout in ("nchw", "nhwc")
       for s in ("N8_C64_H56_W56_K64", "N8_C256_H14_W14_K256")]
    + ["depthwise_pointwise/N8_C144_H56_W56_K24", "se_block/N8_C256_H28_W28"])


def load():
    spec = importlib.util.spec_from_file_location("host_peers", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(args, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, env=e, timeout=120)


class HostPeers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hp = load()

    def test_help(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for opt in ("--setup", "--run-in-venv", "--quick", "--only", "--budget-s", "--max-gib", "--threads"):
            self.assertIn(opt, r.stdout)

    def test_case_ids(self):
        for quick in (False, True):
            ids = [c.id for c in self.hp.case_table(quick)]
            self.assertEqual(ids, EXPECTED_IDS)
            self.assertEqual(len(set(ids)), len(ids))

    def test_quick_is_smaller(self):
        full = {c.id: c for c in self.hp.case_table(False)}
        for c in self.hp.case_table(True):
            self.assertLess(c.io_bytes() * 8, full[c.id].io_bytes(), c.id)

    def test_bytes_and_flops(self):
        cases = {c.id: c for c in self.hp.case_table(False)}
        # elementwise: x, b, c read + y written, 4 bytes each
        self.assertEqual(cases["elementwise/chain6"].bytes(), 16 * 2 ** 25)
        # layer_norm: x read + y written (R C each) + gamma, beta (C each)
        self.assertEqual(cases["rows/layer_norm/8192x1024"].bytes(), 4 * (2 * 8192 * 1024 + 2 * 1024))
        self.assertEqual(cases["rows/rms_norm/512x32768"].bytes(), 4 * (2 * 512 * 32768 + 32768))
        self.assertEqual(cases["rows/softmax/512x32768"].bytes(), 8 * 512 * 32768)
        lin = cases["linear_bias_gelu/M16_K4096_N11008"]
        self.assertEqual(lin.flops, 2 * 16 * 4096 * 11008)
        self.assertIsNone(lin.bytes())
        conv = cases["conv3x3_bn_relu/nhwc/N8_C256_H14_W14_K256"]
        self.assertEqual(conv.flops, 2 * 8 * 14 * 14 * 256 * 256 * 9)
        dw = cases["depthwise_pointwise/N8_C144_H56_W56_K24"]
        self.assertEqual(dw.flops, 2 * 8 * 56 * 56 * 144 * 9 + 2 * 8 * 56 * 56 * 24 * 144)
        # every full-size case fits the default --max-gib 8
        self.assertTrue(all(c.io_bytes() < 8 * 2 ** 30 for c in cases.values()))

    def test_list(self):
        r = run(["--list", "--quick"])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [json.loads(s) for s in r.stdout.splitlines()]
        self.assertEqual([x["case"] for x in lines], EXPECTED_IDS)
        self.assertEqual(lines[0]["shape"], {"elements": 2 ** 20})

    def test_nothing_importable_exits_77(self):
        r = run(["--quick", "--only", "rows/softmax"], FUSOR_PEERS_FAKE_MISSING="1")
        self.assertEqual(r.returncode, 77, r.stdout + r.stderr)
        lines = [json.loads(s) for s in r.stdout.splitlines()]
        self.assertEqual(len(lines), 1, r.stdout)
        self.assertEqual(lines[0]["program"], "host_peers")
        self.assertIn("skipped", lines[0])

    def test_run_in_venv_without_venv_exits_77(self):
        with tempfile.TemporaryDirectory() as d:
            r = run(["--run-in-venv", "--venv", os.path.join(d, "none"), "--quick"])
        self.assertEqual(r.returncode, 77, r.stdout + r.stderr)
        self.assertIn("skipped", json.loads(r.stdout.splitlines()[-1]))

    def test_bad_arguments(self):
        self.assertNotEqual(run(["--repeats", "0"]).returncode, 0)
        self.assertNotEqual(run(["--variants", "tensorflow"]).returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
