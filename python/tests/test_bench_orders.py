"""The peer bench's save-loop order: each save reuses the memory the save
before it freed, so every library must come right after every other one
equally often, or the order, not the library, is measured."""

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from peers import balanced_orders  # noqa: E402


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_every_library_follows_every_other_equally_often(n):
    rows = balanced_orders(n)
    assert all(sorted(row) == list(range(n)) for row in rows)
    follows = collections.Counter((row[i], row[i + 1]) for row in rows for i in range(n - 1))
    assert set(follows) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(follows.values())) == 1, follows
    # Each library is first in as many rounds as every other one.
    assert len(set(collections.Counter(row[0] for row in rows).values())) == 1


def test_five_libraries_take_ten_rounds():
    # The save-loop's default: Hurray, three peers and the limit, 10 rounds.
    assert len(balanced_orders(5)) == 10
    assert len(balanced_orders(4)) == 4
