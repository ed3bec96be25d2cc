//! `ShardedWriter`: writes a sharded checkpoint (format 1.3), member files
//! as tensors arrive and the index last, through the runtime's
//! [`hurray::ShardedWriter`].

use crate::error::{HurrayError, err};
use crate::url::{check_options_apply, with_options};
use crate::write::{codes_of, with_source};
use hurray::pack::pack_codes;
use hurray::sharded::{AdoptedChunk, FileId, WrittenMember};
use hurray::{ElementType, ShardedWriter, TensorDescriptor, atomic::Durability};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// A sharded checkpoint being written. Members are Hurray files written
/// atomically as tensors arrive, each rolling to the next past
/// `max_shard_size`, under names this save claims where no file is;
/// `finish()` swaps the index in, last, knowing which index it replaced,
/// then removes that index's members: until then the old checkpoint is
/// whole, and two saves at once never mix.
#[pyclass(name = "ShardedWriter", module = "hurray")]
pub(crate) struct PyShardedWriter {
    /// `None` once finished or aborted. In a mutex only because a Python
    /// object must be shareable between threads and a member being uploaded
    /// is not: every method takes `&mut self`, so it is never locked.
    writer: Mutex<Option<ShardedWriter>>,
}

/// The stored bytes of a source's data: packed by the runtime when the
/// source holds one element per byte.
fn stored(t: ElementType, data: &[u8], unpacked: bool) -> Cow<'_, [u8]> {
    if !unpacked || data.is_empty() {
        return Cow::Borrowed(data);
    }
    let mut codes = Vec::with_capacity(data.len());
    codes_of(t, data, &mut codes);
    Cow::Owned(pack_codes(codes, t.bits()))
}

impl PyShardedWriter {
    fn writer(&mut self) -> PyResult<&mut ShardedWriter> {
        self.slot()
            .as_mut()
            .ok_or_else(|| HurrayError::new_err("the sharded writer is finished"))
    }

