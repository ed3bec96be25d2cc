//! `hurray onnx-externalize IN.onnx OUT.onnx --weights W.hurray`: a model
//! whose initializers are external data inside a Hurray file
//! (`hurray-onnx` does the work; this prints what it did).

use anyhow::Result;
use std::path::Path;

/// Writes `weights` (unless `options.existing`) and `output`, then says how
/// many initializers point into the file and which stayed inline.
pub fn externalize(
    input: &Path,
    output: &Path,
    weights: &Path,
    options: hurray_onnx::Options,
) -> Result<()> {
    let model = hurray_onnx::Model::open(input)?;
    let report = hurray_onnx::externalize(&model, output, weights, &options)?;
    println!(
        "{}: {} initializer(s) in {}, {} inline",
        output.display(),
        report.external,
        weights.display(),
        report.inline.len()
    );
    for (name, why) in &report.inline {
        println!("  inline {name:?}: {why}");
    }
    Ok(())
}
