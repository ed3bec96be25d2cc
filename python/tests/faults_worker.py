"""The child of test_faults.py: run on a small tmpfs (in a private mount
namespace), saves over earlier saves until the disk is full, through
``hurray.numpy.save_file``, ``hurray.save_sharded`` and a DCP save, and
checks after each failure that the earlier save reads whole and that nothing
of the failed one is left.

    python faults_worker.py DIR      (DIR is the tmpfs)
"""

import os
import sys
import warnings
from pathlib import Path

import numpy as np

import hurray
import hurray.numpy

MIB = 1 << 20


def arrays(generation, count, nbytes):
    return {f"t{i}": np.full(nbytes, generation, np.uint8) for i in range(count)}


def check_generation(loaded, generation, count):
    assert sorted(loaded) == [f"t{i}" for i in range(count)], sorted(loaded)
    for name, a in loaded.items():
        assert (np.asarray(a) == generation).all(), f"{name}: a byte of another save"


def causes(e):
    """``e`` and, for DCP's CheckpointException, each rank's exception."""
    return [e, *(failure[0] for failure in getattr(e, "failures", {}).values())]


def out_of_space(e):
    return any("No space left on device" in str(c) for c in causes(e))


def expect_out_of_space(save):
    try:
        save()
    # DCP's CheckpointException is a BaseException.
    except BaseException as e:  # noqa: BLE001 - checked right below
        assert out_of_space(e), repr(e)
        return e
    raise AssertionError("the save fitted: the disk is larger than the test assumes")


def single_file(root):
    path = root / "single.hurray"
    hurray.numpy.save_file(arrays(1, 2, MIB), path)
    e = expect_out_of_space(lambda: hurray.numpy.save_file(arrays(2, 12, MIB), path))
    assert str(path) in str(e), f"the error names the file: {e}"
    check_generation(hurray.numpy.load_file(path), 1, 2)
    assert sorted(os.listdir(root)) == ["single.hurray"], os.listdir(root)
    path.unlink()
    print("save_file ok", flush=True)


def sharded(root):
    ckpt = root / "sharded"
    ckpt.mkdir()
    index = ckpt / "model.hurray"
    hurray.save_sharded(index, arrays(1, 3, MIB), max_shard_size=MIB)
    before = sorted(os.listdir(ckpt))
    e = expect_out_of_space(lambda: hurray.save_sharded(index, arrays(2, 3, 3 * MIB), max_shard_size=3 * MIB))
    assert "model-00002.1.hurray" in str(e), f"the error names the member: {e}"
    with hurray.open_sharded(index) as f:
        f.verify_members()
    check_generation(hurray.numpy.load_file(index), 1, 3)
    assert sorted(os.listdir(ckpt)) == before, os.listdir(ckpt)
    # With room again, the next save replaces it.
    hurray.save_sharded(index, arrays(3, 2, 2 * MIB), max_shard_size=2 * MIB)
    check_generation(hurray.numpy.load_file(index), 3, 2)
    for p in ckpt.iterdir():
        p.unlink()
    ckpt.rmdir()
    print("save_sharded ok", flush=True)


def dcp(root):
    import torch
    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    warnings.filterwarnings("ignore", message="torch.distributed is disabled")
    ckpt = root / "dcp"

    def state(generation, count, nbytes):
        return {name: torch.from_numpy(a) for name, a in arrays(generation, count, nbytes).items()}

    dcp.save(state(1, 2, MIB), storage_writer=HurrayStorageWriter(ckpt))
    before = sorted(os.listdir(ckpt))
    e = expect_out_of_space(lambda: dcp.save(state(2, 3, 3 * MIB), storage_writer=HurrayStorageWriter(ckpt)))
    assert any("rank-00000.1.hurray" in str(c) for c in causes(e)), f"the error names the member: {e!r}"
    out = state(0, 2, MIB)
    dcp.load(out, storage_reader=HurrayStorageReader(ckpt))
    check_generation({k: v.numpy() for k, v in out.items()}, 1, 2)
    with hurray.open_sharded(ckpt / "checkpoint.hurray") as f:
        f.verify_members()
    assert sorted(os.listdir(ckpt)) == before, os.listdir(ckpt)
    print("dcp ok", flush=True)


def main():
    root = Path(sys.argv[1])
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    assert any(line.split()[:3] == ["tmpfs", str(root), "tmpfs"] for line in mounts), "not on a tmpfs"
    single_file(root)
    sharded(root)
    if sys.argv[2:] == ["dcp"]:
        dcp(root)


if __name__ == "__main__":
    main()
