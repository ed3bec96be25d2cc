"""Writes seed inputs for the `verifier` fuzz target into a directory (not
checked in: they are derived from files that are). Each compliance vector
and golden file gives two inputs: the whole file behind a mode byte 0, and
its header alone behind a mode byte 1 (the target then wraps it in a valid
prefix and footer). Run from the repository root:
    python3 fuzz/seeds/verifier_seeds.py /tmp/verifier-seeds
    cargo +nightly fuzz run verifier fuzz/corpus/verifier /tmp/verifier-seeds
"""
import struct
import sys
from pathlib import Path


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(Path("tests/vectors").glob("*.hurray")) + sorted(
        Path("tests/golden").glob("*/*.hurray")
    )
    for f in files:
        data = f.read_bytes()
        name = f"{f.parent.name}_{f.stem}"
        (out / f"file_{name}").write_bytes(b"\x00" + data)
        if len(data) >= 96:
            offset, length = struct.unpack("<QQ", data[-32:-16])
            (out / f"header_{name}").write_bytes(b"\x01" + data[offset : offset + length])
    print(f"{2 * len(files)} seeds in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
