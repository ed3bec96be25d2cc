"""Orbax checkpoints on Hurray: :class:`HurrayCheckpointHandler`, with the
arguments :class:`HurraySave` and :class:`HurrayRestore`.

The handler saves a PyTree of ``jax.Array`` s (and NumPy arrays and
scalars) as a Hurray sharded checkpoint (format 1.3) in the item directory
Orbax gives it: each process writes the shards it owns as one member,
``process-00000.hurray``, ... (a shard replicated over several devices or
processes is written once, by the holder of its replica 0), and process 0
writes the index, ``checkpoint.hurray``, last, when Orbax finalizes the
save. Every buffer carries a CRC-32C, and ``hurray.open_sharded`` reads the
result without Orbax or JAX. Restoring takes the target's shardings (any
mesh, any number of processes) and reads only the region of each array
that the process's devices hold::

    import orbax.checkpoint as ocp
    from hurray.jax.orbax import HurrayRestore, HurraySave

    with ocp.CheckpointManager(path, options=ocp.CheckpointManagerOptions(max_to_keep=2)) as mngr:
        mngr.save(step, args=HurraySave(state))
        mngr.wait_until_finished()
        state = mngr.restore(step, args=HurrayRestore(abstract_state))

The arguments are registered with Orbax as its own are, so
``ocp.Checkpointer(HurrayCheckpointHandler())``, ``ocp.AsyncCheckpointer``
and ``ocp.CheckpointManager`` (async saves, ``max_to_keep``) take them.

Leaves are named by their path in the tree (``params.dense.kernel``); a
sharded array's piece is stored as ``name@row,col`` after its offset. What
a process keeps in memory: a synchronous save writes each shard straight
from its device buffer; an asynchronous one takes this process's shards
before ``save`` returns, so the arrays may be donated or deleted at once
(on the CPU as views that keep each buffer alive, which costs no memory;
from an accelerator as host copies, all of the process's shards at once),
and writes and releases them one by one in the background.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint import future as ocp_future

from .. import _checkpoint, _convert, _hurray
from .._checkpoint import INDEX_NAME
from .._sharded import ShardedWriter

__all__ = ["HurrayCheckpointHandler", "HurraySave", "HurrayRestore", "INDEX_NAME"]

#: The index metadata key listing the saved leaves' names, in tree order.
LEAVES_KEY = "orbax.leaves"

#: A member's metadata key with what its process wrote (its chunks), which
#: process 0 reads to build the index.
CHUNKS_KEY = "hurray.orbax.chunks"


def _member_name(process: int) -> str:
    return f"process-{process:05d}.hurray"


def _report_name(process: int) -> str:
    return f"process-{process:05d}.report.hurray"


def _join(directory: Any, name: str) -> str:
    """``name`` in Orbax's item directory (a local path or an object store URL)."""
    return _checkpoint.join(_checkpoint.location(directory), name)


def leaf_names(tree: Any) -> List[Tuple[str, Any]]:
    """``(name, leaf)`` for every leaf of ``tree``, named by its path
    (``params.dense.kernel``; a tree that is one leaf is ``value``)."""
    out = []
    seen = set()
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        name = jax.tree_util.keystr(path, simple=True, separator=".") or "value"
        if name in seen or "@" in name:
            raise ValueError(f"leaf {name!r}: two leaves share the name, or it holds '@' (kept for pieces)")
        seen.add(name)
        out.append((name, leaf))
    return out


def _offset(index: Sequence[slice], shape: Sequence[int]) -> List[int]:
    return [sl.indices(n)[0] for sl, n in zip(index, shape)]


def _stored_name(name: str, offset: Sequence[int], whole: bool) -> str:
    return name if whole else f"{name}@{','.join(str(o) for o in offset)}"


@dataclasses.dataclass
class _Piece:
    """One array (or piece of one) a process writes."""

    stored: str
    name: str
    shape: List[int]
    offset: List[int]
    data: Any  # a host array, or a single-device jax.Array read when written
    whole: bool


