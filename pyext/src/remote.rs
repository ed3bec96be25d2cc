//! `open_remote(url)` → `RemoteFile`: a Hurray file in an object store (S3,
//! GCS, Azure, HTTP), opened with two range GETs and read tensor by tensor.

use crate::error::err;
use crate::file::PyFile;
use crate::sharded::PyShardedFile;
use hurray::RangedFile;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;

/// A verified Hurray file at a URL: its header is read at open, its
/// tensors when fetched.
#[pyclass(name = "RemoteFile", module = "hurray", frozen)]
pub(crate) struct PyRemoteFile {
    file: RangedFile,
}

/// Whether `location` is a URL of an object store (`s3://`, `gs://`,
/// `az://`, `http(s)://`, `file://`) rather than a local path.
#[pyfunction]
pub(crate) fn is_url(location: &str) -> bool {
    hurray_object_store::is_url(location)
}

/// Opens the Hurray file at `url` (`s3://`, `gs://`, `az://`, `http(s)://`,
/// `file://`) and verifies its header: two range GETs, issued together.
/// Credentials and endpoints come from the environment (`AWS_*`,
/// `GOOGLE_*`, `AZURE_*`) and from `options` (`object_store` keys such as
/// `aws_endpoint`), which win.
#[pyfunction]
#[pyo3(signature = (url, options=None))]
pub(crate) fn open_remote(
    py: Python<'_>,
    url: String,
    options: Option<BTreeMap<String, String>>,
) -> PyResult<PyRemoteFile> {
    let file = with_options(py, options, |o| {
        hurray_object_store::open_with_options(&url, o)
    })?;
    Ok(PyRemoteFile { file })
}

/// Opens the sharded checkpoint whose index is at `url`: its members are
/// the objects next to it, each opened when one of its tensors is first
/// needed and read tensor by tensor (range GETs). `options` as in
/// `open_remote`.
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

#[pymethods]
impl PyRemoteFile {
    fn __len__(&self) -> usize {
        self.file.len()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.file.descriptor(name).is_ok()
    }

    /// Tensor names, in file order (sorted).
    fn keys(&self) -> Vec<String> {
        self.file.names().into_iter().map(str::to_owned).collect()
    }

    /// File-wide metadata as a dict.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::file::metadata_dict(py, self.file.metadata())
    }

    /// The (major, minor) format version.
    #[getter]
    fn version(&self) -> (u16, u16) {
        self.file.version()
    }

    /// Whether the file is the index of a sharded checkpoint.
    #[getter]
    fn is_shard_index(&self) -> bool {
        self.file.is_shard_index()
    }

    /// The file's length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.file.file_len()
    }

    /// Reads tensor `name` (one range GET when its buffers are neighbours)
    /// and returns it as a `File` of its own, in memory, after checking it
    /// against the checksums the file records.
    fn fetch(&self, py: Python<'_>, name: &str) -> PyResult<PyFile> {
        let file = py
            .detach(|| self.file.fetch(name).and_then(|f| f.into_file()))
            .map_err(err)?;
        Ok(PyFile::from_file(
            file,
            format!("{}#{name}", self.file.location()),
        ))
    }

    /// Reads every tensor named in `names` in one batch (coalesced range
    /// GETs, several in flight), each as a `File` of its own.
    fn fetch_many(&self, py: Python<'_>, names: Vec<String>) -> PyResult<Vec<PyFile>> {
        let location = self.file.location();
        let files = py
            .detach(|| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                self.file
                    .fetch_many(&names)?
                    .into_iter()
                    .map(|f| f.into_file())
                    .collect::<hurray::Result<Vec<_>>>()
            })
            .map_err(err)?;
        Ok(files
            .into_iter()
            .zip(&names)
            .map(|(f, name)| PyFile::from_file(f, format!("{location}#{name}")))
            .collect())
    }

    /// Reads every tensor, one at a time, and checks its checksums: as
    /// `File.verify_checksums`.
    fn verify_checksums(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| {
            let mut verified = false;
            for name in self.file.names() {
                verified |= self.file.fetch(name)?.tensor().verify_checksum()?;
            }
            Ok(verified)
        })
        .map_err(err)
    }

    fn __repr__(&self) -> String {
        format!(
            "<hurray.RemoteFile {:?}: {} tensors, {} bytes>",
            self.file.location(),
            self.file.len(),
            self.file.file_len()
        )
    }
}
