//! Open files: `hurray_file_*`.

use crate::args::*;
use crate::status::*;
use crate::tensor::*;
use hurray::{Error, File};
use std::ffi::c_char;
use std::sync::{Arc, OnceLock};

/// An open, verified Hurray file (opaque). Thread-safe: any number of
/// threads may use one handle at once. Free with [`hurray_file_close`].
#[allow(missing_debug_implementations)] // opaque to C; nothing to show
pub struct HurrayFile {
    pub(crate) file: Arc<File>,
    /// Tensor handles, built in one pass on first use (O(tensors), not O(data)).
    pub(crate) tensors: OnceLock<Box<[HurrayTensor]>>,
    /// Opened by [`hurray_file_open_signed`]: each tensor's checksums and
    /// digests are checked before its data is first handed out.
    pub(crate) verify: bool,
}

impl HurrayFile {
    /// A new handle (freed by [`hurray_file_close`]) for a file just opened,
    /// or the failure to open it.
    pub(crate) fn new_handle(opened: Result<File, Error>) -> Result<*mut HurrayFile, Failure> {
        let file = opened.map_err(|e| Failure::from_error(&e, Context::Open))?;
        Ok(Box::into_raw(Box::new(HurrayFile {
            file: Arc::new(file),
            tensors: OnceLock::new(),
            verify: false,
        })))
    }

    /// A new handle (freed by [`hurray_file_close`]) over a file already
    /// mapped and verified (a sharded checkpoint's member).
    pub(crate) fn shared_handle(file: Arc<File>) -> *mut HurrayFile {
        Box::into_raw(Box::new(HurrayFile {
            file,
            tensors: OnceLock::new(),
            verify: false,
        }))
    }

    pub(crate) fn tensors(&self) -> &[HurrayTensor] {
        self.tensors.get_or_init(|| {
            self.file
                .tensors()
                .map(|t| HurrayTensor::new(&self.file, &t, self.verify))
                .collect()
        })
    }
}

/// Opens and verifies the Hurray file at `path` (memory-mapped). On success
/// `*out` is a new handle to free with [`hurray_file_close`].
///
/// # Safety
/// `path` is a NUL-terminated UTF-8 string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_open(
    path: *const c_char,
    out: *mut *mut HurrayFile,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { arg_str(path, "path") }?;
        let handle = HurrayFile::new_handle(File::open(path))?;
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Opens the Hurray file at `path` (memory-mapped) and refuses it unless
/// the ed25519 public key in the PEM file `public_key` (as `openssl pkey
/// -pubout` writes it) signed its header: the signature is read from
/// `signature`, or from `path` with `.sig` appended when `signature` is
/// NULL (what `hurray sign` writes). Only the header is read here; each
/// tensor's checksums and digests are checked before its data is first
/// handed out (`hurray_tensor_data`, `hurray_tensor_buffer`, DLPack
/// exports, slices), which then fail with `HURRAY_ERR_CHECKSUM_MISMATCH`
/// for a tensor whose bytes changed. A signature that fails is
/// `HURRAY_ERR_SIGNATURE`; `hurray_last_error_message` names what failed.
///
/// # Safety
/// `path` and `public_key` are NUL-terminated UTF-8 strings, `signature`
/// is one or NULL; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_open_signed(
    path: *const c_char,
    public_key: *const c_char,
    signature: *const c_char,
    out: *mut *mut HurrayFile,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: the caller passes NUL-terminated strings (or NULL for
        // `signature`).
        let (file, _) = unsafe { open_signed(path, public_key, signature) }?;
        let handle = Box::into_raw(Box::new(HurrayFile {
            file: Arc::new(file),
            tensors: OnceLock::new(),
            verify: true,
        }));
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Opens the file at `path` and checks the signature of its header with
/// the ed25519 key in the PEM file `public_key`, read from `signature` or,
/// when it is NULL, from `path` with `.sig` appended. The file (a file of
/// tensors or an index) and its path.
///
/// # Safety
/// `path` and `public_key` are NUL-terminated UTF-8 strings, `signature`
/// is one or NULL.
pub(crate) unsafe fn open_signed(
    path: *const c_char,
    public_key: *const c_char,
    signature: *const c_char,
) -> Result<(File, String), Failure> {
    // SAFETY: the caller passes NUL-terminated strings.
    let path = unsafe { arg_str(path, "path") }?;
    // SAFETY: as above.
    let key = unsafe { arg_str(public_key, "public_key") }?;
    let signature = if signature.is_null() {
        hurray_sign::signature_path(path)
    } else {
        // SAFETY: as above.
        std::path::PathBuf::from(unsafe { arg_str(signature, "signature") }?)
    };
    let sign_failure = |e: hurray_sign::Error| Failure::from_sign_error(&e);
    let key = hurray_sign::PublicKey::from_pem_file(key).map_err(sign_failure)?;
    let signature = hurray_sign::Signature::read(&signature).map_err(sign_failure)?;
    let file = File::open(path).map_err(|e| Failure::from_error(&e, Context::Open))?;
    signature.verify(&file, &key).map_err(sign_failure)?;
    Ok((file, path.to_owned()))
}

/// Opens and verifies the Hurray file at `url`, an object in S3, GCS, Azure
/// or behind HTTP(S) (`s3://bucket/key`, `gs://`, `az://`, `https://`), or
/// a local `file://` URL or path. The header is read with two range GETs
/// and verified; a tensor's data is read when first asked for (its buffers
/// in one range GET when they are neighbours) and kept until close. Credentials
/// and endpoints come from the environment (`AWS_*`, `GOOGLE_*`,
/// `AZURE_*`). Built without the crate's `remote` feature, a URL is
/// `HURRAY_ERR_UNSUPPORTED`.
///
/// # Safety
/// `url` is a NUL-terminated UTF-8 string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_open_url(
    url: *const c_char,
    out: *mut *mut HurrayFile,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let url = unsafe { arg_str(url, "url") }?;
        let handle = HurrayFile::new_handle(read_url(url)?)?;
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(handle) };
        Ok(())
    })
}

