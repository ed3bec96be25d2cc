"""Head-to-head: loading and saving one state dict with Hurray and with every
loader people pick instead, each load in a fresh process.

Peers (each through the calls its documentation gives, default options):

- ``safetensors``: ``safetensors.torch.load_file`` / ``save_file``;
- ``runai``: Run:ai Model Streamer, ``SafetensorsStreamer.stream_file`` over
  the safetensors file, every yielded tensor kept (owned: cloned out of the
  streamer's buffer, which it reuses);
- ``tensorizer``: CoreWeave ``TensorDeserializer(path, device="cpu")`` /
  ``TensorSerializer.write_state_dict``;
- ``torch`` and ``torch-mmap``: ``torch.load(weights_only=True)`` without and
  with ``mmap=True`` / ``torch.save``;
- ``fastsafetensors``: ``fastsafe_open(nogds=True, device="cpu")``;
- ``hurray``: ``hurray.torch.load_file`` / ``save_file``; and, not counted
  as a peer, ``hurray-verify``: ``load_file(path, verify=True)``, every
  checksum checked while loading.

Cases (a fresh process per sample, samples interleaved across libraries in
balanced orders, as the save-loop's rounds below):

- ``warm-own``: the file as its own library wrote it, still in the page
  cache: every sample reads a file written anew just before (after the
  quiet a save sample starts after, then flushed), since the folios a load
  maps are the ones its save made, and Hurray's save chooses its write
  sizes from what the machine's memory costs at the moment;
- ``warm-read``: the same file dropped from the page cache, then read once
  with plain ``read`` calls (as ``cat`` would), then loaded;
- ``cold``: dropped from the page cache (``posix_fadvise(DONTNEED)`` after
  a sync) before every sample, then ``--settle`` seconds of quiet;
- ``cold-now``: the same drop, and the sample right after it (no quiet),
  as a user who evicted a file or rebooted meets it; its limit is a map of
  Hurray's file with ``madvise(MADV_WILLNEED)`` over all of it, then the
  same touch of every page (what the kernel's own readahead gives a loader
  that maps);
- in both cold cases, too, every sample reads a file its library wrote just
  before (``--child save`` in a process of its own, the limit's by Hurray),
  then flushed and dropped: one file read by every sample, or copies made
  once, compared where the files lay on the shared virtual disk and how
  recently the host had seen their blocks (one loader's cold time differed
  by 2x between two byte-identical copies of one file, more than the
  loaders differ); a file written anew for each sample gives every library
  the same history;
- ``small``: a state dict of many small tensors, warm;
- ``s3``: from the tests' S3 server on loopback (``hurray-s3-test-server``,
  s3s over a directory, release build, every client configured from the
  ``AWS_*`` environment): ``hurray.torch.load_file(url)`` (and, as
  ``hurray-safe-open``, ``hurray.safe_open(url)`` with ``get_tensor`` of
  every name, one range GET each), the streamer's ``stream_file("s3://...")``
  (``runai-model-streamer-s3``), tensorizer's ``TensorDeserializer`` over
  ``stream_io.open_stream("s3://...")``; the limit is a parallel ranged GET
  of the whole object (8 threads, 8 MiB ranges, presigned, each body read
  in place into one buffer). The server shares
  the machine's cores with the loaders (it reads each range 1 MiB at a
  time, so it takes a small part of them); each sample starts after the
  same quiet as a cold one (the loaders allocate the whole state dict);
- ``save`` and ``save+fsync``: writing the state dict (built, and one
  one-element tensor saved to warm the library's code, before the clock
  starts) to a new file; with fsync each library's own durable option
  where it has one (Hurray's default), else ``os.fsync`` after the save.
- ``save-loop``: what a training loop that checkpoints every N steps
  meets: one long-lived process saves the state dict ``--rounds`` times
  with every library (no fsync, Hurray's ``durable=False``), each file
  deleted after its save, no quiet in between; its limit is a plain
  ``write`` of the same bytes in 1 MiB pieces in the same loop. Each save
  reuses the memory the save before it freed (the deleted file's page
  cache), and what that costs depends on the folios that file was made of,
  so the rounds follow a balanced order (``balanced_orders``): every
  library comes right after every other one equally often, where an order
  that only rotated put each library after the same one in most rounds.
  Reported: each library's median, its first save and its last.

A load is timed from the call to the loader until one byte of every 4 KiB
page of every tensor has been read (so lazy and mapped loads pay for their
pages). The first sample of every library and case then checks every byte
of every tensor against the source's CRC-32 (untimed).

The physical limits, measured in the same run (``limit`` rows): cold, the
whole file read once around the page cache (``O_DIRECT``) by 8 threads of
``pread`` taking 4 MiB chunks in order (the device); warm, mapping Hurray's
file (in the page-cache state of the case) and touching its tensors as every
sample touches what it loaded, each a ``torch.frombuffer`` of the map at the
tensor's offset (found before the clock starts): a loader that does nothing
but map; save, writing the same bytes to a
new file in 1 MiB ``write`` calls; save+fsync, the device's write rate: the
same bytes through one aligned 2 MiB buffer with ``O_DIRECT``, then an
fsync.

Every save, cold and S3 sample starts after ``--settle`` seconds (see
``settle()``): on a virtual machine that hands freed memory back to its
host, a sample timed right after another measures their order.

Each row reports Hurray's speed over the best peer's as the ratio of their
medians, with the 90% bootstrap interval of that ratio
(``ratio_interval``): a row whose interval holds 1.0 is a tie at the
samples taken, whichever side its medians fall on.

Run it with ``cargo xtask bench-peers`` (its own venv, a release build of the
extension); arguments after ``--`` are passed on::

    cargo xtask bench-peers -- --size-mib 1024 --samples 7
"""

