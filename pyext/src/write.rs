//! `write(path | None, items, metadata)`: the one writer behind every
//! `save`, `save_file` and `save_model` of the package.

use crate::error::err;
use crate::import::import;
use crate::url::{check_options_apply, with_options};
use hurray::sharded::{Crc32cWriter, FileId};
use hurray::{
    ElementType, TensorDescriptor, Writer,
    atomic::Durability,
    integrity::{ChecksumAlgorithm, DigestAlgorithm},
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Writes `items` (an iterable of `(name, source)`) to `path` atomically,
/// or, with `path=None`, returns the file as bytes. `path` is a local path
/// or the URL of an object store (`s3://...`, one multipart upload, with
/// `storage_options` as `open` takes them). A source is read in
/// place ([`with_source`]): an object with `__dlpack__` or a tuple
/// `(dtype, shape, buffer)`. Bools
/// and sub-byte types are packed by the runtime as they stream out. Nothing
/// is written at `path` unless every tensor is. A durable file's bytes go
/// around the page cache (`OutputFile`) and are synced; `durable=False`
/// skips the fsyncs and writes through the page cache: still atomic for
/// every reader, not flushed to the disk.
/// `checksums=False` records no per-buffer checksums (CRC-32C by default);
/// `digests=True` records a BLAKE3 digest of each buffer (format 1.4), so
/// the file can be signed.
#[pyfunction]
#[pyo3(signature = (path, items, metadata=None, *, durable=true, checksums=true, digests=false, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write<'py>(
    py: Python<'py>,
    path: Option<std::path::PathBuf>,
    items: &Bound<'py, PyAny>,
    metadata: Option<BTreeMap<String, String>>,
    durable: bool,
    checksums: bool,
    digests: bool,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let metadata = metadata.unwrap_or_default();
    let sums = Sums {
        checksums: checksums.then_some(ChecksumAlgorithm::Crc32c),
        digests: digests.then_some(DigestAlgorithm::Blake3),
    };
    let Some(path) = path else {
        let mut out = Vec::new();
        let w = write_to(Writer::new(&mut out).map_err(err)?, items, &metadata, sums)?;
        w.finish().map_err(err)?;
        return Ok(Some(PyBytes::new(py, &out)));
    };
    let durability = durability(durable);
    let url = path.to_str().filter(|p| hurray_object_store::is_url(p));
    check_options_apply(&path.to_string_lossy(), &storage_options)?;
    if let Some(location) = url {
        let file = with_options(py, storage_options, |o| {
            hurray_object_store::create(location, o, durability)
        })?;
        let w = Writer::to_file_at(file, Path::new(location)).map_err(err)?;
        let (_, file) = write_to(w, items, &metadata, sums)?
            .finish_into_inner()
            .map_err(err)?;
        py.detach(|| file.commit())
            .map_err(|failed| err(failed.error))?;
    } else {
        let w = Writer::create_with(&path, durability).map_err(err)?;
        write_to(w, items, &metadata, sums)?.finish().map_err(err)?;
    }
    Ok(None)
}

