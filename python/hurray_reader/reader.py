"""Opening a Hurray file: prefix, footer, header verification, semantic rules.

The rules and their order follow the reference reader (``runtime/src/reader/mod.rs``
and ``runtime/src/validate/mod.rs``) so that an invalid file is reported as the
same error variant by both; see docs/impl/compliance.md.
"""

import math
import mmap
import struct
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import decode as dec
from . import hurray_generated as fb
from . import quant as quantization
from .errors import HurrayError
from .verify import verify_header

MAGIC = b"\x89HURRAY\n"
FOOTER_MAGIC = b"HRRY_END"
VERSION_MAJOR = 1
PREFIX_LEN = 64
FOOTER_LEN = 32
MIN_ALIGNMENT = 64
MAX_ALIGNMENT = 1 << 30
DYNAMIC = 0xFFFF_FFFF_FFFF_FFFF
U64_MAX = DYNAMIC

INDEX_TYPES = ("i32", "i64")
# Footer flag bit 0 (1.2): a tensor scale other than 1 or offsets are used.
FLAG_EXTENDED_QUANTIZATION = 1
# Footer flag bit 1 (1.3): the file is a sharded checkpoint's index.
FLAG_SHARD_INDEX = 2
# Footer flag bit 2 (1.4): a code table, quantized scales or offsets, a tensor
# offset, a group index or a block format is used.
FLAG_COMPOSITE_QUANTIZATION = 4
# Format 1.4: the length of a BLAKE3 digest (Header.digest_algorithm 1).
DIGEST_LEN = 32
# Format 1.5: the length of a file's identity (Header.file_id).
FILE_ID_LEN = 16
KNOWN_FLAGS = FLAG_EXTENDED_QUANTIZATION | FLAG_SHARD_INDEX | FLAG_COMPOSITE_QUANTIZATION

DENSE_BUFFERS = ("values",)
COO_BUFFERS = ("indices", "values")
COMPRESSED_BUFFERS = ("pointers", "indices", "values")


def _crc32c_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data) -> int:
    """CRC-32C (Castagnoli, reflected, as iSCSI defines it) of ``data``:
    the format 1.2 checksum, written out so this reader needs no library."""
    crc = 0xFFFFFFFF
    table = _CRC32C
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _valid_alignment(a: int) -> bool:
    return a > 0 and a & (a - 1) == 0 and MIN_ALIGNMENT <= a <= MAX_ALIGNMENT


def _packed_bytes(count: int, bits: int) -> Optional[int]:
    n = (count * bits + 7) // 8
    return n if n <= U64_MAX else None


def _utf8(b) -> str:
    return bytes(b).decode("utf-8")


class Plan:
    """What a valid descriptor implies about its buffers (validate.rs ``Plan``)."""

    def __init__(self, layout, roles, lengths, scales, zero_points, elements, offsets=None, tail=None, scale_count=0):
        self.layout = layout
        self.roles = roles
        self.lengths = lengths
        self.scales = scales
        self.zero_points = zero_points
        self.elements = elements
        # Bytes of the offsets (1.2); None when the quantization has none.
        self.offsets = offsets
        # Bytes of each format 1.4 quantization buffer the tensor has, in wire order.
        self.tail = tail or {}
        self.scale_count = scale_count

    def quant_buffers(self, quantized: bool) -> int:
        """How many buffers the quantization adds after the layout's."""
        if not quantized:
            return 0
        return 2 + (self.offsets is not None) + len(self.tail)


def _layout_params(t) -> tuple:
    """(kind, params) of a tensor's layout, as stored."""
    lt = t.LayoutType()
    if lt == fb.Layout.NONE:
        return ("dense", None)
    table = t.Layout()
    if lt == fb.Layout.Dense:
        if table is None:
            return ("dense", None)
        d = fb.Dense()
        d.Init(table.Bytes, table.Pos)
        if d.StridesIsNone():
            return ("dense", None)
        return ("strided", [int(d.Strides(i)) for i in range(d.StridesLength())])
    cls = {fb.Layout.Coo: fb.Coo, fb.Layout.Csr: fb.Csr, fb.Layout.Csc: fb.Csc}.get(lt)
    if cls is None or table is None:
        return ("unknown", lt)
    x = cls()
    x.Init(table.Bytes, table.Pos)
    name = {fb.Layout.Coo: "coo", fb.Layout.Csr: "csr", fb.Layout.Csc: "csc"}[lt]
    params = {"nnz": x.Nnz(), "index_type": x.IndexType()}
    if lt == fb.Layout.Coo:
        params["canonical"] = bool(x.Canonical())
    return (name, params)