import argparse
import json
import mmap
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

from llama import llama_shapes

PAGE = 4096
LOADERS = ["hurray", "hurray-verify", "safetensors", "runai", "tensorizer", "torch", "torch-mmap",
           "fastsafetensors"]
SAVERS = ["hurray", "safetensors", "tensorizer", "torch"]
# Which file each loader reads: the one its own library wrote.
FILE_OF = {
    "hurray": "hurray",
    "hurray-safe-open": "hurray",
    "hurray-verify": "hurray",
    "safetensors": "safetensors",
    "runai": "safetensors",
    "fastsafetensors": "safetensors",
    "tensorizer": "tensorizer",
    "torch": "torch",
    "torch-mmap": "torch",
    # The limits read Hurray's file.
    "limit": "hurray",
}
EXTENSION = {"hurray": ".hurray", "safetensors": ".safetensors", "tensorizer": ".tensors", "torch": ".pt"}


# ---- the state dicts ------------------------------------------------------------------------


def small_shapes(count):
    """``count`` small f32 tensors of 64 to 4,096 elements."""
    import torch

    rng = random.Random(1)
    return {f"block.{i}.param": ((rng.randrange(64, 4097),), torch.float32) for i in range(count)}


def state_dict(kind, size):
    """Tensors of random bits (every child builds the same ones, fast)."""
    import numpy as np
    import torch

    shapes = llama_shapes(size)[0] if kind == "llama" else small_shapes(size)
    rng = np.random.default_rng(0)
    out = {}
    for name, (shape, dt) in shapes.items():
        n = dt.itemsize
        for d in shape:
            n *= d
        out[name] = torch.frombuffer(bytearray(rng.bytes(n)), dtype=dt).reshape(shape)
    return out


def raw(t):
    """A tensor's bytes as a flat uint8 tensor (no copy for a contiguous tensor)."""
    import torch

    return t.contiguous().reshape(-1).view(torch.uint8)


def digests(tensors):
    return {name: zlib.crc32(raw(t).numpy()) for name, t in tensors.items()}


def touch(tensors):
    """Reads one byte of every page of every tensor."""
    total = 0
    for t in tensors.values():
        total += int(raw(t)[::PAGE].sum())
    return total


