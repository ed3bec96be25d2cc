//! `cargo xtask cbindgen [--check]`: generates `ffi/include/hurray.h` from the
//! hurray-ffi crate with cbindgen (see `ffi/header_gen.rs`), or checks that
//! the checked-in header is current.

use anyhow::{Result, anyhow};
use hurray_codegen::output::{Mode, Output, check_or_write};
use std::path::Path;

#[path = "../../ffi/header_gen.rs"]
mod header_gen;

/// The generated header, relative to the workspace root.
const HEADER: &str = "ffi/include/hurray.h";

pub(crate) fn run(root: &Path, check: bool) -> Result<()> {
    let fresh = header_gen::generate_header(&root.join("ffi")).map_err(|e| anyhow!(e))?;
    let output = Output::new("cbindgen").with(HEADER, fresh);
    println!(
        "{}",
        check_or_write(root, &output, Mode::from_check_flag(check))?
    );
    Ok(())
}
