//! The C API of Hurray. The header `include/hurray.h` is generated from this
//! file by cbindgen (`cargo xtask cbindgen`; a test fails when it is stale).
//! `docs/impl/c-ffi.md` is the user's guide: ownership, lifetimes, threads,
//! the zero-length/NULL rules of ADR-007, errors and DLPack.
//!
//! Every entry point checks its pointers, never lets a panic cross the
//! boundary (a panic becomes [`HurrayStatus::HURRAY_ERR_PANIC`]) and records
//! a message for [`hurray_last_error_message`] on failure.

use hurray::dlpack::{DLManagedTensorVersioned, ManagedTensor};
use hurray::{
    Dim, ElementType, Error, File, Layout, QuantizationScheme, TensorDescriptor, TensorRef, Writer,
};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

/// The shape value of a dynamic (unresolved) dimension. Never the same as 0,
/// a resolved empty dimension (ADR-007 section 5).
pub const HURRAY_DYNAMIC_DIM: u64 = u64::MAX;

/// `DLPACK_FLAG_BITMASK_READ_ONLY` of `DLManagedTensorVersioned.flags`: the
/// consumer must not write (always set by Hurray).
pub const HURRAY_DLPACK_FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded to a byte
/// each. Never set by Hurray: its sub-byte data is packed, LSB-first.
pub const HURRAY_DLPACK_FLAG_SUBBYTE_PADDED: u64 = 1 << 2;
/// The DLPack version of the exported structs.
pub const HURRAY_DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack version of the exported structs.
pub const HURRAY_DLPACK_MINOR_VERSION: u32 = 1;
/// `DLDeviceType::kDLCPU`, the device of every Hurray export.
pub const HURRAY_DLPACK_CPU: i32 = 1;

/// The result of every fallible call. On anything but `HURRAY_OK` the
/// calling thread's last error ([`hurray_last_error_message`]) says why.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum HurrayStatus {
    HURRAY_OK = 0,
    /// A required pointer argument was NULL.
    HURRAY_ERR_NULL_ARGUMENT = 1,
    /// An argument was out of its domain (bad UTF-8, unknown dtype, data length ...).
    HURRAY_ERR_INVALID_ARGUMENT = 2,
    /// The operating system refused an operation (open, read, write, rename).
    HURRAY_ERR_IO = 3,
    /// The file (or a sparse tensor's index data) failed verification.
    HURRAY_ERR_INVALID_FILE = 4,
    /// No tensor of that name.
    HURRAY_ERR_NOT_FOUND = 5,
    /// The operation does not apply to this tensor (layout, quantization, DLPack limits).
    HURRAY_ERR_UNSUPPORTED = 6,
    /// The tensor is descriptor-only: it carries no data.
    HURRAY_ERR_NO_DATA = 7,
    /// An index was >= the count.
    HURRAY_ERR_OUT_OF_RANGE = 8,
    /// The writer failed earlier (or an I/O error broke it); only abort remains.
    HURRAY_ERR_WRITER_FAILED = 9,
    /// A bug: Rust code panicked. The panic was caught at the boundary.
    HURRAY_ERR_PANIC = 10,
}

use HurrayLayout::*;
use HurrayQuantScheme::*;
use HurrayStatus::*;

/// The layout of a tensor.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum HurrayLayout {
    HURRAY_LAYOUT_DENSE = 0,
    HURRAY_LAYOUT_STRIDED = 1,
    HURRAY_LAYOUT_COO = 2,
    HURRAY_LAYOUT_CSR = 3,
    HURRAY_LAYOUT_CSC = 4,
}

/// The granularity of a quantization descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum HurrayQuantScheme {
    HURRAY_QUANT_PER_TENSOR = 1,
    HURRAY_QUANT_PER_AXIS = 2,
    HURRAY_QUANT_PER_BLOCK = 3,
}

/// A tensor's quantization: `expressed = (stored - zero_point) * scale`.
/// Element types are wire values (see `hurray_dtype_name`); `zero_point_type`
/// is 0 for symmetric quantization (no zero points). The scales and zero
/// points themselves are the `scales` / `zero_points` buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HurrayQuantization {
    pub scheme: HurrayQuantScheme,
    /// The quantized dimension (per-axis and per-block; 0 otherwise).
    pub axis: u32,
    /// Elements per block along `axis` (per-block; 0 otherwise).
    pub block_size: u64,
    pub expressed_type: u8,
    pub scale_type: u8,
    pub zero_point_type: u8,
    /// The stored value range the producer uses; both 0 when unset.
    pub storage_min: i64,
    pub storage_max: i64,
}

