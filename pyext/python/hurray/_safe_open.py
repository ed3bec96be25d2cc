"""``safe_open``: safetensors' reading verbs over a Hurray file."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _convert, _hurray


class safe_open:
    """Opens a Hurray file for reading tensors into ``framework``.

    ``framework`` is ``"np"``, ``"pt"``, ``"jax"`` or ``"flax"`` (as in
    safetensors; ``"numpy"`` and ``"torch"`` are accepted too). The file is
    memory-mapped copy-on-write: tensors arrive zero-copy and writable, and
    a write never reaches the file. ``read_only=True`` maps it read-only
    instead (exports carry DLPack's read-only flag).

    Use it as a context manager::

        with hurray.safe_open("model.hurray", framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
            rows = f.get_slice("embed")[0:16]

    Tensors taken from the file stay valid after the ``with`` block.
    """

    def __init__(self, filename, framework: str, device: Any = "cpu", *, read_only: bool = False):
        if framework not in _convert.FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(_convert.FRAMEWORKS)}, not {framework!r}")
        self._framework = framework
        self._device = device
        self._file = _hurray.open(str(filename), read_only=read_only)
        # Whole-tensor views that slices index, made once per name.
        self._views: Dict[str, Any] = {}

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc) -> None:
        # Tensors already taken keep the map alive through their exports.
        self._file = None
        self._views.clear()

    def _open(self):
        if self._file is None:
            raise ValueError("the file was closed (used after its `with` block)")
        return self._file

    def keys(self) -> List[str]:
        """Tensor names, sorted."""
        return self._open().keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        """File-wide metadata, or None when there is none (as safetensors)."""
        return dict(self._open().metadata) or None

    def verify_checksums(self) -> bool:
        """Reads every tensor and checks each buffer against the checksum the
        file records: True when all match, False when the file records none.
        Raises ``hurray.ChecksumError`` (naming the tensor, the buffer and
        both values) on a mismatch. Not in safetensors, which has no checksums."""
        return self._open().verify_checksums()

    def verify_checksum(self, name: str) -> bool:
        """As :meth:`verify_checksums`, for one tensor (``KeyError`` if none
        has that name)."""
        return self._open()[name].verify_checksum()

    def get_tensor(self, name: str):
        """The whole tensor, in the framework (zero-copy where the framework has the type)."""
        return _convert.to_framework(self._open()[name], self._framework, self._device)

    def get_slice(self, name: str) -> "TensorSlice":
        """A lazy handle: index it (``[a:b, i, ...]``) to read only that part."""
        return TensorSlice(self, self._open()[name])

    def _view(self, tensor):
        """The whole tensor for slices to index and copy: a zero-copy view of
        the map where one exists (kept, made once per name), else an
        unpacked copy (bools, sub-byte types; not kept)."""
        view = self._views.get(tensor.name)
        if view is not None:
            return view
        facts = _convert.BY_NAME[tensor.dtype]
        in_place = facts.bits >= 8 and facts.cls != "bool"
        if self._framework in ("pt", "torch"):
            if facts.cls == "float":
                _convert.check_torch_has(tensor, facts)
            if in_place:
                # Zero-copy even over a read-only map: only the slice's copy
                # ever leaves this object, so nothing writes through it.
                import torch

                view = torch.from_dlpack(tensor)
            else:
                view = _convert.to_torch(tensor)
        else:
            view = _convert.to_numpy(tensor)
        if in_place:
            self._views[tensor.name] = view
        return view


class TensorSlice:
    """A tensor not yet read; indexing it reads only the indexed bytes."""

    def __init__(self, source: safe_open, tensor):
        self._source = source
        self._tensor = tensor
        self._framework = source._framework
        self._device = source._device

    def get_shape(self) -> List[int]:
        return list(self._tensor.shape)

    def get_dtype(self) -> str:
        """The Hurray element type name (``f32``, ``bf16``, ``i4``, ...)."""
        return self._tensor.dtype

    def __len__(self) -> int:
        shape = self._tensor.shape
        if not shape:
            raise TypeError("len() of a rank-0 tensor")
        return shape[0]

    def __getitem__(self, index):
        # A view of the map, indexed, then copied: only the pages of the
        # slice are read.
        if self._framework in ("jax", "flax"):
            _convert.check_jax_holds(self._tensor, _convert.BY_NAME[self._tensor.dtype])
        full = self._source._view(self._tensor)
        if self._framework in ("pt", "torch"):
            out = full[index].clone()
            return out if str(self._device) == "cpu" else out.to(self._device)
        import numpy as np

        part = np.array(full[index], copy=True)
        if self._framework in ("jax", "flax"):
            import jax.numpy as jnp

            return jnp.asarray(part)
        return part
