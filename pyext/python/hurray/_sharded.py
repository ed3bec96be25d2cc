"""Writing sharded checkpoints (format 1.3): member files, then an index
that ``safe_open`` and ``open_sharded`` read as one checkpoint."""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import _convert, _hurray

#: transformers' default ``max_shard_size`` ("5GB", decimal), in bytes.
DEFAULT_MAX_SHARD_SIZE = 5_000_000_000


class ShardedWriter:
    """Writes a sharded checkpoint whose index is ``index_path``.

    Tensors (of any framework, as :func:`hurray.save` takes them) go to
    member files named after the index (``model-00001.hurray``, ...) in its
    directory, each member written atomically and closed once the next
    tensor would take it past ``max_shard_size`` bytes (a larger tensor gets
    a member of its own), as ``save_pretrained(max_shard_size=...)`` splits.
    ``add_chunk`` writes one piece of a larger logical tensor (a
    tensor-parallel rank's part); ``start_member`` names the next member.

    Saving over an existing checkpoint never damages it, and two saves to
    one path at once never mix: members go under names this save claims
    where no file is (``model-00001.1.hurray`` where ``model-00001.hurray``
    is taken), each with a random identity the index records,
    :meth:`finish` swaps the new index in knowing which index it replaced,
    and only then removes that index's members. Of two saves at once, the
    one that finishes last is the checkpoint, whole; a member of another
    save at a listed path is refused when read. A save that fails, is
    aborted or is killed leaves the old checkpoint whole, and removes what
    it wrote (a killed one leaves files no index lists).

    ``index_path`` may be the URL of an object store (``s3://bucket/run/
    model.hurray``, with ``storage_options`` as :func:`hurray.open` takes
    them): each member is then one multipart upload, visible only once
    complete, and the index, uploaded last, is the commit point.

    As a context manager it finishes on a clean exit and aborts on an
    exception::

        with hurray.ShardedWriter("ckpt/model.hurray") as w:
            for rank, rows in enumerate(parts):
                w.start_member(f"rank-{rank}.hurray")
                w.add_chunk("w", (1024, 512), (rank * 256, 0), rows)
    """

    def __init__(
        self,
        index_path: Union[str, os.PathLike],
        metadata: Optional[Dict[str, str]] = None,
        *,
        max_shard_size: int = DEFAULT_MAX_SHARD_SIZE,
        durable: bool = True,
        digests: bool = False,
        storage_options: Optional[Dict[str, str]] = None,
    ):
        self._writer = _hurray.ShardedWriter(
            os.fspath(index_path),
            max_shard_size=max_shard_size,
            metadata=metadata,
            durable=durable,
            digests=digests,
            storage_options=storage_options,
        )

    def start_member(self, path: str) -> None:
        """Closes the current member; the next tensor starts the member
        ``path`` (relative to the index's directory, ``/``-separated), or its
        first free alternate where a file is at ``path``."""
        self._writer.start_member(path)

    def member_path(self, preferred: str) -> str:
        """Where another process (a rank of a distributed save) should write
        a member for :meth:`adopt_member`: ``preferred``, or its first
        alternate where no file is, claimed for this save until it finishes
        or is aborted."""
        return self._writer.member_path(preferred)

    def set_metadata(self, key: str, value: str) -> None:
        """Sets the checkpoint's metadata entry ``key`` (kept in the index)."""
        self._writer.set_metadata(key, value)

    def abort(self) -> None:
        """Gives the save up: removes the members it wrote; the checkpoint it
        would have replaced stays as it is."""
        self._writer.abort()

    def add(self, name: str, tensor: Any) -> None:
        """Writes the whole tensor ``name``."""
        self._writer.add(name, _convert.source(name, tensor))

    def add_chunk(self, name: str, shape: Sequence[int], offset: Sequence[int], chunk: Any) -> None:
        """Writes ``chunk`` as the part of the logical tensor ``name`` (of
        ``shape``) that starts at ``offset``. Each chunk of a tensor goes to
        a member of its own, and the chunks must tile the tensor exactly (no
        gap, no overlap), which :meth:`finish` checks."""
        self._writer.add_chunk(name, list(shape), list(offset), _convert.source(name, chunk))

    def adopt_member(
        self,
        path: str,
        chunks: Optional[Sequence[Tuple[str, str, Sequence[int], Sequence[int]]]] = None,
        *,
        size: Optional[int] = None,
        crc32c: Optional[int] = None,
        file_id: Optional[str] = None,
    ) -> None:
        """Takes in the Hurray file ``path`` (relative to the index's
        directory) that another process wrote, such as one rank of a
        distributed save. Its tensors are whole logical tensors, except those
        named in ``chunks`` as ``(tensor in the file, logical name, logical
        shape, offset)``. The file is verified and read whole for its
        CRC-32C, unless its writer reported ``size`` and ``crc32c`` (what
        :func:`hurray._hurray.write_member` returns): then only its header is
        read and its size checked, and ``file_id`` (the identity it returns
        too) must be the member's, or another save wrote the path since. The
        chunks must tile their tensors, which :meth:`finish` checks."""
        self._writer.adopt_member(
            path,
            [(t, n, list(shape), list(off)) for t, n, shape, off in chunks or ()],
            size=size,
            crc32c=crc32c,
            file_id=file_id,
        )

    def finish(self) -> str:
        """Closes the last member, checks the index and writes it; returns its
        path (its URL in an object store)."""
        return self._writer.finish()

    def __enter__(self) -> "ShardedWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._writer.finished:
            self.finish()


def save_sharded(
    path: Union[str, os.PathLike],
    tensors: Mapping[str, Any],
    metadata: Optional[Dict[str, str]] = None,
    *,
    max_shard_size: int = DEFAULT_MAX_SHARD_SIZE,
    durable: bool = True,
    digests: bool = False,
) -> None:
    """Writes ``tensors`` (name -> array of any framework) as a sharded
    checkpoint: members of at most ``max_shard_size`` bytes each (a larger
    tensor alone in its member), then the index ``path``, which
    ``hurray.safe_open(path, ...)`` opens as one file. Whole tensors only;
    :class:`ShardedWriter` also writes tensors in chunks. ``digests=True``
    records a BLAKE3 digest of every buffer and each member's header digest
    in the index, so that :func:`hurray.sign` can sign the checkpoint."""
    with ShardedWriter(path, metadata, max_shard_size=max_shard_size, durable=durable, digests=digests) as w:
        for name, value in tensors.items():
            w.add(name, value)
