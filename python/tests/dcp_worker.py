"""One process of the DCP test (test_dcp.py): saves or loads a state dict of
DTensors with torch.distributed.checkpoint through hurray.torch.dcp, on the
gloo backend, and checks every value exactly.

    python dcp_worker.py save|load|plain|crash CKPT RANK WORLD PORT

CKPT is a directory or an object store URL (credentials from the
environment). ``crash`` saves other values and kills the coordinator with
SIGKILL once every member is written, before the index: what a save killed
half way leaves.
"""

import datetime
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

# name -> (shape, dtype): uneven shards for 2 and 3 ranks, a bf16 tensor, a
# scalar, an empty tensor.
TENSORS = {
    "layer.w1": ((7, 5), torch.float32),
    "layer.w2": ((4, 9), torch.bfloat16),
    "layer.b": ((5,), torch.float32),
    "step": ((), torch.int64),
    "pruned": ((0, 4), torch.float32),
}


def expected(name):
    shape, dtype = TENSORS[name]
    n = 1
    for d in shape:
        n *= d
    base = sum(map(ord, name))
    values = (torch.arange(n, dtype=torch.float64) * 0.25 - base).reshape(shape)
    return values.to(dtype)


def saved(phase, name):
    """What ``phase`` saves: the expected values, or others for ``crash``."""
    return expected(name) + 1 if phase == "crash" else expected(name)


def placements(phase, name):
    from torch.distributed.tensor import Replicate, Shard

    shape, _ = TENSORS[name]
    if len(shape) < 2:
        return [Replicate()]
    # Saved row-sharded; loaded column-sharded (w1) or row-sharded on 3 ranks.
    if phase == "load" and name == "layer.w1":
        return [Shard(1)]
    return [Shard(0)]


def main():
    phase, ckpt, rank, world, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    if phase == "plain":
        # One process, no process group: a plain module's state dict.
        state = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in TENSORS.items()}
        dcp.load(state, storage_reader=HurrayStorageReader(ckpt))
        for name, t in state.items():
            assert torch.equal(t, expected(name)), (name, t, expected(name))
        print("plain ok")
        return
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        # A peer killed on purpose (crash) must not leave the others waiting long.
        timeout=datetime.timedelta(seconds=60),
    )
    mesh = init_device_mesh("cpu", (world,))
    if phase in ("save", "crash"):
        writer = HurrayStorageWriter(ckpt)
        if phase == "crash":

            def killed(*args, **kwargs):
                os.kill(os.getpid(), signal.SIGKILL)

            writer.finish = killed
        state = {n: distribute_tensor(saved(phase, n), mesh, placements(phase, n)) for n in TENSORS}
        dcp.save(state, storage_writer=writer)
    else:
        state = {
            n: distribute_tensor(torch.zeros(shape, dtype=dtype), mesh, placements(phase, n))
            for n, (shape, dtype) in TENSORS.items()
        }
        dcp.load(state, storage_reader=HurrayStorageReader(ckpt))
        for name, t in state.items():
            full = t.full_tensor()
            assert torch.equal(full, expected(name)), (name, full, expected(name))
            # This rank's own shard, checked as it holds it.
            assert torch.equal(t.to_local(), distribute_tensor(expected(name), mesh, placements(phase, name)).to_local())
    dist.barrier()
    dist.destroy_process_group()
    print(f"{phase} rank {rank} ok", flush=True)
    # Every check above has passed. Leave without running interpreter and
    # C++ static teardown: gloo's background threads can still be joinable
    # there while the peers exit, and std::terminate then aborts a rank that
    # finished its work (seen once in CI as "terminate called without an
    # active exception" after "load rank 2 ok").
    os._exit(0)


if __name__ == "__main__":
    main()
