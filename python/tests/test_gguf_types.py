"""Every type `gguf` 0.19's `GGMLQuantizationType` lists, through Hurray and
back (issue 34): files written by the `gguf` package's own writer with raw
blocks of every type (random bytes: every bit pattern a block can hold,
NaN and infinite scales included), converted with `hurray convert`,
dequantized by the runtime through the Python package
(`safe_open.get_dequantized`) and through the C API
(`hurray_tensor_dequantize`, via ctypes) and compared with
`gguf.quants.dequantize` bit for bit, then converted back to GGUF: the very
same bytes.

For the three types `gguf` 0.19 has no dequantizer for (Q8_1 and Q8_K,
ggml's activation types, and Q1_0) the expected values are computed here
from the block layouts ggml defines (`block_q8_1`, `block_q8_K`,
`block_q1_0`).
"""

import ctypes
import subprocess
import sys

import numpy as np
import pytest

import gguf
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES  # noqa: E402

from deploy import ROOT, cli  # noqa: E402

PLAIN = {
    T.F32: np.float32,
    T.F16: np.float16,
    T.BF16: None,
    T.F64: np.float64,
    T.I8: np.int8,
    T.I16: np.int16,
    T.I32: np.int32,
    T.I64: np.int64,
}


def own_dequantize(qtype, raw: np.ndarray) -> np.ndarray:
    """The types gguf 0.19 cannot dequantize, from ggml's block layouts."""
    size = GGML_QUANT_SIZES[qtype][1]
    blocks = raw.reshape(-1, size)
    if qtype == T.Q8_1:  # f32 d, f32 s (the block's sum), i8 q[32]: d * q (gguf's 40-byte size)
        d = blocks[:, 0:4].copy().view(np.float32)
        return d * blocks[:, 8:].copy().view(np.int8).astype(np.float32)
    if qtype == T.Q8_K:  # f32 d, i8 q[256], i16 bsums[16]: d * q
        d = blocks[:, 0:4].copy().view(np.float32)
        return d * blocks[:, 4:260].copy().view(np.int8).astype(np.float32)
    if qtype == T.Q1_0:  # f16 d, 128 bits LSB-first: +d or -d
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
        bits = np.unpackbits(blocks[:, 2:], axis=1, bitorder="little")
        return np.where(bits == 1, d, -d).astype(np.float32)
    raise AssertionError(qtype)


