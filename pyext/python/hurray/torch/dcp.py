"""PyTorch Distributed Checkpoint (DCP) storage on Hurray.

``torch.distributed.checkpoint.save`` and ``load`` write and read through
these classes, as they do through ``FileSystemWriter`` /
``FileSystemReader``, but the checkpoint is a Hurray sharded checkpoint
(format 1.3): one Hurray file per saving rank, holding that rank's tensors
and shards, and an index, ``checkpoint.hurray``, written last by the
coordinator, that places every shard in its logical tensor. Nothing is
pickled; every buffer carries a CRC-32C; ``hurray.open_sharded`` and
``hurray.safe_open`` read the result without DCP::

    import torch.distributed.checkpoint as dcp
    from hurray.torch.dcp import HurrayStorageReader, HurrayStorageWriter

    dcp.save(model.state_dict(), storage_writer=HurrayStorageWriter("ckpt"))
    state = model.state_dict()
    dcp.load(state, storage_reader=HurrayStorageReader("ckpt"))

The checkpoint may also be a folder of an object store: ``HurrayStorageWriter(
"s3://bucket/run/step_5")`` (``gs://``, ``az://`` likewise; endpoints and
credentials from the environment or ``storage_options``). Each rank uploads
its member as one multipart upload, which no reader sees until it is
complete, and reports its size, CRC-32C and identity; the coordinator uploads the
index last, so the checkpoint at that folder is whole or absent. A rank
that fails or is killed leaves no index (and the checkpoint an earlier save
left there whole).

Loading reshards: any number of ranks, any placement (or a plain module on
one process) reads exactly the slices it needs, from the members that hold
them (from an object store, by range GETs of those bytes). Entries that are
not tensors (DCP pickles them) are refused.
"""

from __future__ import annotations

import dataclasses
import json
import os

from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import torch
from torch.distributed.checkpoint.metadata import (
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
    TensorProperties,
    TensorStorageMetadata,
)
from torch.distributed.checkpoint.planner import (
    LoadItemType,
    LoadPlan,
    LoadPlanner,
    SavePlan,
    SavePlanner,
    WriteItemType,
)
from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
from torch.futures import Future

from .. import _convert, _hurray
from .._checkpoint import INDEX_NAME, join, location, open_index, options, writable
from .._sharded import ShardedWriter

__all__ = ["HurrayStorageWriter", "HurrayStorageReader", "INDEX_NAME"]


#: The index metadata key holding DCP's ``Metadata.planner_data`` as JSON.
PLANNER_DATA_KEY = "dcp.planner_data"


def _planner_data(text: Optional[str]) -> Any:
    """``planner_data`` back from JSON: the default planner's values are
    paths (tuples of keys and indices), which JSON wrote as lists."""
    if not text:
        return None
    data = json.loads(text)
    if isinstance(data, dict):
        return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return data


@dataclasses.dataclass(frozen=True)
class _Stored:
    """Where one saved item is: a tensor of a member file."""

    member: str
    tensor: str


@dataclasses.dataclass(frozen=True)
class _Written:
    """One saved item as its rank reports it: where it is, and what the
    index records of its member (length, CRC-32C and identity, computed as
    the rank wrote it, so the coordinator never reads the member back, and
    refuses one another save wrote over since)."""

    member: str
    tensor: str
    member_size: int
    member_crc32c: int
    member_file_id: str


def _member_name(rank: int) -> str:
    return f"rank-{rank:05d}.hurray"


def _stored_name(fqn: str, offsets) -> str:
    """The tensor's name in its member: the fqn, with the chunk's offset
    when it is a shard (two shards of one tensor never share a member)."""
    if offsets is None or not any(offsets):
        return fqn
    return f"{fqn}@{','.join(str(int(o)) for o in offsets)}"


def _is_whole(chunk_offsets, chunk_sizes, size) -> bool:
    return not any(chunk_offsets) and tuple(chunk_sizes) == tuple(size)