/// As [`write`] to a location, for a member of a sharded checkpoint that
/// another process indexes (a rank of a distributed save): returns the
/// file's `(size, crc32c, file_id)`, computed as it was written, which that
/// process passes to `ShardedWriter.adopt_member` instead of reading the
/// file back. The member gets a random identity (format 1.5, as 32 hex
/// digits): the index records it, and adopting a member with another one
/// (another save wrote the path since) is refused.
#[pyfunction]
#[pyo3(signature = (location, items, *, durable=true, digests=false, storage_options=None))]
pub(crate) fn write_member(
    py: Python<'_>,
    location: String,
    items: &Bound<'_, PyAny>,
    durable: bool,
    digests: bool,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<(u64, u64, String)> {
    let sums = Sums {
        checksums: Some(ChecksumAlgorithm::Crc32c),
        digests: digests.then_some(DigestAlgorithm::Blake3),
    };
    check_options_apply(&location, &storage_options)?;
    let file = with_options(py, storage_options, |o| {
        hurray_object_store::create(&location, o, durability(durable))
    })?;
    let mut w = Writer::to_file_at(Crc32cWriter::new(file), Path::new(&location)).map_err(err)?;
    // The index that adopts it records it: another file put at its path
    // (another save's) is then refused when the checkpoint is read.
    let file_id = FileId::random().map_err(err)?;
    w.set_file_id(Some(file_id));
    let (_, sink) = write_to(w, items, &BTreeMap::new(), sums)?
        .finish_into_inner()
        .map_err(err)?;
    let (file, written) = sink.finish();
    py.detach(|| file.commit())
        .map_err(|failed| err(failed.error))?;
    Ok((written.size, written.crc32c, file_id.to_string()))
}

fn durability(durable: bool) -> Durability {
    if durable {
        Durability::Synced
    } else {
        Durability::RenameOnly
    }
}

/// What a written file records of each buffer.
#[derive(Clone, Copy)]
struct Sums {
    checksums: Option<ChecksumAlgorithm>,
    digests: Option<DigestAlgorithm>,
}

/// `w` with every tensor of `items` and `metadata` written, to be finished.
fn write_to<W: Write>(
    mut w: Writer<W>,
    items: &Bound<'_, PyAny>,
    metadata: &BTreeMap<String, String>,
    sums: Sums,
) -> PyResult<Writer<W>> {
    w.set_checksums(sums.checksums).map_err(err)?;
    w.set_digests(sums.digests).map_err(err)?;
    for (k, v) in metadata {
        w.set_metadata(k, v);
    }
    for item in items.try_iter()? {
        let (name, source): (String, Bound<'_, PyAny>) = item?.extract()?;
        with_source(&name, &source, |t, shape, data, unpacked| {
            add(&mut w, &name, t, shape, data, unpacked)
        })?;
    }
    Ok(w)
}

/// Runs `f` on one tensor of a Python source, `(element type, shape,
/// bytes, unpacked)`, borrowed in place while `f` runs. A source is either an
/// object with `__dlpack__` (a torch tensor, a JAX or NumPy array, a Hurray
/// tensor) or a tuple `(dtype, shape, buffer)`: a Hurray dtype name, a shape
/// and a contiguous buffer of the stored bytes, sub-byte types and bools one
/// element per byte (how ml_dtypes holds them). `unpacked`: `bytes` holds
/// one element per byte, to be packed; its length is checked against the
/// shape before `f` runs.
pub(crate) fn with_source<R>(
    name: &str,
    source: &Bound<'_, PyAny>,
    f: impl FnOnce(ElementType, &[u64], &[u8], bool) -> PyResult<R>,
) -> PyResult<R> {
    if let Ok(parts) = source.cast::<PyTuple>() {
        let (dtype, shape, buffer): (String, Vec<u64>, Bound<'_, PyAny>) = parts.extract()?;
        let t = ElementType::from_name(&dtype).ok_or_else(|| {
            PyValueError::new_err(format!("tensor {name:?}: unknown Hurray dtype {dtype:?}"))
        })?;
        let buf = PyBuffer::<u8>::get(&buffer)?;
        if !buf.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "tensor {name:?}: the buffer is not contiguous"
            )));
        }
        let data: &[u8] = if buf.len_bytes() == 0 {
            &[]
        } else {
            // SAFETY: the buffer protocol guarantees `len_bytes()` readable,
            // contiguous bytes at `buf_ptr()` while `buf` holds the export
            // (until it drops, after `f`); the GIL stays held and no Python
            // code runs meanwhile, so nothing writes to or frees them.
            unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) }
        };
        let unpacked = t.bits() < 8;
        check_len(name, t, &shape, data, unpacked)?;
        let out = f(t, &shape, data, unpacked);
        drop(buf);
        out
    } else {
        let imported = import(name, source)?;
        let (t, data) = (imported.element_type, imported.bytes());
        check_len(name, t, &imported.shape, data, imported.unpacked)?;
        f(t, &imported.shape, data, imported.unpacked)
    }
}

/// `data` holds what `t` of `shape` needs: one byte per element when
/// `unpacked`, the stored bytes otherwise.
fn check_len(
    name: &str,
    t: ElementType,
    shape: &[u64],
    data: &[u8],
    unpacked: bool,
) -> PyResult<()> {
    let count = hurray::elements::element_count(shape).known();
    let expected = if unpacked {
        count
    } else {
        count.and_then(|c| t.byte_len(c))
    };
    if expected == Some(data.len() as u64) {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "tensor {name:?}: {} {shape:?} needs {} bytes{}, the buffer has {}",
        t.name(),
        expected.map_or("more than 2^64".to_owned(), |e| e.to_string()),
        if unpacked {
            " (one element per byte)"
        } else {
            ""
        },
        data.len()
    )))
}

/// The codes of one-per-byte elements, for the packer: bools are any
/// non-zero byte, as NumPy and torch read them; other types keep their
/// bytes (the packer keeps the low `bits` bits).
pub(crate) fn codes_of(t: ElementType, bytes: &[u8], out: &mut Vec<u8>) {
    if t == ElementType::Bool {
        out.extend(bytes.iter().map(|b| u8::from(*b != 0)));
    } else {
        out.extend_from_slice(bytes);
    }
}

/// Adds one dense tensor, its length checked ([`with_source`]). `unpacked`:
/// `data` holds one element per byte (bools, ml_dtypes' sub-byte types),
/// which the runtime packs straight into the output; otherwise `data` is
/// the stored bytes.
fn add<W: Write>(
    w: &mut Writer<W>,
    name: &str,
    t: ElementType,
    shape: &[u64],
    data: &[u8],
    unpacked: bool,
) -> PyResult<()> {
    let desc = TensorDescriptor::new(name, t, hurray::shape(shape));
    if !unpacked || data.is_empty() {
        return w.add_tensor(&desc, &[data]).map_err(err);
    }
    let bits = t.bits();
    let mut tw = w.begin_tensor(&desc).map_err(err)?;
    if t == ElementType::Bool {
        // Any non-zero byte is True, as NumPy and torch read it. Chunks of
        // 1 MiB of codes end on byte boundaries, as `write_packed` needs.
        let mut codes = Vec::new();
        for chunk in data.chunks(1 << 20) {
            codes.clear();
            codes.extend(chunk.iter().map(|b| u8::from(*b != 0)));
            tw.write_packed(&codes, bits).map_err(err)?;
        }
    } else {
        // The runtime packs the low `bits` bits of each byte in place.
        tw.write_packed(data, bits).map_err(err)?;
    }
    tw.finish().map_err(err)
}
