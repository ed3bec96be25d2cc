"""Quantization: the rules a descriptor's quantization must meet and the
byte lengths of its buffers (validate/quant.rs), and the one dequantization
formula (data-model.md section 7), formats 1.0 to 1.4.

Format 1.4 adds code tables, a second level (the scales' or the offsets'
own quantization), a tensor offset, a group index and block formats. A
block format's blocks are decoded by the `gguf` package's own dequantizer
(imported when first needed), the format's definition, so this reader and
the runtime are checked against an implementation neither shares; the
three types `gguf` cannot dequantize (Q8_1, Q8_K, Q1_0) are decoded here
from ggml's block layouts.
"""

import math
from typing import Dict, Optional

import numpy as np

from . import decode as dec
from . import hurray_generated as fb
from .errors import HurrayError

SCALE_TYPES = ("f16", "bf16", "f32", "f64", "f8e8m0fnu", "f8e4m3fn")
OFFSET_TYPES = ("f16", "bf16", "f32", "f64")
CODE_TABLE_TYPES = ("i8", "f16", "bf16", "f32", "f64")
GROUP_INDEX_TYPES = ("i32",)
# Format 1.4's quantization buffers, in wire order after the offsets.
TAIL_ROLES = ("code_table", "group_index", "scale_scales", "scale_code_table", "offset_scales", "offset_code_table")
# Block formats: wire value -> (name, elements per block, bytes per block, GGUF type id).
BLOCK_FORMATS = {
    1: ("ggml_q8_1", 32, 40, 9),
    2: ("ggml_q8_k", 256, 292, 15),
    3: ("ggml_tq1_0", 256, 54, 34),
    4: ("ggml_iq2_xxs", 256, 66, 16),
    5: ("ggml_iq2_xs", 256, 74, 17),
    6: ("ggml_iq2_s", 256, 82, 22),
    7: ("ggml_iq3_xxs", 256, 98, 18),
    8: ("ggml_iq3_s", 256, 110, 21),
    9: ("ggml_iq1_s", 256, 50, 19),
    10: ("ggml_iq1_m", 256, 56, 29),
    11: ("ggml_mxfp4", 32, 17, 39),
    12: ("ggml_nvfp4", 64, 36, 40),
    13: ("ggml_q1_0", 128, 18, 41),
}
SCHEMES = {
    fb.QuantizationScheme.PerTensor: "per_tensor",
    fb.QuantizationScheme.PerAxis: "per_axis",
    fb.QuantizationScheme.PerBlock: "per_block",
    fb.QuantizationScheme.PerFlatBlock: "per_flat_block",
}


class Lengths:
    def __init__(self):
        self.scales = 0
        self.zero_points = 0
        self.offsets: Optional[int] = None
        self.tail: Dict[str, int] = {}
        self.block_values: Optional[int] = None
        self.scale_count = 0


def composite_field(q):
    """The first format 1.4 field the quantization ``q`` uses (a 1.3 reader
    would ignore it: footer flag bit 2), as ``(field, value)``, or None."""
    if q.CodeTableType() != 0:
        return "code_table_type", q.CodeTableType()
    if q.ScaleQuantization() is not None:
        return "scale_quantization", "present"
    if q.OffsetQuantization() is not None:
        return "offset_quantization", "present"
    if q.TensorOffset() != 0.0:
        return "tensor_offset", q.TensorOffset()
    if q.GroupIndexType() != 0:
        return "group_index_type", q.GroupIndexType()
    if q.BlockFormat() != 0:
        return "block_format", q.BlockFormat()
    return None


def _forbidden(level) -> Optional[str]:
    """The first field a second level may not have."""
    checks = (
        ("zero_point_type", level.ZeroPointType() != 0),
        ("zero_points", level.ZeroPoints() is not None and level.ZeroPoints().Length() > 0),
        ("offset_type", level.OffsetType() != 0),
        ("offsets", level.Offsets() is not None and level.Offsets().Length() > 0),
        ("scale_quantization", level.ScaleQuantization() is not None),
        ("offset_quantization", level.OffsetQuantization() is not None),
        ("group_index_type", level.GroupIndexType() != 0),
        ("group_index", level.GroupIndex() is not None and level.GroupIndex().Length() > 0),
        ("block_format", level.BlockFormat() != 0),
    )
    return next((field for field, bad in checks if bad), None)


