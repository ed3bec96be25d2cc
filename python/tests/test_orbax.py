"""Orbax on Hurray (hurray.jax.orbax): two JAX processes on this machine
(CPU devices, gloo collectives) save a PyTree sharded over a 2-process mesh
with ocp.CheckpointManager (async, keeping the last 2 steps); one process
restores it onto a different mesh, and two processes restore it resharded.
Every value exact; every checkpoint passes its member and buffer checksums."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("orbax.checkpoint")

WORKER = Path(__file__).with_name("orbax_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(phase, root, steps, processes, devices, env=None, expect_ok=True):
    port = free_port()
    procs = []
    for process in range(processes):
        child_env = dict(
            os.environ,
            JAX_PLATFORMS="cpu",
            HURRAY_JAX_COORDINATOR=f"127.0.0.1:{port}",
            HURRAY_JAX_PROCESSES=str(processes),
            HURRAY_JAX_PROCESS=str(process),
            HURRAY_JAX_DEVICES=str(devices),
            **(env or {}),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), phase, str(root), ",".join(map(str, steps))],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=child_env,
            )
        )
    try:
        if not expect_ok:
            # The last process kills itself; the others would wait for it at
            # Orbax's next barrier until JAX's heartbeat gave up on it.
            procs[-1].wait(timeout=300)
            for p in procs[:-1]:
                p.kill()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    if expect_ok:
        for process, (p, (out, err)) in enumerate(zip(procs, outs)):
            assert p.returncode == 0, f"{phase} process {process} failed:\n{out}\n{err[-4000:]}"
    return procs, outs


def check_checkpoint(hurray, folder):
    """The index, its members and every buffer's checksum (what `hurray
    validate --checksums` checks), and replicated arrays written once."""
    from deploy import cli

    check = cli("validate", "--checksums", folder / "checkpoint.hurray")
    assert check.returncode == 0, check.stdout + check.stderr
    with hurray.open_sharded(folder / "checkpoint.hurray") as f:
        f.verify_members()
        assert f.verify_checksums()
        members = [m[0] for m in f.members]
        assert members == ["process-00000.hurray", "process-00001.hurray"]
        pieces = {name: [(p[0], p[2], p[3]) for p in f[name].pieces] for name in f.keys()}
    assert pieces["params.replicated"] == [("process-00000.hurray", [0, 0], [8, 4])]
    assert pieces["params.rows"] == [("process-00000.hurray", [0, 0], [4, 6]), ("process-00001.hurray", [4, 0], [4, 6])]
    # Columns within a process, replicated over processes: process 0 only.
    assert pieces["params.cols"] == [("process-00000.hurray", [0, 0], [4, 4]), ("process-00000.hurray", [0, 4], [4, 4])]
    assert len(pieces["params.blocks"]) == 4
    assert pieces["host"] == [("process-00000.hurray", [0], [5])]


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path):
    """``(root as the workers get it, its folder on this disk, environment)``:
    a directory, or a folder of the tests' S3 server (whose objects are
    files under its root)."""
    if request.param == "local":
        return str(tmp_path / "ckpt"), tmp_path / "ckpt", {}
    from conftest import s3_env

    root, options = request.getfixturevalue("s3")
    bucket = f"orbax-{request.node.name.split('[')[0][-20:].replace('_', '-')}"
    (root / bucket).mkdir(exist_ok=True)
    env = dict(s3_env(options), AWS_ENDPOINT_URL=options["aws_endpoint"], AWS_DEFAULT_REGION="us-east-1")
    return f"s3://{bucket}/run", root / bucket / "run", env


def steps_in(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.isdigit())


def test_two_processes_save_async_keep_two_and_restore_on_other_meshes(hurray, where):
    root, folder, env = where
    run("save", root, [1, 2, 3], processes=2, devices=2, env=env)
    # Keeping the last 2 steps.
    assert steps_in(folder) == ["2", "3"]
    for step in ("2", "3"):
        check_checkpoint(hurray, folder / step / "default")

    # One process, two devices: another mesh.
    run("restore", root, [1, 2, 3], processes=1, devices=2, env=env)
    # Two processes, one device each: resharded over processes.
    run("restore", root, [1, 2, 3], processes=2, devices=1, env=env)


def test_a_save_killed_half_way_leaves_no_checkpoint_at_its_step(hurray, where):
    root, folder, env = where
    run("save", root, [1], processes=2, devices=2, env=env)
    procs, outs = run("crash", root, [2], processes=2, devices=2, env=env, expect_ok=False)
    assert procs[1].returncode == -9, outs[1]
    # Step 2 never became a checkpoint: no index anywhere under what it
    # started (a folder on disk, objects in the store), and Orbax lists only
    # step 1, which restores whole.
    assert not [p for d in folder.glob("2*") for p in d.rglob("checkpoint.hurray")]
    check_checkpoint(hurray, folder / "1" / "default")
    run("restore", root, [1], processes=1, devices=2, env=env)


def test_checkpointer_saves_synchronously_and_restores_with_or_without_a_target(hurray, tmp_path):
    """`ocp.Checkpointer` (the synchronous path, which writes each shard from
    its device buffer), in this process: restored into a target, into a
    dict by leaf name without one, described by `metadata`; a target that
    disagrees with the checkpoint is refused naming the leaf."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np
    import orbax.checkpoint as ocp
    from hurray.jax.orbax import HurrayCheckpointHandler, HurrayRestore, HurraySave

    tree = {
        "w": jnp.arange(12, dtype=jnp.float32).reshape(3, 4),
        "b": jnp.asarray(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)),
        "step": 7,
        "nested": [np.zeros((2, 0), np.int8), jnp.float32(0.25)],
    }
    path = tmp_path / "ckpt"
    ocp.Checkpointer(HurrayCheckpointHandler()).save(path, args=HurraySave(tree))
    with hurray.open_sharded(path / "checkpoint.hurray") as f:
        assert sorted(f.keys()) == ["b", "nested.0", "nested.1", "step", "w"]
        assert f.verify_checksums()

    target = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype), tree)
    restored = ocp.Checkpointer(HurrayCheckpointHandler()).restore(path, args=HurrayRestore(target))
    assert jax.tree_util.tree_structure(restored) == jax.tree_util.tree_structure(tree)
    for got, want in zip(jax.tree_util.tree_leaves(restored), jax.tree_util.tree_leaves(tree)):
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got).reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))

    by_name = ocp.Checkpointer(HurrayCheckpointHandler()).restore(path, args=HurrayRestore())
    np.testing.assert_array_equal(by_name["w"], np.arange(12, dtype=np.float32).reshape(3, 4))
    assert by_name["step"] == 7
    meta = HurrayCheckpointHandler().metadata(path)
    assert meta["b"].shape == (2,) and meta["b"].dtype == ml_dtypes.bfloat16

    wrong = dict(target, w=jax.ShapeDtypeStruct((4, 3), np.float32))
    with pytest.raises(ValueError, match="leaf 'w'"):
        ocp.Checkpointer(HurrayCheckpointHandler()).restore(path, args=HurrayRestore(wrong))
