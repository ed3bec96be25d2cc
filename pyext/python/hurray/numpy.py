"""safetensors.numpy's verbs for NumPy arrays (bf16, fp8 and sub-byte types through ml_dtypes)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Dict, Union

from . import _hurray, _load
from ._save import save, save_file

if TYPE_CHECKING:
    import numpy as np

__all__ = ["save", "save_file", "load", "load_file"]


def load(data: bytes, dequantize: bool = False) -> Dict[str, "np.ndarray"]:
    """The arrays of a Hurray file held in ``data`` (writable copies);
    ``dequantize`` as in :func:`load_file`."""
    return _load.tensors(_hurray.open_bytes(data), "np", "cpu", True, dequantize)


def load_file(
    filename: Union[str, os.PathLike], verify: bool = False, dequantize: bool = False
) -> Dict[str, "np.ndarray"]:
    """The arrays of the file: zero-copy views of a copy-on-write map (writable; the file never changes),
    the file's pages not in memory yet read in (several threads, in the file's order) before they are returned. ``verify``
    checks every checksum while reading the file in, as ``hurray.torch.load_file`` does. Given a sharded checkpoint's index, every logical tensor of the
    checkpoint.

    A quantized tensor (GGUF's types, bitsandbytes, compressed-tensors, ...) is refused unless ``dequantize=True``,
    which gives it as a float32 array of its shape (the runtime's dequantization, a copy); the other tensors are
    unchanged. Descriptor-only tensors (a type and shape, no data: an MLIR function's arguments and results) are
    left out, as ``safe_open(...).keys()`` leaves them out."""
    return _load.load_file(filename, "np", "cpu", verify, dequantize)
