//! `open_sharded`, `ShardedFile` and `ShardedTensor`: a sharded checkpoint
//! (format 1.3) as a mapping of names to logical tensors.

use crate::error::err;
use crate::tensor::PyTensor;
use hurray::ShardedFile;
use hurray::sharded::ShardedTensor;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::Arc;

/// A sharded checkpoint opened through its index file: a read-only mapping
/// of logical tensor names to [`PyShardedTensor`]s.
#[pyclass(name = "ShardedFile", module = "hurray", frozen)]
pub(crate) struct PyShardedFile {
    file: Arc<ShardedFile>,
    source: String,
}

/// Opens the index file of a sharded checkpoint at `path` and checks the
/// index whole (member paths, pieces inside their tensors, the pieces tiling
/// each tensor). Members, found relative to the index's directory, are
/// mapped the first time one of their tensors is read: copy-on-write, as
/// `open` maps a file (consumers may write to a whole tensor they import;
/// the member never changes), or with `read_only=True` shared and
/// read-only. A Hurray file that is not an index raises `HurrayError`
/// ("not the index").
#[pyfunction]
#[pyo3(signature = (path, *, read_only=false))]
pub(crate) fn open_sharded(path: std::path::PathBuf, read_only: bool) -> PyResult<PyShardedFile> {
    let mode = crate::file::map_mode(read_only);
    // SAFETY: the contract `open` (file.rs) argues, for every member: this
    // extension reads member bytes only when Python asks (a slice, an
    // assembly, a checksum), copying them out at once; exports are the
    // consumers' to write.
    let file = unsafe { ShardedFile::open_with(&path, mode) }.map_err(err)?;
    Ok(PyShardedFile {
        file: Arc::new(file),
        source: path.display().to_string(),
    })
}

/// The sharded checkpoint of an index already open (`file`, opened from
/// `file.location()`): its members next to it, found as `open_sharded` and
/// `open_sharded_remote` find them, without opening the index again, so a
/// caller that checked the index (its signature) reads the checkpoint of
/// that very index.
#[pyfunction]
#[pyo3(signature = (file, *, read_only=false, storage_options=None))]
pub(crate) fn open_sharded_index(
    py: Python<'_>,
    file: PyRef<'_, crate::file::PyFile>,
    read_only: bool,
    storage_options: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<PyShardedFile> {
    let (index, location) = (file.file(), file.location().to_owned());
    let checkpoint = if hurray_object_store::is_url(&location) {
        crate::url::with_options(py, storage_options, |o| {
            ShardedFile::from_index_with_sources(
                &index,
                hurray_object_store::member_sources(&location, o),
            )
        })?
    } else {
        let mode = crate::file::map_mode(read_only);
        // SAFETY: as `open_sharded` argues.
        unsafe { ShardedFile::from_index_at_with(&index, std::path::Path::new(&location), mode) }
            .map_err(err)?
    };
    Ok(PyShardedFile::from_file(checkpoint, location))
}

impl PyShardedFile {
    /// A checkpoint already open, called `source` in its `repr`.
    pub(crate) fn from_file(file: ShardedFile, source: String) -> PyShardedFile {
        PyShardedFile {
            file: Arc::new(file),
            source,
        }
    }

    fn tensor(&self, name: &str) -> PyResult<PyShardedTensor> {
        self.file.tensor(name).map_err(err)?;
        Ok(PyShardedTensor {
            file: self.file.clone(),
            name: name.to_owned(),
        })
    }
}

#[pymethods]
impl PyShardedFile {
    fn __len__(&self) -> usize {
        self.file.tensors().len()
    }

    fn __getitem__(&self, name: &str) -> PyResult<PyShardedTensor> {
        self.tensor(name)
    }

    fn __contains__(&self, name: &str) -> bool {
        self.file.tensor(name).is_ok()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let names = slf.keys();
        Ok(names.into_pyobject(py)?.try_iter()?.into_any().unbind())
    }

    /// Logical tensor names, sorted.
    fn keys(&self) -> Vec<String> {
        self.file.tensors().iter().map(|t| t.name.clone()).collect()
    }

    /// The checkpoint's metadata (the index file's) as a dict.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::file::metadata_dict(py, self.file.metadata())
    }

    /// The member files as the index records them: `(path, size, crc32c)`,
    /// paths relative to the index's directory. Reads nothing.
    #[getter]
    fn members(&self) -> Vec<(String, u64, u64)> {
        self.file
            .members()
            .iter()
            .map(|m| (m.path.clone(), m.size, m.crc32c))
            .collect()
    }

    /// Reads every member whole and compares its length and CRC-32C with the
    /// index's; raises `MemberMismatchError` naming the first that differs.
    fn verify_members(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.file.verify_members()).map_err(err)
    }

    /// [`verify_members`](Self::verify_members), then every buffer checksum
    /// the members record: `True` when all match (every member has a
    /// CRC-32C, so there is always something to check). A member that
    /// differs from the index raises `MemberMismatchError`, a buffer that
    /// differs from its checksum `ChecksumError`.
    fn verify_checksums(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.file.checksum_report().into_result())
            .map_err(err)?;
        Ok(true)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        // The members are unmapped when the last handle is gone.
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "<hurray.ShardedFile {:?}: {} tensors in {} members>",
            self.source,
            self.file.tensors().len(),
            self.file.members().len()
        )
    }
}

