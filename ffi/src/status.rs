//! Statuses, the per-thread last error, and the guard every entry point
//! runs in: no panic crosses the boundary.

use crate::HurrayStatus::*;
use hurray::Error;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

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
    /// A buffer's bytes do not match the checksum the file records for it
    /// (`hurray_tensor_verify_checksum`).
    HURRAY_ERR_CHECKSUM_MISMATCH = 11,
    /// A slice's ranges do not fit the tensor: not one range per dimension,
    /// a step of 0, or not `start <= stop <= size` (`hurray_*_read_slice`).
    HURRAY_ERR_INVALID_SLICE = 12,
    /// A whole tensor was asked of a sharded tensor stored in pieces across
    /// member files: read it with `hurray_sharded_read_slice`.
    HURRAY_ERR_CHUNKED = 13,
    /// A member file of a sharded checkpoint is not what its index records
    /// (size, CRC-32C, or a piece's type and shape): replaced, truncated or
    /// corrupt.
    HURRAY_ERR_MEMBER_MISMATCH = 14,
    /// A file's signature does not verify: made with another key, changed,
    /// or signing another header than the file's (which was changed after
    /// it was signed); or the file records no digests to sign
    /// (`hurray_file_open_signed`). A buffer whose digest does not match is
    /// `HURRAY_ERR_CHECKSUM_MISMATCH`.
    HURRAY_ERR_SIGNATURE = 15,
}

pub(crate) struct LastError {
    pub(crate) message: CString,
    pub(crate) kind: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// A failure on its way to the C caller.
pub(crate) struct Failure {
    pub(crate) status: HurrayStatus,
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: HurrayStatus, message: impl Into<String>) -> Self {
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

    pub(crate) fn null(arg: &str) -> Self {
        Failure::new(
            HURRAY_ERR_NULL_ARGUMENT,
            format!("argument `{arg}` is NULL"),
        )
    }

    /// `index` of `what` (a tensor, a buffer) is not below `count`.
    pub(crate) fn index_out_of_range(what: &str, index: usize, count: usize) -> Self {
        Failure::new(
            HURRAY_ERR_OUT_OF_RANGE,
            format!("{what} index {index} >= count {count}"),
        )
    }

    pub(crate) fn from_error(e: &Error, context: Context) -> Self {
        let status = match (e, context) {
            (Error::ChecksumMismatch { .. } | Error::DigestMismatch { .. }, _) => {
                HURRAY_ERR_CHECKSUM_MISMATCH
            }
            (Error::MemberMismatch { .. }, _) => HURRAY_ERR_MEMBER_MISMATCH,
            (Error::Io { .. } | Error::Stream(_), _) => HURRAY_ERR_IO,
            (Error::WriterPoisoned { .. }, _) => HURRAY_ERR_WRITER_FAILED,
            (_, Context::Open) => HURRAY_ERR_INVALID_FILE,
            (_, Context::Write) => HURRAY_ERR_INVALID_ARGUMENT,
            (Error::InvalidSlice { .. }, _) => HURRAY_ERR_INVALID_SLICE,
            (Error::Chunked { .. }, _) => HURRAY_ERR_CHUNKED,
            (Error::NotFound { .. }, _) => HURRAY_ERR_NOT_FOUND,
            (Error::NoData { .. }, _) => HURRAY_ERR_NO_DATA,
            (Error::InvalidSparseIndex { .. }, _) => HURRAY_ERR_INVALID_FILE,
            // A member opened on first use that fails verification (or
            // holds a piece no slice can read) makes the checkpoint invalid.
            (_, Context::Sharded) => HURRAY_ERR_INVALID_FILE,
            _ => HURRAY_ERR_UNSUPPORTED,
        };
        Failure {
            status,
            kind: e.kind().to_owned(),
            message: e.to_string(),
        }
    }
}

impl Failure {
    /// A signing failure: the runtime's own as [`from_error`](Self::from_error)
    /// maps it, a key that is not one an invalid argument, the rest
    /// `HURRAY_ERR_SIGNATURE`.
    pub(crate) fn from_sign_error(e: &hurray_sign::Error) -> Self {
        let status = match e {
            hurray_sign::Error::Hurray(e) => return Failure::from_error(e, Context::Open),
            hurray_sign::Error::Key { .. } => HURRAY_ERR_INVALID_ARGUMENT,
            hurray_sign::Error::Io { .. } => HURRAY_ERR_IO,
            _ => HURRAY_ERR_SIGNATURE,
        };
        Failure {
            status,
            kind: e.kind().to_owned(),
            message: e.to_string(),
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Context {
    Open,
    View,
    Write,
    /// Reading a sharded checkpoint's tensors, which opens members lazily.
    Sharded,
}

pub(crate) fn set_last_error(f: &Failure) {
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

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Runs `f`, turning an error or a panic into a status and a last error.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> HurrayStatus {
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
pub(crate) fn last_error_field(field: fn(&LastError) -> &CString) -> *const c_char {
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
    const ALL: [HurrayStatus; 16] = [
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
        HURRAY_ERR_CHECKSUM_MISMATCH,
        HURRAY_ERR_INVALID_SLICE,
        HURRAY_ERR_CHUNKED,
        HURRAY_ERR_MEMBER_MISMATCH,
        HURRAY_ERR_SIGNATURE,
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
        HURRAY_ERR_CHECKSUM_MISMATCH => c"HURRAY_ERR_CHECKSUM_MISMATCH",
        HURRAY_ERR_INVALID_SLICE => c"HURRAY_ERR_INVALID_SLICE",
        HURRAY_ERR_CHUNKED => c"HURRAY_ERR_CHUNKED",
        HURRAY_ERR_MEMBER_MISMATCH => c"HURRAY_ERR_MEMBER_MISMATCH",
        HURRAY_ERR_SIGNATURE => c"HURRAY_ERR_SIGNATURE",
    };
    s.as_ptr()
}