def _pieces(tree: Any, now: bool) -> List[_Piece]:
    """What this process writes of ``tree``: the shards of each ``jax.Array``
    whose replica 0 it holds, and (process 0) every other leaf. ``now``: the
    bytes are taken before this returns (an asynchronous save, whose caller
    may change or donate what it saved at once): a shard as a host array (a
    view of the device buffer on the CPU, which keeps the buffer alive and
    unchanged: JAX does not donate a buffer something else still reads; a
    copy from an accelerator), any other leaf as a copy (a NumPy array can
    be written to)."""
    process = jax.process_index()
    out: List[_Piece] = []
    for name, leaf in leaf_names(tree):
        if isinstance(leaf, jax.Array):
            shape = list(leaf.shape)
            for shard in leaf.addressable_shards:
                if shard.replica_id != 0:
                    continue
                offset = _offset(shard.index, shape)
                whole = list(shard.data.shape) == shape
                data = np.asarray(shard.data) if now else shard.data
                out.append(_Piece(_stored_name(name, offset, whole), name, shape, offset, data, whole))
        elif process == 0:
            value = np.array(leaf, copy=True) if now else np.asarray(leaf)
            shape = list(value.shape)
            out.append(_Piece(name, name, shape, [0] * len(shape), value, True))
    return out


def _write(directory: Any, pieces: List[_Piece], leaves: List[str], durable: bool, storage_options) -> None:
    """This process's member, then its report (what process 0 indexes): the
    member's size, CRC-32C and identity, computed as it was written, its
    chunks, and
    what the index records of the save (how many processes wrote, the
    leaves), so that `finalize` needs nothing kept from the save."""
    process = jax.process_index()
    member = _member_name(process)

    def tensors():
        # One at a time, each dropped once written: a host copy is freed as
        # soon as it is on the disk (or uploaded).
        while pieces:
            piece = pieces.pop(0)
            yield piece.stored, piece.data

    chunks = [[p.stored, p.name, p.shape, p.offset] for p in pieces if not p.whole]
    size, crc32c, file_id = _hurray.write_member(
        _join(directory, member),
        ((name, _convert.source(name, data)) for name, data in tensors()),
        durable=durable,
        storage_options=storage_options,
    )
    report = {
        "member": member,
        "size": size,
        "crc32c": crc32c,
        "file_id": file_id,
        "chunks": chunks,
        "processes": jax.process_count(),
        "leaves": leaves,
    }
    _convert.write(
        _join(directory, _report_name(process)),
        {},
        {CHUNKS_KEY: json.dumps(report)},
        durable=durable,
        storage_options=storage_options,
    )


class HurrayCheckpointHandler(ocp.AsyncCheckpointHandler):
    """An Orbax ``AsyncCheckpointHandler`` that saves a PyTree as a Hurray
    sharded checkpoint (see the module's documentation). ``durable=False``
    skips the fsyncs; ``storage_options`` configure an object store (as
    :func:`hurray.open` takes them) when Orbax's directory is a URL."""

    def __init__(self, *, durable: bool = True, storage_options: Optional[Dict[str, str]] = None):
        self.durable = durable
        self.storage_options = storage_options

    def _options(self, directory: Any, saving: bool = False) -> Optional[Dict[str, str]]:
        """The storage options for ``directory``; with a local directory
        they are not used (one handler serves both), and a save to an
        ``http(s)://`` URL, which takes no uploads, is refused."""
        folder = (_checkpoint.writable if saving else _checkpoint.location)(directory)
        return self.storage_options if _hurray.is_url(folder) else None

    async def async_save(self, directory: Any, args: "HurraySave") -> Optional[List[Any]]:
        """Takes this process's shards as host arrays (the part of the save
        Orbax waits for: a view of each buffer on the CPU, a copy from an
        accelerator), then writes them in the background, once Orbax has
        created the directory."""
        options = self._options(directory, saving=True)
        leaves = [name for name, _ in leaf_names(args.item)]
        pieces = _pieces(args.item, now=True)

        async def write():
            await asyncio.to_thread(_write, directory, pieces, leaves, self.durable, options)

        return [ocp_future.CommitFutureAwaitingContractedSignals(write(), name="hurray_write")]

    def save(self, directory: Any, args: "HurraySave") -> None:
        """Writes this process's shards straight from their device buffers."""
        options = self._options(directory, saving=True)
        leaves = [name for name, _ in leaf_names(args.item)]
        _write(directory, _pieces(args.item, now=False), leaves, self.durable, options)

    def finalize(self, directory: Any) -> None:
        """Once every process has written its member (Orbax calls this on
        its primary host): process 0 writes the index, last, from the
        processes' reports. Any other process that is called does nothing,
        so that one index is written however Orbax is configured."""
        if jax.process_index() != 0:
            return
        options = self._options(directory)

        def report_of(process: int) -> Dict[str, Any]:
            f = _hurray.open(_join(directory, _report_name(process)), storage_options=options)
            return json.loads(f.metadata[CHUNKS_KEY])

        first = report_of(0)
        index = ShardedWriter(_join(directory, INDEX_NAME), durable=self.durable, storage_options=options)
        with index:
            index.set_metadata("writer", "hurray.jax.orbax")
            index.set_metadata(LEAVES_KEY, json.dumps(first["leaves"]))
            for process in range(first["processes"]):
                report = first if process == 0 else report_of(process)
                index.adopt_member(
                    report["member"],
                    [tuple(c) for c in report["chunks"]],
                    size=report["size"],
                    crc32c=report["crc32c"],
                    # Absent from reports written before format 1.5.
                    file_id=report.get("file_id"),
                )

    def _open(self, directory: Any):
        return _checkpoint.open_index(_join(directory, INDEX_NAME), self._options(directory))

    def metadata(self, directory: Any) -> Dict[str, Any]:
        """Every saved leaf as a ``jax.ShapeDtypeStruct``, by name."""
        with self._open(directory) as checkpoint:
            return {
                name: jax.ShapeDtypeStruct(tuple(checkpoint[name].shape), _numpy_dtype(checkpoint[name].dtype, name))
                for name in checkpoint.keys()
            }

    def restore(self, directory: Any, args: Optional["HurrayRestore"] = None) -> Any:
        """The tree of ``args.item``: each ``jax.ShapeDtypeStruct`` (or
        array) with a sharding becomes a ``jax.Array`` of that sharding, made
        of the regions this process's devices hold, each read once; one
        without becomes a NumPy array. Without a target, a dict of NumPy
        arrays by leaf name."""
        with self._open(directory) as checkpoint:
            target = None if args is None else args.item
            if target is None:
                return {name: _read(checkpoint, name, None) for name in checkpoint.keys()}
            names = leaf_names(target)
            values = [_restore_leaf(checkpoint, name, leaf) for name, leaf in names]
            return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(target), values)

    def close(self) -> None:
        pass


