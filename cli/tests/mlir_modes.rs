//! `hurray from-mlir` and `to-mlir` write through the runtime's atomic
//! writer: the outputs get the mode any new file gets under the caller's
//! umask, as `touch` gives, like every `convert` output. What `to-mlir`
//! writes, text or bytecode, in either style, `from-mlir` reads back.
#![cfg(all(feature = "mlir", unix))]

mod common;

use common::{assert_ok, hurray};
use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[test]
fn mlir_outputs_get_the_mode_of_any_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mlp.mlir");
    let exe = env!("CARGO_BIN_EXE_hurray");
    let script = format!(
        "umask 027 && touch touched && '{exe}' from-mlir '{}' -o mlp.hurray && \
         '{exe}' to-mlir mlp.hurray -o mlp.mlir && '{exe}' to-mlir mlp.hurray --bytecode -o mlp.mlirbc",
        example.display()
    );
    let out = Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_ok(&out);
    let mode = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("touched"), 0o640);
    for name in ["mlp.hurray", "mlp.mlir", "mlp.mlirbc"] {
        assert_eq!(mode(name), 0o640, "{name}");
    }
}

/// Bytecode of every size back through `from-mlir`: a small file (which
/// MLIR itself would read into memory aligned to 16 bytes only, and then
/// refuse: "failed to align section") as well as a large one, each tensor's
/// bytes as they were.
#[test]
fn to_mlir_bytecode_reads_back_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    for n in [1usize, 17, 1000, 5000] {
        let input = dir.path().join(format!("in-{n}.hurray"));
        let mut w = Writer::create(&input).unwrap();
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
        let wide = [1.5f64, -2.25, 1e300];
        w.add_tensor(
            &TensorDescriptor::new("w", ElementType::Float32, shape(&[n as u64])),
            &[hurray::as_bytes(&values)],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new("b", ElementType::Float64, shape(&[3])),
            &[hurray::as_bytes(&wide)],
        )
        .unwrap();
        w.finish().unwrap();
        for style in ["hurray", "ml-program"] {
            for bytecode in [true, false] {
                let mlir = dir.path().join(format!("{n}-{style}-{bytecode}.mlir"));
                let back = dir.path().join(format!("{n}-{style}-{bytecode}.hurray"));
                let mut to: Vec<&std::ffi::OsStr> = vec![
                    "to-mlir".as_ref(),
                    input.as_os_str(),
                    "--style".as_ref(),
                    style.as_ref(),
                    "-o".as_ref(),
                    mlir.as_os_str(),
                ];
                if bytecode {
                    to.push("--bytecode".as_ref());
                }
                let to: Vec<&Path> = to.into_iter().map(Path::new).collect();
                assert_ok(&hurray(&to));
                let from = [Path::new("from-mlir"), &mlir, Path::new("-o"), &back];
                let out = hurray(&from);
                assert!(
                    out.status.success(),
                    "{n} f32, {style}, bytecode {bytecode}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let file = File::open(&back).unwrap();
                assert_eq!(file.tensor("w").unwrap().as_slice::<f32>().unwrap(), values);
                assert_eq!(file.tensor("b").unwrap().as_slice::<f64>().unwrap(), wide);
            }
        }
    }
}
