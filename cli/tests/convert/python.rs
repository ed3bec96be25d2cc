//! Files written by the real Python packages (`safetensors`, NumPy): they
//! round-trip exactly, and the packages read back what `hurray convert` writes.

use crate::common::{convert, python, run_python};
use crate::fixtures::{read_hurray, read_safetensors, sorted};

/// Must show: safetensors -> hurray -> safetensors reproduces the tensors exactly
/// on a file written by the `safetensors` Python package.
#[test]
fn python_safetensors_file_round_trips_exactly() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    run_python(
        &py,
        dir.path(),
        r#"
import numpy as np
from safetensors.numpy import save_file
from safetensors import serialize_file
rng = np.random.default_rng(7)
t = {
    "model.embed.weight": rng.standard_normal((16, 8)).astype(np.float32),
    "model.layer.0.bias": rng.standard_normal(8).astype(np.float64),
    "half": rng.standard_normal((3, 5)).astype(np.float16),
    "mask": rng.integers(0, 2, (4, 3)).astype(bool),
    "ids": rng.integers(-2**63, 2**63 - 1, (2, 2), dtype=np.int64),
    "u16": rng.integers(0, 2**16, 7, dtype=np.uint16),
    "i8": rng.integers(-128, 128, (2, 3, 2), dtype=np.int8),
    "u8": np.arange(250, 256, dtype=np.uint8),
    "i32": np.array([-1, 2**31 - 1], dtype=np.int32),
    "u32": np.array([2**32 - 1], dtype=np.uint32),
    "u64": np.array([2**64 - 1, 0], dtype=np.uint64),
    "i16": np.array([[-32768, 32767]], dtype=np.int16),
    "c64": (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64),
    "empty": np.zeros((3, 0, 5), np.float32),
    "scalar": np.array(3.25, np.float32),
    "nan": np.array([np.nan, -np.inf, -0.0], np.float32),
}
save_file(t, "numpy.safetensors", metadata={"format": "np", "note": "written by safetensors.numpy"})
# dtypes NumPy has no type for go through the package's own serializer
# (TensorSpec since safetensors 0.8, plain dicts before).
import safetensors
keep = []
def spec(dtype, shape, data):
    buf = np.frombuffer(bytes(data), np.uint8).copy()
    keep.append(buf)
    if hasattr(safetensors, "TensorSpec"):
        return safetensors.TensorSpec(dtype=dtype, shape=shape, data_ptr=buf.ctypes.data, data_len=buf.nbytes)
    return {"dtype": dtype, "shape": shape, "data": bytes(data)}
serialize_file({
    "bf16": spec("bfloat16", [2, 2], [0x80, 0x3f, 0x00, 0x40, 0x49, 0xc0, 0x80, 0x7f]),
    "fp8": spec("float8_e4m3fn", [3], [0x38, 0xb8, 0x7e]),
    "fp8b": spec("float8_e5m2", [1], [0x3c]),
    # Format 1.2's types safetensors names: E8M0 (with its NaN), FNUZ, and
    # FP4 two a byte (the header says shape [6] for 3 bytes).
    "e8m0": spec("float8_e8m0fnu", [4], [0x00, 0x7f, 0xfe, 0xff]),
    "fnuz": spec("float8_e4m3fnuz", [2], [0x80, 0x7f]),
    "fnuz5": spec("float8_e5m2fnuz", [2], [0x80, 0x01]),
    "fp4": spec("float4_e2m1fn_x2", [3], [0x21, 0xf7, 0x98]),
}, "raw.safetensors", metadata={"format": "pt"})
"#,
    );
    for name in ["numpy", "raw"] {
        let original = dir.path().join(format!("{name}.safetensors"));
        let mid = dir.path().join(format!("{name}.hurray"));
        let back = dir.path().join(format!("{name}.back.safetensors"));
        convert(&original, &mid);
        convert(&mid, &back);
        let (a, meta_a) = read_safetensors(&original);
        let (b, meta_b) = read_safetensors(&back);
        assert_eq!(a, b, "{name}");
        assert_eq!(meta_a, meta_b, "{name}");
        assert!(a.len() >= 3);
        // The intermediate Hurray file holds the same tensors.
        assert_eq!(sorted(read_hurray(&mid)), a);
    }
    // And the Python package reads our output back as the same arrays.
    run_python(
        &py,
        dir.path(),
        r#"
import numpy as np
from safetensors.numpy import load_file
from safetensors import safe_open
a, b = load_file("numpy.safetensors"), load_file("numpy.back.safetensors")
assert a.keys() == b.keys()
for k in a:
    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
    assert a[k].tobytes() == b[k].tobytes(), k
with safe_open("numpy.back.safetensors", "np") as f:
    assert f.metadata() == {"format": "np", "note": "written by safetensors.numpy"}
assert b["empty"].shape == (3, 0, 5) and b["scalar"].shape == ()
"#,
    );
}

