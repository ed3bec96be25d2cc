//! Lowering helpers the test modules share.

use hurray_mlir::{LowerOptions, Lowered, Mlir, lower_module, lower_module_to_writer};

/// Parses `text`, lowers it, and opens the result. Every lowering is done
/// twice: into a vector in place and through the writer's staging buffer,
/// which must give the same bytes.
pub(crate) fn lower_text(text: &str) -> (Lowered, hurray::File) {
    lower_text_with(text, LowerOptions::default())
}

pub(crate) fn lower_text_with(text: &str, options: LowerOptions) -> (Lowered, hurray::File) {
    let mlir = Mlir::new().expect("context");
    let module = mlir.parse_text(text).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let lowered = lower_module(&module, &mut out, options).unwrap_or_else(|e| panic!("{e}"));
    let mut streamed = Vec::new();
    lower_module_to_writer(&module, &mut streamed, options).unwrap_or_else(|e| panic!("{e}"));
    assert!(out == streamed, "in place and streamed lowerings differ");
    let file = hurray::File::from_bytes(&out).expect("the lowering writes a valid file");
    (lowered, file)
}

/// The error of lowering `text` (parse errors included).
pub(crate) fn lower_err(text: &str) -> hurray_mlir::Error {
    lower_err_with(text, LowerOptions::default())
}

pub(crate) fn lower_err_with(text: &str, options: LowerOptions) -> hurray_mlir::Error {
    let mlir = Mlir::new().expect("context");
    let module = match mlir.parse_text(text) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let mut out = Vec::new();
    match lower_module(&module, &mut out, options) {
        Ok(l) => panic!("expected an error, lowered {:#?}", l.tensors),
        Err(e) => e,
    }
}

pub(crate) fn values(file: &hurray::File, name: &str) -> Vec<u8> {
    file.tensor(name)
        .unwrap_or_else(|e| panic!("{e}"))
        .buffer(hurray::descriptor::BufferRole::Values)
        .unwrap_or_else(|| panic!("{name} has no values"))
        .to_vec()
}

/// Options without signature entries, for tests about constants only.
pub(crate) fn constants_only() -> LowerOptions {
    let mut o = LowerOptions::default();
    o.signatures = false;
    o
}

pub(crate) fn mlir_opt() -> Option<std::path::PathBuf> {
    for c in ["mlir-opt-22", "/usr/lib/llvm-22/bin/mlir-opt"] {
        let ok = std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(c.into());
        }
    }
    None
}

/// Runs `mlir-opt-22 ARGS` on `input` and returns its stdout (text or
/// bytecode); panics with its stderr when it fails.
pub(crate) fn mlir_opt_run(input: &str, args: &[&str]) -> Vec<u8> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let bin = mlir_opt().expect(
        "mlir-opt-22 not found: install Debian's mlir-22-tools (these tests lower its output)",
    );
    let mut child = Command::new(bin)
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "mlir-opt {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
