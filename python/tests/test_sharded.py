"""Slices and sharded checkpoints from Python: `get_slice` of sub-byte and
bool tensors read by the runtime (`Tensor.read_slice`), a tensor chunked
across three member files read through `safe_open(index)` and compared with
NumPy slicing of the whole array, `save_sharded`'s splitting, and a corrupt
or truncated member caught."""

import random

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

FRAMEWORKS = ["np", "pt", "jax"]

# Basic indexes of a [10, 7] tensor: across the row chunk boundaries (3, 7),
# steps, integers (dropping a dimension), negative indices, `...`, None.
INDEXES = [
    np.s_[:],
    np.s_[2:8, 1:6],
    np.s_[::3, 6],
    np.s_[-1],
    np.s_[-4:-1, ::2],
    np.s_[3:7],
    np.s_[..., -2],
    np.s_[None, 1:9:4],
    np.s_[5, -7:],
    np.s_[-8, 2],
    np.s_[4:2],  # empty
    np.s_[1:10:4, 0:7:3],
    np.s_[6:8, 2:3],
]


def _numpy(x):
    """A framework's array as NumPy, for comparing values."""
    if isinstance(x, torch.Tensor):
        return x.numpy()
    return np.asarray(x)


def _rows():
    return np.arange(70, dtype=np.float32).reshape(10, 7) - 20


def _q():
    """i4 [4, 6]: every code of int4, as ml_dtypes holds them."""
    return (np.arange(24, dtype=np.int8) * 5 % 16 - 8).astype(ml_dtypes.int4).reshape(4, 6)


@pytest.fixture
def checkpoint(hurray, tmp_path):
    """`w` f32 [10, 7] chunked by rows 0..3, 3..7, 7..10 across three
    members; `q` i4 [4, 6] chunked by columns 0..3 and 3..6; `b` whole."""
    index = tmp_path / "ckpt" / "model.hurray"
    index.parent.mkdir()
    w, q = _rows(), _q()
    with hurray.ShardedWriter(index, {"format": "pt"}) as writer:
        for rank, (lo, hi) in enumerate([(0, 3), (3, 7), (7, 10)]):
            writer.start_member(f"rank-{rank}.hurray")
            writer.add_chunk("w", w.shape, (lo, 0), w[lo:hi])
            if rank < 2:
                writer.add_chunk("q", q.shape, (0, 3 * rank), np.ascontiguousarray(q[:, 3 * rank : 3 * rank + 3]))
        writer.add("b", np.array([0.5, 1.5], np.float32))
    return index, w, q


def test_the_checkpoint_is_three_members_and_an_index(hurray, checkpoint):
    index, _, _ = checkpoint
    plain = hurray.open(index)
    assert plain.is_shard_index and len(plain) == 0
    ck = hurray.open_sharded(index)
    assert ck.keys() == ["b", "q", "w"] and len(ck) == 3 and "w" in ck and "x" not in ck
    assert ck.metadata == {"format": "pt"}
    assert [m[0] for m in ck.members] == ["rank-0.hurray", "rank-1.hurray", "rank-2.hurray"]
    for path, size, _crc in ck.members:
        assert (index.parent / path).stat().st_size == size
    w = ck["w"]
    assert (w.dtype, w.shape) == ("f32", (10, 7))
    assert w.pieces == [
        ("rank-0.hurray", "w", [0, 0], [3, 7]),
        ("rank-1.hurray", "w", [3, 0], [4, 7]),
        ("rank-2.hurray", "w", [7, 0], [3, 7]),
    ]
    assert ck["b"].pieces == [("rank-2.hurray", "b", [0], [2])]
    assert "pieces=3" in repr(w)
    # A member is an ordinary Hurray file, and not an index.
    member = index.parent / "rank-1.hurray"
    np.testing.assert_array_equal(hurray.open(member)["w"].__array__(), _rows()[3:7])
    with pytest.raises(hurray.HurrayError, match="not the index"):
        hurray.open_sharded(member)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_chunked_tensor_slices_as_numpy_slices_the_whole(hurray, checkpoint, framework):
    index, w, q = checkpoint
    with hurray.safe_open(index, framework=framework) as f:
        assert f.sharded and f.keys() == ["b", "q", "w"] and f.metadata() == {"format": "pt"}
        whole = f.get_tensor("w")
        np.testing.assert_array_equal(_numpy(whole), w)
        s = f.get_slice("w")
        assert s.get_shape() == [10, 7] and s.get_dtype() == "f32" and len(s) == 10
        for index_ in INDEXES:
            part = s[index_]
            want = w[index_]
            assert type(part) is type(whole), index_
            assert tuple(part.shape) == want.shape, index_
            np.testing.assert_array_equal(_numpy(part), want, err_msg=str(index_))
        np.testing.assert_array_equal(_numpy(f.get_tensor("b")), [0.5, 1.5])
        # The sub-byte tensor across its column boundary: as get_tensor gives it, indexed.
        full_q = f.get_tensor("q")
        for index_ in [np.s_[1:4, 1:6:2], np.s_[:, 2:4], np.s_[-1], np.s_[..., 3]]:
            part = f.get_slice("q")[index_]
            want = full_q[index_]
            assert part.dtype == want.dtype and tuple(part.shape) == tuple(want.shape), index_
            np.testing.assert_array_equal(_numpy(part).astype(np.int8), _numpy(want).astype(np.int8))
    np.testing.assert_array_equal(_numpy(full_q).astype(np.int8), q.astype(np.int8))