def lengths(h, et, shape, elements, empty, quant, layout_name) -> Lengths:
    """Checks ``quant`` of a tensor of type ``et`` and ``shape``; ``h`` holds
    the plan's error helpers (``invalid``, ``one_of``, ``element_type``,
    ``nbytes``, ``name``, ``dynamic``)."""
    out = Lengths()
    rank = len(shape)
    if et.kind in ("bool", "complex"):
        raise h.invalid("element_type", et.name, "a quantized tensor stores integers or small floats")
    if quant.BlockFormat() != 0:
        return _block_format(h, et, shape, elements, quant, layout_name)

    def expressed(field):
        t = h.element_type(field + "expressed_type", quant_of[field].ExpressedType())
        if t.kind != "float":
            raise h.invalid(field + "expressed_type", t.name, "the expressed type is a floating-point type")

    def integer(field, v, what):
        t = h.element_type(field, v)
        if t.kind not in ("int", "uint"):
            raise h.invalid(field, t.name, f"{what} are integers")
        return t

    def finite(field, v):
        if not math.isfinite(v):
            raise h.invalid(field, v, "a finite number")

    top = "quantization."
    quant_of = {top: quant}
    expressed(top)
    if quant.ScaleQuantization() is None:
        scale_type = h.one_of("quantization.scale_type", quant.ScaleType(), SCALE_TYPES)
    else:
        scale_type = integer("quantization.scale_type", quant.ScaleType(), "quantized scales")
    zp_type = None
    if quant.ZeroPointType() != 0:
        zp_type = integer("quantization.zero_point_type", quant.ZeroPointType(), "zero points")
    finite("quantization.tensor_scale", quant.TensorScale())
    finite("quantization.tensor_offset", quant.TensorOffset())
    offset_type = None
    if quant.OffsetType() == 0:
        if quant.OffsetQuantization() is not None:
            raise h.invalid("quantization.offset_quantization", "present", "quantized offsets need an offset_type")
    elif quant.OffsetQuantization() is None:
        offset_type = h.one_of("quantization.offset_type", quant.OffsetType(), OFFSET_TYPES)
    else:
        offset_type = integer("quantization.offset_type", quant.OffsetType(), "quantized offsets")
    table = _code_table(h, "quantization.", "code_table", et, quant.CodeTableType())
    if table is not None and zp_type is not None:
        raise h.invalid("quantization.zero_point_type", quant.ZeroPointType(), "a code table's codes have no zero point")
    scheme = (quant.Scheme(), quant.Axis(), quant.BlockSize())
    count = _scale_count(h, "quantization.", shape, elements, empty, scheme)
    out.scale_count = count
    out.scales = h.nbytes(count, scale_type, "scales")
    out.zero_points = h.nbytes(count, zp_type, "zero_points") if zp_type is not None else 0
    if offset_type is not None:
        out.offsets = h.nbytes(count, offset_type, "offsets")
    if table is not None:
        out.tail["code_table"] = table
    if quant.GroupIndexType() != 0:
        gt = h.one_of("quantization.group_index_type", quant.GroupIndexType(), GROUP_INDEX_TYPES)
        if scheme[0] != fb.QuantizationScheme.PerBlock:
            raise h.invalid("quantization.group_index_type", gt.name, "a group index belongs to per-block quantization")
        d = shape[scheme[1]]
        out.tail["group_index"] = h.nbytes(0 if empty or d == h.dynamic else d, gt, "group_index")
    for prefix, level, codes, roles in (
        ("scale", quant.ScaleQuantization(), scale_type, ("scale_scales", "scale_code_table")),
        ("offset", quant.OffsetQuantization(), offset_type, ("offset_scales", "offset_code_table")),
    ):
        if level is None:
            continue
        field = f"quantization.{prefix}_quantization."
        quant_of[field] = level
        bad = _forbidden(level)
        if bad is not None:
            raise h.invalid(field + bad, "present", "a second level has scales, a code table, a tensor scale and a tensor offset only")
        expressed(field)
        level_scale = h.one_of(field + "scale_type", level.ScaleType(), SCALE_TYPES)
        finite(field + "tensor_scale", level.TensorScale())
        finite(field + "tensor_offset", level.TensorOffset())
        sshape = scale_shape(shape, scheme)
        selements = 0 if empty else (None if elements is None else int(np.prod(sshape, dtype=object)))
        lcount = _scale_count(h, field, sshape, selements, empty, (level.Scheme(), level.Axis(), level.BlockSize()))
        ltable = _code_table(h, field, roles[1], codes, level.CodeTableType())
        out.tail[roles[0]] = h.nbytes(lcount, level_scale, roles[0])
        if ltable is not None:
            out.tail[roles[1]] = ltable
    # Wire order.
    out.tail = {r: out.tail[r] for r in TAIL_ROLES if r in out.tail}
    return out


def _code_table(h, prefix, role, code_type, v) -> Optional[int]:
    if v == 0:
        return None
    t = h.one_of(prefix + "code_table_type", v, CODE_TABLE_TYPES)
    if code_type.kind != "uint" or code_type.bits > 8:
        raise h.invalid(
            prefix + "code_table_type", t.name, f"a code table indexes unsigned codes of at most 8 bits, not {code_type.name}"
        )
    return h.nbytes(1 << code_type.bits, t, role)


