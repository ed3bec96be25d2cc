"""The `hurray` package against the real consumers: NumPy (+ ml_dtypes),
PyTorch and JAX. Every element type into every framework that can hold it,
writes through imports (never a crash, never a change to the file), rank 0,
bools, bf16, and each framework's arrays written back bit-exactly.
"""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hurray_reader import element_types

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # int64/float64 stay 64-bit, as stored
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(7)


def _random_bits(dtype, n):
    return np.frombuffer(RNG.bytes(n * np.dtype(dtype).itemsize), dtype=dtype)


def _every_code(ml_name, bits):
    """Every bit pattern of a sub-byte type, as ml_dtypes holds it (one per byte)."""
    return np.arange(1 << bits, dtype=np.uint8).view(getattr(ml_dtypes, ml_name))


# One array per Hurray element type: every bit pattern where there are few
# (8-bit and sub-byte types, bf16), random bits otherwise (NaNs included).
SOURCES = {
    "bool": np.array([True, False, True, True, False, False, True]),
    "i8": np.arange(-128, 128, dtype=np.int8),
    "u8": np.arange(256, dtype=np.uint8),
    "i16": _random_bits(np.int16, 33),
    "u16": _random_bits(np.uint16, 33),
    "i32": _random_bits(np.int32, 17).reshape(1, 17),
    "u32": _random_bits(np.uint32, 17),
    "i64": _random_bits(np.int64, 9),
    "u64": _random_bits(np.uint64, 9),
    "f16": _random_bits(np.float16, 40).reshape(5, 8),
    "bf16": np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(256, 256),
    "f32": _random_bits(np.float32, 24).reshape(2, 3, 4),
    "f64": _random_bits(np.float64, 10),
    "f8e4m3fn": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn),
    "f8e5m2": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2).reshape(16, 16),
    "f4e2m1fn": _every_code("float4_e2m1fn", 4).reshape(4, 4),
    "f8e8m0fnu": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu),
    "f8e4m3fnuz": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fnuz).reshape(16, 16),
    "f8e5m2fnuz": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2fnuz),
    "f8e3m4": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e3m4).reshape(2, 128),
    "f8e4m3": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3),
    "f8e4m3b11fnuz": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3b11fnuz),
    # 64 codes of 6 bits: 48 bytes, codes spanning bytes.
    "f6e2m3fn": _every_code("float6_e2m3fn", 6).reshape(8, 8),
    "f6e3m2fn": _every_code("float6_e3m2fn", 6),
    "i4": _every_code("int4", 4),
    "u4": _every_code("uint4", 4).reshape(2, 8),
    "i2": _every_code("int2", 2),
    "u2": _every_code("uint2", 2),
    "c64": _random_bits(np.complex64, 6),
    "c128": _random_bits(np.complex128, 6),
    "scalar": np.array(7, dtype=np.int64),
    "empty": np.zeros((3, 0, 5), dtype=np.float32),
}
SUB_BYTE = {"i4", "u4", "i2", "u2", "f4e2m1fn", "f6e2m3fn", "f6e3m2fn"}
# The float types an ml_dtypes view holds (NumPy has no dtype for them).
ML_FLOATS = {f.name: f for f in element_types.BY_VALUE.values() if f.kind == "float" and f.ml_dtypes}
assert set(ML_FLOATS) <= set(SOURCES), "every element type has a source"
# PyTorch names its float types as ml_dtypes does and has no sub-byte float
# scalar type; torch 2.15 has float8_e4m3fnuz, float8_e5m2fnuz and
# float8_e8m0fnu but not float8_e3m4, float8_e4m3 or float8_e4m3b11fnuz.
TORCH_LACKS = {n for n, f in ML_FLOATS.items() if f.bits < 8 or not hasattr(torch, f.ml_dtypes)}


def _jax_holds(dtype):
    try:
        jax.device_put(np.zeros(1, dtype=dtype))
    except Exception:
        return False
    return True


# jax.numpy names every ml_dtypes float, but its CPU backend cannot hold fp6.
JAX_LACKS = {n for n, f in ML_FLOATS.items() if not _jax_holds(getattr(ml_dtypes, f.ml_dtypes))}


def _same_values_as_ml_dtypes(got32, src):
    """``got32`` (float32 values a framework computed) equal ml_dtypes'
    conversion of ``src`` to float32, bit for bit, NaN as NaN."""
    with np.errstate(invalid="ignore"):
        want = src.astype(np.float32)
    got32 = np.asarray(got32, dtype=np.float32)
    same = (got32.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got32) & np.isnan(want))
    return bool(same.all())


