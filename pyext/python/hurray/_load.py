"""What the ``load_file`` verbs of every framework module share: open the
file, load a sharded checkpoint through its index, verify or read the file
in, then hand each tensor to the framework's converter."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Union

from . import _hurray


def load_file(
    filename: Union[str, os.PathLike],
    framework: str,
    device: Any,
    verify: bool,
    convert: Callable[[Any], Any],
) -> Dict[str, Any]:
    """Every tensor of ``filename`` through ``convert``; of a sharded
    checkpoint's index, every logical tensor in ``framework`` (in place where
    one member holds a tensor whole, assembled from its pieces otherwise).
    With ``verify``, every checksum is checked while the file is read in."""
    f = _hurray.open(str(filename))
    if f.is_shard_index:
        from ._safe_open import safe_open

        with safe_open(filename, framework=framework, device=device) as s:
            if verify:
                _verified(s.verify_checksums(), filename)
            return {name: s.get_tensor(name) for name in s.keys()}
    if verify:
        _verified(f.verify_checksums(), filename)
    else:
        # Every tensor is wanted: read the file in, in its own order and on
        # several threads, rather than fault it in tensor by tensor in name
        # order (which is not the file's: `lm_head` sorts first).
        f.read()
    return {name: convert(t) for name, t in f.items()}


def _verified(result: bool, filename: Union[str, os.PathLike]) -> None:
    """What ``verify=True`` makes of ``verify_checksums()``: a file that
    records no checksums cannot be verified, and says so (a mismatch has
    already raised ``ChecksumError``)."""
    if not result:
        raise ValueError(f"{os.fspath(filename)}: verify=True, but the file records no checksums")
