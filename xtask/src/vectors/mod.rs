//! `cargo xtask vectors [--check]`: the compliance vectors in `tests/vectors/`.
//!
//! Every vector is a `NAME.hurray` file plus a `NAME.json` expectation. Valid
//! vectors are written by the `hurray` writer and described from what the
//! generator put in (never from what a reader reads back). Invalid vectors are
//! valid files corrupted in one targeted place: the place is found by walking
//! the FlatBuffer (the flatc-generated module of the runtime is crate-private),
//! and the JSON names the [`hurray::Error`] variant, the tensor and the field
//! the corruption must be reported as.
//!
//! The table of vectors in `docs/impl/compliance.md` (between the
//! `vectors:begin`/`vectors:end` markers) is generated here too, so it cannot
//! drift from the suite either. Everything is generated in memory and handed
//! to the shared check-or-write (`hurray_codegen::output`), which owns
//! `tests/vectors/` whole: `--check` fails listing each file that differs, is
//! missing or is not generated.
//!
//! The modules, in the order a vector is made:
//! - [`encode`]: element codes to stored bytes, and to the JSON spelling of
//!   their values; the sample codes of every element type;
//! - [`build`]: a tensor [`build::Spec`] (descriptor, buffers, expected
//!   values) and a valid file written from specs, described as JSON;
//! - [`valid`]: the valid vectors; [`composite`]: format 1.4's quantization ones;
//! - [`nav`]: just enough FlatBuffer navigation to find a byte, and [`nav::patch`];
//! - [`invalid`]: the invalid vectors, one patch of a valid one each;
//! - [`doc`]: the vector table spliced into the compliance document.

mod build;
mod composite;
mod doc;
mod encode;
mod invalid;
mod nav;
mod valid;

use anyhow::{Result, ensure};
use hurray_codegen::output::{Mode, Output, check_or_write};
use serde_json::{Value, json};
use std::path::Path;

/// Where the vectors live, relative to the workspace root.
const DIR: &str = "tests/vectors";

/// One compliance vector.
struct Vector {
    name: String,
    description: String,
    bytes: Vec<u8>,
    json: Value,
}

/// Entry point of `cargo xtask vectors [--check]`.
pub(crate) fn run(root: &Path, check: bool) -> Result<()> {
    let output = generate(root)?;
    println!(
        "{}",
        check_or_write(root, &output, Mode::from_check_flag(check))?
    );
    Ok(())
}

/// Every generated file: each vector's `.hurray` and `.json`, the index,
/// and the compliance document with its table regenerated.
fn generate(root: &Path) -> Result<Output> {
    let vectors = all_vectors()?;
    let mut output = Output::new("vectors").owning_dir(DIR);
    let mut index = Vec::new();
    for v in &vectors {
        let mut json = v.json.clone();
        json["file"] = json!(format!("{}.hurray", v.name));
        json["description"] = json!(v.description);
        output.add(format!("{DIR}/{}.hurray", v.name), v.bytes.clone());
        output.add(format!("{DIR}/{}.json", v.name), pretty(&json)?);
        index.push(json!({
            "name": v.name,
            "valid": json["valid"],
            "description": v.description,
        }));
    }
    output.add(
        format!("{DIR}/index.json"),
        pretty(&json!({ "vectors": index }))?,
    );
    let (path, text) = doc::with_table(root, &vectors)?;
    output.add(path, text);
    Ok(output)
}

/// Pretty JSON with a final newline, as every `.json` of the suite is stored.
fn pretty(v: &Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(v)?;
    text.push('\n');
    Ok(text)
}

/// The whole suite: valid vectors, valid files a writer of this version does
/// not produce, then the invalid ones derived from both. Names are unique.
fn all_vectors() -> Result<Vec<Vector>> {
    let mut v = valid::vectors()?;
    v.extend(composite::vectors()?);
    let patched = valid::patched_vectors(&v)?;
    v.extend(patched);
    let invalid = invalid::vectors(&v)?;
    v.extend(invalid);
    let mut seen = std::collections::BTreeSet::new();
    for x in &v {
        ensure!(
            seen.insert(x.name.clone()),
            "duplicate vector name {}",
            x.name
        );
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use hurray_codegen::output::{Mode, check_or_write};

    /// The checked-in vectors (and the compliance document's table) are
    /// exactly what the generator gives; the Rust reader's checks of their
    /// contents live with the runtime (`runtime/tests/vectors.rs`).
    #[test]
    fn checked_in_vectors_are_current() {
        let root = crate::workspace_root();
        let output = super::generate(&root).expect("the vectors generate");
        if let Err(e) = check_or_write(&root, &output, Mode::Check) {
            panic!("{e:#}");
        }
    }
}
