"""What the deployment-runtime tests (test_onnx.py, test_iree.py) share: the
PyTorch model they export, the `hurray` command they run, and where this
process maps a file (to show a runtime reads it in place)."""

import os
import subprocess
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def hurray_cli() -> Path:
    """`target/debug/hurray`, which `cargo xtask test` builds before the Python tests."""
    path = Path(os.environ.get("HURRAY_CLI", ROOT / "target" / "debug" / "hurray"))
    assert path.exists(), f"{path} is not built: run `cargo build -p hurray-cli` first"
    return path


def cli(*args) -> subprocess.CompletedProcess:
    """Runs the `hurray` command with ``args``."""
    return subprocess.run([str(hurray_cli()), *map(str, args)], capture_output=True, text=True)


def mappings_of(path):
    """``(first address, end address, file offset)`` of every mapping of
    ``path`` in this process, from /proc/self/maps."""
    real = str(Path(path).resolve())
    out = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                out.append((lo, hi, int(fields[2], 16)))
    return out


class DeployModel(torch.nn.Module):
    """Conv, linear, embedding and layer-norm weights in f32, and a bf16
    projection the graph casts to f32 (CPU kernels of ONNX Runtime and IREE
    have no bf16 matmul)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 64)
        self.conv = torch.nn.Conv1d(64, 128, 3, padding=1)
        self.ln = torch.nn.LayerNorm(128)
        self.fc = torch.nn.Linear(128, 96)
        self.head = torch.nn.Parameter(torch.randn(96, 32).to(torch.bfloat16))

    def forward(self, ids):
        x = self.emb(ids).transpose(1, 2)
        x = self.conv(x).transpose(1, 2)
        return self.fc(self.ln(x)) @ self.head.float()
