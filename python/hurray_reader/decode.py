"""Element decoding: stored bytes -> NumPy arrays.

Element facts (bits, class, NumPy dtype) come from the generated
``element_types`` table. What that table cannot say is how to decode the
float formats NumPy lacks; ``FLOAT_FORMATS`` gives their bit layout, keyed by
the schema's short name. A float type with neither a NumPy dtype nor an entry
here is reported as unsupported, never guessed at.

Representation chosen for the types NumPy has no dtype for:

* sub-byte integers (i2, u2, i4, u4) are unpacked LSB-first into int8/uint8
  (signed ones sign-extended); bool into ``numpy.bool_``;
* bf16, f8e4m3fn, f8e5m2 and f4e2m1fn are decoded to float32 by default
  (every value of these formats is exactly a float32); ``raw=True`` gives the
  stored codes instead: uint16 for bf16, uint8 for the 8-bit and (unpacked)
  4-bit formats.
"""

import numpy as np

from . import element_types
from .errors import HurrayError

# short name -> (exponent bits, mantissa bits, specials), specials one of
# "ieee" (all-ones exponent: inf / NaN), "fn" (no inf; only all-ones
# exponent and mantissa is NaN), "finite" (no inf, no NaN).
FLOAT_FORMATS = {
    "bf16": (8, 7, "ieee"),
    "f8e4m3fn": (4, 3, "fn"),
    "f8e5m2": (5, 2, "ieee"),
    "f4e2m1fn": (2, 1, "finite"),
}


def facts(wire: int):
    """The generated facts of an element type's wire value, or None."""
    return element_types.BY_VALUE.get(wire)


def minifloat(code: int, e: int, m: int, specials: str) -> float:
    """Decodes one code of a small binary float format."""
    sign = -1.0 if (code >> (e + m)) & 1 else 1.0
    exp_max, man_max = (1 << e) - 1, (1 << m) - 1
    exp, man = (code >> m) & exp_max, code & man_max
    bias = (1 << (e - 1)) - 1
    if specials == "ieee" and exp == exp_max:
        return sign * float("inf") if man == 0 else float("nan")
    if specials == "fn" and exp == exp_max and man == man_max:
        return float("nan")
    frac = man / (1 << m)
    if exp == 0:
        return sign * frac * 2.0 ** (1 - bias)
    return sign * (1.0 + frac) * 2.0 ** (exp - bias)


def _lookup_table(name: str) -> np.ndarray:
    e, m, specials = FLOAT_FORMATS[name]
    n = 1 << (1 + e + m)
    return np.array([minifloat(c, e, m, specials) for c in range(n)], dtype=np.float32)


_TABLES = {}


def unpack_codes(buf, bits: int, count: int) -> np.ndarray:
    """The ``count`` packed ``bits``-wide codes of ``buf`` (LSB-first) as uint8."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    if count == 0:
        return np.zeros(0, dtype=np.uint8)
    per_byte = 8 // bits
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    mask = np.uint8((1 << bits) - 1)
    codes = (raw[:, None] >> shifts[None, :]) & mask
    return codes.reshape(-1)[:count]


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
            return codes if raw else _float_table(f.name)[codes]
        raise HurrayError("InvalidElementType", f"no decoder for {f.name}")
    if f.numpy is not None:
        return np.frombuffer(buf, dtype=np.dtype(f.numpy), count=count)
    if f.kind == "float" and f.name in FLOAT_FORMATS:
        width = np.dtype(f"<u{f.bits // 8}")
        codes = np.frombuffer(buf, dtype=width, count=count)
        if raw:
            return codes
        if f.name == "bf16":
            # bfloat16 is the high half of a binary32: exact.
            return (codes.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return _float_table(f.name)[codes]
    raise HurrayError("InvalidElementType", f"no decoder for element type {f.name}")


def _float_table(name: str) -> np.ndarray:
    if name not in FLOAT_FORMATS:
        raise HurrayError("InvalidElementType", f"no decoder for element type {name}")
    if name not in _TABLES:
        _TABLES[name] = _lookup_table(name)
    return _TABLES[name]


def element_size(wire: int) -> int:
    """Bytes per element of a byte-aligned type."""
    return facts(wire).bits // 8
