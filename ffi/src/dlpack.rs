//! DLPack export of a tensor, and the DLPack constants of the C API.

use crate::args::*;
use crate::status::*;
use crate::tensor::*;
use hurray::dlpack::{DLManagedTensorVersioned, ManagedTensor};

/// `DLPACK_FLAG_BITMASK_READ_ONLY` of `DLManagedTensorVersioned.flags`: the
/// consumer must not write (set on every export of the C API but bools,
/// whose export is a copy).
pub const HURRAY_DLPACK_FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the export is a copy the consumer owns
/// alone (bools: Hurray stores bits, DLPack consumers read one byte each).
pub const HURRAY_DLPACK_FLAG_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded to a byte
/// each. Never set by Hurray: its sub-byte data is packed, LSB-first.
pub const HURRAY_DLPACK_FLAG_SUBBYTE_PADDED: u64 = 1 << 2;
/// The DLPack version of the exported structs.
pub const HURRAY_DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack version of the exported structs.
pub const HURRAY_DLPACK_MINOR_VERSION: u32 = 1;
/// `DLDeviceType::kDLCPU`, the device of every Hurray export.
pub const HURRAY_DLPACK_CPU: i32 = 1;

// The C constants are literals (cbindgen writes them into the header); the
// runtime's DLPack module owns the values, and these fail the build if the
// two ever differ.
const _: () = {
    use hurray::dlpack as owner;
    assert!(HURRAY_DLPACK_FLAG_READ_ONLY == owner::DLPACK_FLAG_BITMASK_READ_ONLY);
    assert!(HURRAY_DLPACK_FLAG_IS_COPIED == owner::DLPACK_FLAG_BITMASK_IS_COPIED);
    assert!(HURRAY_DLPACK_FLAG_SUBBYTE_PADDED == owner::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    assert!(HURRAY_DLPACK_MAJOR_VERSION == owner::DLPACK_MAJOR_VERSION);
    assert!(HURRAY_DLPACK_MINOR_VERSION == owner::DLPACK_MINOR_VERSION);
    assert!(HURRAY_DLPACK_CPU == owner::KDL_CPU);
};

/// Exports the tensor as a DLPack 1.1 `DLManagedTensorVersioned` (CPU,
/// read-only flag set, packed sub-byte types, NULL data for an empty
/// tensor). Bools are the exception: every DLPack consumer reads one byte
/// per bool, so they leave as `{kDLBool, 8}`, an unpacked copy flagged
/// `HURRAY_DLPACK_FLAG_IS_COPIED` (and not read-only). The export keeps the file's bytes alive until the consumer
/// calls `(*out)->deleter(*out)` — exactly once — even after
/// `hurray_file_close`. Dense and strided tensors with data only:
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
        t.data_ref()?;
        let m = ManagedTensor::by_name(t.file.clone(), t.name())
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(m.into_raw()) };
        Ok(())
    })
}
