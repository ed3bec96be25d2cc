//! Slices: `hurray_tensor_read_slice` and the `HurraySlice` it returns
//! (also returned by `hurray_sharded_read_slice`).

use crate::args::*;
use crate::status::*;
use crate::tensor::*;
use hurray::{
    ElementType,
    slice::{SliceData, SliceRange},
};
use std::ffi::c_void;

/// The values of a slice, copied out of a file (opaque): dense, row-major,
/// in the tensor's stored encoding (sub-byte types packed LSB-first from
/// the slice's first element, bools one bit each). Owned by the caller:
/// free it with [`hurray_slice_free`]. It does not depend on the file or
/// checkpoint it came from, which may be closed first. Thread-safe to read.
#[derive(Debug)]
pub struct HurraySlice {
    element_type: ElementType,
    dims: Box<[u64]>,
    bytes: Vec<u8>,
}

impl HurraySlice {
    /// A new handle (freed by [`hurray_slice_free`]) for `data`.
    pub(crate) fn new_handle(data: SliceData) -> *mut HurraySlice {
        Box::into_raw(Box::new(HurraySlice {
            element_type: data.element_type,
            dims: data.shape.into_boxed_slice(),
            bytes: data.bytes,
        }))
    }
}

/// The ranges of a slice from the C arrays: `starts[i]:stops[i]:steps[i]`
/// for each of `rank` dimensions, `steps` NULL for steps of 1. Whether they
/// fit the tensor is the runtime's to say.
///
/// # Safety
/// `starts` and `stops` (and `steps` unless NULL) point at `rank` values, or
/// are NULL with `rank` 0.
pub(crate) unsafe fn ranges_arg(
    starts: *const u64,
    stops: *const u64,
    steps: *const u64,
    rank: usize,
) -> Result<Vec<SliceRange>, Failure> {
    if rank == 0 {
        return Ok(Vec::new());
    }
    let array = |p: *const u64, name: &str| -> Result<&[u64], Failure> {
        if p.is_null() {
            return Err(Failure::null(name));
        }
        // SAFETY: non-null with `rank` readable values (this fn's contract).
        Ok(unsafe { std::slice::from_raw_parts(p, rank) })
    };
    let starts = array(starts, "starts")?;
    let stops = array(stops, "stops")?;
    let steps = if steps.is_null() {
        None
    } else {
        Some(array(steps, "steps")?)
    };
    Ok((0..rank)
        .map(|i| SliceRange::new(starts[i], stops[i], steps.map_or(1, |s| s[i])))
        .collect())
}

/// Reads `tensor[starts[0]:stops[0]:steps[0], ...]` (one range per
/// dimension, `rank` of them; `steps` NULL means steps of 1) into a new
/// [`HurraySlice`], touching only the bytes the slice covers. Python's
/// `start:stop:step` with `0 <= start <= stop <= size` and `step >= 1`; an
/// index `i` is `i:i+1` (the rank is kept). Ranges that do not fit give
/// `HURRAY_ERR_INVALID_SLICE` naming the dimension; sparse tensors
/// `HURRAY_ERR_UNSUPPORTED`; descriptor-only ones `HURRAY_ERR_NO_DATA`.
/// Quantized tensors give their stored values.
///
/// # Safety
/// `tensor` is a live handle; `starts`, `stops` (and `steps` unless NULL)
/// point at `rank` values (may be NULL when `rank` is 0); `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_read_slice(
    tensor: *const HurrayTensor,
    starts: *const u64,
    stops: *const u64,
    steps: *const u64,
    rank: usize,
    out: *mut *mut HurraySlice,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        // SAFETY: this fn's contract.
        let ranges = unsafe { ranges_arg(starts, stops, steps, rank) }?;
        let data = t
            .data_ref()?
            .read_slice(&ranges)
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { out.write(HurraySlice::new_handle(data)) };
        Ok(())
    })
}

/// Runs `f` on a slice handle.
fn with_slice(
    h: *const HurraySlice,
    f: impl FnOnce(&HurraySlice) -> Result<(), Failure>,
) -> HurrayStatus {
    with_handle(h, "slice", f)
}

/// The slice's element type as its schema wire value (the tensor's).
///
/// # Safety
/// `slice` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_slice_dtype(
    slice: *const HurraySlice,
    out: *mut u8,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_slice(slice, |s| unsafe {
        put(out, "out", s.element_type.to_wire())
    })
}

/// The slice's rank: the tensor's (an index keeps its dimension, of size 1).
///
/// # Safety
/// `slice` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_slice_rank(
    slice: *const HurraySlice,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_slice(slice, |s| unsafe { put(out, "out", s.dims.len()) })
}

/// The slice's dimensions: `*dims` points at `rank` values owned by the
/// slice (not NULL, even for rank 0); dimension `i` holds the number of
/// indices range `i` selects.
///
/// # Safety
/// `slice` is a live handle; `dims` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_slice_dims(
    slice: *const HurraySlice,
    dims: *mut *const u64,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_slice(slice, |s| unsafe { put(dims, "dims", s.dims.as_ptr()) })
}

/// The slice's values: `*data` points at `*len` bytes owned by the slice
/// (valid until [`hurray_slice_free`]), dense and row-major; sub-byte types
/// packed LSB-first, `ceil(elements × bits / 8)` bytes. An empty slice gives
/// NULL and 0 (ADR-007).
///
/// # Safety
/// `slice` is a live handle; `data` and `len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_slice_data(
    slice: *const HurraySlice,
    data: *mut *const c_void,
    len: *mut usize,
) -> HurrayStatus {
    with_slice(slice, |s| {
        check_out(data, "data")?;
        check_out(len, "len")?;
        let p = if s.bytes.is_empty() {
            std::ptr::null()
        } else {
            s.bytes.as_ptr().cast::<c_void>()
        };
        // SAFETY: checked non-null; caller contract.
        unsafe { put(data, "data", p) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(len, "len", s.bytes.len()) }
    })
}

/// Frees a slice (NULL is ignored).
///
/// # Safety
/// `slice` is NULL or a handle from `hurray_*_read_slice`, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_slice_free(slice: *mut HurraySlice) {
    // SAFETY: NULL or a handle from `Box::into_raw` in `new_handle`, given
    // up by the caller.
    unsafe { free_handle(slice) }
}