def _numpy_dtype(hurray_dtype: str, name: str) -> np.dtype:
    """The NumPy dtype a tensor ``name`` of ``hurray_dtype`` reads as
    (ml_dtypes' for the types NumPy lacks, as ``hurray.numpy`` gives them)."""
    facts = _convert.BY_NAME[hurray_dtype]
    return np.dtype(facts.numpy or _convert._ml_dtypes(facts, name))


def _read(checkpoint, name: str, region: Optional[Sequence[Tuple[int, int]]]) -> np.ndarray:
    """The region (``(start, stop)`` per dimension; all of it for ``None``)
    of the logical tensor ``name``, read from the members that hold it."""
    if name not in checkpoint:
        raise KeyError(f"leaf {name!r} is not in the checkpoint")
    t = checkpoint[name]
    if region is None or all(start == 0 and stop == n for (start, stop), n in zip(region, t.shape)):
        return _convert.to_numpy(t.assemble())
    return _convert.to_numpy(t.read_slice([(start, stop, 1) for start, stop in region]))


def _restore_leaf(checkpoint, name: str, leaf: Any) -> Any:
    if name not in checkpoint:
        raise KeyError(f"leaf {name!r} of the target is not in the checkpoint")
    t = checkpoint[name]
    shape = tuple(getattr(leaf, "shape", ()))
    saved = _numpy_dtype(t.dtype, name)
    dtype = np.dtype(getattr(leaf, "dtype", saved))
    if tuple(t.shape) != shape or dtype != saved:
        raise ValueError(
            f"leaf {name!r}: the target is {dtype} {list(shape)}, the checkpoint holds {saved} {list(t.shape)}"
        )
    sharding = getattr(leaf, "sharding", None)
    if sharding is None:
        return _read(checkpoint, name, None)
    regions: Dict[Tuple[Tuple[int, int], ...], np.ndarray] = {}
    buffers = []
    for device, index in sharding.addressable_devices_indices_map(shape).items():
        region = tuple(tuple(sl.indices(n)[:2]) for sl, n in zip(index, shape))
        if region not in regions:
            regions[region] = _read(checkpoint, name, region)
        buffers.append(jax.device_put(regions[region], device))
    return jax.make_array_from_single_device_arrays(shape, sharding, buffers)


@ocp.args.register_with_handler(HurrayCheckpointHandler, for_save=True)
@dataclasses.dataclass
class HurraySave(ocp.args.CheckpointArgs):
    """Save ``item``, a PyTree of ``jax.Array`` s, NumPy arrays and scalars."""

    item: Any


@ocp.args.register_with_handler(HurrayCheckpointHandler, for_restore=True)
@dataclasses.dataclass
class HurrayRestore(ocp.args.CheckpointArgs):
    """Restore into the structure of ``item``: a PyTree of
    ``jax.ShapeDtypeStruct`` s (with shardings) or arrays; ``None`` gives a
    dict of NumPy arrays by leaf name."""

    item: Any = None