def reference(qtype, raw: np.ndarray, shape) -> np.ndarray:
    try:
        return gguf.quants.dequantize(raw, qtype).reshape(shape)
    except NotImplementedError:
        return own_dequantize(qtype, raw).reshape(shape)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal float32 bits, except that a NaN matches a NaN at the same place.

    Random blocks hold NaN scales. IEEE 754 leaves the payload of a NaN
    that arithmetic produces to the hardware (NumPy on x86 carries the
    scale's payload through); the runtime's rule gives the one quiet NaN,
    0x7fc00000, on every machine. Every other value, signed zeros and
    infinities included, must match bit for bit."""
    g, w = got.astype(np.float32), want.astype(np.float32)
    nan = np.isnan(g) & np.isnan(w)
    return bool(np.all((g.view(np.uint32) == w.view(np.uint32)) | nan))


def c_dequantize(path, name: str, count: int) -> np.ndarray:
    """``name``'s values through the C API: hurray_file_open,
    hurray_file_lookup, hurray_tensor_dequantize."""
    # `cargo test` leaves the fresh library in deps/ (only `cargo build`
    # copies it up a level): the newer of the two.
    candidates = [ROOT / "target" / "debug" / "deps" / "libhurray_ffi.so", ROOT / "target" / "debug" / "libhurray_ffi.so"]
    built = [p for p in candidates if p.exists()]
    assert built, f"libhurray_ffi.so is not built (cargo test -p hurray-ffi): {candidates}"
    lib = ctypes.CDLL(str(max(built, key=lambda p: p.stat().st_mtime)))
    lib.hurray_file_close.restype = None
    f, t = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.hurray_file_open(str(path).encode(), ctypes.byref(f)) == 0
    try:
        assert lib.hurray_file_lookup(f, name.encode(), ctypes.byref(t)) == 0
        out = (ctypes.c_float * count)()
        written = ctypes.c_size_t()
        status = lib.hurray_tensor_dequantize(t, ctypes.c_uint64(0), out, ctypes.c_size_t(count), ctypes.byref(written))
        assert status == 0 and written.value == count, (name, status, written.value)
        return np.frombuffer(out, dtype=np.float32).copy()
    finally:
        lib.hurray_file_close(f)


def write_all_types(path, rng) -> dict:
    """A GGUF file with two tensors of every type (one 2-D, one 3-D) and
    key/values of every value type; returns name -> (type, raw, shape)."""
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_uint32("test.u32", 7)
    w.add_int8("test.i8", -3)
    w.add_float32("test.f32", 0.1)
    w.add_float64("test.f64", -2.5e-300)
    w.add_bool("test.bool", True)
    w.add_array("test.floats", [0.1, -0.0, 3.4e38])
    w.add_array("test.strings", ["a", 'b"c', "日本"])
    w.add_array("test.ints", [1, -2, 3])
    tensors = {}
    for qtype in T:
        block, size = GGML_QUANT_SIZES[qtype]
        for rank, shape in ((2, (3, 2 * block)), (3, (2, 1, block))):
            name = f"{qtype.name.lower()}_{rank}d"
            n = int(np.prod(shape))
            if qtype in PLAIN:
                if qtype == T.BF16:
                    raw = rng.integers(0, 1 << 16, size=n, dtype=np.uint16).view(np.uint8)
                else:
                    dtype = np.dtype(PLAIN[qtype])
                    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
            else:
                raw = rng.integers(0, 256, size=n // block * size, dtype=np.uint8)
            raw = raw.reshape(*shape[:-1], -1)
            w.add_tensor(name, raw, raw_dtype=qtype)
            tensors[name] = (qtype, raw.reshape(-1), shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors


def test_every_type_dequantizes_as_gguf_does_and_converts_back_byte_for_byte(hurray, tmp_path):
    rng = np.random.default_rng(34)
    src = tmp_path / "all.gguf"
    tensors = write_all_types(src, rng)
    assert {t for t, _, _ in tensors.values()} == set(T), "every type is in the file"
    out = tmp_path / "all.hurray"
    r = cli("convert", src, out)
    assert r.returncode == 0, r.stderr
    r = cli("validate", out)
    assert r.returncode == 0, r.stderr + r.stdout
    with hurray.safe_open(str(out), framework="np") as f:
        assert sorted(f.keys()) == sorted(tensors)
        for name, (qtype, raw, shape) in tensors.items():
            if qtype in PLAIN:
                got = f.get_tensor(name)
                want = gguf.quants.dequantize(raw.reshape(*shape[:-1], -1), qtype) if qtype == T.BF16 else raw.view(PLAIN[qtype]).reshape(shape)
                if qtype == T.BF16:
                    got = np.asarray(got, dtype=np.float32)
                assert got.shape == tuple(shape), name
                assert same_bits(got, want) if got.dtype.kind == "f" else np.array_equal(got, want), name
                continue
            got = f.get_dequantized(name)
            want = reference(qtype, raw, shape)
            assert got.shape == tuple(shape) and got.dtype == np.float32, name
            assert same_bits(got, want), (name, np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))[:5])
    # The C API (the library `cargo test` builds) gives the same values.
    for name, (qtype, raw, shape) in tensors.items():
        if qtype in PLAIN:
            continue
        got = c_dequantize(out, name, int(np.prod(shape)))
        assert same_bits(got.reshape(shape), reference(qtype, raw, shape)), f"C API: {name}"
    back = tmp_path / "back.gguf"
    r = cli("convert", out, back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()
    # And gguf's own reader reads the file written back.
    reader = gguf.GGUFReader(str(back))
    assert reader.fields["test.strings"].contents() == ["a", 'b"c', "日本"]


def test_grids_are_current():
    """runtime/src/views/blocks/grids.rs is what make_grids.py writes from gguf."""
    from deploy import ROOT

    script = ROOT / "runtime/src/views/blocks/make_grids.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