def test_random_basic_indexes_agree_with_numpy(hurray, checkpoint):
    """Integers, slices with any bounds and steps >= 1, None and `...`, drawn
    at random: the same result as NumPy's, or the same kind of refusal."""
    index, w, _ = checkpoint
    rng = random.Random(11)

    def item():
        r = rng.random()
        if r < 0.3:
            return rng.randint(-12, 11)
        if r < 0.4:
            return None
        if r < 0.45:
            return Ellipsis
        bound = lambda: rng.choice([None, rng.randint(-13, 13)])  # noqa: E731
        return slice(bound(), bound(), rng.choice([None, 1, 2, 3, 5]))

    compared = 0
    with hurray.safe_open(index, framework="np") as f:
        s = f.get_slice("w")
        for _ in range(600):
            idx = tuple(item() for _ in range(rng.randint(0, 3)))
            try:
                want = w[idx]
            except IndexError:
                with pytest.raises(IndexError):
                    s[idx]
                continue
            got = s[idx]
            assert got.shape == want.shape, idx
            np.testing.assert_array_equal(got, want, err_msg=str(idx))
            compared += 1
    assert compared > 300


def test_a_slice_opens_only_the_members_it_meets(hurray, checkpoint):
    index, w, _ = checkpoint
    (index.parent / "rank-2.hurray").unlink()
    with hurray.safe_open(index, framework="np") as f:
        np.testing.assert_array_equal(f.get_slice("w")[1:7, ::2], w[1:7, ::2])
        with pytest.raises(hurray.HurrayError, match="rank-2.hurray"):
            f.get_slice("w")[7]


def test_slices_refuse_what_numpy_refuses_and_negative_steps(hurray, checkpoint):
    index, _, _ = checkpoint
    with hurray.safe_open(index, framework="np") as f:
        s = f.get_slice("w")
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 10"):
            s[10]
        with pytest.raises(IndexError, match="too many indices"):
            s[1, 2, 3]
        with pytest.raises(ValueError, match="steps of 1 or more"):
            s[::-1]
        with pytest.raises(TypeError, match="basic index"):
            s[[1, 2]]
        with pytest.raises(KeyError):
            f.get_slice("missing")
    # The runtime's own check names the dimension.
    with pytest.raises(IndexError, match="dimension 1"):
        hurray.open_sharded(index)["w"].read_slice([(0, 10, 1), (0, 8, 1)])


SUB_BYTE = {
    "i4": (np.arange(35) % 16 - 8).astype(ml_dtypes.int4).reshape(5, 7),
    "u2": (np.arange(35) * 3 % 4).astype(ml_dtypes.uint2).reshape(5, 7),
    "f4e2m1fn": np.arange(35, dtype=np.uint8).__mod__(16).view(ml_dtypes.float4_e2m1fn).reshape(5, 7),
    "f6e2m3fn": np.arange(35, dtype=np.uint8).__mod__(64).view(ml_dtypes.float6_e2m3fn).reshape(5, 7),
    "mask": (np.arange(54) % 3 == 0).reshape(6, 9),
}
SUB_BYTE_INDEXES = [np.s_[1:4, 1:7:2], np.s_[-1], np.s_[:, 3], np.s_[::2, -3:], np.s_[..., 5], np.s_[2:2], np.s_[None, 0]]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_sub_byte_and_bool_slices_are_read_by_the_runtime(hurray, tmp_path, framework):
    path = tmp_path / "sub.hurray"
    hurray.numpy.save_file(SUB_BYTE, path)
    lacks = {"pt": {"f4e2m1fn", "f6e2m3fn"}, "jax": {"f6e2m3fn"}}.get(framework, set())
    with hurray.safe_open(path, framework=framework) as f:
        for name, full in SUB_BYTE.items():
            if name in lacks:
                with pytest.raises(TypeError, match=repr(name)):
                    f.get_slice(name)[0]
                continue
            whole = f.get_tensor(name)
            assert _numpy(whole).astype(np.float64).tolist() == full.astype(np.float64).tolist()
            for index in SUB_BYTE_INDEXES:
                part = f.get_slice(name)[index]
                want = whole[index]  # the whole tensor as get_tensor gives it, indexed
                assert part.dtype == want.dtype and tuple(part.shape) == tuple(want.shape), (name, index)
                assert _numpy(part).tobytes() == _numpy(want).tobytes(), (name, index)
                # ... which is NumPy's slicing of the unpacked array.
                assert _numpy(part).astype(np.float64).tolist() == full[index].astype(np.float64).tolist()


