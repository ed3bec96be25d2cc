//! The `hurray._hurray` extension module (re-exported by the `hurray` package).
//!
//! - `open(path)` → `File`: a read-only mapping name → `Tensor` over a
//!   memory-mapped, verified file (shared as an `Arc<File>`).
//! - `Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`
//!   returns a `dltensor_versioned` capsule when the consumer passes
//!   `max_version >= (1, 0)`, else a legacy `dltensor` capsule; both point into
//!   the map (zero-copy) and hold the `Arc<File>` until the consumer's deleter.
//! - `save(path, mapping)` writes NumPy arrays (anything `numpy.asarray`
//!   accepts) as dense tensors.

use hurray::dlpack::{DLManagedTensor, DLManagedTensorVersioned, ManagedTensor, export_legacy};
use hurray::{Dim, ElementType, File, Layout, TensorDescriptor, TensorRef, Writer};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{CStr, c_void};
use std::sync::Arc;

pyo3::create_exception!(
    _hurray,
    HurrayError,
    pyo3::exceptions::PyException,
    "A Hurray file could not be opened, verified, read or written."
);

fn err(e: hurray::Error) -> PyErr {
    match e {
        hurray::Error::NotFound { name } => PyKeyError::new_err(name),
        e => HurrayError::new_err(e.to_string()),
    }
}

/// A verified Hurray file: a read-only mapping of tensor names to tensors.
#[pyclass(name = "File", module = "hurray", frozen)]
struct PyFile {
    file: Arc<File>,
    path: String,
}

/// One tensor of an open file; exportable with DLPack when dense.
#[pyclass(name = "Tensor", module = "hurray", frozen)]
struct PyTensor {
    file: Arc<File>,
    name: String,
}

impl PyTensor {
    fn tensor(&self) -> PyResult<TensorRef<'_>> {
        self.file.tensor(&self.name).map_err(err)
    }
}

/// Opens and verifies the file at `path` (memory-mapped; O(header), not O(data)).
#[pyfunction]
fn open(path: std::path::PathBuf) -> PyResult<PyFile> {
    let file = File::open(&path).map_err(err)?;
    Ok(PyFile {
        file: Arc::new(file),
        path: path.display().to_string(),
    })
}

#[pymethods]
impl PyFile {
    fn __len__(&self) -> usize {
        self.file.len()
    }

    fn __getitem__(&self, name: &str) -> PyResult<PyTensor> {
        self.file.tensor(name).map_err(err)?;
        Ok(PyTensor {
            file: self.file.clone(),
            name: name.to_owned(),
        })
    }

    fn __contains__(&self, name: &str) -> bool {
        self.file.get(name).is_some()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let names = slf.keys();
        Ok(names.into_pyobject(py)?.try_iter()?.into_any().unbind())
    }

    /// Tensor names, in file order (sorted).
    fn keys(&self) -> Vec<String> {
        self.file.tensors().map(|t| t.name().to_owned()).collect()
    }

    fn values(&self) -> Vec<PyTensor> {
        self.keys()
            .into_iter()
            .map(|name| PyTensor {
                file: self.file.clone(),
                name,
            })
            .collect()
    }

    fn items(&self) -> Vec<(String, PyTensor)> {
        self.keys()
            .into_iter()
            .map(|name| {
                let t = PyTensor {
                    file: self.file.clone(),
                    name: name.clone(),
                };
                (name, t)
            })
            .collect()
    }

    #[pyo3(signature = (name, default=None))]
    fn get(&self, py: Python<'_>, name: &str, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        if self.file.get(name).is_some() {
            let t = self.__getitem__(name)?;
            return Ok(Py::new(py, t)?.into_any());
        }
        Ok(default.unwrap_or_else(|| py.None()))
    }

    /// File-wide metadata as a dict.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.file.reader().metadata() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The (major, minor) format version.
    #[getter]
    fn version(&self) -> (u16, u16) {
        self.file.reader().version()
    }

    /// `(start, end)` addresses of the file's bytes in memory (the map).
    fn address_range(&self) -> (usize, usize) {
        let b = self.file.bytes();
        (b.as_ptr() as usize, b.as_ptr() as usize + b.len())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        // The map is released when the last File, Tensor and export is gone.
        false
    }

    fn __repr__(&self) -> String {
        format!("<hurray.File {:?}: {} tensors>", self.path, self.file.len())
    }
}

