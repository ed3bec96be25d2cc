"""safetensors.torch's verbs for torch tensors, tied weights included."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple, Union

from .. import _hurray, _load
from .._save import save, save_file

if TYPE_CHECKING:
    import torch

__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model"]


def load(data: bytes, dequantize: bool = False) -> Dict[str, "torch.Tensor"]:
    """The tensors of a Hurray file held in ``data`` (writable copies);
    ``dequantize`` as in :func:`load_file`."""
    return _load.tensors(_hurray.open_bytes(data), "pt", "cpu", True, dequantize)


def load_file(
    filename: Union[str, os.PathLike], device: Any = "cpu", verify: bool = False, dequantize: bool = False
) -> Dict[str, "torch.Tensor"]:
    """The tensors of the file, zero-copy over a copy-on-write map: writable
    (train with them, ``load_state_dict(..., assign=True)``), and a write
    never reaches the file. Before the tensors are returned, the pages of
    the file not in memory yet are read in (several threads, in the file's
    order), so using them in any order waits for nothing. With ``verify``,
    every buffer is checked against its recorded checksum (CRC-32C) once
    the file is read in, on several threads in the file's order; a mismatch
    raises ``ChecksumError`` naming the tensor, and a file without checksums
    raises ``ValueError``. Given a sharded checkpoint's index, every logical
    tensor of the checkpoint.

    A quantized tensor (GGUF's types, bitsandbytes, compressed-tensors, ...)
    is refused unless ``dequantize=True``, which gives it as a float32
    tensor of its shape (the runtime's dequantization, a copy); the other
    tensors are unchanged. Descriptor-only tensors (a type and shape, no
    data) are left out, as ``safe_open(...).keys()`` leaves them out."""
    return _load.load_file(filename, "pt", device, verify, dequantize)


def _shared_groups(state_dict) -> List[Set[str]]:
    """Names whose tensors share storage (tied weights), groups of two or more."""
    by_storage = defaultdict(set)
    for name, t in state_dict.items():
        if t.device.type != "meta" and t.numel() > 0:
            by_storage[(t.device, t.untyped_storage().data_ptr())].add(name)
    return [names for names in by_storage.values() if len(names) > 1]


def _same_view(a, b) -> bool:
    return (
        a.data_ptr() == b.data_ptr()
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.dtype == b.dtype
    )


def _deduplicated(model) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The state dict with one name per tied tensor, and dropped name -> kept name."""
    state_dict = model.state_dict()
    dropped = {}
    for group in _shared_groups(state_dict):
        names = sorted(group)
        keep = names[0]
        for other in names[1:]:
            if not _same_view(state_dict[keep], state_dict[other]):
                raise ValueError(
                    f"tensors {keep!r} and {other!r} share memory but are different views of it; "
                    "Hurray stores each tensor once: clone one of them before saving"
                )
            dropped[other] = keep
    return {k: v for k, v in state_dict.items() if k not in dropped}, dropped


def save_model(
    model: "torch.nn.Module",
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
) -> None:
    """Saves ``model.state_dict()``, storing tied (shared) tensors once under
    one name, as safetensors does; :func:`load_model` ties them back."""
    state_dict, _ = _deduplicated(model)
    save_file(state_dict, filename, metadata, durable=durable)


def load_model(
    model: "torch.nn.Module",
    filename: Union[str, os.PathLike],
    strict: bool = True,
    device: Any = "cpu",
) -> Tuple[List[str], List[str]]:
    """Loads a file written by :func:`save_model` into ``model``.

    Returns ``(missing, unexpected)`` as ``load_state_dict`` does, without the
    names of tied tensors stored under their sibling's name; with
    ``strict=True`` either being non-empty raises RuntimeError.
    """
    state_dict = load_file(filename, device=device)
    _, dropped = _deduplicated(model)
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = [m for m in missing if not (m in dropped and dropped[m] in state_dict)]
    if strict and (missing or unexpected):
        parts = []
        if missing:
            parts.append("missing: " + ", ".join(sorted(missing)))
        if unexpected:
            parts.append("unexpected: " + ", ".join(sorted(unexpected)))
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}: " + "; ".join(parts))
    return missing, unexpected
