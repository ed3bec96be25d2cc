"""The `hurray` Python extension (pyext/): DLPack export is zero-copy from the
memory map, with the right dtype and shape, empty tensors included (ADR-007).

The extension is built into the running virtualenv with `maturin develop`
once per session (conftest.py's `hurray` fixture).
"""

import collections.abc
import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"


@pytest.fixture
def path(tmp_path, hurray):
    p = tmp_path / "t.hurray"
    hurray.save(
        p,
        {
            "w": np.arange(6, dtype=np.float32).reshape(2, 3),
            "empty": np.zeros((3, 0, 5), dtype=np.float32),
            "i64": np.array([[-1, 2], [3, -4]], dtype=np.int64),
            "c64": np.array([1 + 2j, 3 - 4j], dtype=np.complex64),
            "f16": np.array([0.5, -2.0, 65504.0], dtype=np.float16),
            "u8": np.arange(200, dtype=np.uint8),
            "scalar": np.float64(2.5),
            "bool": np.array([True, False, True, True, False]),
            "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
        },
    )
    return p


def _address(arr):
    return arr.__array_interface__["data"][0]


def test_open_is_a_mapping(hurray, path):
    f = hurray.open(path)
    assert isinstance(f, collections.abc.Mapping)
    assert len(f) == 9
    assert list(f) == sorted(f.keys())
    assert "w" in f and "nope" not in f
    with pytest.raises(KeyError):
        f["nope"]
    assert f.get("nope") is None
    assert f["w"].shape == (2, 3) and f["w"].dtype == "f32" and f["w"].layout == "dense"
    assert f.version[0] == 1


def test_from_dlpack_shares_memory_with_the_map(hurray, path):
    f = hurray.open(path)
    start, end = f.address_range()
    for name, dtype in [("w", np.float32), ("i64", np.int64), ("c64", np.complex64),
                        ("f16", np.float16), ("u8", np.uint8), ("scalar", np.float64)]:
        t = f[name]
        arr = np.from_dlpack(t)
        assert arr.dtype == dtype, name
        assert arr.shape == tuple(t.shape), name
        # Zero-copy: NumPy's data pointer is the tensor's, inside the mapped file.
        assert _address(arr) == t.data_ptr, name
        assert start <= _address(arr) and _address(arr) + arr.nbytes <= end, name
        assert _address(arr) % 64 == 0, name
        # The default map is copy-on-write: the export is writable.
        assert arr.flags.writeable, name
        assert arr.tobytes() == t.tobytes(), name
    np.testing.assert_array_equal(np.from_dlpack(f["w"]), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(np.from_dlpack(f["c64"]), np.array([1 + 2j, 3 - 4j], np.complex64))


def test_writes_stay_in_the_process_and_read_only_maps_say_so(hurray, path):
    before = path.read_bytes()
    f = hurray.open(path)
    assert f.writable and f["w"].writable
    arr = np.from_dlpack(f["w"])
    arr[:] = -1.0
    # The write is visible through the map in this process ...
    assert np.from_dlpack(f["w"]).sum() == -6.0
    # ... and never reaches the file, nor another open of it.
    assert path.read_bytes() == before
    assert np.from_dlpack(hurray.open(path)["w"]).sum() == 15.0

    ro = hurray.open(path, read_only=True)
    assert not ro.writable and "read-only" in repr(ro)
    arr = np.from_dlpack(ro["w"])
    assert not arr.flags.writeable  # DLPack 1.x read-only flag
    with pytest.raises(ValueError):
        arr[0, 0] = 1.0
    # The legacy capsule cannot carry the flag: refused, with the remedy.
    with pytest.raises(BufferError, match="read_only"):
        ro["w"].__dlpack__()
    # A copy is the consumer's own.
    copied = np.from_dlpack(ro["w"], copy=True)
    assert copied.flags.writeable and _address(copied) != ro["w"].data_ptr
    copied[:] = 0
    assert path.read_bytes() == before


def test_empty_tensor(hurray, path):
    f = hurray.open(path)
    t = f["empty"]
    assert t.shape == (3, 0, 5)
    assert t.data_ptr == 0  # ADR-007: no pointer for zero bytes
    assert t.nbytes == 0
    arr = np.from_dlpack(t)
    assert arr.shape == (3, 0, 5)
    assert arr.dtype == np.float32
    assert arr.size == 0


def test_export_outlives_the_file_object(hurray, path):
    f = hurray.open(path)
    arr = np.from_dlpack(f["w"])
    ptr = _address(arr)
    del f
    gc.collect()
    # The DLPack export holds the map: the values are still there, same address.
    assert _address(arr) == ptr
    assert arr.sum() == 15.0


def test_legacy_protocol_for_old_consumers(hurray, path):
    f = hurray.open(path)

    class Legacy:
        """A producer seen through an old consumer: no max_version."""

        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    arr = np.from_dlpack(Legacy(f["w"]))
    assert _address(arr) == f["w"].data_ptr
    cap = f["w"].__dlpack__()
    assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
    cap = f["w"].__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)