// ---------------------------------------------------------------- errors --

struct LastError {
    message: CString,
    kind: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// A failure on its way to the C caller.
struct Failure {
    status: HurrayStatus,
    kind: String,
    message: String,
}

impl Failure {
    fn new(status: HurrayStatus, message: impl Into<String>) -> Self {
        let kind = match status {
            HURRAY_ERR_NULL_ARGUMENT => "NullArgument",
            HURRAY_ERR_OUT_OF_RANGE => "OutOfRange",
            HURRAY_ERR_PANIC => "Panic",
            _ => "InvalidArgument",
        };
        Failure {
            status,
            kind: kind.to_owned(),
            message: message.into(),
        }
    }

    fn null(arg: &str) -> Self {
        Failure::new(
            HURRAY_ERR_NULL_ARGUMENT,
            format!("argument `{arg}` is NULL"),
        )
    }

    /// `index` of `what` (a tensor, a buffer) is not below `count`.
    fn index_out_of_range(what: &str, index: usize, count: usize) -> Self {
        Failure::new(
            HURRAY_ERR_OUT_OF_RANGE,
            format!("{what} index {index} >= count {count}"),
        )
    }

    fn from_error(e: &Error, context: Context) -> Self {
        let status = match (e, context) {
            (Error::Io { .. } | Error::Stream(_), _) => HURRAY_ERR_IO,
            (Error::WriterPoisoned { .. }, _) => HURRAY_ERR_WRITER_FAILED,
            (_, Context::Open) => HURRAY_ERR_INVALID_FILE,
            (_, Context::Write) => HURRAY_ERR_INVALID_ARGUMENT,
            (Error::NotFound { .. }, _) => HURRAY_ERR_NOT_FOUND,
            (Error::NoData { .. }, _) => HURRAY_ERR_NO_DATA,
            (Error::InvalidSparseIndex { .. }, _) => HURRAY_ERR_INVALID_FILE,
            _ => HURRAY_ERR_UNSUPPORTED,
        };
        Failure {
            status,
            kind: error_kind(e),
            message: e.to_string(),
        }
    }
}

#[derive(Clone, Copy)]
enum Context {
    Open,
    View,
    Write,
}

/// The variant name of a runtime error (`BadMagic`, `BufferLength`, ...).
fn error_kind(e: &Error) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("Error")
        .to_owned()
}

fn set_last_error(f: &Failure) {
    let clean = |s: &str| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
    let e = LastError {
        message: clean(&f.message),
        kind: clean(&f.kind),
    };
    // `try_with`: during thread teardown the slot may be gone; never panic here.
    let _ = LAST_ERROR.try_with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut() {
            *slot = Some(e);
        }
    });
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Runs `f`, turning an error or a panic into a status and a last error.
fn guard(f: impl FnOnce() -> Result<(), Failure>) -> HurrayStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => HURRAY_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure);
            failure.status
        }
        Err(panic) => {
            let failure = Failure::new(
                HURRAY_ERR_PANIC,
                format!("internal error (panic): {}", panic_message(&*panic)),
            );
            set_last_error(&failure);
            HURRAY_ERR_PANIC
        }
    }
}

/// A field of the calling thread's last error, or NULL if none failed yet.
fn last_error_field(field: fn(&LastError) -> &CString) -> *const c_char {
    catch_unwind(|| {
        LAST_ERROR.with(|l| {
            l.borrow()
                .as_ref()
                .map_or(std::ptr::null(), |e| field(e).as_ptr())
        })
    })
    .unwrap_or(std::ptr::null())
}

/// The message of the calling thread's last failed call, or NULL if none
/// failed yet. Valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_last_error_message() -> *const c_char {
    last_error_field(|e| &e.message)
}

/// The kind of the calling thread's last error: the runtime's error variant
/// (`BadMagic`, `BufferLength`, `InvalidSparseIndex`, `NotFound`, ...) or
/// `NullArgument`, `OutOfRange`, `InvalidArgument`, `Panic`. NULL if none.
/// Valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_last_error_kind() -> *const c_char {
    last_error_field(|e| &e.kind)
}