def plan(name: str, et_wire: int, shape: List[int], layout: tuple, descriptor_only: bool, quant) -> Plan:
    """Checks a descriptor and computes its buffer lengths (validate.rs ``plan``)."""

    def invalid(field, value, reason):
        return HurrayError("InvalidField", f"tensor {name!r}: {field} = {value}: {reason}", name, field)

    def overflow(field):
        return HurrayError("SizeOverflow", f"tensor {name!r}: size of {field} overflows 64 bits", name, field)

    def element_type(field, v):
        f = dec.facts(v)
        if f is None:
            raise HurrayError("InvalidElementType", f"tensor {name!r}: {field} = {v} is not a valid element type", name, field)
        return f

    def one_of(field, v, allowed):
        f = dec.facts(v)
        if f is None or f.name not in allowed:
            raise HurrayError(
                "InvalidElementType",
                f"tensor {name!r}: {field} = {v} is not allowed here (allowed: {', '.join(allowed)})",
                name,
                field,
            )
        return f

    def nbytes(count, f, field):
        n = _packed_bytes(count, f.bits)
        if n is None:
            raise overflow(field)
        return n

    et = element_type("element_type", et_wire)
    rank = len(shape)
    for i, d in enumerate(shape):
        if d == DYNAMIC and not descriptor_only:
            raise HurrayError(
                "DynamicWithData",
                f"tensor {name!r}: shape[{i}] is dynamic, so the tensor must be descriptor-only",
                name,
                f"shape[{i}]",
            )
    # A resolved 0 anywhere makes the tensor empty, whatever else the shape
    # holds: 0 elements and 0-byte buffers, scales included (ADR-007).
    empty = 0 in shape
    elements: Optional[int] = 1
    if empty:
        elements = 0
    else:
        for d in shape:
            if d == DYNAMIC:
                elements = None
            elif elements is not None:
                elements *= d
                if elements > U64_MAX:
                    raise overflow("shape")
    known = lambda v: 0 if v is None else v  # noqa: E731

    def check_nnz(nnz):
        if elements is not None and nnz > elements:
            raise invalid("layout.nnz", nnz, f"more stored elements than the {elements} the shape holds")

    kind, params = layout
    if kind == "unknown":
        raise HurrayError(
            "UnsupportedLayout", f"tensor {name!r}: layout type {params} is not supported by this reader", name, "layout"
        )
    if kind == "dense":
        layout_name, roles, lengths = "dense", DENSE_BUFFERS, [nbytes(known(elements), et, "values")]
    elif kind == "strided":
        strides = params
        if len(strides) != rank:
            raise invalid("layout.strides", f"{len(strides)} strides", f"need one per dimension ({rank})")
        if et.bits % 8 != 0:
            raise invalid("layout.strides", et.name, "packed sub-byte element types cannot be strided")
        extent = 1
        for i, s in enumerate(strides):
            if s < 0:
                raise invalid(f"layout.strides[{i}]", s, "strides must be non-negative")
            d = shape[i]
            if not empty and d != DYNAMIC:
                reach = (d - 1) * s
                if reach > U64_MAX:
                    raise overflow("layout.strides")
                extent += reach
                if extent > U64_MAX:
                    raise overflow("layout.strides")
        count = 0 if elements in (0, None) else extent
        layout_name, roles, lengths = "strided", DENSE_BUFFERS, [nbytes(count, et, "values")]
    elif kind == "coo":
        it = one_of("layout.index_type", params["index_type"], INDEX_TYPES)
        if rank == 0:
            raise invalid("shape", "[]", "a COO tensor needs rank >= 1")
        nnz = params["nnz"]
        check_nnz(nnz)
        coords = nnz * rank
        if coords > U64_MAX:
            raise overflow("indices")
        layout_name, roles = "coo", COO_BUFFERS
        lengths = [nbytes(coords, it, "indices"), nbytes(nnz, et, "values")]
    else:  # csr, csc
        it = one_of("layout.index_type", params["index_type"], INDEX_TYPES)
        if rank != 2:
            raise invalid("shape", f"rank {rank}", "CSR and CSC tensors have rank 2")
        nnz = params["nnz"]
        check_nnz(nnz)
        major = shape[0 if kind == "csr" else 1]
        if major == DYNAMIC:
            pointers = 0
        else:
            pointers = major + 1
            if pointers > U64_MAX:
                raise overflow("pointers")
        layout_name, roles = kind, COMPRESSED_BUFFERS
        lengths = [nbytes(pointers, it, "pointers"), nbytes(nnz, it, "indices"), nbytes(nnz, et, "values")]

    scales = zero_points = scale_count = 0
    offsets = None
    tail = {}
    if quant is not None:
        helpers = _Helpers(name, invalid, one_of, element_type, nbytes)
        q = quantization.lengths(helpers, et, shape, elements, empty, quant, layout_name)
        scales, zero_points, offsets, tail, scale_count = q.scales, q.zero_points, q.offsets, q.tail, q.scale_count
        if q.block_values is not None:
            lengths = [q.block_values]
    if descriptor_only or empty:
        lengths = [0] * len(lengths)
        scales = zero_points = scale_count = 0
        offsets = None if offsets is None else 0
        tail = {role: 0 for role in tail}
    return Plan(layout_name, roles, lengths, scales, zero_points, elements, offsets, tail, scale_count)


