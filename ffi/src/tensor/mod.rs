//! Tensors of an open file: `hurray_tensor_*` and the C views of layouts
//! and quantization.

use crate::HurrayLayout::*;
use crate::HurrayStatus::*;
use crate::args::*;
use crate::status::*;
use hurray::{ElementType, File, Layout, TensorRef, descriptor::BufferRole};
use std::ffi::{CString, c_char, c_void};
use std::sync::{Arc, OnceLock};

mod buffers;
mod metadata;
mod quantization;

pub use buffers::{
    hurray_tensor_buffer_at, hurray_tensor_buffer_count, hurray_tensor_check,
    hurray_tensor_checksum_at, hurray_tensor_data, hurray_tensor_verify_checksum,
};
pub use metadata::{hurray_tensor_metadata_at, hurray_tensor_metadata_count};
pub use quantization::{HurrayQuantScheme, HurrayQuantization, hurray_tensor_dequantize};

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

/// One tensor of an open file (opaque), borrowed from its `HurrayFile`:
/// valid until that file is closed. Thread-safe.
#[allow(missing_debug_implementations)] // opaque to C
pub struct HurrayTensor {
    pub(crate) file: Arc<File>,
    /// The name followed by a NUL (names may contain NUL bytes: use the length).
    pub(crate) name: Vec<u8>,
    pub(crate) element_type: ElementType,
    pub(crate) dims: Box<[u64]>,
    pub(crate) strides: Box<[i64]>,
    pub(crate) layout: HurrayLayout,
    pub(crate) descriptor_only: bool,
    pub(crate) quantization: Option<HurrayQuantization>,
    /// (nnz, index type wire value, COO canonical) of a sparse layout.
    pub(crate) sparse: Option<(u64, u8, bool)>,
    pub(crate) byte_length: u64,
    pub(crate) element_count: Option<u64>,
    /// (role, length) of every buffer, in on-wire order: the layout's
    /// buffers, then scales, zero points and offsets. From the header: the
    /// bytes are reached when asked for (of a file read through a source,
    /// the tensor is read then).
    pub(crate) buffers: Vec<(BufferRole, usize)>,
    /// Of a file opened by `hurray_file_open_signed`: the data is handed
    /// out only once its checksums and digests matched (set then).
    pub(crate) verify: Option<OnceLock<()>>,
}

impl HurrayTensor {
    pub(crate) fn new(file: &Arc<File>, t: &TensorRef<'_>, verify: bool) -> Self {
        let buffers: Vec<_> = if t.is_descriptor_only() {
            Vec::new()
        } else {
            t.roles()
                .into_iter()
                .map(|role| (role, t.buffer_range(role).map_or(0, |(_, n)| n as usize)))
                .collect()
        };
        let quantization = t.quantization().map(|q| HurrayQuantization {
            scheme: HurrayQuantScheme::of(q.scheme.kind()),
            axis: q.scheme.axis().unwrap_or(0),
            block_size: q.scheme.block_size().unwrap_or(0),
            expressed_type: q.expressed_type.to_wire(),
            scale_type: q.scale_type.to_wire(),
            zero_point_type: q.zero_point_type.map_or(0, ElementType::to_wire),
            storage_min: q.storage_min,
            storage_max: q.storage_max,
            tensor_scale: q.tensor_scale,
            offset_type: q.offset_type.map_or(0, ElementType::to_wire),
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
            verify: verify.then(OnceLock::new),
        }
    }

    pub(crate) fn name(&self) -> &str {
        // The bytes came from a `&str` with one NUL appended.
        std::str::from_utf8(&self.name[..self.name.len() - 1]).unwrap_or("")
    }

    pub(crate) fn tensor_ref(&self) -> Result<TensorRef<'_>, Failure> {
        self.file
            .tensor(self.name())
            .map_err(|e| Failure::from_error(&e, Context::View))
    }

    /// [`tensor_ref`](Self::tensor_ref), for handing out its data: of a
    /// file opened signed, its checksums and digests are checked first
    /// (once; a tensor with no buffers has none to check).
    pub(crate) fn data_ref(&self) -> Result<TensorRef<'_>, Failure> {
        let t = self.tensor_ref()?;
        if let Some(verified) = &self.verify
            && verified.get().is_none()
        {
            t.verify_checksum()
                .map_err(|e| Failure::from_error(&e, Context::View))?;
            let _ = verified.set(());
        }
        Ok(t)
    }

    /// The bytes of the buffer of `role`: in the map or memory, or (of a
    /// file read through a source) the tensor read now, once. They live as
    /// long as the file, which this handle holds.
    pub(crate) fn buffer(&self, role: BufferRole) -> Result<(*const c_void, usize), Failure> {
        let t = self.data_ref()?;
        match t.buffer(role) {
            // ADR-007: a zero-length buffer is NULL with length 0.
            Some(b) if !b.is_empty() => Ok((b.as_ptr().cast(), b.len())),
            _ => Ok((std::ptr::null(), 0)),
        }
    }
}

/// Runs `f` on a tensor handle.
pub(crate) fn with_tensor(
    h: *const HurrayTensor,
    f: impl FnOnce(&HurrayTensor) -> Result<(), Failure>,
) -> HurrayStatus {
    with_handle(h, "tensor", f)
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

/// The stored element type as its schema wire value (see `hurray_dtype_name`).
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
/// NULL, even for rank 0). A dynamic dimension is `HURRAY_DYNAMIC_DIM`; 0 is
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
    // The runtime's names, NUL-terminated once; `HurrayLayout`'s values
    // are the layouts' ordinals (tested).
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        Layout::NAMES
            .iter()
            .map(|n| CString::new(*n).unwrap_or_default())
            .collect()
    });
    usize::try_from(layout)
        .ok()
        .and_then(|i| names.get(i))
        .map_or(std::ptr::null(), |n| n.as_ptr())
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
