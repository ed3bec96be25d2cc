"""The first hour of a safetensors, GGUF or MLIR user: the habits they bring
work on the files Hurray writes, or the refusal names the way that does.

- a GGUF model converted to Hurray loads with ``load_file(..., dequantize=True)``
  in every framework module, and without it the refusal names the remedies;
- ``Tensor.dequantize()`` is an array of the tensor's shape and float32 type
  through the buffer protocol, with no NumPy needed to see it so;
- safetensors' loop ``for k in f.keys(): f.get_tensor(k)`` runs over a file
  lowered from MLIR, whose function arguments and results are
  descriptor-only;
- ``hurray sign`` of a file saved without digests names the command that
  adds them, and that command works.

The viewer's first screen is tested in test_view.py."""

import json
import subprocess

import numpy as np
import pytest

import gguf
from gguf import GGMLQuantizationType as T

from deploy import ROOT, cli
from test_sign import keys

VECTORS = ROOT / "tests" / "vectors"
FRAMEWORKS = ("numpy", "torch", "jax", "flax")


def as_numpy(x):
    """A framework's array as NumPy (torch and JAX arrays included)."""
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else np.asarray(x)


@pytest.fixture(scope="module")
def gguf_model(tmp_path_factory):
    """A GGUF file as llama.cpp's tools write it: Q8_0 and Q4_0 weights
    quantized by gguf's own quantizer (Q8_0) or stored as raw blocks
    (Q4_0), and an f32 norm; converted with ``hurray convert``. Returns the
    Hurray path and each tensor's expected float32 values."""
    tmp = tmp_path_factory.mktemp("gguf")
    rng = np.random.default_rng(50)
    src = tmp / "model.gguf"
    w = gguf.GGUFWriter(str(src), arch="llama")
    want = {}
    q8 = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), T.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q8, raw_dtype=T.Q8_0)
    want["blk.0.attn_q.weight"] = gguf.quants.dequantize(q8, T.Q8_0)
    block, size = gguf.constants.GGML_QUANT_SIZES[T.Q4_0]
    q4 = rng.integers(0, 256, size=(3, 2 * size), dtype=np.uint8)
    # Finite scales: a random f16 scale may be NaN, which compares unequal.
    q4.view(np.uint8).reshape(3, 2, size)[:, :, :2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    w.add_tensor("blk.0.ffn_up.weight", q4, raw_dtype=T.Q4_0)
    want["blk.0.ffn_up.weight"] = gguf.quants.dequantize(q4, T.Q4_0)
    norm = rng.standard_normal(64).astype(np.float32)
    w.add_tensor("output_norm.weight", norm)
    want["output_norm.weight"] = norm
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = tmp / "m.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    assert want["blk.0.ffn_up.weight"].shape == (3, 2 * block)
    return out, want


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_load_file_of_a_converted_gguf_refuses_naming_dequantize_and_gives_float32_with_it(
    hurray, gguf_model, framework
):
    import importlib

    path, want = gguf_model
    module = importlib.import_module(f"hurray.{framework}")
    with pytest.raises(hurray.HurrayError) as refused:
        module.load_file(path)
    message = str(refused.value)
    assert "dequantize=True" in message and "get_dequantized" in message, message
    got = module.load_file(path, dequantize=True)
    assert sorted(got) == sorted(want)
    for name, values in want.items():
        array = as_numpy(got[name])
        assert array.dtype == np.float32 and array.shape == values.shape, (name, array.dtype, array.shape)
        assert np.array_equal(array.view(np.uint32), values.view(np.uint32)), name
    # `load` of the file's bytes takes the same option.
    held = module.load(path.read_bytes(), dequantize=True)
    assert np.array_equal(as_numpy(held["blk.0.attn_q.weight"]), want["blk.0.attn_q.weight"])


def test_safe_open_with_dequantize_runs_the_safetensors_loop_over_a_converted_gguf(hurray, gguf_model):
    path, want = gguf_model
    with hurray.safe_open(path, framework="np") as f:
        with pytest.raises(hurray.HurrayError, match="get_dequantized"):
            f.get_tensor("blk.0.attn_q.weight")
    with hurray.safe_open(path, framework="pt", dequantize=True) as f:
        for k in f.keys():
            t = f.get_tensor(k)
            assert np.array_equal(t.numpy(), want[k]), k


def test_dequantize_is_a_float32_array_of_the_tensors_shape_through_the_buffer_protocol(hurray, gguf_model):
    path, want = gguf_model
    t = hurray.open(path)["blk.0.ffn_up.weight"]
    values = t.dequantize()
    # No NumPy needed: a memoryview sees the type and the shape.
    view = memoryview(values)
    assert view.format == "f" and view.itemsize == 4 and view.shape == t.shape, (view.format, view.shape)
    assert view.tolist() == want["blk.0.ffn_up.weight"].tolist()
    # A consumer asking for plain bytes (PyBUF_SIMPLE) gets the values' bytes.
    assert bytes(values) == values.tobytes() == want["blk.0.ffn_up.weight"].tobytes()
    array = np.asarray(values)
    assert array.dtype == np.float32 and array.shape == t.shape
    assert np.array_equal(array, want["blk.0.ffn_up.weight"])
    # Writable, as NumPy's arrays are; the values are this object's own copy.
    array[0, 0] = 7.0
    assert np.asarray(values)[0, 0] == 7.0 and np.asarray(t.dequantize())[0, 0] != 7.0


def test_dequantize_keeps_empty_shapes_which_memoryview_cast_cannot(hurray):
    """ADR-007: an empty quantized tensor's values are an empty array of its shape."""
    f = hurray.open(VECTORS / "quant_empty.hurray")
    expected = {t["name"]: t["shape"] for t in json.loads((VECTORS / "quant_empty.json").read_text())["tensors"]}
    for name, shape in expected.items():
        values = f[name].dequantize()
        assert memoryview(values).shape == tuple(shape), name
        assert np.asarray(values).shape == tuple(shape) and np.asarray(values).dtype == np.float32


def test_a_tensor_that_is_not_quantized_does_not_dequantize(hurray, gguf_model):
    path, _ = gguf_model
    with pytest.raises(hurray.HurrayError):
        hurray.open(path)["output_norm.weight"].dequantize()
    with hurray.safe_open(path, framework="np") as f, pytest.raises(ValueError, match="get_tensor"):
        f.get_dequantized("output_norm.weight")


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    """examples/mlp.mlir lowered by ``hurray from-mlir``: weights, a
    quantized layer, an empty slice, and the function's argument and result
    as descriptor-only tensors."""
    from test_producers import hurray_cli

    out = tmp_path_factory.mktemp("mlir") / "mlp.hurray"
    run = subprocess.run(
        [str(hurray_cli()), "from-mlir", str(ROOT / "examples" / "mlp.mlir"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return out


@pytest.mark.parametrize("framework", ["np", "pt", "jax"])
def test_the_safetensors_loop_runs_over_a_file_lowered_from_mlir(hurray, lowered, framework):
    with hurray.safe_open(lowered, framework=framework, dequantize=True) as f:
        keys = f.keys()
        got = {k: f.get_tensor(k) for k in keys}
        assert f.descriptor_only_keys() == ["input", "output"]
    assert keys == ["fc1.bias", "fc1.weight", "fc2.pruned", "fc2.weight"]
    assert tuple(got["fc2.pruned"].shape) == (0, 16)
    assert tuple(got["fc2.weight"].shape) == (16, 4)
    # The descriptors are still there to read, dynamic dimensions as None.
    raw = hurray.open(lowered)
    assert raw["input"].descriptor_only and raw["input"].shape == (None, 8)
    with hurray.safe_open(lowered, framework="np") as f, pytest.raises(hurray.HurrayError, match="descriptor-only"):
        f.get_tensor("input")


def test_load_file_leaves_descriptor_only_tensors_out(hurray, lowered):
    import hurray.numpy

    got = hurray.numpy.load_file(lowered, dequantize=True)
    assert sorted(got) == ["fc1.bias", "fc1.weight", "fc2.pruned", "fc2.weight"]
    inspect = json.loads(cli("inspect", "--json", lowered).stdout)
    shown = {t["name"]: t for t in inspect["tensors"]}
    assert shown["input"]["descriptor_only"] and shown["output"]["descriptor_only"], shown["input"]


def test_sign_without_digests_names_the_command_that_adds_them_and_it_works(hurray, tmp_path):
    import hurray.numpy

    path = tmp_path / "m.hurray"
    arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(3, np.int8)}
    hurray.numpy.save_file(arrays, path, metadata={"step": "3"})
    private, public = keys(tmp_path)
    before = path.read_bytes()
    refused = cli("sign", path, "--key", private)
    assert refused.returncode != 0
    command = f"hurray sign {path} --key {private} --add-digests"
    assert command in refused.stderr, refused.stderr
    assert f"hurray convert {path} COPY.hurray --digests" in refused.stderr, refused.stderr
    assert path.read_bytes() == before and not (tmp_path / "m.hurray.sig").exists()
    # The command named, as given.
    done = cli(*command.split()[1:])
    assert done.returncode == 0, done.stderr
    verified = cli("verify", path, "--key", public)
    assert verified.returncode == 0, verified.stderr
    # Rewritten with its tensors and metadata unchanged.
    got = hurray.numpy.load_file(path)
    assert sorted(got) == sorted(arrays) and all(np.array_equal(got[k], arrays[k]) for k in arrays)
    with hurray.safe_open(path, framework="np") as f:
        assert f.metadata() == {"step": "3"}
    # Python's refusal names Python's way.
    plain = tmp_path / "plain.hurray"
    hurray.numpy.save_file(arrays, plain)
    with pytest.raises(hurray.SignatureError, match="digests=True"):
        hurray.sign(plain, private)


def test_sign_add_digests_refuses_a_member_of_a_sharded_checkpoint(hurray, tmp_path):
    import hurray.numpy

    index = tmp_path / "ckpt.hurray"
    hurray.save_sharded(index, {"a": np.ones(1000, np.float32), "b": np.zeros(1000, np.float32)}, max_shard_size=4096)
    private, _ = keys(tmp_path)
    members = sorted(p for p in tmp_path.iterdir() if p.name != index.name and p.suffix == ".hurray")
    assert members, list(tmp_path.iterdir())
    before = members[0].read_bytes()
    refused = cli("sign", members[0], "--key", private, "--add-digests")
    assert refused.returncode != 0 and "member of a sharded checkpoint" in refused.stderr, refused.stderr
    assert members[0].read_bytes() == before
    refused = cli("sign", index, "--key", private, "--add-digests")
    assert refused.returncode != 0 and "digests=True" in refused.stderr, refused.stderr
