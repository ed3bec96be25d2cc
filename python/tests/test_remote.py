"""Hurray files in a real S3-compatible server (s3s-fs on 127.0.0.1, signed
requests, started from the workspace's `hurray-s3-test-server`): `safe_open`
on `s3://` URLs reads what it reads from disk, in NumPy and torch, for
single files and sharded checkpoints; credentials come from
`storage_options` or the environment."""

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import s3_env


def arrays():
    rng = np.random.default_rng(7)
    return {
        "embed.weight": rng.standard_normal((64, 16)).astype(np.float32),
        "head.bias": np.arange(10, dtype=np.float16),
        "mask": rng.integers(0, 2, (5, 7)).astype(bool),
        "empty": np.zeros((3, 0, 5), dtype=np.int8),
    }


def test_safe_open_on_a_url_reads_what_the_disk_reads(hurray, s3):
    root, options = s3
    (root / "models").mkdir(exist_ok=True)
    path = root / "models" / "model.hurray"
    expected = arrays()
    hurray.save(path, expected, metadata={"producer": "test"})
    url = "s3://models/model.hurray"
    with hurray.safe_open(url, framework="np", storage_options=options) as f:
        assert f.keys() == sorted(expected)
        assert f.metadata() == {"producer": "test"}
        for name, value in expected.items():
            got = f.get_tensor(name)
            assert got.dtype == value.dtype and got.shape == value.shape
            np.testing.assert_array_equal(got, value)
        np.testing.assert_array_equal(f.get_slice("embed.weight")[3:9, ::4], expected["embed.weight"][3:9, ::4])
        assert f.get_slice("mask").get_shape() == [5, 7]
        assert f.verify_checksums() is True
        assert f.verify_checksum("head.bias") is True
        with pytest.raises(KeyError):
            f.get_tensor("missing")
    # hurray.open of a URL gives the File a local path gives, read on demand.
    remote = hurray.open(url, storage_options=options)
    local = hurray.open(path, read_only=True)
    assert len(remote) == 4 and "mask" in remote and remote.size == path.stat().st_size
    assert remote.metadata == local.metadata and remote.keys() == local.keys()
    remote.read(["empty", "mask"])
    remote.read()  # the rest, in one batch
    # A mapped file's pages are read in and mapped now (runtime/tests/residency.rs watches the pages).
    local.read()
    local.read(["mask"])
    with pytest.raises(KeyError, match="missing"):
        local.read(["mask", "missing"])
    for name in expected:
        assert remote[name].tobytes() == local[name].tobytes()
        assert remote[name].shape == local[name].shape
    assert remote.verify_checksums() is True
    np.testing.assert_array_equal(np.from_dlpack(remote["embed.weight"]), expected["embed.weight"])
    with pytest.raises(ValueError, match="storage_options"):
        hurray.open(path, storage_options=options)
    with pytest.raises(ValueError, match="not mapped"):
        remote.address_range()


def test_a_urls_tensors_are_this_processs_memory_writable_unless_read_only(hurray, s3, monkeypatch):
    torch = pytest.importorskip("torch")
    import hurray.torch

    root, options = s3
    (root / "models").mkdir(exist_ok=True)
    path = root / "models" / "w.hurray"
    expected = arrays()
    hurray.save(path, expected)
    before = path.read_bytes()
    url = "s3://models/w.hurray"

    remote = hurray.open(url, storage_options=options)
    assert remote.writable
    remote.read()
    weight = np.from_dlpack(remote["embed.weight"])
    assert weight.flags.writeable
    # In place: a second export is the same memory, and sees the write.
    weight[0, 0] = 1234.5
    assert np.from_dlpack(remote["embed.weight"])[0, 0] == 1234.5
    # The object never changes: the write was this process's.
    assert path.read_bytes() == before
    again = hurray.open(url, storage_options=options)
    np.testing.assert_array_equal(np.from_dlpack(again["embed.weight"]), expected["embed.weight"])

    ro = hurray.open(url, read_only=True, storage_options=options)
    assert not ro.writable
    assert not np.from_dlpack(ro["embed.weight"]).flags.writeable

    # safe_open hands over the same: in place and writable, or read-only.
    with hurray.safe_open(url, framework="np", storage_options=options) as f:
        assert f.get_tensor("embed.weight").flags.writeable
    with hurray.safe_open(url, framework="np", read_only=True, storage_options=options) as f:
        got = f.get_tensor("embed.weight")
        assert not got.flags.writeable
        np.testing.assert_array_equal(got, expected["embed.weight"])

    # load_file hands over the tensors it read, no copy: writable, and each
    # in memory of its own.
    for key, value in s3_env(options).items():
        monkeypatch.setenv(key, value)
    loaded = hurray.torch.load_file(url)
    np.testing.assert_array_equal(loaded["embed.weight"].numpy(), expected["embed.weight"])
    loaded["embed.weight"][0, 0] = 1.0
    assert path.read_bytes() == before


def test_torch_tensors_from_a_url(hurray, s3):
    torch = pytest.importorskip("torch")
    root, options = s3
    (root / "models").mkdir(exist_ok=True)
    expected = arrays()
    hurray.save(root / "models" / "torch.hurray", expected)
    with hurray.safe_open("s3://models/torch.hurray", framework="pt", storage_options=options) as f:
        for name, value in expected.items():
            got = f.get_tensor(name)
            assert isinstance(got, torch.Tensor)
            np.testing.assert_array_equal(got.numpy(), value)


def test_a_sharded_checkpoint_at_a_url_and_credentials_from_the_environment(hurray, s3, monkeypatch):
    root, options = s3
    ckpt = root / "models" / "ckpt"
    ckpt.mkdir(parents=True, exist_ok=True)
    expected = arrays()
    hurray.save_sharded(ckpt / "index.hurray", expected, max_shard_size=2048)
    assert len(list(ckpt.glob("*.hurray"))) > 2
    for key, value in options.items():
        monkeypatch.setenv(key.upper(), value)
    with hurray.safe_open("s3://models/ckpt/index.hurray", framework="np") as f:
        assert f.sharded
        for name, value in expected.items():
            np.testing.assert_array_equal(f.get_tensor(name), value)
        assert f.verify_checksums() is True


def test_load_file_of_a_url_reads_every_tensor_in_one_batch(hurray, s3, monkeypatch):
    # What a user loading a whole state dict from S3 calls: load_file, with
    # the client configured from the environment as other S3 clients are.
    root, options = s3
    (root / "models").mkdir(exist_ok=True)
    expected = arrays()
    hurray.save(root / "models" / "whole.hurray", expected)
    for key, value in options.items():
        monkeypatch.setenv(key.upper(), value)
    for verify in (False, True):
        got = hurray.numpy.load_file("s3://models/whole.hurray", verify=verify)
        assert got.keys() == expected.keys()
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value)
    torch = pytest.importorskip("torch")
    got = hurray.torch.load_file("s3://models/whole.hurray")
    assert isinstance(got["mask"], torch.Tensor)
    np.testing.assert_array_equal(got["embed.weight"].numpy(), expected["embed.weight"])


def test_failures_name_the_url(hurray, s3):
    root, options = s3
    with pytest.raises(hurray.HurrayError, match="s3://models/missing.hurray"):
        hurray.safe_open("s3://models/missing.hurray", framework="np", storage_options=options)
    wrong = dict(options, aws_secret_access_key="wrong")
    hurray.save(root / "models" / "model.hurray", arrays())
    with pytest.raises(hurray.HurrayError, match="s3://models/model.hurray"):
        hurray.safe_open("s3://models/model.hurray", framework="np", storage_options=wrong)
