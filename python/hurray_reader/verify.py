"""Structural verification of the FlatBuffers header, before any accessor runs.

The FlatBuffers Python runtime does not verify: its accessors follow whatever
offsets they find. This module walks every table, vector, string, struct and
union the schema allows in the header, checking each offset it follows lies
in the header (and is aligned for its scalar type), that strings are UTF-8 and
NUL-terminated, that required fields are present and that union type and
value come together. It applies the limits the Rust reader uses (depth 16, at
most one table per 4 header bytes, an apparent-size cap). Only after it
passes does the reader use the flatc-generated accessors.

The field layout below (vtable slot -> kind) is the structure of
``schema/hurray.fbs``; ``python/tests/test_structure.py`` checks it against
the slots the flatc-generated module reads, so the two cannot drift apart.
"""

import struct

from .errors import HurrayError

MAX_DEPTH = 16

# kind: ("u8"|"bool"|"u32"|"u64"|"i64"|"f64"), ("string", required), ("scalars", size),
# ("structs", size), ("struct", size), ("table", name), ("tables", name),
# ("union_type",), ("union", type_slot, {type: table name}).
LAYOUT_MEMBERS = {1: "Dense", 2: "Coo", 3: "Csr", 4: "Csc"}

TABLES = {
    "Header": {
        0: ("tables", "Tensor"),
        1: ("tables", "KeyValue"),
        2: ("u64",),
        3: ("scalars", 4, False),  # name_index (format 1.1)
        4: ("u8",),  # checksum_algorithm (format 1.2)
        5: ("table", "ShardIndex"),  # shard_index (format 1.3)
        6: ("u8",),  # digest_algorithm (format 1.4)
        7: ("scalars", 1, False),  # file_id (format 1.5)
    },
    "Tensor": {
        0: ("string", True),
        1: ("u8",),
        2: ("scalars", 8, True),
        3: ("union_type",),
        4: ("union", 3, LAYOUT_MEMBERS),
        5: ("structs", 16),
        6: ("bool",),
        7: ("u64",),
        8: ("table", "Quantization"),
        9: ("tables", "KeyValue"),
        10: ("scalars", 8, False),  # checksums (format 1.2)
        11: ("scalars", 1, False),  # digests (format 1.4)
    },
    "Dense": {0: ("scalars", 8, False)},
    "Coo": {0: ("u64",), 1: ("u8",), 2: ("bool",)},
    "Csr": {0: ("u64",), 1: ("u8",)},
    "Csc": {0: ("u64",), 1: ("u8",)},
    "Quantization": {
        0: ("u8",),
        1: ("u8",),
        2: ("u8",),
        3: ("u8",),
        4: ("u32",),
        5: ("u64",),
        6: ("struct", 16),
        7: ("struct", 16),
        8: ("i64",),
        9: ("i64",),
        10: ("f64",),  # tensor_scale (1.2)
        11: ("u8",),  # offset_type (1.2)
        12: ("struct", 16),  # offsets (1.2)
        13: ("u8",),  # code_table_type (1.4)
        14: ("struct", 16),  # code_table (1.4)
        15: ("table", "Quantization"),  # scale_quantization (1.4)
        16: ("table", "Quantization"),  # offset_quantization (1.4)
        17: ("f64",),  # tensor_offset (1.4)
        18: ("u8",),  # group_index_type (1.4)
        19: ("struct", 16),  # group_index (1.4)
        20: ("u8",),  # block_format (1.4)
    },
    "KeyValue": {0: ("string", True), 1: ("string", True)},
    # Format 1.3: a sharded checkpoint's index.
    "ShardIndex": {0: ("tables", "ShardMember", True), 1: ("tables", "ShardedTensor", True)},
    # header_digest (format 1.4), file_id (format 1.5)
    "ShardMember": {0: ("string", True), 1: ("u64",), 2: ("u64",), 3: ("scalars", 1, False), 4: ("scalars", 1, False)},
    "ShardedTensor": {0: ("string", True), 1: ("u8",), 2: ("scalars", 8, True), 3: ("tables", "ShardPiece", True)},
    "ShardPiece": {0: ("u32",), 1: ("string", True), 2: ("scalars", 8, False), 3: ("scalars", 8, True)},
}

SCALAR_SIZE = {"u8": 1, "bool": 1, "u32": 4, "u64": 8, "i64": 8, "f64": 8, "union_type": 1}


def _bad(message: str) -> HurrayError:
    return HurrayError("InvalidHeader", message)


