"""Type stubs of the compiled extension module ``hurray._hurray``."""

import os
import pathlib
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__version__: str

class HurrayError(Exception):
    """A Hurray file could not be opened, verified, read or written."""

class ChecksumError(HurrayError):
    """A buffer's bytes do not match the checksum the file records: the data is corrupt."""

class SignatureError(HurrayError):
    """A signature does not verify, was made with another key, or signs another header than the
    file's; or a file could not be signed (no digests, a key that is not an ed25519 key)."""

class MemberMismatchError(ChecksumError):
    """A member file of a sharded checkpoint is not what its index records (its
    length, its CRC-32C, or a piece's type and shape): replaced, truncated or corrupt."""

class Tensor:
    """One tensor of an open file; exportable with DLPack when dense."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str:
        """The element type's short name (``f32``, ``i4``, ``bf16``, ...)."""
    @property
    def shape(self) -> Tuple[Optional[int], ...]:
        """The shape; a dynamic dimension is None (0 is a real empty dimension)."""
    @property
    def layout(self) -> str:
        """``dense``, ``strided``, ``coo``, ``csr`` or ``csc``."""
    @property
    def strides(self) -> Optional[List[int]]: ...
    @property
    def writable(self) -> bool:
        """Whether imports may be written (a copy-on-write map, or a URL's
        tensors read into this process's memory; never with ``read_only=True``)."""
    @property
    def descriptor_only(self) -> bool: ...
    @property
    def quantized(self) -> bool: ...
    @property
    def nbytes(self) -> int: ...
    def buffer_range(self, role: str) -> Optional[Tuple[int, int]]:
        """Where the buffer ``role`` ("values", "indices", "scales", ...) lies in
        the file: ``(offset, length)`` from the header, ``(0, 0)`` when empty,
        None when the tensor has no such buffer."""
    @property
    def data_ptr(self) -> int: ...
    @property
    def checksums(self) -> Optional[List[Tuple[str, int]]]:
        """``(buffer role, checksum)`` per buffer as recorded, or None when the file records none."""
    def verify_checksum(self) -> bool:
        """True when every buffer matches its checksum, False when none is
        recorded; raises ChecksumError on a mismatch."""
    def tobytes(self) -> bytes: ...
    def dequantize(self) -> "DequantizedValues":
        """A quantized tensor's values, dequantized: float32 with the tensor's
        shape through the buffer protocol (``numpy.asarray`` of it is the array)."""
    def unpacked(self, *, sign_extend: bool = False) -> bytes:
        """A dense sub-byte tensor's elements one per byte."""
    def read_slice(self, ranges: Sequence[Tuple[int, int, int]]) -> "Tensor":
        """``self[ranges]``, one ``(start, stop, step)`` per dimension
        (``0 <= start <= stop <= size``, ``step >= 1``; the rank is kept),
        reading only the bytes the slice covers: a tensor of its own, in
        memory (read-only exports). Raises IndexError for ranges that do not fit."""
    def stored_bits(self) -> "StoredBits": ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> Any: ...

class DequantizedValues:
    """A quantized tensor's values as float32, row-major, with its shape, through the
    buffer protocol (format ``f``, writable): ``numpy.asarray`` and ``memoryview`` take it
    as an array of the tensor's shape (``torch.asarray`` reads buffers flat: go through NumPy)."""

    @property
    def shape(self) -> List[int]: ...
    @property
    def dtype(self) -> str:
        """Always ``"f32"``."""
    @property
    def nbytes(self) -> int: ...
    def tobytes(self) -> bytes:
        """The values as row-major native-endian float32 bytes (a copy)."""
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int) -> memoryview: ...

class StoredBits:
    """A tensor exported as the unsigned integers of its width, bits unchanged."""

    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...

class File:
    """A verified Hurray file: a read-only mapping of tensor names to tensors."""

    def __len__(self) -> int: ...
    def __getitem__(self, name: str) -> Tensor: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def keys(self) -> List[str]:
        """Every tensor's name, descriptor-only tensors included, in file order."""
    def data_keys(self) -> List[str]:
        """Names of the tensors that hold data (what ``safe_open(...).keys()`` lists)."""
    def descriptor_only_keys(self) -> List[str]:
        """Names of the tensors that record a type and shape but no data."""
    def values(self) -> List[Tensor]: ...
    def items(self) -> List[Tuple[str, Tensor]]: ...
    def get(self, name: str, default: Any = None) -> Any: ...
    @property
    def metadata(self) -> Dict[str, str]: ...
    @property
    def version(self) -> Tuple[int, int]: ...
    @property
    def writable(self) -> bool: ...
    @property
    def is_shard_index(self) -> bool:
        """Whether the file is the index of a sharded checkpoint (no tensors of its own)."""
    def address_range(self) -> Tuple[int, int]:
        """The map's addresses; ValueError for a file read from a URL."""
    @property
    def size(self) -> int:
        """The file's length in bytes."""
    def read(self, names: Optional[Sequence[str]] = None) -> None:
        """Reads the named tensors (all when None) in: a URL's not read yet
        now, in one batch of coalesced range GETs; of a mapped file, reads
        the pages not in memory yet in and maps them (several threads, in
        the file's order) and returns when they are in."""
    def verify_checksums(self) -> bool:
        """Reads every tensor: True when all recorded checksums match, False
        when the file records none; raises ChecksumError on a mismatch."""
    def __enter__(self) -> "File": ...
    def __exit__(self, *args: Any) -> bool: ...