/// A static name for a status value (`"HURRAY_ERR_NOT_FOUND"`), or
/// `"HURRAY_ERR_UNKNOWN"` for a value that is no status; never NULL. Takes an
/// `int` so that any value a C caller passes is defined behaviour.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_status_name(status: i32) -> *const c_char {
    const ALL: [HurrayStatus; 11] = [
        HURRAY_OK,
        HURRAY_ERR_NULL_ARGUMENT,
        HURRAY_ERR_INVALID_ARGUMENT,
        HURRAY_ERR_IO,
        HURRAY_ERR_INVALID_FILE,
        HURRAY_ERR_NOT_FOUND,
        HURRAY_ERR_UNSUPPORTED,
        HURRAY_ERR_NO_DATA,
        HURRAY_ERR_OUT_OF_RANGE,
        HURRAY_ERR_WRITER_FAILED,
        HURRAY_ERR_PANIC,
    ];
    let Some(status) = ALL.into_iter().find(|s| *s as i32 == status) else {
        return c"HURRAY_ERR_UNKNOWN".as_ptr();
    };
    let s: &'static CStr = match status {
        HURRAY_OK => c"HURRAY_OK",
        HURRAY_ERR_NULL_ARGUMENT => c"HURRAY_ERR_NULL_ARGUMENT",
        HURRAY_ERR_INVALID_ARGUMENT => c"HURRAY_ERR_INVALID_ARGUMENT",
        HURRAY_ERR_IO => c"HURRAY_ERR_IO",
        HURRAY_ERR_INVALID_FILE => c"HURRAY_ERR_INVALID_FILE",
        HURRAY_ERR_NOT_FOUND => c"HURRAY_ERR_NOT_FOUND",
        HURRAY_ERR_UNSUPPORTED => c"HURRAY_ERR_UNSUPPORTED",
        HURRAY_ERR_NO_DATA => c"HURRAY_ERR_NO_DATA",
        HURRAY_ERR_OUT_OF_RANGE => c"HURRAY_ERR_OUT_OF_RANGE",
        HURRAY_ERR_WRITER_FAILED => c"HURRAY_ERR_WRITER_FAILED",
        HURRAY_ERR_PANIC => c"HURRAY_ERR_PANIC",
    };
    s.as_ptr()
}

// ------------------------------------------------------------ arguments --

/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for this call.
unsafe fn arg_str<'a>(p: *const c_char, name: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| {
        Failure::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("argument `{name}` is not valid UTF-8"),
        )
    })
}

/// # Safety
/// `p` is NULL or a pointer this library returned that is still live.
unsafe fn arg_ref<'a, T>(p: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller passes NULL or a live handle of ours.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(name))
}

/// # Safety
/// `p` is NULL or valid for a write of one `T`.
unsafe fn put<T>(p: *mut T, name: &str, value: T) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises it is writable.
    unsafe { p.write(value) };
    Ok(())
}

fn check_out<T>(p: *mut T, name: &str) -> Result<(), Failure> {
    if p.is_null() {
        Err(Failure::null(name))
    } else {
        Ok(())
    }
}

/// Frees a handle (NULL is ignored); a panic in its destructor is caught.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` and is given up by the caller.
unsafe fn free_handle<T>(p: *mut T) {
    if !p.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: from `Box::into_raw` and given up (this fn's contract).
            drop(unsafe { Box::from_raw(p) });
        }));
    }
}

// ----------------------------------------------------------------- files --

/// An open, verified Hurray file (opaque). Thread-safe: any number of
/// threads may use one handle at once. Free with [`hurray_file_close`].
#[allow(missing_debug_implementations)] // opaque to C; nothing to show
pub struct HurrayFile {
    file: Arc<File>,
    /// Tensor handles, built in one pass on first use (O(tensors), not O(data)).
    tensors: OnceLock<Box<[HurrayTensor]>>,
}

