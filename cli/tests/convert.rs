//! `hurray convert`: round trips between .hurray, .safetensors, .npy and .npz,
//! the errors, and files written by the real `safetensors` and NumPy Python
//! packages (the venv at `.tools/py`, set up by `cargo xtask setup`).

use hurray::{
    Complex128, ElementType, File, Layout, Quantization, QuantizationScheme, TensorDescriptor,
    Writer, pack_codes, shape,
};
use std::path::{Path, PathBuf};

mod common;
use common::{convert, convert_err, hurray, python, run_python};

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// A Hurray file with one tensor of every type safetensors and NumPy share, plus
/// bool (packed), an empty tensor, a scalar and a strided (transposed) tensor.
fn sample(dir: &Path) -> PathBuf {
    let path = dir.join("sample.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.set_metadata("format", "pt");
    let f32s: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    w.add_tensor(
        &TensorDescriptor::new("a.f32", ElementType::Float32, shape(&[3, 4])),
        &[&le(&f32s, f32::to_le_bytes)],
    )
    .unwrap();
    let f64s = [1.5f64, -0.0, f64::MAX, f64::MIN_POSITIVE];
    w.add_tensor(
        &TensorDescriptor::new("b.f64", ElementType::Float64, shape(&[4])),
        &[&le(&f64s, f64::to_le_bytes)],
    )
    .unwrap();
    let bools = [
        true, false, true, true, false, false, true, false, true, true, true,
    ];
    w.add_tensor(
        &TensorDescriptor::new("c.bool", ElementType::Bool, shape(&[11])),
        &[&pack_codes(bools.iter().map(|&b| u8::from(b)), 1)],
    )
    .unwrap();
    let i8s = [-128i8, -1, 0, 1, 127, 5];
    w.add_tensor(
        &TensorDescriptor::new("d.i8", ElementType::Int8, shape(&[2, 3])),
        &[&le(&i8s, i8::to_le_bytes)],
    )
    .unwrap();
    let u64s = [u64::MAX, 0, 1 << 40];
    w.add_tensor(
        &TensorDescriptor::new("e.u64", ElementType::UInt64, shape(&[3, 1])),
        &[&le(&u64s, u64::to_le_bytes)],
    )
    .unwrap();
    let f16s = [0x3c00u16, 0xc000, 0x7bff];
    w.add_tensor(
        &TensorDescriptor::new("f.f16", ElementType::Float16, shape(&[3])),
        &[&le(&f16s, u16::to_le_bytes)],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("g.empty", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("h.scalar", ElementType::Int32, shape(&[])),
        &[&(-7i32).to_le_bytes()],
    )
    .unwrap();
    // Logical [[0, 1, 2], [3, 4, 5]] stored column-major: strides (1, 2).
    let stored = [0i16, 3, 1, 4, 2, 5];
    w.add_tensor(
        &TensorDescriptor::new("i.strided", ElementType::Int16, shape(&[2, 3]))
            .with_layout(Layout::Strided(vec![1, 2])),
        &[&le(&stored, i16::to_le_bytes)],
    )
    .unwrap();
    let u32s = [7u32, 8];
    w.add_tensor(
        &TensorDescriptor::new("j.u32", ElementType::UInt32, shape(&[1, 2, 1]))
            .with_metadata("unit", "m"),
        &[&le(&u32s, u32::to_le_bytes)],
    )
    .unwrap();
    w.finish().unwrap();
    path
}

/// Name, dtype, shape and row-major values (bools as bytes) of every tensor in `path`.
type Tensors = Vec<(String, ElementType, Vec<u64>, Vec<u8>)>;

fn read_hurray(path: &Path) -> Tensors {
    let file = File::open(path).unwrap();
    file.tensors()
        .map(|t| {
            let dims = t.shape().to_wire();
            let bytes = if t.element_type() == ElementType::Bool {
                t.packed().unwrap().iter().map(|v| v as u8).collect()
            } else if let Layout::Strided(s) = t.layout() {
                // Gather by hand (the test's own, independent of the converter).
                assert_eq!(dims.len(), 2);
                let size = (t.element_type().bits() / 8) as usize;
                let data = t.data().unwrap();
                let mut v = Vec::new();
                for i in 0..dims[0] as i64 {
                    for j in 0..dims[1] as i64 {
                        let at = (i * s[0] + j * s[1]) as usize * size;
                        v.extend_from_slice(&data[at..at + size]);
                    }
                }
                v
            } else {
                t.data().unwrap().to_vec()
            };
            (t.name().to_owned(), t.element_type(), dims, bytes)
        })
        .collect()
}

fn read_safetensors(path: &Path) -> (Tensors, Option<Vec<(String, String)>>) {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Tensors = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let dtype = format!("{:?}", view.dtype());
            let t = ElementType::from_safetensors_dtype(&dtype).unwrap();
            let dims = view.shape().iter().map(|&d| d as u64).collect();
            (name, t, dims, view.data().to_vec())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().as_ref().map(|m| {
        let mut v: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort();
        v
    });
    (out, meta)
}

fn sorted(mut t: Tensors) -> Tensors {
    t.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

#[test]
fn hurray_safetensors_hurray_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let src = sample(dir.path());
    let st = dir.path().join("x.safetensors");
    let back = dir.path().join("back.hurray");
    convert(&src, &st);
    let (tensors, meta) = read_safetensors(&st);
    assert_eq!(tensors, read_hurray(&src));
    assert_eq!(meta, Some(vec![("format".into(), "pt".into())]));
    convert(&st, &back);
    assert_eq!(read_hurray(&back), read_hurray(&src));
    let file = File::open(&back).unwrap();
    let meta: Vec<_> = file.reader().metadata().collect();
    assert_eq!(meta, [("format", "pt")]);
    // The strided tensor came back row-major.
    assert_eq!(file.tensor("i.strided").unwrap().layout(), Layout::Dense);
}

#[test]
fn hurray_npz_hurray_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let src = sample(dir.path());
    let npz = dir.path().join("x.npz");
    let back = dir.path().join("back.hurray");
    convert(&src, &npz);
    convert(&npz, &back);
    assert_eq!(read_hurray(&back), read_hurray(&src));
    // And on to safetensors and back once more.
    let st = dir.path().join("x.safetensors");
    let again = dir.path().join("again.hurray");
    convert(&npz, &st);
    convert(&st, &again);
    assert_eq!(read_hurray(&again), read_hurray(&src));
}

#[test]
fn single_tensor_npy_round_trip_takes_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    for (name, dtype, dims, bytes) in read_hurray(&sample(dir.path())) {
        let one = dir.path().join(format!("{name}.hurray"));
        let mut w = Writer::create(&one).unwrap();
        let stored = if dtype == ElementType::Bool {
            pack_codes(bytes.iter().copied(), 1)
        } else {
            bytes.clone()
        };
        w.add_tensor(
            &TensorDescriptor::new(&name, dtype, shape(&dims)),
            &[&stored],
        )
        .unwrap();
        w.finish().unwrap();
        let npy = dir.path().join(format!("{name}.npy"));
        let back = dir.path().join(format!("{name}.back.hurray"));
        convert(&one, &npy);
        convert(&npy, &back);
        // The tensor is named after the .npy file's stem (here, its old name).
        assert_eq!(read_hurray(&back), [(name, dtype, dims, bytes)]);
    }
}

