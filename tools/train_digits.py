#!/usr/bin/python3
"""Train the small CNN of examples/fusor_demo.cpp on the digits set and export it.

Needs PyTorch and NumPy; on the project's Debian machines only the system
interpreter has them. From the repository root:

    /usr/bin/python3 tools/train_digits.py            # rewrite examples/data/digits_cnn.safetensors
                                                      # and examples/data/digits_torch_logits.bin
    /usr/bin/python3 tools/train_digits.py --out DIR  # write them somewhere else
    /usr/bin/python3 tools/train_digits.py --check    # retrain into a temporary folder and
                                                      # compare with examples/data (exit 1 if
                                                      # different; bitwise only with the same
                                                      # torch build and CPU)

The demo does not need this script: its outputs are committed.

Data: examples/data/digits.csv.gz (UCI optical digits, scikit-learn's copy):
1,797 rows of 64 pixels (8x8, 0..16) and a label. Fixed split: the first
1,437 rows train, the last 360 test. Inputs are scaled by 1/16, NCHW [N,1,8,8].

Model (PyTorch names = tensor names in the safetensors file):
    conv1  Conv2d(1, 16, 3, padding=1, bias=False) -> bn1 -> ReLU
    dw     Conv2d(16, 16, 3, padding=1, groups=16, bias=False) -> bn2 -> ReLU6
    pw     Conv2d(16, 32, 1, bias=False) -> bn3 -> ReLU
    global average pool over 8x8 -> [N, 32]
    fc1    Linear(32, 64) -> GELU (erf)
    fc2    Linear(64, 10) -> logits (softmax gives probabilities)
BatchNorm2d: eps 1e-5, eval mode (running statistics) for export.

Outputs:
  digits_cnn.safetensors: safetensors written by hand: 8-byte little-endian
    header length, JSON header {name: {"dtype": "F32", "shape": [...],
    "data_offsets": [begin, end]}, "__metadata__": {...}} padded with spaces
    to a multiple of 8 bytes, then the raw little-endian float32 data
    (offsets relative to the end of the header). Every state_dict entry
    except bn*.num_batches_tracked.
  digits_torch_logits.bin: PyTorch's eval-mode results on the 360 test images:
    360 x 10 float32 logits (pre-softmax, row-major, little-endian), then 360
    int32 little-endian predicted classes (argmax of the logits). No header:
    its size is exactly 360 * (10 * 4 + 4) = 15,840 bytes.
"""
import argparse
import filecmp
import gzip
import json
import pathlib
import struct
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:  # plain python3 on PATH has no torch on the dev machines
    sys.exit(f"train_digits.py: needs PyTorch and NumPy ({e}).\n"
             f"Run it with the interpreter that has them: /usr/bin/python3 tools/train_digits.py\n"
             f"(this is {sys.executable})")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "data"
N_TRAIN, N_TEST = 1437, 360
SEED = 0
EPOCHS = 20
BATCH = 32
LR = 1e-2


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.pw = nn.Conv2d(16, 32, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(32)
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.clamp(self.bn2(self.dw(x)), 0.0, 6.0)  # ReLU6
        x = torch.relu(self.bn3(self.pw(x)))
        x = x.mean(dim=(2, 3))
        x = nn.functional.gelu(self.fc1(x))  # erf form (approximate='none')
        return self.fc2(x)


def load_digits(path):
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float32)
    if rows.shape != (N_TRAIN + N_TEST, 65):
        sys.exit(f"train_digits.py: {path}: expected {N_TRAIN + N_TEST} rows of 65 columns, got {rows.shape}")
    x = torch.from_numpy(rows[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(rows[:, 64].astype(np.int64))
    return x, y


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def train_and_export(out_dir):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x, y = load_digits(DATA / "digits.csv.gz")
    x_train, y_train, x_test, y_test = x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(N_TRAIN, generator=gen)
        total = 0.0
        for i in range(0, N_TRAIN, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch + 1:2d}: train loss {total / N_TRAIN:.4f}, test accuracy {acc:.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(x_test).float()
    pred = logits.argmax(1).to(torch.int32)
    acc = (pred.long() == y_test).float().mean().item()
    correct = int((pred.long() == y_test).sum())
    print(f"final test accuracy {acc:.4f} ({correct}/{N_TEST})")

    tensors = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    metadata = {
        "format": "pt",
        "torch_version": torch.__version__,
        "model": "digits_cnn: conv3x3(1->16)+bn+relu, dw3x3(16)+bn+relu6, pw1x1(16->32)+bn+relu, gap, "
                 "linear(32->64)+gelu(erf), linear(64->10)",
        "dataset": "UCI optical digits (scikit-learn digits.csv.gz), train rows 0..1436, test rows 1437..1796, x/16",
        "epochs": str(EPOCHS),
        "seed": str(SEED),
        "test_accuracy": f"{acc:.6f}",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_safetensors(out_dir / "digits_cnn.safetensors", tensors, metadata)
    with open(out_dir / "digits_torch_logits.bin", "wb") as f:
        f.write(logits.numpy().astype("<f4").tobytes())
        f.write(pred.numpy().astype("<i4").tobytes())
    for name in ("digits_cnn.safetensors", "digits_torch_logits.bin"):
        print(f"wrote {out_dir / name} ({(out_dir / name).stat().st_size} bytes)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=DATA, help="output folder (default examples/data)")
    ap.add_argument("--check", action="store_true", help="retrain into a temporary folder and compare with --out")
    args = ap.parse_args()
    if not args.check:
        train_and_export(args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        train_and_export(pathlib.Path(tmp))
        bad = [n for n in ("digits_cnn.safetensors", "digits_torch_logits.bin")
               if not filecmp.cmp(pathlib.Path(tmp) / n, args.out / n, shallow=False)]
    if bad:
        sys.exit(f"train_digits.py --check: differs from {args.out}: {', '.join(bad)}")
    print(f"train_digits.py --check: {args.out} is up to date")


if __name__ == "__main__":
    main()