def test_tensor_read_slice_packs_from_the_slices_first_element(hurray, tmp_path):
    path = tmp_path / "sub.hurray"
    hurray.numpy.save_file(SUB_BYTE, path)
    f = hurray.open(path)
    part = f["i4"].read_slice([(1, 4, 1), (1, 7, 2)])
    assert (part.dtype, part.shape) == ("i4", (3, 3))
    codes = SUB_BYTE["i4"][1:4, 1:7:2].view(np.uint8).reshape(-1) & 0xF
    assert part.unpacked() == codes.tobytes()
    assert part.tobytes() == bytes((codes[0::2] | np.append(codes[1::2], 0) << 4).astype(np.uint8))
    mask = f["mask"].read_slice([(0, 6, 5), (2, 9, 3)])
    np.testing.assert_array_equal(np.asarray(mask), SUB_BYTE["mask"][0:6:5, 2:9:3])
    with pytest.raises(IndexError, match="one range per dimension"):
        f["i4"].read_slice([(0, 1, 1)])


def test_save_sharded_splits_as_save_pretrained(hurray, tmp_path):
    index = tmp_path / "model.hurray"
    tensors = {name: np.full(1000, i, np.uint8) for i, name in enumerate("abcd")}
    tensors["e"] = np.arange(1000, dtype=np.float32)  # 4000 bytes: a member of its own
    hurray.save_sharded(index, tensors, {"step": "7"}, max_shard_size=2500)
    ck = hurray.open_sharded(index)
    assert [m[0] for m in ck.members] == ["model-00001.hurray", "model-00002.hurray", "model-00003.hurray"]
    assert [ck[n].pieces[0][0] for n in "abcde"] == ["model-00001.hurray"] * 2 + ["model-00002.hurray"] * 2 + [
        "model-00003.hurray"
    ]
    with hurray.safe_open(index, framework="pt") as f:
        assert f.metadata() == {"step": "7"}
        e = f.get_tensor("e")
        assert e.dtype == torch.float32 and e[999].item() == 999.0
        assert f.verify_checksums() is True and f.verify_checksum("c") is True
        e += 1  # writable: its member's copy-on-write map, as for a plain file
        # Checksums are of the bytes this process sees, the write included.
        with pytest.raises(hurray.ChecksumError, match="model-00003.hurray"):
            f.verify_checksums()
    with hurray.safe_open(index, framework="pt") as f:
        assert f.get_tensor("e")[0].item() == 0.0  # the write never reached the member
    np.testing.assert_array_equal(hurray.safe_open(index, framework="np").get_tensor("c"), tensors["c"])


def test_a_whole_tensor_of_a_checkpoint_is_its_member_in_place(hurray, tmp_path):
    index = tmp_path / "model.hurray"
    big = np.arange(1 << 18, dtype=np.float32)
    hurray.save_sharded(index, {"big": big, "small": np.ones(3, np.int16)}, max_shard_size=1 << 20)
    with hurray.safe_open(index, framework="np") as f:
        a = f.get_tensor("big")
        np.testing.assert_array_equal(a, big)
        # The array is the member's map, not an assembled copy: writable
        # (copy-on-write), and a write never reaches the member.
        assert not a.flags.owndata and a.flags.writeable
        a[0] = -1.0
    member = tmp_path / hurray.open_sharded(index)["big"].pieces[0][0]
    assert hurray.open(member)["big"].__array__()[0] == 0.0
    with hurray.safe_open(index, framework="np", read_only=True) as f:
        assert not f.get_tensor("big").flags.writeable


