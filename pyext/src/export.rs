//! DLPack capsules of exported tensors: the versioned form for consumers
//! that ask for DLPack >= 1.0, the legacy form otherwise.

use crate::error::err;
use hurray::File;
use hurray::dlpack::{
    CopyMode, DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_READ_ONLY,
    ExportOptions, KDL_CPU, ManagedTensor, export_legacy_with,
};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use std::ffi::{CStr, c_void};
use std::sync::Arc;

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

/// What a consumer asked of `__dlpack__`, checked.
pub(crate) struct Request {
    max_version: Option<(u32, u32)>,
    copy: CopyMode,
}

impl Request {
    /// Checks `__dlpack__`'s arguments: `stream` must be None (a CPU tensor),
    /// `dl_device` the CPU if given; `copy` is DLPack's copy argument.
    pub(crate) fn new(
        stream: Option<Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Self> {
        if stream.as_ref().is_some_and(|s| !s.is_none()) {
            return Err(PyValueError::new_err(
                "stream must be None for a CPU tensor",
            ));
        }
        if let Some(d) = dl_device.filter(|d| *d != (KDL_CPU, 0)) {
            return Err(PyBufferError::new_err(format!(
                "hurray tensors live on the CPU (1, 0), not {d:?}"
            )));
        }
        let copy = match copy {
            None => CopyMode::IfNeeded,
            Some(false) => CopyMode::Never,
            Some(true) => CopyMode::Always,
        };
        Ok(Request { max_version, copy })
    }
}

/// The capsule a consumer asked for with `request` (versioned when its
/// `max_version` is 1.0 or later); `as_stored_bits` exports the type as the
/// unsigned integers of its width.
///
/// The legacy form cannot say "read-only": a legacy consumer would write to
/// a read-only map and crash the process, so that export is refused with
/// the remedies (a copy-on-write open, or `copy=True`).
pub(crate) fn capsule_for<'py>(
    py: Python<'py>,
    file: &Arc<File>,
    name: &str,
    request: Request,
    as_stored_bits: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let options = ExportOptions {
        copy: request.copy,
        as_stored_bits,
    };
    if request.max_version.is_some_and(|(major, _)| major >= 1) {
        let m =
            ManagedTensor::export_with(file.clone(), |f| f.tensor(name), options).map_err(err)?;
        // SAFETY: `m.into_raw()` is a live versioned export the capsule now owns.
        return unsafe { capsule(py, m.into_raw().cast(), VERSIONED, delete_versioned_capsule) };
    }
    let (m, flags) = export_legacy_with(file.clone(), |f| f.tensor(name), options).map_err(err)?;
    if flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
        // SAFETY: `m` is a live legacy export nobody else owns; freed once here.
        unsafe { free_export(m.as_ptr().cast(), LEGACY) };
        return Err(PyBufferError::new_err(format!(
            "tensor {name:?} is read-only and this consumer speaks legacy DLPack (no \
             max_version), which cannot carry the read-only flag; open the file without \
             read_only=True (copy-on-write) or export with copy=True"
        )));
    }
    // SAFETY: `m` is a live legacy export the capsule now owns.
    unsafe { capsule(py, m.as_ptr().cast(), LEGACY, delete_legacy_capsule) }
}

/// A tensor exported as the unsigned integers of its element width, bits
/// unchanged (`Tensor.stored_bits()`), for consumers that lack its type.
#[pyclass(name = "StoredBits", module = "hurray", frozen)]
pub(crate) struct StoredBits {
    file: Arc<File>,
    name: String,
}

impl StoredBits {
    pub(crate) fn new(file: Arc<File>, name: String) -> Self {
        StoredBits { file, name }
    }
}

#[pymethods]
impl StoredBits {
    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = Request::new(stream, max_version, dl_device, copy)?;
        capsule_for(py, &self.file, &self.name, request, true)
    }
}

/// Wraps a managed tensor in a PyCapsule named `name`.
///
/// # Safety
/// `ptr` is a live export of the kind `name` says, owned by nobody else; the
/// capsule takes it over (its destructor frees it unless a consumer did).
unsafe fn capsule<'py>(
    py: Python<'py>,
    ptr: *mut c_void,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut pyo3::ffi::PyObject),
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `ptr` is non-null; the name is static; the GIL is held (`py`).
    let raw = unsafe { pyo3::ffi::PyCapsule_New(ptr, name.as_ptr(), Some(destructor)) };
    if raw.is_null() {
        // The capsule was not made: free the export ourselves.
        // SAFETY: as in the destructors, for an export nobody else owns.
        unsafe { free_export(ptr, name) };
    }
    // SAFETY: `raw` is a new (owned) reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, raw) }
}

/// # Safety
/// `ptr` is a live export of the kind `name` names, freed exactly once here.
unsafe fn free_export(ptr: *mut c_void, name: &CStr) {
    if name == VERSIONED {
        let m = ptr.cast::<DLManagedTensorVersioned>();
        // SAFETY: a live versioned export (caller contract).
        if let Some(deleter) = unsafe { (*m).deleter } {
            // SAFETY: called once, on the export it belongs to.
            unsafe { deleter(m) };
        }
    } else {
        let m = ptr.cast::<DLManagedTensor>();
        // SAFETY: a live legacy export (caller contract).
        if let Some(deleter) = unsafe { (*m).deleter } {
            // SAFETY: called once, on the export it belongs to.
            unsafe { deleter(m) };
        }
    }
}

/// The DLPack capsule destructor: a consumer that imported the tensor renamed
/// the capsule to `used_*` and owns the export (it calls the deleter); an
/// unconsumed capsule still owns it, so the destructor frees it.
///
/// # Safety
/// Called by Python with a capsule made by [`capsule`].
unsafe fn capsule_destructor(capsule: *mut pyo3::ffi::PyObject, name: &CStr, used: &CStr) {
    // SAFETY: `capsule` is a live capsule (Python calls us with it).
    if unsafe { pyo3::ffi::PyCapsule_IsValid(capsule, used.as_ptr()) } == 1 {
        return;
    }
    // SAFETY: as above; a name mismatch returns NULL (with an exception we clear).
    let ptr = unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule, name.as_ptr()) };
    if ptr.is_null() {
        // SAFETY: the GIL is held during a destructor.
        unsafe { pyo3::ffi::PyErr_Clear() };
        return;
    }
    // SAFETY: an unconsumed capsule still owns its export; freed once, here.
    unsafe { free_export(ptr, name) };
}

unsafe extern "C" fn delete_versioned_capsule(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: Python calls this with our versioned capsule.
    unsafe { capsule_destructor(capsule, VERSIONED, USED_VERSIONED) }
}

unsafe extern "C" fn delete_legacy_capsule(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: Python calls this with our legacy capsule.
    unsafe { capsule_destructor(capsule, LEGACY, USED_LEGACY) }
}