# ---- the libraries --------------------------------------------------------------------------


S3_KEY, S3_SECRET = "hurray-test", "hurray-test-secret"


def s3_env(endpoint):
    """The environment the peers' S3 clients read (path-style, static keys)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": S3_KEY,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ALLOW_HTTP": "true",
        "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0",
    }


def load_s3(lib, url):
    """The state dict at ``url`` (``s3://bucket/key``) as ``lib`` loads it."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    if lib == "hurray":
        import hurray.torch

        return hurray.torch.load_file(url)
    if lib == "hurray-safe-open":
        import hurray

        with hurray.safe_open(url, framework="pt") as f:
            return {name: f.get_tensor(name) for name in f.keys()}
    if lib == "runai":
        from runai_model_streamer import SafetensorsStreamer

        with SafetensorsStreamer() as streamer:
            streamer.stream_file(url)
            return dict(streamer.get_tensors())
    if lib == "tensorizer":
        from tensorizer import TensorDeserializer, stream_io

        stream = stream_io.open_stream(url, "rb", s3_access_key_id=S3_KEY, s3_secret_access_key=S3_SECRET,
                                       s3_endpoint=endpoint, force_http=True)
        with TensorDeserializer(stream, device="cpu") as d:
            return dict(d.items())
    raise ValueError(lib)


def limit_s3(url):
    """Ranged GETs of the whole object (8 MiB, 8 threads, one connection
    each) read straight into one buffer: presigned URLs (signed once,
    before the clock) over ``http.client``, each body read with
    ``readinto`` into its place, so no client does less per byte."""
    import concurrent.futures
    import http.client
    import threading
    import urllib.parse

    import boto3

    bucket, key = url[len("s3://"):].split("/", 1)
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    size = client.head_object(Bucket=bucket, Key=key)["ContentLength"]
    signed = urllib.parse.urlsplit(
        client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600))
    target = f"{signed.path}?{signed.query}"
    piece = 8 << 20
    local = threading.local()
    start = time.perf_counter()
    buf = bytearray(size)
    view = memoryview(buf)

    def get(at):
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(signed.hostname, signed.port)
        end = min(at + piece, size)
        local.conn.request("GET", target, headers={"Range": f"bytes={at}-{end - 1}"})
        response = local.conn.getresponse()
        assert response.status == 206, response.status
        got = at
        while got < end:
            n = response.readinto(view[got:end])
            assert n, "short body"
            got += n
        response.read()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(get, range(0, size, piece)))
    return time.perf_counter() - start


def load(lib, path):
    """The state dict in ``path`` as ``lib`` loads it: tensors the caller owns."""
    if path.startswith("s3://"):
        return load_s3(lib, path)
    if lib == "hurray":
        import hurray.torch

        return hurray.torch.load_file(path)
    if lib == "hurray-verify":
        import hurray.torch

        return hurray.torch.load_file(path, verify=True)
    if lib == "safetensors":
        import safetensors.torch

        return safetensors.torch.load_file(path)
    if lib == "runai":
        from runai_model_streamer import SafetensorsStreamer

        out = {}
        with SafetensorsStreamer() as streamer:
            streamer.stream_file(path)
            for name, t in streamer.get_tensors():
                out[name] = t.clone()
        return out
    if lib == "tensorizer":
        from tensorizer import TensorDeserializer

        with TensorDeserializer(path, device="cpu") as d:
            return dict(d.items())
    if lib in ("torch", "torch-mmap"):
        import torch

        return torch.load(path, weights_only=True, mmap=lib == "torch-mmap")
    if lib == "fastsafetensors":
        from fastsafetensors import fastsafe_open

        with fastsafe_open(filenames=[path], nogds=True, device="cpu") as f:
            return {name: f.get_tensor(name).clone() for name in f.keys()}
    raise ValueError(lib)


