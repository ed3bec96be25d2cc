"""Hurray tensor files for Python.

``hurray.open(path)`` memory-maps and verifies a file and returns a read-only
mapping of tensor names to :class:`Tensor` objects. Each tensor implements the
DLPack protocol (``__dlpack__`` / ``__dlpack_device__``), so
``numpy.from_dlpack(f["w"])`` (or ``torch.from_dlpack``) views the mapped bytes
without copying; the export keeps the file mapped until the consumer is done
with it. ``hurray.save(path, {"name": array, ...})`` writes NumPy arrays.
"""

from collections.abc import Mapping

from ._hurray import File, HurrayError, Tensor, __version__, open, save

Mapping.register(File)

__all__ = ["File", "HurrayError", "Tensor", "open", "save", "__version__"]
