"""The reader's hand-written pieces agree with the generated ones."""

import inspect
import re

import hurray_reader.hurray_generated as fb
from hurray_reader import decode, element_types
from hurray_reader.verify import LAYOUT_MEMBERS, TABLES


def generated_slots(cls):
    """vtable slots read by the accessors of a flatc-generated table class."""
    src = inspect.getsource(cls)
    return {(int(n) - 4) // 2 for n in re.findall(r"self\._tab\.Offset\((\d+)\)", src)}


def test_verifier_covers_every_field_the_generated_module_reads():
    for name, fields in TABLES.items():
        assert set(fields) == generated_slots(getattr(fb, name)), name


def test_verifier_knows_every_layout_member():
    members = {v: k for k, v in vars(fb.Layout).items() if not k.startswith("_") and k != "NONE"}
    assert LAYOUT_MEMBERS == members


def test_every_float_type_has_a_decoder():
    for f in element_types.BY_VALUE.values():
        if f.kind == "float" and (f.numpy is None or f.bits < 8):
            assert f.name in decode.FLOAT_FORMATS, f.name


def test_minifloat_matches_numpy_float16():
    import numpy as np

    codes = np.arange(1 << 16, dtype=np.uint16)
    want = codes.view(np.float16).astype(np.float64)
    got = np.array([decode.minifloat(int(c), 5, 10, "ieee") for c in codes])
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all()
