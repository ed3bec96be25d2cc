//! `cargo xtask`: the project's developer tasks, in Rust.
//!
//! - `codegen [--check]`: regenerate everything derived from `schema/hurray.fbs`
//!   (or, with `--check`, fail listing each stale file), then check schema evolution.
//! - `vectors [--check]`: regenerate the compliance vectors in `tests/vectors/`
//!   (or, with `--check`, fail listing each drifted file).
//! - `cbindgen [--check]`: regenerate (or check) the C header `ffi/include/hurray.h`.
//!
//! The three generating tasks share one check-or-write
//! (`hurray_codegen::output`): generate in memory, then compare or write.
//! - `install-flatc`: install the pinned flatc into `.tools/flatc`.
//! - `setup`: install everything the tests need (flatc, Python venv, npm
//!   packages, LLVM/MLIR 22).
//! - `tidy`: fail on import cycles between a crate's files and on paths that
//!   docs and comments name but that do not exist.
//! - `test`: set up, then fmt, tidy, codegen --check, clippy, rustdoc, every
//!   Rust, TypeScript and Python test.
//! - `example`: the main job on the bundled example.
//! - `bench-peers [-- ARGS]`: load and save one state dict with Hurray and with
//!   every peer loader, each load in a fresh process (`python/bench/peers.py`).

mod bench;
mod cbindgen;
mod ci;
mod setup;
mod tidy;
mod vectors;

use anyhow::{Result, bail};
use hurray_codegen::output::{Mode, check_or_write};
use hurray_codegen::{Generator, evolution, flatc::Flatc};
use std::path::{Path, PathBuf};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let root = workspace_root();
    match args.as_slice() {
        ["codegen"] => codegen(&root, false),
        ["codegen", "--check"] => codegen(&root, true),
        ["install-flatc"] => Flatc::install(&root).map(|_| ()),
        ["setup"] => setup::all(&root),
        ["tidy"] => tidy::run(&root),
        ["test"] => ci::test(&root),
        ["example"] => ci::example(&root),
        ["vectors"] => vectors::run(&root, false),
        ["vectors", "--check"] => vectors::run(&root, true),
        ["cbindgen"] => cbindgen::run(&root, false),
        ["cbindgen", "--check"] => cbindgen::run(&root, true),
        ["bench-peers", rest @ ..] => {
            bench::peers(&root, rest.strip_prefix(&["--"]).unwrap_or(rest))
        }
        _ => bail!(
            "usage: cargo xtask codegen [--check] | vectors [--check] | cbindgen [--check] | install-flatc | setup | tidy | test | example | bench-peers [-- ARGS]"
        ),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_owned()
}

pub(crate) fn codegen(root: &Path, check: bool) -> Result<()> {
    let flatc = Flatc::locate(root)?;
    let generator = Generator::new(root, flatc.clone());
    let report = check_or_write(root, &generator.output()?, Mode::from_check_flag(check))?;
    println!("{report}");
    let released = evolution::released_schemas(&root.join("schema"))?;
    evolution::check_frozen(&released)?;
    evolution::check_conforms(&flatc, generator.schema(), &released)?;
    println!(
        "codegen: {} released version(s) frozen, and the schema conforms to each",
        released.len()
    );
    Ok(())
}
