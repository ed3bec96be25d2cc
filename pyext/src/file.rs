//! `open`, `open_bytes` and `File`: a verified file as a mapping of names to tensors.

use crate::error::err;
use crate::tensor::PyTensor;
use hurray::{File, reader::MapMode};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::sync::Arc;

/// A verified Hurray file: a read-only mapping of tensor names to tensors.
#[pyclass(name = "File", module = "hurray", frozen)]
pub(crate) struct PyFile {
    file: Arc<File>,
    source: String,
}

/// Opens and verifies the file at `path`: a local path (memory-mapped;
/// O(header), not O(data)) or the URL of an object (`s3://`, `gs://`,
/// `az://`, `http(s)://`, `file://`), whose header is read with two range
/// GETs and each tensor when first used. By default a local file's map is
/// private and copy-on-write: tensors imported from it are writable, and a
/// write copies only the page it touches, in this process; the file never
/// changes. `read_only=True` maps it shared and read-only: exports carry
/// DLPack's read-only flag. A URL's tensors are read into memory of this
/// process: writable by default (a write changes that memory alone, never
/// the object), flagged read-only with `read_only=True`. `storage_options` (`object_store` keys
/// such as `aws_endpoint`) apply to a URL, over the environment's; given
/// with a local path they are refused.
#[pyfunction]
#[pyo3(signature = (path, *, read_only=None, storage_options=None))]
pub(crate) fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    read_only: Option<bool>,
    storage_options: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<PyFile> {
    let mode = map_mode(read_only.unwrap_or(false));
    if let Some(url) = path.to_str().filter(|p| hurray_object_store::is_url(p)) {
        let file = crate::url::open_url(py, url, storage_options, mode)?;
        return Ok(PyFile::from_file(file, url.to_owned()));
    }
    crate::url::check_options_apply(&path.to_string_lossy(), &storage_options)?;
    // SAFETY: `open_with`'s contract: this extension reads tensor bytes only
    // when Python asks (`tobytes`, `unpacked`, a save that reads a Hurray
    // tensor), never behind a consumer's back, and each read copies the bytes
    // out at once; exports are the consumers' to write. Python code that
    // writes through an import from one thread while another asks for the
    // same bytes races as it would on any shared NumPy buffer.
    let file = py
        .detach(|| unsafe { File::open_with(&path, mode) })
        .map_err(err)?;
    Ok(PyFile {
        file: Arc::new(file),
        source: path.display().to_string(),
    })
}

/// Verifies a Hurray file held in `data` (copied once into aligned memory).
/// Its tensors are read-only: export with `copy=True` for writable ones.
#[pyfunction]
pub(crate) fn open_bytes(data: &Bound<'_, PyBytes>) -> PyResult<PyFile> {
    let file = File::from_bytes(data.as_bytes()).map_err(err)?;
    Ok(PyFile {
        file: Arc::new(file),
        source: "<bytes>".to_owned(),
    })
}

impl PyFile {
    /// A file already verified (in memory), called `source` in its `repr`.
    pub(crate) fn from_file(file: File, source: String) -> PyFile {
        PyFile {
            file: Arc::new(file),
            source,
        }
    }

    /// The file (shared).
    pub(crate) fn file(&self) -> Arc<File> {
        self.file.clone()
    }

    /// Where it was opened from: its path or URL.
    pub(crate) fn location(&self) -> &str {
        &self.source
    }

    fn tensor(&self, name: String) -> PyTensor {
        PyTensor::new(self.file.clone(), name)
    }

    /// Names of the tensors that are descriptor-only, or of those that are
    /// not, in file order.
    fn keys_where(&self, descriptor_only: bool) -> Vec<String> {
        self.file
            .tensors()
            .filter(|t| t.is_descriptor_only() == descriptor_only)
            .map(|t| t.name().to_owned())
            .collect()
    }
}

#[pymethods]
impl PyFile {
    fn __len__(&self) -> usize {
        self.file.len()
    }

    fn __getitem__(&self, name: &str) -> PyResult<PyTensor> {
        if self.file.get(name).is_none() {
            return Err(err(hurray::Error::NotFound {
                name: name.to_owned(),
            }));
        }
        Ok(self.tensor(name.to_owned()))
    }

    fn __contains__(&self, name: &str) -> bool {
        self.file.get(name).is_some()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let names = slf.keys();
        Ok(names.into_pyobject(py)?.try_iter()?.into_any().unbind())
    }

    /// Tensor names, in file order (sorted).
    fn keys(&self) -> Vec<String> {
        self.file.tensors().map(|t| t.name().to_owned()).collect()
    }