class Verifier:
    """Verifies one header (``buf`` is exactly the header's bytes)."""

    def __init__(self, buf):
        self.buf = buf
        self.len = len(buf)
        self.depth = 0
        self.tables = 0
        self.max_tables = self.len // 4 + 1
        self.apparent = 0
        self.max_apparent = max(self.len * 2, 1 << 16)

    # -- primitives ---------------------------------------------------------
    def range(self, pos: int, size: int):
        if pos < 0 or pos + size > self.len:
            raise _bad(f"range [{pos}, {pos + size}) is outside the {self.len}-byte header")
        self.apparent += size
        if self.apparent > self.max_apparent:
            raise _bad("apparent size too large")

    def scalar(self, pos: int, size: int):
        if pos % size != 0:
            raise _bad(f"unaligned {size}-byte scalar at {pos}")
        self.range(pos, size)

    def u16(self, pos: int) -> int:
        self.scalar(pos, 2)
        return struct.unpack_from("<H", self.buf, pos)[0]

    def u32(self, pos: int) -> int:
        self.scalar(pos, 4)
        return struct.unpack_from("<I", self.buf, pos)[0]

    def follow(self, pos: int) -> int:
        return pos + self.u32(pos)

    def vector(self, pos: int, elem_size: int, elem_align: int) -> tuple:
        n = self.u32(pos)
        start = pos + 4
        if start % elem_align != 0:
            raise _bad(f"unaligned vector at {pos}")
        self.range(start, n * elem_size)
        return start, n

    def string(self, pos: int):
        start, n = self.vector(pos, 1, 1)
        try:
            bytes(self.buf[start : start + n]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise _bad(f"string at {pos} is not UTF-8: {e}") from None
        if start + n >= self.len or self.buf[start + n] != 0:
            raise _bad(f"string at {pos} lacks its NUL terminator")

    # -- tables -------------------------------------------------------------
    def table(self, pos: int, name: str):
        self.scalar(pos, 4)
        soffset = struct.unpack_from("<i", self.buf, pos)[0]
        vt = pos - soffset
        if vt < 0:
            raise _bad(f"vtable of the table at {pos} is before the header")
        vt_len = self.u16(vt)
        if (vt + vt_len) % 2 != 0:
            raise _bad(f"odd vtable length at {vt}")
        self.range(vt, vt_len)
        self.tables += 1
        if self.tables > self.max_tables:
            raise _bad("too many tables")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _bad("depth limit reached")

        def field(slot: int):
            at = 4 + 2 * slot
            if at < vt_len:
                off = self.u16(vt + at)
                if off > 0:
                    return pos + off
            return None

        for slot, kind in TABLES[name].items():
            k = kind[0]
            at = field(slot)
            if k == "union":
                type_at = field(kind[1])
                if type_at is None and at is None:
                    continue
                if type_at is None or at is None:
                    raise _bad(f"{name}: union type and value must come together")
                self.scalar(type_at, 1)
                member = kind[2].get(self.buf[type_at])
                if member is not None:
                    self.table(self.follow(at), member)
                # Unknown members are not verified (nor read): the reader
                # reports the tensor as UnsupportedLayout.
                continue
            if at is None:
                if len(kind) > 1 and kind[-1] is True:
                    raise _bad(f"{name}: required field {slot} is missing")
                continue
            if k in SCALAR_SIZE:
                if k == "union_type":
                    continue  # checked with its value
                self.scalar(at, SCALAR_SIZE[k])
            elif k == "struct":
                self.range(at, kind[1])
            elif k == "string":
                self.string(self.follow(at))
            elif k == "scalars":
                self.vector(self.follow(at), kind[1], kind[1])
            elif k == "structs":
                self.vector(self.follow(at), kind[1], 1)
            elif k == "table":
                self.table(self.follow(at), kind[1])
            elif k == "tables":
                start, n = self.vector(self.follow(at), 4, 4)
                for i in range(n):
                    self.table(self.follow(start + 4 * i), kind[1])
            else:  # pragma: no cover - the table above is the whole schema
                raise AssertionError(k)
        self.depth -= 1


def verify_header(buf) -> int:
    """Verifies the header bytes; returns the root table's position."""
    if len(buf) < 8 or bytes(buf[4:8]) != b"HRRY":
        raise _bad('missing file_identifier "HRRY"')
    v = Verifier(buf)
    root = v.follow(0)
    v.table(root, "Header")
    return root