def test_unconsumed_capsules_are_freed(hurray, path):
    f = hurray.open(path)
    t = f["w"]
    for _ in range(2000):
        t.__dlpack__(max_version=(1, 1))
        t.__dlpack__()
    gc.collect()
    assert f["w"].__dlpack_device__() == (1, 0)


def test_bools_arrive_as_byte_bools_copied(hurray, path):
    f = hurray.open(path)
    # Hurray stores bools as bits; consumers read one byte per bool, so the
    # export is an unpacked copy (DLPack's is-copied flag).
    arr = np.from_dlpack(f["bool"])
    assert arr.dtype == np.bool_
    np.testing.assert_array_equal(arr, [True, False, True, True, False])
    arr[0] = False  # the consumer's own copy
    np.testing.assert_array_equal(np.from_dlpack(f["bool"]), [True, False, True, True, False])
    # copy=False: no in-place form exists.
    with pytest.raises(BufferError, match="without copying"):
        np.from_dlpack(f["bool"], copy=False)


def test_copy_argument(hurray, path):
    f = hurray.open(path)
    copied = np.from_dlpack(f["w"], copy=True)
    assert _address(copied) != f["w"].data_ptr
    np.testing.assert_array_equal(copied, np.arange(6, dtype=np.float32).reshape(2, 3))
    in_place = np.from_dlpack(f["w"], copy=False)
    assert _address(in_place) == f["w"].data_ptr


def test_refusals(hurray, path):
    f = hurray.open(path)
    with pytest.raises(BufferError):
        f["w"].__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(ValueError):
        f["w"].__dlpack__(stream=1)


def test_save_round_trips(hurray, path, tmp_path):
    f = hurray.open(path)
    np.testing.assert_array_equal(np.from_dlpack(f["fortran"]), np.arange(6, dtype=np.int32).reshape(2, 3))
    assert f["bool"].dtype == "bool" and f["bool"].shape == (5,)
    assert f["bool"].tobytes() == bytes([0b01101])
    with pytest.raises(ValueError):
        hurray.save(tmp_path / "bad.hurray", {"o": np.array([object()])})
    assert not (tmp_path / "bad.hurray").exists()


def test_save_keeps_rank_0(hurray, tmp_path):
    # A scalar tensor (torch's `num_batches_tracked`) stays shape (), as a
    # NumPy 0-d array and as a plain Python scalar.
    out = tmp_path / "scalars.hurray"
    hurray.save(out, {"n": np.array(7, dtype=np.int64), "x": 2.5})
    f = hurray.open(out)
    assert f["n"].shape == () and f["x"].shape == ()
    assert np.from_dlpack(f["n"]).shape == ()
    assert int(np.from_dlpack(f["n"])) == 7
    assert float(np.from_dlpack(f["x"])) == 2.5


def test_save_gives_the_mode_of_any_new_file(hurray, tmp_path):
    # hurray.save writes through the runtime's atomic writer: the umask decides, as for open(..., "w").
    old = os.umask(0o027)
    try:
        hurray.save(tmp_path / "saved.hurray", {"w": np.arange(3, dtype=np.float32)})
        (tmp_path / "touched").touch()
    finally:
        os.umask(old)
    assert (tmp_path / "touched").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "saved.hurray").stat().st_mode & 0o777 == 0o640
    np.testing.assert_array_equal(np.from_dlpack(hurray.open(tmp_path / "saved.hurray")["w"]), np.arange(3, dtype=np.float32))