class HurrayStorageWriter(StorageWriter):
    """A DCP ``StorageWriter`` that writes a Hurray sharded checkpoint into
    the directory or object store folder ``path``: each rank its own member
    file, the coordinator the index in :meth:`finish`. ``durable=False``
    skips the fsyncs (the files are still replaced atomically);
    ``storage_options`` configure an object store (as :func:`hurray.open`
    takes them)."""

    def __init__(
        self,
        path: Union[str, os.PathLike],
        *,
        durable: bool = True,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        super().__init__()
        self.path = writable(path)
        self.storage_options = options(self.path, storage_options)
        self.durable = durable
        self.is_coordinator = False
        # The coordinator's index writer, from planning to `finish`.
        self._index: Optional[ShardedWriter] = None
        self._members: List[str] = []

    def reset(self, checkpoint_id: Union[str, os.PathLike, None] = None) -> None:
        if checkpoint_id is not None:
            self.path = writable(checkpoint_id)
            options(self.path, self.storage_options)

    def _make_directory(self) -> None:
        if not _hurray.is_url(self.path):
            Path(self.path).mkdir(parents=True, exist_ok=True)

    def set_up_storage_writer(
        self, is_coordinator: bool, *args: Any, use_collectives: bool = True, **kwargs: Any
    ) -> None:
        if not use_collectives:
            # Without collectives each rank would plan alone, name its member
            # as rank 0 and write an index of its own.
            raise NotImplementedError(
                "HurrayStorageWriter writes one index for all ranks: save with use_collectives=True"
            )
        self.is_coordinator = is_coordinator
        if is_coordinator:
            self._make_directory()

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        # Refused here, before any rank writes anything.
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                raise TypeError(
                    f"{item.index.fqn!r} is not a tensor: DCP would pickle it, and a Hurray "
                    "checkpoint holds tensors only (save it separately)"
                )
        self._make_directory()
        return plan

    def prepare_global_plan(self, plans: List[SavePlan]) -> List[SavePlan]:
        # Runs on the coordinator before any rank writes. Each rank's member
        # is named by the rank's place in the plan, or where a checkpoint
        # already in this directory lists that name, beside it: the earlier
        # checkpoint stays whole until `finish` puts the new index in place.
        if self._index is not None:
            self._index.abort()
        self._index = ShardedWriter(
            join(self.path, INDEX_NAME), durable=self.durable, storage_options=self.storage_options
        )
        self._members = [self._index.member_path(_member_name(i)) for i in range(len(plans))]
        return [dataclasses.replace(p, storage_data=m) for p, m in zip(plans, self._members)]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> "Future[List[WriteResult]]":
        member = plan.storage_data
        tensors: Dict[str, Any] = {}
        for item in plan.items:
            tensor = planner.resolve_data(item).detach()
            if tensor.device.type != "cpu":
                tensor = tensor.cpu()
            name = _stored_name(item.index.fqn, item.tensor_data.chunk.offsets)
            if name in tensors:
                raise ValueError(
                    f"{item.index.fqn!r}: its shard's name {name!r} is also the name of another entry"
                )
            tensors[name] = tensor.contiguous()
        # One Hurray file per rank, even an empty one (so that the index
        # lists every rank that took part).
        try:
            size, crc32c, file_id = _convert.write_member(
                join(self.path, member), tensors, durable=self.durable, storage_options=self.storage_options
            )
        except BaseException:
            # The save fails, and DCP calls no storage-writer hook when it
            # does: where this process planned it, the member names it
            # claimed for every rank are given up now, not when
            # this writer is collected. The earlier checkpoint is untouched.
            if self._index is not None:
                self._index.abort()
                self._index = None
            raise
        results = [
            WriteResult(
                index=item.index,
                size_in_bytes=tensors[name].numel() * tensors[name].element_size(),
                storage_data=_Written(member, name, size, crc32c, file_id),
            )
            for item, name in zip(plan.items, tensors)
        ]
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata: Metadata, results: List[List[WriteResult]]) -> None:
        index, self._index = self._index, None
        if index is None:
            raise RuntimeError("HurrayStorageWriter.finish without prepare_global_plan on the coordinator")
        # Finished on leaving the block; on an exception, aborted: the ranks'
        # members go and the earlier checkpoint stays as it was.
        with index:
            self._adopt_members(index, metadata, results)

    def _adopt_members(
        self, index: ShardedWriter, metadata: Metadata, results: List[List[WriteResult]]
    ) -> None:
        index.set_metadata("writer", "hurray.torch.dcp")
        index.set_metadata("dcp_version", str(metadata.version or ""))
        # The default planner's fqn -> state-dict path, which loads of nested
        # state dicts (and of chosen keys) need back.
        index.set_metadata(PLANNER_DATA_KEY, json.dumps(metadata.planner_data))
        members: Dict[str, list] = {}
        # What each rank reported of its member; a rank that saved nothing
        # reported nothing, and its (empty) member is read to be indexed.
        written: Dict[str, Dict[str, int]] = {}
        for rank_results in results:
            for r in rank_results:
                stored: _Written = r.storage_data
                written[stored.member] = {
                    "size": stored.member_size,
                    "crc32c": stored.member_crc32c,
                    "file_id": stored.member_file_id,
                }
                chunks = members.setdefault(stored.member, [])
                md = metadata.state_dict_metadata[r.index.fqn]
                offsets = tuple(r.index.offset) if r.index.offset is not None else ()
                chunk = next(
                    (c for c in md.chunks if tuple(c.offsets) == offsets), None
                ) if offsets else None
                if chunk is not None and not _is_whole(chunk.offsets, chunk.sizes, md.size):
                    chunks.append((stored.tensor, r.index.fqn, list(md.size), list(offsets)))
        for member in self._members:
            index.adopt_member(member, members.get(member, []), **written.get(member, {}))

    def storage_meta(self) -> Optional[StorageMeta]:
        return StorageMeta(checkpoint_id=self.path)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, os.PathLike]) -> bool:
        return _valid_checkpoint_id(checkpoint_id, writable)