class _Helpers:
    """The plan's error helpers, for the quantization rules."""

    dynamic = DYNAMIC
    u64_max = U64_MAX

    def __init__(self, name, invalid, one_of, element_type, nbytes):
        self.name = name
        self.invalid = invalid
        self.one_of = one_of
        self.element_type = element_type
        self.nbytes = nbytes


def _check_metadata(owner: str, entries) -> Dict[str, str]:
    out = {}
    previous = None
    for key, value in entries:
        if previous is not None and previous >= key:
            raise HurrayError(
                "MetadataNotSorted",
                f"metadata of {owner}: key {_utf8(key)!r} follows {_utf8(previous)!r}: keys must be unique and sorted",
                None if owner == "file" else owner,
                _utf8(key),
            )
        previous = key
        out[_utf8(key)] = _utf8(value)
    return out


def _kv_list(obj) -> list:
    n = obj.MetadataLength()
    return [(obj.Metadata(i).Key(), obj.Metadata(i).Value()) for i in range(n)]


class File:
    """A verified Hurray file. Use :func:`open` or :func:`from_bytes`."""

    def __init__(self, data, _mapping=None):
        self._mapping = _mapping
        self.data = memoryview(data)
        self.version = (0, 0)
        self.file_id = None
        try:
            self._locate_and_verify()
        except BaseException:
            self.data.release()
            raise

    # -- opening ------------------------------------------------------------
    def _locate_and_verify(self):
        b = self.data
        n = len(b)
        if n < PREFIX_LEN + FOOTER_LEN:
            raise HurrayError("TooShort", f"file is {n} bytes, shorter than the {PREFIX_LEN + FOOTER_LEN} bytes of an empty Hurray file")
        if bytes(b[:8]) != MAGIC:
            raise HurrayError("BadMagic", f"not a Hurray file: magic is {bytes(b[:8])!r}")
        major, minor = struct.unpack_from("<HH", b, 8)
        if major != VERSION_MAJOR:
            raise HurrayError("UnsupportedVersion", f"format version {major}.{minor} is not supported")
        self.version = (major, minor)
        footer = n - FOOTER_LEN
        if bytes(b[footer + 24 :]) != FOOTER_MAGIC:
            raise HurrayError("BadFooterMagic", "footer magic is wrong: file truncated or not a Hurray file")
        header_offset, header_length = struct.unpack_from("<QQ", b, footer)
        if header_offset < PREFIX_LEN or header_offset % 8 != 0:
            raise HurrayError("BadFooter", f"header_offset {header_offset} must be a multiple of 8 after the prefix", None, "header_offset")
        if header_length < 8:
            raise HurrayError("BadFooter", f"header_length {header_length} is shorter than a FlatBuffer's 8-byte start", None, "header_length")
        flags = struct.unpack_from("<Q", b, footer + 16)[0]
        self._flags = flags
        if flags & ~KNOWN_FLAGS:
            raise HurrayError("BadFooter", f"flags {flags:#x}: unknown flags, the file needs a newer reader", None, "flags")
        if header_offset + header_length != footer:
            raise HurrayError("BadFooter", f"header_length {header_length}: the header must end where the footer starts", None, "header_length")
        # A private copy of the (small) header; tensor data stays in place.
        self._hbuf = bytearray(b[header_offset:footer])
        self._data_end = header_offset
        root = verify_header(self._hbuf)
        self.header = fb.Header()
        self.header.Init(self._hbuf, root)
        self._check_semantics()

    def _check_semantics(self):
        h = self.header
        file_alignment = h.Alignment()
        if not _valid_alignment(file_alignment):
            raise HurrayError("InvalidAlignment", f"file: alignment {file_alignment} is invalid", None, "alignment")
        self.alignment = file_alignment
        self.metadata = _check_metadata("file", _kv_list(h))
        # 1.5: the file's identity, 16 bytes when present.
        self.file_id = None
        if not h.FileIdIsNone():
            if h.FileIdLength() != FILE_ID_LEN:
                raise HurrayError("InvalidField", f"header: file_id = {h.FileIdLength()} byte(s): a file identifier is {FILE_ID_LEN} bytes", None, "file_id")
            self.file_id = h.FileIdAsNumpy().tobytes()
        # 1.3: the index flag is set exactly when the header holds an index,
        # and an index file holds no tensors of its own.
        has_index = h.ShardIndex() is not None
        if has_index != bool(self._flags & FLAG_SHARD_INDEX):
            state = "present" if has_index else "absent"
            raise HurrayError("InvalidField", f"header: shard_index = {state}: footer flag bit 1 must be set exactly in an index file", None, "shard_index")
        if has_index and h.TensorsLength() > 0:
            raise HurrayError("InvalidField", "header: shard_index = present: an index file holds no tensors of its own", None, "shard_index")
        ranges = []
        previous = None
        self.tensors: List["Tensor"] = []
        for index in range(h.TensorsLength()):
            t = h.Tensors(index)
            raw_name = t.Name()
            if len(raw_name) == 0:
                raise HurrayError("EmptyName", f"tensor #{index} has an empty name")
            name = _utf8(raw_name)
            if previous is not None and previous >= raw_name:
                raise HurrayError(
                    "NamesNotSorted",
                    f"tensor {name!r} follows {_utf8(previous)!r}: names must be unique and sorted",
                    name,
                )
            previous = raw_name
            a = t.Alignment()
            if a == 0:
                alignment = file_alignment
            elif _valid_alignment(a):
                alignment = a
            else:
                raise HurrayError("InvalidAlignment", f"tensor {name!r}: alignment {a} is invalid", name, "alignment")
            shape = [int(t.Shape(i)) for i in range(t.ShapeLength())]
            layout = _layout_params(t)
            quant = t.Quantization()
            p = plan(name, t.ElementType(), shape, layout, t.DescriptorOnly(), quant)
            listed = t.BuffersLength()
            layout_buffers = 0 if t.DescriptorOnly() else len(p.roles)
            if listed != layout_buffers:
                if t.DescriptorOnly():
                    raise HurrayError("DescriptorOnlyWithData", f"tensor {name!r}: descriptor-only but lists {listed} buffer(s)", name, "buffers")
                raise HurrayError(
                    "BufferCount", f"tensor {name!r}: layout {p.layout} needs {layout_buffers} buffer(s), found {listed}", name, "buffers"
                )
            spans: Dict[str, Tuple[int, int]] = {}

            def check(role, expected, buf):
                offset, length = (0, 0) if buf is None else (buf.Offset(), buf.Length())
                if length != expected:
                    raise HurrayError("BufferLength", f"tensor {name!r}: buffer {role} is {length} bytes, expected {expected}", name, role)
                spans[role] = (offset, length)
                if length == 0:
                    return  # ADR-007: never dereferenced, no alignment
                end = offset + length
                if offset < PREFIX_LEN or end > U64_MAX or end > self._data_end:
                    raise HurrayError(
                        "BufferOutOfBounds",
                        f"tensor {name!r}: buffer {role} [{offset}, +{length}) lies outside the data region [{PREFIX_LEN}, {self._data_end})",
                        name,
                        role,
                    )
                if offset % alignment != 0:
                    raise HurrayError("BufferMisaligned", f"tensor {name!r}: buffer {role} offset {offset} is not a multiple of {alignment}", name, role)
                ranges.append((offset, end, index, role, name))

            for i in range(listed):
                check(p.roles[i], p.lengths[i], t.Buffers(i))
            if quant is not None:
                check("scales", p.scales, quant.Scales())
                check("zero_points", p.zero_points, quant.ZeroPoints())
                if p.offsets is not None:
                    check("offsets", p.offsets, quant.Offsets())
                elif quant.Offsets() is not None and quant.Offsets().Length() != 0:
                    # Without offset_type the offsets Buffer must be absent or empty.
                    length = quant.Offsets().Length()
                    raise HurrayError("BufferLength", f"tensor {name!r}: buffer offsets is {length} bytes, expected 0", name, "offsets")
                tail_buffers = {
                    "code_table": lambda: quant.CodeTable(),
                    "group_index": lambda: quant.GroupIndex(),
                    "scale_scales": lambda: quant.ScaleQuantization().Scales(),
                    "scale_code_table": lambda: quant.ScaleQuantization().CodeTable(),
                    "offset_scales": lambda: quant.OffsetQuantization().Scales(),
                    "offset_code_table": lambda: quant.OffsetQuantization().CodeTable(),
                }
                for role, expected in p.tail.items():
                    check(role, expected, tail_buffers[role]())
                composite = quantization.composite_field(quant)
                if composite is not None and not self._flags & FLAG_COMPOSITE_QUANTIZATION:
                    field = f"quantization.{composite[0]}"
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: {field} = {composite[1]}: a file using it sets footer flag bit 2 (composite quantization)",
                        name,
                        field,
                    )
                extended = quant.TensorScale() != 1.0 or quant.OffsetType() != 0
                if extended and not self._flags & FLAG_EXTENDED_QUANTIZATION:
                    field = "quantization.offset_type" if quant.OffsetType() else "quantization.tensor_scale"
                    value = quant.OffsetType() if quant.OffsetType() else quant.TensorScale()
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: {field} = {value}: a file using it sets footer flag bit 0 (extended quantization)",
                        name,
                        field,
                    )
            if not t.ChecksumsIsNone():
                # Format 1.2: one checksum per buffer, under a named algorithm.
                count = t.ChecksumsLength()
                if h.ChecksumAlgorithm() == 0:
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: checksums = {count}: the header names no checksum algorithm",
                        name,
                        "checksums",
                    )
                if t.DescriptorOnly():
                    expected = 0
                else:
                    expected = len(p.roles) + p.quant_buffers(quant is not None)
                if count != expected:
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: checksums = {count}: one checksum per buffer: the tensor has {expected}",
                        name,
                        "checksums",
                    )
            # Format 1.4: one digest per buffer, concatenated, each as long as
            # the header's algorithm makes it (BLAKE3: 32 bytes); with an
            # algorithm, every tensor with buffers has them.
            buffers = 0 if t.DescriptorOnly() else len(p.roles) + p.quant_buffers(quant is not None)
            if t.DigestsIsNone() and h.DigestAlgorithm() == 1 and buffers > 0:
                raise HurrayError(
                    "InvalidField",
                    f"tensor {name!r}: digests = 0 byte(s): absent: the header names a digest algorithm",
                    name,
                    "digests",
                )
            if not t.DigestsIsNone():
                count = t.DigestsLength()
                expected = buffers
                if h.DigestAlgorithm() == 0:
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: digests = {count} byte(s): the header names no digest algorithm",
                        name,
                        "digests",
                    )
                if h.DigestAlgorithm() == 1 and count != DIGEST_LEN * expected:
                    raise HurrayError(
                        "InvalidField",
                        f"tensor {name!r}: digests = {count} byte(s): one {DIGEST_LEN}-byte digest per buffer: the tensor has {expected}",
                        name,
                        "digests",
                    )
            metadata = _check_metadata(name, _kv_list(t))
            self.tensors.append(Tensor(self, t, name, shape, layout, p, alignment, spans, metadata))
        # As the reference reader: the index is checked whether or not the
        # tensor list is present (absent counts as no tensors).
        self._check_name_index(0 if h.TensorsIsNone() else h.TensorsLength())
        ranges.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
        for a, b in zip(ranges, ranges[1:]):
            if b[0] < a[1]:
                raise HurrayError(
                    "BuffersOverlap",
                    f"tensor {a[4]!r} buffer {a[3]} overlaps tensor {b[4]!r} buffer {b[3]}",
                    b[4],
                    b[3],
                    with_=(a[4], a[3]),
                )
        self._by_name = {t.name: t for t in self.tensors}

    def _check_name_index(self, tensors: int):
        """The optional name index (format 1.1) is only a lookup hint, but its
        shape must be sound: a power-of-two length of at least the tensor
        count, and entries (position + 1, 0 = empty) that name tensors."""
        h = self.header
        if h.NameIndexIsNone():
            return
        n = h.NameIndexLength()

        def bad(value, reason):
            return HurrayError("InvalidField", f"name_index = {value}: {reason}", None, "name_index")

        if n == 0 and tensors == 0:
            return  # an empty index over an empty tensor list
        if n == 0 or n & (n - 1) or n < tensors:
            raise bad(f"{n} slots", "the length must be a power of two of at least the tensor count")
        for slot in range(n):
            e = h.NameIndex(slot)
            if e > tensors:
                raise bad(f"slot {slot} = {e}", "an entry names a tensor that does not exist")

    # -- access -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tensors)

    def __iter__(self):
        return iter(self.tensors)

    def __getitem__(self, name: str) -> "Tensor":
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def validate(self):
        """Checks what opening does not (like ``hurray validate``): every sparse
        tensor's index data. Raises :class:`HurrayError` on the first problem."""
        for t in self.tensors:
            if not t.descriptor_only and t.layout in ("coo", "csr", "csc"):
                t.sparse()

    def close(self):
        """Releases the mapping. Arrays still viewing the file keep it mapped
        (the mapping is then closed when they are gone)."""
        try:
            self.data.release()
            if self._mapping is not None:
                self._mapping.close()
        except BufferError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Tensor:
    """One verified tensor of a :class:`File`."""

    def __init__(self, file, t, name, shape, layout, plan_, alignment, spans, metadata):
        self.file = file
        self._t = t
        self.name = name
        f = dec.facts(t.ElementType())
        self.dtype = f.name
        self._wire = t.ElementType()
        self._bits = f.bits
        #: Shape with ``None`` for a dynamic dimension (never confused with 0).
        self.shape = tuple(None if d == DYNAMIC else d for d in shape)
        self.layout = plan_.layout
        self._layout_params = layout[1]
        self.strides = list(layout[1]) if layout[0] == "strided" else None
        self.descriptor_only = bool(t.DescriptorOnly())
        self.alignment = alignment
        self.element_count = plan_.elements
        self.metadata = metadata
        self._plan = plan_
        self._spans = spans
        self._file_checksum_algorithm = file.header.ChecksumAlgorithm()
        self._file_digest_algorithm = file.header.DigestAlgorithm()

    # -- descriptor -----------------------------------------------------------
    @property
    def sparse_params(self) -> Optional[dict]:
        """nnz, index type (short name) and, for COO, canonical."""
        if self.layout not in ("coo", "csr", "csc"):
            return None
        p = dict(self._layout_params)
        p["index_type"] = dec.facts(p["index_type"]).name
        return p

    @property
    def quantization(self) -> Optional[dict]:
        q = self._t.Quantization()
        if q is None:
            return None
        zp = q.ZeroPointType()
        return {
            **_level(q),
            "zero_point_type": dec.facts(zp).name if zp else None,
            "storage_min": q.StorageMin(),
            "storage_max": q.StorageMax(),
            "offset_type": dec.facts(q.OffsetType()).name if q.OffsetType() else None,
            # Format 1.4.
            "group_index_type": dec.facts(q.GroupIndexType()).name if q.GroupIndexType() else None,
            "block_format": quantization.BLOCK_FORMATS[q.BlockFormat()][0] if q.BlockFormat() else None,
            "scale_quantization": _level(q.ScaleQuantization()),
            "offset_quantization": _level(q.OffsetQuantization()),
        }

    def checksums(self) -> Optional[Dict[str, int]]:
        """The CRC-32C the header records for each buffer (format 1.2), by
        role; None when the file records none."""
        t = self._t
        if t.ChecksumsIsNone() or self._file_checksum_algorithm != 1:
            return None
        return {role: t.Checksums(i) for i, role in enumerate(self._spans)}

    def digests(self) -> Optional[Dict[str, str]]:
        """The BLAKE3 digest the header records for each buffer (format
        1.4), by role, in hexadecimal; None when the file records none.
        (This reader checks their shape; it computes no BLAKE3.)"""
        t = self._t
        if t.DigestsIsNone() or self._file_digest_algorithm != 1:
            return None
        raw = bytes(t.Digests(i) for i in range(t.DigestsLength()))
        return {role: raw[i * DIGEST_LEN : (i + 1) * DIGEST_LEN].hex() for i, role in enumerate(self._spans)}

    def verify_checksum(self) -> bool:
        """Reads every buffer and compares its CRC-32C with the recorded one:
        True when all match, False when the file records none; a mismatch
        raises ``HurrayError("ChecksumMismatch")`` naming the buffer."""
        sums = self.checksums()
        if sums is None:
            return False
        for role, expected in sums.items():
            found = crc32c(self.buffer(role))
            if found != expected:
                raise HurrayError(
                    "ChecksumMismatch",
                    f"tensor {self.name!r}: buffer {role} has crc32c checksum {found:#010x}, "
                    f"the header records {expected:#010x}: the data is corrupt",
                    self.name,
                    role,
                )
        return True

    def buffer_roles(self) -> List[str]:
        """Roles of the buffers, in file order (layout buffers, then scales and zero points)."""
        return list(self._spans)

    def buffer(self, role: str) -> memoryview:
        """The bytes of one buffer (zero-copy). A 0-length buffer is an empty view
        whatever its recorded offset (ADR-007)."""
        offset, length = self._spans[role]
        if length == 0:
            return memoryview(b"")
        return self.file.data[offset : offset + length]

    def _require_data(self):
        if self.descriptor_only:
            raise HurrayError("NoData", f"tensor {self.name!r} is descriptor-only: it carries no data", self.name)

    # -- values ---------------------------------------------------------------
    def _numpy_shape(self):
        """The shape, when a NumPy array can have it: NotRepresentable
        otherwise."""
        shape = self.shape
        limit = np.iinfo(np.intp).max
        logical_bytes = 16
        for d in shape:
            # NumPy refuses a shape whose non-zero dimensions overflow, even
            # when another dimension is 0.
            logical_bytes *= max(d, 1)
        if any(d > limit for d in shape) or logical_bytes > limit:
            # Valid (an empty tensor may have a huge other dimension) but
            # beyond what a NumPy shape can hold.
            raise HurrayError(
                "NotRepresentable", f"tensor {self.name!r}: shape {list(shape)} does not fit a NumPy shape", self.name, "shape"
            )
        return shape

    def numpy(self, raw: bool = False) -> np.ndarray:
        """The dense (or strided) tensor as an array of its logical shape.

        Byte-aligned types NumPy knows come back as a read-only, zero-copy view
        of the file (strided ones through ``as_strided``); other types are
        decoded (see :mod:`hurray_reader.decode`).
        """
        self._require_data()
        if self.layout not in ("dense", "strided"):
            raise HurrayError("LayoutMismatch", f"tensor {self.name!r} has layout {self.layout}; numpy() needs dense", self.name)
        q = self._t.Quantization()
        if q is not None and q.BlockFormat() != 0:
            raise HurrayError(
                "InvalidField",
                f"tensor {self.name!r}: its values are blocks of a block format: dequantize() decodes them, buffer('values') holds them",
                self.name,
                "quantization.block_format",
            )
        buf = self.buffer("values")
        shape = self._numpy_shape()
        if self.layout == "dense":
            flat = dec.decode(buf, self._wire, self.element_count, raw)
            return flat.reshape(shape)
        # Strided: byte-aligned types only (the schema forbids packed strides).
        size = self._bits // 8
        stored = len(buf) // size
        flat = dec.decode(buf, self._wire, stored, raw)
        if self.element_count == 0:
            return np.zeros(shape, dtype=flat.dtype)
        itemsize = flat.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat, shape=shape, strides=[s * itemsize for s in self.strides], writeable=False
        )
        return view

    def sparse(self, raw: bool = False) -> dict:
        """The sparse components after checking them (as the Rust views do):
        ``indices`` (COO: nnz x rank), ``pointers`` (CSR/CSC), ``values`` (nnz)."""
        self._require_data()
        if self.layout not in ("coo", "csr", "csc"):
            raise HurrayError("LayoutMismatch", f"tensor {self.name!r} is {self.layout}, not sparse", self.name)
        p = self._layout_params
        nnz = p["nnz"]
        it = dec.facts(p["index_type"])
        idx_dtype = np.dtype(it.numpy)
        ind = np.frombuffer(self.buffer("indices"), dtype=idx_dtype)
        out = {"nnz": nnz, "values": dec.decode(self.buffer("values"), self._wire, nnz, raw)}

        def bad(buffer, position, value, reason):
            return HurrayError(
                "InvalidSparseIndex", f"tensor {self.name!r}: {buffer}[{position}] = {value}: {reason}", self.name, buffer
            )

        if self.layout == "coo":
            rank = len(self.shape)
            coords = ind.reshape(nnz, rank) if rank else ind
            bounds = np.array(self.shape, dtype=np.int64)
            flat = ind.tolist()
            for i, v in enumerate(flat):
                if v < 0 or v >= bounds[i % rank]:
                    raise bad("indices", i, v, "coordinate outside its dimension")
            if p.get("canonical"):
                # As the Rust reader: a canonical COO is checked, not trusted.
                for row in range(1, nnz):
                    at = row * rank
                    if flat[at : at + rank] <= flat[at - rank : at]:
                        raise bad("indices", at, flat[at], "canonical COO coordinates must be sorted and unique")
            out["indices"] = coords
            return out
        ptr = np.frombuffer(self.buffer("pointers"), dtype=idx_dtype)
        minor = self.shape[1] if self.layout == "csr" else self.shape[0]
        prev = 0
        plist = ptr.tolist()
        for i, v in enumerate(plist):
            if i == 0 and v != 0:
                raise bad("pointers", 0, v, "the first pointer must be 0")
            if v < prev:
                raise bad("pointers", i, v, "pointers must not decrease")
            prev = v
        if prev != nnz:
            raise bad("pointers", max(len(plist) - 1, 0), prev, "the last pointer must equal nnz")
        for i, v in enumerate(ind.tolist()):
            if v < 0 or v >= minor:
                raise bad("indices", i, v, "index outside its dimension")
        out["pointers"] = ptr
        out["indices"] = ind
        return out

    def scales(self) -> np.ndarray:
        """The scales as stored (as many as the scheme needs; codes when the
        scales are themselves quantized); empty for a block format."""
        q = self._t.Quantization()
        return dec.decode(self.buffer("scales"), q.ScaleType(), self._plan.scale_count)

    def zero_points(self) -> np.ndarray:
        """The zero points (as many as the scales); empty when symmetric."""
        q = self._t.Quantization()
        if q.ZeroPointType() == 0:
            return np.zeros(0, dtype=np.int64)
        return dec.decode(self.buffer("zero_points"), q.ZeroPointType(), len(self.scales()))

    def offsets(self) -> np.ndarray:
        """The offsets (format 1.2; as many as the scales); empty when there are none."""
        q = self._t.Quantization()
        if q.OffsetType() == 0:
            return np.zeros(0, dtype=np.float64)
        return dec.decode(self.buffer("offsets"), q.OffsetType(), len(self.scales()))

    def dequantize(self) -> np.ndarray:
        """Every element dequantized by the schema's rule (data-model.md
        section 7), as float32 in the tensor's shape: see
        :func:`hurray_reader.quant.dequantize`."""
        if self._t.Quantization() is None:
            raise HurrayError("InvalidField", f"tensor {self.name!r} is not quantized", self.name, "quantization")
        self._require_data()
        return quantization.dequantize(self)


