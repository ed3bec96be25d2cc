"""Hurray tensor files for Python.

safetensors' verbs, so code ports by changing an import:

- ``hurray.safe_open(path, framework="np"|"pt"|"jax"|"flax")``: ``keys()``,
  ``metadata()``, ``get_tensor(name)``, ``get_slice(name)[a:b, ...]``;
- ``hurray.numpy``, ``hurray.torch``, ``hurray.jax`` (and ``hurray.flax``):
  ``save_file``, ``load_file``, ``save`` (to bytes), ``load`` (from bytes);
  ``hurray.torch.save_model`` / ``load_model`` store tied weights once.

Underneath, ``hurray.open(path)`` memory-maps and verifies a file and returns
a mapping of names to :class:`Tensor`. The map is copy-on-write, so tensors
imported through DLPack (``numpy.from_dlpack(f["w"])``,
``torch.from_dlpack(f["w"])``) share the file's pages, may be written, and a
write copies only the page it touches: the file never changes.
``open(path, read_only=True)`` maps it read-only; its exports carry DLPack's
read-only flag. ``hurray.save(path, {"name": array, ...})`` writes arrays of
any framework, with a CRC-32C per buffer; ``File.verify_checksums()`` (or
``safe_open(...).verify_checksums()``) reads the data and raises
:class:`ChecksumError` if a byte changed.

Sharded checkpoints (format 1.3): ``hurray.save_sharded(path, tensors,
max_shard_size=...)`` (or :class:`ShardedWriter`, which also writes a
tensor in chunks across member files) writes member files and an index;
``safe_open(index)`` reads the checkpoint as one file, and
``hurray.open_sharded(index)`` returns a :class:`ShardedFile`.

Object stores: ``safe_open("s3://bucket/model.hurray", framework=...)`` (also
``gs://``, ``az://``, ``http(s)://``) reads the header with two range GETs
and each tensor when asked for; ``hurray.open(url)`` returns the same
:class:`File` a local path gives. Credentials and endpoints come from the environment
(``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) or ``storage_options``.
"""

from collections.abc import Mapping

from ._hurray import (
    ChecksumError,
    File,
    HurrayError,
    MemberMismatchError,
    ShardedFile,
    ShardedTensor,
    StoredBits,
    Tensor,
    __version__,
    open,
    open_bytes,
    open_sharded,
    open_sharded_remote,
)
from ._safe_open import TensorSlice, safe_open
from ._sharded import ShardedWriter, save_sharded
from ._convert import write as _write

# The framework modules import their framework only when called.
from . import flax, jax, numpy, torch  # noqa: E402


def save(path, tensors, metadata=None, *, durable=True, checksums=True) -> None:
    """Writes ``tensors`` (a mapping name -> NumPy/torch/JAX array or
    anything ``numpy.asarray`` accepts) to ``path`` atomically. bools are
    packed to Hurray's 1-bit bools; dtypes without a Hurray counterpart
    (object, datetime, big-endian ...) raise ValueError, writing nothing.
    ``durable=False`` skips the fsync (still atomic for every reader).
    Each buffer's CRC-32C is recorded (``File.verify_checksums()`` checks
    them); ``checksums=False`` records none."""
    _write(path, tensors, metadata, durable, checksums)


Mapping.register(File)
Mapping.register(ShardedFile)

__all__ = [
    "ChecksumError",
    "File",
    "HurrayError",
    "MemberMismatchError",
    "ShardedFile",
    "ShardedTensor",
    "ShardedWriter",
    "StoredBits",
    "Tensor",
    "TensorSlice",
    "__version__",
    "flax",
    "jax",
    "numpy",
    "open",
    "open_bytes",
    "open_sharded",
    "open_sharded_remote",
    "safe_open",
    "save",
    "save_sharded",
    "torch",
]
