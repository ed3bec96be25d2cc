//! DLPack 1.1 export: hand a dense tensor of a shared [`File`] to another
//! runtime (NumPy, PyTorch, JAX, a C program) without copying it.
//!
//! The structs are `#[repr(C)]` mirrors of `dlpack.h` 1.1. An export is a
//! single heap allocation holding the [`DLManagedTensorVersioned`] (or the
//! legacy [`DLManagedTensor`]), the `i64` shape and strides it points to, and
//! an [`Arc<File>`]: the file's bytes (usually a read-only memory map) stay
//! alive until the consumer calls the deleter, however long after the
//! producer dropped its own handles.
//!
//! Rules of the export (see also `docs/impl/c-ffi.md`):
//! - Only dense and strided tensors with data are exported. Sparse layouts
//!   have no DLPack form ([`Error::LayoutMismatch`]); a descriptor-only tensor
//!   (and so any tensor with a dynamic dimension) carries no data
//!   ([`Error::NoData`]); a quantized tensor is refused ([`Error::InvalidField`])
//!   because DLPack has no place for scales and zero points and handing out the
//!   stored integers alone would silently change what the values mean.
//! - The data type is [`ElementType::dlpack`], generated from the schema.
//! - `shape` and `strides` (in elements, never NULL, even for rank 0 where
//!   they point at no element) are owned by the export. `byte_offset` is 0.
//! - ADR-007: the data pointer of an empty tensor (any dimension 0) is NULL.
//!   Hurray itself never dereferences it, and neither may a consumer.
//! - [`DLPACK_FLAG_BITMASK_READ_ONLY`] is set unless the consumer may write:
//!   a read-only map faults on a write and in-memory bytes are shared by
//!   every reader, while a copy-on-write map ([`crate::reader::MapMode::CopyOnWrite`])
//!   keeps each write in the writing process (the file never changes), as
//!   do the tensors of a file read through a source opened so
//!   ([`File::open_source_with`]), and a copy belongs to the consumer alone.
//! - [`ExportOptions::copy`] is DLPack's `copy` argument: [`CopyMode::Never`]
//!   refuses what cannot be exported in place ([`Error::CopyRequired`]),
//!   [`CopyMode::Always`] hands over a copy, flagged
//!   [`DLPACK_FLAG_BITMASK_IS_COPIED`].
//! - Hurray's 1-bit bools are exported as array libraries hold bools, one
//!   byte each (`kDLBool`, bits = 8, 0 or 1): an unpacked copy, flagged as
//!   copied. Every consumer (NumPy, PyTorch, JAX) refuses 1-bit DLPack bools.
//! - The other sub-byte types (i2/u2, i4/u4, f4e2m1fn) are exported as
//!   Hurray stores them: *packed*, LSB-first, `bits` < 8 — exactly DLPack
//!   1.1's default for sub-byte types ("packed, little bit-endian"), so
//!   [`DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`] is never set.
//! - [`ExportOptions::as_stored_bits`] exports a byte-multiple type as the
//!   unsigned integer of its width, bits unchanged (bf16 as u16), for a
//!   consumer that lacks the type and reinterprets the bits itself (NumPy
//!   with `ml_dtypes`).
//! - The legacy (pre-1.0) [`DLManagedTensor`] has no flags: it cannot say
//!   "read-only" or "copied". It exists for consumers that only speak the old
//!   protocol; prefer the versioned form.

use crate::ElementType;
use crate::aligned::AlignedBytes;
use crate::error::{Error, Result};
use crate::reader::{File, TensorRef};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

/// The DLPack major version these structs follow.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version these structs follow.
pub const DLPACK_MINOR_VERSION: u32 = 1;
/// The consumer must not write to the data.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// The producer made a copy the consumer owns alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// Sub-byte elements are padded to a byte each (never set by Hurray: its sub-byte data is packed).
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;
/// `DLDeviceType::kDLCPU`.
pub const KDL_CPU: i32 = 1;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// `DLDevice`. `device_type` is a `DLDeviceType` (a C enum, 32 bits).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// `DLDataType`: a `DLDataTypeCode`, the bits of one lane, and the lane count.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

impl DLDataType {
    /// The DLPack type of an element type (from the schema's generated table).
    pub const fn of(t: ElementType) -> Self {
        let (code, bits) = t.dlpack();
        DLDataType {
            code,
            bits,
            lanes: 1,
        }
    }
}