#[test]
fn hurray_to_hurray_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("example.hurray");
    let out = hurray(&[Path::new("example"), &example]);
    assert!(out.status.success());
    let copy = dir.path().join("copy.hurray");
    convert(&example, &copy);
    let a = File::open(&example).unwrap();
    let b = File::open(&copy).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.tensors().zip(b.tensors()) {
        assert_eq!(x.descriptor(), y.descriptor());
        assert_eq!(x.buffers(), y.buffers());
        assert_eq!(
            x.buffer(hurray::BufferRole::Scales),
            y.buffer(hurray::BufferRole::Scales)
        );
        assert_eq!(
            x.buffer(hurray::BufferRole::ZeroPoints),
            y.buffer(hurray::BufferRole::ZeroPoints)
        );
    }
}

#[test]
fn what_a_format_cannot_hold_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("example.hurray");
    assert!(hurray(&[Path::new("example"), &example]).status.success());
    // Sub-byte, sparse, quantized and descriptor-only tensors: all named at once.
    let msg = convert_err(&example, &dir.path().join("x.safetensors"));
    assert!(
        msg.contains("element type i4 has no safetensors dtype counterpart"),
        "{msg}"
    );
    assert!(msg.contains("it is sparse (csr)"), "{msg}");
    assert!(msg.contains("it is descriptor-only"), "{msg}");
    let msg = convert_err(&example, &dir.path().join("x.npz"));
    assert!(
        msg.contains("\"packed.int4\": element type i4 has no NumPy dtype"),
        "{msg}"
    );

    // bf16 has a safetensors dtype but no NumPy one; c128 the other way round.
    let path = dir.path().join("bf16.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("w", ElementType::BFloat16, shape(&[2])),
        &[&[0, 0x3f, 0, 0x40]],
    )
    .unwrap();
    w.add_tensor(
        &TensorDescriptor::new("z", ElementType::Complex128, shape(&[1])),
        &[hurray::as_bytes(&[Complex128 { re: 1.0, im: -1.0 }])],
    )
    .unwrap();
    w.finish().unwrap();
    let msg = convert_err(&path, &dir.path().join("w.npz"));
    assert!(
        msg.contains("tensor \"w\": element type bf16 has no NumPy dtype"),
        "{msg}"
    );
    assert!(!msg.contains("\"z\""), "{msg}");
    let msg = convert_err(&path, &dir.path().join("w.safetensors"));
    assert!(
        msg.contains("tensor \"z\": element type c128 has no safetensors dtype"),
        "{msg}"
    );
    // A quantized tensor only Hurray can describe.
    let q = dir.path().join("q.hurray");
    let mut w = Writer::create(&q).unwrap();
    w.add_tensor(
        &TensorDescriptor::new("q", ElementType::Int8, shape(&[2])).with_quantization(
            Quantization {
                scheme: QuantizationScheme::PerTensor,
                expressed_type: ElementType::Float32,
                scale_type: ElementType::Float32,
                zero_point_type: None,
                storage_min: -127,
                storage_max: 127,
                tensor_scale: 1.0,
                offset_type: None,
            },
        ),
        &[&[1, 2], &0.5f32.to_le_bytes(), &[]],
    )
    .unwrap();
    w.finish().unwrap();
    let msg = convert_err(&q, &dir.path().join("q.safetensors"));
    assert!(
        msg.contains("tensor \"q\": it is quantized (i8 stored, f32 expressed)"),
        "{msg}"
    );
    // Two tensors don't fit in one .npy.
    let msg = convert_err(&path, &dir.path().join("w.npy"));
    assert!(msg.contains("a .npy file holds exactly one array"), "{msg}");
    // Unknown extensions.
    let msg = convert_err(&path, &dir.path().join("w.pt"));
    assert!(msg.contains("the extension must be"), "{msg}");
}