def _expected_values(values, dtype):
    """JSON values as an array: floats may be "inf"/"-inf"/"nan", complex numbers [re, im]."""

    def number(v):
        if isinstance(v, list):
            return complex(number(v[0]), number(v[1]))
        if isinstance(v, str):
            return float(v)
        return v

    return np.array([number(v) for v in values], dtype=dtype)


def test_compliance_vectors(hurray):
    """Every valid vector opens and matches its JSON shape; every dense tensor of
    a NumPy-native dtype exports zero-copy with the expected values; every
    vector that must fail at open fails (view-stage ones: see the C test)."""
    import json

    vectors = sorted(VECTORS.glob("*.hurray"))
    assert vectors, f"no compliance vectors in {VECTORS}"
    native = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "c64", "c128"}
    exported = 0
    for p in vectors:
        expected = json.loads(p.with_suffix(".json").read_text())
        if not expected["valid"]:
            if expected["error"]["stage"] == "open":
                with pytest.raises(hurray.HurrayError):
                    hurray.open(p)
            continue
        f = hurray.open(p)
        assert len(f) == len(expected["tensors"]), p.name
        for e in expected["tensors"]:
            t = f[e["name"]]
            assert list(t.shape) == [None if d == "?" else d for d in e["shape"]], p.name
            assert t.dtype == e["dtype"]
            dense = e["layout"] in ("dense", "strided") and not e["descriptor_only"]
            if dense and e["quantization"] is None and e["dtype"] in native:
                arr = np.from_dlpack(t)
                exported += 1
                assert arr.shape == tuple(e["shape"]), (p.name, e["name"])
                if arr.size:
                    assert _address(arr) == t.data_ptr
                    np.testing.assert_array_equal(arr, _expected_values(e["values"], arr.dtype).reshape(arr.shape))
    assert exported > 10


_SAVE_BOOLS = r"""
import resource, sys
import numpy as np
import hurray
n = 50_000_000
a = np.zeros(n, dtype=bool)
a[::3] = True
a[7] = True
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
hurray.save(sys.argv[1], {"mask": a, "odd": np.arange(5, dtype=np.uint8).view(bool)})
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)
"""


def test_save_reads_arrays_through_the_buffer_protocol(hurray, tmp_path):
    # A 50 MB bool array: no per-element Python objects (`.tolist()` took
    # ~9 bytes per element, +430 MB); the 1-bit packing streams in chunks.
    out = tmp_path / "bools.hurray"
    result = subprocess.run(
        [sys.executable, "-c", _SAVE_BOOLS, str(out)], capture_output=True, text=True, env=dict(os.environ)
    )
    assert result.returncode == 0, result.stderr
    grew_mib = int(result.stdout.strip())
    assert grew_mib < 32, f"peak RSS grew {grew_mib} MiB saving 50 MB of bools"
    f = hurray.open(out)
    mask = f["mask"]
    assert mask.shape == (50_000_000,)
    packed = np.frombuffer(mask.tobytes(), dtype=np.uint8)
    bits = np.unpackbits(packed, bitorder="little")[:50_000_000].astype(bool)
    expected = np.zeros(50_000_000, dtype=bool)
    expected[::3] = True
    expected[7] = True
    np.testing.assert_array_equal(bits, expected)
    # Bytes NumPy reads as True (any non-zero) are stored as True.
    assert f["odd"].tobytes() == bytes([0b11110])


def test_metadata_survives_truncation_by_another_process(hurray, tmp_path):
    # The header is copied out of the map at open: listing and describing
    # tensors of a file truncated afterwards reads nothing from the map.
    out = tmp_path / "t.hurray"
    hurray.save(out, {"a": np.arange(1 << 16, dtype=np.float32), "b": np.ones(3, dtype=np.int8)})
    f = hurray.open(out)
    os.truncate(out, 0)
    assert sorted(f.keys()) == ["a", "b"]
    assert len(f) == 2
    assert f["a"].shape == (1 << 16,) and f["a"].dtype == "f32"