/// `DLTensor`: a borrowed view; the pointers stay valid until the deleter runs.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// The first byte of the data; NULL for an empty tensor (ADR-007).
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    /// `ndim` sizes.
    pub shape: *mut i64,
    /// `ndim` strides, in elements.
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// `DLManagedTensorVersioned` (DLPack >= 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    /// Frees the export (and releases the file); call exactly once.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// The legacy `DLManagedTensor` (DLPack < 1.0): no version, no flags.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    /// Frees the export (and releases the file); call exactly once.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// The single allocation behind an export. `repr(C)` with the managed struct
/// first, so a pointer to the holder is a pointer to the managed struct.
#[repr(C)]
struct Holder<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    /// The file `data` points into; None for a copy, which needs no file.
    _file: Option<Arc<File>>,
    /// The bytes `data` points into when the export is a copy.
    _copy: Option<AlignedBytes>,
}

/// DLPack's `copy` argument: may, must or must not the export copy?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyMode {
    /// In place where possible; a copy where the consumer needs another
    /// form (1-bit bools). DLPack's `copy=None`.
    #[default]
    IfNeeded,
    /// In place or not at all ([`Error::CopyRequired`]). DLPack's `copy=False`.
    Never,
    /// Always a copy the consumer owns. DLPack's `copy=True`.
    Always,
}

/// How a tensor is exported; the default is in place, as Hurray stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportOptions {
    /// Whether the export may, must or must not copy.
    pub copy: CopyMode,
    /// Export a byte-multiple element type as the unsigned integer of the
    /// same width (bf16 as u16, f8e4m3fn as u8), bits unchanged, for a
    /// consumer that lacks the type and reinterprets the bits itself.
    pub as_stored_bits: bool,
}

/// What an export needs from a tensor, taken while the tensor is borrowed.
struct Parts {
    data: *mut c_void,
    dtype: DLDataType,
    shape: Vec<i64>,
    strides: Vec<i64>,
    flags: u64,
    copy: Option<AlignedBytes>,
}

fn to_i64(tensor: &TensorRef<'_>, field: &'static str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::SizeOverflow {
        tensor: tensor.name().to_owned(),
        field,
    })
}

/// Refuses a quantized tensor: DLPack (and any array library) has no place
/// for its scales and zero points, and its stored integers are not its
/// values. Every export of stored values (DLPack here, the Python package's
/// unpacked sub-byte codes) asks this first.
pub fn refuse_quantized(t: &TensorRef<'_>) -> Result<()> {
    if t.quantization().is_none() {
        return Ok(());
    }
    Err(Error::InvalidField {
        tensor: t.name().to_owned(),
        field: "quantization".into(),
        value: "present".into(),
        reason: "DLPack cannot carry scales and zero points; export refused rather than \
                 handing out the stored integers as if they were the values"
            .into(),
    })
}

fn parts(file: &File, t: &TensorRef<'_>, options: ExportOptions) -> Result<Parts> {
    // Refuses descriptor-only tensors (NoData) and sparse layouts (LayoutMismatch).
    let bytes = t.data()?;
    refuse_quantized(t)?;
    let shape = t
        .shape()
        .to_wire()
        .into_iter()
        .map(|d| to_i64(t, "shape (DLPack sizes are i64)", d))
        .collect::<Result<Vec<i64>>>()?;
    let strides = t.element_strides();
    if i32::try_from(shape.len()).is_err() {
        return Err(Error::SizeOverflow {
            tensor: t.name().to_owned(),
            field: "rank (DLPack ndim is i32)",
        });
    }
    let element_type = t.element_type();
    let mut dtype = DLDataType::of(element_type);
    if options.as_stored_bits {
        dtype = stored_bits(t, dtype)?;
    }
    // 1-bit bools leave as one byte per bool: the only form consumers read.
    let unpack = element_type == ElementType::Bool;
    if unpack {
        dtype.bits = 8;
        if options.copy == CopyMode::Never {
            return Err(Error::CopyRequired {
                tensor: t.name().to_owned(),
                reason: "Hurray stores bools as bits and DLPack consumers read bytes",
            });
        }
    }
    let empty = t.is_empty() || bytes.is_empty();
    let copy = if empty || !(unpack || options.copy == CopyMode::Always) {
        None
    } else if unpack {
        // Strided bools index elements of the whole buffer: unpack all of it.
        let codes: Vec<u8> = crate::pack::unpack_codes(bytes, 1, bytes.len() as u64 * 8).collect();
        Some(AlignedBytes::copy_from(&codes))
    } else {
        Some(AlignedBytes::copy_from(bytes))
    };
    let copied = copy.is_some() || (options.copy == CopyMode::Always);
    let writable = file.writable_ptr(t, bytes);
    // ADR-007: an empty tensor exports NULL; its (zero-length) bytes are never touched.
    let data = match (&copy, writable) {
        _ if empty => std::ptr::null_mut(),
        (Some(c), _) => c.as_slice().as_ptr().cast_mut().cast::<c_void>(),
        (None, Some(p)) => p.as_ptr().cast::<c_void>(),
        (None, None) => bytes.as_ptr().cast_mut().cast::<c_void>(),
    };
    let flags = if copied {
        DLPACK_FLAG_BITMASK_IS_COPIED
    } else if writable.is_some() || empty && file.is_writable() {
        0
    } else {
        DLPACK_FLAG_BITMASK_READ_ONLY
    };
    Ok(Parts {
        data,
        dtype,
        shape,
        strides,
        flags,
        copy,
    })
}

