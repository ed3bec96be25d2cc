//! `cargo xtask cbindgen [--check]`: generates `ffi/include/hurray.h` from the
//! hurray-ffi crate with cbindgen (as a library, configured by
//! `ffi/cbindgen.toml`), or checks that the checked-in header is current
//! (`cargo xtask test` runs the check, and so does this module's unit test).

use anyhow::{Result, anyhow};
use hurray_codegen::output::{Mode, Output, check_or_write};
use std::path::Path;

/// The generated header, relative to the workspace root.
const HEADER: &str = "ffi/include/hurray.h";

/// The header output of `root`'s hurray-ffi crate.
fn output(root: &Path) -> Result<Output> {
    let fresh = generate_header(&root.join("ffi")).map_err(|e| anyhow!(e))?;
    Ok(Output::new("cbindgen").with(HEADER, fresh))
}

pub(crate) fn run(root: &Path, check: bool) -> Result<()> {
    let output = output(root)?;
    println!(
        "{}",
        check_or_write(root, &output, Mode::from_check_flag(check))?
    );
    Ok(())
}

/// The header for the hurray-ffi crate at `ffi_dir`, as cbindgen generates it
/// from the current sources.
fn generate_header(ffi_dir: &Path) -> Result<String, String> {
    let config = cbindgen::Config::from_file(ffi_dir.join("cbindgen.toml"))?;
    let bindings = cbindgen::Builder::new()
        .with_crate(ffi_dir)
        .with_config(config)
        .generate()
        .map_err(|e| format!("cbindgen failed on hurray-ffi: {e}"))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    let text = String::from_utf8(out).map_err(|e| e.to_string())?;
    guard_dlpack_types(&strip_flatbuffers_vtable_constants(&text))
}

/// The first and last lines of the DLPack type definitions in the header.
const DLPACK_FIRST: &str = "typedef struct DLPackVersion {";
const DLPACK_LAST: &str = "} DLManagedTensor;";

/// Wraps the DLPack structs (same layout as `dlpack.h` 1.x) in
/// `#ifndef DLPACK_DLPACK_H_`, so a program that includes the official
/// `dlpack.h` (>= 1.0) *before* `hurray.h` uses its definitions instead of
/// getting redefinition errors. Includes the doc comment above the first.
fn guard_dlpack_types(text: &str) -> Result<String, String> {
    let first = text
        .find(DLPACK_FIRST)
        .ok_or("DLPackVersion not found in the generated header")?;
    let start = text[..first]
        .trim_end_matches(|c| c != '\n')
        .rfind("\n\n")
        .map_or(first, |i| i + 2);
    let last = text[first..]
        .find(DLPACK_LAST)
        .ok_or("DLManagedTensor not found in the generated header")?
        + first
        + DLPACK_LAST.len();
    // cbindgen may place a type of ours among the DLPack ones (its order
    // follows the modules); such a block goes before the guard, or a program
    // that included dlpack.h first would lose it.
    let (dlpack, ours): (Vec<&str>, Vec<&str>) = text[start..last]
        .split("\n\n")
        .partition(|block| block.contains("typedef struct DL"));
    let mut out = String::with_capacity(text.len() + 200);
    out.push_str(&text[..start]);
    for block in ours {
        out.push_str(block);
        out.push_str("\n\n");
    }
    out.push_str(
        "// DLPack 1.1 types (same layout as dlpack.h). Include an official dlpack.h\n\
         // (>= 1.0) before this header to use its definitions instead.\n\
         #ifndef DLPACK_DLPACK_H_\n\n",
    );
    out.push_str(&dlpack.join("\n\n"));
    out.push_str("\n\n#endif // DLPACK_DLPACK_H_");
    out.push_str(&text[last..]);
    Ok(out)
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

#[cfg(test)]
mod tests {
    use hurray_codegen::output::{Mode, check_or_write};

    /// The checked-in header is what cbindgen generates from the current
    /// sources, and it is the C API alone.
    #[test]
    fn checked_in_header_is_current() {
        let root = crate::workspace_root();
        let fresh = super::generate_header(&root.join("ffi")).expect("cbindgen runs");
        // Nothing of the runtime's generated FlatBuffers code leaks into the C API.
        assert!(!fresh.contains("_VT_"));
        for needle in [
            "hurray_file_open",
            "hurray_tensor_to_dlpack",
            "DLManagedTensorVersioned",
            "HURRAY_DYNAMIC_DIM",
        ] {
            assert!(fresh.contains(needle), "{needle} missing from the header");
        }
        let output = super::output(&root).expect("the header generates");
        if let Err(e) = check_or_write(&root, &output, Mode::Check) {
            panic!("{e:#}");
        }
    }
}