def _bits(array):
    """The bytes of an array (NumPy, torch or JAX), for bit-exact comparison."""
    if isinstance(array, torch.Tensor):
        array = array.contiguous().reshape(-1)  # rank 0 cannot change its element size
        return array.view(torch.uint8).numpy().tobytes() if array.numel() else b""
    return np.ascontiguousarray(np.asarray(array)).view(np.uint8).tobytes()


@pytest.fixture
def every_type(hurray, tmp_path):
    p = tmp_path / "every_type.hurray"
    hurray.numpy.save_file(SOURCES, p, metadata={"producer": "test"})
    return p


def test_every_type_is_stored_as_its_hurray_type(hurray, every_type):
    f = hurray.open(every_type)
    for name, src in SOURCES.items():
        expected = {"scalar": "i64", "empty": "f32"}.get(name, name)
        assert f[name].dtype == expected, name
        assert f[name].shape == src.shape, name
    # Sub-byte types and bools are packed: 16 int4 codes in 8 bytes.
    assert f["i4"].nbytes == 8 and f["i2"].nbytes == 1 and f["bool"].nbytes == 1
    assert f.metadata == {"producer": "test"}


def test_every_type_into_numpy(hurray, every_type):
    arrays = hurray.numpy.load_file(every_type)
    for name, src in SOURCES.items():
        a = arrays[name]
        assert a.dtype == src.dtype and a.shape == src.shape, name
        assert _bits(a) == _bits(src), name
    # bf16 and fp8 are zero-copy views of the map (ml_dtypes over the stored
    # bits); fp4 and fp6 are unpacked copies, one code per byte.
    f = hurray.open(every_type)
    for name, facts in ML_FLOATS.items():
        a = np.asarray(f[name])
        assert a.dtype == getattr(ml_dtypes, facts.ml_dtypes), name
        zero_copy = a.__array_interface__["data"][0] == f[name].data_ptr
        assert zero_copy == (facts.bits >= 8), name
    assert f["f6e2m3fn"].nbytes == 48 and f["f6e3m2fn"].nbytes == 48


def _torch_expected(name, src):
    """What PyTorch should hold for `src`: its own type, or the nearest one."""
    if name in ("i4", "i2"):
        return torch.from_numpy(src.astype(np.int8))
    if name in ("u4", "u2"):
        return torch.from_numpy(src.astype(np.uint8))
    if name in ML_FLOATS:
        # torch.bfloat16, torch.float8_*: the same bits, torch's type.
        width = {1: np.uint8, 2: np.int16}[src.dtype.itemsize]
        return torch.from_numpy(src.view(width).copy()).view(getattr(torch, ML_FLOATS[name].ml_dtypes))
    return torch.from_numpy(src.copy())


def test_every_type_into_torch(hurray, every_type):
    with hurray.safe_open(every_type, framework="pt") as f:
        for name, src in SOURCES.items():
            if name in TORCH_LACKS:
                # fp4, fp6 and the fp8 types PyTorch has no scalar type for.
                with pytest.raises(TypeError, match=f"tensor '{name}' is {name}, which PyTorch"):
                    f.get_tensor(name)
                with pytest.raises(TypeError, match=f"tensor '{name}' is {name}"):
                    f.get_slice(name)[:1]
                continue
            t = f.get_tensor(name)
            expected = _torch_expected(name, src)
            assert t.dtype == expected.dtype and tuple(t.shape) == src.shape, name
            assert _bits(t) == _bits(expected), name
            if name in ML_FLOATS:
                # PyTorch reads every code as ml_dtypes does.
                assert _same_values_as_ml_dtypes(t.float().numpy(), src), name


