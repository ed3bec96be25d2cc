//! `hurray convert model.onnx weights.hurray`: every initializer of an ONNX
//! model (inline `raw_data`, typed fields or external data) into a Hurray
//! file, through `hurray-onnx`, whose model reader `onnx-externalize` uses
//! too.

use anyhow::{Result, bail};
use std::path::Path;

/// Whether `path` names an ONNX model.
pub(crate) fn is_onnx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// Writes the initializers of the model at `input` to `output`.
pub(crate) fn to_hurray(input: &Path, output: &Path) -> Result<()> {
    if !output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("hurray"))
    {
        bail!(
            "{}: an ONNX model converts to .hurray only (then to any other format)",
            output.display()
        );
    }
    let model = hurray_onnx::Model::open(input)?;
    hurray_onnx::write_weights(&model, output, hurray::format::MIN_ALIGNMENT)?;
    Ok(())
}
