//! Small hostile inputs at `from-mlir` and `to-mlir`: refused with exit
//! status 1 and a message naming the tensor or the limit, nothing left
//! behind, under a 1 GiB address-space limit (docs/spec/resource-limits.md);
//! and what `to-mlir` writes always parses again.
#![cfg(feature = "mlir")]

mod common;

use common::{assert_ok, assert_refused, from_mlir_bounded, hurray_bounded};
use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const CSR: &str =
    "#CSR = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>\n";

#[test]
fn splats_are_not_expanded_without_an_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.hurray");
    for (name, text, reach) in [
        (
            "csr.mlir",
            format!("{CSR}%c = arith.constant dense<1.0> : tensor<8192x8192xf32, #CSR>\n"),
            "1342177280 bytes",
        ),
        (
            "csr_huge.mlir",
            format!("{CSR}%c = arith.constant dense<1.0> : tensor<100000x100000xf32, #CSR>\n"),
            "200000000000 bytes",
        ),
        (
            // Found by the mlir_lower fuzz target: no entries, but one row
            // pointer per row of a 2^40-row shape.
            "csr_rows.mlir",
            format!("{CSR}%c = arith.constant dense<0.0> : tensor<1099511627776x2xf32, #CSR>\n"),
            "8796093022216 bytes",
        ),
        (
            "splat.mlir",
            "%c = arith.constant dense<1.0> : tensor<100000x100000xf32>\n".to_owned(),
            "40000000000 bytes",
        ),
    ] {
        assert!(text.len() < 300, "{name}: {} bytes", text.len());
        let input = write(dir.path(), name, &text);
        let out = from_mlir_bounded(&input, &output, &[]);
        assert_refused(
            &out,
            &["\"module/0\"", reach, "--allow-expansion"],
            dir.path(),
            &[&input],
        );
        std::fs::remove_file(&input).unwrap();
    }
}

#[test]
fn sparse_splats_are_built_without_dense_expansion() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.hurray");
    // A zero splat has no entries: only the row pointers are written.
    let input = write(
        dir.path(),
        "zero.mlir",
        &format!("{CSR}%c = arith.constant dense<0.0> : tensor<100000x100000xf32, #CSR>\n"),
    );
    let out = from_mlir_bounded(&input, &output, &[]);
    assert_ok(&out);
    let file = File::open(&output).unwrap();
    let t = file.tensor("module/0").unwrap();
    assert_eq!(t.byte_length(), 100_001 * 8);
    // Opted in, a non-zero splat becomes every entry, in O(nnz) memory: 4M
    // entries (48 MiB of indices and values) within the 1 GiB limit, where
    // the dense form alone was 16 MiB more.
    let input = write(
        dir.path(),
        "ones.mlir",
        &format!("{CSR}%c = arith.constant dense<2.5> : tensor<2048x2048xf32, #CSR>\n"),
    );
    let out = from_mlir_bounded(&input, &output, &["--allow-expansion"]);
    assert_ok(&out);
    let file = File::open(&output).unwrap();
    let csr = file.tensor("module/0").unwrap().csr().unwrap();
    let values = csr.values_as::<f32>().unwrap();
    assert_eq!(values.len(), 2048 * 2048);
    assert!(values.iter().all(|v| *v == 2.5));
}

#[test]
fn arguments_after_a_double_dash_are_paths() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "-x.mlir",
        "%c = arith.constant dense<1.0> : tensor<2xf32>\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hurray"))
        .current_dir(dir.path())
        .args(["from-mlir", "-o", "out.hurray", "--", "-x.mlir"])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(dir.path().join("out.hurray").exists());
}

fn file_with(dir: &Path, name: &str, build: impl FnOnce(&mut Writer<std::fs::File>)) -> PathBuf {
    let path = dir.join(name);
    let mut w = Writer::new(std::fs::File::create(&path).unwrap()).unwrap();
    build(&mut w);
    w.finish().unwrap();
    path
}

#[test]
fn to_mlir_refuses_what_mlir_cannot_spell() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            file_with(dir.path(), "case0.hurray", |w| {
                w.set_metadata("", "v");
                w.add_tensor(
                    &TensorDescriptor::new("w", ElementType::Float32, shape(&[0])),
                    &[&[]],
                )
                .unwrap();
            }),
            "metadata of the file: an empty key",
        ),
        (
            file_with(dir.path(), "case1.hurray", |w| {
                w.add_tensor(
                    &TensorDescriptor::new("w", ElementType::Float32, shape(&[0]))
                        .with_metadata("", "v"),
                    &[&[]],
                )
                .unwrap();
            }),
            "metadata of tensor \"w\": an empty key",
        ),
        (
            file_with(dir.path(), "case2.hurray", |w| {
                w.add_tensor(
                    &TensorDescriptor::new("huge", ElementType::Float32, shape(&[1 << 63, 0])),
                    &[&[]],
                )
                .unwrap();
            }),
            "dimension 9223372036854775808",
        ),
    ];
    let inputs: Vec<&Path> = cases.iter().map(|(p, _)| p.as_path()).collect();
    for (i, (input, needle)) in cases.iter().enumerate() {
        for style in ["hurray", "ml-program"] {
            let output = dir.path().join("out.mlir");
            let out = hurray_bounded(&[
                "to-mlir".as_ref(),
                input.as_os_str(),
                "--style".as_ref(),
                style.as_ref(),
                "-o".as_ref(),
                output.as_os_str(),
            ]);
            if style == "ml-program" && i < 2 {
                // ml_program globals carry no metadata: nothing to spell.
                if out.status.success() {
                    std::fs::remove_file(&output).unwrap();
                }
                continue;
            }
            assert_refused(&out, &[needle], dir.path(), &inputs);
        }
    }
}

#[test]
fn names_mlir_must_quote_survive_the_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "quote\"d",
        "back\\slash",
        "new\nline",
        "\u{1b}[31mred",
        "sp ace",
    ];
    let input = file_with(dir.path(), "in.hurray", |w| {
        for (i, name) in names.iter().enumerate() {
            w.add_tensor(
                &TensorDescriptor::new(*name, ElementType::Int32, shape(&[1])),
                &[hurray::as_bytes(&[i as i32])],
            )
            .unwrap();
        }
    });
    let mlir = dir.path().join("out.mlir");
    let back = dir.path().join("back.hurray");
    for args in [
        vec![
            "to-mlir".as_ref(),
            input.as_os_str(),
            "-o".as_ref(),
            mlir.as_os_str(),
        ],
        vec![
            "from-mlir".as_ref(),
            mlir.as_os_str(),
            "-o".as_ref(),
            back.as_os_str(),
        ],
    ] {
        let out = hurray_bounded(&args);
        assert_ok(&out);
    }
    let file = File::open(&back).unwrap();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            file.tensor(name).unwrap().as_slice::<i32>().unwrap(),
            &[i as i32]
        );
    }
    // And MLIR's own tool parses it, where it is installed (CI installs it).
    if let Ok(out) = std::process::Command::new("mlir-opt-22")
        .arg("--allow-unregistered-dialect")
        .arg(&mlir)
        .output()
    {
        assert_ok(&out);
    }
}
