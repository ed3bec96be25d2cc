"""No input makes the Python reader fail with anything but HurrayError.

Every valid vector is corrupted many times (seeded, so failures reproduce):
single bytes of the header and footer flipped, 32-bit words overwritten with
extreme values, the file truncated. Each result must either be rejected with
a HurrayError or open, and then every accessor must work or raise HurrayError.
"""

import json
import random
from pathlib import Path

import numpy as np
import pytest

import hurray_reader
from hurray_reader import HurrayError

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
VALID = [v["name"] for v in json.loads((VECTORS / "index.json").read_text())["vectors"] if v["valid"]]
ROUNDS = int(__import__("os").environ.get("HURRAY_FUZZ_ROUNDS", "200"))
EXTREMES = [0, 1, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF8, 64]


def exercise(data: bytes):
    try:
        f = hurray_reader.from_bytes(data)
    except HurrayError:
        return "rejected"
    for t in f:
        for action in (
            lambda: t.numpy(),
            lambda: t.numpy(raw=True),
            lambda: t.sparse(),
            lambda: t.dequantize(),
            lambda: [bytes(t.buffer(r)) for r in t.buffer_roles()],
            lambda: (t.quantization, t.sparse_params, t.metadata, t.shape),
        ):
            try:
                action()
            except HurrayError:
                pass
    try:
        f.validate()
    except HurrayError:
        pass
    return "accepted"


@pytest.mark.parametrize("name", VALID)
def test_corrupted_vectors_fail_cleanly(name):
    original = (VECTORS / f"{name}.hurray").read_bytes()
    footer = len(original) - 32
    header = int.from_bytes(original[footer : footer + 8], "little")
    rng = random.Random(name)
    outcomes = {"rejected": 0, "accepted": 0}
    for _ in range(ROUNDS):
        b = bytearray(original)
        kind = rng.randrange(4)
        if kind == 0:
            i = rng.randrange(header, len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            i = rng.randrange(header, len(b) - 4) & ~3
            b[i : i + 4] = rng.choice(EXTREMES).to_bytes(4, "little")
        elif kind == 2:
            i = rng.randrange(header, len(b) - 8) & ~7
            b[i : i + 8] = rng.choice([2**64 - 1, 2**63, 2**32, 4096, 0]).to_bytes(8, "little")
        else:
            b = b[: rng.randrange(len(b))]
        try:
            outcomes[exercise(bytes(b))] += 1
        except HurrayError:
            raise
        except Exception as e:  # noqa: BLE001 - that is the point of the test
            pytest.fail(f"{name}: corruption kind {kind} raised {type(e).__name__}: {e}")
    assert outcomes["rejected"] > 0


def test_arrays_view_the_mapping_without_copy():
    f = hurray_reader.open(VECTORS / "layout_dense.hurray")
    a = f["a"].numpy()
    assert a.dtype == np.float32 and not a.flags.writeable
    assert np.shares_memory(a, np.frombuffer(f.data, np.uint8))


def cli():
    """The reference implementation's `hurray validate` (built by cargo), if present."""
    import os

    path = Path(os.environ.get("HURRAY_CLI", VECTORS.parents[1] / "target" / "debug" / "hurray"))
    return path if path.exists() else None


@pytest.mark.parametrize("name", VALID)
def test_same_verdict_as_the_rust_reader(name, tmp_path):
    """Differential test: on corrupted files, the Python reader (open +
    validate) accepts exactly what `hurray validate` accepts."""
    import subprocess

    exe = cli()
    if exe is None:
        pytest.skip("target/debug/hurray not built (cargo build -p hurray-cli) and HURRAY_CLI unset")
    original = (VECTORS / f"{name}.hurray").read_bytes()
    footer = len(original) - 32
    header = int.from_bytes(original[footer : footer + 8], "little")
    rng = random.Random("differential " + name)
    paths = []
    for k in range(ROUNDS // 2):
        b = bytearray(original)
        if k % 3 == 0:
            # Anywhere after the prefix: data (sparse indices) included.
            i = rng.randrange(64, len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif k % 3 == 1:
            i = rng.randrange(header, len(b) - 4) & ~3
            b[i : i + 4] = rng.choice(EXTREMES).to_bytes(4, "little")
        else:
            i = rng.randrange(header, len(b) - 8) & ~7
            b[i : i + 8] = rng.choice([2**64 - 1, 2**63, 2**32, 4096, 64, 0]).to_bytes(8, "little")
        p = tmp_path / f"m{k}.hurray"
        p.write_bytes(bytes(b))
        paths.append(p)
    out = subprocess.run([str(exe), "validate", *map(str, paths)], capture_output=True, text=True).stdout
    rust_ok = {line.split(": ", 1)[0] for line in out.splitlines() if line.endswith(": ok")}
    disagreements = []
    for p in paths:
        try:
            hurray_reader.from_bytes(p.read_bytes()).validate()
            py = None
        except HurrayError as e:
            py = e
        if (py is None) != (str(p) in rust_ok):
            rust = [line for line in out.splitlines() if line.startswith(f"{p}: ")]
            disagreements.append(f"{p.name}: python {py or 'ok'}; rust {rust}")
    assert not disagreements, "\n".join(disagreements)
