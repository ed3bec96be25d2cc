//! Files in object stores (S3, GCS, Azure, HTTP): what `open(url)` opens,
//! the header read with two range GETs and each tensor when first used.

use crate::error::err;
use hurray::{File, reader::MapMode};
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// Whether `location` is a URL of an object store (`s3://`, `gs://`,
/// `az://`, `http(s)://`, `file://`) rather than a local path.
#[pyfunction]
pub(crate) fn is_url(location: &str) -> bool {
    hurray_object_store::is_url(location)
}

/// Opens the Hurray file at `url` and verifies its header (two range GETs,
/// issued together), without the GIL. Credentials and endpoints come from
/// the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and from `options`
/// (`object_store` keys such as `aws_endpoint`), which win. With
/// [`MapMode::CopyOnWrite`] the tensors read export writable.
pub(crate) fn open_url(
    py: Python<'_>,
    url: &str,
    options: Option<BTreeMap<String, String>>,
    mode: MapMode,
) -> PyResult<File> {
    with_options(py, options, |o| {
        let source = hurray_object_store::source_for(url, o)?;
        // SAFETY: as for a local file's copy-on-write map (`file::open`):
        // this extension reads tensor bytes only when Python asks (`tobytes`,
        // `unpacked`, a save that reads a Hurray tensor), never behind a
        // consumer's back, and each read copies the bytes out at once;
        // exports are the consumers' to write.
        unsafe { File::open_source_with(source, mode) }
    })
}

/// Runs `open` (without the GIL) with the `object_store` options Python gave.
pub(crate) fn with_options<T: Send>(
    py: Python<'_>,
    options: Option<BTreeMap<String, String>>,
    open: impl FnOnce(&[(&str, &str)]) -> hurray::Result<T> + Send,
) -> PyResult<T> {
    let options = options.unwrap_or_default();
    let pairs: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    py.detach(|| open(&pairs)).map_err(err)
}

/// `storage_options` apply to URLs only: given with a local path, they are
/// refused rather than ignored.
pub(crate) fn check_options_apply(
    location: &str,
    options: &Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    if options.is_some() && !hurray_object_store::is_url(location) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{location}: storage_options apply to URLs, and this is a local path"
        )));
    }
    Ok(())
}
