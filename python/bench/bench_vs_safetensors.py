"""Benchmark: hurray against safetensors, both measured in the same process.

What it measures (best of ``--repeat`` runs each, wall-clock seconds):

1. ``save_file`` of torch tensors: ``safetensors.torch`` vs ``hurray.torch``.
   hurray's writer is atomic (temporary file, fsync, rename); safetensors
   does not fsync. Reported both ways: hurray's default (durable, with its
   fsync) and ``durable=False`` (atomic, no fsync, as safetensors), each set
   against the physical limit measured in the same run: writing the same
   tensor bytes to a new plain file, with and without fsync.
2. ``load_file`` into NumPy (``safetensors.numpy`` vs ``hurray.numpy``),
   load only and load + touch.
3. ``load_file`` into torch, load only and load + touch.
4. ``safe_open(framework="pt")`` + ``get_tensor`` of every tensor, + touch.
5. ``get_slice(embedding)[1000:1064]`` on an open file, time per call.

"Touch" reads one byte per 4096 bytes of every tensor, so lazy or zero-copy
(memory-mapped) loads pay for the pages they map. The OS page cache cannot be
dropped without root, so every file is written once and read fully once
before its loads are timed: all load numbers are for a warm page cache.
Every timed save starts from a clean slate: the destination removed and
``os.sync()`` run (untimed), so no save pays for an earlier one's writeback.

The state dict is a Llama-like stack (embedding [vocab, d]; per layer q/k/v/o
[d, d] with f32 q/k/v biases, gate/up [4d, d], down [d, 4d], two f32 norms
[d]; a final norm and an lm_head) in bf16 except the f32 norms and biases,
sized to about ``--size-mb``. NumPy has no bf16 and safetensors.numpy cannot
read it, so the NumPy cases use the same tensors with bf16 converted to
float16 (same shapes and byte size), written to a second pair of files.

Every loaded tensor is checked bit-identical between the two libraries (and
against the source), so no number comes from a wrong result.

Run against a release build of the extension (``pip install ./pyext``, or
``maturin develop --release -m pyext/Cargo.toml``; the tests' debug build is
several times slower per call). It needs about 2x the size free in --dir;
files are deleted at the end::

    python python/bench/bench_vs_safetensors.py [--size-mb N] [--repeat R] [--dir D]
"""

import argparse
import gc
import os
import platform
import shutil
import sys
import tempfile
import time

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import hurray
import hurray.numpy
import hurray.torch
from llama import VOCAB, llama_shapes

SLICE = (1000, 1064)
SLICE_CALLS = 1000
TOUCH_STRIDE = 4096


def build_state_dict(size_mb, seed=0):
    """A bf16/f32 transformer state dict of about ``size_mb`` MB, and its d and layer count."""
    shapes, d, n_layers = llama_shapes(size_mb)
    gen = torch.Generator().manual_seed(seed)
    tensors = {name: torch.randn(shape, dtype=dt, generator=gen)
               for name, (shape, dt) in shapes.items()}
    return tensors, d, n_layers


def to_numpy_dict(tensors):
    """The same tensors as NumPy arrays, bf16 converted to float16."""
    return {k: (v.to(torch.float16) if v.dtype == torch.bfloat16 else v).numpy()
            for k, v in tensors.items()}


def nbytes(tensors):
    return sum(t.nbytes for t in tensors.values())


def touch(tensors):
    """Reads one byte per TOUCH_STRIDE bytes of every tensor (forces mapped pages in)."""
    total = 0
    for t in tensors.values():
        if isinstance(t, np.ndarray):
            total += int(t.reshape(-1).view(np.uint8)[::TOUCH_STRIDE].sum())
        else:
            total += int(t.reshape(-1).view(torch.uint8)[::TOUCH_STRIDE].sum())
    return total


