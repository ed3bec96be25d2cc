"""Signed files and checkpoints from Python: ``save_file(..., digests=True)``,
``hurray.sign`` / ``hurray.verify`` with keys OpenSSL writes, and loaders
that refuse what fails (``safe_open(..., verify=KEY)``), locally and from
the tests' S3 server."""

import shutil
import subprocess

import numpy as np
import pytest



def keys(tmp_path, name="k"):
    private, public = tmp_path / f"{name}.pem", tmp_path / f"{name}.pub"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", private], check=True)
    subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True)
    return private, public


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "embed.weight": rng.standard_normal((64, 16)).astype(np.float32),
        "head.bias": np.arange(10, dtype=np.float16),
        "mask": rng.integers(0, 2, (5, 7)).astype(bool),
        "empty": np.zeros((3, 0, 5), dtype=np.int8),
    }


def flip(path, at):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def offset_of(hurray, path, name):
    with hurray.open(path) as f:
        return f[name].buffer_range("values")[0]


def test_a_signed_file_verifies_loads_and_a_changed_tensor_is_refused_when_read(hurray, tmp_path):
    private, public = keys(tmp_path)
    path = tmp_path / "m.hurray"
    expected = arrays()
    hurray.numpy.save_file(expected, path, metadata={"note": "original"}, digests=True)
    assert hurray.sign(path, private) == str(path) + ".sig"
    assert hurray.verify(path, public) == (1, 4)
    # Key material as PEM bytes works the same.
    assert hurray.verify(path, public.read_bytes()) == (1, 4)
    with hurray.safe_open(path, "np", verify=public) as f:
        for name, value in expected.items():
            np.testing.assert_array_equal(f.get_tensor(name), value)

    flip(path, offset_of(hurray, path, "head.bias") + 3)
    with pytest.raises(hurray.ChecksumError, match='tensor "head.bias".*blake3 digest'):
        hurray.verify(path, public)
    # The signature still holds (the header is unchanged): the loader opens,
    # gives the untouched tensors, and refuses the changed one when read.
    with hurray.safe_open(path, "np", verify=public) as f:
        np.testing.assert_array_equal(f.get_tensor("embed.weight"), expected["embed.weight"])
        with pytest.raises(hurray.ChecksumError, match="head.bias"):
            f.get_tensor("head.bias")
        with pytest.raises(hurray.ChecksumError):
            f.get_slice("head.bias")[0:2]
    # verify=True checks the digests without a key.
    with hurray.safe_open(path, "np", verify=True) as f:
        with pytest.raises(hurray.ChecksumError):
            f.get_tensor("head.bias")


