"""The peer bench's orders: each save (and each cold load) reuses the memory
the one before it freed, so every library must come right after every other
one equally often, or the order, not the library, is measured; and the cold
loads' files, read from copies in turn."""

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


def test_cold_samples_rotate_over_identical_copies(tmp_path, monkeypatch):
    # A file's place on the disk moved one loader's cold time by 2x, so the
    # cold cases read each library's file from copies in turn.
    import argparse

    import peers

    original = tmp_path / "m.hurray"
    original.write_bytes(bytes(range(256)) * 64)
    paths = peers.copies(str(original), 3)
    assert paths[0] == str(original) and len(set(paths)) == 3
    assert all(Path(p).read_bytes() == original.read_bytes() for p in paths)
    assert peers.copies(str(original), 3) == paths, "made once, then reused"

    read = []
    monkeypatch.setattr(peers, "run_child",
                        lambda args, op, lib, path, *rest: read.append((lib, path)) or {"seconds": 1.0, "digests": {}})
    args = argparse.Namespace(samples=6)
    rows = []
    peers.measure(args, rows, "cold", ["a", "limit"], {"a": paths, "limit": paths}, "llama", 1, {},
                  lambda p: None)
    for lib in ("a", "limit"):
        assert [p for who, p in read if who == lib] == paths + paths