#[test]
fn broken_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let st = |name: &str, header: &str, data: &[u8]| {
        let path = dir.path().join(name);
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        std::fs::write(&path, b).unwrap();
        path
    };
    let out = dir.path().join("out.hurray");
    let cases = [
        (
            st(
                "dtype.safetensors",
                r#"{"s":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}}"#,
                &[1],
            ),
            "not a valid safetensors file",
        ),
        (
            st(
                "short.safetensors",
                r#"{"s":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
            "not a valid safetensors file: invalid shape, data type, or offset",
        ),
        (
            st(
                "past.safetensors",
                r#"{"s":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}}"#,
                &[0; 4],
            ),
            "not a valid safetensors file: incomplete metadata",
        ),
        (
            st("json.safetensors", "[1,2]", &[]),
            "invalid JSON in header",
        ),
        (
            {
                let path = dir.path().join("huge.safetensors");
                std::fs::write(&path, 200_000_000u64.to_le_bytes()).unwrap();
                path
            },
            "not a valid safetensors file: header too large",
        ),
    ];
    for (path, want) in cases {
        let msg = convert_err(&path, &out);
        assert!(msg.contains(want), "{}: {msg}", path.display());
    }
    let npy = |name: &str, header: &str, data: &[u8]| {
        let path = dir.path().join(name);
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(header.len() as u16).to_le_bytes());
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        std::fs::write(&path, b).unwrap();
        path
    };
    let cases = [
        (
            npy(
                "v.npy",
                "{'descr': '<V4', 'fortran_order': False, 'shape': (1,), }",
                &[0; 4],
            ),
            "NumPy dtype \"<V4\" has no Hurray element type",
        ),
        (
            npy(
                "s.npy",
                "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                &[0; 4],
            ),
            "structured .npy dtypes",
        ),
        (
            npy(
                "t.npy",
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                &[0; 4],
            ),
            "4 bytes of data, but shape [2] of <i4 needs 8",
        ),
        (
            npy("m.npy", "{'descr': '<i4', 'shape': (1,), }", &[0; 4]),
            "fortran_order",
        ),
        (
            npy("x.npy", "{'descr': '<i4'", &[]),
            "malformed .npy header",
        ),
    ];
    for (path, want) in cases {
        let msg = convert_err(&path, &out);
        assert!(msg.contains(want), "{}: {msg}", path.display());
    }
    // A bool that is neither 0 nor 1 can't be packed into a bit.
    let path = npy(
        "b.npy",
        "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
        &[1, 2],
    );
    let msg = convert_err(&path, &out);
    assert!(msg.contains("holds 2; only 0 and 1 are booleans"), "{msg}");
}

