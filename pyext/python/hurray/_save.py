"""The saving verbs every framework module shares: what they write is read
from any framework's tensors (DLPack, or the buffer of an ml_dtypes array)."""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Union

from . import _convert


def save(tensors: Mapping[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The Hurray file of ``tensors`` (name -> NumPy, torch or JAX array) as bytes."""
    return _convert.write(None, tensors, metadata)


def save_file(
    tensors: Mapping[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
    digests: bool = False,
) -> None:
    """Writes ``tensors`` to ``filename``, each streamed from its own memory.

    The file appears whole or not at all. ``durable=True`` (the default)
    also puts it on the disk first, so a power loss cannot leave a partial
    file: its bytes go around the page cache (``O_DIRECT`` on Linux, where
    the file system allows it) and are then synced, so a load right after
    reads from the disk. ``durable=False`` skips that, as safetensors does:
    the file is written through the page cache and stays there.
    ``digests=True`` records a BLAKE3 digest of every buffer (format 1.4):
    the header then commits to every byte, and :func:`hurray.sign` can sign
    the file."""
    _convert.write(filename, tensors, metadata, durable, digests=digests)
