"""The peer bench's orders: each save (and each cold load) reuses the memory
the one before it freed, so every library must come right after every other
one equally often, or the order, not the library, is measured; and each cold
load's file, written anew by its library."""

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


def test_every_cold_sample_reads_a_file_its_library_just_wrote(tmp_path, monkeypatch):
    # Where a file lay on the disk moved one loader's cold time by 2x, so a
    # cold sample reads a file written anew by its own library (the limit's
    # by Hurray), flushed and dropped, never one left from an earlier sample.
    import argparse

    import peers

    calls, dropped = [], []

    def run_child(args, op, lib, path, *rest):
        calls.append((op, lib, path))
        if op == "save":
            assert not Path(path).exists(), "the last sample's file is gone first"
            Path(path).write_bytes(b"x")
            return {"seconds": 1.0}
        return {"seconds": 1.0, "digests": {}}

    monkeypatch.setattr(peers, "run_child", run_child)
    monkeypatch.setattr(peers, "drop", lambda path: dropped.append(path))
    args = argparse.Namespace(samples=4)
    paths = {"torch-mmap": str(tmp_path / "cold-torch-mmap.pt"), "limit": str(tmp_path / "cold-limit.hurray")}
    rows = []
    fresh = lambda lib, p: peers.rewrite(args, lib, p, "llama", 1)  # noqa: E731
    peers.measure(args, rows, "cold", ["torch-mmap", "limit"], paths, "llama", 1, {}, fresh)
    loads = [i for i, c in enumerate(calls) if c[0] == "load"]
    assert len(loads) == 8
    for i in loads:
        op, lib, path = calls[i]
        assert calls[i - 1] == ("save", {"torch-mmap": "torch", "limit": "hurray"}[lib], path)
    assert dropped == [calls[i][2] for i in loads]