/// One tensor of an open file (opaque), borrowed from its [`HurrayFile`]:
/// valid until that file is closed. Thread-safe.
#[allow(missing_debug_implementations)] // opaque to C
pub struct HurrayTensor {
    file: Arc<File>,
    /// The name followed by a NUL (names may contain NUL bytes: use the length).
    name: Vec<u8>,
    element_type: ElementType,
    dims: Box<[u64]>,
    strides: Box<[i64]>,
    layout: HurrayLayout,
    descriptor_only: bool,
    quantization: Option<HurrayQuantization>,
    /// (nnz, index type wire value, COO canonical) of a sparse layout.
    sparse: Option<(u64, u8, bool)>,
    byte_length: u64,
    element_count: Option<u64>,
    /// (role, offset in the file, length) of every buffer, in on-wire order:
    /// the layout's buffers, then scales and zero points.
    buffers: Vec<(&'static CStr, usize, usize)>,
}

impl HurrayTensor {
    fn new(file: &Arc<File>, t: &TensorRef<'_>) -> Self {
        let base = file.bytes().as_ptr() as usize;
        let offset = |b: &[u8]| {
            if b.is_empty() {
                0
            } else {
                b.as_ptr() as usize - base
            }
        };
        let buffers: Vec<_> = t
            .buffers()
            .into_iter()
            .map(|(role, b)| (role.c_name(), offset(b), b.len()))
            .collect();
        let quantization = t.quantization().map(|q| {
            let (scheme, axis, block_size) = match q.scheme {
                QuantizationScheme::PerTensor => (HURRAY_QUANT_PER_TENSOR, 0, 0),
                QuantizationScheme::PerAxis { axis } => (HURRAY_QUANT_PER_AXIS, axis, 0),
                QuantizationScheme::PerBlock { axis, block_size } => {
                    (HURRAY_QUANT_PER_BLOCK, axis, block_size)
                }
            };
            HurrayQuantization {
                scheme,
                axis,
                block_size,
                expressed_type: q.expressed_type.to_wire(),
                scale_type: q.scale_type.to_wire(),
                zero_point_type: q.zero_point_type.map_or(0, ElementType::to_wire),
                storage_min: q.storage_min,
                storage_max: q.storage_max,
            }
        });
        let sparse = match t.layout() {
            Layout::Coo {
                nnz,
                index_type,
                canonical,
            } => Some((nnz, index_type.to_wire(), canonical)),
            Layout::Csr { nnz, index_type } | Layout::Csc { nnz, index_type } => {
                Some((nnz, index_type.to_wire(), false))
            }
            _ => None,
        };
        let (layout, strides) = match t.layout() {
            Layout::Dense => (HURRAY_LAYOUT_DENSE, Vec::new()),
            Layout::Strided(s) => (HURRAY_LAYOUT_STRIDED, s),
            Layout::Coo { .. } => (HURRAY_LAYOUT_COO, Vec::new()),
            Layout::Csr { .. } => (HURRAY_LAYOUT_CSR, Vec::new()),
            Layout::Csc { .. } => (HURRAY_LAYOUT_CSC, Vec::new()),
        };
        let mut name = t.name().as_bytes().to_vec();
        name.push(0);
        HurrayTensor {
            file: file.clone(),
            name,
            element_type: t.element_type(),
            dims: t.shape().to_wire().into_boxed_slice(),
            strides: strides.into_boxed_slice(),
            layout,
            descriptor_only: t.is_descriptor_only(),
            quantization,
            sparse,
            byte_length: t.byte_length(),
            element_count: t.element_count(),
            buffers,
        }
    }

    fn name(&self) -> &str {
        // The bytes came from a `&str` with one NUL appended.
        std::str::from_utf8(&self.name[..self.name.len() - 1]).unwrap_or("")
    }

    fn tensor_ref(&self) -> Result<TensorRef<'_>, Failure> {
        self.file
            .tensor(self.name())
            .map_err(|e| Failure::from_error(&e, Context::View))
    }

    fn slice(&self, offset: usize, len: usize) -> (*const c_void, usize) {
        if len == 0 {
            // ADR-007: a zero-length buffer is NULL with length 0.
            (std::ptr::null(), 0)
        } else {
            (self.file.bytes()[offset..offset + len].as_ptr().cast(), len)
        }
    }
}

impl HurrayFile {
    /// A new handle (freed by [`hurray_file_close`]) for a file just opened,
    /// or the failure to open it.
    fn new_handle(opened: Result<File, Error>) -> Result<*mut HurrayFile, Failure> {
        let file = opened.map_err(|e| Failure::from_error(&e, Context::Open))?;
        Ok(Box::into_raw(Box::new(HurrayFile {
            file: Arc::new(file),
            tensors: OnceLock::new(),
        })))
    }