def test_a_changed_header_or_another_key_is_refused_at_open(hurray, tmp_path):
    private, public = keys(tmp_path)
    _, other = keys(tmp_path, "other")
    path = tmp_path / "m.hurray"
    hurray.save(path, arrays(), metadata={"note": "original"}, digests=True)
    hurray.sign(path, private)
    with pytest.raises(hurray.SignatureError, match="not with the key given"):
        hurray.safe_open(path, "np", verify=other)
    data = path.read_bytes().replace(b"original", b"0riginal")
    path.write_bytes(data)
    with pytest.raises(hurray.SignatureError, match="changed after it was signed"):
        hurray.safe_open(path, "np", verify=public)
    with pytest.raises(hurray.SignatureError):
        hurray.verify(path, public)
    # A file without digests cannot be signed, and a URL is refused.
    plain = tmp_path / "plain.hurray"
    hurray.save(plain, arrays())
    with pytest.raises(hurray.SignatureError, match="records no digests"):
        hurray.sign(plain, private)
    with pytest.raises(ValueError, match="beside a local file"):
        hurray.sign("s3://bucket/m.hurray", private)
    # A key that is not a key.
    with pytest.raises(hurray.SignatureError, match="ed25519"):
        hurray.verify(path, b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")


def test_a_signed_checkpoint_loads_in_torch_and_a_swapped_member_is_refused(hurray, tmp_path):
    torch = pytest.importorskip("torch")
    private, public = keys(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    tensors = {f"layers.{i}.weight": torch.full((64, 64), float(i), dtype=torch.bfloat16) for i in range(6)}
    others = {k: v + 1 for k, v in tensors.items()}
    hurray.save_sharded(a / "model.hurray", tensors, max_shard_size=20_000, digests=True)
    hurray.save_sharded(b / "model.hurray", others, max_shard_size=20_000, digests=True)
    hurray.sign(a / "model.hurray", private)
    assert hurray.verify(a / "model.hurray", public) == (3, 6)
    with hurray.safe_open(a / "model.hurray", "pt", verify=public) as f:
        for name, value in tensors.items():
            assert torch.equal(f.get_tensor(name), value)
    shutil.copy(b / "model-00002.hurray", a / "model-00002.hurray")
    with pytest.raises(hurray.MemberMismatchError, match="model-00002.hurray.*header digest"):
        hurray.verify(a / "model.hurray", public)
    with hurray.safe_open(a / "model.hurray", "pt", verify=public) as f:
        assert torch.equal(f.get_tensor("layers.0.weight"), tensors["layers.0.weight"])
        with pytest.raises(hurray.MemberMismatchError):
            f.get_tensor("layers.2.weight")


def test_a_signed_checkpoint_verifies_from_s3(hurray, s3, tmp_path):  # noqa: F811
    root, options = s3
    private, public = keys(tmp_path)
    ckpt = root / "models" / "signed"
    ckpt.mkdir(parents=True)
    tensors = {f"w{i}": np.full((32, 32), i, dtype=np.float32) for i in range(4)}
    hurray.save_sharded(ckpt / "model.hurray", tensors, max_shard_size=5_000, digests=True)
    hurray.sign(ckpt / "model.hurray", private)
    url = "s3://models/signed/model.hurray"
    assert hurray.verify(url, public, storage_options=options) == (4, 4)
    with hurray.safe_open(url, "np", storage_options=options, verify=public) as f:
        for name, value in tensors.items():
            np.testing.assert_array_equal(f.get_tensor(name), value)
    member = ckpt / "model-00003.hurray"
    flip(member, offset_of(hurray, member, "w2") + 1)
    with pytest.raises(hurray.ChecksumError, match='"w2"'):
        hurray.verify(url, public, storage_options=options)
    with hurray.safe_open(url, "np", storage_options=options, verify=public) as f:
        with pytest.raises(hurray.ChecksumError):
            f.get_tensor("w2")


def test_a_signed_checkpoint_directory_also_verifies_with_model_signing(hurray, tmp_path):
    """OpenSSF model-signing hashes every byte of every file of the
    directory (SHA-256) and signs the list with an ECDSA key; Hurray's
    signature signs the index's header digest with ed25519, and a reader
    hashes only the tensors it reads. Both hold on the same directory, and
    both refuse a changed member."""
    import sys
    from pathlib import Path

    model_signing = Path(sys.executable).parent / "model_signing"
    private, public = keys(tmp_path)
    ec, ec_pub = tmp_path / "ec.pem", tmp_path / "ec.pub"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ec], check=True)
    subprocess.run(["openssl", "pkey", "-in", ec, "-pubout", "-out", ec_pub], check=True)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    tensors = {f"w{i}": np.full((64, 64), i, dtype=np.float32) for i in range(4)}
    hurray.save_sharded(ckpt / "model.hurray", tensors, max_shard_size=40_000, digests=True)
    hurray.sign(ckpt / "model.hurray", private)
    bundle = ckpt / "model.sig"
    sign = [model_signing, "sign", "key", ckpt, "--private_key", ec, "--signature", bundle]
    subprocess.run(sign, check=True, capture_output=True)
    check = [model_signing, "verify", "key", ckpt, "--signature", bundle, "--public_key", ec_pub]
    assert subprocess.run(check, capture_output=True).returncode == 0
    assert hurray.verify(ckpt / "model.hurray", public) == (2, 4)
    # The bundle lists every file of the checkpoint, Hurray's signature too.
    import base64
    import json

    payload = json.loads(base64.b64decode(json.loads(bundle.read_text())["dsseEnvelope"]["payload"]))
    listed = sorted(r["name"] for r in payload["predicate"]["resources"])
    assert listed == sorted(p.name for p in ckpt.iterdir() if p.name != "model.sig")
    assert "model.hurray.sig" in listed

    member = ckpt / "model-00002.hurray"
    flip(member, offset_of(hurray, member, "w3") + 5)
    failed = subprocess.run(check, capture_output=True, text=True)
    assert failed.returncode == 1 and "model-00002.hurray" in failed.stderr, failed.stderr
    with pytest.raises(hurray.ChecksumError, match='"w3"'):
        hurray.verify(ckpt / "model.hurray", public)
