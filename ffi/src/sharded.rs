//! Sharded checkpoints (format 1.3): `hurray_sharded_*`.

use crate::args::*;
use crate::file::HurrayFile;
use crate::slice::*;
use crate::status::*;
use crate::tensor::HurrayTensor;
use hurray::ShardedFile;
use hurray::sharded::ShardedTensor;
use std::ffi::c_char;

/// A sharded checkpoint opened through its index file (opaque): every
/// logical tensor by name, whole or in pieces across member files.
/// Thread-safe: any number of threads may use one handle at once. Free with
/// [`hurray_sharded_close`].
#[allow(missing_debug_implementations)] // opaque to C
pub struct HurraySharded {
    file: ShardedFile,
    /// Each tensor's name followed by a NUL, in index order (sorted).
    names: Vec<Vec<u8>>,
    /// Each member's path followed by a NUL, in index order.
    paths: Vec<Vec<u8>>,
    /// Opened by [`hurray_sharded_open_signed`]: each logical tensor's
    /// pieces are checked against their checksums and digests (once) before
    /// any of its data is handed out.
    verified: Option<Vec<std::sync::OnceLock<()>>>,
}

fn nul_terminated(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

impl HurraySharded {
    /// A new handle (freed by [`hurray_sharded_close`]) over `file`.
    fn new_handle(file: ShardedFile, verify: bool) -> *mut HurraySharded {
        let names = file
            .tensors()
            .iter()
            .map(|t| nul_terminated(&t.name))
            .collect();
        let paths = file
            .members()
            .iter()
            .map(|m| nul_terminated(&m.path))
            .collect();
        let verified = verify.then(|| {
            file.tensors()
                .iter()
                .map(|_| std::sync::OnceLock::new())
                .collect()
        });
        Box::into_raw(Box::new(HurraySharded {
            file,
            names,
            paths,
            verified,
        }))
    }

    fn tensor(&self, name: &str) -> Result<&ShardedTensor, Failure> {
        self.file
            .tensor(name)
            .map_err(|e| Failure::from_error(&e, Context::Sharded))
    }

    /// Of a checkpoint opened signed, checks every piece of tensor `name`
    /// against its checksums and digests, the first time its data is asked
    /// for; a no-op otherwise.
    fn check_data(&self, name: &str) -> Result<(), Failure> {
        let Some(verified) = &self.verified else {
            return Ok(());
        };
        let i = self
            .file
            .tensors()
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .map_err(|_| {
                Failure::from_error(
                    &hurray::Error::NotFound {
                        name: name.to_owned(),
                    },
                    Context::Sharded,
                )
            })?;
        if verified[i].get().is_some() {
            return Ok(());
        }
        let t = &self.file.tensors()[i];
        for p in &t.pieces {
            self.file
                .piece(t, p)
                .and_then(|piece| piece.verify_checksum())
                .map_err(|e| Failure::from_error(&e, Context::Sharded))?;
        }
        let _ = verified[i].set(());
        Ok(())
    }
}

/// Runs `f` on a checkpoint handle.
fn with_sharded(
    h: *const HurraySharded,
    f: impl FnOnce(&HurraySharded) -> Result<(), Failure>,
) -> HurrayStatus {
    with_handle(h, "sharded", f)
}

/// Opens the index file of a sharded checkpoint at `path` and checks the
/// index whole (member paths, every piece inside its tensor, the pieces
/// tiling each tensor). Members are found relative to the index's directory
/// and mapped the first time one of their tensors is read. A Hurray file
/// that is not an index is `HURRAY_ERR_INVALID_FILE` (its message says
/// "not the index"). On success `*out` is a new handle to free with
/// [`hurray_sharded_close`].
///
/// # Safety
/// `path` is a NUL-terminated UTF-8 string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_open(
    path: *const c_char,
    out: *mut *mut HurraySharded,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { arg_str(path, "path") }?;
        let file = ShardedFile::open(path).map_err(|e| Failure::from_error(&e, Context::Open))?;
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(HurraySharded::new_handle(file, false)) };
        Ok(())
    })
}

/// Opens a sharded checkpoint as [`hurray_sharded_open`] does, only when
/// the ed25519 key in the PEM file `public_key` signed its index: the
/// signature is read from `signature`, or from `path` with `.sig` appended
/// when it is NULL (what `hurray sign` writes). The index commits to every
/// member's header, which each member is checked against when it is
/// opened; each tensor's pieces are checked against their digests before
/// any of its data is handed out (`hurray_sharded_read_slice`,
/// `hurray_sharded_whole`). Failures as `hurray_file_open_signed`'s, and
/// `HURRAY_ERR_MEMBER_MISMATCH` for a member that is not the one the index
/// records.
///
/// # Safety
/// `path` and `public_key` are NUL-terminated UTF-8 strings, `signature`
/// is one or NULL; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_open_signed(
    path: *const c_char,
    public_key: *const c_char,
    signature: *const c_char,
    out: *mut *mut HurraySharded,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: the caller passes NUL-terminated strings (or NULL for
        // `signature`).
        let (index, path) = unsafe { crate::file::open_signed(path, public_key, signature) }?;
        // The checkpoint of the index whose signature was just checked.
        let file = ShardedFile::from_index_at(&index, std::path::Path::new(&path))
            .map_err(|e| Failure::from_error(&e, Context::Open))?;
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(HurraySharded::new_handle(file, true)) };
        Ok(())
    })
}