/// A piece as Python sees it: `(member path, tensor name in the member,
/// offset, shape)`.
type Piece = (String, String, Vec<u64>, Vec<u64>);

/// One logical tensor of a sharded checkpoint: whole in one member, or in
/// pieces across several. Its values are read as slices (copies).
#[pyclass(name = "ShardedTensor", module = "hurray", frozen)]
pub(crate) struct PyShardedTensor {
    file: Arc<ShardedFile>,
    name: String,
}

impl PyShardedTensor {
    fn info(&self) -> PyResult<&ShardedTensor> {
        self.file.tensor(&self.name).map_err(err)
    }
}

#[pymethods]
impl PyShardedTensor {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The element type's short name (`f32`, `i4`, `bf16`, ...).
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.info()?.element_type.name())
    }

    /// The logical shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.info()?.shape)
    }

    /// Where the tensor is stored: `(member path, tensor name in the member,
    /// offset, shape)` per piece; one piece at offset 0 for a whole tensor.
    #[getter]
    fn pieces(&self) -> PyResult<Vec<Piece>> {
        let members = self.file.members();
        Ok(self
            .info()?
            .pieces
            .iter()
            .map(|p| {
                (
                    members[p.member].path.clone(),
                    p.tensor.clone(),
                    p.offset.clone(),
                    p.shape.clone(),
                )
            })
            .collect())
    }

    /// `self[ranges]` as `Tensor.read_slice` reads it, across the pieces:
    /// only the members whose pieces the slice meets are opened, and of
    /// each only the bytes it covers are read.
    fn read_slice(&self, py: Python<'_>, ranges: Vec<(u64, u64, u64)>) -> PyResult<PyTensor> {
        let ranges = crate::tensor::slice_ranges(ranges);
        let data = py
            .detach(|| self.file.slice(&self.name, &ranges))
            .map_err(err)?;
        PyTensor::of_slice(&self.name, data)
    }

    /// The tensor in place, without a copy, when one piece holds all of it
    /// (its member is mapped and checked against the index); `None` for a
    /// tensor stored in pieces.
    fn whole(&self, py: Python<'_>) -> PyResult<Option<PyTensor>> {
        let t = self.info()?;
        let Some(p) = t.whole_piece() else {
            return Ok(None);
        };
        // The mapped member, or (in a bucket) the tensor fetched alone.
        let holder = py.detach(|| self.file.piece_file(t, p)).map_err(err)?;
        Ok(Some(PyTensor::new(holder, p.tensor.clone())))
    }

    /// The whole tensor, copied out of its pieces, as a tensor in memory.
    fn assemble(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let data = py.detach(|| self.file.assemble(&self.name)).map_err(err)?;
        PyTensor::of_slice(&self.name, data)
    }

    /// Reads every piece and compares each buffer with the checksum its
    /// member records: `True` when all match, `False` when the members
    /// record none. Raises `ChecksumError` on a mismatch.
    fn verify_checksum(&self, py: Python<'_>) -> PyResult<bool> {
        let t = self.info()?;
        py.detach(|| -> hurray::Result<bool> {
            let mut verified = false;
            for p in &t.pieces {
                verified |= self.file.piece(t, p)?.verify_checksum()?;
            }
            Ok(verified)
        })
        .map_err(err)
    }

    fn __repr__(&self) -> PyResult<String> {
        let t = self.info()?;
        let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
        Ok(format!(
            "hurray.ShardedTensor({:?}, dtype={}, shape=({}{}), pieces={})",
            self.name,
            t.element_type.name(),
            dims.join(", "),
            if dims.len() == 1 { "," } else { "" },
            t.pieces.len()
        ))
    }
}
