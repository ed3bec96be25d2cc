"""safetensors.numpy's verbs for NumPy arrays (bf16, fp8 and sub-byte types through ml_dtypes)."""

from __future__ import annotations

import os
from typing import Dict, Optional, Union

from . import _convert, _hurray

__all__ = ["save", "save_file", "load", "load_file"]


def save(tensors: Dict[str, "np.ndarray"], metadata: Optional[Dict[str, str]] = None) -> bytes:  # noqa: F821
    """The Hurray file of ``tensors`` as bytes."""
    return _convert.write(None, tensors, metadata)


def save_file(
    tensors: Dict[str, "np.ndarray"],  # noqa: F821
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
) -> None:
    """Writes ``tensors`` to ``filename`` atomically, streaming each array from its own memory.

    The file appears whole or not at all. ``durable=True`` (the default)
    also flushes it to the disk first (fsync), so a power loss cannot leave
    a partial file; ``durable=False`` skips that, as safetensors does."""
    _convert.write(filename, tensors, metadata, durable)


def load(data: bytes) -> Dict[str, "np.ndarray"]:  # noqa: F821
    """The arrays of a Hurray file held in ``data`` (writable copies)."""
    f = _hurray.open_bytes(data)
    return {name: _convert.to_numpy(t, copy=True) for name, t in f.items()}


def load_file(filename: Union[str, os.PathLike]) -> Dict[str, "np.ndarray"]:  # noqa: F821
    """The arrays of the file: zero-copy views of a copy-on-write map (writable; the file never changes)."""
    f = _hurray.open(str(filename))
    return {name: _convert.to_numpy(t) for name, t in f.items()}