/// The unsigned integer type of `dtype`'s width, for [`ExportOptions::as_stored_bits`].
fn stored_bits(t: &TensorRef<'_>, dtype: DLDataType) -> Result<DLDataType> {
    if dtype.bits < 8 || !dtype.bits.is_power_of_two() || dtype.bits > 64 {
        return Err(Error::InvalidField {
            tensor: t.name().to_owned(),
            field: "element_type".into(),
            value: t.element_type().name().into(),
            reason: "only 8-, 16-, 32- and 64-bit types export as their stored bits".into(),
        });
    }
    Ok(DLDataType {
        code: ElementType::UInt8.dlpack().0,
        ..dtype
    })
}

/// Builds the holder on the heap and points `dl_tensor.shape/strides` into it.
fn build<M>(file: Arc<File>, p: Parts, managed: impl FnOnce(DLTensor, u64) -> M) -> NonNull<M>
where
    M: DlTensorField,
{
    let ndim = p.shape.len() as i32;
    let holder = Box::new(Holder {
        managed: managed(
            DLTensor {
                data: p.data,
                device: DLDevice {
                    device_type: KDL_CPU,
                    device_id: 0,
                },
                ndim,
                dtype: p.dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            p.flags,
        ),
        shape: p.shape,
        strides: p.strides,
        _file: if p.copy.is_some() { None } else { Some(file) },
        _copy: p.copy,
    });
    let raw = Box::into_raw(holder);
    // SAFETY: `raw` comes from `Box::into_raw` just above, so it is valid and
    // unaliased; the vectors' heap buffers never move again (the holder is not
    // touched until the deleter frees it), so pointers into them stay valid.
    // A Vec's pointer is non-null even when empty (rank 0), as DLPack wants.
    let h = unsafe { &mut *raw };
    h.managed.set_ctx(raw.cast::<c_void>());
    let tensor = h.managed.dl_tensor();
    tensor.shape = h.shape.as_mut_ptr();
    tensor.strides = h.strides.as_mut_ptr();
    // SAFETY: `raw` is non-null (from a Box), and `Holder` is `repr(C)` with
    // `managed` first, so the cast pointer addresses the managed struct.
    unsafe { NonNull::new_unchecked(raw.cast::<M>()) }
}

/// Access to the `dl_tensor` and `manager_ctx` fields of both managed forms.
trait DlTensorField {
    fn dl_tensor(&mut self) -> &mut DLTensor;
    fn set_ctx(&mut self, ctx: *mut c_void);
}

impl DlTensorField for DLManagedTensorVersioned {
    fn dl_tensor(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn set_ctx(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
}

impl DlTensorField for DLManagedTensor {
    fn dl_tensor(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn set_ctx(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: the caller (the consumer) passes a pointer that `export_versioned`
    // returned and calls the deleter once (DLPack's contract); `manager_ctx`
    // holds the `Box<Holder<_>>` it was made from.
    let holder = unsafe { (*m).manager_ctx }.cast::<Holder<DLManagedTensorVersioned>>();
    // SAFETY: as above: `holder` came from `Box::into_raw` and is freed once.
    drop(unsafe { Box::from_raw(holder) });
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: as in `delete_versioned`, for a pointer from `export_legacy`.
    let holder = unsafe { (*m).manager_ctx }.cast::<Holder<DLManagedTensor>>();
    // SAFETY: `holder` came from `Box::into_raw` and is freed once.
    drop(unsafe { Box::from_raw(holder) });
}

/// An exported tensor, owned until [`into_raw`](ManagedTensor::into_raw)
/// hands it to a consumer (dropping it calls the deleter).
#[derive(Debug)]
pub struct ManagedTensor {
    ptr: NonNull<DLManagedTensorVersioned>,
}

// SAFETY: the export owns its shape/strides, its copy if any and an
// `Arc<File>` (`File` is Send + Sync); this crate never writes the data it
// points to (a consumer may, where the flags allow).
unsafe impl Send for ManagedTensor {}
// SAFETY: `&ManagedTensor` only reads the immutable export.
unsafe impl Sync for ManagedTensor {}

impl ManagedTensor {
    /// Exports the tensor `select` picks from `file` (DLPack >= 1.0 form).
    /// The lifetime ties the tensor to this very file, so the export can
    /// keep exactly its bytes alive.
    pub fn export(
        file: Arc<File>,
        select: impl for<'f> FnOnce(&'f File) -> Result<TensorRef<'f>>,
    ) -> Result<Self> {
        Self::export_with(file, select, ExportOptions::default())
    }

    /// Exports the tensor `select` picks from `file` as `options` say.
    pub fn export_with(
        file: Arc<File>,
        select: impl for<'f> FnOnce(&'f File) -> Result<TensorRef<'f>>,
        options: ExportOptions,
    ) -> Result<Self> {
        let p = parts(&file, &select(&file)?, options)?;
        let ptr = build(file, p, |dl_tensor, flags| DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags,
            dl_tensor,
        });
        Ok(ManagedTensor { ptr })
    }

    /// Exports the tensor named `name` of `file`.
    pub fn by_name(file: Arc<File>, name: &str) -> Result<Self> {
        Self::export(file, |f| f.tensor(name))
    }

    /// The managed struct, as a consumer sees it.
    pub fn as_managed(&self) -> &DLManagedTensorVersioned {
        // SAFETY: `ptr` is a live export owned by `self`.
        unsafe { self.ptr.as_ref() }
    }

    /// The shape, in elements.
    pub fn shape(&self) -> &[i64] {
        let t = &self.as_managed().dl_tensor;
        // SAFETY: `shape` points at `ndim` i64 owned by the export.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        let t = &self.as_managed().dl_tensor;
        // SAFETY: `strides` points at `ndim` i64 owned by the export.
        unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) }
    }

    /// Hands the export to a consumer, which must call its deleter once.
    pub fn into_raw(self) -> *mut DLManagedTensorVersioned {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        // SAFETY: `ptr` is a live export with our deleter, never handed out.
        unsafe { delete_versioned(self.ptr.as_ptr()) }
    }
}

