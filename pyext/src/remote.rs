//! Files in object stores (S3, GCS, Azure, HTTP): `open(url)` reads the
//! header with two range GETs and each tensor when first used;
//! `open_sharded_remote(url)` a checkpoint's index, then its members.

use crate::error::err;
use crate::sharded::PyShardedFile;
use hurray::File;
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
/// (`object_store` keys such as `aws_endpoint`), which win.
pub(crate) fn open_url(
    py: Python<'_>,
    url: &str,
    options: Option<BTreeMap<String, String>>,
) -> PyResult<File> {
    with_options(py, options, |o| {
        hurray_object_store::open_with_options(url, o)
    })
}

/// Opens the sharded checkpoint whose index is at `url`: its members are
/// the objects next to it, each opened when one of its tensors is first
/// needed and read tensor by tensor (range GETs). `options` as
/// `open`'s `storage_options`.
#[pyfunction]
#[pyo3(signature = (url, options=None))]
pub(crate) fn open_sharded_remote(
    py: Python<'_>,
    url: String,
    options: Option<BTreeMap<String, String>>,
) -> PyResult<PyShardedFile> {
    let file = with_options(py, options, |o| hurray_object_store::open_sharded(&url, o))?;
    Ok(PyShardedFile::from_file(file, url))
}

/// Runs `open` (without the GIL) with the `object_store` options Python gave.
fn with_options<T: Send>(
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
