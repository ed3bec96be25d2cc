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
//! - [`DLPACK_FLAG_BITMASK_READ_ONLY`] is always set: the memory is a
//!   read-only map (writing through it faults) or bytes shared by every reader.
//! - Sub-byte types (bool, i2/u2, i4/u4, f4e2m1fn) are exported as Hurray
//!   stores them: *packed*, LSB-first, `bits` < 8 — exactly DLPack 1.1's
//!   default for sub-byte types ("packed, little bit-endian"), so
//!   [`DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`] is never set. Note that a
//!   Hurray bool is one bit (`kDLBool`, bits = 1), not the byte-per-bool
//!   convention of array libraries; consumers that only know 8-bit bools
//!   refuse it rather than misread it.
//! - The legacy (pre-1.0) [`DLManagedTensor`] has no flags: it cannot say
//!   "read-only". It exists for consumers that only speak the old protocol;
//!   prefer the versioned form.

use crate::error::{Error, Result};
use crate::reader::{File, TensorRef};
use crate::{ElementType, Layout};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

/// The DLPack major version these structs follow.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version these structs follow.
pub const DLPACK_MINOR_VERSION: u32 = 1;
/// The consumer must not write to the data.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// The producer made a copy the consumer owns alone (never set by Hurray).
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
    _file: Arc<File>,
}

/// What an export needs from a tensor, taken while the tensor is borrowed.
struct Parts {
    data: *mut c_void,
    dtype: DLDataType,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn to_i64(tensor: &TensorRef<'_>, field: &'static str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::SizeOverflow {
        tensor: tensor.name().to_owned(),
        field,
    })
}

fn parts(t: &TensorRef<'_>) -> Result<Parts> {
    // Refuses descriptor-only tensors (NoData) and sparse layouts (LayoutMismatch).
    let bytes = t.data()?;
    if t.quantization().is_some() {
        return Err(Error::InvalidField {
            tensor: t.name().to_owned(),
            field: "quantization".into(),
            value: "present".into(),
            reason: "DLPack cannot carry scales and zero points; export refused rather than \
                     handing out the stored integers as if they were the values"
                .into(),
        });
    }
    let shape = t
        .shape()
        .to_wire()
        .into_iter()
        .map(|d| to_i64(t, "shape (DLPack sizes are i64)", d))
        .collect::<Result<Vec<i64>>>()?;
    let strides = match t.layout() {
        Layout::Strided(s) => s,
        _ => crate::row_major_strides(&t.shape().to_wire()),
    };
    if i32::try_from(shape.len()).is_err() {
        return Err(Error::SizeOverflow {
            tensor: t.name().to_owned(),
            field: "rank (DLPack ndim is i32)",
        });
    }
    // ADR-007: an empty tensor exports NULL; its (zero-length) bytes are never touched.
    let data = if t.is_empty() || bytes.is_empty() {
        std::ptr::null_mut()
    } else {
        bytes.as_ptr().cast_mut().cast::<c_void>()
    };
    Ok(Parts {
        data,
        dtype: DLDataType::of(t.element_type()),
        shape,
        strides,
    })
}

