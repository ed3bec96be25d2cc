"""Every compliance vector in tests/vectors/, read by the Python reader.

Valid vectors must open and match their JSON expectation (descriptors, buffer
bytes, decoded values, quantization parameters and dequantized values);
invalid vectors must fail with exactly the error the JSON names.
"""

import json
import math
from pathlib import Path

import blake3
import numpy as np
import pytest

import hurray_reader
from hurray_reader import HurrayError

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
INDEX = json.loads((VECTORS / "index.json").read_text())["vectors"]


def expectation(name):
    return json.loads((VECTORS / f"{name}.json").read_text())


VALID = [v["name"] for v in INDEX if v["valid"]]
INVALID = [v["name"] for v in INDEX if not v["valid"]]


def test_index_is_not_empty():
    assert len(VALID) >= 30
    assert len(INVALID) >= 20


def same(x, want) -> bool:
    """Whether the array element ``x`` is the JSON value ``want``, exactly."""
    if isinstance(want, bool):
        return isinstance(x, (bool, np.bool_)) and bool(x) == want
    if isinstance(want, list):  # complex: [re, im]
        return same(float(np.real(x)), want[0]) and same(float(np.imag(x)), want[1])
    if isinstance(want, str):
        f = float(x)
        return {"nan": math.isnan(f), "inf": f == math.inf, "-inf": f == -math.inf}[want]
    if isinstance(want, int) and not isinstance(x, (float, np.floating)):
        return int(x) == want
    f = float(x)
    return f == want and math.copysign(1.0, f) == math.copysign(1.0, want)


def assert_values(ctx, got, want):
    got = np.asarray(got).reshape(-1)
    assert want is not None, ctx
    assert len(got) == len(want), f"{ctx}: {len(got)} values, expected {len(want)}"
    for i, (x, w) in enumerate(zip(got.tolist() if got.dtype.kind == "c" else got, want)):
        assert same(x, w), f"{ctx}[{i}]: {x!r} != {w!r}"


def shape_json(shape):
    return ["?" if d is None else d for d in shape]


@pytest.mark.parametrize("name", VALID)
def test_valid_vector(name):
    exp = expectation(name)
    f = hurray_reader.open(VECTORS / f"{name}.hurray")
    assert list(f.version) == exp["version"]
    assert f.alignment == exp["alignment"]
    assert f.metadata == exp["metadata"]
    assert f.file_id == (None if exp.get("file_id") is None else bytes.fromhex(exp["file_id"]))
    assert [t.name for t in f] == [t["name"] for t in exp["tensors"]]
    for t, e in zip(f, exp["tensors"]):
        ctx = f"{name}/{t.name}"
        assert f[t.name] is t
        assert t.dtype == e["dtype"], ctx
        assert shape_json(t.shape) == e["shape"], ctx
        assert t.layout == e["layout"], ctx
        if t.layout == "strided":
            assert t.strides == e["strides"], ctx
        sp = t.sparse_params
        if sp is not None:
            assert sp["nnz"] == e["nnz"] and sp["index_type"] == e["index_type"], ctx
            if t.layout == "coo":
                assert sp["canonical"] == e["canonical"], ctx
        assert t.descriptor_only == e["descriptor_only"], ctx
        assert t.alignment == e["alignment"], ctx
        assert t.element_count == e["element_count"], ctx
        assert t.metadata == e["metadata"], ctx
        if t.descriptor_only:
            assert e["buffers"] == []
            with pytest.raises(HurrayError) as err:
                t.numpy()
            assert err.value.variant == "NoData"
            continue
        assert t.buffer_roles() == [b["role"] for b in e["buffers"]], ctx
        for b in e["buffers"]:
            data = t.buffer(b["role"])
            assert len(data) == b["length"], ctx
            assert bytes(data).hex() == b["hex"], f"{ctx}: {b['role']}"
            sums = t.checksums()
            if sums is not None:  # format 1.2: the CRC-32C of the bytes
                assert sums[b["role"]] == b["crc32c"] == hurray_reader.reader.crc32c(data), ctx
            digests = t.digests()
            if digests is not None:  # format 1.4: the BLAKE3 of the bytes
                assert digests[b["role"]] == b["blake3"] == blake3.blake3(bytes(data)).hexdigest(), ctx
            if len(data):
                offset = np.frombuffer(data, np.uint8).__array_interface__["data"][0] - np.frombuffer(
                    f.data, np.uint8
                ).__array_interface__["data"][0]
                assert offset % t.alignment == 0, ctx
        q = t.quantization
        if q is not None and q["block_format"] is not None:
            # Format 1.4: the values are the blocks' bytes.
            assert_values(ctx, np.frombuffer(t.buffer("values"), np.uint8), e["values"])
        elif t.layout in ("dense", "strided"):
            arr = t.numpy()
            assert arr.shape == tuple(t.shape), ctx
            assert_values(ctx, arr, e["values"])
            if t.layout == "dense" and arr.size and arr.dtype.kind in "iufc" and arr.dtype.itemsize * 8 == int(
                hurray_reader.decode.facts(t._wire).bits
            ) and hurray_reader.decode.facts(t._wire).numpy:
                # Zero-copy: the array views the file's bytes.
                assert np.shares_memory(arr, np.frombuffer(f.data, np.uint8)), ctx
                assert not arr.flags.writeable, ctx
        else:
            s = t.sparse()
            assert_values(f"{ctx}: indices", s["indices"], e["indices"])
            if t.layout != "coo":
                assert_values(f"{ctx}: pointers", s["pointers"], e["pointers"])
            assert_values(f"{ctx}: values", s["values"], e["values"])
        q = t.quantization
        if e["quantization"] is None:
            assert q is None, ctx
        else:
            qe = e["quantization"]
            for key in (
                "scheme", "axis", "block_size", "expressed_type", "scale_type",
                "zero_point_type", "storage_min", "storage_max", "tensor_scale", "offset_type",
                "code_table_type", "tensor_offset", "group_index_type", "block_format",
                "scale_quantization", "offset_quantization",
            ):
                assert q[key] == qe[key], f"{ctx}: {key}"
            assert_values(f"{ctx}: scales", t.scales(), qe["scales"])
            assert_values(f"{ctx}: zero points", t.zero_points(), qe["zero_points"])
            assert_values(f"{ctx}: dequantized", t.dequantize(), qe["dequantized"])
    f.validate()


