//! `hurray convert`: round trips between .hurray, .safetensors, .npy and .npz,
//! the errors, and files written by the real `safetensors` and NumPy Python
//! packages (the venv at `.tools/py`, set up by `cargo xtask setup`).

use hurray::elements::Complex128;
use hurray::pack::pack_codes;
use hurray::{
    ElementType, File, Layout, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme, shape,
};
use std::path::Path;

#[path = "../common/mod.rs"]
mod common;
use common::{convert, convert_err, hurray};

// The fixtures and the Python packages' tests sit in `convert/`: a test
// target's root finds `mod x;` next to itself, where Cargo would take `x.rs`
// for a test target of its own, hence the paths.
mod fixtures;
mod python;
use fixtures::{read_hurray, read_safetensors, sample};

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
            x.buffer(hurray::descriptor::BufferRole::Scales),
            y.buffer(hurray::descriptor::BufferRole::Scales)
        );
        assert_eq!(
            x.buffer(hurray::descriptor::BufferRole::ZeroPoints),
            y.buffer(hurray::descriptor::BufferRole::ZeroPoints)
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
                ..Default::default()
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