def save(lib, tensors, path, fsync):
    if lib == "hurray":
        import hurray.torch

        hurray.torch.save_file(tensors, path, durable=fsync)
        return
    if lib == "safetensors":
        import safetensors.torch

        safetensors.torch.save_file(tensors, path)
    elif lib == "tensorizer":
        from tensorizer import TensorSerializer

        s = TensorSerializer(path)
        s.write_state_dict(tensors)
        s.close()
    elif lib == "torch":
        import torch

        torch.save(tensors, path)
    else:
        raise ValueError(lib)
    if fsync:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---- physical limits ------------------------------------------------------------------------


def limit_cold(path):
    """The device's read rate: the whole file read once around the page cache
    (``O_DIRECT``) by 8 threads, each taking the next 4 MiB of the file (in
    order) into an aligned buffer of its own, reused (32 MiB in flight).
    Buffered reads pay for filling the page cache as well: one stream
    through one buffer reached a quarter of this here, and 8 threads of
    buffered ``pread`` half."""
    import threading

    chunk, threads = 4 << 20, 8
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    size = os.fstat(fd).st_size
    next_at = iter(range(0, size, chunk))
    lock = threading.Lock()

    def read():
        buf = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT needs
        while True:
            with lock:
                at = next(next_at, None)
            if at is None:
                return
            os.preadv(fd, [buf], at)

    start = time.perf_counter()
    workers = [threading.Thread(target=read) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    os.close(fd)
    return seconds


def limit_willneed(path):
    """``limit_warm`` with ``madvise(MADV_WILLNEED)`` over the whole map
    before the touch: the cold-now limit, the kernel's readahead of every
    page asked for at once."""
    return limit_warm(path, willneed=True)


def limit_warm(path, willneed=False):
    """Maps the file and touches its tensors as every sample touches what it
    loaded (``touch``), each tensor a view of the map at its offset: the
    least a loader that maps can do. The offsets are read from the file
    before the clock starts."""
    import warnings

    import torch

    import hurray

    f = hurray.open(path, read_only=True)
    base = f.address_range()[0]
    spans = []
    for name in f.keys():
        t = torch.from_dlpack(f[name])
        if t.numel():
            spans.append((name, t.data_ptr() - base, t.numel(), t.dtype, t.shape))
        del t
    del f
    start = time.perf_counter()
    with open(path, "rb") as fh:
        m = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    if willneed:
        m.madvise(mmap.MADV_WILLNEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # frombuffer of a read-only map: nothing writes it
        tensors = {name: torch.frombuffer(m, dtype=dtype, count=n, offset=at).reshape(shape)
                   for name, at, n, dtype, shape in spans}
    touch(tensors)
    seconds = time.perf_counter() - start
    del tensors
    m.close()
    return seconds


def limit_save(tensors, path, fsync):
    """Without fsync, the same bytes written to a new file in 1 MiB pieces
    (faster here than one write per tensor, which keeps more dirty pages in
    flight). With fsync, the device's rate: the bytes copied into one
    aligned 2 MiB buffer and written around the page cache (``O_DIRECT``),
    then an fsync."""
    start = time.perf_counter()
    if fsync:
        window = mmap.mmap(-1, 2 << 20)  # page-aligned, as O_DIRECT needs
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        at = filled = 0
        for t in tensors.values():
            view = memoryview(raw(t).numpy())
            while view:
                n = min(len(view), len(window) - filled)
                window[filled:filled + n] = view[:n]
                filled, view = filled + n, view[n:]
                if filled == len(window):
                    at += os.pwrite(fd, window, at)
                    filled = 0
        if filled:
            padded = -(-filled // PAGE) * PAGE
            window[filled:padded] = bytes(padded - filled)
            os.pwrite(fd, memoryview(window)[:padded], at)
            os.ftruncate(fd, at + filled)
        os.fsync(fd)
        os.close(fd)
        return time.perf_counter() - start
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for t in tensors.values():
        view = memoryview(raw(t).numpy())
        while view:
            view = view[os.write(fd, view[: 1 << 20]) :]
    os.close(fd)
    return time.perf_counter() - start


# ---- the child: one timed operation in a fresh process --------------------------------------


def child(args):
    op, lib, path = args.child
    if op == "load":
        if lib == "limit":
            limit = {"cold": limit_cold, "cold-now": limit_willneed, "s3": limit_s3}.get(args.case, limit_warm)
            seconds = limit(path)
            print(json.dumps({"seconds": seconds}))
            return
        imports(lib)  # the clock times the load, not Python's imports
        start = time.perf_counter()
        tensors = load(lib, path)
        touch(tensors)
        seconds = time.perf_counter() - start
        out = {"seconds": seconds}
        if args.check:
            out["digests"] = digests(tensors)
        print(json.dumps(out))
        return
    tensors = state_dict(args.kind, args.size)
    if op == "save-loop":
        print(json.dumps(save_loop(args, tensors, lib.split(","), path)))
        return
    fsync = op == "save+fsync"
    if lib == "limit":
        seconds = limit_save(tensors, path, fsync)
    else:
        save(lib, {"warm-up": tensors[next(iter(tensors))][:1].clone()}, path + ".warm-up", False)
        os.unlink(path + ".warm-up")
        start = time.perf_counter()
        save(lib, tensors, path, fsync)
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds}))