fn dims_tuple<'py>(py: Python<'py>, t: &TensorRef<'_>) -> PyResult<Bound<'py, PyTuple>> {
    let dims: Vec<Option<u64>> = t
        .shape()
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => Some(n),
            Dim::Dynamic => None,
        })
        .collect();
    PyTuple::new(py, dims)
}

/// `DLDeviceType::kDLCPU`.
const KDL_CPU: i32 = 1;

#[pymethods]
impl PyTensor {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The element type's short name (`f32`, `i4`, `bf16`, ...).
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.tensor()?.element_type().name())
    }

    /// The shape; a dynamic dimension is `None` (never 0, which is a real empty dimension).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        dims_tuple(py, &self.tensor()?)
    }

    /// `dense`, `strided`, `coo`, `csr` or `csc`.
    #[getter]
    fn layout(&self) -> PyResult<&'static str> {
        Ok(self.tensor()?.layout().name())
    }

    /// Strides in elements (row-major ones for a dense tensor); None for sparse.
    #[getter]
    fn strides(&self) -> PyResult<Option<Vec<i64>>> {
        let t = self.tensor()?;
        Ok(match t.layout() {
            Layout::Strided(s) => Some(s),
            Layout::Dense => Some(hurray::row_major_strides(&t.shape().to_wire())),
            _ => None,
        })
    }

    #[getter]
    fn descriptor_only(&self) -> PyResult<bool> {
        Ok(self.tensor()?.is_descriptor_only())
    }

    #[getter]
    fn quantized(&self) -> PyResult<bool> {
        Ok(self.tensor()?.quantization().is_some())
    }

    /// Total bytes of the tensor's buffers.
    #[getter]
    fn nbytes(&self) -> PyResult<u64> {
        Ok(self.tensor()?.byte_length())
    }

    /// Address of the dense values in memory; 0 for an empty tensor (ADR-007).
    #[getter]
    fn data_ptr(&self) -> PyResult<usize> {
        let data = self.tensor()?.data().map_err(err)?;
        Ok(if data.is_empty() {
            0
        } else {
            data.as_ptr() as usize
        })
    }

    /// The dense values' bytes, copied (for inspection; DLPack is the zero-copy path).
    fn tobytes(&self) -> PyResult<Vec<u8>> {
        Ok(self.tensor()?.data().map_err(err)?.to_vec())
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    /// Exports the tensor (read-only, zero-copy) as a DLPack capsule.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
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
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "hurray exports without copying; copy the imported array instead",
            ));
        }
        let name = self.name.as_str();
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        if versioned {
            let m = ManagedTensor::export(self.file.clone(), |f| f.tensor(name))
                .map_err(|e| PyBufferError::new_err(e.to_string()))?;
            // SAFETY: `m.into_raw()` is a live versioned export the capsule now owns.
            unsafe { capsule(py, m.into_raw().cast(), VERSIONED, delete_versioned_capsule) }
        } else {
            let m = export_legacy(self.file.clone(), |f| f.tensor(name))
                .map_err(|e| PyBufferError::new_err(e.to_string()))?;
            // SAFETY: `m` is a live legacy export the capsule now owns.
            unsafe { capsule(py, m.as_ptr().cast(), LEGACY, delete_legacy_capsule) }
        }
    }

    fn __repr__(&self) -> PyResult<String> {
        let t = self.tensor()?;
        Ok(format!(
            "<hurray.Tensor {:?} {}{:?} {}>",
            self.name,
            t.element_type().name(),
            t.dims(),
            t.layout().name()
        ))
    }
}

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

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

