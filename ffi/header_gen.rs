//! Generates `include/hurray.h` with cbindgen (as a library, configured by
//! `cbindgen.toml`). Shared, through `#[path]`, by `cargo xtask cbindgen` and
//! the `header_is_fresh` test of hurray-ffi, so both produce the same bytes.

use std::path::Path;

/// The header for the hurray-ffi crate at `ffi_dir`, as cbindgen generates it
/// from the current sources.
pub(crate) fn generate_header(ffi_dir: &Path) -> Result<String, String> {
    let config = cbindgen::Config::from_file(ffi_dir.join("cbindgen.toml"))?;
    let bindings = cbindgen::Builder::new()
        .with_crate(ffi_dir)
        .with_config(config)
        .generate()
        .map_err(|e| format!("cbindgen failed on hurray-ffi: {e}"))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    let text = String::from_utf8(out).map_err(|e| e.to_string())?;
    Ok(strip_flatbuffers_vtable_constants(&text))
}

/// cbindgen also emits the associated `VT_*` constants of the FlatBuffers
/// tables generated inside the runtime (it parses the `hurray` crate for the
/// DLPack structs, and `[export] exclude` does not reach associated
/// constants). They are not part of the C API: drop each such `#define` and
/// the blank line after it.
fn strip_flatbuffers_vtable_constants(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skip_blank = false;
    for line in text.split_inclusive('\n') {
        let is_vt = line.starts_with("#define ")
            && line
                .split_whitespace()
                .nth(1)
                .is_some_and(|name| name.contains("_VT_"));
        if is_vt {
            skip_blank = true;
            continue;
        }
        if skip_blank && line.trim().is_empty() {
            skip_blank = false;
            continue;
        }
        skip_blank = false;
        out.push_str(line);
    }
    out
}