def balanced_orders(n):
    """Orders of ``range(n)``, one per round, in which every item comes
    right after every other one equally often: a Williams design (rows of a
    Latin square built from 0, 1, n-1, 2, n-2, ...; for an odd ``n`` each
    row also reversed, 2n rows)."""
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(x + shift) % n for x in first] for shift in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def save_loop(args, tensors, libs, root):
    """``--rounds`` saves of ``tensors`` by every lib of ``libs`` in this one
    process (``limit``: a plain ``write`` in 1 MiB pieces), each round in the
    next of ``balanced_orders``, each file deleted after its save: seconds
    per lib, in the order taken."""
    for lib in libs:
        if lib != "limit":
            warm = os.path.join(root, f"warm-up-{lib}")
            save(lib, {"warm-up": tensors[next(iter(tensors))][:1].clone()}, warm, False)
            os.unlink(warm)
    times = {lib: [] for lib in libs}
    orders = balanced_orders(len(libs))
    for r in range(args.rounds):
        for lib in (libs[i] for i in orders[r % len(orders)]):
            target = os.path.join(root, f"loop-{lib}")
            start = time.perf_counter()
            if lib == "limit":
                limit_save(tensors, target, False)
            else:
                save(lib, tensors, target, False)
            times[lib].append(time.perf_counter() - start)
            os.unlink(target)
    return times