@pytest.mark.parametrize("name", INVALID)
def test_invalid_vector(name):
    exp = expectation(name)["error"]
    want = {k: v for k, v in exp.items() if k != "stage"}
    path = VECTORS / f"{name}.hurray"
    if exp["stage"] == "open":
        for attempt in (lambda: hurray_reader.open(path), lambda: hurray_reader.from_bytes(path.read_bytes())):
            with pytest.raises(HurrayError) as err:
                attempt()
            assert err.value.describe() == want, str(err.value)
    else:
        f = hurray_reader.open(path)  # the header is fine; the data is not
        with pytest.raises(HurrayError) as err:
            f.validate()
        assert err.value.describe() == want, str(err.value)


def test_empty_tensors_are_not_dynamic():
    """ADR-007 section 5: 0 is a resolved size, never the dynamic sentinel."""
    f = hurray_reader.open(VECTORS / "empty_shape_3_0_5.hurray")
    assert f["x"].shape == (3, 0, 5)
    assert f["x"].numpy().shape == (3, 0, 5)
    d = hurray_reader.open(VECTORS / "descriptor_only.hurray")
    assert d["batch"].shape == (None, 3)
    assert d["batch"].element_count is None


def test_raw_codes_for_types_numpy_lacks():
    f = hurray_reader.open(VECTORS / "dtype_bf16.hurray")
    assert f["x"].numpy(raw=True).dtype == np.uint16
    assert f["x"].numpy().dtype == np.float32
    f = hurray_reader.open(VECTORS / "dtype_f4e2m1fn.hurray")
    assert f["x"].numpy(raw=True).tolist() == [0x0, 0x1, 0x2, 0xB, 0x7, 0x8, 0x4]


def test_checksums_verify_and_catch_a_flipped_byte():
    """Format 1.2: the reader verifies the recorded CRC-32C on demand (never
    at open), as the Rust reader does, and names the tensor and buffer."""
    assert hurray_reader.reader.crc32c(b"123456789") == 0xE3069283
    data = bytearray((VECTORS / "layout_dense.hurray").read_bytes())
    f = hurray_reader.from_bytes(bytes(data))
    t = next(t for t in f.tensors if t.name == "a")
    assert t.verify_checksum() is True
    view = np.frombuffer(t.buffer("values"), np.uint8)
    offset = view.__array_interface__["data"][0] - np.frombuffer(f.data, np.uint8).__array_interface__["data"][0]
    data[offset] ^= 0x01
    bad = hurray_reader.from_bytes(bytes(data))  # opening reads no data
    with pytest.raises(HurrayError) as err:
        next(t for t in bad.tensors if t.name == "a").verify_checksum()
    assert (err.value.variant, err.value.tensor, err.value.field) == ("ChecksumMismatch", "a", "values")