#[test]
fn big_endian_and_fortran_npy_are_normalised() {
    let dir = tempfile::tempdir().unwrap();
    // shape (2, 3) big-endian u16, column-major: logical [[1, 2, 3], [4, 5, 6]].
    let path = dir.path().join("m.npy");
    let header = "{'descr': '>u2', 'fortran_order': True, 'shape': (2, 3), }";
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    for v in [1u16, 4, 2, 5, 3, 6] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    std::fs::write(&path, b).unwrap();
    let out = dir.path().join("m.hurray");
    convert(&path, &out);
    let file = File::open(&out).unwrap();
    assert_eq!(
        file.tensor("m").unwrap().as_slice::<u16>().unwrap(),
        &[1, 2, 3, 4, 5, 6]
    );
}

// ---- Files written by the real Python packages -------------------------------------------

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

/// Over the progress-bar threshold, a conversion whose stderr is not a terminal prints nothing.
#[test]
fn large_inputs_convert_quietly_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.hurray");
    let len: u64 = (65 << 20) + 3;
    let mut w = Writer::create(&src).unwrap();
    let mut t = w
        .begin_tensor(&TensorDescriptor::new(
            "big",
            ElementType::UInt8,
            shape(&[len]),
        ))
        .unwrap();
    let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        t.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    t.finish().unwrap();
    w.finish().unwrap();
    let st = dir.path().join("big.safetensors");
    let out = hurray(&[Path::new("convert"), &src, &st]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&st).unwrap();
    let view = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let big = view.tensor("big").unwrap();
    assert_eq!(big.shape(), [len as usize]);
    assert!(big.data().chunks(1 << 20).all(|c| c == &chunk[..c.len()]));
}
