//! The C API of Hurray. The header `include/hurray.h` is generated from this
//! crate by cbindgen (`cargo xtask cbindgen`; a test fails when it is stale).
//! `docs/impl/c-ffi.md` is the user's guide: ownership, lifetimes, threads,
//! the zero-length/NULL rules of ADR-007, errors and DLPack.
//!
//! Every entry point checks its pointers, never lets a panic cross the
//! boundary (a panic becomes [`HurrayStatus::HURRAY_ERR_PANIC`]) and records
//! a message for [`hurray_last_error_message`] on failure.

// One module per concern; every C entry point is `#[unsafe(no_mangle)]` in one of them.
mod args;
mod dlpack;
mod dtype;
mod file;
mod sharded;
mod slice;
mod status;
mod tensor;
mod writer;

pub use dlpack::*;
pub use dtype::*;
pub use file::*;
pub use sharded::*;
pub use slice::*;
pub use status::*;
pub use tensor::*;
pub use writer::*;

use std::ffi::{CStr, c_char};

/// The shape value of a dynamic (unresolved) dimension. Never the same as 0,
/// a resolved empty dimension (ADR-007 section 5).
pub const HURRAY_DYNAMIC_DIM: u64 = u64::MAX;
const _: () = assert!(HURRAY_DYNAMIC_DIM == hurray::format::DYNAMIC_DIM);

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
    use HurrayStatus::*;
    use hurray::ElementType;
    use std::ffi::CStr;

    #[test]
    fn layout_values_are_the_runtimes_ordinals_and_names() {
        let layouts = [
            (hurray::Layout::Dense, HurrayLayout::HURRAY_LAYOUT_DENSE),
            (
                hurray::Layout::Strided(vec![1]),
                HurrayLayout::HURRAY_LAYOUT_STRIDED,
            ),
            (
                hurray::Layout::Coo {
                    nnz: 0,
                    index_type: ElementType::Int64,
                    canonical: true,
                },
                HurrayLayout::HURRAY_LAYOUT_COO,
            ),
            (
                hurray::Layout::Csr {
                    nnz: 0,
                    index_type: ElementType::Int64,
                },
                HurrayLayout::HURRAY_LAYOUT_CSR,
            ),
            (
                hurray::Layout::Csc {
                    nnz: 0,
                    index_type: ElementType::Int64,
                },
                HurrayLayout::HURRAY_LAYOUT_CSC,
            ),
        ];
        for (layout, c) in layouts {
            assert_eq!(layout.ordinal(), c as usize);
            // SAFETY: a non-null result is a NUL-terminated static string.
            let name = unsafe { CStr::from_ptr(tensor::hurray_layout_name(c as u32)) };
            assert_eq!(name.to_str(), Ok(layout.name()));
        }
        assert!(tensor::hurray_layout_name(5).is_null());
        assert!(tensor::hurray_layout_name(u32::MAX).is_null());
    }

    #[test]
    fn error_kinds_are_the_runtimes_variant_names() {
        // A failure from the runtime reaches C with `Error::kind` (strum), which
        // is what `hurray_last_error_kind` returns.
        let e = hurray::Error::NotFound { name: "x".into() };
        let f = status::Failure::from_error(&e, status::Context::View);
        assert_eq!(f.kind, "NotFound");
        assert_eq!(f.status, HurrayStatus::HURRAY_ERR_NOT_FOUND);
    }

    #[test]
    fn a_checksum_mismatch_has_its_own_status() {
        let e = hurray::Error::ChecksumMismatch {
            tensor: "w".into(),
            buffer: "values",
            algorithm: "crc32c",
            expected: 1,
            found: 2,
        };
        for context in [status::Context::View, status::Context::Open] {
            let f = status::Failure::from_error(&e, context);
            assert_eq!(f.status, HURRAY_ERR_CHECKSUM_MISMATCH);
            assert_eq!(f.kind, "ChecksumMismatch");
            assert!(f.message.contains("\"w\"") && f.message.contains("values"));
        }
        // SAFETY: static NUL-terminated name.
        let name =
            unsafe { CStr::from_ptr(hurray_status_name(HURRAY_ERR_CHECKSUM_MISMATCH as i32)) };
        assert_eq!(name.to_str().unwrap(), "HURRAY_ERR_CHECKSUM_MISMATCH");
    }

    #[test]
    fn slice_and_sharded_errors_have_their_own_statuses() {
        let invalid_slice = hurray::Error::InvalidSlice {
            tensor: "w".into(),
            dim: 1,
            range: "0:9".into(),
            reason: "needs start <= stop <= the dimension's size",
        };
        let chunked = hurray::Error::Chunked {
            tensor: "w".into(),
            pieces: 3,
        };
        let member = hurray::Error::MemberMismatch {
            member: "rank-1.hurray".into(),
            field: "crc32c",
            expected: "0x00000001".into(),
            found: "0x00000002".into(),
        };
        for (e, status, name) in [
            (
                &invalid_slice,
                HURRAY_ERR_INVALID_SLICE,
                "HURRAY_ERR_INVALID_SLICE",
            ),
            (&chunked, HURRAY_ERR_CHUNKED, "HURRAY_ERR_CHUNKED"),
            (
                &member,
                HURRAY_ERR_MEMBER_MISMATCH,
                "HURRAY_ERR_MEMBER_MISMATCH",
            ),
        ] {
            for context in [status::Context::View, status::Context::Sharded] {
                let f = status::Failure::from_error(e, context);
                assert_eq!(f.status, status);
                assert_eq!(f.kind, e.kind());
            }
            // SAFETY: static NUL-terminated name.
            let got = unsafe { CStr::from_ptr(hurray_status_name(status as i32)) };
            assert_eq!(got.to_str().unwrap(), name);
        }
        // A member that fails verification when first read: an invalid file.
        let bad = hurray::Error::BadMagic { found: [0; 8] };
        let f = status::Failure::from_error(&bad, status::Context::Sharded);
        assert_eq!(f.status, HURRAY_ERR_INVALID_FILE);
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
