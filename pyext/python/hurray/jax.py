"""safetensors.flax's verbs for JAX arrays."""

from __future__ import annotations

import os
from typing import Any, Dict, Union

from . import _convert, _hurray, _sharded
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
    f = _hurray.open(str(filename))
    if f.is_shard_index:
        return _sharded.load_checkpoint(filename, "jax", device, verify)
    if verify:
        _sharded.verified(f.verify_checksums(), filename)
    else:
        f.read()  # all of it, in the file's order (see hurray.torch.load_file)
    return {name: _convert.to_jax(t, device) for name, t in f.items()}
