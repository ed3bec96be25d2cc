"""ONNX models that read their weights in place from a Hurray file.

ONNX external data names a file, an offset and a length for each
initializer. :func:`externalize` writes a model's initializers to a Hurray
file (each page-aligned, so ONNX Runtime maps them) and a model whose
initializers point at their bytes inside it: one weights file that ONNX
Runtime, PyTorch, JAX, NumPy and C all read in place. With
``existing=True`` the model points into a Hurray file written before (by
``hurray.torch.save_file``, say), checked tensor by tensor.

The model is read and rewritten at the protobuf wire level by the Rust
runtime: only the initializers' data fields change. ``onnx`` itself is not
needed, but a :class:`onnx.ModelProto` is accepted.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import _hurray

__all__ = ["externalize", "write_weights"]

_PROTOBUF_LIMIT = 2**31


def _model_args(model: Any, base_dir: Union[str, os.PathLike, None]):
    """(path, bytes, base_dir) for the runtime, from a path or a ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        if base_dir is not None:
            raise ValueError("base_dir is for a ModelProto: a model's path says where its external data is")
        return os.fspath(model), None, ""
    serialize = getattr(model, "SerializeToString", None)
    if serialize is None:
        raise TypeError(
            f"model must be a path or an onnx.ModelProto, not {type(model).__name__}"
        )
    if base_dir is None and _has_external_data(model):
        raise ValueError(
            "the ModelProto keeps initializers in external data: pass base_dir, the "
            "directory its locations are relative to"
        )
    if model.ByteSize() >= _PROTOBUF_LIMIT:
        raise ValueError(
            "the model is over protobuf's 2 GiB limit in memory: save it with "
            "onnx.save(model, path, save_as_external_data=True) and pass the path"
        )
    return None, serialize(), os.fspath(base_dir) if base_dir is not None else ""


def _has_external_data(model: Any) -> bool:
    """Whether any initializer of the model or its subgraphs is external."""
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        if any(t.data_location == 1 for t in g.initializer):
            return True
        for node in g.node:
            for a in node.attribute:
                graphs.extend([a.g] if a.HasField("g") else [])
                graphs.extend(a.graphs)
    return False


def externalize(
    model_or_path: Any,
    out_onnx_path: Union[str, os.PathLike],
    weights_path: Union[str, os.PathLike],
    align: Optional[int] = None,
    threshold: int = 1024,
    *,
    existing: bool = False,
    base_dir: Union[str, os.PathLike, None] = None,
) -> Dict[str, Any]:
    """Writes ``weights_path`` (a Hurray file of every initializer) and
    ``out_onnx_path``, the model whose initializers of ``threshold`` bytes or
    more are external data at their bytes inside ``weights_path``.

    Args:
        model_or_path: an ``.onnx`` path (its external data is read from its
            directory) or an ``onnx.ModelProto``.
        out_onnx_path: the model to write; ``weights_path`` must be in its
            directory or below (ONNX Runtime reads external data from there
            only).
        weights_path: the Hurray file to write, or with ``existing=True`` to
            point into.
        align: the Hurray file's alignment (default 4096: a page, so ONNX
            Runtime maps each tensor); not with ``existing``, whose file is
            already written.
        threshold: initializers smaller than this stay inline in the model.
        existing: point into an existing Hurray file instead of writing one;
            each initializer found there by name must have the same type,
            shape and bytes (``ValueError`` naming the tensor otherwise).
        base_dir: for a ``ModelProto`` with external data, the directory it
            is relative to.

    Returns:
        ``{"external": count, "inline": {name: reason}}``.

    Raises:
        ValueError: a malformed model, an initializer ONNX Runtime could not
            read from the file (external data outside its file, a type or
            shape that differs, a sparse or quantized Hurray tensor), or a
            weights file outside the model's directory. Nothing is written.
        FileNotFoundError: a missing model, external data file or existing
            weights file.
    """
    if existing and align is not None:
        raise ValueError("align is for a weights file being written; with existing=True it is already written")
    path, data, base = _model_args(model_or_path, base_dir)
    return _hurray.onnx_externalize(
        path,
        data,
        base,
        os.fspath(out_onnx_path),
        os.fspath(weights_path),
        4096 if align is None else align,
        threshold,
        existing,
    )


def write_weights(
    model_or_path: Any,
    weights_path: Union[str, os.PathLike],
    align: int = 64,
    *,
    base_dir: Union[str, os.PathLike, None] = None,
) -> None:
    """Writes every initializer of the model to a new Hurray file (what
    ``hurray convert model.onnx weights.hurray`` does)."""
    path, data, base = _model_args(model_or_path, base_dir)
    _hurray.onnx_write_weights(path, data, base, os.fspath(weights_path), align)
