"""``safe_open``: safetensors' reading verbs over a Hurray file or the index
of a sharded checkpoint."""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Tuple

from . import _convert, _hurray


class safe_open:
    """Opens a Hurray file for reading tensors into ``framework``.

    ``framework`` is ``"np"``, ``"pt"``, ``"jax"`` or ``"flax"`` (as in
    safetensors; ``"numpy"`` and ``"torch"`` are accepted too). The file is
    memory-mapped copy-on-write: tensors arrive zero-copy and writable, and
    a write never reaches the file. ``read_only=True`` maps it read-only
    instead (exports carry DLPack's read-only flag). A URL's tensors are
    read into this process's memory: writable in place as well, the object
    never changed; read-only with ``read_only=True``.

    Use it as a context manager::

        with hurray.safe_open("model.hurray", framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
            rows = f.get_slice("embed")[0:16]

    Tensors taken from the file stay valid after the ``with`` block.

    ``filename`` may be the index file of a sharded checkpoint (format 1.3,
    written by :func:`hurray.save_sharded` or :class:`hurray.ShardedWriter`):
    the same verbs then see every logical tensor of the checkpoint, whole or
    stored in pieces across member files. ``get_tensor`` assembles a copy;
    ``get_slice(name)[...]`` opens only the members holding the slice and
    reads only its bytes; ``verify_checksums()`` also checks every member's
    length and CRC-32C against the index.

    ``filename`` may be a URL of an object store (``s3://``, ``gs://``,
    ``az://``, ``http(s)://``): opening reads the header with two range GETs,
    each tensor is read (range GETs) when asked for, into memory of its own
    that the file keeps, and a slice reads only the span of bytes it covers. Credentials and endpoints come from
    the environment as the stores' own tools read them (``AWS_*``,
    ``GOOGLE_*``, ``AZURE_*``); ``storage_options`` (``object_store`` keys
    such as ``aws_endpoint``) override them. A sharded checkpoint's index at
    a URL finds its members next to it.

    ``keys()`` lists the tensors that hold values, so ``for k in f.keys():
    f.get_tensor(k)`` reads every one; descriptor-only tensors (a type and
    shape, no data, as an MLIR function's arguments and results) are listed
    by ``descriptor_only_keys()``. A quantized tensor's codes are not its
    values: ``get_tensor`` refuses it (naming the remedies) unless
    ``dequantize=True``, which makes it its float32 values of its shape, as
    ``get_dequantized`` always does (not in safetensors).

    ``verify`` makes the loader refuse what fails a check (not in
    safetensors): ``True`` checks each tensor's checksums and digests when
    it is first read; a public key (the path of a PEM file, or its PEM text
    as bytes) also checks the signature beside the file (``filename +
    ".sig"``, or ``signature``) before anything is read, raising
    :class:`hurray.SignatureError`, and then requires the file's digests: a
    tensor whose bytes differ raises :class:`hurray.ChecksumError` when it
    is read. A sharded checkpoint's members are each checked against the
    index when first opened. Only the tensors read are hashed.
    """

    def __init__(
        self,
        filename,
        framework: str,
        device: Any = "cpu",
        *,
        read_only: bool = False,
        storage_options: Optional[Dict[str, str]] = None,
        verify: Any = None,
        signature: Optional[str] = None,
        dequantize: bool = False,
    ):
        if framework not in _convert.FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(_convert.FRAMEWORKS)}, not {framework!r}")
        self._framework = framework
        self._device = device
        self._dequantize = dequantize
        # Whole-tensor views that slices index, made once per name.
        self._views: Dict[str, Any] = {}
        # Tensors whose checksums and digests were checked (with `verify`).
        self._verify = verify is not None and verify is not False
        self._verified: set = set()
        location = str(filename)
        # Whether tensors are in a map that slices may view in place.
        self._mapped = not _hurray.is_url(location)
        if _hurray.is_url(location):
            # The header now (two range GETs), each tensor when first used.
            self._file = _hurray.open(location, read_only=read_only, storage_options=storage_options)
            self._check_signature(verify, signature, storage_options)
            if self._file.is_shard_index:
                # The checkpoint of this index, the one whose signature was
                # checked: it is not fetched again.
                self._file = _hurray.open_sharded_index(self._file, storage_options=storage_options)
            return
        if storage_options:
            raise ValueError(f"{location}: storage_options apply to URLs, and this is a local path")
        self._file = _hurray.open(location, read_only=read_only)
        self._check_signature(verify, signature, None)
        if self._file.is_shard_index:
            # The checkpoint of this index (the one whose signature was
            # checked), not a second open of its path. Members are mapped as
            # a plain file would be: a tensor one member holds whole is
            # exported in place.
            self._file = _hurray.open_sharded_index(self._file, read_only=read_only)

    def _check_signature(self, verify: Any, signature: Optional[str], storage_options) -> None:
        """With a key as ``verify``, the signature over the open header."""
        if verify is None or isinstance(verify, bool):
            if signature is not None:
                raise ValueError("signature= is the signature to check with a key given as verify=")
            return
        _hurray.check_signature(
            self._file,
            verify if isinstance(verify, bytes) else str(verify),
            signature=None if signature is None else str(signature),
            storage_options=storage_options,
        )

    def _checked(self, name: str, tensor):
        """``tensor``, its checksums and digests checked first when the
        loader verifies (once per name)."""
        if self._verify and name not in self._verified:
            if not tensor.verify_checksum():
                raise ValueError(f"{name}: verify was asked for, but the file records no checksums or digests of it")
            self._verified.add(name)
        return tensor

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

    @property
    def sharded(self) -> bool:
        """Whether the file is the index of a sharded checkpoint. Not in safetensors."""
        return isinstance(self._open(), _hurray.ShardedFile)

    def keys(self) -> List[str]:
        """Names of the tensors that hold values, sorted: every name
        ``get_tensor`` (or, for a quantized tensor, ``get_dequantized``)
        reads. Descriptor-only tensors are left out (see
        :meth:`descriptor_only_keys`)."""
        f = self._open()
        return f.keys() if isinstance(f, _hurray.ShardedFile) else f.data_keys()

    def descriptor_only_keys(self) -> List[str]:
        """Names of the descriptor-only tensors, sorted: a type and a shape
        (dynamic dimensions as ``None``), no data, as ``hurray from-mlir``
        writes an MLIR function's arguments and results. Their descriptors
        are ``hurray.open(path)[name]`` (``dtype``, ``shape``); ``get_tensor``
        refuses them. Not in safetensors."""
        f = self._open()
        if isinstance(f, _hurray.ShardedFile):
            return []
        return f.descriptor_only_keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        """File-wide metadata, or None when there is none (as safetensors)."""
        return dict(self._open().metadata) or None

    def verify_checksums(self) -> bool:
        """Reads every tensor and checks each buffer against the checksum the
        file records: True when all match, False when the file records none.
        Raises ``hurray.ChecksumError`` (naming the tensor, the buffer and
        both values) on a mismatch. Over a sharded checkpoint's index it
        first reads every member whole and compares its length and CRC-32C
        with the index's, raising ``hurray.MemberMismatchError`` (a
        ``ChecksumError``) naming the member that differs. Not in
        safetensors, which has no checksums."""
        return self._open().verify_checksums()

    def verify_checksum(self, name: str) -> bool:
        """As :meth:`verify_checksums`, for one tensor (``KeyError`` if none
        has that name)."""
        return self._open()[name].verify_checksum()

    def get_tensor(self, name: str):
        """The whole tensor, in the framework (zero-copy where the framework
        has the type, a tensor of a sharded checkpoint that one member holds
        whole included; a tensor stored in pieces is a copy assembled from
        them). A quantized tensor is refused, naming :meth:`get_dequantized`
        (its stored codes are not its values), unless the file was opened
        with ``dequantize=True``: then it is its float32 values."""
        return self._get(name, dequantize=self._dequantize)

    def get_dequantized(self, name: str):
        """A quantized tensor's values as float32 of its shape, in the
        framework (a copy): the runtime's one dequantization, the same in
        Rust, Python and C, for every quantization a Hurray file can hold
        (GGUF's types included, equal to ``gguf.quants.dequantize`` bit for
        bit). ``ValueError`` for a tensor that is not quantized."""
        return self._get(name, dequantize=True, quantized_only=True)

    def _get(self, name: str, dequantize: bool, quantized_only: bool = False):
        """``get_tensor``, or with ``dequantize`` a quantized tensor's float32
        values; with ``quantized_only``, ``ValueError`` for a tensor that is
        not quantized or is stored in pieces (``get_dequantized``)."""
        tensor = self._checked(name, self._open()[name])
        if isinstance(tensor, _hurray.ShardedTensor):
            whole = tensor.whole()
            if whole is None:
                if quantized_only:
                    raise ValueError(f"tensor {name!r} is stored in pieces; dequantize each member's piece")
                return _convert.to_framework(tensor.assemble(), self._framework, self._device, copy=True)
            tensor = whole
        if quantized_only and not tensor.quantized:
            raise ValueError(f"tensor {name!r} is not quantized: read it with get_tensor")
        return _convert.to_framework(tensor, self._framework, self._device, dequantize=dequantize)

    def get_slice(self, name: str) -> "TensorSlice":
        """A lazy handle: index it (``[a:b, i, ...]``) to read only that part
        (with ``verify``, the whole tensor is read and checked first: its
        digests cover whole buffers)."""
        return TensorSlice(self, self._checked(name, self._open()[name]))

    def _view(self, tensor):
        """The whole tensor for slices to index and copy: a zero-copy view of
        the map, kept (made once per name). Byte-multiple types only: the
        others are read with ``read_slice``."""
        view = self._views.get(tensor.name)
        if view is not None:
            return view
        facts = _convert.BY_NAME[tensor.dtype]
        if self._framework in ("pt", "torch"):
            if facts.cls == "float":
                _convert.check_torch_has(tensor, facts)
            # Zero-copy even over a read-only map: only the slice's copy
            # ever leaves this object, so nothing writes through it.
            import torch

            view = torch.from_dlpack(tensor)
        else:
            view = _convert.to_numpy(tensor)
        self._views[tensor.name] = view
        return view


