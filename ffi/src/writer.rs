//! Writing files: `hurray_writer_*`.

use crate::HurrayStatus::*;
use crate::args::*;
use crate::status::*;
use hurray::{Dim, ElementType, TensorDescriptor, Writer, integrity::ChecksumAlgorithm};
use std::ffi::{c_char, c_void};

/// A file being written (opaque). Not thread-safe: one thread at a time.
/// Nothing appears at the destination until [`hurray_writer_finish`]
/// succeeds. Always end it with `hurray_writer_finish` or `hurray_writer_abort`.
#[derive(Debug)]
pub struct HurrayWriter {
    pub(crate) writer: Writer<hurray::atomic::OutputFile>,
}

/// Starts writing a file to `path` (through a temporary file in the same
/// directory, renamed into place by [`hurray_writer_finish`]).
///
/// # Safety
/// `path` is NUL-terminated UTF-8; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_create(
    path: *const c_char,
    out: *mut *mut HurrayWriter,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: caller contract.
        let path = unsafe { arg_str(path, "path") }?;
        let writer = Writer::create(path).map_err(|e| Failure::from_error(&e, Context::Write))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(Box::into_raw(Box::new(HurrayWriter { writer }))) };
        Ok(())
    })
}

/// # Safety
/// `w` is NULL or a live writer handle used by this thread only.
pub(crate) unsafe fn writer_mut<'a>(w: *mut HurrayWriter) -> Result<&'a mut HurrayWriter, Failure> {
    // SAFETY: caller contract.
    unsafe { w.as_mut() }.ok_or_else(|| Failure::null("writer"))
}

/// # Safety
/// `dims` points at `rank` values (or is NULL with rank 0).
pub(crate) unsafe fn shape_arg(dims: *const u64, rank: usize) -> Result<Vec<Dim>, Failure> {
    if rank == 0 {
        return Ok(Vec::new());
    }
    if dims.is_null() {
        return Err(Failure::null("dims"));
    }
    // SAFETY: non-null with `rank` readable values (caller contract).
    let dims = unsafe { std::slice::from_raw_parts(dims, rank) };
    Ok(dims.iter().map(|&d| Dim::from_wire(d)).collect())
}

pub(crate) fn dtype_arg(dtype: u8) -> Result<ElementType, Failure> {
    ElementType::from_wire(dtype).ok_or_else(|| {
        Failure::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{dtype} is not an element type wire value"),
        )
    })
}

/// The arguments shared by the `hurray_writer_add_*` calls, checked in this
/// order: the writer, then a descriptor of `name`, `dtype` and the shape.
///
/// # Safety
/// `writer` is NULL or a live writer used by this thread only; `name` is
/// NULL or NUL-terminated; `dims` points at `rank` values (or is NULL with
/// rank 0).
pub(crate) unsafe fn tensor_args<'a>(
    writer: *mut HurrayWriter,
    name: *const c_char,
    dtype: u8,
    dims: *const u64,
    rank: usize,
) -> Result<(&'a mut HurrayWriter, TensorDescriptor), Failure> {
    // SAFETY: this fn's contract.
    let w = unsafe { writer_mut(writer) }?;
    // SAFETY: this fn's contract.
    let name = unsafe { arg_str(name, "name") }?;
    let t = dtype_arg(dtype)?;
    // SAFETY: this fn's contract.
    let shape = unsafe { shape_arg(dims, rank) }?;
    Ok((w, TensorDescriptor::new(name, t, shape)))
}

impl HurrayWriter {
    pub(crate) fn add_tensor(
        &mut self,
        desc: &TensorDescriptor,
        buffers: &[&[u8]],
    ) -> Result<(), Failure> {
        self.writer
            .add_tensor(desc, buffers)
            .map_err(|e| Failure::from_error(&e, Context::Write))
    }
}

