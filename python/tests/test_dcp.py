"""PyTorch Distributed Checkpoint (DCP) on Hurray: 2 ranks save DTensors
through ``HurrayStorageWriter`` on the gloo backend, 3 ranks load them
resharded through ``HurrayStorageReader``, and one process loads them into
plain tensors; every value exact. The checkpoint is a Hurray sharded
checkpoint that hurray reads without DCP."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

WORKER = Path(__file__).with_name("dcp_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(phase, ckpt, world, env=None):
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), phase, str(ckpt), str(rank), str(world), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **(env or {})),
        )
        for rank in range(world)
    ]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    if phase == "crash":
        # The coordinator killed itself before the index; the other rank
        # fails or finishes, either way after writing its member.
        assert procs[0].returncode == -signal.SIGKILL, outs[0]
        return [out for out, _ in outs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"{phase} rank {rank} failed:\n{out}\n{err}"
    return [out for out, _ in outs]


def test_two_ranks_save_three_load_resharded_and_one_loads_plain(hurray, tmp_path):
    import hurray.torch
    from dcp_worker import TENSORS, expected

    ckpt = tmp_path / "ckpt"
    run("save", ckpt, 2)
    # The checkpoint: one member per saving rank, and the index, no pickle.
    assert sorted(p.name for p in ckpt.iterdir()) == ["checkpoint.hurray", "rank-00000.hurray", "rank-00001.hurray"]
    with hurray.open_sharded(ckpt / "checkpoint.hurray") as f:
        assert sorted(f.keys()) == sorted(TENSORS)
        f.verify_members()
        assert f.verify_checksums()
        w1 = f["layer.w1"]
        assert [(p[2], p[3]) for p in w1.pieces] == [([0, 0], [4, 5]), ([4, 0], [3, 5])]
    # Whole tensors of it through the safetensors-like verbs, without DCP.
    loaded = hurray.torch.load_file(ckpt / "checkpoint.hurray")
    for name in TENSORS:
        assert torch.equal(loaded[name], expected(name)), name

    assert all("ok" in out for out in run("load", ckpt, 3))
    assert run("plain", ckpt, 1) == ["plain ok\n"]


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_non_tensor_entries_are_refused(hurray, tmp_path):
    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageWriter

    with pytest.raises(dcp.api.CheckpointException) as refused:
        dcp.save({"w": torch.ones(2), "note": {"epoch": 3}}, storage_writer=HurrayStorageWriter(tmp_path / "c"))
    ((cause, _traceback),) = refused.value.failures.values()
    assert isinstance(cause, TypeError) and "'note.epoch' is not a tensor" in str(cause)
    # Refused while planning: no member, no index.
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_urls_are_taken_as_urls_never_as_paths(hurray, tmp_path, monkeypatch):
    """`s3://bucket/run` once became a local directory `s3:`. A URL is an
    object store folder; one that takes no uploads (HTTP) is refused for a
    save, and storage options given with a local directory are refused."""
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    monkeypatch.chdir(tmp_path)
    for url in ("s3://bucket/run/step_5", "gs://b/c", "az://a/b"):
        for storage in (HurrayStorageWriter, HurrayStorageReader):
            assert storage(url).path == url
            assert storage.validate_checkpoint_id(url)
    for url in ("https://host/ckpt", "http://host/ckpt"):
        with pytest.raises(ValueError, match="takes no uploads"):
            HurrayStorageWriter(url)
        assert not HurrayStorageWriter.validate_checkpoint_id(url)
        assert HurrayStorageReader.validate_checkpoint_id(url)
        writer = HurrayStorageWriter(tmp_path / "local")
        with pytest.raises(ValueError, match="takes no uploads"):
            writer.reset(url)
    for storage in (HurrayStorageWriter, HurrayStorageReader):
        with pytest.raises(ValueError, match="storage_options apply to URLs"):
            storage(tmp_path / "local", storage_options={"aws_region": "x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_two_ranks_save_to_s3_three_load_resharded(hurray, s3):
    """The same checkpoint in an object store: members as multipart uploads,
    the index last; loading reads the ranges each rank needs."""
    from conftest import s3_env
    from dcp_worker import TENSORS, expected

    root, options = s3
    (root / "dcp").mkdir(exist_ok=True)
    url = "s3://dcp/run/step_5"
    env = s3_env(options)
    run("save", url, 2, env)
    folder = root / "dcp" / "run" / "step_5"
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.hurray", "rank-00000.hurray", "rank-00001.hurray"]
    # The objects are files of the server: every member and checksum holds.
    from deploy import cli

    check = cli("validate", "--checksums", folder / "checkpoint.hurray")
    assert check.returncode == 0, check.stdout + check.stderr
    with hurray.open_sharded(folder / "checkpoint.hurray") as f:
        assert sorted(f.keys()) == sorted(TENSORS)
        f.verify_members()
        assert f.verify_checksums()
    with hurray.safe_open(f"{url}/checkpoint.hurray", framework="pt", storage_options=options) as f:
        for name in TENSORS:
            assert torch.equal(f.get_tensor(name), expected(name)), name

    assert all("ok" in out for out in run("load", url, 3, env))
    assert run("plain", url, 1, env) == ["plain ok\n"]


def test_a_save_killed_before_its_index_leaves_no_checkpoint_and_the_last_one_whole(hurray, s3):
    from conftest import s3_env

    root, options = s3
    (root / "dcp").mkdir(exist_ok=True)
    env = s3_env(options)
    # Into a new folder: the members went up, no index did; nothing opens.
    fresh = "s3://dcp/killed/step_1"
    run("crash", fresh, 2, env)
    with pytest.raises(Exception, match="killed/step_1/checkpoint.hurray"):
        hurray.open_sharded_remote(f"{fresh}/checkpoint.hurray", options)
    assert not (root / "dcp" / "killed" / "step_1" / "checkpoint.hurray").exists()

    # Over a checkpoint already there: it stays whole, with its own values.
    url = "s3://dcp/killed/step_2"
    run("save", url, 2, env)
    run("crash", url, 2, env)
    folder = root / "dcp" / "killed" / "step_2"
    with hurray.open_sharded(folder / "checkpoint.hurray") as f:
        assert [m[0] for m in f.members] == ["rank-00000.hurray", "rank-00001.hurray"]
        assert f.verify_checksums()
    assert run("plain", url, 1, env) == ["plain ok\n"]
    # The killed save's members are beside it, under names no index lists.
    assert {"rank-00000.1.hurray", "rank-00001.1.hurray"} <= {p.name for p in folder.iterdir()}


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_async_save_writes_the_same_checkpoint(hurray, tmp_path):
    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    state = {"w": torch.arange(12.0).reshape(3, 4), "b": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)}
    dcp.async_save(state, storage_writer=HurrayStorageWriter(tmp_path / "c")).result()
    out = {"w": torch.zeros(3, 4), "b": torch.zeros(2, dtype=torch.bfloat16)}
    dcp.load(out, storage_reader=HurrayStorageReader(tmp_path / "c"))
    for name, t in state.items():
        assert torch.equal(out[name], t), name
    with hurray.open_sharded(tmp_path / "c" / "checkpoint.hurray") as f:
        assert f.verify_checksums()


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_nested_state_dicts_load_back_nested(hurray, tmp_path):
    # DCP flattens nested state dicts; the planner's map back travels in the
    # index (as JSON), so a load that starts from nothing gets the nesting back.
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    state = {"model": {"w": torch.arange(6.0).reshape(2, 3), "layers": [torch.ones(2), torch.zeros(3)]}}
    dcp.save(state, storage_writer=HurrayStorageWriter(tmp_path / "c"))
    out = _load_state_dict_from_keys(storage_reader=HurrayStorageReader(tmp_path / "c"))
    assert torch.equal(out["model"]["w"], state["model"]["w"])
    assert [t.tolist() for t in out["model"]["layers"]] == [[1.0, 1.0], [0.0, 0.0, 0.0]]
    # Chosen keys only.
    some = _load_state_dict_from_keys(keys={"model.w"}, storage_reader=HurrayStorageReader(tmp_path / "c"))
    assert list(some) == ["model"] and list(some["model"]) == ["w"]


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_saving_without_collectives_is_refused(hurray, tmp_path):
    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageWriter

    with pytest.raises(Exception) as refused:
        dcp.save({"w": torch.ones(2)}, storage_writer=HurrayStorageWriter(tmp_path / "c"), use_collectives=False)
    assert "use_collectives=True" in repr(refused.value) or any(
        "use_collectives=True" in str(f[0]) for f in getattr(refused.value, "failures", {}).values()
    )
