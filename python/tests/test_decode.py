"""The Python reader's float decoding and sub-byte unpacking, against
ml_dtypes (and NumPy) on every bit pattern.

The reader has no float table of its own: every float type decodes from the
generated ``float_format`` (the schema's layout). Every code of every float
type of at most 16 bits is decoded through the reader's own road (packed
into the stored bytes as the format lays them out, then ``decode``) and
compared, bit for bit, with ml_dtypes' (or NumPy's) conversion of the same
code to float32 and float64; NaN compares as NaN.
"""

import ml_dtypes
import numpy as np
import pytest

from hurray_reader import decode, element_types

FLOATS = [f for f in element_types.BY_VALUE.values() if f.kind == "float"]
SMALL_FLOATS = [f for f in FLOATS if f.bits <= 16]
NEW_IN_1_2 = {"f8e8m0fnu", "f8e4m3fnuz", "f8e5m2fnuz", "f8e3m4", "f8e4m3", "f8e4m3b11fnuz", "f6e2m3fn", "f6e3m2fn"}


def _dtype(f):
    """The NumPy dtype that holds a float type's codes as values (ml_dtypes' or NumPy's)."""
    return np.dtype(getattr(ml_dtypes, f.ml_dtypes) if f.ml_dtypes else f.numpy)