def flush(path):
    """Writes ``path``'s dirty pages back, leaving them in the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop(path):
    """Drops ``path``'s pages from the page cache (its dirty pages written first)."""
    flush(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def settle(args):
    """Waits until the memory the last sample freed has gone back to the
    hypervisor. On a virtual machine that reports free memory to its host
    (virtio-balloon free page reporting: 2 MiB blocks, about 2 s after they
    are freed), a process that runs right after another reuses that
    process's freshly freed, still-backed memory, and each new page-cache
    folio made of reported memory faults in from the host: so a save or a
    cold load timed right after another library's sample measured the order
    of the samples (a 1 GiB save 0.4 s or 2.5 s by turns), not the library.
    Every such sample starts from the same state instead."""
    if args.settle > 0:
        time.sleep(args.settle)


def quiet_before_save(args):
    """What every save starts after: the dirty pages of earlier samples
    written back, then the quiet of ``settle``."""
    os.sync()
    settle(args)


def rewrite(args, lib, path, kind, size, cached=False):
    """``path``, the file ``lib`` reads, written anew by the save of the
    library that wrote it (``FILE_OF``; in a process of its own, as every
    save sample), then flushed and dropped from the page cache.

    With ``cached`` (warm-own), the save starts after the quiet a save
    sample starts after (the deleted file's memory handed back first, as
    for every save timed) and the file stays in the page cache, flushed so
    that no writeback runs under the load: the folios a load maps are the
    ones that save made, and a save's choice of write sizes depends on the
    machine's free memory at the moment (``writer/block_sizes.rs``), so
    one file written at the start of a run made the whole row one draw."""
    if os.path.exists(path):
        os.unlink(path)
    if cached:
        quiet_before_save(args)
    run_child(args, "save", FILE_OF[lib], path, "save", kind, size)
    (flush if cached else drop)(path)


def preparation(args, case, kind, size):
    """What runs before each load sample of ``case`` (given the library and
    its file), off the clock; and whether the case's files are written anew
    for every sample (else they are the ones written at the start)."""
    fresh = {
        "warm-own": lambda lib, p: rewrite(args, lib, p, kind, size, cached=True),
        "cold": lambda lib, p: (rewrite(args, lib, p, kind, size), settle(args)),
        "cold-now": lambda lib, p: rewrite(args, lib, p, kind, size),
    }
    if case in fresh:
        return fresh[case], True
    if case == "warm-read":
        return (lambda lib, p: (drop(p), read_through(p))), False
    return (lambda lib, p: None), False


def read_through(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


# ---- the parent -----------------------------------------------------------------------------


def run_child(args, op, lib, path, case, kind, size, check=False, env=None):
    cmd = [sys.executable, __file__, "--child", op, lib, path, "--case", case,
           "--kind", kind, "--size", str(size), "--rounds", str(args.rounds)]
    if check:
        cmd.append("--check")
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if done.returncode != 0:
        if lib.startswith(("hurray", "limit")):
            raise SystemExit(f"{op} {lib} {case} failed:\n{done.stderr[-3000:]}")
        # A peer that cannot do the case is a row of the table, not the end of the run.
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"{op} {lib} {case} failed: {last}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args, rows, case, libs, paths, kind, size, expected, prepare, env=None):
    """Interleaved fresh-process samples of loading with every lib in ``libs``,
    each sample in the next of ``balanced_orders``: a load right after
    another one (cold-now has no quiet) reuses the memory the one before it
    freed, so every library comes after every other one equally often.
    ``prepare(lib, path)`` runs before each sample, off the clock."""
    times = {lib: [] for lib in libs}
    orders = balanced_orders(len(libs))
    for sample in range(args.samples):
        for lib in (libs[i] for i in orders[sample % len(orders)]):
            path = paths[lib]
            print(f"{case} sample {sample + 1}/{args.samples}: {lib}", file=sys.stderr, flush=True)
            prepare(lib, path)
            check = sample == 0 and lib != "limit"
            out = run_child(args, "load", lib, path, case, kind, size, check, env)
            if out is None:
                times[lib].append(float("nan"))
                continue
            if check and out["digests"] != expected:
                bad = [n for n in expected if out["digests"].get(n) != expected[n]][:3]
                raise SystemExit(f"{lib} {case}: wrong bytes in {bad}")
            times[lib].append(out["seconds"])
    rows.append((case, samples(times)))


def samples(times):
    """``times`` as given, each library's samples said on stderr too, to
    judge the spread."""
    for lib, t in times.items():
        print(f"  samples {lib}: {' '.join(f'{x:.4f}' for x in t)}", file=sys.stderr)
    return times


def median(t):
    """The median of samples; NaN for a library that failed one (said on stderr)."""
    return statistics.median(t) if t and all(x == x for x in t) else float("nan")


def ratio_interval(ours, theirs, draws=2000, seed=0):
    """The 90% percentile-bootstrap interval of ``median(theirs) /
    median(ours)``: each side's samples drawn again with replacement,
    independently (a sample of one library is not paired with any sample of
    another). Seeded, so one run's report reads the same every time. Where
    the interval holds 1.0 the row is a tie at these samples, whatever side
    the medians fall on: the load rows' samples are often bimodal here (how
    much of the freed memory the host has taken back when a load starts),
    and the median of ten of them moves with a few draws."""
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(theirs, k=len(theirs))) / statistics.median(rng.choices(ours, k=len(ours)))
        for _ in range(draws)
    )
    return ratios[int(0.05 * draws)], ratios[int(0.95 * draws) - 1]


