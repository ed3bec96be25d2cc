//! `open_sharded_remote(url)`: a sharded checkpoint in an object store, its
//! index's header read with two range GETs, then its members as needed.

use crate::sharded::PyShardedFile;
use crate::url::with_options;
use pyo3::prelude::*;
use std::collections::BTreeMap;

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