/// Exports a tensor in the legacy (pre-1.0, unversioned, flag-less) form,
/// for consumers that ask for nothing newer. The consumer must call the
/// deleter once. Prefer [`ManagedTensor`].
pub fn export_legacy(
    file: Arc<File>,
    select: impl for<'f> FnOnce(&'f File) -> Result<TensorRef<'f>>,
) -> Result<NonNull<DLManagedTensor>> {
    export_legacy_with(file, select, ExportOptions::default()).map(|(m, _)| m)
}

/// [`export_legacy`] as `options` say. The legacy form has no flags, so the
/// flags the versioned form would carry come back beside it: a caller that
/// cannot tell its consumer "read-only" ([`DLPACK_FLAG_BITMASK_READ_ONLY`])
/// should free the export and refuse.
pub fn export_legacy_with(
    file: Arc<File>,
    select: impl for<'f> FnOnce(&'f File) -> Result<TensorRef<'f>>,
    options: ExportOptions,
) -> Result<(NonNull<DLManagedTensor>, u64)> {
    let p = parts(&file, &select(&file)?, options)?;
    let flags = p.flags;
    let m = build(file, p, |dl_tensor, _| DLManagedTensor {
        dl_tensor,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_legacy),
    });
    Ok((m, flags))
}

#[cfg(test)]
mod tests;