def _level(level) -> Optional[dict]:
    """The fields a quantization level has (a second level, format 1.4, has
    only these), as the vectors spell them."""
    if level is None:
        return None
    scheme = quantization.SCHEMES[level.Scheme()]
    return {
        "scheme": scheme,
        "axis": level.Axis() if scheme in ("per_axis", "per_block") else 0,
        "block_size": level.BlockSize() if scheme in ("per_block", "per_flat_block") else 0,
        "expressed_type": dec.facts(level.ExpressedType()).name,
        "scale_type": dec.facts(level.ScaleType()).name,
        "code_table_type": dec.facts(level.CodeTableType()).name if level.CodeTableType() else None,
        "tensor_scale": level.TensorScale(),
        "tensor_offset": level.TensorOffset(),
    }


def open(path) -> File:  # noqa: A001 - mirrors the builtin on purpose
    """Memory-maps and verifies the file at ``path``."""
    with builtins_open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < PREFIX_LEN + FOOTER_LEN:
            raise HurrayError("TooShort", f"file is {size} bytes, shorter than the {PREFIX_LEN + FOOTER_LEN} bytes of an empty Hurray file")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return File(m, _mapping=m)
    except BaseException:
        m.close()
        raise


def from_bytes(data: bytes) -> File:
    """Verifies an in-memory file."""
    return File(data)


import builtins as _builtins  # noqa: E402

builtins_open = _builtins.open
