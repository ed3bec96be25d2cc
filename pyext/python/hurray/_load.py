"""What the ``load`` and ``load_file`` verbs of every framework module share:
open the file, load a sharded checkpoint through its index, verify or read
the file in, then hand each tensor that holds values to the framework."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import _convert, _hurray


def load_file(
    filename: Union[str, os.PathLike],
    framework: str,
    device: Any,
    verify: bool,
    dequantize: bool,
) -> Dict[str, Any]:
    """Every tensor of ``filename`` that holds values, in ``framework``; of
    a sharded checkpoint's index, every logical tensor (in place where one
    member holds a tensor whole, assembled from its pieces otherwise). With
    ``verify``, every checksum is checked while the file is read in. With
    ``dequantize``, quantized tensors arrive as float32 values of their
    shape; without it they are refused (their codes are not their values).
    Descriptor-only tensors (a type and shape, no data) are left out, as
    ``safe_open(...).keys()`` leaves them out."""
    f = _hurray.open(str(filename))
    if f.is_shard_index:
        from ._safe_open import safe_open

        with safe_open(filename, framework=framework, device=device) as s:
            if verify:
                _verified(s.verify_checksums(), filename)
            return {name: s._get(name, dequantize) for name in s.keys()}
    if verify:
        _verified(f.verify_checksums(), filename)
    else:
        # Every tensor is wanted: read the file in, in its own order and on
        # several threads, rather than fault it in tensor by tensor in name
        # order (which is not the file's: `lm_head` sorts first).
        f.read()
    return tensors(f, framework, device, None, dequantize)


def tensors(f, framework: str, device: Any, copy: Optional[bool], dequantize: bool) -> Dict[str, Any]:
    """The tensors of the open file ``f`` that hold values, in ``framework``."""
    return {
        name: _convert.to_framework(f[name], framework, device, copy=copy, dequantize=dequantize)
        for name in f.data_keys()
    }


def _verified(result: bool, filename: Union[str, os.PathLike]) -> None:
    """What ``verify=True`` makes of ``verify_checksums()``: a file that
    records no checksums cannot be verified, and says so (a mismatch has
    already raised ``ChecksumError``)."""
    if not result:
        raise ValueError(f"{os.fspath(filename)}: verify=True, but the file records no checksums")