class ShardedTensor:
    """One logical tensor of a sharded checkpoint, whole or in pieces across members."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def pieces(self) -> List[Tuple[str, str, List[int], List[int]]]:
        """``(member path, tensor name in the member, offset, shape)`` per piece."""
    def read_slice(self, ranges: Sequence[Tuple[int, int, int]]) -> Tensor:
        """As ``Tensor.read_slice``, reading only the pieces the slice meets."""
    def whole(self) -> Optional[Tensor]:
        """The tensor in place, without a copy, when one piece holds all of it; None otherwise."""
    def assemble(self) -> Tensor:
        """The whole tensor copied out of its pieces, as a tensor in memory."""
    def verify_checksum(self) -> bool:
        """Every piece's buffers against the checksums their members record."""

class ShardedFile:
    """A sharded checkpoint opened through its index: a mapping of names to ShardedTensor."""

    def __len__(self) -> int: ...
    def __getitem__(self, name: str) -> ShardedTensor: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def keys(self) -> List[str]: ...
    @property
    def metadata(self) -> Dict[str, str]: ...
    @property
    def members(self) -> List[Tuple[str, int, int]]:
        """``(path, size, crc32c)`` of each member, as the index records them."""
    def verify_members(self) -> None:
        """Each member's length and CRC-32C against the index; raises MemberMismatchError."""
    def verify_checksums(self) -> bool:
        """verify_members, then every buffer checksum the members record."""
    def __enter__(self) -> "ShardedFile": ...
    def __exit__(self, *args: Any) -> bool: ...

class ShardedWriter:
    """A sharded checkpoint being written: members as tensors arrive, the index on finish()."""

    def __init__(
        self,
        index_path: Union[str, os.PathLike],
        *,
        max_shard_size: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        durable: bool = True,
        digests: bool = False,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        """``index_path`` may be an object store URL (``s3://...``): members
        and index are then objects, each one multipart upload."""
    def start_member(self, path: str) -> None: ...
    def member_path(self, preferred: str) -> str: ...
    def set_metadata(self, key: str, value: str) -> None: ...
    def abort(self) -> None: ...
    def add(self, name: str, source: Any) -> None: ...
    def add_chunk(self, name: str, shape: Sequence[int], offset: Sequence[int], source: Any) -> None: ...
    def adopt_member(
        self,
        path: str,
        chunks: Optional[Sequence[Tuple[str, str, Sequence[int], Sequence[int]]]] = None,
        *,
        size: Optional[int] = None,
        crc32c: Optional[int] = None,
        file_id: Optional[str] = None,
    ) -> None:
        """With ``size`` and ``crc32c`` (as :func:`write_member` returns them)
        the member's header is verified and its size checked, not read whole;
        ``file_id`` must then be the member's identity."""
    def finish(self) -> str:
        """Writes the index; returns its path, or its URL in an object store."""
    @property
    def finished(self) -> bool: ...

def open(
    path: Union[str, os.PathLike],
    *,
    read_only: Optional[bool] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> File:
    """A local path (mapped) or an object store URL (header now, tensors when first used)."""
def open_sharded(path: Union[str, os.PathLike], *, read_only: bool = False) -> ShardedFile: ...
def open_bytes(data: bytes) -> File: ...
def is_url(location: str) -> bool: ...
def open_sharded_remote(url: str, options: Optional[Dict[str, str]] = None) -> ShardedFile: ...
def open_sharded_index(
    file: File, *, read_only: bool = False, storage_options: Optional[Dict[str, str]] = None
) -> ShardedFile:
    """The checkpoint of an index already open (not opened again)."""
def write(
    path: Optional[Union[str, os.PathLike]],
    items: Iterable[Tuple[str, Any]],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
    checksums: bool = True,
    digests: bool = False,
    storage_options: Optional[Dict[str, str]] = None,
) -> Optional[bytes]:
    """``path`` may be an object store URL (one multipart upload)."""
def write_member(
    location: str,
    items: Iterable[Tuple[str, Any]],
    *,
    durable: bool = True,
    digests: bool = False,
    storage_options: Optional[Dict[str, str]] = None,
) -> Tuple[int, int, str]:
    """Writes a member of a sharded checkpoint (a path or an object store
    URL), with a random identity that the index records; returns its
    ``(size, crc32c, file_id)`` for ``ShardedWriter.adopt_member``."""
def sign(
    path: Union[str, os.PathLike], private_key: Union[str, os.PathLike, bytes], output: Optional[str] = None
) -> pathlib.Path: ...
def verify(
    path: str,
    public_key: Union[str, os.PathLike, bytes],
    *,
    signature: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> Tuple[int, int]: ...
def check_signature(
    file: File,
    public_key: Union[str, os.PathLike, bytes],
    *,
    signature: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> None: ...
def element_types() -> List[Dict[str, Any]]: ...
def onnx_externalize(
    model_path: Optional[str],
    model_bytes: Optional[bytes],
    base_dir: str,
    out_onnx: str,
    weights: str,
    align: int,
    threshold: int,
    existing: bool,
) -> Dict[str, Any]: ...
def onnx_write_weights(
    model_path: Optional[str], model_bytes: Optional[bytes], base_dir: str, weights: str, align: int
) -> None: ...