def test_every_type_into_jax(hurray, every_type, tmp_path):
    # A file of what JAX can hold, and a refusal naming each tensor it cannot.
    with hurray.safe_open(every_type, framework="jax") as f:
        for name in JAX_LACKS:
            with pytest.raises(TypeError, match=f"tensor '{name}' is {name}, which JAX"):
                f.get_tensor(name)
            with pytest.raises(TypeError, match=f"tensor '{name}' is {name}, which JAX"):
                f.get_slice(name)[:1]
    held = tmp_path / "jax_types.hurray"
    hurray.numpy.save_file({k: v for k, v in SOURCES.items() if k not in JAX_LACKS}, held)
    arrays = hurray.jax.load_file(held)
    assert set(arrays) == set(SOURCES) - JAX_LACKS
    for name, src in SOURCES.items():
        if name in JAX_LACKS:
            continue
        a = arrays[name]
        assert isinstance(a, jax.Array), name
        assert a.dtype == src.dtype and a.shape == src.shape, name
        assert _bits(a) == _bits(src), name
        if name in ML_FLOATS:
            # XLA's conversion of every code agrees with ml_dtypes'.
            assert _same_values_as_ml_dtypes(a.astype(jnp.float32), src), name


NEW_IN_1_2 = ["f8e8m0fnu", "f8e4m3fnuz", "f8e5m2fnuz", "f8e3m4", "f8e4m3", "f8e4m3b11fnuz", "f6e2m3fn", "f6e3m2fn"]


@pytest.mark.parametrize("name", NEW_IN_1_2)
def test_format_1_2_floats_through_dlpack(hurray, every_type, name):
    """Each consumer either takes the type's DLPack 1.1 code (zero-copy for
    torch, the stored bits either way, and its own export of the type comes
    back as the Hurray type) or refuses it with an error naming the code."""
    facts = element_types.BY_NAME[name]
    code = facts.dlpack_code
    assert (code, facts.dlpack_bits) == tuple(hurray._convert.BY_NAME[name].dlpack)
    f = hurray.open(every_type)
    t = f[name]

    def written_back(x):
        back = hurray.open_bytes(hurray._hurray.write(None, [("x", x)]))["x"]
        return back.dtype, back.shape, back.tobytes()

    stored = (name, t.shape, t.tobytes())
    if name in TORCH_LACKS:
        with pytest.raises(BufferError, match=f"Unsupported code {code}"):
            torch.from_dlpack(t)
    else:
        x = torch.from_dlpack(t)
        assert x.dtype == getattr(torch, facts.ml_dtypes) and x.data_ptr() == t.data_ptr
        assert _bits(x) == _bits(SOURCES[name])
        assert written_back(x) == stored  # torch's export reads as the Hurray type
    if name in JAX_LACKS:
        with pytest.raises(jax.errors.JaxRuntimeError, match=f"DLPack type code {code}"):
            jax.dlpack.from_dlpack(t)
    else:
        a = jax.dlpack.from_dlpack(t)
        assert a.dtype == getattr(ml_dtypes, facts.ml_dtypes) and _bits(a) == _bits(SOURCES[name])
        assert written_back(a) == stored  # through JAX's own DLPack export
    # NumPy has none of these dtypes; hurray.numpy views them with ml_dtypes.
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        np.from_dlpack(t)


_REFUSALS = r"""
import gc, sys
import numpy as np, torch, jax
import hurray

f = hurray.open(sys.argv[1])
refused = 0
for name in sys.argv[2:]:
    for consume in (torch.from_dlpack, jax.dlpack.from_dlpack, np.from_dlpack):
        for _ in range(3):
            try:
                consume(f[name])
            except (BufferError, RuntimeError):
                refused += 1
    gc.collect()
assert refused, "nothing was refused"
# The file's exports still work after the refusals freed theirs.
assert np.asarray(f[sys.argv[2]]).nbytes > 0
print("ok")
"""


def test_dlpack_refusals_of_format_1_2_floats_never_crash(hurray, every_type):
    # A refused capsule is freed by its destructor: run in a subprocess so
    # that a double free or a crash fails this test instead of the run.
    refused = sorted((TORCH_LACKS | JAX_LACKS) & set(NEW_IN_1_2))
    assert refused
    result = subprocess.run(
        [sys.executable, "-c", _REFUSALS, str(every_type), *refused], capture_output=True, text=True
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr}"
    assert result.stdout.strip().endswith("ok")


@pytest.mark.parametrize("framework", ["np", "pt", "jax"])
def test_every_type_get_slice(hurray, every_type, framework):
    """get_slice of every type each framework holds: the indexed part, bit for bit."""
    lacks = {"np": set(), "pt": TORCH_LACKS, "jax": JAX_LACKS}[framework]
    with hurray.safe_open(every_type, framework=framework) as f:
        for name, src in SOURCES.items():
            if src.ndim == 0 or name in lacks:
                continue
            part = f.get_slice(name)[1:3]
            want = src[1:3]
            if framework == "pt":
                want = _torch_expected(name, want)
            assert tuple(part.shape) == want.shape, name
            assert _bits(part) == _bits(want), name


