"""safetensors.flax's verbs for JAX arrays."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import _convert, _hurray

__all__ = ["save", "save_file", "load", "load_file"]


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The Hurray file of ``tensors`` (jax.Array) as bytes."""
    return _convert.write(None, tensors, metadata)


def save_file(
    tensors: Dict[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
) -> None:
    """Writes ``tensors`` to ``filename`` atomically (and, with ``durable``, flushed to the disk first)."""
    _convert.write(filename, tensors, metadata, durable)


def load(data: bytes) -> Dict[str, Any]:
    """The arrays of a Hurray file held in ``data``."""
    f = _hurray.open_bytes(data)
    return {name: _convert.to_jax(t) for name, t in f.items()}


def load_file(filename: Union[str, os.PathLike], device: Any = "cpu") -> Dict[str, Any]:
    """The arrays of the file as jax.Array (every type JAX has, ml_dtypes' included)."""
    f = _hurray.open(str(filename))
    return {name: _convert.to_jax(t, device) for name, t in f.items()}
