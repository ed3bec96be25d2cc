//! What `hurray convert` refuses, and that a refusal writes nothing: the
//! safetensors files the `safetensors` crate itself rejects, Hurray files that
//! `hurray validate` rejects, tensors a destination's readers would refuse,
//! `.npz` member names that are paths. And that every output, written
//! atomically, gets the mode any new file gets.

use hurray::{ElementType, TensorDescriptor, Writer, shape};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{convert, convert_err, python, run_python};

/// A safetensors file from a header and a data section.
fn safetensors_file(dir: &Path, name: &str, header: &str, data: &[u8]) -> (PathBuf, Vec<u8>) {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    let path = dir.join(name);
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

/// Must show: overlapping, aliased and gapped `data_offsets` and duplicate keys
/// are refused exactly when the safetensors crate refuses them.
#[test]
fn safetensors_files_are_accepted_exactly_as_safetensors_accepts_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.hurray");
    let t = |(name, begin, end): &(&str, u32, u32)| {
        format!(
            r#""{name}":{{"dtype":"U8","shape":[{}],"data_offsets":[{begin},{end}]}}"#,
            end - begin
        )
    };
    // Each over an 8-byte data section.
    type Tensors<'a> = &'a [(&'a str, u32, u32)];
    let cases: [(&str, Tensors<'_>, bool); 6] = [
        ("back_to_back", &[("a", 0, 4), ("b", 4, 8)], true),
        ("overlap", &[("a", 0, 6), ("b", 2, 8)], false),
        ("alias", &[("a", 0, 8), ("b", 0, 8)], false),
        ("gap", &[("a", 0, 4), ("b", 6, 8)], false),
        ("duplicate", &[("a", 0, 4), ("a", 4, 8)], false),
        ("short", &[("a", 0, 4)], false),
    ];
    for (name, tensors, accepted) in cases {
        let header = format!(
            "{{{}}}",
            tensors.iter().map(t).collect::<Vec<_>>().join(",")
        );
        let data: Vec<u8> = (0..8).collect();
        let (path, bytes) =
            safetensors_file(dir.path(), &format!("{name}.safetensors"), &header, &data);
        let crate_accepts = safetensors::SafeTensors::deserialize(&bytes).is_ok();
        assert_eq!(
            crate_accepts, accepted,
            "{name}: the crate's verdict changed"
        );
        if accepted {
            convert(&path, &out);
            std::fs::remove_file(&out).unwrap();
        } else {
            let msg = convert_err(&path, &out);
            assert!(
                msg.contains("not a valid safetensors file"),
                "{name}: {msg}"
            );
        }
    }
}

/// Must show: 2000 tensors aliasing one 1 MiB range (a 1.2 MB file) do not
/// become a 2 GiB output.
#[test]
fn aliased_tensors_do_not_multiply_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let mib = 1u32 << 20;
    let entries: Vec<String> = (0..2000)
        .map(|i| format!(r#""t{i}":{{"dtype":"U8","shape":[{mib}],"data_offsets":[0,{mib}]}}"#))
        .collect();
    let header = format!("{{{}}}", entries.join(","));
    let (path, bytes) = safetensors_file(
        dir.path(),
        "alias.safetensors",
        &header,
        &vec![7u8; mib as usize],
    );
    assert!(bytes.len() < 1_300_000);
    assert!(safetensors::SafeTensors::deserialize(&bytes).is_err());
    let msg = convert_err(&path, &dir.path().join("out.hurray"));
    assert!(msg.contains("invalid offset for tensor"), "{msg}");
}

/// Must show: a Hurray file `hurray validate` rejects for its sparse indices
/// is refused before any output is started, whatever the destination.
#[test]
fn hurray_files_with_bad_sparse_indices_are_refused_before_writing() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let dir = tempfile::tempdir().unwrap();
    for vector in [
        "invalid_coo_index_out_of_range",
        "invalid_csr_pointers_decreasing",
    ] {
        let input = vectors.join(format!("{vector}.hurray"));
        for ext in ["hurray", "safetensors", "npz"] {
            let msg = convert_err(&input, &dir.path().join(format!("out.{ext}")));
            // The message names the file and the tensor, as `hurray validate` does.
            assert!(
                msg.contains(&format!("{vector}.hurray: tensor \"")),
                "{vector} -> {ext}: {msg}"
            );
        }
    }
}

fn empty_tensor_file(dir: &Path, dtype: ElementType, dims: &[u64]) -> PathBuf {
    let path = dir.join("empty.hurray");
    let mut w = Writer::create(&path).unwrap();
    w.add_tensor(&TensorDescriptor::new("e", dtype, shape(dims)), &[&[]])
        .unwrap();
    w.finish().unwrap();
    path
}

/// Must show: the empty tensor `[2^40, 2^40, 0]` (ADR-0007: 0 elements, no
/// overflow) converts to Hurray, and a destination whose readers multiply the
/// whole shape out refuses it up front with the reason.
#[test]
fn empty_tensors_with_huge_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let huge = empty_tensor_file(dir.path(), ElementType::Float32, &[1 << 40, 1 << 40, 0]);
    let copy = dir.path().join("copy.hurray");
    convert(&huge, &copy);
    let file = hurray::File::open(&copy).unwrap();
    assert_eq!(
        file.tensor("e").unwrap().shape().to_wire(),
        [1 << 40, 1 << 40, 0]
    );

    let msg = convert_err(&huge, &dir.path().join("e.safetensors"));
    assert!(
        msg.contains("tensor \"e\": shape [1099511627776, 1099511627776, 0] overflows"),
        "{msg}"
    );
    let msg = convert_err(&huge, &dir.path().join("e.npy"));
    assert!(msg.contains("too big for NumPy"), "{msg}");

    // NumPy does hold [2^62, 0] of one-byte elements: it converts, and NumPy reads it.
    std::fs::remove_file(&huge).unwrap();
    let wide = empty_tensor_file(dir.path(), ElementType::UInt8, &[1 << 62, 0]);
    let npy = dir.path().join("wide.npy");
    convert(&wide, &npy);
    if let Some(py) = python() {
        run_python(
            &py,
            dir.path(),
            "import numpy as np; a = np.load('wide.npy'); assert a.shape == (2**62, 0) and a.dtype == np.uint8, a.shape",
        );
    }
}

/// Must show: a tensor name that is a path or holds a NUL is refused as an
/// `.npz` member name (it would unpack elsewhere), naming the tensor.
#[test]
fn npz_member_names_must_be_file_names() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in ["../escape", "a/b", "nul\0byte", ".."]
        .into_iter()
        .enumerate()
    {
        let input = dir.path().join(format!("{i}.hurray"));
        let mut w = Writer::create(&input).unwrap();
        w.add_tensor(
            &TensorDescriptor::new(name, ElementType::UInt8, shape(&[1])),
            &[&[1]],
        )
        .unwrap();
        w.finish().unwrap();
        let msg = convert_err(&input, &dir.path().join("out.npz"));
        assert!(
            msg.contains(&format!("tensor {name:?}: .npz member names")),
            "{msg}"
        );
        // The other formats hold such names.
        convert(&input, &dir.path().join(format!("{i}.safetensors")));
    }
}

/// Must show: every output format is created with the mode `touch` gives
/// under the same umask (not a temporary file's private 0600).
#[cfg(unix)]
#[test]
fn outputs_get_the_mode_of_any_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = empty_tensor_file(dir.path(), ElementType::Float32, &[3, 0, 5]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let run = |script: String| {
        let status = Command::new("sh")
            .current_dir(dir.path())
            .args(["-c", &format!("umask 027; {script}")])
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    };
    run("touch touched".into());
    let expected = mode(&dir.path().join("touched"));
    assert_eq!(expected, 0o640);
    let exe = env!("CARGO_BIN_EXE_hurray");
    for ext in ["hurray", "safetensors", "npy", "npz"] {
        run(format!("'{exe}' convert empty.hurray out.{ext}"));
        assert_eq!(
            mode(&dir.path().join(format!("out.{ext}"))),
            expected,
            ".{ext}"
        );
    }
    let _ = input;
}