/// Builds the holder on the heap and points `dl_tensor.shape/strides` into it.
fn build<M>(file: Arc<File>, p: Parts, managed: impl FnOnce(DLTensor) -> M) -> NonNull<M>
where
    M: DlTensorField,
{
    let ndim = p.shape.len() as i32;
    let holder = Box::new(Holder {
        managed: managed(DLTensor {
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
        }),
        shape: p.shape,
        strides: p.strides,
        _file: file,
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

// SAFETY: the export owns its shape/strides and an `Arc<File>` (`File` is
// Send + Sync); the data it points to is immutable for the file's life.
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
        let p = parts(&select(&file)?)?;
        let ptr = build(file, p, |dl_tensor| DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: DLPACK_FLAG_BITMASK_READ_ONLY,
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
    let p = parts(&select(&file)?)?;
    Ok(build(file, p, |dl_tensor| DLManagedTensor {
        dl_tensor,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_legacy),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dim, TensorDescriptor, Writer, shape};

    fn file() -> Arc<File> {
        let mut bytes = Vec::new();
        let mut w = Writer::new(&mut bytes).unwrap();
        let v = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        w.add_tensor(
            &TensorDescriptor::new("w", ElementType::Float32, shape(&[2, 3])),
            &[crate::as_bytes(&v)],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new("empty", ElementType::Float32, shape(&[3, 0, 5])),
            &[&[]],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new("i4", ElementType::Int4, shape(&[3])),
            &[&[0x21, 0x03]],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new("s", ElementType::Int32, shape(&[2, 2]))
                .with_layout(Layout::Strided(vec![1, 2])),
            &[crate::as_bytes(&[1i32, 2, 3, 4])],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new(
                "dyn",
                ElementType::Float32,
                vec![Dim::Dynamic, Dim::Fixed(3)],
            )
            .into_descriptor_only(),
            &[],
        )
        .unwrap();
        w.add_tensor(
            &TensorDescriptor::new("scalar", ElementType::Float64, vec![]),
            &[crate::as_bytes(&[2.5f64])],
        )
        .unwrap();
        w.finish().unwrap();
        Arc::new(File::from_bytes(&bytes).unwrap())
    }

    #[test]
    fn dense_export_points_into_the_file_and_keeps_it_alive() {
        let f = file();
        let expected = f.tensor("w").unwrap().data().unwrap().as_ptr();
        let m = ManagedTensor::by_name(f.clone(), "w").unwrap();
        drop(f); // the export alone keeps the bytes alive
        let mt = m.as_managed();
        assert_eq!(mt.version, DLPackVersion { major: 1, minor: 1 });
        assert_eq!(
            mt.flags & DLPACK_FLAG_BITMASK_READ_ONLY,
            DLPACK_FLAG_BITMASK_READ_ONLY
        );
        assert_eq!(mt.dl_tensor.data.cast::<u8>().cast_const(), expected);
        assert_eq!(
            mt.dl_tensor.dtype,
            DLDataType {
                code: 2,
                bits: 32,
                lanes: 1
            }
        );
        assert_eq!(mt.dl_tensor.device.device_type, KDL_CPU);
        assert_eq!(m.shape(), &[2, 3]);
        assert_eq!(m.strides(), &[3, 1]);
        // SAFETY: data points at 6 f32 of the still-alive file.
        let values = unsafe { std::slice::from_raw_parts(mt.dl_tensor.data.cast::<f32>(), 6) };
        assert_eq!(values, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn empty_tensor_has_null_data() {
        let m = ManagedTensor::by_name(file(), "empty").unwrap();
        assert!(m.as_managed().dl_tensor.data.is_null());
        assert_eq!(m.shape(), &[3, 0, 5]);
        assert_eq!(m.as_managed().dl_tensor.ndim, 3);
    }

    #[test]
    fn sub_byte_is_packed_with_true_bits() {
        let m = ManagedTensor::by_name(file(), "i4").unwrap();
        let mt = m.as_managed();
        assert_eq!(
            mt.dl_tensor.dtype,
            DLDataType {
                code: 0,
                bits: 4,
                lanes: 1
            }
        );
        assert_eq!(mt.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 0);
        assert!(!mt.dl_tensor.data.is_null());
    }

    #[test]
    fn strided_and_scalar() {
        let m = ManagedTensor::by_name(file(), "s").unwrap();
        assert_eq!(m.strides(), &[1, 2]);
        let m = ManagedTensor::by_name(file(), "scalar").unwrap();
        assert_eq!(m.as_managed().dl_tensor.ndim, 0);
        assert!(m.shape().is_empty());
        assert!(!m.as_managed().dl_tensor.shape.is_null());
        assert!(!m.as_managed().dl_tensor.strides.is_null());
    }

    #[test]
    fn refusals() {
        assert!(matches!(
            ManagedTensor::by_name(file(), "dyn"),
            Err(Error::NoData { .. })
        ));
        assert!(matches!(
            ManagedTensor::by_name(file(), "nope"),
            Err(Error::NotFound { .. })
        ));
    }

    #[test]
    fn raw_round_trip_through_the_deleter() {
        let f = file();
        let raw = ManagedTensor::by_name(f.clone(), "w").unwrap().into_raw();
        assert_eq!(Arc::strong_count(&f), 2);
        // SAFETY: `raw` is a live export.
        let deleter = unsafe { (*raw).deleter }.unwrap();
        // SAFETY: its deleter is called exactly once.
        unsafe { deleter(raw) };
        assert_eq!(Arc::strong_count(&f), 1);

        let legacy = export_legacy(f.clone(), |f| f.tensor("empty")).unwrap();
        assert_eq!(Arc::strong_count(&f), 2);
        // SAFETY: `legacy` is a live export.
        let l = unsafe { legacy.as_ref() };
        assert!(l.dl_tensor.data.is_null());
        // SAFETY: `shape` points at `ndim` = 3 sizes owned by the export.
        let dims = unsafe { std::slice::from_raw_parts(l.dl_tensor.shape, 3) };
        assert_eq!(dims, &[3, 0, 5]);
        let deleter = l.deleter.unwrap();
        // SAFETY: the deleter is called exactly once.
        unsafe { deleter(legacy.as_ptr()) };
        assert_eq!(Arc::strong_count(&f), 1);
    }

    #[test]
    fn dtype_comes_from_the_generated_table() {
        for t in ElementType::ALL {
            let d = DLDataType::of(t);
            assert_eq!((d.code, d.bits), t.dlpack());
            assert_eq!(u32::from(d.bits), t.bits());
        }
    }
}
