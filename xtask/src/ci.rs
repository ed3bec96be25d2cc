//! `cargo xtask test`: the whole test suite, exactly as CI runs it.

use crate::setup;
use anyhow::Result;
use std::path::Path;
use std::process::Command;

fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root).args(args);
    c
}

pub(crate) fn test(root: &Path) -> Result<()> {
    setup::all(root)?;
    setup::run(&mut cargo(root, &["fmt", "--all", "--check"]))?;
    crate::tidy::run(root)?;
    crate::codegen(root, true)?;
    crate::cbindgen::run(root, true)?;
    let clippy = ["clippy", "--all-targets", "--", "-D", "warnings"];
    setup::run(&mut cargo(
        root,
        &[&clippy[..1], &["--workspace"], &clippy[1..]].concat(),
    ))?;
    // The CLI's MLIR subcommands and URLs sit behind features `--workspace` never turns on.
    let cli_mlir = ["-p", "hurray-cli", "--features", "mlir,remote"];
    setup::run(&mut cargo(
        root,
        &[&clippy[..1], &cli_mlir, &clippy[1..]].concat(),
    ))?;
    // The C API's URLs too.
    let ffi_remote = ["-p", "hurray-ffi", "--features", "remote"];
    setup::run(&mut cargo(
        root,
        &[&clippy[..1], &ffi_remote, &clippy[1..]].concat(),
    ))?;
    // Broken intra-doc links and malformed doc comments fail, as warnings do in clippy.
    setup::run(
        cargo(root, &["doc", "--no-deps", "--workspace"]).env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    setup::run(&mut cargo(root, &["test", "--workspace"]))?;
    setup::run(&mut cargo(root, &[&["test"][..], &cli_mlir].concat()))?;
    setup::run(&mut cargo(
        root,
        &[&["test"][..], &ffi_remote, &["--test", "remote"]].concat(),
    ))?;
    // A runtime feature no workspace member turns on.
    let ndarray = [
        "test",
        "-p",
        "hurray",
        "--features",
        "ndarray",
        "--test",
        "ndarray",
    ];
    setup::run(&mut cargo(root, &ndarray))?;
    miri(root)?;
    // The TypeScript reader: built (its viewer too), then its own tests; the
    // Python suite below compares it with the Rust reader.
    let js = root.join("js");
    setup::run(Command::new("npm").current_dir(&js).args(["run", "build"]))?;
    setup::run(Command::new("npm").current_dir(&js).args(["test"]))?;
    let tests = root.join("python/tests");
    if tests.exists() {
        let py = setup::python(root)?;
        setup::run(Command::new(py).current_dir(root).args([
            "-m",
            "pytest",
            "-q",
            "python/tests",
        ]))?;
    }
    eprintln!("xtask: all tests passed");
    Ok(())
}

/// `cargo xtask example`: the main job on the bundled example — lower the
/// MLIR model `examples/mlp.mlir` (weights, a quantized layer, an empty slice,
/// a dynamic batch) to a Hurray file, then inspect and validate it.
pub(crate) fn example(root: &Path) -> Result<()> {
    setup::apt(setup::MLIR_PACKAGES)?;
    let input = root.join("examples/mlp.mlir");
    let out = root.join("target/mlp.hurray");
    let (input, out) = (input.to_string_lossy(), out.to_string_lossy());
    let hurray = |args: &[&str]| {
        let mut all = vec![
            "run",
            "--quiet",
            "-p",
            "hurray-cli",
            "--features",
            "mlir",
            "--",
        ];
        all.extend_from_slice(args);
        cargo(root, &all)
    };
    setup::run(&mut hurray(&["from-mlir", &input, "-o", &out]))?;
    setup::run(&mut hurray(&["inspect", &out]))?;
    setup::run(&mut hurray(&["validate", &out]))
}

/// Miri over the unit tests of the crates with `unsafe` code (the runtime's
/// zero-copy reader and DLPack export, the C API). Miri needs a nightly
/// toolchain with the `miri` and `rust-src` components; where they cannot be
/// had, the step says so and is skipped rather than failing the run.
fn miri(root: &Path) -> Result<()> {
    let available = Command::new("rustup")
        .args([
            "component",
            "add",
            "miri",
            "rust-src",
            "--toolchain",
            "nightly",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        eprintln!("xtask: SKIPPED Miri: no nightly toolchain with the miri component here");
        return Ok(());
    }
    for package in ["hurray", "hurray-ffi"] {
        let mut c = Command::new("cargo");
        c.current_dir(root)
            .args([
                "+nightly",
                "miri",
                "test",
                "-p",
                package,
                "--no-default-features",
                "--lib",
            ])
            .env("MIRIFLAGS", "-Zmiri-disable-isolation");
        setup::run(&mut c)?;
    }
    Ok(())
}