/// Adds a dense, row-major tensor. `data` holds `len` bytes, exactly what
/// the shape and type need (packed LSB-first for sub-byte types). An empty
/// tensor (a dimension 0) takes `data` = NULL and `len` = 0 (any pointer is
/// accepted and never read when `len` is 0). Dynamic dimensions are refused
/// here: use [`hurray_writer_add_descriptor`]. An invalid tensor writes
/// nothing and leaves the writer usable.
///
/// # Safety
/// `writer` is a live writer; `name` is NUL-terminated; `dims` points at
/// `rank` values (may be NULL when `rank` is 0); `data` points at `len`
/// readable bytes (may be NULL when `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_add_dense(
    writer: *mut HurrayWriter,
    name: *const c_char,
    dtype: u8,
    dims: *const u64,
    rank: usize,
    data: *const c_void,
    len: usize,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let (w, desc) = unsafe { tensor_args(writer, name, dtype, dims, rank) }?;
        let bytes: &[u8] = if len == 0 {
            // ADR-007: a zero-length buffer is never dereferenced.
            &[]
        } else if data.is_null() {
            return Err(Failure::null("data"));
        } else {
            // SAFETY: non-null with `len` readable bytes (caller contract).
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        w.add_tensor(&desc, &[bytes])
    })
}

/// Adds a descriptor-only tensor (a signature without data); its dimensions
/// may be `HURRAY_DYNAMIC_DIM`.
///
/// # Safety
/// As [`hurray_writer_add_dense`], without data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_add_descriptor(
    writer: *mut HurrayWriter,
    name: *const c_char,
    dtype: u8,
    dims: *const u64,
    rank: usize,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let (w, desc) = unsafe { tensor_args(writer, name, dtype, dims, rank) }?;
        w.add_tensor(&desc.into_descriptor_only(), &[])
    })
}

/// Sets a file-wide metadata entry (UTF-8 key and value).
///
/// # Safety
/// `writer` is a live writer; `key` and `value` are NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_set_metadata(
    writer: *mut HurrayWriter,
    key: *const c_char,
    value: *const c_char,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let w = unsafe { writer_mut(writer) }?;
        // SAFETY: caller contract.
        let key = unsafe { arg_str(key, "key") }?;
        // SAFETY: caller contract.
        let value = unsafe { arg_str(value, "value") }?;
        w.writer.set_metadata(key, value);
        Ok(())
    })
}

/// Sets how buffers are checksummed: `"crc32c"` (the default) or `"none"`
/// (no checksums). Call it before the first tensor: a file's tensors all
/// have checksums or none has (`HURRAY_ERR_INVALID_ARGUMENT` afterwards, and
/// for an unknown name).
///
/// # Safety
/// `writer` is a live writer; `algorithm` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_set_checksums(
    writer: *mut HurrayWriter,
    algorithm: *const c_char,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let w = unsafe { writer_mut(writer) }?;
        // SAFETY: caller contract.
        let name = unsafe { arg_str(algorithm, "algorithm") }?;
        let algorithm = match name {
            "none" => None,
            n if n == ChecksumAlgorithm::Crc32c.name() => Some(ChecksumAlgorithm::Crc32c),
            _ => {
                return Err(Failure::new(
                    HURRAY_ERR_INVALID_ARGUMENT,
                    format!("{name:?} is not a checksum algorithm (\"crc32c\" or \"none\")"),
                ));
            }
        };
        w.writer
            .set_checksums(algorithm)
            .map_err(|e| Failure::from_error(&e, Context::Write))
    })
}

/// Writes the header, syncs and renames the file into place. Consumes the
/// writer whatever the outcome: `writer` must not be used again. On failure
/// the destination is untouched.
///
/// # Safety
/// `writer` is NULL or a live writer handle, given up by the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_finish(writer: *mut HurrayWriter) -> HurrayStatus {
    guard(|| {
        if writer.is_null() {
            return Err(Failure::null("writer"));
        }
        // SAFETY: from `Box::into_raw` in `hurray_writer_create`; given up by the caller.
        let w = unsafe { Box::from_raw(writer) };
        w.writer
            .finish()
            .map(|_| ())
            .map_err(|e| Failure::from_error(&e, Context::Write))
    })
}

/// Abandons the writer: the temporary file is removed and the destination
/// is untouched. NULL is ignored.
///
/// # Safety
/// `writer` is NULL or a live writer handle, given up by the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_writer_abort(writer: *mut HurrayWriter) {
    // SAFETY: NULL or a handle from `Box::into_raw` in `hurray_writer_create`,
    // given up by the caller.
    unsafe { free_handle(writer) }
}
