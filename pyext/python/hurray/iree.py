"""IREE reads a Hurray file's tensors in place, as parameters.

IREE compiles a model whose weights are named parameters
(``#flow.parameter.named<"model"::"fc.weight">``, what iree-turbine writes
for ``aot.externalize_module_parameters``) and serves them at run time from a
:class:`iree.runtime.ParameterIndex`. :func:`parameter_index` builds one whose
entries are a Hurray file's tensors, by name, over the file's mapped pages:
nothing is copied, and on the CPU device IREE uses the pages directly
(Hurray aligns every buffer to 64 bytes, what IREE needs to skip its copy).

    index = hurray.iree.parameter_index("model.hurray")
    params = iree.runtime.create_io_parameters_module(
        instance, index.create_provider(scope="model"))
"""

from __future__ import annotations

import mmap
import os
from typing import Iterable, Optional, Union

from . import _hurray

__all__ = ["parameter_index"]


def parameter_index(
    path: Union[str, os.PathLike],
    names: Optional[Iterable[str]] = None,
    *,
    index=None,
):
    """An ``iree.runtime.ParameterIndex`` whose entries are the tensors of the
    Hurray file at ``path`` (all that hold data, or ``names``), keyed by
    tensor name, each over the file's read-only map at the tensor's offset
    (no copy).

    The file is opened and verified first. Every entry's key is the tensor's
    name; use ``index.create_provider(scope=...)`` with the scope the
    compiled program names (iree-turbine: ``"model"``). Pass ``index`` to add
    the entries to an existing index.

    Raises:
        ValueError: a tensor that is not plain dense values (a sparse layout,
            a quantized tensor; a descriptor-only tensor named in ``names``):
            IREE parameters are raw bytes, and the scales of a quantized
            tensor would be lost; a bool tensor (a bit per element in
            Hurray, a byte in IREE); a file replaced while it was verified.
        KeyError: a name in ``names`` that the file lacks.
    """
    import iree.runtime as rt

    path = os.fspath(path)
    entries = []
    # The file mapped is the file verified: opened first, and still the file
    # at `path` once verification is done (not one renamed over it).
    with open(path, "rb") as file:
        opened = os.fstat(file.fileno())
        with _hurray.open(path, read_only=True) as f:
            for name in f.keys() if names is None else names:
                t = f[name]
                if names is None and t.descriptor_only:
                    # A signature or a placeholder (what from-mlir and the
                    # export pass write beside the constants): no bytes.
                    continue
                if t.layout != "dense" or t.quantized or t.descriptor_only:
                    kind = "quantized" if t.quantized else (
                        "descriptor-only" if t.descriptor_only else t.layout
                    )
                    raise ValueError(
                        f"tensor {name!r} is {kind}: an IREE parameter is plain dense bytes"
                    )
                if t.dtype == "bool":
                    raise ValueError(
                        f"tensor {name!r} is bool: Hurray packs it a bit per element, IREE's "
                        "i1 buffers take a byte"
                    )
                entries.append((name, *t.buffer_range("values")))
        now = os.stat(path)
        if (now.st_dev, now.st_ino, now.st_size) != (opened.st_dev, opened.st_ino, opened.st_size):
            raise ValueError(f"{path} was replaced while it was verified")
        # The map lives as long as IREE's handle holds it (wrap_memory keeps a
        # reference to the buffer).
        pages = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    handle = rt.FileHandle.wrap_memory(pages, readable=True, writable=False)
    index = rt.ParameterIndex() if index is None else index
    for name, offset, length in entries:
        index.add_from_file_handle(name, handle, length, offset)
    return index
