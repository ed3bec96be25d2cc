"""Peak host memory of saving a JAX PyTree with Orbax: Hurray's handler
(``hurray.jax.orbax``) against Orbax's own default
(``StandardCheckpointHandler``, OCDBT and tensorstore), each in a fresh
process, in one run.

The tree: ``--arrays`` f32 arrays of ``--mib`` MiB each on 2 CPU devices,
each array sharded over both (so a process's largest shard is half an
array), of random bits, made before the measurement starts. The figure is the peak of the
process's resident memory during the save (``VmHWM``, reset through
``/proc/self/clear_refs`` just before) minus its resident memory then:
what saving added; and the save's time, until it is complete. A synchronous save (``ocp.Checkpointer``) and an
asynchronous one (``CheckpointManager``, waited for) are measured for each
handler. Every sample starts after ``--settle`` seconds of quiet (on a
virtual machine that hands freed memory back to its host, a save timed
right after another measures their order: see ``settle()`` in
``peers.py``), and the order of the four rotates from sample to sample.
Run::

    .tools/py/bin/python python/bench/orbax_memory.py --mib 256 --arrays 4
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def child(handler, mode, mib, arrays, directory):
    import jax

    jax.config.update("jax_num_cpu_devices", 2)
    import numpy as np
    import orbax.checkpoint as ocp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()), ("x",))
    rows = mib * 2**20 // 4 // 1024
    sharding = NamedSharding(mesh, PartitionSpec("x", None))
    rng = np.random.default_rng(0)
    # Random bits: Orbax's default compresses (zstd), which constant arrays
    # would turn into a measure of nothing.
    tree = {
        f"w{i}": jax.make_array_from_callback(
            (rows, 1024), sharding,
            lambda idx: rng.integers(0, 2**32, (rows // 2, 1024), dtype=np.uint32).view(np.float32),
        )
        for i in range(arrays)
    }
    jax.block_until_ready(tree)
    if handler == "hurray":
        from hurray.jax.orbax import HurrayCheckpointHandler, HurraySave

        save_args, make = HurraySave(tree), HurrayCheckpointHandler
    else:
        save_args, make = ocp.args.StandardSave(tree), ocp.StandardCheckpointHandler
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before = status("VmRSS")
    import time

    start = time.perf_counter()
    if mode == "sync":
        ocp.Checkpointer(make()).save(os.path.join(directory, "ckpt"), args=save_args)
    else:
        options = ocp.CheckpointManagerOptions(enable_async_checkpointing=True)
        with ocp.CheckpointManager(directory, options=options) as mngr:
            mngr.save(1, args=save_args)
            mngr.wait_until_finished()
    seconds = time.perf_counter() - start
    peak = status("VmHWM")
    print(json.dumps({"seconds": seconds, "added": peak - before, "bytes": arrays * rows * 1024 * 4, "shard": rows // 2 * 1024 * 4}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, default=256, help="MiB per array")
    p.add_argument("--arrays", type=int, default=4)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--dir", default=None)
    p.add_argument("--settle", type=float, default=4.0, help="seconds of quiet before each sample")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        handler, mode, directory = args.child
        child(handler, mode, args.mib, args.arrays, directory)
        return
    import time

    results = {}
    cases = [(h, m) for h in ("hurray", "orbax") for m in ("sync", "async")]
    for sample in range(args.samples):
        for handler, mode in cases[sample % len(cases):] + cases[:sample % len(cases)]:
            os.sync()
            time.sleep(args.settle)
            directory = tempfile.mkdtemp(prefix="orbax-memory-", dir=args.dir)
            try:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", handler, mode, directory,
                     "--mib", str(args.mib), "--arrays", str(args.arrays)],
                    check=True, capture_output=True, text=True,
                    env=dict(os.environ, JAX_PLATFORMS="cpu"),
                ).stdout
            finally:
                shutil.rmtree(directory, ignore_errors=True)
            r = json.loads(out.strip().splitlines()[-1])
            results.setdefault((handler, mode), []).append(r)
    first = next(iter(results.values()))[0]
    print(f"{args.arrays} arrays x {args.mib} MiB = {first['bytes'] / 2**20:.0f} MiB; "
          f"largest shard {first['shard'] / 2**20:.0f} MiB; median of {args.samples}")
    print(f"{'handler':8} {'save':6} {'added MiB':>10} {'/ array bytes':>14} {'/ largest shard':>16} {'seconds':>8}")
    for handler, mode in cases:
        rs = results[(handler, mode)]
        added = sorted(r["added"] for r in rs)[len(rs) // 2]
        seconds = sorted(r["seconds"] for r in rs)[len(rs) // 2]
        every = " ".join(f"{r['seconds']:.2f}" for r in rs)
        print(f"{handler:8} {mode:6} {added / 2**20:10.1f} {added / first['bytes']:14.2f} "
              f"{added / first['shard']:16.2f} {seconds:8.2f}  ({every})")

if __name__ == "__main__":
    main()
