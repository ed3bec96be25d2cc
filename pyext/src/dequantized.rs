//! `DequantizedValues`: what `Tensor.dequantize()` returns, a quantized
//! tensor's values as float32 with the tensor's shape, through the buffer
//! protocol, so `numpy.asarray` and `memoryview` take it as the array it is
//! without being told its type or shape.

use crate::error::err;
use hurray::Dim;
use hurray::reader::Shape;
use hurray::views::QuantizedView;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use std::ffi::c_int;

/// Elements dequantized at a time into the buffer: the runtime writes
/// `f32`s, the buffer takes bytes (a bytearray promises no alignment).
const CHUNK: usize = 16 * 1024;

/// A quantized tensor's values as float32, row-major, with its shape.
///
/// The values live in a Python `bytearray` this object alone holds (so no
/// one can resize it under an export); exports are writable, as NumPy's
/// arrays are. A memoryview of it has format `f` and the tensor's shape,
/// zero dimensions and rank 0 included (which `memoryview.cast` refuses).
#[pyclass(name = "DequantizedValues", module = "hurray", frozen)]
pub(crate) struct DequantizedValues {
    values: Py<PyByteArray>,
    /// Elements per dimension, as the buffer protocol reads them.
    shape: Box<[isize]>,
    /// Row-major strides in bytes.
    strides: Box<[isize]>,
}

impl DequantizedValues {
    /// The values of `view`, the quantized tensor `name` of that shape.
    pub(crate) fn new(
        py: Python<'_>,
        name: &str,
        shape: Shape<'_>,
        view: &QuantizedView<'_>,
    ) -> PyResult<Self> {
        let too_large = || {
            PyValueError::new_err(format!(
                "tensor {name:?}: {} values do not fit in this process's memory as float32",
                view.len()
            ))
        };
        let count = usize::try_from(view.len()).map_err(|_| too_large())?;
        let bytes = count.checked_mul(4).ok_or_else(too_large)?;
        let dims = shape
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => isize::try_from(n).map_err(|_| too_large()),
                // A quantized tensor holds data, so every dimension is known.
                Dim::Dynamic => Err(err(hurray::Error::NoData {
                    tensor: name.to_owned(),
                })),
            })
            .collect::<PyResult<Box<[isize]>>>()?;
        let mut strides = vec![4isize; dims.len()].into_boxed_slice();
        for i in (0..dims.len().saturating_sub(1)).rev() {
            // No overflow: the product of the dimensions is `count`, which fits.
            strides[i] = strides[i + 1] * dims[i + 1].max(1);
        }
        let values = PyByteArray::new_with(py, bytes, |out| {
            let mut chunk = vec![0f32; CHUNK.min(count)];
            for (i, part) in out.chunks_mut(CHUNK * 4).enumerate() {
                let floats = &mut chunk[..part.len() / 4];
                view.dequantize_into((i * CHUNK) as u64, floats);
                for (o, v) in part.chunks_exact_mut(4).zip(floats.iter()) {
                    o.copy_from_slice(&v.to_ne_bytes());
                }
            }
            Ok(())
        })?;
        Ok(DequantizedValues {
            values: values.unbind(),
            shape: dims,
            strides,
        })
    }
}

#[pymethods]
impl DequantizedValues {
    /// The tensor's shape.
    #[getter]
    fn shape(&self) -> Vec<isize> {
        self.shape.to_vec()
    }

    /// Always `"f32"`.
    #[getter]
    fn dtype(&self) -> &'static str {
        "f32"
    }

    /// Total bytes of the values.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> usize {
        self.values.bind(py).len()
    }

    /// The values as row-major native-endian float32 bytes (a copy).
    fn tobytes(&self, py: Python<'_>) -> Vec<u8> {
        self.values.bind(py).to_vec()
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.shape.first() {
            Some(&n) => Ok(n as usize),
            None => Err(pyo3::exceptions::PyTypeError::new_err(
                "len() of a rank-0 tensor",
            )),
        }
    }

    /// The buffer protocol: the values with format `f`, the tensor's shape
    /// and row-major strides, writable.
    ///
    /// # Safety
    ///
    /// `view` is the `Py_buffer` the interpreter passes, valid for writes.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no Py_buffer to fill"));
        }
        let this = slf.get();
        let values = this.values.bind(slf.py());
        let len = values.len();
        let want = |bits: c_int| flags & bits == bits;
        let mut filled = ffi::Py_buffer::new();
        // A new reference, which the interpreter releases with the view.
        filled.obj = slf.clone().into_any().into_ptr();
        filled.buf = values.data().cast();
        filled.len = len as isize;
        filled.readonly = 0;
        filled.itemsize = 4;
        filled.format = if want(ffi::PyBUF_FORMAT) {
            c"f".as_ptr().cast_mut()
        } else {
            std::ptr::null_mut()
        };
        filled.ndim = this.shape.len() as c_int;
        filled.shape = if want(ffi::PyBUF_ND) {
            this.shape.as_ptr().cast_mut()
        } else {
            std::ptr::null_mut()
        };
        filled.strides = if want(ffi::PyBUF_STRIDES) {
            this.strides.as_ptr().cast_mut()
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: `view` is non-null and the interpreter's to fill. The
        // pointers handed out live as long as `obj`, which the view owns a
        // reference to: the bytearray (never resized, as no one else holds
        // it) and the shape and strides, boxed in this frozen object and
        // never changed. Writes through `buf` are writes to the bytearray,
        // which Rust reads only through Python's own API (`tobytes`).
        unsafe { view.write(filled) };
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "hurray.DequantizedValues(dtype=f32, shape={:?})",
            self.shape
        )
    }
}
