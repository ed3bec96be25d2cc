"""Tensors of a Hurray file into NumPy, PyTorch and JAX, and back.

Every element-type fact comes from the runtime (``_hurray.element_types()``,
generated from the schema); this module only decides which road each type
takes into each framework:

- the types a framework has arrive zero-copy through DLPack (writable over a
  copy-on-write map, read-only over a read-only one);
- 1-bit bools arrive as the framework's one-byte bool (an unpacked copy);
- bf16 and the 8-bit floats (float8_e4m3fn, float8_e5m2, float8_e8m0fnu,
  float8_e4m3fnuz, float8_e5m2fnuz, float8_e3m4, float8_e4m3,
  float8_e4m3b11fnuz) reach NumPy as ``ml_dtypes`` views of the stored bits
  (zero-copy), PyTorch as its own type where it has one (``torch.<ml_dtypes
  name>``, zero-copy);
- sub-byte types (int4, uint2, float4_e2m1fn, float6_e2m3fn, ...) reach NumPy
  and JAX as ``ml_dtypes`` arrays (a copy, one element per byte); PyTorch gets
  sub-byte integers as int8/uint8 (sign-extended);
- a quantized tensor's codes are not its values: it is refused (naming
  ``dequantize=True`` and ``get_dequantized``), or with ``dequantize=True``
  arrives as float32 values of its shape (:func:`dequantized`, a copy);
- a float type a framework has no scalar type for (PyTorch: fp4, fp6 and the
  fp8 types without a ``torch.float8_*``; JAX: those its backend cannot hold,
  fp6 on the CPU) raises TypeError naming the tensor.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, Optional

from . import _hurray


class _Facts(NamedTuple):
    name: str
    bits: int
    numpy: Optional[str]
    ml_dtypes: Optional[str]
    dlpack: tuple
    safetensors: Optional[str]
    cls: str


BY_NAME = {
    d["name"]: _Facts(
        d["name"], d["bits"], d["numpy"], d["ml_dtypes"], tuple(d["dlpack"]), d["safetensors"], d["class"]
    )
    for d in _hurray.element_types()
}
_BY_NUMPY = {f.numpy: f.name for f in BY_NAME.values() if f.numpy}
_BY_ML_DTYPES = {f.ml_dtypes: f.name for f in BY_NAME.values() if f.ml_dtypes}

FRAMEWORKS = ("np", "numpy", "pt", "torch", "jax", "flax")


def _ml_dtypes(facts: _Facts, name: str):
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(
            f"tensor {name!r} is {facts.name}, which NumPy lacks; install ml_dtypes "
            f"(pip install ml_dtypes) to read it as ml_dtypes.{facts.ml_dtypes}"
        ) from None
    dtype = getattr(ml_dtypes, facts.ml_dtypes, None)
    if dtype is None:
        raise TypeError(
            f"tensor {name!r} is {facts.name}, which ml_dtypes {ml_dtypes.__version__} lacks; "
            f"upgrade it (pip install -U ml_dtypes) to read it as ml_dtypes.{facts.ml_dtypes}"
        )
    return dtype


class _Copied:
    """A tensor whose DLPack export is always a copy (``copy=True``)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        kwargs["copy"] = True
        return self._tensor.__dlpack__(**kwargs)


def check_exportable(tensor) -> None:
    """Refuses, naming the tensor and the way to its values, what no
    framework array can be: a quantized tensor's codes (DLPack cannot carry
    its scales) and a descriptor-only tensor (it has no data)."""
    if tensor.quantized:
        raise _hurray.HurrayError(
            f"tensor {tensor.name!r} is quantized: its stored codes are not its values, and DLPack cannot "
            "carry its scales and zero points. Read its float32 values with load_file(..., dequantize=True) "
            "or safe_open(..., dequantize=True) (every quantized tensor of the file), or "
            f"safe_open(...).get_dequantized({tensor.name!r})"
        )
    if tensor.descriptor_only:
        raise _hurray.HurrayError(
            f"tensor {tensor.name!r} is descriptor-only: the file records its type and shape (as an MLIR "
            "function's argument or result), not values. safe_open(...).keys() and load_file list the "
            "tensors with values; descriptor_only_keys() lists these"
        )