/// Closes a checkpoint handle and unmaps its members (NULL is ignored).
/// Slices read from it stay valid.
///
/// # Safety
/// `sharded` is NULL or a handle from `hurray_sharded_open`, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_close(sharded: *mut HurraySharded) {
    // SAFETY: NULL or a handle from `Box::into_raw` in `hurray_sharded_open`,
    // given up by the caller.
    unsafe { free_handle(sharded) }
}

/// The number of logical tensors.
///
/// # Safety
/// `sharded` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_count(
    sharded: *const HurraySharded,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_sharded(sharded, |h| unsafe { put(out, "out", h.names.len()) })
}

/// The name of logical tensor `index` (0-based, sorted by name): `*name` is
/// NUL-terminated and `*len` its length in bytes (a name may contain NUL
/// bytes, hence the length). Valid until the handle is closed.
///
/// # Safety
/// `sharded` is a live handle; `name` is writable; `len` is writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_name_at(
    sharded: *const HurraySharded,
    index: usize,
    name: *mut *const c_char,
    len: *mut usize,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        check_out(name, "name")?;
        let n = h
            .names
            .get(index)
            .ok_or_else(|| Failure::index_out_of_range("tensor", index, h.names.len()))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(name, "name", n.as_ptr().cast()) }?;
        if !len.is_null() {
            // SAFETY: non-null and writable (caller contract).
            unsafe { len.write(n.len() - 1) };
        }
        Ok(())
    })
}

/// The logical tensor `name`: its element type (wire value), its
/// dimensions (`*dims` points at `*rank` values owned by the handle, not
/// NULL even for rank 0) and the number of pieces it is stored in (1 for a
/// whole tensor). `pieces` may be NULL. `HURRAY_ERR_NOT_FOUND` for an
/// unknown name.
///
/// # Safety
/// `sharded` is a live handle; `name` is NUL-terminated; `dtype`, `dims`
/// and `rank` are writable; `pieces` is writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_tensor_info(
    sharded: *const HurraySharded,
    name: *const c_char,
    dtype: *mut u8,
    dims: *mut *const u64,
    rank: *mut usize,
    pieces: *mut usize,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        // SAFETY: caller contract (NUL-terminated or NULL).
        let name = unsafe { arg_str(name, "name") }?;
        check_out(dtype, "dtype")?;
        check_out(dims, "dims")?;
        check_out(rank, "rank")?;
        let t = h.tensor(name)?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(dtype, "dtype", t.element_type.to_wire()) }?;
        // SAFETY: as above.
        unsafe { put(dims, "dims", t.shape.as_ptr()) }?;
        // SAFETY: as above.
        unsafe { put(rank, "rank", t.shape.len()) }?;
        if !pieces.is_null() {
            // SAFETY: non-null and writable (caller contract).
            unsafe { pieces.write(t.pieces.len()) };
        }
        Ok(())
    })
}

/// Reads `name[starts[0]:stops[0]:steps[0], ...]` of the checkpoint into a
/// new [`HurraySlice`] (free it with [`hurray_slice_free`]), as
/// [`hurray_tensor_read_slice`] does for one file: whole tensors and
/// tensors in pieces alike, opening only the members whose pieces the
/// slice meets and reading only the bytes it covers. A member whose length
/// or pieces differ from the index is `HURRAY_ERR_MEMBER_MISMATCH`; one that
/// fails verification `HURRAY_ERR_INVALID_FILE`; a missing one `HURRAY_ERR_IO`.
///
/// # Safety
/// `sharded` is a live handle; `name` is NUL-terminated; `starts`, `stops`
/// (and `steps` unless NULL) point at `rank` values (may be NULL when
/// `rank` is 0); `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_read_slice(
    sharded: *const HurraySharded,
    name: *const c_char,
    starts: *const u64,
    stops: *const u64,
    steps: *const u64,
    rank: usize,
    out: *mut *mut HurraySlice,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        // SAFETY: caller contract (NUL-terminated or NULL).
        let name = unsafe { arg_str(name, "name") }?;
        check_out(out, "out")?;
        // SAFETY: this fn's contract.
        let ranges = unsafe { ranges_arg(starts, stops, steps, rank) }?;
        h.check_data(name)?;
        let data = h
            .file
            .slice(name, &ranges)
            .map_err(|e| Failure::from_error(&e, Context::Sharded))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(HurraySlice::new_handle(data)) };
        Ok(())
    })
}

