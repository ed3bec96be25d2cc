//! `cargo xtask cbindgen [--check]`: generates `ffi/include/hurray.h` from the
//! hurray-ffi crate with cbindgen (see `ffi/header_gen.rs`), or checks that
//! the checked-in header is current.

use anyhow::{Context, Result, anyhow, bail};
use std::path::Path;

#[path = "../../ffi/header_gen.rs"]
mod header_gen;

pub(crate) fn run(root: &Path, check: bool) -> Result<()> {
    let path = root.join("ffi/include/hurray.h");
    let fresh = header_gen::generate_header(&root.join("ffi")).map_err(|e| anyhow!(e))?;
    if check {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != fresh {
            bail!("{} is stale; run `cargo xtask cbindgen`", path.display());
        }
        println!("cbindgen: ffi/include/hurray.h is current");
    } else {
        std::fs::write(&path, fresh).with_context(|| format!("writing {}", path.display()))?;
        println!("cbindgen: wrote {}", path.display());
    }
    Ok(())
}