def warm(path):
    """Reads the whole file once, so loads are timed with a warm page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(16 * 2**20):
            pass


def bits(t):
    """An integer view of a tensor's bits, for exact comparison."""
    if isinstance(t, np.ndarray):
        return t.view({2: np.uint16, 4: np.uint32}[t.dtype.itemsize])
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def assert_identical(a, b, what):
    assert a.keys() == b.keys(), f"{what}: names differ"
    for name in a:
        x, y = a[name], b[name]
        assert x.dtype == y.dtype, f"{what}: {name}: dtype {x.dtype} != {y.dtype}"
        assert tuple(x.shape) == tuple(y.shape), f"{what}: {name}: shape differs"
        equal = np.array_equal if isinstance(x, np.ndarray) else torch.equal
        assert equal(bits(x), bits(y)), f"{what}: {name}: bits differ"


def best(fn, repeat, setup=None):
    """Best wall time of ``fn()`` over ``repeat`` runs, and the last result.
    ``fn`` may return (result, {label: seconds}) to report sub-timings too;
    ``setup()`` runs untimed before each run."""
    times, out = {}, None
    for _ in range(repeat):
        out = None
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        total = time.perf_counter() - t0
        out, laps = out if isinstance(out, tuple) else (out, {})
        for label, sec in {"": total, **laps}.items():
            times[label] = min(times.get(label, float("inf")), sec)
    return times, out


def load_and_touch(load, path):
    t0 = time.perf_counter()
    tensors = load(path)
    loaded = time.perf_counter() - t0
    touch(tensors)
    return tensors, {"load": loaded}


