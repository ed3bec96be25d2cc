//! Reading a tensor another runtime exported with DLPack (PyTorch, JAX,
//! NumPy, a Hurray tensor), in place, to write it without a copy.

use hurray::dlpack::{
    DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLTensor, KDL_CPU,
};
use hurray::{ElementType, pack};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::CStr;

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
/// `kDLBool`: array libraries export bools one byte each (bits = 8).
const KDL_BOOL: u8 = 6;

/// A producer's tensor, borrowed while `capsule` keeps the export alive
/// (the capsule is never renamed "used", so the producer's destructor frees
/// the export when the capsule goes).
pub(crate) struct Imported<'py> {
    _capsule: Bound<'py, PyAny>,
    pub(crate) element_type: ElementType,
    pub(crate) shape: Vec<u64>,
    /// Elements one byte each (to be packed): bools as array libraries hold
    /// them, or sub-byte types the producer flags as padded.
    pub(crate) unpacked: bool,
    data: *const u8,
    len: usize,
}

impl Imported<'_> {
    /// The tensor's bytes as the producer holds them.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `import` checked that `data` is non-null and that the
        // producer describes `len` contiguous bytes there (DLPack's contract:
        // valid until the export is deleted); `_capsule` keeps the export
        // alive for `self`'s life, the GIL is held and no Python code runs
        // while the slice is read, so nothing frees or resizes the memory.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

/// Asks `obj` for a DLPack capsule (versioned if it speaks it) and reads the
/// tensor's description, checking everything before trusting any of it.
pub(crate) fn import<'py>(name: &str, obj: &Bound<'py, PyAny>) -> PyResult<Imported<'py>> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (1u32, 1u32))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        // A producer older than DLPack 1.0 takes no max_version.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
        Err(e) => return Err(e),
    };
    let raw = capsule.as_ptr();
    let bad = |what: String| PyValueError::new_err(format!("tensor {name:?}: {what}"));
    // SAFETY: `raw` is a live object (held by `capsule`); IsValid accepts any object.
    let versioned = unsafe { pyo3::ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) } == 1;
    // SAFETY: as above.
    let legacy = unsafe { pyo3::ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) } == 1;
    let mut padded = false;
    let t: &DLTensor = if versioned {
        // SAFETY: a valid capsule of that name holds a non-null pointer to a
        // live `DLManagedTensorVersioned` (DLPack's contract), alive while
        // the capsule is.
        let m = unsafe { pyo3::ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()) }
            .cast::<DLManagedTensorVersioned>();
        // SAFETY: as above.
        let m = unsafe { &*m };
        if m.version.major != 1 {
            return Err(bad(format!(
                "DLPack {}.{} is not a version this build reads (1.x)",
                m.version.major, m.version.minor
            )));
        }
        padded = m.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0;
        &m.dl_tensor
    } else if legacy {
        // SAFETY: as above, for the legacy struct.
        let m = unsafe { pyo3::ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()) }
            .cast::<DLManagedTensor>();
        // SAFETY: as above.
        unsafe { &(*m).dl_tensor }
    } else {
        return Err(bad("__dlpack__ returned no (unused) DLPack capsule".into()));
    };
    if t.device.device_type != KDL_CPU {
        return Err(bad(format!(
            "is on DLPack device {}; move it to the CPU first",
            t.device.device_type
        )));
    }
    let dt = t.dtype;
    if dt.lanes != 1 {
        return Err(bad(format!("has {} lanes; Hurray stores one", dt.lanes)));
    }
    let byte_bools = (dt.code, dt.bits) == (KDL_BOOL, 8);
    let element_type = if byte_bools {
        ElementType::Bool
    } else {
        ElementType::ALL
            .into_iter()
            .find(|e| e.dlpack() == (dt.code, dt.bits))
            .ok_or_else(|| {
                bad(format!(
                    "DLPack type code {} with {} bits has no Hurray element type",
                    dt.code, dt.bits
                ))
            })?
    };
    let ndim = usize::try_from(t.ndim).map_err(|_| bad(format!("ndim is {}", t.ndim)))?;
    let dims: &[i64] = if ndim == 0 {
        &[]
    } else if t.shape.is_null() {
        return Err(bad("DLPack shape is NULL".into()));
    } else {
        // SAFETY: DLPack: `shape` points at `ndim` sizes, alive with the export.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let shape = dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| bad(format!("has dimension {d}"))))
        .collect::<PyResult<Vec<u64>>>()?;
    let count = hurray::elements::element_count(&shape)
        .known()
        .ok_or_else(|| bad(format!("shape {shape:?} has too many elements")))?;
    // An empty tensor has no element whose place strides could say.
    if !t.strides.is_null() && count > 0 {
        // SAFETY: DLPack: non-null `strides` points at `ndim` strides.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let row_major = hurray::views::row_major_strides(&shape);
        let contiguous = dims
            .iter()
            .zip(strides.iter().zip(&row_major))
            .all(|(&d, (s, r))| d <= 1 || s == r);
        if !contiguous {
            return Err(bad(format!(
                "has strides {strides:?}; make it contiguous first (row-major strides {row_major:?})"
            )));
        }
    }
    // One element per byte: bools as array libraries hold them, or sub-byte
    // elements the producer padded to bytes.
    let unpacked = byte_bools || (padded && element_type.bits() < 8);
    let bits = if unpacked { 8 } else { element_type.bits() };
    let len = pack::packed_len(count, bits)
        .and_then(|l| usize::try_from(l).ok())
        .ok_or_else(|| bad(format!("shape {shape:?} has too many bytes")))?;
    let data = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    if len > 0 && t.data.is_null() {
        return Err(bad("DLPack data is NULL for a non-empty tensor".into()));
    }
    Ok(Imported {
        _capsule: capsule,
        element_type,
        shape,
        unpacked,
        data,
        len,
    })
}