def _plan(index, shape: Tuple[int, ...]):
    """A NumPy basic index of a tensor of ``shape`` as ``read_slice`` ranges
    (one ``(start, stop, step)`` per dimension, steps >= 1) and the shape
    NumPy gives the result: an integer drops its dimension, ``None`` adds
    one of size 1, ``...`` stands for the dimensions not indexed."""
    items = index if isinstance(index, tuple) else (index,)
    # By identity: an array among the items must not be compared with `==`.
    ellipses = [k for k, i in enumerate(items) if i is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    indexed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if indexed > len(shape):
        raise IndexError(
            f"too many indices for tensor: tensor is {len(shape)}-dimensional, but {indexed} were indexed"
        )
    rest = (slice(None),) * (len(shape) - indexed)
    at = ellipses[0] if ellipses else len(items)
    items = items[:at] + rest + items[at + 1 :]
    ranges, out, dim = [], [], 0
    for item in items:
        if item is None:
            out.append(1)
            continue
        size = shape[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            if step < 0:
                raise ValueError(
                    f"get_slice reads steps of 1 or more (dimension {dim} has step {step}): "
                    "read with a positive step and reverse the result"
                )
            stop = max(start, stop)
            ranges.append((start, stop, step))
            out.append(len(range(start, stop, step)))
        else:
            if isinstance(item, bool):
                raise TypeError("get_slice takes integers, slices, None and '...', not booleans")
            try:
                i = operator.index(item)
            except TypeError:
                raise TypeError(
                    f"get_slice takes integers, slices, None and '...' (a basic index), not {type(item).__name__}"
                ) from None
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            i %= size
            ranges.append((i, i + 1, 1))
        dim += 1
    return ranges, tuple(out)


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
        tensor = self._tensor
        facts = _convert.BY_NAME[tensor.dtype]
        if self._framework in ("jax", "flax"):
            _convert.check_jax_holds(tensor, facts)
        if isinstance(tensor, _hurray.ShardedTensor) or facts.bits < 8 or not self._source._mapped:
            # Sub-byte types and bools have no view to index, a sharded
            # tensor no single map, and a tensor at a URL no map at all: the
            # runtime reads the slice's elements (of the pieces it meets;
            # from a URL, the span of bytes they cover) into a tensor of
            # their own.
            shape = tuple(0 if d is None else d for d in tensor.shape)  # descriptor-only: refused by read_slice
            ranges, out_shape = _plan(index, shape)
            part = tensor.read_slice(ranges)
            return _convert.to_framework(part, self._framework, self._device, copy=True).reshape(out_shape)
        # A view of the map, indexed, then copied: only the pages of the
        # slice are read.
        full = self._source._view(tensor)
        if self._framework in ("pt", "torch"):
            out = full[index].clone()
            return out if str(self._device) == "cpu" else out.to(self._device)
        import numpy as np

        part = np.array(full[index], copy=True)
        if self._framework in ("jax", "flax"):
            import jax.numpy as jnp

            return jnp.asarray(part)
        return part
