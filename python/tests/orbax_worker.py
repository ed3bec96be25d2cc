"""One JAX process of the Orbax test (test_orbax.py): saves a PyTree of
sharded arrays with ``ocp.CheckpointManager`` through
``hurray.jax.orbax``, or restores it onto another mesh, and checks every
value exactly.

    python orbax_worker.py save|restore|crash ROOT STEPS

ROOT is a directory or an object store URL (credentials, for Orbax's s3fs
and for Hurray, from the environment).

Run by the test once per process, with the environment it sets:
HURRAY_JAX_COORDINATOR (host:port), HURRAY_JAX_PROCESSES, HURRAY_JAX_PROCESS,
HURRAY_JAX_DEVICES (CPU devices of this process). ``save`` saves the steps
(comma-separated) asynchronously, keeping the last 2; ``restore`` restores
the last step resharded; ``crash`` saves the step and kills this process
(SIGKILL) while its member is being written.
"""

import os
import signal
import sys

import numpy as np


def init():
    import jax

    jax.config.update("jax_num_cpu_devices", int(os.environ["HURRAY_JAX_DEVICES"]))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    processes = int(os.environ["HURRAY_JAX_PROCESSES"])
    if processes > 1:
        jax.distributed.initialize(
            coordinator_address=os.environ["HURRAY_JAX_COORDINATOR"],
            num_processes=processes,
            process_id=int(os.environ["HURRAY_JAX_PROCESS"]),
            initialization_timeout=120,
        )
    return jax


def expected(step):
    """The tree saved at ``step`` as NumPy arrays (every process builds the same)."""
    import ml_dtypes

    rng = np.random.default_rng(step)
    return {
        "params": {
            "replicated": rng.standard_normal((8, 4)).astype(np.float32),
            "rows": rng.standard_normal((8, 6)).astype(ml_dtypes.bfloat16),
            "cols": rng.standard_normal((4, 8)).astype(np.float32),
            "blocks": rng.standard_normal((8, 8)).astype(np.float32),
        },
        "scalar": np.float32(step * 0.5),
        "empty": np.zeros((4, 0), np.float32),
        "host": np.arange(5, dtype=np.int64) * step,
    }


# How each leaf is laid out when saved, over a (data, model) mesh of 2
# processes x 2 devices: replicated, rows over processes, columns within a
# process (replicated over processes), blocks over both, and a host array.
SAVED = {
    "params.replicated": (),
    "params.rows": ("data", None),
    "params.cols": (None, "model"),
    "params.blocks": ("data", "model"),
    "scalar": (),
    "empty": ("data", None),
    "host": None,
}

# ...and on restore, over one axis "x" of whatever devices there are.
RESTORED = {
    "params.replicated": ("x", None),
    "params.rows": (None, "x"),
    "params.cols": ("x", None),
    "params.blocks": (None, "x"),
    "scalar": (),
    "empty": (),
    "host": None,
}


def tree_of(jax, values, layout, mesh, as_struct):
    from jax.sharding import NamedSharding, PartitionSpec
    from hurray.jax.orbax import leaf_names

    names = dict(leaf_names(values))
    leaves = []
    for name, value in names.items():
        spec = layout[name]
        if spec is None:
            leaves.append(value)
            continue
        sharding = NamedSharding(mesh, PartitionSpec(*spec))
        if as_struct:
            leaves.append(jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding))
        else:
            leaves.append(jax.make_array_from_callback(value.shape, sharding, lambda i, v=value: v[i]))
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(values), leaves)


def check(jax, restored, want):
    from hurray.jax.orbax import leaf_names

    got = dict(leaf_names(restored))
    for name, value in leaf_names(want):
        leaf = got[name]
        if isinstance(leaf, jax.Array):
            # This process's shards, each against the same region of the source.
            for shard in leaf.addressable_shards:
                part = np.asarray(shard.data)
                assert part.dtype == value.dtype, (name, part.dtype)
                source = np.asarray(value)[shard.index]
                assert part.shape == source.shape, (name, part.shape, source.shape)
                # Bit for bit (bf16 included): as bytes.
                np.testing.assert_array_equal(part.reshape(-1).view(np.uint8), source.reshape(-1).view(np.uint8))
        else:
            assert np.asarray(leaf).dtype == np.asarray(value).dtype, name
            np.testing.assert_array_equal(np.asarray(leaf), value)


def main():
    phase, root, steps = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")]
    jax = init()
    import orbax.checkpoint as ocp
    from jax.sharding import Mesh
    from hurray.jax.orbax import HurrayRestore, HurraySave

    devices = np.array(jax.devices())
    atomicity = {}
    if "://" in root:
        # In an object store a step is committed by its commit file, not by
        # renaming a folder (which s3fs would do by copying every object).
        atomicity["temporary_path_class"] = ocp.path.atomicity.CommitFileTemporaryPath
    options = ocp.CheckpointManagerOptions(max_to_keep=2, enable_async_checkpointing=True, **atomicity)
    with ocp.CheckpointManager(root, options=options) as mngr:
        if phase in ("save", "crash"):
            mesh = Mesh(devices.reshape(2, -1), ("data", "model"))
            for step in steps:
                tree = tree_of(jax, expected(step), SAVED, mesh, as_struct=False)
                if phase == "crash":
                    import hurray.jax.orbax as handler

                    write_member = handler._hurray.write_member

                    def killed(location, items, **kwargs):
                        # Half of the member handed over, then the process dies.
                        next(iter(items))
                        os.kill(os.getpid(), signal.SIGKILL)

                    handler._hurray.write_member = killed if jax.process_index() == 1 else write_member
                mngr.save(step, args=HurraySave(tree))
            mngr.wait_until_finished()
            assert mngr.all_steps() == steps[-2:], mngr.all_steps()
        else:
            mesh = Mesh(devices, ("x",))
            step = mngr.latest_step()
            assert step == steps[-1], (step, mngr.all_steps())
            want = expected(step)
            target = tree_of(jax, want, RESTORED, mesh, as_struct=True)
            restored = mngr.restore(step, args=HurrayRestore(target))
            check(jax, restored, want)
            from hurray.jax.orbax import leaf_names

            wanted = dict(leaf_names(target))
            for name, leaf in leaf_names(restored):
                if RESTORED[name] is not None:
                    assert leaf.sharding == wanted[name].sharding, name
    print(f"{phase} process {jax.process_index()} of {jax.process_count()} ok", flush=True)
    if jax.process_count() > 1:
        # Past every check: leave without the teardown that gloo's threads
        # can trip over while peers exit.
        os._exit(0)


if __name__ == "__main__":
    main()
