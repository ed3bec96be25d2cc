"""safetensors.flax's verbs for JAX arrays."""

from __future__ import annotations

import os
from typing import Any, Dict, Union

from . import _convert, _hurray, _load
from ._save import save, save_file

__all__ = ["save", "save_file", "load", "load_file"]


def load(data: bytes) -> Dict[str, Any]:
    """The arrays of a Hurray file held in ``data``."""
    f = _hurray.open_bytes(data)
    return {name: _convert.to_jax(t) for name, t in f.items()}


def load_file(filename: Union[str, os.PathLike], device: Any = "cpu", verify: bool = False) -> Dict[str, Any]:
    """The arrays of the file as jax.Array (every type JAX has, ml_dtypes' included). ``verify`` checks
    every checksum while reading the file in, as ``hurray.torch.load_file`` does. Given a sharded
    checkpoint's index, every logical tensor of the checkpoint."""
    return _load.load_file(filename, "jax", device, verify, lambda t: _convert.to_jax(t, device))
