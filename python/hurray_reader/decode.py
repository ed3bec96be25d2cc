"""Element decoding: stored bytes -> NumPy arrays.

Every element fact (bits, class, NumPy dtype, float bit layout) comes from
the generated ``element_types`` table, whose owner is the schema: a float
type's ``float_format`` is ``(exponent bits, mantissa bits, bias, specials)``
and :func:`decode_float` turns any such layout into values. A new float
type in the schema needs no code here; a float type without a layout is
reported as unsupported, never guessed at.

``specials`` is one of

* ``"ieee"``: an all-ones exponent is infinity (mantissa 0) or NaN;
* ``"fn"``: no infinity; only all-ones exponent and mantissa is NaN;
* ``"fnuz"``: no infinity, no negative zero; the sign-bit-only code is NaN;
* ``"finite"``: no infinity, no NaN;
* ``"fnu"``: unsigned, no zero, no subnormals; all ones is NaN, every other
  code is ``2 ** (exponent - bias)`` (E8M0 block scales).

Representation chosen for the types NumPy has no dtype for:

* sub-byte integers (i2, u2, i4, u4) are unpacked LSB-first into int8/uint8
  (signed ones sign-extended); bool into ``numpy.bool_``;
* bf16 and the 8-, 6- and 4-bit floats are decoded to float32 by default
  (every value of these formats is exactly a float32); ``raw=True`` gives the
  stored codes instead: uint16 for bf16, uint8 for the 8-bit and (unpacked)
  sub-byte formats.
"""

import numpy as np

from . import element_types
from .errors import HurrayError


def facts(wire: int):
    """The generated facts of an element type's wire value, or None."""
    return element_types.BY_VALUE.get(wire)


def decode_float(codes, float_format) -> np.ndarray:
    """The values of stored ``codes`` (an integer array, each code in its low
    bits) in the binary float layout ``float_format`` = ``(exponent bits,
    mantissa bits, bias, specials)``, as float64: exact for every Hurray
    float type (binary64 included)."""
    e, m, bias, specials = float_format
    c = np.asarray(codes).astype(np.uint64)
    exp_max, man_max = (1 << e) - 1, (1 << m) - 1
    man = c & np.uint64(man_max)
    exp = (c >> np.uint64(m)) & np.uint64(exp_max)
    if specials == "fnu":
        # Unsigned powers of two: no sign, no mantissa, no zero.
        out = np.ldexp(1.0, exp.astype(np.int32) - np.int32(bias))
        out[exp == exp_max] = np.nan
        return out
    negative = ((c >> np.uint64(e + m)) & np.uint64(1)).astype(bool)
    subnormal = exp == 0
    # significand * 2^(exponent - bias - m), with the implicit leading 1 for
    # normal codes: at most 53 significant bits, so exact in float64, and
    # ldexp scales exactly (binary64's own subnormals included).
    significand = np.where(subnormal, man, man | np.uint64(1 << m)).astype(np.float64)
    exponent = np.where(subnormal, 1, exp.astype(np.int64)) - bias - m
    with np.errstate(over="ignore"):  # binary64's inf/NaN codes, replaced below
        out = np.ldexp(significand, exponent.astype(np.int32))
    if specials == "ieee":
        top = exp == exp_max
        out[top & (man == 0)] = np.inf
        out[top & (man != 0)] = np.nan
    out = np.where(negative, -out, out)
    if specials == "fn":
        out[(exp == exp_max) & (man == man_max)] = np.nan
    elif specials == "fnuz":
        out[negative & subnormal & (man == 0)] = np.nan
    elif specials not in ("ieee", "finite"):
        raise HurrayError("InvalidElementType", f"unknown float specials {specials!r}")
    return out


def minifloat(code: int, float_format) -> float:
    """Decodes one code of a binary float layout (see :func:`decode_float`)."""
    return float(decode_float(np.array([code], dtype=np.uint64), float_format)[0])


_TABLES = {}


def _float_table(f) -> np.ndarray:
    """Every code's value of a float type of at most 16 bits, as float32."""
    if f.float_format is None:
        raise HurrayError("InvalidElementType", f"no decoder for element type {f.name}")
    if f.name not in _TABLES:
        codes = np.arange(1 << f.bits, dtype=np.uint32)
        _TABLES[f.name] = decode_float(codes, f.float_format).astype(np.float32)
    return _TABLES[f.name]


def unpack_codes(buf, bits: int, count: int) -> np.ndarray:
    """The first ``count`` packed ``bits``-wide codes of ``buf`` as uint8
    (fewer if ``buf`` holds fewer). The codes are one LSB-first bit stream:
    code ``i`` is bits ``[i*bits, (i+1)*bits)`` counted from the least
    significant bit of byte 0, so a 6-bit code may span two bytes (its low
    bits in the first)."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    count = min(count, (raw.size * 8) // bits)
    if count <= 0:
        return np.zeros(0, dtype=np.uint8)
    mask = np.uint16((1 << bits) - 1)
    if 8 % bits == 0:
        per_byte = 8 // bits
        shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
        codes = (raw[:, None] >> shifts[None, :]) & np.uint8(mask)
        return codes.reshape(-1)[:count]
    # A code may span two bytes: read each as the little-endian pair of the
    # byte it starts in and the next (a zero byte past the end).
    padded = np.concatenate([raw, np.zeros(1, dtype=np.uint8)]).astype(np.uint16)
    start = np.arange(count, dtype=np.int64) * bits
    at, shift = start >> 3, (start & 7).astype(np.uint16)
    pair = padded[at] | (padded[at + 1] << np.uint16(8))
    return ((pair >> shift) & mask).astype(np.uint8)


def element_count_in(buf_len: int, bits: int) -> int:
    return (buf_len * 8) // bits


def decode(buf, wire: int, count: int, raw: bool = False) -> np.ndarray:
    """``count`` elements of type ``wire`` stored in ``buf`` as a 1-D array.

    Byte-aligned types with a NumPy dtype are returned as a zero-copy,
    read-only view of ``buf``.
    """
    f = facts(wire)
    if f is None:
        raise HurrayError("InvalidElementType", f"element type {wire} is unknown")
    if f.bits < 8:
        codes = unpack_codes(buf, f.bits, count)
        if f.kind == "bool":
            return codes.astype(np.bool_)
        if f.kind == "int":
            shift = np.uint8(8 - f.bits)
            return ((codes << shift).view(np.int8) >> shift).astype(np.int8)
        if f.kind == "uint":
            return codes
        if f.kind == "float":
            return codes if raw else _float_table(f)[codes]
        raise HurrayError("InvalidElementType", f"no decoder for {f.name}")
    if f.numpy is not None:
        return np.frombuffer(buf, dtype=np.dtype(f.numpy), count=count)
    if f.kind == "float" and f.float_format is not None and f.bits <= 16:
        width = np.dtype(f"<u{f.bits // 8}")
        codes = np.frombuffer(buf, dtype=width, count=count)
        return codes if raw else _float_table(f)[codes]
    raise HurrayError("InvalidElementType", f"no decoder for element type {f.name}")


def element_size(wire: int) -> int:
    """Bytes per element of a byte-aligned type."""
    return facts(wire).bits // 8