def _torch_dtype(hurray_dtype: str, name: str) -> torch.dtype:
    """The torch dtype a tensor of ``hurray_dtype`` loads as (as
    ``hurray.torch`` gives it): NumPy's types through NumPy, the others by
    their ml_dtypes name (``torch.bfloat16``, ``torch.float8_e4m3fn``)."""
    facts = _convert.BY_NAME[hurray_dtype]
    if facts.numpy:
        import numpy as np

        return torch.from_numpy(np.zeros(0, dtype=facts.numpy)).dtype
    dtype = getattr(torch, facts.ml_dtypes or "", None)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"tensor {name!r} is {hurray_dtype}, which PyTorch has no type for")
    return dtype


class HurrayStorageReader(StorageReader):
    """A DCP ``StorageReader`` over the Hurray sharded checkpoint in the
    directory ``path`` (its index, ``checkpoint.hurray``, or any index
    ``hurray.ShardedWriter`` wrote, given as ``index``). DCP's metadata is
    made from the index; each read takes only the slice it needs, from the
    member that holds it."""

    def __init__(
        self,
        path: Union[str, os.PathLike],
        *,
        index: str = INDEX_NAME,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        super().__init__()
        self.path = location(path)
        self.storage_options = options(self.path, storage_options)
        self.index = index
        self.storage_data: Dict[MetadataIndex, _Stored] = {}
        self._opened = None

    def reset(self, checkpoint_id: Union[str, os.PathLike, None] = None) -> None:
        self.storage_data = {}
        self._opened = None
        if checkpoint_id is not None:
            self.path = location(checkpoint_id)
            options(self.path, self.storage_options)

    def _checkpoint(self):
        """The checkpoint, opened once per process (DCP reads the metadata
        on one rank and the data on every rank)."""
        if self._opened is None:
            self._opened = open_index(join(self.path, self.index), self.storage_options)
        return self._opened

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        checkpoint = self._checkpoint()
        state: Dict[str, TensorStorageMetadata] = {}
        storage: Dict[MetadataIndex, _Stored] = {}
        for name in checkpoint.keys():
            t = checkpoint[name]
            chunks = []
            for member, tensor, offset, shape in t.pieces:
                chunks.append(ChunkStorageMetadata(offsets=torch.Size(offset), sizes=torch.Size(shape)))
                storage[MetadataIndex(name, torch.Size(offset))] = _Stored(member, tensor)
            state[name] = TensorStorageMetadata(
                properties=TensorProperties(dtype=_torch_dtype(t.dtype, name)),
                size=torch.Size(t.shape),
                chunks=chunks,
            )
        planner_data = _planner_data(checkpoint.metadata.get(PLANNER_DATA_KEY))
        return Metadata(state_dict_metadata=state, storage_data=storage, planner_data=planner_data)

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.storage_data = metadata.storage_data

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: List[LoadPlan]) -> List[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> "Future[None]":
        checkpoint = self._checkpoint()
        for req in plan.items:
            if req.type == LoadItemType.BYTE_IO:
                raise TypeError(f"{req.storage_index.fqn!r}: a Hurray checkpoint holds tensors only")
            # The slice of the logical tensor: the chunk's offset plus the
            # offsets within it. The checkpoint reads it from the member that
            # holds it (from an object store, a range GET of those bytes).
            t = checkpoint[req.storage_index.fqn]
            chunk = req.storage_index.offset or [0] * len(req.lengths)
            ranges = [
                (int(c) + int(o), int(c) + int(o) + int(n), 1)
                for c, o, n in zip(chunk, req.storage_offsets, req.lengths)
            ]
            src = _convert.to_torch(t.read_slice(ranges) if ranges else t.assemble())
            target = planner.resolve_tensor(req).detach()
            if target.size() != src.size():
                raise ValueError(
                    f"{req.storage_index.fqn!r}: the checkpoint's slice is {tuple(src.size())}, "
                    f"the destination {tuple(target.size())}"
                )
            target.copy_(src)
            planner.commit_tensor(req, target)
        fut: Future = Future()
        fut.set_result(None)
        return fut

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, os.PathLike]) -> bool:
        return _valid_checkpoint_id(checkpoint_id, location)


def _valid_checkpoint_id(checkpoint_id: Union[str, os.PathLike], parse) -> bool:
    """Whether ``parse`` (``location`` or ``writable``) takes it."""
    try:
        parse(checkpoint_id)
    except (TypeError, ValueError):
        return False
    return True
