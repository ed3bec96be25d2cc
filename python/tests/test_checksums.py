"""Per-buffer checksums (format 1.2) from Python: what `save_file` records,
`verify_checksums()` on `hurray.open` and `safe_open`, and `ChecksumError`
for a file whose data changed on disk."""

import re

import numpy as np
import pytest


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bit by bit: an independent check of the writer."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def test_crc32c_reference():
    assert crc32c(b"123456789") == 0xE3069283


@pytest.fixture
def saved(hurray, tmp_path):
    path = tmp_path / "model.hurray"
    tensors = {
        "weight": np.arange(256, dtype=np.float32).reshape(16, 16) * 1.5 + 0.25,
        "bias": np.full(7, 3, dtype=np.int16),
        "empty": np.zeros((3, 0), dtype=np.float32),
    }
    hurray.numpy.save_file(tensors, path)
    return path, tensors


def test_a_saved_file_verifies(hurray, saved):
    path, tensors = saved
    f = hurray.open(path)
    assert f.verify_checksums() is True
    for name, array in tensors.items():
        assert f[name].verify_checksum() is True
        assert f[name].checksums == [("values", crc32c(array.tobytes()))]
    assert f["empty"].checksums == [("values", 0)]
    with hurray.safe_open(path, framework="np") as s:
        assert s.verify_checksums() is True
        assert s.verify_checksum("weight") is True
        with pytest.raises(KeyError):
            s.verify_checksum("missing")


def test_one_flipped_data_byte_raises_checksum_error(hurray, saved):
    path, tensors = saved
    with hurray.open(path, read_only=True) as f:
        start, _ = f.address_range()
        offset = f["weight"].data_ptr - start
        expected = f["weight"].checksums[0][1]
    data = bytearray(path.read_bytes())
    assert bytes(data[offset : offset + 64]) == tensors["weight"].tobytes()[:64]
    data[offset + 100] ^= 0x01
    found = crc32c(bytes(data[offset : offset + tensors["weight"].nbytes]))
    path.write_bytes(bytes(data))

    # Opening reads no data: the corrupt file opens, and the other tensors verify.
    f = hurray.open(path)
    assert f["bias"].verify_checksum() is True
    with pytest.raises(hurray.ChecksumError) as info:
        f.verify_checksums()
    message = str(info.value)
    assert '"weight"' in message and "values" in message and "crc32c" in message
    assert f"{expected:#010x}" in message and f"{found:#010x}" in message
    assert isinstance(info.value, hurray.HurrayError)
    with pytest.raises(hurray.ChecksumError, match=re.escape('"weight"')):
        f["weight"].verify_checksum()
    with hurray.safe_open(path, framework="np") as s:
        with pytest.raises(hurray.ChecksumError, match="weight"):
            s.verify_checksums()
        assert s.verify_checksum("bias") is True
    # The same bytes in memory: the same error.
    with pytest.raises(hurray.ChecksumError, match="weight"):
        hurray.open_bytes(bytes(data)).verify_checksums()


def test_a_file_without_checksums_verifies_false(hurray, tmp_path):
    path = tmp_path / "plain.hurray"
    hurray.save(path, {"x": np.arange(5, dtype=np.uint8)}, checksums=False)
    f = hurray.open(path)
    assert f["x"].checksums is None
    assert f["x"].verify_checksum() is False
    assert f.verify_checksums() is False
    with hurray.safe_open(path, framework="np") as s:
        assert s.verify_checksums() is False
    # A flipped byte goes unnoticed: there is nothing to compare with.
    data = bytearray(path.read_bytes())
    offset = f["x"].data_ptr - f.address_range()[0]
    data[offset] ^= 0xFF
    assert hurray.open_bytes(bytes(data)).verify_checksums() is False


def test_an_empty_file_has_nothing_to_verify(hurray):
    assert hurray.open_bytes(hurray.numpy.save({})).verify_checksums() is False


def test_checksum_error_is_exported(hurray):
    assert "ChecksumError" in hurray.__all__
    assert issubclass(hurray.ChecksumError, hurray.HurrayError)


def flipped_copy(hurray, path, name, out):
    """``path`` copied to ``out`` with one byte of tensor ``name`` flipped."""
    with hurray.open(path, read_only=True) as f:
        offset = f[name].data_ptr - f.address_range()[0]
    data = bytearray(path.read_bytes())
    data[offset + 3] ^= 0x10
    out.write_bytes(bytes(data))
    return out


def test_load_file_verify_checks_every_tensor_while_loading(hurray, tmp_path):
    # Enough tensors that the check runs on several threads, each a run of
    # the file; a flipped byte is found in the first and in the last run.
    path = tmp_path / "many.hurray"
    tensors = {f"t{i:02}": np.full(40_000, i, dtype=np.float32) for i in range(40)}
    hurray.numpy.save_file(tensors, path)
    loaded = hurray.numpy.load_file(path, verify=True)
    assert loaded.keys() == tensors.keys()
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name], array)
    for name in ("t00", "t21", "t39"):
        bad = flipped_copy(hurray, path, name, tmp_path / f"bad-{name}.hurray")
        with pytest.raises(hurray.ChecksumError, match=f'"{name}"'):
            hurray.numpy.load_file(bad, verify=True)
        # Without verify, opening reads no data: the corrupt file loads.
        assert hurray.numpy.load_file(bad)["t01"][0] == 1
    torch = pytest.importorskip("torch")
    assert torch.equal(hurray.torch.load_file(path, verify=True)["t05"], torch.full((40_000,), 5.0))
    with pytest.raises(hurray.ChecksumError, match='"t39"'):
        hurray.torch.load_file(tmp_path / "bad-t39.hurray", verify=True)


def test_load_file_verify_refuses_a_file_without_checksums(hurray, tmp_path):
    path = tmp_path / "plain.hurray"
    hurray.save(path, {"x": np.arange(5, dtype=np.uint8)}, checksums=False)
    with pytest.raises(ValueError, match="records no checksums"):
        hurray.numpy.load_file(path, verify=True)
    np.testing.assert_array_equal(hurray.numpy.load_file(path)["x"], np.arange(5, dtype=np.uint8))
