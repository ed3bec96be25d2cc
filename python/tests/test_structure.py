"""The reader's hand-written pieces agree with the generated ones."""

import inspect
import re

import hurray_reader.hurray_generated as fb
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
