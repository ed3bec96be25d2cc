"""Saving over earlier saves from Python never loses them: a sharded save
writes beside the checkpoint it replaces and removes the old members only
once its index is in place; a failed save leaves the old checkpoint whole and
nothing of its own; on a full disk (an 8 MiB tmpfs in a private mount
namespace) ``save_file``, ``save_sharded`` and a DCP save each fail with
ENOSPC and the earlier save reads whole (faults_worker.py)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORKER = Path(__file__).with_name("faults_worker.py")


def _generation(hurray, index):
    """The one generation every byte of the checkpoint at ``index`` holds."""
    import hurray.numpy

    with hurray.open_sharded(index) as f:
        f.verify_members()
    loaded = hurray.numpy.load_file(index)
    values = {int(v) for a in loaded.values() for v in np.unique(a)}
    assert len(values) == 1, f"a mix of saves: {values}"
    return values.pop()


def _save(hurray, index, generation, count=3):
    hurray.save_sharded(
        index, {f"t{i}": np.full(100, generation, np.uint8) for i in range(count)}, max_shard_size=100
    )


def test_resaving_alternates_member_names_and_leaves_no_garbage(hurray, tmp_path):
    index = tmp_path / "model.hurray"
    _save(hurray, index, 1)
    assert sorted(os.listdir(tmp_path)) == ["model-00001.hurray", "model-00002.hurray", "model-00003.hurray", "model.hurray"]
    _save(hurray, index, 2)
    assert sorted(os.listdir(tmp_path)) == [
        "model-00001.1.hurray",
        "model-00002.1.hurray",
        "model-00003.1.hurray",
        "model.hurray",
    ]
    assert _generation(hurray, index) == 2
    _save(hurray, index, 3, count=1)
    assert sorted(os.listdir(tmp_path)) == ["model-00001.hurray", "model.hurray"]


def test_a_save_that_raises_leaves_the_old_checkpoint_and_nothing_of_its_own(hurray, tmp_path):
    index = tmp_path / "model.hurray"
    _save(hurray, index, 1)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ZeroDivisionError):
        with hurray.ShardedWriter(index, max_shard_size=100) as w:
            w.add("t0", np.full(100, 2, np.uint8))
            w.add("t1", np.full(100, 2, np.uint8))
            1 / 0
    assert sorted(os.listdir(tmp_path)) == before
    assert _generation(hurray, index) == 1
    # A tensor the writer refuses midway: the same.
    with pytest.raises(Exception):
        hurray.save_sharded(index, {"t0": np.full(100, 2, np.uint8), "t1": object()}, max_shard_size=100)
    assert sorted(os.listdir(tmp_path)) == before
    assert _generation(hurray, index) == 1


def test_a_dcp_save_over_an_earlier_one_writes_beside_it(hurray, tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    ckpt = tmp_path / "c"
    for generation, members in [(1, ["rank-00000.hurray"]), (2, ["rank-00000.1.hurray"]), (3, ["rank-00000.hurray"])]:
        with pytest.warns(UserWarning, match="torch.distributed is disabled"):
            dcp.save({"w": torch.full((4,), float(generation))}, storage_writer=HurrayStorageWriter(ckpt))
        assert sorted(os.listdir(ckpt)) == ["checkpoint.hurray", *members]
        out = {"w": torch.zeros(4)}
        with pytest.warns(UserWarning, match="torch.distributed is disabled"):
            dcp.load(out, storage_reader=HurrayStorageReader(ckpt))
        assert out["w"].tolist() == [float(generation)] * 4


def _unshare_prefix():
    root = os.geteuid() == 0
    return ["unshare", "--mount" if root else "--map-root-user", "--mount", "--propagation", "private"]


def test_a_full_disk_fails_each_save_and_loses_nothing(hurray, tmp_path):
    dcp = []
    try:
        import torch  # noqa: F401

        dcp = ["dcp"]
    except ImportError:
        pass
    script = 'mount -t tmpfs -o size=8m tmpfs "$1" && shift && exec "$@"'
    cmd = [*_unshare_prefix(), "sh", "-c", script, "sh", str(tmp_path), sys.executable, str(WORKER), str(tmp_path), *dcp]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    expected = ["save_file ok", "save_sharded ok", *(["dcp ok"] if dcp else [])]
    assert result.stdout.split("\n")[:-1] == expected, result.stdout