def _scale_count(h, prefix, shape, elements, empty, scheme) -> int:
    kind, axis, block = scheme
    rank = len(shape)

    def axis_dim(what):
        if axis >= rank:
            raise h.invalid(prefix + "axis", axis, f"{what} needs an axis below the rank {rank}")
        return shape[axis]

    if kind == fb.QuantizationScheme.PerTensor:
        count = 1
    elif kind == fb.QuantizationScheme.PerFlatBlock:
        # Format 1.4: blocks of the whole tensor, row-major; no axis.
        if block == 0:
            raise h.invalid(prefix + "block_size", 0, "per-flat-block quantization needs a block size > 0")
        count = None if elements is None else -(-elements // block)
    elif kind == fb.QuantizationScheme.PerAxis:
        d = axis_dim("per-axis quantization")
        count = None if d == h.dynamic else d
    elif kind == fb.QuantizationScheme.PerBlock:
        d = axis_dim("per-block quantization")
        if block == 0:
            raise h.invalid(prefix + "block_size", 0, "per-block quantization needs a block size > 0")
        if elements is None:
            count = None
        elif d == 0:
            count = 0  # ADR-007 section 8: no blocks, no scales
        else:
            count = (elements // d) * (-(-d // block))
            if count > h.u64_max:
                count = None
    elif kind == 0:
        raise h.invalid(prefix + "scheme", "Invalid (0)", "a quantization names its scheme")
    else:
        raise HurrayError(
            "UnsupportedQuantization",
            f"tensor {h.name!r}: quantization scheme {kind} is not supported by this reader",
            h.name,
            prefix + "scheme",
        )
    return 0 if empty or count is None else count


def scale_shape(shape, scheme):
    """The shape of the scale array of ``scheme`` = (kind, axis, block) over ``shape``."""
    kind, axis, block = scheme
    if kind == fb.QuantizationScheme.PerAxis:
        return [shape[axis]]
    if kind == fb.QuantizationScheme.PerFlatBlock:
        n = 1
        for d in shape:
            n *= d
        return [-(-n // block)]
    if kind == fb.QuantizationScheme.PerBlock:
        out = list(shape)
        out[axis] = -(-out[axis] // block)
        return out
    return []


def _block_format(h, et, shape, elements, quant, layout_name) -> Lengths:
    v = quant.BlockFormat()
    if v not in BLOCK_FORMATS:
        raise h.invalid("quantization.block_format", v, "not a block format this reader knows")
    fname, per, size, _ = BLOCK_FORMATS[v]

    def refuse(field, value, reason):
        return h.invalid(field, value, f"{fname}: {reason}")

    if et.name != "u8":
        raise refuse("element_type", et.name, "the blocks are stored as u8")
    if layout_name != "dense":
        raise refuse("layout", layout_name, "the blocks are dense and contiguous")
    rank = len(shape)
    if not (quant.Scheme() == fb.QuantizationScheme.PerBlock and rank >= 1 and quant.Axis() == rank - 1 and quant.BlockSize() == per):
        raise refuse("quantization.block_size", quant.BlockSize(), f"per block of {per} along the last axis")
    field = composite_field(quant)
    for other in ("code_table_type", "scale_quantization", "offset_quantization", "tensor_offset", "group_index_type"):
        if field is not None and field[0] == other:
            raise refuse(f"quantization.{other}", "present", "nothing else is set")
    if quant.ZeroPointType() != 0 or quant.OffsetType() != 0 or quant.TensorScale() != 1.0:
        raise refuse(
            "quantization.zero_point_type",
            quant.ZeroPointType(),
            "the blocks hold their own scales: no zero points, offsets or tensor scale",
        )
    t = h.element_type("quantization.expressed_type", quant.ExpressedType())
    if t.kind != "float":
        raise h.invalid("quantization.expressed_type", t.name, "the expressed type is a floating-point type")
    d = shape[-1]
    if d != h.dynamic and d % per:
        raise refuse(f"shape[{rank - 1}]", d, f"rows are whole blocks of {per}")
    out = Lengths()
    out.block_values = ((elements or 0) // per) * size
    return out


# -- dequantization -------------------------------------------------------------


def _scale_index(shape, kind, axis, block, group) -> np.ndarray:
    """For each element (row-major), the flat index of its scale."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64)
    if kind == "per_tensor":
        return np.zeros(n, dtype=np.int64)
    if kind == "per_flat_block":
        return i // block
    d = shape[axis]
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    a = (i // inner) % d
    if kind == "per_axis":
        return a
    # A block longer than the axis is one block (any u64 is a valid size).
    block = min(block, max(d, 1))
    blocks = -(-d // block)
    b = group[a] if group is not None else a // block
    return ((i // (d * inner)) * blocks + b) * inner + (i % inner)


def _values(t, level, codes, shape, table_role, scales_role, zps, offsets) -> np.ndarray:
    """The values of one level, as float32: its codes, each through its code
    table or minus its zero point, times its scale and tensor scale, plus its
    offset (f64, rounded once), then plus its tensor offset (rounded again)."""
    kind = SCHEMES[level.Scheme()]
    group = None
    if level.GroupIndexType() != 0:
        group = np.frombuffer(t.buffer("group_index"), dtype="<i4").astype(np.int64)
        groups = -(-shape[level.Axis()] // max(level.BlockSize(), 1))
        bad = np.flatnonzero((group < 0) | (group >= groups))
        if bad.size:
            j = int(bad[0])
            raise HurrayError(
                "InvalidField", f"tensor {t.name!r}: group_index[{j}] = {group[j]}: a group of the axis's {groups}", t.name, f"group_index[{j}]"
            )
    index = _scale_index(shape, kind, level.Axis(), level.BlockSize(), group)
    n_scales = int(index.max()) + 1 if index.size else 0
    if level.CodeTableType() != 0:
        buf = t.buffer(table_role)
        entries = dec.element_count_in(len(buf), dec.facts(level.CodeTableType()).bits)
        table = dec.decode(buf, level.CodeTableType(), entries).astype(np.float64)
        v = table[codes.astype(np.int64)]
    else:
        v = codes.astype(np.float64) - (zps[index] if zps is not None else 0.0)
    s = scales_role(n_scales)[index]
    x = v * s * level.TensorScale()
    if offsets is not None:
        x = x + offsets(n_scales)[index]
    with np.errstate(over="ignore"):
        x = x.astype(np.float32)
        if level.TensorOffset() != 0.0:
            x = (x.astype(np.float64) + level.TensorOffset()).astype(np.float32)
    return x


def dequantize(t) -> np.ndarray:
    """Every element of tensor ``t`` dequantized, as float32 in its shape."""
    q = t._t.Quantization()
    shape = [int(d) for d in t.shape]
    if 0 in shape:
        # ADR-007: no scales at all; a huge other dimension is still one no
        # NumPy array can have.
        return np.zeros(t._numpy_shape(), dtype=np.float32)
    if q.BlockFormat() != 0:
        return _blocks(q.BlockFormat(), t.buffer("values"), shape)
    codes = t.numpy().reshape(-1)
    sshape = scale_shape(shape, (q.Scheme(), q.Axis(), q.BlockSize()))

    def side(role, type_, level, level_roles):
        """The scales (or offsets): decoded, or their second level's values."""

        def get(n):
            stored = dec.decode(t.buffer(role), type_, n)
            if level is None:
                return stored.astype(np.float64)
            lv = _values(t, level, stored.reshape(-1), sshape, level_roles[1], lambda m: dec.decode(t.buffer(level_roles[0]), level.ScaleType(), m).astype(np.float64), None, None)
            return lv.astype(np.float64)

        return get

    zps = None
    if q.ZeroPointType() != 0:
        zps = dec.decode(t.buffer("zero_points"), q.ZeroPointType(), t._plan.scale_count).astype(np.float64)
    scales = side("scales", q.ScaleType(), q.ScaleQuantization(), ("scale_scales", "scale_code_table"))
    offsets = None
    if q.OffsetType() != 0:
        offsets = side("offsets", q.OffsetType(), q.OffsetQuantization(), ("offset_scales", "offset_code_table"))
    return _values(t, q, codes, shape, "code_table", scales, zps, offsets).reshape(shape)


def _blocks(fmt: int, raw, shape) -> np.ndarray:
    _, per, size, ggml = BLOCK_FORMATS[fmt]
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)
    if ggml == 9:  # Q8_1 (gguf 0.19's 40 bytes): f32 d, f32 sum, 32 i8: d * q
        out = blocks[:, 0:4].copy().view("<f4") * blocks[:, 8:].copy().view(np.int8).astype(np.float32)
    elif ggml == 15:  # Q8_K: f32 d, 256 i8, 16 i16 sums: d * q
        out = blocks[:, 0:4].copy().view("<f4") * blocks[:, 4:260].copy().view(np.int8).astype(np.float32)
    elif ggml == 41:  # Q1_0: f16 d, 128 bits LSB-first: +d or -d
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        bits = np.unpackbits(blocks[:, 2:], axis=1, bitorder="little")
        out = np.where(bits == 1, d, -d).astype(np.float32)
    else:
        import gguf  # the format's own definition

        out = gguf.quants.dequantize(blocks, gguf.GGMLQuantizationType(ggml))
    return np.asarray(out, dtype=np.float32).reshape(shape)