def dequantized(tensor, framework: str, device: Any = "cpu"):
    """A quantized tensor's values as float32 of its shape in ``framework``
    (a copy: the runtime's one dequantization)."""
    import numpy as np

    values = np.asarray(tensor.dequantize())
    if framework in ("pt", "torch"):
        import torch

        out = torch.from_numpy(values)
        return out if str(device) == "cpu" else out.to(device)
    if framework in ("jax", "flax"):
        import jax
        import jax.numpy as jnp

        out = jnp.asarray(values)
        return out if str(device) == "cpu" else jax.device_put(out, jax.devices(str(device))[0])
    if framework in ("np", "numpy"):
        return values
    raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {framework!r}")


def to_numpy(tensor, dtype=None, copy: Optional[bool] = None):
    """The tensor as a NumPy array: zero-copy unless a copy is asked for or needed."""
    import numpy as np

    check_exportable(tensor)

    facts = BY_NAME[tensor.dtype]
    if facts.numpy:
        array = np.from_dlpack(tensor, copy=copy)
    elif facts.bits >= 8:
        array = np.from_dlpack(tensor.stored_bits(), copy=copy).view(_ml_dtypes(facts, tensor.name))
    else:
        if copy is False:
            raise BufferError(f"tensor {tensor.name!r}: {facts.name} reaches NumPy only unpacked, as a copy")
        ml = _ml_dtypes(facts, tensor.name)
        array = np.frombuffer(bytearray(tensor.unpacked()), dtype=ml).reshape(tensor.shape)
    if dtype is not None:
        array = array.astype(dtype, copy=False)
    return array


def to_torch(tensor, device: Any = "cpu", copy: Optional[bool] = None):
    """The tensor as a torch.Tensor: zero-copy (writable over a copy-on-write map)."""
    import torch

    check_exportable(tensor)
    facts = BY_NAME[tensor.dtype]
    if not tensor.writable:
        # torch ignores DLPack's read-only flag: a write to a tensor over a
        # read-only map would crash the process, so it gets a copy.
        if copy is False:
            raise BufferError(
                f"tensor {tensor.name!r}: the file is open read-only and PyTorch ignores DLPack's "
                "read-only flag; open it copy-on-write (the default) for zero-copy tensors"
            )
        copy = True
    if facts.cls == "float":
        check_torch_has(tensor, facts)
    if facts.bits >= 8 or facts.cls == "bool":
        out = torch.from_dlpack(_Copied(tensor) if copy else tensor)
    elif facts.cls in ("int", "uint"):
        # torch has no sub-byte integers: the nearest it has, every value exact.
        signed = facts.cls == "int"
        data = bytearray(tensor.unpacked(sign_extend=signed))
        dtype = torch.int8 if signed else torch.uint8
        out = torch.frombuffer(data, dtype=dtype).reshape(tensor.shape) if data else torch.empty(
            tensor.shape, dtype=dtype
        )
    else:
        raise TypeError(f"tensor {tensor.name!r} is {facts.name}, which PyTorch has no type for")
    return out if str(device) == "cpu" else out.to(device)


def check_torch_has(tensor, facts: _Facts) -> None:
    """Refuses, naming the tensor, a float type PyTorch has no scalar type
    for. PyTorch names its types as ml_dtypes does (``torch.bfloat16``,
    ``torch.float8_e4m3fnuz``); it has no sub-byte float scalar type
    (``torch.float4_e2m1fn_x2`` packs pairs)."""
    import torch

    if facts.bits >= 8 and (not facts.ml_dtypes or hasattr(torch, facts.ml_dtypes)):
        return
    raise TypeError(
        f"tensor {tensor.name!r} is {facts.name}, which PyTorch {torch.__version__} has no scalar type "
        f"for (no torch.{facts.ml_dtypes}); read it with framework='np' (ml_dtypes)"
    )


@functools.lru_cache(maxsize=None)
def _jax_holds(ml_name: str) -> bool:
    """Whether JAX has ``ml_name`` and its default backend can hold an array
    of it (jax.numpy names fp6 types the CPU backend cannot make arrays of)."""
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np

    if not hasattr(jnp, ml_name):
        return False
    try:
        jnp.asarray(np.zeros(1, dtype=getattr(ml_dtypes, ml_name)))
    except Exception:  # the backend's refusal (JaxRuntimeError, TypeError, ...)
        return False
    return True


