"""The peer bench's orders: each save (and each cold load) reuses the memory
the one before it freed, so every library must come right after every other
one equally often, or the order, not the library, is measured; and each cold
and warm-own load's file, written anew by its library."""

import collections
import statistics
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


@pytest.mark.parametrize("case", ["warm-own", "cold", "cold-now"])
def test_every_sample_reads_a_file_its_library_just_wrote(case, tmp_path, monkeypatch):
    # Where a file lay on the disk moved one loader's cold time by 2x, and
    # the folios a warm load maps are the ones its save chose: so a sample
    # of these cases reads a file written anew by its own library (the
    # limit's by Hurray), never one left from an earlier sample; a cold
    # one flushed and dropped, a warm one flushed and kept, its save after
    # the quiet every save sample starts after.
    import argparse

    import peers

    events = []

    def run_child(args, op, lib, path, *rest):
        events.append((op, lib, path))
        if op == "save":
            assert not Path(path).exists(), "the last sample's file is gone first"
            Path(path).write_bytes(b"x")
            return {"seconds": 1.0}
        return {"seconds": 1.0, "digests": {}}

    monkeypatch.setattr(peers, "run_child", run_child)
    monkeypatch.setattr(peers, "drop", lambda path: events.append(("drop", path)))
    monkeypatch.setattr(peers, "flush", lambda path: events.append(("flush", path)))
    monkeypatch.setattr(peers, "settle", lambda args: events.append(("settle",)))
    args = argparse.Namespace(samples=4)
    paths = {"torch-mmap": str(tmp_path / "torch-mmap.pt"), "limit": str(tmp_path / "limit.hurray")}
    prepare, anew = peers.preparation(args, case, "llama", 1)
    assert anew
    peers.measure(args, [], case, ["torch-mmap", "limit"], paths, "llama", 1, {}, prepare)
    loads = [i for i, e in enumerate(events) if e[0] == "load"]
    assert len(loads) == 8
    before_save, after_save = {
        "warm-own": ([("settle",)], [("flush",)]),
        "cold": ([], [("drop",), ("settle",)]),
        "cold-now": ([], [("drop",)]),
    }[case]
    for i in loads:
        _, lib, path = events[i]
        save = ("save", {"torch-mmap": "torch", "limit": "hurray"}[lib], path)
        steps = [e if e[0] == "settle" else (e[0], path) for e in before_save + after_save]
        got = [e for e in events[:i] if e[0] != "load"][-len(steps) - 1:]
        assert got == steps[: len(before_save)] + [save] + steps[len(before_save):], (case, i)


def test_the_warm_read_sample_reads_the_file_written_at_the_start():
    import argparse

    import peers

    assert not peers.preparation(argparse.Namespace(), "warm-read", "llama", 1)[1]


def test_the_ratio_interval_holds_the_ratio_and_tells_a_tie_from_a_win():
    from peers import ratio_interval

    # Hurray twice as fast in every sample: the interval is 2.0 exactly.
    assert ratio_interval([0.5] * 10, [1.0] * 10) == (2.0, 2.0)
    # Clearly apart, with spread: the interval lies above 1.0 and holds the
    # ratio of the medians.
    ours = [0.40, 0.42, 0.45, 0.41, 0.44, 0.43, 0.46, 0.40, 0.42, 0.44]
    theirs = [0.60, 0.64, 0.58, 0.66, 0.61, 0.63, 0.59, 0.65, 0.62, 0.60]
    low, high = ratio_interval(ours, theirs)
    ratio = statistics.median(theirs) / statistics.median(ours)
    assert 1.0 < low <= ratio <= high
    # Bimodal samples, as the cold loads give, with medians a little apart:
    # a tie, the interval on both sides of 1.0.
    ours = [0.38, 0.40, 0.45, 0.52, 0.64, 0.66, 0.70, 0.73, 0.69, 1.13]
    theirs = [0.45, 0.50, 0.52, 0.54, 0.55, 0.60, 0.62, 0.70, 0.83, 0.48]
    low, high = ratio_interval(ours, theirs)
    assert low < 1.0 < high
    # Seeded: the same samples give the same interval.
    assert ratio_interval(ours, theirs) == (low, high)


def test_the_report_names_the_best_peer_with_the_interval():
    from peers import report

    rows = [("cold-now", {"hurray": [0.5, 0.5, 0.5], "safetensors": [1.0, 1.0, 1.0],
                          "torch": [0.75, 0.75, 0.75], "limit": [0.45, 0.45, 0.45]})]
    text = report(rows, 1 << 30)
    assert "Hurray / best peer (torch) = 1.50x (90% interval 1.50-1.50); Hurray / limit = 0.90" in text