def test_load_file_of_an_index_loads_the_checkpoint(hurray, checkpoint):
    index, w, q = checkpoint
    import hurray.jax
    import hurray.numpy
    import hurray.torch

    arrays = hurray.numpy.load_file(index)
    assert sorted(arrays) == ["b", "q", "w"]
    np.testing.assert_array_equal(arrays["w"], w)
    np.testing.assert_array_equal(arrays["q"].astype(np.int8), q.astype(np.int8))
    tensors = hurray.torch.load_file(index)
    np.testing.assert_array_equal(tensors["w"].numpy(), w)
    np.testing.assert_array_equal(np.asarray(hurray.jax.load_file(index)["b"]), [0.5, 1.5])


def test_chunks_that_do_not_tile_write_no_index(hurray, tmp_path):
    index = tmp_path / "m.hurray"
    w = hurray.ShardedWriter(index)
    w.add_chunk("w", (5, 4), (0, 0), np.zeros((3, 4), np.int16))
    w.add_chunk("w", (5, 4), (2, 0), np.zeros((2, 4), np.int16))
    with pytest.raises(hurray.HurrayError, match="overlaps"):
        w.finish()
    assert not index.exists()
    with pytest.raises(hurray.HurrayError, match="finished"):
        w.finish()


def _flip_row_3(member, w):
    data = bytearray(member.read_bytes())
    at = bytes(data).find(w[3].tobytes())
    assert at > 0
    data[at + 5] ^= 0x10
    member.write_bytes(bytes(data))
    return data


def test_a_corrupt_member_is_caught_by_verify_checksums(hurray, checkpoint):
    index, w, _ = checkpoint
    with hurray.safe_open(index, framework="np") as f:
        assert f.verify_checksums() is True
    member = index.parent / "rank-1.hurray"
    data = _flip_row_3(member, w)
    with hurray.safe_open(index, framework="np") as f:
        with pytest.raises(hurray.MemberMismatchError) as info:
            f.verify_checksums()
        assert "rank-1.hurray" in str(info.value) and "crc32c" in str(info.value)
        assert isinstance(info.value, hurray.ChecksumError)
        # The member's own per-buffer checksum sees the flip too.
        with pytest.raises(hurray.ChecksumError, match='"w"'):
            f.verify_checksum("w")
        assert f.verify_checksum("b") is True
    # Truncated: refused before it is mapped; the other members still read.
    member.write_bytes(bytes(data[:-1]))
    with hurray.safe_open(index, framework="np") as f:
        with pytest.raises(hurray.MemberMismatchError, match="size"):
            f.get_slice("w")[4]
        np.testing.assert_array_equal(f.get_slice("w")[7:], w[7:])


_SAVER = """
import sys, time
from pathlib import Path
import numpy as np
import hurray

index, value, go = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
tensors = {f"layer.{i:02}": np.full((256, 1024), value, np.float32) for i in range(16)}
while not go.exists():
    time.sleep(0.0002)
hurray.save_sharded(index, tensors, max_shard_size=4 << 20, durable=False)
"""


def test_two_processes_saving_one_checkpoint_never_leave_a_mix(hurray, tmp_path):
    """The user's case: two processes call ``save_sharded`` on one path at
    once (a restarted job while the old one still runs). Each round, a plain
    load (no verification) returns one process's values for every tensor,
    the checksums hold, and no file is left that the index does not list."""
    import subprocess
    import sys

    index = tmp_path / "model.hurray"
    for round in range(10):
        go = tmp_path / f"go-{round}"
        values = (2.0 * round + 1, 2.0 * round + 2)
        savers = [
            subprocess.Popen([sys.executable, "-c", _SAVER, str(index), str(v), str(go)]) for v in values
        ]
        go.touch()
        assert [s.wait(timeout=120) for s in savers] == [0, 0], f"round {round}: a save failed"
        with hurray.safe_open(index, framework="np") as f:
            assert len(f.keys()) == 16
            seen = {float(v) for k in f.keys() for v in np.unique(f.get_tensor(k))}
            assert len(seen) == 1 and seen <= set(values), f"round {round}: values {sorted(seen)}"
            assert f.verify_checksums() is True
        with hurray.open_sharded(index) as c:
            listed = {path for path, _, _ in c.members} | {"model.hurray"}
        left = {p.name for p in tmp_path.iterdir() if not p.name.startswith("go-")}
        assert left == listed, f"round {round}: files no index lists: {sorted(left - listed)}"