    fn tensors(&self) -> &[HurrayTensor] {
        self.tensors.get_or_init(|| {
            self.file
                .tensors()
                .map(|t| HurrayTensor::new(&self.file, &t))
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

/// # Safety
/// The out pointers are NULL or writable.
unsafe fn metadata_out(
    entry: Option<(&str, &str)>,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> Result<(), Failure> {
    check_out(key, "key")?;
    check_out(key_len, "key_len")?;
    check_out(value, "value")?;
    check_out(value_len, "value_len")?;
    let (k, v) = entry.ok_or_else(|| {
        Failure::new(
            HURRAY_ERR_OUT_OF_RANGE,
            format!("metadata index {index} out of range"),
        )
    })?;
    // SAFETY: checked non-null; the caller promises these are writable.
    unsafe { put(key, "key", k.as_ptr().cast()) }?;
    // SAFETY: as above.
    unsafe { put(key_len, "key_len", k.len()) }?;
    // SAFETY: as above.
    unsafe { put(value, "value", v.as_ptr().cast()) }?;
    // SAFETY: as above.
    unsafe { put(value_len, "value_len", v.len()) }
}

// --------------------------------------------------------------- tensors --

/// Runs `f` on a tensor handle.
fn with_tensor(
    t: *const HurrayTensor,
    f: impl FnOnce(&HurrayTensor) -> Result<(), Failure>,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: the C caller passes NULL or a live tensor handle.
        let t = unsafe { arg_ref(t, "tensor") }?;
        f(t)
    })
}

/// The tensor's name: `*name` is NUL-terminated and `*len` its length in
/// bytes (UTF-8; a name may itself contain NUL bytes, hence the length).
/// Valid until the file is closed.
///
/// # Safety
/// `tensor` is a live handle; `name` is writable; `len` is writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_name(
    tensor: *const HurrayTensor,
    name: *mut *const c_char,
    len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        // SAFETY: caller contract.
        unsafe { put(name, "name", t.name.as_ptr().cast()) }?;
        if !len.is_null() {
            // SAFETY: non-null and writable (caller contract).
            unsafe { len.write(t.name.len() - 1) };
        }
        Ok(())
    })
}

/// The stored element type as its schema wire value (see [`hurray_dtype_name`]).
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_dtype(
    tensor: *const HurrayTensor,
    out: *mut u8,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe {
        put(out, "out", t.element_type.to_wire())
    })
}

/// The rank (number of dimensions; 0 for a scalar).
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_rank(
    tensor: *const HurrayTensor,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.dims.len()) })
}

/// The dimensions: `*dims` points at `rank` values owned by the handle (not
/// NULL, even for rank 0). A dynamic dimension is [`HURRAY_DYNAMIC_DIM`]; 0 is
/// a resolved empty dimension.
///
/// # Safety
/// `tensor` is a live handle; `dims` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_dims(
    tensor: *const HurrayTensor,
    dims: *mut *const u64,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(dims, "dims", t.dims.as_ptr()) })
}

/// The number of elements; `*known` is false (and `*out` 0) when a
/// dimension is dynamic.
///
/// # Safety
/// `tensor` is a live handle; `out` and `known` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_element_count(
    tensor: *const HurrayTensor,
    out: *mut u64,
    known: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        // SAFETY: caller contract.
        unsafe { put(known, "known", t.element_count.is_some()) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(t.element_count.unwrap_or(0)) };
        Ok(())
    })
}

/// The layout.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_layout(
    tensor: *const HurrayTensor,
    out: *mut HurrayLayout,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.layout) })
}

/// A static name for a layout (`"dense"`, `"strided"`, `"coo"`, `"csr"`,
/// `"csc"`); NULL for a value that is not a layout.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_layout_name(layout: u32) -> *const c_char {
    let s: &'static CStr = match layout {
        0 => c"dense",
        1 => c"strided",
        2 => c"coo",
        3 => c"csr",
        4 => c"csc",
        _ => return std::ptr::null(),
    };
    s.as_ptr()
}