/// The tensor `name` in place, when one member holds it whole: `*out_file`
/// is a new handle to that member (free it with `hurray_file_close`;
/// the checkpoint handle may be closed first) and `*out_tensor` the tensor
/// in it, borrowed from `*out_file`: every `hurray_tensor_*` call, DLPack
/// export included, works on it without a copy. A tensor stored in pieces
/// is `HURRAY_ERR_CHUNKED` (read it with [`hurray_sharded_read_slice`]); a
/// member that differs from the index `HURRAY_ERR_MEMBER_MISMATCH`.
///
/// # Safety
/// `sharded` is a live handle; `name` is NUL-terminated; `out_file` and
/// `out_tensor` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_whole(
    sharded: *const HurraySharded,
    name: *const c_char,
    out_file: *mut *mut HurrayFile,
    out_tensor: *mut *const HurrayTensor,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        // SAFETY: caller contract (NUL-terminated or NULL).
        let name = unsafe { arg_str(name, "name") }?;
        check_out(out_file, "out_file")?;
        check_out(out_tensor, "out_tensor")?;
        let fail = |e: hurray::Error| Failure::from_error(&e, Context::Sharded);
        // `get` refuses a tensor in pieces and checks the member's tensor
        // against the index.
        h.file.get(name).map_err(fail)?;
        h.check_data(name)?;
        let piece = &h.tensor(name)?.pieces[0];
        // The mapped member (or, for one read by ranges, the tensor alone).
        let logical = h.file.tensor(name).map_err(fail)?;
        let member = h.file.piece_file(logical, piece).map_err(fail)?;
        let file = HurrayFile::shared_handle(member);
        // SAFETY: just created, not yet shared.
        let handle = unsafe { &*file };
        let Some(tensor) = handle.tensors().iter().find(|t| t.name() == piece.tensor) else {
            // `get` found it there; should the member say otherwise, free
            // the handle (created above, never handed out) and say so.
            // SAFETY: as just said.
            unsafe { drop(Box::from_raw(file)) };
            return Err(fail(hurray::Error::NotFound {
                name: piece.tensor.clone(),
            }));
        };
        // SAFETY: checked non-null; caller contract. The tensor lives in
        // the boxed handle, which the caller owns from here on.
        unsafe { out_tensor.write(tensor) };
        // SAFETY: checked non-null; caller contract.
        unsafe { out_file.write(file) };
        Ok(())
    })
}

/// Reads every member whole and compares its length and CRC-32C with the
/// index's: `HURRAY_OK`, or `HURRAY_ERR_MEMBER_MISMATCH` (kind
/// `MemberMismatch`) with a message naming the first member that differs,
/// the field and both values.
///
/// # Safety
/// `sharded` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_verify_members(
    sharded: *const HurraySharded,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        h.file
            .verify_members()
            .map_err(|e| Failure::from_error(&e, Context::Sharded))
    })
}

/// The number of member files.
///
/// # Safety
/// `sharded` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_member_count(
    sharded: *const HurraySharded,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_sharded(sharded, |h| unsafe { put(out, "out", h.paths.len()) })
}

/// Member `index` as the index records it: its path relative to the index's
/// directory (NUL-terminated, valid until close), its length in bytes and
/// its CRC-32C (low 32 bits). `size` and `crc32c` may be NULL. Reads nothing.
///
/// # Safety
/// `sharded` is a live handle; `path` is writable; `size` and `crc32c` are
/// writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_member_at(
    sharded: *const HurraySharded,
    index: usize,
    path: *mut *const c_char,
    size: *mut u64,
    crc32c: *mut u64,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        check_out(path, "path")?;
        let (p, m) = h
            .paths
            .get(index)
            .zip(h.file.members().get(index))
            .ok_or_else(|| Failure::index_out_of_range("member", index, h.paths.len()))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(path, "path", p.as_ptr().cast()) }?;
        if !size.is_null() {
            // SAFETY: non-null and writable (caller contract).
            unsafe { size.write(m.size) };
        }
        if !crc32c.is_null() {
            // SAFETY: non-null and writable (caller contract).
            unsafe { crc32c.write(m.crc32c) };
        }
        Ok(())
    })
}

/// The number of the checkpoint's metadata entries (the index file's).
///
/// # Safety
/// `sharded` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_metadata_count(
    sharded: *const HurraySharded,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_sharded(sharded, |h| unsafe {
        put(out, "out", h.file.metadata().len())
    })
}

/// The checkpoint's metadata entry `index` (sorted by key); as
/// [`hurray_file_metadata_at`](crate::hurray_file_metadata_at): key and
/// value are *not* NUL-terminated (use the lengths), valid until close.
///
/// # Safety
/// `sharded` is a live handle; the four out pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_sharded_metadata_at(
    sharded: *const HurraySharded,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> HurrayStatus {
    with_sharded(sharded, |h| {
        let entry = h
            .file
            .metadata()
            .iter()
            .nth(index)
            .map(|(k, v)| (k.as_str(), v.as_str()));
        // SAFETY: caller contract for the out pointers.
        unsafe { metadata_out(entry, index, key, key_len, value, value_len) }
    })
}