/// Writes `tensors` (a mapping name → array-like) to `path`, atomically.
/// Arrays are made C-contiguous (a copy only if they are not; rank 0 stays
/// rank 0); bool arrays
/// are packed to Hurray's 1-bit bools. dtypes without a Hurray counterpart
/// (object, datetime, big-endian ...) raise ValueError, writing nothing.
#[pyfunction]
fn save(py: Python<'_>, path: std::path::PathBuf, tensors: &Bound<'_, PyAny>) -> PyResult<()> {
    let np = py.import("numpy")?;
    let items = tensors.call_method0("items")?;
    let mut w = Writer::create(&path).map_err(err)?;
    for item in items.try_iter()? {
        let (name, value): (String, Bound<'_, PyAny>) = item?.extract()?;
        // `asarray(order="C")`, not `ascontiguousarray`, which makes a rank-0
        // array 1-d (a scalar such as `num_batches_tracked` must stay `()`).
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("order", "C")?;
        let a = np.call_method("asarray", (value,), Some(&kwargs))?;
        let dtype: String = a.getattr("dtype")?.getattr("str")?.extract()?;
        let t = ElementType::from_numpy_dtype(&dtype).ok_or_else(|| {
            PyValueError::new_err(format!(
                "tensor {name:?}: NumPy dtype {dtype} has no Hurray element type"
            ))
        })?;
        let shape: Vec<u64> = a.getattr("shape")?.extract()?;
        let desc = TensorDescriptor::new(&name, t, hurray::shape(&shape));
        let size: usize = a.getattr("size")?.extract()?;
        if size == 0 {
            // ADR-007: an empty tensor has a 0-byte buffer; nothing is read.
            w.add_tensor(&desc, &[&[]]).map_err(err)?;
        } else {
            // The array's bytes through the buffer protocol, read in place:
            // `a` is C-contiguous, so its flat uint8 view is the same memory
            // (any dtype, ml_dtypes' included, exports as bytes).
            let flat = a
                .call_method1("reshape", (-1,))?
                .call_method1("view", (np.getattr("uint8")?,))?;
            let buf = PyBuffer::<u8>::get(&flat)?;
            if !buf.is_c_contiguous() {
                return Err(PyValueError::new_err(format!(
                    "tensor {name:?}: the array's buffer is not contiguous"
                )));
            }
            let data: &[u8] = if buf.len_bytes() == 0 {
                &[]
            } else {
                // SAFETY: the buffer protocol guarantees `len_bytes()` readable,
                // contiguous bytes at `buf_ptr()` for as long as `buf` holds the
                // export (until it is dropped, after the write); the GIL stays
                // held and no Python code runs meanwhile, so nothing writes to
                // or frees the array.
                unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) }
            };
            if t == ElementType::Bool {
                // One byte per bool in, Hurray's 1-bit bools out, streamed a
                // chunk at a time by the runtime's packer (any non-zero byte is
                // True, as NumPy reads it).
                let mut tw = w.begin_tensor(&desc).map_err(err)?;
                let mut packer = hurray::pack::Packer::new(1);
                let (mut codes, mut packed) = (Vec::new(), Vec::new());
                for chunk in data.chunks(1 << 20) {
                    codes.clear();
                    codes.extend(chunk.iter().map(|b| u8::from(*b != 0)));
                    packed.clear();
                    packer.push(&codes, &mut packed);
                    tw.write_all(&packed).map_err(err)?;
                }
                packed.clear();
                packer.finish(&mut packed);
                tw.write_all(&packed).map_err(err)?;
                tw.finish().map_err(err)?;
            } else {
                w.add_tensor(&desc, &[data]).map_err(err)?;
            }
            drop(buf); // releases the export; `data` is not used after this
        }
    }
    w.finish().map_err(err)?;
    Ok(())
}

#[pymodule]
fn _hurray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_class::<PyFile>()?;
    m.add_class::<PyTensor>()?;
    m.add("HurrayError", m.py().get_type::<HurrayError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