/// The strides in elements of a strided tensor (`*strides` points at `rank`
/// values). For any other layout `*strides` is NULL: dense is row-major.
///
/// # Safety
/// `tensor` is a live handle; `strides` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_strides(
    tensor: *const HurrayTensor,
    strides: *mut *const i64,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        let p = if t.layout == HURRAY_LAYOUT_STRIDED {
            t.strides.as_ptr()
        } else {
            std::ptr::null()
        };
        // SAFETY: caller contract.
        unsafe { put(strides, "strides", p) }
    })
}

/// Whether the tensor is descriptor-only (carries no data at all; distinct
/// from an empty tensor, whose buffers are present with 0 bytes).
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_descriptor_only(
    tensor: *const HurrayTensor,
    out: *mut bool,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.descriptor_only) })
}

/// Whether the tensor carries a quantization descriptor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_quantized(
    tensor: *const HurrayTensor,
    out: *mut bool,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe {
        put(out, "out", t.quantization.is_some())
    })
}

/// The quantization descriptor; `*present` is false (and `*out` untouched)
/// for a tensor that is not quantized.
///
/// # Safety
/// `tensor` is a live handle; `out` and `present` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_quantization(
    tensor: *const HurrayTensor,
    out: *mut HurrayQuantization,
    present: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        // SAFETY: caller contract.
        unsafe { put(present, "present", t.quantization.is_some()) }?;
        if let Some(q) = t.quantization {
            // SAFETY: checked non-null; caller contract.
            unsafe { put(out, "out", q) }?;
        }
        Ok(())
    })
}

/// The parameters of a sparse layout: the number of stored values, the
/// index (and pointer) element type as a wire value (i32 or i64), and, for
/// COO, whether the coordinates are canonical (sorted, unique; false for
/// CSR/CSC). `HURRAY_ERR_UNSUPPORTED` for a dense or strided tensor.
///
/// # Safety
/// `tensor` is a live handle; `nnz` and `index_type` are writable;
/// `canonical` is writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_sparse(
    tensor: *const HurrayTensor,
    nnz: *mut u64,
    index_type: *mut u8,
    canonical: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(nnz, "nnz")?;
        check_out(index_type, "index_type")?;
        let (n, it, c) = t.sparse.ok_or_else(|| Failure {
            status: HURRAY_ERR_UNSUPPORTED,
            kind: "LayoutMismatch".to_owned(),
            message: format!("tensor {:?} is not sparse", t.name()),
        })?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(nnz, "nnz", n) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(index_type, "index_type", it) }?;
        if !canonical.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { put(canonical, "canonical", c) }?;
        }
        Ok(())
    })
}

/// Total bytes of the tensor's buffers (layout buffers, scales, zero points);
/// 0 for an empty or descriptor-only tensor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_byte_length(
    tensor: *const HurrayTensor,
    out: *mut u64,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.byte_length) })
}

/// The dense (or strided) values: `*data` points into the file (read-only,
/// valid until close) and `*len` is its byte length. An empty tensor gives
/// NULL and 0 (ADR-007). Sparse layouts give `HURRAY_ERR_UNSUPPORTED` (use
/// [`hurray_tensor_buffer_at`]); descriptor-only tensors `HURRAY_ERR_NO_DATA`.
///
/// # Safety
/// `tensor` is a live handle; `data` and `len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_data(
    tensor: *const HurrayTensor,
    data: *mut *const c_void,
    len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(data, "data")?;
        check_out(len, "len")?;
        let r = t.tensor_ref()?;
        let bytes = r
            .data()
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        let (p, n) = if bytes.is_empty() {
            (std::ptr::null(), 0)
        } else {
            (bytes.as_ptr().cast::<c_void>(), bytes.len())
        };
        // SAFETY: checked non-null; caller contract.
        unsafe { put(data, "data", p) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(len, "len", n) }
    })
}

/// The number of buffers: the layout's (values; indices and values;
/// pointers, indices and values), then scales and zero points if quantized;
/// 0 for a descriptor-only tensor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_buffer_count(
    tensor: *const HurrayTensor,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.buffers.len()) })
}

