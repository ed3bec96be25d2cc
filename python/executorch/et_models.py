"""The models the ExecuTorch tests export, and the export with external
weights, run in the venv of ``python/requirements-executorch.txt``
(executorch 1.5.1 and the torch it was built against)."""

import os
from pathlib import Path

import torch


class Mlp(torch.nn.Module):
    """A float32 MLP."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

    @staticmethod
    def inputs():
        return (torch.randn(4, 16, generator=torch.Generator().manual_seed(1)),)


class Mixed(torch.nn.Module):
    """A bfloat16 weight and an int8 buffer beside a float32 bias."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(2)
        self.w = torch.nn.Parameter(torch.randn(8, 16, generator=g).to(torch.bfloat16))
        self.bias = torch.nn.Parameter(torch.randn(8, generator=g))
        self.register_buffer("codes", torch.randint(-128, 128, (8,), generator=g, dtype=torch.int8))

    def forward(self, x):
        y = (x.to(torch.bfloat16) @ self.w.t()).to(torch.float32)
        return y + self.bias + self.codes.to(torch.float32)

    @staticmethod
    def inputs():
        return (torch.randn(3, 16, generator=torch.Generator().manual_seed(3)),)


class Large(torch.nn.Module):
    """At least ``mib`` MiB of float32 weights, in 16 MiB layers."""

    def __init__(self, mib=256):
        super().__init__()
        g = torch.Generator().manual_seed(4)
        n = (mib + 15) // 16
        self.layers = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(2048, 2048, generator=g) * 0.02) for _ in range(n)]
        )

    def forward(self, x):
        for w in self.layers:
            x = torch.tanh(x @ w)
        return x

    @staticmethod
    def inputs():
        return (torch.randn(2, 2048, generator=torch.Generator().manual_seed(5)),)


def export(model, directory):
    """``model.pte`` and its external weights ``*.ptd`` in ``directory``,
    as ExecuTorch's own flow writes them; returns their paths."""
    from executorch.exir import ExecutorchBackendConfig, to_edge

    model.eval()
    exported = torch.export.export(model, model.inputs())
    program = to_edge(exported).to_executorch(ExecutorchBackendConfig(external_constants=True))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pte = directory / "model.pte"
    with open(pte, "wb") as f:
        program.write_to_file(f)
    before = set(os.listdir(directory))
    program.write_tensor_data_to_file(str(directory))
    ptds = sorted(directory / n for n in set(os.listdir(directory)) - before if n.endswith(".ptd"))
    if not ptds:
        ptds = sorted(directory.glob("*.ptd"))
    assert len(ptds) == 1, ptds
    return pte, ptds[0]


def run(pte, ptd, inputs, method="forward"):
    """The outputs of ``method`` of ``pte`` with weights from ``ptd``,
    through ExecuTorch's Python runtime."""
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(pte), data_path=str(ptd))
    return [t.clone() for t in program.load_method(method).execute(list(inputs))]