/// `.npy` / `.npz` written by NumPy (C and Fortran order, big-endian, bool,
/// empty, scalar, compressed) read correctly; and NumPy reads what we write.
#[test]
fn numpy_files_read_correctly() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    run_python(
        &py,
        dir.path(),
        r#"
import numpy as np
arrays = {
    "c": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    "f": np.asfortranarray(np.arange(24, dtype=np.int64).reshape(2, 3, 4)),
    "be": np.arange(6, dtype=">f8").reshape(3, 2),
    "bef": np.asfortranarray(np.arange(6, dtype=">u4").reshape(2, 3)),
    "cbe": np.array([1 + 2j, -3j], dtype=">c8"),
    "b": np.array([[True, False, True], [False, False, True]]),
    "e": np.zeros((3, 0, 5), np.float16),
    "s": np.array(-5, np.int16),
    "c128": np.array([0.5 - 1.5j], np.complex128),
}
for k, v in arrays.items():
    np.save(k + ".npy", v)
    # The expected logical values: row-major, little-endian.
    open(k + ".expected", "wb").write(np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes())
np.savez("plain.npz", **arrays)
np.savez_compressed("packed.npz", **arrays)
"#,
    );
    let names = ["c", "f", "be", "bef", "cbe", "b", "e", "s", "c128"];
    let expected = |k: &str| std::fs::read(dir.path().join(format!("{k}.expected"))).unwrap();
    for k in names {
        let out = dir.path().join(format!("{k}.hurray"));
        convert(&dir.path().join(format!("{k}.npy")), &out);
        let t = read_hurray(&out);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].0, k);
        assert_eq!(t[0].3, expected(k), "{k}");
    }
    for npz in ["plain", "packed"] {
        let out = dir.path().join(format!("{npz}.hurray"));
        convert(&dir.path().join(format!("{npz}.npz")), &out);
        let t = read_hurray(&out);
        assert_eq!(t.len(), names.len());
        for (name, _, _, bytes) in t {
            assert_eq!(bytes, expected(&name), "{npz}: {name}");
        }
        // Back out to .npz and .npy for NumPy to check.
        convert(&out, &dir.path().join(format!("{npz}.out.npz")));
    }
    convert(&dir.path().join("f.hurray"), &dir.path().join("f.out.npy"));
    run_python(
        &py,
        dir.path(),
        r#"
import numpy as np
for npz in ["plain", "packed"]:
    src, out = np.load(npz + ".npz"), np.load(npz + ".out.npz")
    assert sorted(src.files) == sorted(out.files)
    for k in src.files:
        a, b = src[k], out[k]
        assert a.shape == b.shape and a.dtype.newbyteorder("<") == b.dtype, (k, a.dtype, b.dtype)
        assert np.array_equal(a, b), k
f = np.load("f.out.npy")
assert f.flags.c_contiguous and np.array_equal(f, np.arange(24).reshape(2, 3, 4))
"#,
    );
}