/// Buffer `index`: its role (static NUL-terminated string: `values`,
/// `indices`, `pointers`, `scales`, `zero_points`), data and length. A
/// zero-length buffer gives NULL and 0 (ADR-007). The bytes are read-only
/// and valid until close. Sparse index data is not checked here: call
/// [`hurray_tensor_check`] first.
///
/// # Safety
/// `tensor` is a live handle; `role` is writable or NULL; `data` and `len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_buffer_at(
    tensor: *const HurrayTensor,
    index: usize,
    role: *mut *const c_char,
    data: *mut *const c_void,
    len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(data, "data")?;
        check_out(len, "len")?;
        let &(r, offset, n) = t
            .buffers
            .get(index)
            .ok_or_else(|| Failure::index_out_of_range("buffer", index, t.buffers.len()))?;
        let (p, n) = t.slice(offset, n);
        if !role.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { put(role, "role", r.as_ptr()) }?;
        }
        // SAFETY: checked non-null; caller contract.
        unsafe { put(data, "data", p) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(len, "len", n) }
    })
}

/// Checks what opening does not: the index data of a sparse tensor
/// (COO coordinates in range; CSR/CSC pointers start at 0, never decrease,
/// end at nnz; indices in range). `HURRAY_OK` for dense tensors, empty
/// ones and descriptor-only ones; `HURRAY_ERR_INVALID_FILE` otherwise.
///
/// # Safety
/// `tensor` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_check(tensor: *const HurrayTensor) -> HurrayStatus {
    with_tensor(tensor, |t| {
        if t.descriptor_only {
            return Ok(());
        }
        let r = t.tensor_ref()?;
        let err = |e: Error| Failure::from_error(&e, Context::View);
        match t.layout {
            HURRAY_LAYOUT_COO => r.coo().map(|_| ()).map_err(err),
            HURRAY_LAYOUT_CSR => r.csr().map(|_| ()).map_err(err),
            HURRAY_LAYOUT_CSC => r.csc().map(|_| ()).map_err(err),
            _ => Ok(()),
        }
    })
}

/// The number of metadata entries of the tensor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_metadata_count(
    tensor: *const HurrayTensor,
    out: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        let n = t.tensor_ref()?.metadata().count();
        // SAFETY: caller contract.
        unsafe { put(out, "out", n) }
    })
}

/// Tensor metadata entry `index` (sorted by key); as [`hurray_file_metadata_at`].
///
/// # Safety
/// `tensor` is a live handle; the four out pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_metadata_at(
    tensor: *const HurrayTensor,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        let entry = t.tensor_ref()?.metadata().nth(index);
        // SAFETY: caller contract for the out pointers.
        unsafe { metadata_out(entry, index, key, key_len, value, value_len) }
    })
}

/// Exports the tensor as a DLPack 1.1 `DLManagedTensorVersioned` (CPU,
/// read-only flag set, packed sub-byte types, NULL data for an empty
/// tensor). The export keeps the file's bytes alive until the consumer
/// calls `(*out)->deleter(*out)` — exactly once — even after
/// [`hurray_file_close`]. Dense and strided tensors with data only:
/// sparse and quantized tensors give `HURRAY_ERR_UNSUPPORTED`,
/// descriptor-only ones `HURRAY_ERR_NO_DATA`.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_to_dlpack(
    tensor: *const HurrayTensor,
    out: *mut *mut DLManagedTensorVersioned,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        let m = ManagedTensor::by_name(t.file.clone(), t.name())
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(m.into_raw()) };
        Ok(())
    })
}

// ----------------------------------------------------------------- dtypes --

/// The canonical short name of an element type wire value (`"f32"`, `"i4"`,
/// `"bf16"`, ...), static; NULL for a value that is no element type.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_dtype_name(dtype: u8) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        ElementType::ALL
            .iter()
            .map(|t| CString::new(t.name()).unwrap_or_default())
            .collect()
    });
    catch_unwind(|| {
        ElementType::ALL
            .iter()
            .position(|t| t.to_wire() == dtype)
            .map_or(std::ptr::null(), |i| names[i].as_ptr())
    })
    .unwrap_or(std::ptr::null())
}

/// The wire value of the element type named `name` (`"f32"`, `"u4"`, ...).
///
/// # Safety
/// `name` is NUL-terminated; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_dtype_from_name(name: *const c_char, out: *mut u8) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let name = unsafe { arg_str(name, "name") }?;
        let t = ElementType::from_name(name).ok_or_else(|| {
            Failure::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("{name:?} is not an element type name"),
            )
        })?;
        // SAFETY: caller contract.
        unsafe { put(out, "out", t.to_wire()) }
    })
}