@pytest.mark.parametrize("framework", ["np", "pt", "jax"])
def test_each_framework_writes_back_bit_exactly(hurray, every_type, tmp_path, framework):
    module = {"np": hurray.numpy, "pt": hurray.torch, "jax": hurray.jax}[framework]
    if framework == "pt":
        # torch holds sub-byte integers as int8/uint8 (they would come back
        # as what torch holds) and lacks fp4, fp6 and some fp8 types
        # (load_file refuses the file).
        every_type = tmp_path / "torch_types.hurray"
        skip = SUB_BYTE | TORCH_LACKS
        hurray.numpy.save_file({k: v for k, v in SOURCES.items() if k not in skip}, every_type)
    if framework == "jax":
        every_type = tmp_path / "jax_types.hurray"  # fp6 stays out: JAX cannot hold it
        hurray.numpy.save_file({k: v for k, v in SOURCES.items() if k not in JAX_LACKS}, every_type)
    loaded = module.load_file(every_type)
    expected = {"np": set(SOURCES), "pt": set(SOURCES) - SUB_BYTE - TORCH_LACKS, "jax": set(SOURCES) - JAX_LACKS}
    assert set(loaded) == expected[framework]
    out = tmp_path / f"from_{framework}.hurray"
    module.save_file(loaded, out)
    a, b = hurray.open(every_type), hurray.open(out)
    for name in loaded:
        assert b[name].dtype == a[name].dtype and b[name].shape == a[name].shape, name
        assert b[name].tobytes() == a[name].tobytes(), name
    # And to bytes and back.
    again = module.load(module.save(loaded))
    for name in loaded:
        assert _bits(again[name]) == _bits(loaded[name]), name


_WRITES = r"""
import sys
import numpy as np, torch, jax, jax.numpy as jnp
import hurray, hurray.torch, hurray.numpy

path = sys.argv[1]
before = open(path, "rb").read()
f = hurray.open(path)
# The reported crash: in-place ops on an imported tensor.
torch.from_dlpack(f["w"]).add_(1)
assert float(torch.from_dlpack(f["w"]).sum()) == 2 * 6 * 4
np.from_dlpack(f["b"])[:] = 0
# Training on a loaded state dict: assign=True keeps the imported storage.
model = torch.nn.Linear(4, 6)
sd = hurray.torch.load_file(path)
model.load_state_dict({"weight": sd["w"], "bias": sd["b"]}, assign=True)
assert model.weight.data_ptr() == sd["w"].data_ptr()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(3, 4)).square().sum().backward()
opt.step()
# JAX arrays built from the map stay immutable; updates make new arrays.
w = hurray.jax.load_file(path)["w"]
w2 = w.at[0, 0].set(-5.0)
assert float(w2[0, 0]) == -5.0
# NumPy views of the map are writable in place.
arrays = hurray.numpy.load_file(path)
arrays["w"] *= 2
assert open(path, "rb").read() == before, "the file changed"
assert float(np.from_dlpack(hurray.open(path)["w"]).sum()) == 6 * 4, "a new open sees writes"
print("ok")
"""


def test_writes_through_imports_never_crash_nor_reach_the_file(hurray, tmp_path):
    path = tmp_path / "train.hurray"
    hurray.numpy.save_file({"w": np.ones((6, 4), np.float32), "b": np.zeros(6, np.float32)}, path)
    # A subprocess: a crash (the SIGSEGV this replaces) fails the test
    # instead of killing the test run.
    result = subprocess.run([sys.executable, "-c", _WRITES, str(path)], capture_output=True, text=True)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr}"
    assert result.stdout.strip() == "ok"


def test_read_only_maps_never_hand_torch_a_writable_view(hurray, tmp_path):
    # torch ignores DLPack's read-only flag, so over a read-only map it gets a copy.
    path = tmp_path / "ro.hurray"
    hurray.numpy.save_file({"w": np.ones(4, np.float32)}, path)
    with hurray.safe_open(path, framework="pt", read_only=True) as f:
        t = f.get_tensor("w")
        t.add_(1)  # the copy's own memory
        assert float(t.sum()) == 8
    with hurray.safe_open(path, framework="jax", read_only=True) as f:
        assert float(f.get_tensor("w").sum()) == 4
    ro = hurray.open(path, read_only=True)
    with pytest.raises(BufferError, match="read-only"):
        hurray._convert.to_torch(ro["w"], copy=False)