def report(rows, nbytes):
    lines = []
    for case, times in rows:
        medians = {lib: median(t) for lib, t in times.items()}
        peers = {k: v for k, v in medians.items() if not k.startswith(("hurray", "limit")) and v == v}
        best = min(peers, key=peers.get) if peers else None
        lines.append(f"\n{case}  ({nbytes / 2**20:.0f} MiB; median seconds; speed relative to Hurray)")
        for lib, s in sorted(medians.items(), key=lambda kv: (kv[1] != kv[1], kv[1])):
            if s != s:
                lines.append(f"  {lib:16} failed")
                continue
            speed = s / medians["hurray"]  # Hurray's speed over lib's
            lines.append(f"  {lib:16} {s:9.4f} s  {nbytes / s / 1e9:6.2f} GB/s  Hurray/{lib} = {speed:5.2f}x")
        if best:
            low, high = ratio_interval(times["hurray"], times[best])
            lines.append(f"  => Hurray / best peer ({best}) = {peers[best] / medians['hurray']:.2f}x "
                         f"(90% interval {low:.2f}-{high:.2f}); "
                         f"Hurray / limit = {medians.get('limit', float('nan')) / medians['hurray']:.2f}")
    return "\n".join(lines)


# Every library hands out torch tensors; torch is imported before the clock
# starts for all of them, as in a program that already uses torch.
MODULES = {
    "hurray": ["torch", "hurray.torch"],
    "hurray-safe-open": ["torch", "hurray"],
    "hurray-verify": ["torch", "hurray.torch"],
    "safetensors": ["torch", "safetensors.torch"],
    "runai": ["torch", "runai_model_streamer"],
    "tensorizer": ["torch", "tensorizer"],
    "torch": ["torch"],
    "torch-mmap": ["torch"],
    "fastsafetensors": ["torch", "fastsafetensors"],
}


def imports(lib):
    for module in MODULES[lib]:
        __import__(module)


class s3_server:
    """The tests' S3 server (release build) serving ``files`` in bucket ``bench``."""

    def __init__(self, root, files):
        self.root, self.files = os.path.join(root, "s3"), files

    def __enter__(self):
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "hurray-s3-test-server"],
                       cwd=repo, check=True)
        os.makedirs(os.path.join(self.root, "bench"))
        server = os.path.join(repo, "target", "release", "hurray-s3-test-server")
        self.proc = subprocess.Popen([server, self.root], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("endpoint="), line
        endpoint = line.split("=", 1)[1]
        # Uploaded, not linked into the directory: the server then keeps each
        # object's ETag, where for a file it did not write it hashes the whole
        # object on every GET (which made a 1 GiB load take minutes).
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_KEY,
                              aws_secret_access_key=S3_SECRET, region_name="us-east-1")
        urls = {}
        for lib, path in self.files.items():
            name = os.path.basename(path)
            with open(path, "rb") as body:
                client.put_object(Bucket="bench", Key=name, Body=body)
            urls[lib] = f"s3://bench/{name}"
        # The uploads' dirty pages written back now, not under the samples.
        os.sync()
        return endpoint, urls

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


def available(lib):
    try:
        imports(lib)
        return True
    except ImportError as e:
        print(f"skipping {lib}: {e}", file=sys.stderr)
        return False