/// The storage width in bits of one element of `dtype`; 0 if it is no element type.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_dtype_bits(dtype: u8) -> u32 {
    ElementType::from_wire(dtype).map_or(0, ElementType::bits)
}

// ---------------------------------------------------------------- writer --

/// A file being written (opaque). Not thread-safe: one thread at a time.
/// Nothing appears at the destination until [`hurray_writer_finish`]
/// succeeds. Always end it with `hurray_writer_finish` or `hurray_writer_abort`.
#[derive(Debug)]
pub struct HurrayWriter {
    writer: Writer<std::fs::File>,
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
unsafe fn writer_mut<'a>(w: *mut HurrayWriter) -> Result<&'a mut HurrayWriter, Failure> {
    // SAFETY: caller contract.
    unsafe { w.as_mut() }.ok_or_else(|| Failure::null("writer"))
}

/// # Safety
/// `dims` points at `rank` values (or is NULL with rank 0).
unsafe fn shape_arg(dims: *const u64, rank: usize) -> Result<Vec<Dim>, Failure> {
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

fn dtype_arg(dtype: u8) -> Result<ElementType, Failure> {
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
unsafe fn tensor_args<'a>(
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
    fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<(), Failure> {
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
/// may be [`HURRAY_DYNAMIC_DIM`].
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

/// The library version, static (`"0.1.0"`).
#[unsafe(no_mangle)]
pub extern "C" fn hurray_version() -> *const c_char {
    static V: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"unknown",
        };
    V.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dlpack_constants_match_the_runtime() {
        use hurray::dlpack as d;
        assert_eq!(
            HURRAY_DLPACK_FLAG_READ_ONLY,
            d::DLPACK_FLAG_BITMASK_READ_ONLY
        );
        assert_eq!(
            HURRAY_DLPACK_FLAG_SUBBYTE_PADDED,
            d::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
        );
        assert_eq!(HURRAY_DLPACK_MAJOR_VERSION, d::DLPACK_MAJOR_VERSION);
        assert_eq!(HURRAY_DLPACK_MINOR_VERSION, d::DLPACK_MINOR_VERSION);
        assert_eq!(HURRAY_DLPACK_CPU, d::KDL_CPU);
    }

    #[test]
    fn error_kind_is_the_variant_name() {
        let e = Error::NotFound { name: "x".into() };
        assert_eq!(error_kind(&e), "NotFound");
        let e = Error::BadMagic { found: [0; 8] };
        assert_eq!(error_kind(&e), "BadMagic");
    }

    #[test]
    fn null_arguments_are_refused_without_panic() {
        // SAFETY: NULL is a permitted argument.
        let s = unsafe { hurray_file_open(std::ptr::null(), std::ptr::null_mut()) };
        assert_eq!(s, HURRAY_ERR_NULL_ARGUMENT);
        let mut n = 0usize;
        // SAFETY: NULL file handle is permitted; `n` is writable.
        let s = unsafe { hurray_file_count(std::ptr::null(), &mut n) };
        assert_eq!(s, HURRAY_ERR_NULL_ARGUMENT);
        // SAFETY: NULL is permitted.
        let s = unsafe { hurray_tensor_check(std::ptr::null()) };
        assert_eq!(s, HURRAY_ERR_NULL_ARGUMENT);
        assert!(!hurray_last_error_message().is_null());
    }

    #[test]
    fn panics_become_a_status() {
        let s = guard(|| panic!("boom"));
        assert_eq!(s, HURRAY_ERR_PANIC);
        // SAFETY: the message is a live NUL-terminated string of this thread.
        let m = unsafe { CStr::from_ptr(hurray_last_error_message()) };
        assert!(m.to_str().unwrap().contains("boom"));
    }

    #[test]
    fn dtype_names_round_trip() {
        for t in ElementType::ALL {
            // SAFETY: static NUL-terminated name.
            let name = unsafe { CStr::from_ptr(hurray_dtype_name(t.to_wire())) };
            assert_eq!(name.to_str().unwrap(), t.name());
            let mut code = 0u8;
            // SAFETY: valid string and out pointer.
            let s = unsafe { hurray_dtype_from_name(name.as_ptr(), &mut code) };
            assert_eq!(s, HURRAY_OK);
            assert_eq!(code, t.to_wire());
            assert_eq!(hurray_dtype_bits(code), t.bits());
        }
        assert!(hurray_dtype_name(0).is_null());
    }
}
