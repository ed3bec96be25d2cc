//! Tensors of an open file: `hurray_tensor_*` and the C views of layouts
//! and quantization.

use crate::HurrayLayout::*;
use crate::HurrayQuantScheme::*;
use crate::HurrayStatus::*;
use crate::args::*;
use crate::file::*;
use crate::status::*;
use hurray::{BufferRole, ElementType, Error, File, Layout, QuantizationKind, TensorRef};
use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

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

impl HurrayQuantScheme {
    /// The C value of a scheme kind: the schema's wire value, as the
    /// assertions below hold at build time.
    pub(crate) const fn of(kind: QuantizationKind) -> Self {
        match kind {
            QuantizationKind::PerTensor => HURRAY_QUANT_PER_TENSOR,
            QuantizationKind::PerAxis => HURRAY_QUANT_PER_AXIS,
            QuantizationKind::PerBlock => HURRAY_QUANT_PER_BLOCK,
        }
    }
}

const _: () = {
    let mut i = 0;
    while i < QuantizationKind::ALL.len() {
        let kind = QuantizationKind::ALL[i];
        assert!(HurrayQuantScheme::of(kind) as u8 == kind.to_wire());
        i += 1;
    }
};

/// A tensor's quantization: `expressed = (stored - zero_point) * scale *
/// tensor_scale + offset`, evaluated in double in that order.
/// Element types are wire values (see `hurray_dtype_name`); `zero_point_type`
/// is 0 for symmetric quantization (no zero points) and `offset_type` 0 when
/// there are no offsets (format 1.2). The scales, zero points and offsets
/// themselves are the `scales` / `zero_points` / `offsets` buffers.
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
    /// One factor for every element (format 1.2; NVFP4's per-tensor scale,
    /// MXINT8's 2^-6); 1.0 when unused.
    pub tensor_scale: f64,
    /// Element type of the offsets (format 1.2), 0 for none.
    pub offset_type: u8,
}

/// One tensor of an open file (opaque), borrowed from its [`HurrayFile`]:
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
}

impl HurrayTensor {
    pub(crate) fn new(file: &Arc<File>, t: &TensorRef<'_>) -> Self {
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

    /// The bytes of the buffer of `role`: in the map or memory, or (of a
    /// file read through a source) the tensor read now, once. They live as
    /// long as the file, which this handle holds.
    pub(crate) fn buffer(&self, role: BufferRole) -> Result<(*const c_void, usize), Failure> {
        let t = self.tensor_ref()?;
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
        let &(r, _) = t
            .buffers
            .get(index)
            .ok_or_else(|| Failure::index_out_of_range("buffer", index, t.buffers.len()))?;
        let (p, n) = t.buffer(r)?;
        if !role.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { put(role, "role", r.c_name().as_ptr()) }?;
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

/// Reads every buffer of the tensor and compares its checksum with the one
/// the file records (format 1.2; opening never reads data, so this is the
/// only place a flipped data byte is found). `*verified` is `true` when every
/// buffer matches, `false` when the file records no checksums (files before
/// 1.2, files written without, descriptor-only tensors). A mismatch returns
/// `HURRAY_ERR_CHECKSUM_MISMATCH`, kind `ChecksumMismatch`, with a message
/// naming the tensor, the buffer, the algorithm and both values.
///
/// # Safety
/// `tensor` is a live handle; `verified` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_verify_checksum(
    tensor: *const HurrayTensor,
    verified: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(verified, "verified")?;
        let ok = t
            .tensor_ref()?
            .verify_checksum()
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(verified, "verified", ok) }
    })
}

/// The checksum the file records for buffer `index` (in
/// [`hurray_tensor_buffer_at`] order): `*present` is `true` and `*out` the
/// value (CRC-32C in the low 32 bits), or `*present` is `false` and `*out` 0
/// when the file records no checksums. This reads no data; see
/// [`hurray_tensor_verify_checksum`]. `HURRAY_ERR_OUT_OF_RANGE` when `index`
/// is not below the buffer count.
///
/// # Safety
/// `tensor` is a live handle; `out` and `present` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_checksum_at(
    tensor: *const HurrayTensor,
    index: usize,
    out: *mut u64,
    present: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        check_out(present, "present")?;
        if index >= t.buffers.len() {
            return Err(Failure::index_out_of_range(
                "buffer",
                index,
                t.buffers.len(),
            ));
        }
        let sum = t
            .tensor_ref()?
            .checksums()
            .and_then(|sums| sums.get(index).map(|&(_, sum)| sum));
        // SAFETY: checked non-null; caller contract.
        unsafe { put(out, "out", sum.unwrap_or(0)) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(present, "present", sum.is_some()) }
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