def parent(args):
    import torch

    libs = [lib for lib in LOADERS if lib in args.libs and available(lib)]
    # Every file a loader reads (written by its own library), and the savers timed.
    writers = [lib for lib in SAVERS if lib in {FILE_OF[x] for x in libs} | {"hurray"}]
    savers = [lib for lib in SAVERS if lib in libs]
    root = tempfile.mkdtemp(prefix="hurray-peers-", dir=args.dir)
    rows = []
    try:
        llama_cases = [c for c in args.cases if c != "small"]
        for kind, size, cases in (("llama", args.size_mib, llama_cases), ("small", args.small, ["small"])):
            if not set(cases) & set(args.cases):
                continue
            tensors = state_dict(kind, size)
            nbytes = sum(t.nbytes for t in tensors.values())
            expected = digests(tensors)
            del tensors
            files = {}
            for saver in writers:
                files[saver] = os.path.join(root, f"{kind}{EXTENSION[saver]}")
                run_child(args, "save", saver, files[saver], "save", kind, size)
            paths = {lib: files[FILE_OF[lib]] for lib in libs}
            print(f"{kind}: {len(expected)} tensors, {nbytes / 2**20:.0f} MiB; "
                  f"torch {torch.__version__}", file=sys.stderr)
            # The limits read Hurray's file, in the page-cache state of the case.
            limit_paths = dict(paths, limit=files[FILE_OF["limit"]])
            for case in ("small", "warm-own", "warm-read", "cold", "cold-now"):
                if case not in cases:
                    continue
                prepare, anew = preparation(args, case, kind, size)
                loaders = libs if case == "small" else libs + ["limit"]
                # A case whose files are written anew: each library's own,
                # the limit's by Hurray.
                case_paths = ({lib: os.path.join(root, f"{case}-{lib}{EXTENSION[FILE_OF[lib]]}")
                               for lib in loaders} if anew else limit_paths)
                measure(args, rows, case, loaders, case_paths, kind, size, expected, prepare)
                if anew:
                    for p in case_paths.values():
                        if os.path.exists(p):
                            os.unlink(p)
            if "s3" in cases:
                s3_libs = [lib for lib in ("hurray", "runai", "tensorizer") if lib in libs]
                if "hurray" in libs:
                    s3_libs.insert(1, "hurray-safe-open")
                with s3_server(root, files) as (endpoint, urls):
                    urls = {lib: urls[FILE_OF[lib]] for lib in s3_libs}
                    measure(args, rows, "s3", s3_libs + ["limit"], dict(urls, limit=urls["hurray"]), kind,
                            size, expected, lambda lib, p: settle(args), s3_env(endpoint))
            for op in ("save", "save+fsync"):
                if op not in cases:
                    continue
                times = {lib: [] for lib in savers + ["limit"]}
                for sample in range(args.samples):
                    libs_ = savers + ["limit"]
                    for lib in libs_[sample % len(libs_):] + libs_[:sample % len(libs_)]:
                        target = os.path.join(root, f"out-{lib}")
                        quiet_before_save(args)
                        out = run_child(args, op, lib, target, op, kind, size)
                        times[lib].append(out["seconds"] if out else float("nan"))
                        for leftover in (target, target + ".warm-up"):
                            if os.path.exists(leftover):
                                os.unlink(leftover)
                rows.append((op, samples(times)))
            if "save-loop" in cases:
                quiet_before_save(args)
                loop = run_child(args, "save-loop", ",".join(savers + ["limit"]), root, "save-loop", kind, size)
                for lib, t in loop.items():
                    print(f"  save-loop {lib}: first {t[0]:.4f} s, last {t[-1]:.4f} s", file=sys.stderr)
                rows.append(("save-loop", samples(loop)))
            print(report(rows, nbytes))
            sys.stdout.flush()
            rows.clear()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=1024)
    p.add_argument("--small", type=int, default=10_000, help="tensors in the 'small' case")
    p.add_argument("--samples", type=int, default=7)
    p.add_argument("--dir", default=None, help="where the files go (default: the temp dir)")
    p.add_argument("--libs", default=",".join(LOADERS), type=lambda s: s.split(","))
    p.add_argument("--settle", type=float, default=4.0,
                   help="seconds to wait before each save and cold sample (see settle())")
    p.add_argument("--cases", default="warm-own,warm-read,cold,cold-now,s3,save,save+fsync,save-loop,small",
                   type=lambda s: s.split(","))
    p.add_argument("--rounds", type=int, default=10, help="saves per library in the save-loop case")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--kind", help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