@pytest.mark.parametrize("framework", ["np", "pt", "jax"])
def test_bool_bf16_and_rank_0_round_trip(hurray, tmp_path, framework):
    tensors = {
        "np": {
            "mask": np.array([[True, False, True], [False, False, True]]),
            "h": np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16),
            "n": np.array(7, dtype=np.int64),
        },
        "pt": {
            "mask": torch.tensor([[True, False, True], [False, False, True]]),
            "h": torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16),
            "n": torch.tensor(7),
        },
        "jax": {
            "mask": jnp.array([[True, False, True], [False, False, True]]),
            "h": jnp.array([1.5, -2.0, 3.25], dtype=jnp.bfloat16),
            "n": jnp.array(7, dtype=jnp.int64),
        },
    }[framework]
    module = {"np": hurray.numpy, "pt": hurray.torch, "jax": hurray.jax}[framework]
    path = tmp_path / "t.hurray"
    module.save_file(tensors, path)
    f = hurray.open(path)
    assert (f["mask"].dtype, f["h"].dtype, f["n"].dtype) == ("bool", "bf16", "i64")
    assert f["n"].shape == ()
    back = module.load_file(path)
    for name, src in tensors.items():
        assert back[name].dtype == src.dtype, name
        assert tuple(back[name].shape) == tuple(src.shape), name
        assert _bits(back[name]) == _bits(src), name


def test_numpy_protocols_copy_and_repr(hurray, every_type):
    f = hurray.open(every_type)
    t = f["f32"]
    assert np.asarray(t).dtype == np.float32  # __array__, not an object array
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert repr(t) == 'hurray.Tensor("f32", dtype=f32, shape=(2, 3, 4))'
    assert repr(f["scalar"]) == 'hurray.Tensor("scalar", dtype=i64, shape=())'
    assert repr(f["u2"]) == 'hurray.Tensor("u2", dtype=u2, shape=(4,))'
    copied = np.from_dlpack(t, copy=True)
    assert copied.__array_interface__["data"][0] != t.data_ptr
    with pytest.raises(BufferError):
        np.from_dlpack(f["bool"], copy=False)


def test_sub_byte_without_ml_dtypes_says_what_to_install(hurray, every_type):
    script = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import hurray\n"
        f"f = hurray.open({str(every_type)!r})\n"
        "try:\n    hurray._convert.to_numpy(f['bf16'])\n"
        "except TypeError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "install ml_dtypes (pip install ml_dtypes) to read it as ml_dtypes.bfloat16" in out.stdout, out.stderr


def test_save_refuses_what_hurray_cannot_store(hurray, tmp_path):
    out = tmp_path / "bad.hurray"
    with pytest.raises(ValueError, match="'o'.*no Hurray element type"):
        hurray.numpy.save_file({"ok": np.ones(2), "o": np.array([object()])}, out)
    with pytest.raises(ValueError, match="no Hurray element type"):
        hurray.numpy.save_file({"be": np.ones(2, dtype=">f4")}, out)
    with pytest.raises(TypeError, match="metadata"):
        hurray.numpy.save_file({"ok": np.ones(2)}, out, metadata={"k": 1})
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no temporary file left behind


def test_quantized_tensors_never_reach_a_framework_as_their_codes(hurray):
    # int4 weights with per-block scales: their stored codes are not their
    # values, so no road hands them out (DLPack refuses, and so does unpacking).
    from conftest import ROOT

    f = hurray.open(ROOT / "tests" / "vectors" / "quant_per_block.hurray")
    for name in ("i4", "u4"):
        assert f[name].quantized
        with pytest.raises(hurray.HurrayError, match="quantization"):
            f[name].unpacked()
        for convert in (hurray._convert.to_numpy, hurray._convert.to_torch, hurray._convert.to_jax):
            # Refused, naming the ways to its values.
            with pytest.raises(hurray.HurrayError, match="is quantized.*dequantize=True.*get_dequantized"):
                convert(f[name])
    g = hurray.open(ROOT / "tests" / "vectors" / "quant_per_tensor.hurray")
    with pytest.raises(hurray.HurrayError, match="quantization"):
        np.from_dlpack(g["q"])
