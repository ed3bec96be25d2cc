"""`hurray from-mlir` on IR that JAX writes here and now (the checked-in
fixtures of mlir/tests/fixtures/ pin one JAX version; this runs the one in the
venv): an MLP with closed-over f32 and bf16 weights, a closed-over empty
weight and shape-inferred empty results, printed in the generic op form. The
file is read back with the pure-Python reader and compared bit for bit.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hurray_reader

ROOT = Path(__file__).resolve().parents[2]
try:
    import jax
    import jax.numpy as jnp
    import ml_dtypes
except ImportError:
    # CI installs python/requirements.txt: missing there is a failure.
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("jax is not installed (pip install -r python/requirements.txt)", allow_module_level=True)


def hurray_cli():
    """`target/debug/hurray` with `from-mlir` (built by `cargo test -p
    hurray-cli --features mlir`, which `cargo xtask test` runs first)."""
    path = Path(os.environ.get("HURRAY_CLI", ROOT / "target" / "debug" / "hurray"))
    usable = path.exists() and subprocess.run([str(path), "from-mlir", "--help"], capture_output=True).returncode == 0
    if not usable:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} with from-mlir is missing")
        pytest.skip(f"{path} with from-mlir is not built (cargo build -p hurray-cli --features mlir)")
    return path


def lower(tmp_path, text):
    source = tmp_path / "model.mlir"
    source.write_text(text)
    out = tmp_path / "model.hurray"
    run = subprocess.run([str(hurray_cli()), "from-mlir", str(source), "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    check = subprocess.run([str(hurray_cli()), "validate", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    return hurray_reader.open(out)


def test_jax_mlp_lowers_bit_exactly(tmp_path):
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((3, 4), dtype=np.float32)
    w2 = rng.standard_normal((4, 2), dtype=np.float32).astype(ml_dtypes.bfloat16)
    pruned = np.zeros((3, 0, 5), np.float32)

    def mlp(x):
        y = (jnp.tanh(x @ w1).astype(jnp.bfloat16) @ w2).astype(jnp.float32)
        return y, jnp.zeros((2, 0), jnp.float32), pruned + x.sum()

    lowered = jax.jit(mlp).lower(jnp.ones((2, 3), jnp.float32))
    text = lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    f = lower(tmp_path, text)
    by_name = {t.name: t for t in f}

    # Each weight once, bit-exact, whatever its op index.
    for weight in (w1, w2, pruned):
        dtype = {"float32": "f32", "bfloat16": "bf16"}[weight.dtype.name]
        found = [t for t in f if not t.descriptor_only and t.dtype == dtype and t.shape == weight.shape]
        assert len(found) == 1, [(t.name, t.dtype, t.shape) for t in f]
        assert bytes(found[0].buffer("values")) == weight.tobytes()
        assert found[0].name.startswith("main/")

    # The argument named by its location, results by `jax.result_info`;
    # empty results are descriptor-only tensors with their 0 dimensions.
    assert by_name["main/x"].descriptor_only and by_name["main/x"].shape == (2, 3)
    assert by_name["main/result[1]"].descriptor_only and by_name["main/result[1]"].shape == (2, 0)
    assert by_name["main/result[2]"].shape == (3, 0, 5)
    assert by_name["main/result[0]"].metadata["mlir.role"] == "result"


def test_jax_pretty_form_is_refused_with_the_remedy(tmp_path):
    lowered = jax.jit(lambda x: x * 2).lower(jnp.ones((2,), jnp.float32))
    source = tmp_path / "pretty.mlir"
    source.write_text(lowered.as_text())
    run = subprocess.run([str(hurray_cli()), "from-mlir", str(source), "-o", str(tmp_path / "o.hurray")], capture_output=True, text=True)
    assert run.returncode == 1
    assert "`stablehlo` is not a dialect of MLIR 22" in run.stderr
    assert "print_generic_op_form=True" in run.stderr
    assert "hurray.jax.save_lowered" in run.stderr
    assert not (tmp_path / "o.hurray").exists()


def test_save_lowered_takes_jaxs_own_objects(hurray, tmp_path, monkeypatch):
    """hurray.jax.save_lowered of a jitted MLP's `Lowered` and of its
    `jax.export.Exported` (whose pretty text the CLI refuses) writes every
    closed-over parameter bit for bit, and the signature."""
    import hurray.jax

    monkeypatch.setenv("HURRAY_CLI", str(hurray_cli()))
    rng = np.random.default_rng(5)
    params = {
        "w1": rng.standard_normal((3, 16), dtype=np.float32),
        "b1": rng.standard_normal((16,), dtype=np.float32),
        "w2": rng.standard_normal((16, 4), dtype=np.float32).astype(ml_dtypes.bfloat16),
    }

    def mlp(x):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        return (h.astype(jnp.bfloat16) @ params["w2"]).astype(jnp.float32)

    x = jnp.ones((2, 3), jnp.float32)
    lowered = jax.jit(mlp).lower(x)
    exported = jax.export.export(jax.jit(mlp))(x)
    names = []
    for obj, path in [(lowered, tmp_path / "lowered.hurray"), (exported, tmp_path / "exported.hurray")]:
        hurray.jax.save_lowered(obj, path)
        with hurray.open(path) as f:
            tensors = [f[n] for n in f.keys()]
            data = [t for t in tensors if not t.descriptor_only]
            for name, p in params.items():
                same = [t for t in data if t.tobytes() == p.tobytes() and t.shape == p.shape]
                assert len(same) == 1, (name, [(t.name, t.dtype, t.shape) for t in data])
            inputs = [t for t in tensors if t.name.endswith("main/x")]
            assert len(inputs) == 1 and inputs[0].descriptor_only and inputs[0].shape == (2, 3)
            names.append(sorted(f.keys()))
    assert names[0] == names[1]
    # Without signatures: only the constants.
    hurray.jax.save_lowered(lowered, tmp_path / "bare.hurray", signatures=False)
    with hurray.open(tmp_path / "bare.hurray") as f:
        assert not any(f[n].descriptor_only for n in f.keys())

    with pytest.raises(TypeError, match="Lowered"):
        hurray.jax.save_lowered(mlp, tmp_path / "no.hurray")
    monkeypatch.setenv("HURRAY_CLI", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="--features mlir"):
        hurray.jax.save_lowered(lowered, tmp_path / "no.hurray")
    assert not (tmp_path / "no.hurray").exists()