    fn slot(&mut self) -> &mut Option<ShardedWriter> {
        // A panic while it was held cannot have left the writer half
        // changed in a way the runtime does not already guard against.
        self.writer
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `(tensor in the member, logical name, logical shape, offset)`.
type ChunkSpec = (String, String, Vec<u64>, Vec<u64>);

#[pymethods]
impl PyShardedWriter {
    /// Starts a checkpoint whose index is `index_path` (`model.hurray`);
    /// members are named after it (`model-00001.hurray`, ...) in its
    /// directory unless `start_member` names them. `max_shard_size` is in
    /// bytes (the runtime's default is transformers' 5 GB); `durable=False`
    /// skips the fsyncs (still atomic for every reader); `digests=True`
    /// records BLAKE3 digests in every member and each member's header
    /// digest in the index, so the checkpoint can be signed. `index_path`
    /// may be the URL of an object in an object store (`s3://...`): the
    /// members and the index are then objects beside it, each one multipart
    /// upload (`storage_options` as `open` takes them).
    #[new]
    #[pyo3(signature = (index_path, *, max_shard_size=None, metadata=None, durable=true, digests=false, storage_options=None))]
    fn new(
        py: Python<'_>,
        index_path: PathBuf,
        max_shard_size: Option<u64>,
        metadata: Option<BTreeMap<String, String>>,
        durable: bool,
        digests: bool,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let mut w = match index_path.to_str() {
            Some(location) => {
                check_options_apply(location, &storage_options)?;
                with_options(py, storage_options, |o| {
                    hurray_object_store::sharded_writer(location, o)
                })?
            }
            // Not UTF-8: a local path, never a URL.
            None => {
                check_options_apply(&index_path.to_string_lossy(), &storage_options)?;
                ShardedWriter::create(&index_path).map_err(err)?
            }
        };
        w.set_digests(digests.then_some(hurray::integrity::DigestAlgorithm::Blake3))
            .map_err(err)?;
        if let Some(bytes) = max_shard_size {
            w.set_max_shard_size(bytes);
        }
        if !durable {
            w.set_durability(Durability::RenameOnly);
        }
        for (k, v) in metadata.unwrap_or_default() {
            w.set_metadata(k, v);
        }
        Ok(PyShardedWriter {
            writer: Mutex::new(Some(w)),
        })
    }

    /// Closes the current member; the next tensor starts the member `path`
    /// (relative to the index's directory, `/`-separated), or its first free
    /// alternate (`path` with `.1` before the extension, ...) where a file
    /// is at `path`.
    fn start_member(&mut self, path: &str) -> PyResult<()> {
        self.writer()?.start_member(path).map_err(err)
    }

    /// Where a member another process writes for `adopt_member` should go:
    /// `preferred`, or its first alternate where no file is, claimed for
    /// this save (so writing it cannot damage another checkpoint or save).
    fn member_path(&mut self, preferred: &str) -> PyResult<String> {
        self.writer()?.member_path(preferred).map_err(err)
    }

    /// Sets the checkpoint's metadata entry `key` (kept in the index).
    fn set_metadata(&mut self, key: String, value: String) -> PyResult<()> {
        self.writer()?.set_metadata(key, value);
        Ok(())
    }

    /// Gives the save up: the members it wrote are removed and the
    /// checkpoint it would have replaced stays as it is.
    fn abort(&mut self) {
        *self.slot() = None;
    }

    /// Writes the whole tensor `name` from `source` (an object with
    /// `__dlpack__`, or `(dtype, shape, buffer)` as `write` takes).
    fn add(&mut self, name: &str, source: &Bound<'_, PyAny>) -> PyResult<()> {
        let w = self.writer()?;
        with_source(name, source, |t, shape, data, unpacked| {
            let desc = TensorDescriptor::new(name, t, hurray::shape(shape));
            w.add_tensor(&desc, &[&stored(t, data, unpacked)])
                .map_err(err)
        })
    }

    /// Writes one chunk of the logical tensor `name` of shape `shape`:
    /// `source` holds the chunk, placed at `offset` (one coordinate per
    /// dimension). A tensor's chunks go to different members and must tile
    /// it exactly, no gap and no overlap, which `finish()` checks.
    fn add_chunk(
        &mut self,
        name: &str,
        shape: Vec<u64>,
        offset: Vec<u64>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let w = self.writer()?;
        with_source(name, source, |t, chunk_shape, data, unpacked| {
            let desc = TensorDescriptor::new(name, t, hurray::shape(chunk_shape));
            w.add_chunk(&shape, &offset, &desc, &[&stored(t, data, unpacked)])
                .map_err(err)
        })
    }

    /// Takes in the Hurray file `path` (relative to the index's directory),
    /// written by another process (a rank of a distributed save): every
    /// tensor of it is a whole logical tensor, except those `chunks` names,
    /// given as `(tensor in the member, logical name, logical shape, offset)`.
    /// The file is verified and read whole for its CRC-32C, unless its
    /// writer reported `size` and `crc32c` (what `write_member` returns):
    /// then its header is verified and its size checked, and `file_id`, when
    /// given, must be the member's (another save wrote the path otherwise).
    #[pyo3(signature = (path, chunks=None, *, size=None, crc32c=None, file_id=None))]
    fn adopt_member(
        &mut self,
        py: Python<'_>,
        path: &str,
        chunks: Option<Vec<ChunkSpec>>,
        size: Option<u64>,
        crc32c: Option<u64>,
        file_id: Option<&str>,
    ) -> PyResult<()> {
        let chunks: Vec<AdoptedChunk> = chunks
            .unwrap_or_default()
            .into_iter()
            .map(|(tensor, name, shape, offset)| AdoptedChunk {
                tensor,
                name,
                shape,
                offset,
            })
            .collect();
        let file_id = file_id
            .map(|hex| hex.parse::<FileId>())
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("member {path:?}: {e}")))?;
        let w = self.writer()?;
        match (size, crc32c) {
            (Some(size), Some(crc32c)) => {
                let written = WrittenMember {
                    size,
                    crc32c,
                    file_id,
                };
                py.detach(|| w.adopt_written_member(path, &chunks, written))
            }
            (None, None) if file_id.is_none() => py.detach(|| w.adopt_member_chunks(path, &chunks)),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "member {path:?}: give both size and crc32c (and file_id with them), or none"
                )));
            }
        }
        .map_err(err)
    }

    /// Closes the last member, checks the index (every chunked tensor tiled
    /// exactly) and writes it; returns the index's path. A refused index is
    /// not written, and the members this writer wrote are removed.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        let w = self
            .slot()
            .take()
            .ok_or_else(|| HurrayError::new_err("the sharded writer is finished"))?;
        // A string: the location may be a URL, which a pathlib.Path would
        // mangle (`s3://b` to `s3:/b`).
        let location = py.detach(|| w.finish()).map_err(err)?;
        Ok(location.to_string_lossy().into_owned())
    }

    /// Whether `finish()` has run (successfully or not).
    #[getter]
    fn finished(&mut self) -> bool {
        self.slot().is_none()
    }
}