    /// Names of the tensors that hold data, in file order: what a
    /// framework can be handed (`safe_open(...).keys()`).
    fn data_keys(&self) -> Vec<String> {
        self.keys_where(false)
    }

    /// Names of the descriptor-only tensors (a type and shape, no data:
    /// an MLIR function's arguments and results), in file order.
    fn descriptor_only_keys(&self) -> Vec<String> {
        self.keys_where(true)
    }

    fn values(&self) -> Vec<PyTensor> {
        self.keys().into_iter().map(|n| self.tensor(n)).collect()
    }

    fn items(&self) -> Vec<(String, PyTensor)> {
        self.keys()
            .into_iter()
            .map(|n| (n.clone(), self.tensor(n)))
            .collect()
    }

    #[pyo3(signature = (name, default=None))]
    fn get(&self, py: Python<'_>, name: &str, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        if self.file.get(name).is_some() {
            return Ok(Py::new(py, self.tensor(name.to_owned()))?.into_any());
        }
        Ok(default.unwrap_or_else(|| py.None()))
    }

    /// File-wide metadata as a dict.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metadata_dict(py, self.file.metadata())
    }

    /// The (major, minor) format version.
    #[getter]
    fn version(&self) -> (u16, u16) {
        self.file.version()
    }

    /// Whether the file is the index of a sharded checkpoint (format 1.3):
    /// it holds no tensors of its own; open it with `open_sharded` (or
    /// `safe_open`, which does).
    #[getter]
    fn is_shard_index(&self) -> bool {
        self.file.is_shard_index()
    }

    /// Whether imported tensors may be written (a copy-on-write map, or a
    /// URL's tensors read into this process's memory).
    #[getter]
    fn writable(&self) -> bool {
        self.file.is_writable()
    }

    /// `(start, end)` addresses of the file's bytes in memory (the map);
    /// `ValueError` for a file read from a URL, which is not in memory whole.
    fn address_range(&self) -> PyResult<(usize, usize)> {
        let b = self.file.bytes().ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "{}: read tensor by tensor from its source, not mapped",
                self.source
            ))
        })?;
        Ok((b.as_ptr() as usize, b.as_ptr() as usize + b.len()))
    }

    /// The file's length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.file.file_len()
    }

    /// Reads the tensors named in `names` (all of them when `None`) in: for
    /// a URL, those not read yet now, in one batch (coalesced range GETs,
    /// several in flight), kept; for a mapped file, reads the pages not in
    /// memory yet in and maps them (several threads, in the file's order)
    /// and returns when they are in.
    #[pyo3(signature = (names=None))]
    fn read(&self, py: Python<'_>, names: Option<Vec<String>>) -> PyResult<()> {
        match names {
            None => py.detach(|| self.file.read_all()),
            Some(names) => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                py.detach(|| self.file.read(&names))
            }
        }
        .map_err(err)
    }

    /// Verifies every tensor's checksums (reads all the data; opening reads
    /// none): `True` when at least one tensor records checksums and every
    /// recorded one matches, `False` when the file records none. The first
    /// mismatch raises `ChecksumError` naming the tensor, the buffer and both
    /// values. The bytes checked are those this process sees: over a
    /// copy-on-write open, writes through imported tensors count.
    fn verify_checksums(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.file.verify_checksums()).map_err(err)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        // The map is released when the last File, Tensor and export is gone.
        false
    }

    fn __repr__(&self) -> String {
        let mode = if self.file.is_writable() {
            "copy-on-write"
        } else if self.file.bytes().is_none() {
            "read on demand"
        } else {
            "read-only"
        };
        format!(
            "<hurray.File {:?}: {} tensors, {mode}>",
            self.source,
            self.file.len()
        )
    }
}

/// Metadata entries as a Python dict (a file's, a remote file's, a
/// checkpoint's).
pub(crate) fn metadata_dict<'py, K, V>(
    py: Python<'py>,
    entries: impl IntoIterator<Item = (K, V)>,
) -> PyResult<Bound<'py, PyDict>>
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let d = PyDict::new(py);
    for (k, v) in entries {
        d.set_item(k.as_ref(), v.as_ref())?;
    }
    Ok(d)
}

/// How `open` and `open_sharded` map files: private and copy-on-write, so
/// that consumers may write to what they import, unless `read_only`.
pub(crate) fn map_mode(read_only: bool) -> MapMode {
    if read_only {
        MapMode::ReadOnly
    } else {
        MapMode::CopyOnWrite
    }
}
