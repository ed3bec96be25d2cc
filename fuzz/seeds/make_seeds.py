"""Writes the seed inputs of the convert fuzz targets with the real producers
(NumPy, safetensors). Run from the repository root with the project venv:
    .tools/py/bin/python fuzz/seeds/make_seeds.py
"""
import io
from pathlib import Path

import numpy as np
from safetensors.numpy import save as st_save

HERE = Path(__file__).parent
ARRAYS = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "bool": np.array([True, False, True]),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
    "big_endian": np.arange(4, dtype=">f8"),
    "scalar": np.array(7, dtype=np.int64),
    "empty": np.zeros((3, 0, 5), dtype=np.float32),
    "c64": np.array([1 + 2j], dtype=np.complex64),
}


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def main():
    for kind in ("npy", "npz", "safetensors"):
        (HERE / kind).mkdir(exist_ok=True)
    for name, a in ARRAYS.items():
        (HERE / "npy" / f"{name}.npy").write_bytes(npy(a))
    np.savez(HERE / "npz" / "stored.npz", **ARRAYS)
    np.savez_compressed(HERE / "npz" / "compressed.npz", **ARRAYS)
    plain = {k: np.ascontiguousarray(v).astype(v.dtype.newbyteorder("=")) for k, v in ARRAYS.items() if k != "c64"}
    (HERE / "safetensors" / "tensors.safetensors").write_bytes(st_save(plain, metadata={"producer": "numpy"}))
    (HERE / "safetensors" / "empty.safetensors").write_bytes(st_save({}))


if __name__ == "__main__":
    main()
