"""What the distributed-checkpoint front doors (``hurray.torch.dcp``,
``hurray.jax.orbax``) share: where a checkpoint is (a local directory or an
object store folder, always told apart the same way), its options, and
opening its index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Optional, Union

from . import _hurray

#: The index's file name in a checkpoint's folder.
INDEX_NAME = "checkpoint.hurray"


def location(path: Union[str, os.PathLike]) -> str:
    """A checkpoint's folder: a local directory, or an object store URL
    (taken as a URL, never as a relative path: ``s3://b/run`` is no
    directory ``s3:``)."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{text!r}: a checkpoint location is a str or os.PathLike of str")
    return text.rstrip("/") if _hurray.is_url(text) else text


def writable(path: Union[str, os.PathLike]) -> str:
    """``path`` as :func:`location` takes it, where a save can go: an
    ``http(s)://`` URL, which takes no uploads, is refused."""
    folder = location(path)
    if folder.lower().startswith(("http://", "https://")):
        raise ValueError(f"{folder}: an HTTP server takes no uploads; save to a directory or to s3://, gs://, az://")
    return folder


def join(folder: str, name: str) -> str:
    """``name`` (``/``-separated) in the checkpoint folder ``folder``."""
    return f"{folder}/{name}" if _hurray.is_url(folder) else str(Path(folder) / name)


def options(folder: str, storage_options: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
    """``storage_options`` for a URL; given with a local directory, refused
    (they would mean nothing there)."""
    if storage_options is not None and not _hurray.is_url(folder):
        raise ValueError(f"{folder}: storage_options apply to URLs, and this is a local directory")
    return storage_options


def open_index(index: str, storage_options: Optional[Dict[str, str]] = None):
    """The sharded checkpoint whose index is at ``index``: from an object
    store, its header read with two range GETs and each member opened (and
    checked against the index) when first read."""
    if _hurray.is_url(index):
        return _hurray.open_sharded_remote(index, storage_options)
    return _hurray.open_sharded(index, read_only=True)