def pack_reference(codes, bits):
    """The stored bytes of ``codes``: one LSB-first bit stream (code ``i`` at
    bits ``[i*bits, (i+1)*bits)``), written out independently of the reader."""
    if bits % 8 == 0:
        return np.asarray(codes, dtype=f"<u{bits // 8}").tobytes()
    stream = 0
    for i, c in enumerate(codes):
        stream |= int(c) << (i * bits)
    return stream.to_bytes((len(codes) * bits + 7) // 8, "little")


def same_bits(got, want):
    """Equal bit for bit (-0.0 is not 0.0), NaN matching any NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    width = np.dtype(f"u{got.dtype.itemsize}")
    return (got.view(width) == want.view(width)) | (np.isnan(got) & np.isnan(want))


def test_every_float_type_has_a_layout_and_an_ml_dtypes_or_numpy_type():
    for f in FLOATS:
        assert f.float_format is not None, f.name
        e, m, bias, specials = f.float_format
        assert specials in ("ieee", "fn", "fnuz", "finite", "fnu"), f.name
        assert e + m + (specials != "fnu") == f.bits, f.name
        assert f.numpy or f.ml_dtypes, f.name
    assert NEW_IN_1_2 <= {f.name for f in FLOATS}
    assert not hasattr(decode, "FLOAT_FORMATS")  # one owner: the schema


@pytest.mark.parametrize("f", SMALL_FLOATS, ids=lambda f: f.name)
def test_every_code_decodes_as_ml_dtypes_converts_it(f):
    n = 1 << f.bits
    codes = np.arange(n, dtype=np.uint32)
    src = codes.astype(np.uint8 if f.bits <= 8 else np.uint16).view(_dtype(f))
    with np.errstate(invalid="ignore"):  # NaN codes
        want32, want64 = src.astype(np.float32), src.astype(np.float64)
    buf = pack_reference(codes, f.bits)
    assert len(buf) == (n * f.bits + 7) // 8
    # The layout alone, every code, in float64 and float32.
    exact = decode.decode_float(codes, f.float_format)
    assert same_bits(exact, want64).all(), f.name
    assert same_bits(exact.astype(np.float32), want32).all(), f.name
    # The reader's road: stored bytes -> values (NumPy's own dtype for f16).
    got = np.asarray(decode.decode(buf, f.value, n), dtype=np.float32)
    assert same_bits(got, want32).all(), f.name
    if f.numpy is None:
        # raw=True: the stored codes, unpacked.
        raw = decode.decode(buf, f.value, n, raw=True)
        assert (raw.astype(np.uint32) == codes).all(), f.name
    # Sanity of the comparison itself: the specials are there where expected.
    specials = f.float_format[3]
    assert np.isnan(want64).any() == (specials != "finite"), f.name
    assert np.isinf(want64).any() == (specials == "ieee"), f.name
    assert (np.signbit(want64) & (want64 == 0)).any() == (specials in ("ieee", "fn", "finite")), f.name


@pytest.mark.parametrize("name", ["f32", "f64"])
def test_wide_floats_decode_from_their_layout(name):
    # 2^32 / 2^64 codes are too many: every exponent with edge and random
    # mantissas, both signs (zeros, subnormals, normals, inf, NaNs).
    f = element_types.BY_NAME[name]
    e, m, _, _ = f.float_format
    rng = np.random.default_rng(11)
    exps = np.repeat(np.arange(1 << e, dtype=np.uint64), 6)
    mans = np.concatenate(
        [[0, 1, (1 << m) - 1], rng.integers(0, 1 << m, size=3, dtype=np.uint64)] * (1 << e)
    ).astype(np.uint64)
    codes = (exps << np.uint64(m)) | mans
    codes = np.concatenate([codes, codes | np.uint64(1 << (e + m))])
    width = np.dtype(f"u{f.bits // 8}")
    with np.errstate(invalid="ignore"):  # NaN codes
        want = codes.astype(width).view(np.dtype(f.numpy)).astype(np.float64)
    assert same_bits(decode.decode_float(codes, f.float_format), want).all()


def test_minifloat_decodes_one_code():
    fmt = element_types.BY_NAME["f8e8m0fnu"].float_format
    assert decode.minifloat(127, fmt) == 1.0
    assert decode.minifloat(0, fmt) == 2.0**-127
    assert np.isnan(decode.minifloat(255, fmt))
    fnuz = element_types.BY_NAME["f8e4m3fnuz"].float_format
    assert np.isnan(decode.minifloat(0x80, fnuz)) and decode.minifloat(0, fnuz) == 0.0


@pytest.mark.parametrize("bits", [1, 2, 4, 6, 8])
@pytest.mark.parametrize("count", [0, 1, 3, 4, 5, 7, 64, 257])
def test_unpacking_reads_one_lsb_first_bit_stream(bits, count):
    rng = np.random.default_rng(bits * 1000 + count)
    codes = rng.integers(0, 1 << bits, size=count, dtype=np.uint16)
    buf = pack_reference(codes, bits)
    got = decode.unpack_codes(buf, bits, count)
    assert got.dtype == np.uint8 and (got == codes).all()
    # Asking for more than is stored gives what is stored.
    assert len(decode.unpack_codes(buf, bits, count + 100)) == len(buf) * 8 // bits


def test_six_bit_codes_span_bytes():
    # 0b000001, 0b111111, 0b101010, 0b010101 -> 3 bytes.
    buf = pack_reference([0b000001, 0b111111, 0b101010, 0b010101], 6)
    assert buf == bytes([0b11000001, 0b10101111, 0b01010110])
    assert decode.unpack_codes(buf, 6, 4).tolist() == [1, 63, 42, 21]
    # And as fp6 values: codes 1 and 63 of e2m3fn are 0.125 and -7.5.
    values = decode.decode(buf, element_types.BY_NAME["f6e2m3fn"].value, 4)
    assert values.dtype == np.float32 and values.tolist()[:2] == [0.125, -7.5]


def test_reader_decodes_what_the_runtime_packed(hurray, tmp_path):
    """Every code of every ml_dtypes float type, written by the runtime
    (hurray.numpy.save_file packs fp4/fp6), read back by this reader."""
    import hurray_reader

    arrays = {}
    for f in SMALL_FLOATS:
        if f.ml_dtypes is None:
            continue
        codes = np.arange(1 << f.bits, dtype=np.uint8 if f.bits <= 8 else np.uint16)
        # An odd count too: the last 6-bit code ends mid-byte.
        arrays[f.name] = codes.view(_dtype(f))
        arrays[f.name + "_odd"] = codes[:-3].view(_dtype(f))
    path = tmp_path / "floats.hurray"
    hurray.numpy.save_file(arrays, path)
    r = hurray_reader.open(path)
    seen = 0
    for t in r:
        src = arrays[t.name]
        f = element_types.BY_NAME[t.name.removesuffix("_odd")]
        assert len(t.buffer("values")) == (src.size * f.bits + 7) // 8, t.name
        with np.errstate(invalid="ignore"):
            want = src.astype(np.float32)
        assert same_bits(t.numpy(), want).all(), t.name
        assert (t.numpy(raw=True) == src.view(np.uint8 if f.bits <= 8 else np.uint16)).all(), t.name
        seen += 1
    assert seen == len(arrays)
