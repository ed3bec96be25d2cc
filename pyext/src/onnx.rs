//! `hurray.onnx`: ONNX models whose initializers are external data inside a
//! Hurray file, through `hurray-onnx` (the reader and rewriter the CLI's
//! `onnx-externalize` and `convert model.onnx` use).

use crate::error::HurrayError;
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

fn err(e: hurray_onnx::Error) -> PyErr {
    match e {
        hurray_onnx::Error::Hurray(e) => crate::error::err(e),
        e @ hurray_onnx::Error::Io { .. } if matches!(&e, hurray_onnx::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound) => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        e @ (hurray_onnx::Error::Tensor { .. }
        | hurray_onnx::Error::Malformed { .. }
        | hurray_onnx::Error::Argument(_)
        | hurray_onnx::Error::ModelTooLarge { .. }) => PyValueError::new_err(e.to_string()),
        e => HurrayError::new_err(e.to_string()),
    }
}

/// The model: a path, or serialized bytes with the directory its external
/// data is relative to.
fn model(
    model_path: Option<PathBuf>,
    model_bytes: Option<Vec<u8>>,
    base_dir: PathBuf,
) -> PyResult<hurray_onnx::Model> {
    match (model_path, model_bytes) {
        (Some(p), None) => hurray_onnx::Model::open(&p).map_err(err),
        (None, Some(b)) => hurray_onnx::Model::from_bytes(b, base_dir).map_err(err),
        _ => Err(PyValueError::new_err(
            "give the model as a path or as bytes, not both",
        )),
    }
}

/// Writes `weights` from the model's initializers (or points at an existing
/// one) and `out_onnx`, the model with external data inside it; returns
/// `{"external": n, "inline": {name: why}}`.
#[pyfunction]
#[pyo3(signature = (model_path, model_bytes, base_dir, out_onnx, weights, align, threshold, existing))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn onnx_externalize<'py>(
    py: Python<'py>,
    model_path: Option<PathBuf>,
    model_bytes: Option<Vec<u8>>,
    base_dir: PathBuf,
    out_onnx: PathBuf,
    weights: PathBuf,
    align: u64,
    threshold: u64,
    existing: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let options = hurray_onnx::Options {
        align,
        threshold,
        existing,
    };
    let report = py.detach(|| {
        let m = model(model_path, model_bytes, base_dir)?;
        hurray_onnx::externalize(&m, &out_onnx, &weights, &options).map_err(err)
    })?;
    let out = PyDict::new(py);
    out.set_item("external", report.external)?;
    let inline = PyDict::new(py);
    for (name, why) in report.inline {
        inline.set_item(name, why)?;
    }
    out.set_item("inline", inline)?;
    Ok(out)
}

/// Writes every initializer of the model to a new Hurray file.
#[pyfunction]
#[pyo3(signature = (model_path, model_bytes, base_dir, weights, align))]
pub(crate) fn onnx_write_weights(
    py: Python<'_>,
    model_path: Option<PathBuf>,
    model_bytes: Option<Vec<u8>>,
    base_dir: PathBuf,
    weights: PathBuf,
    align: u64,
) -> PyResult<()> {
    py.detach(|| {
        let m = model(model_path, model_bytes, base_dir)?;
        hurray_onnx::write_weights(&m, &weights, align).map_err(err)
    })
}