#[cfg(feature = "remote")]
fn read_url(url: &str) -> Result<Result<File, Error>, Failure> {
    Ok(hurray_object_store::open(url))
}

#[cfg(not(feature = "remote"))]
fn read_url(url: &str) -> Result<Result<File, Error>, Failure> {
    Err(Failure::new(
        crate::HurrayStatus::HURRAY_ERR_UNSUPPORTED,
        format!("{url}: this library was built without the `remote` feature (local files only)"),
    ))
}

/// Opens and verifies an in-memory file (the bytes are copied into aligned
/// storage; `data` may be freed after the call).
///
/// # Safety
/// `data` points to `len` readable bytes; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_open_bytes(
    data: *const u8,
    len: usize,
    out: *mut *mut HurrayFile,
) -> HurrayStatus {
    guard(|| {
        check_out(out, "out")?;
        if data.is_null() {
            return Err(Failure::null("data"));
        }
        // SAFETY: the caller promises `len` readable bytes at `data`.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        let handle = HurrayFile::new_handle(File::from_bytes(bytes))?;
        // SAFETY: `out` is non-null and writable (caller contract).
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Closes a file handle (NULL is ignored). Its tensor handles become invalid;
/// DLPack exports made from it stay valid until their deleters run.
///
/// # Safety
/// `file` is NULL or a handle from `hurray_file_open*`, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_close(file: *mut HurrayFile) {
    // SAFETY: NULL or a handle from `Box::into_raw` in `hurray_file_open*`,
    // given up by the caller.
    unsafe { free_handle(file) }
}

/// The number of tensors in the file.
///
/// # Safety
/// `file` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_count(
    file: *const HurrayFile,
    out: *mut usize,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        // SAFETY: caller contract (writable or NULL).
        unsafe { put(out, "out", f.file.len()) }
    })
}

/// The file's format version.
///
/// # Safety
/// `file` is a live handle; `major` and `minor` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_version(
    file: *const HurrayFile,
    major: *mut u16,
    minor: *mut u16,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        check_out(minor, "minor")?;
        let (ma, mi) = f.file.reader().version();
        // SAFETY: caller contract (writable or NULL).
        unsafe { put(major, "major", ma) }?;
        // SAFETY: checked non-null above; caller contract.
        unsafe { put(minor, "minor", mi) }
    })
}

/// Tensor `index` (0-based, in file order: sorted by name). The handle is
/// borrowed from `file`. The first tensor access builds every handle in one
/// pass over the header.
///
/// # Safety
/// `file` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_tensor_at(
    file: *const HurrayFile,
    index: usize,
    out: *mut *const HurrayTensor,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        check_out(out, "out")?;
        let tensors = f.tensors();
        let t = tensors
            .get(index)
            .ok_or_else(|| Failure::index_out_of_range("tensor", index, tensors.len()))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(t) };
        Ok(())
    })
}

/// The tensor named `name` (binary search, O(log n)), or `HURRAY_ERR_NOT_FOUND`.
///
/// # Safety
/// `file` is a live handle; `name` is NUL-terminated; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_lookup(
    file: *const HurrayFile,
    name: *const c_char,
    out: *mut *const HurrayTensor,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        // SAFETY: caller contract (NUL-terminated or NULL).
        let name = unsafe { arg_str(name, "name") }?;
        check_out(out, "out")?;
        let tensors = f.tensors();
        let i = tensors
            .binary_search_by(|t| t.name().cmp(name))
            .map_err(|_| {
                Failure::from_error(
                    &Error::NotFound {
                        name: name.to_owned(),
                    },
                    Context::View,
                )
            })?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(&tensors[i]) };
        Ok(())
    })
}

/// The number of file-wide metadata entries.
///
/// # Safety
/// `file` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_metadata_count(
    file: *const HurrayFile,
    out: *mut usize,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        // SAFETY: caller contract.
        unsafe { put(out, "out", f.file.reader().metadata().count()) }
    })
}

/// File-wide metadata entry `index` (sorted by key). Key and value point into
/// the file (UTF-8, *not* NUL-terminated: use the lengths), valid until close.
///
/// # Safety
/// `file` is a live handle; the four out pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_metadata_at(
    file: *const HurrayFile,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract (live handle or NULL).
        let f = unsafe { arg_ref(file, "file") }?;
        let entry = f.file.reader().metadata().nth(index);
        // SAFETY: caller contract for the out pointers.
        unsafe { metadata_out(entry, index, key, key_len, value, value_len) }
    })
}
