//! `hurray from-mlir` and `to-mlir` write through the runtime's atomic
//! writer: the outputs get the mode any new file gets under the caller's
//! umask, as `touch` gives, like every `convert` output.
#![cfg(all(feature = "mlir", unix))]

mod common;

use common::assert_ok;
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