def check_jax_holds(tensor, facts: _Facts) -> None:
    """Refuses, naming the tensor, a type JAX cannot hold."""
    if facts.ml_dtypes and not _jax_holds(facts.ml_dtypes):
        import jax

        raise TypeError(
            f"tensor {tensor.name!r} is {facts.name}, which JAX {jax.__version__} cannot hold "
            f"(jax.numpy.{facts.ml_dtypes} on its {jax.default_backend()} backend); "
            "read it with framework='np' (ml_dtypes)"
        )


def to_jax(tensor, device: Any = "cpu"):
    """The tensor as a jax.Array (JAX arrays are immutable: JAX may copy)."""
    import jax
    import jax.numpy as jnp

    check_exportable(tensor)
    facts = BY_NAME[tensor.dtype]
    check_jax_holds(tensor, facts)
    if facts.numpy and facts.cls != "bool" and tensor.writable:
        # JAX asks for legacy DLPack, which cannot say "read-only": over a
        # read-only map it goes through NumPy (which honours the flag).
        out = jax.dlpack.from_dlpack(tensor)
    else:
        out = jnp.asarray(to_numpy(tensor))
    if str(device) != "cpu":
        out = jax.device_put(out, jax.devices(str(device))[0])
    return out


def to_framework(
    tensor, framework: str, device: Any = "cpu", copy: Optional[bool] = None, dequantize: bool = False
):
    """``tensor`` in ``framework`` (``np``/``numpy``, ``pt``/``torch``, ``jax``/``flax``);
    with ``dequantize``, a quantized tensor as its float32 values."""
    if dequantize and tensor.quantized:
        return dequantized(tensor, framework, device)
    if framework in ("np", "numpy"):
        return to_numpy(tensor, copy=copy)
    if framework in ("pt", "torch"):
        return to_torch(tensor, device, copy=copy)
    if framework in ("jax", "flax"):
        return to_jax(tensor, device)
    raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {framework!r}")


def source(name: str, value):
    """What ``_hurray.write`` reads for one tensor: the object itself where
    it exports DLPack in a form Hurray stores, else ``(dtype, shape, bytes)``."""
    module = type(value).__module__.split(".")[0]
    if module == "torch":
        # Exported in place; only a non-contiguous or lazy (conj/neg) tensor
        # is materialised first, as torch requires for DLPack.
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return t.resolve_conj().resolve_neg().contiguous()
    if module == "hurray":
        return value  # a tensor of another Hurray file: no NumPy needed
    import numpy as np

    array = np.asarray(value, order="C")
    dtype = array.dtype
    if dtype.str in _BY_NUMPY:
        return array
    if dtype.name in _BY_ML_DTYPES:
        # ml_dtypes arrays export no DLPack: hand over their bytes (sub-byte
        # types one element per byte, packed by the runtime).
        return (_BY_ML_DTYPES[dtype.name], array.shape, array.reshape(-1).view(np.uint8))
    raise ValueError(f"tensor {name!r}: dtype {dtype} ({dtype.str}) has no Hurray element type")


def write(path, tensors, metadata=None, durable=True, checksums=True, digests=False, storage_options=None):
    """Writes a mapping name -> tensor (any framework) to ``path`` (a local
    path, or an object store URL: one multipart upload), or to bytes with
    ``path=None``. The file appears whole or not at all; with
    ``durable=True`` it is also flushed to the disk before it appears.
    ``checksums=False`` records no per-buffer checksums; ``digests=True``
    records a BLAKE3 digest of each buffer (so the file can be signed)."""
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"metadata must map str to str, got {k!r}: {v!r}")
    items = ((name, source(name, value)) for name, value in tensors.items())
    return _hurray.write(
        None if path is None else str(path),
        items,
        metadata,
        durable=durable,
        checksums=checksums,
        digests=digests,
        storage_options=storage_options,
    )


def write_member(location, tensors, durable=True, storage_options=None):
    """Writes a member of a sharded checkpoint that another process indexes
    (a local path or an object store URL); returns its ``(size, crc32c,
    file_id)``, computed as it was written, for ``ShardedWriter.adopt_member``."""
    items = ((name, source(name, value)) for name, value in tensors.items())
    return _hurray.write_member(str(location), items, durable=durable, storage_options=storage_options)