def open_get_all(lib, path):
    with lib.safe_open(path, framework="pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    touch(tensors)
    return tensors


def slice_calls(lib, path, name):
    with lib.safe_open(path, framework="pt") as f:
        t0 = time.perf_counter()
        for _ in range(SLICE_CALLS):
            out = f.get_slice(name)[SLICE[0]:SLICE[1]]
        return out, {"call": (time.perf_counter() - t0) / SLICE_CALLS}


def compare_loads(rows, label, st_load, hu_load, st_path, hu_path, size, repeat, reference):
    """Times a load case for both libraries (load only and load + touch), checks bits."""
    st, st_out = best(lambda: load_and_touch(st_load, st_path), repeat)
    hu, hu_out = best(lambda: load_and_touch(hu_load, hu_path), repeat)
    assert_identical(st_out, hu_out, label)
    assert_identical(reference, hu_out, label + " vs source")
    rows.append((label + " (load only)", st["load"], hu["load"], size))
    rows.append((label + " + touch", st[""], hu[""], size))


def run(args, workdir):
    tensors, d, n_layers = build_state_dict(args.size_mb)
    size = nbytes(tensors)
    emb = "model.embed_tokens.weight"
    print(f"python {platform.python_version()}  torch {torch.__version__}  "
          f"numpy {np.__version__}  safetensors {safetensors.__version__}  "
          f"hurray {hurray.__version__}")
    print(f"{platform.platform()}  cpu_count {os.cpu_count()}  "
          f"usable {len(os.sched_getaffinity(0))}  torch threads {torch.get_num_threads()}")
    print(f"state dict: {len(tensors)} tensors, {size / 1e6:.1f} MB, d={d}, layers={n_layers}, "
          f"vocab={VOCAB}; repeat={args.repeat} (best of); loads on a warm page cache\n")
    rows = []
    st_np, hu_np = os.path.join(workdir, "np.safetensors"), os.path.join(workdir, "np.hurray")
    arrays = to_numpy_dict(tensors)
    st, _ = best(lambda: safetensors.numpy.save_file(arrays, st_np), args.repeat,
                 clean_slate(st_np))
    hu, _ = best(lambda: hurray.numpy.save_file(arrays, hu_np), args.repeat, clean_slate(hu_np))
    rows.append(("save_file numpy f16 (hurray fsyncs)", st[""], hu[""], size))
    for path in (st_np, hu_np):
        warm(path)
    compare_loads(rows, "load_file numpy f16", safetensors.numpy.load_file, hurray.numpy.load_file,
                  st_np, hu_np, size, args.repeat, arrays)
    del arrays
    for path in (st_np, hu_np):
        os.remove(path)

    st_pt, hu_pt = os.path.join(workdir, "pt.safetensors"), os.path.join(workdir, "pt.hurray")
    st, _ = best(lambda: safetensors.torch.save_file(tensors, st_pt), args.repeat,
                 clean_slate(st_pt))
    hu, _ = best(lambda: hurray.torch.save_file(tensors, hu_pt), args.repeat, clean_slate(hu_pt))
    rows.append(("save_file torch (hurray fsyncs)", st[""], hu[""], size))
    nosync, _ = best(lambda: hurray.torch.save_file(tensors, hu_pt, durable=False), args.repeat,
                     clean_slate(hu_pt))
    rows.append(("save_file torch, durable=False (no fsync)", st[""], nosync[""], size))
    raw = os.path.join(workdir, "raw.bin")
    synced, _ = best(lambda: raw_write(tensors, raw, True), args.repeat, clean_slate(raw))
    cached, _ = best(lambda: raw_write(tensors, raw, False), args.repeat, clean_slate(raw))
    os.remove(raw)
    limits = [("plain write + fsync vs durable save", synced[""], hu[""]),
              ("plain write vs durable=False save", cached[""], nosync[""])]
    for path in (st_pt, hu_pt):
        warm(path)
    compare_loads(rows, "load_file torch", safetensors.torch.load_file, hurray.torch.load_file,
                  st_pt, hu_pt, size, args.repeat, tensors)

    st, st_out = best(lambda: open_get_all(safetensors, st_pt), args.repeat)
    hu, hu_out = best(lambda: open_get_all(hurray, hu_pt), args.repeat)
    assert_identical(st_out, hu_out, "safe_open get_tensor")
    rows.append(("safe_open pt + get_tensor all + touch", st[""], hu[""], size))
    del st_out, hu_out

    st, st_out = best(lambda: slice_calls(safetensors, st_pt, emb), args.repeat)
    hu, hu_out = best(lambda: slice_calls(hurray, hu_pt, emb), args.repeat)
    assert torch.equal(bits(st_out), bits(hu_out)), "get_slice bits differ"
    assert torch.equal(bits(hu_out), bits(tensors[emb][SLICE[0]:SLICE[1]])), "get_slice vs source"
    case = f"get_slice emb[{SLICE[0]}:{SLICE[1]}] per call"
    rows.append((case, st["call"], hu["call"], hu_out.nbytes))
    print_table(rows)
    print_limits(limits)


def clean_slate(*paths):
    """Before a timed save: no earlier file in the way, and no dirty pages
    left by earlier writes (whose writeback would throttle this one)."""

    def setup():
        for path in paths:
            if os.path.exists(path):
                os.remove(path)
        os.sync()

    return setup


def raw_write(tensors, path, sync):
    """The physical limit of a save: the tensors' bytes to a new plain file
    (new, as both libraries write a new temporary file and rename it)."""
    with open(path, "wb") as f:
        for t in tensors.values():
            f.write(t.contiguous().view(-1).view(torch.uint8).numpy().data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def print_limits(limits):
    print(f"\n{'save against the physical limit':<42} {'limit s':>14} {'hurray s':>12} "
          f"{'limit/hurray':>12}")
    for case, limit, hu in limits:
        print(f"{case:<42} {limit:>14.6f} {hu:>12.6f} {limit / hu:>12.2f}")


def print_table(rows):
    head = (f"{'case':<42} {'safetensors s':>14} {'hurray s':>12} {'st/hurray':>10} "
            f"{'hurray GB/s':>12}")
    print(head)
    print("-" * len(head))
    for case, st, hu, size in rows:
        print(f"{case:<42} {st:>14.6f} {hu:>12.6f} {st / hu:>10.2f} {size / hu / 1e9:>12.2f}")
    print("\nst/hurray > 1 means hurray is faster. "
          "GB/s = bytes of the case / hurray seconds (1 GB = 1e9 B).")
    print("All loads and slices were checked bit-identical between the libraries and the source.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024,
                        help="approximate state dict size in MiB (default 1024)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per case, the best is reported (default 3)")
    parser.add_argument("--dir", help="a temporary directory is made (and removed) inside it "
                        "(default /tmp)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.size_mb < 1:
        parser.error("--size-mb and --repeat must be positive")
    workdir = tempfile.mkdtemp(prefix="hurray-bench-", dir=args.dir or "/tmp")
    try:
        run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
