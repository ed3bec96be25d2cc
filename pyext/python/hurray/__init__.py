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

Signed checkpoints (format 1.4): write with ``digests=True`` (a BLAKE3
digest of every buffer, so the header commits to every byte), sign with
``hurray.sign(path, "key.pem")`` (an ed25519 key as ``openssl genpkey
-algorithm ed25519`` writes it; the signature goes to ``path + ".sig"``),
check everything with ``hurray.verify(path, "key.pub")``, or load with
``safe_open(path, ..., verify="key.pub")``: the signature is checked at
open and each tensor's digests when it is read.
"""

from collections.abc import Mapping

from ._hurray import (
    ChecksumError,
    File,
    HurrayError,
    MemberMismatchError,
    SignatureError,
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
from ._hurray import sign as _sign, verify as _verify

# The framework modules import their framework only when called.
from . import flax, jax, numpy, torch  # noqa: E402


def save(path, tensors, metadata=None, *, durable=True, checksums=True, digests=False) -> None:
    """Writes ``tensors`` (a mapping name -> NumPy/torch/JAX array or
    anything ``numpy.asarray`` accepts) to ``path`` atomically. bools are
    packed to Hurray's 1-bit bools; dtypes without a Hurray counterpart
    (object, datetime, big-endian ...) raise ValueError, writing nothing.
    ``durable=False`` skips the fsync (still atomic for every reader).
    Each buffer's CRC-32C is recorded (``File.verify_checksums()`` checks
    them); ``checksums=False`` records none. ``digests=True`` records a
    BLAKE3 digest of each buffer too, so the file can be signed
    (:func:`sign`)."""
    _write(path, tensors, metadata, durable, checksums, digests)


def sign(path, private_key, output=None) -> str:
    """Signs the Hurray file (or sharded checkpoint index) at ``path``,
    written with ``digests=True``: an ed25519 signature over its header
    digest, which commits to every byte (of every member). ``private_key``
    is the path of a PEM key (``openssl genpkey -algorithm ed25519``) or
    its PEM text as bytes. Writes ``output`` (``path + ".sig"`` by default)
    and returns its path. A URL is refused: sign before uploading."""
    return str(_sign(str(path), private_key, None if output is None else str(output)))


def verify(path, public_key, *, signature=None, storage_options=None):
    """Checks the signature of the file (or sharded checkpoint index) at
    ``path`` (a local path or a URL) with ``public_key`` (the path of a PEM
    public key, ``openssl pkey -pubout``, or its PEM text as bytes), then
    every member's header and every buffer's digest. Returns ``(files,
    tensors)`` checked. Raises :class:`SignatureError` when the signature
    fails (another key, a changed signature, a changed header),
    :class:`ChecksumError` when a buffer's digest does not match (naming
    the tensor), :class:`MemberMismatchError` for a member that is not the
    one the index records."""
    return _verify(
        str(path),
        public_key,
        signature=None if signature is None else str(signature),
        storage_options=storage_options,
    )


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
    "SignatureError",
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
    "sign",
    "torch",
    "verify",
]
