//! `Tensor`: one tensor of an open file.

use crate::dequantized::DequantizedValues;
use crate::error::err;
use crate::export::{self, StoredBits};
use hurray::dlpack::KDL_CPU;
use hurray::{Dim, File, Layout, TensorRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::sync::Arc;

/// A slice as tensor `name`, dense, of a verified file in memory (64-byte
/// aligned). The file records no checksums: the bytes were read from a
/// file, not written by a producer.
fn slice_file(name: &str, data: hurray::slice::SliceData) -> hurray::Result<File> {
    let desc = hurray::TensorDescriptor::new(name, data.element_type, hurray::shape(&data.shape));
    let mut out = Vec::with_capacity(data.bytes.len() + 4096);
    let mut w = hurray::Writer::in_memory(&mut out)?;
    w.set_checksums(None)?;
    w.add_tensor(&desc, &[&data.bytes])?;
    drop(data);
    w.finish()?;
    File::from_bytes(&out)
}

/// One tensor of an open file; exportable with DLPack when dense.
#[pyclass(name = "Tensor", module = "hurray", frozen)]
pub(crate) struct PyTensor {
    file: Arc<File>,
    name: String,
}

impl PyTensor {
    pub(crate) fn new(file: Arc<File>, name: String) -> Self {
        PyTensor { file, name }
    }

    /// A slice as tensor `name` of a file in memory of its own (exported
    /// read-only, as `open_bytes` tensors are), so that every road into a
    /// framework (`hurray._convert`) takes a slice as it takes a tensor.
    pub(crate) fn of_slice(name: &str, data: hurray::slice::SliceData) -> PyResult<PyTensor> {
        let file = slice_file(name, data).map_err(err)?;
        Ok(PyTensor::new(Arc::new(file), name.to_owned()))
    }

    /// The tensor with its data (of a file read from a URL, read now, once).
    fn tensor(&self) -> PyResult<TensorRef<'_>> {
        self.file.tensor(&self.name).map_err(err)
    }

    /// The tensor's header facts, reading no data.
    fn header(&self) -> PyResult<TensorRef<'_>> {
        self.file.get(&self.name).ok_or_else(|| {
            err(hurray::Error::NotFound {
                name: self.name.clone(),
            })
        })
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

#[pymethods]
impl PyTensor {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The element type's short name (`f32`, `i4`, `bf16`, ...).
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.header()?.element_type().name())
    }

    /// The shape; a dynamic dimension is `None` (never 0, which is a real empty dimension).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        dims_tuple(py, &self.header()?)
    }

    /// `dense`, `strided`, `coo`, `csr` or `csc`.
    #[getter]
    fn layout(&self) -> PyResult<&'static str> {
        Ok(self.header()?.layout().name())
    }

    /// Strides in elements (row-major ones for a dense tensor); None for sparse.
    #[getter]
    fn strides(&self) -> PyResult<Option<Vec<i64>>> {
        let t = self.header()?;
        Ok(match t.layout() {
            Layout::Strided(s) => Some(s),
            Layout::Dense => Some(hurray::views::row_major_strides(&t.shape().to_wire())),
            _ => None,
        })
    }

    /// Whether imports may be written: the file is a copy-on-write map, or
    /// a URL whose tensors are read into this process's memory.
    #[getter]
    fn writable(&self) -> bool {
        self.file.is_writable()
    }

    #[getter]
    fn descriptor_only(&self) -> PyResult<bool> {
        Ok(self.header()?.is_descriptor_only())
    }

    #[getter]
    fn quantized(&self) -> PyResult<bool> {
        Ok(self.header()?.quantization().is_some())
    }

    /// Total bytes of the tensor's buffers.
    #[getter]
    fn nbytes(&self) -> PyResult<u64> {
        Ok(self.header()?.byte_length())
    }

    /// Where the buffer `role` (`"values"`, `"indices"`, `"scales"`, ...)
    /// lies in the file: `(offset, length)` from the header alone, `(0, 0)`
    /// for an empty one, `None` when the tensor has no such buffer. What a
    /// reader of someone else's file at an offset (IREE, ONNX Runtime) needs.
    fn buffer_range(&self, role: &str) -> PyResult<Option<(u64, u64)>> {
        let role = hurray::descriptor::BufferRole::from_name(role).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{role:?} is not a buffer role"))
        })?;
        Ok(self.header()?.buffer_range(role))
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

    /// The checksum the file records for each buffer, as `(role, value)`
    /// pairs in buffer order (`values`, `indices`, `scales`, ...), or `None`
    /// when the file records none. Reads no data.
    #[getter]
    fn checksums(&self) -> PyResult<Option<Vec<(&'static str, u64)>>> {
        Ok(self.header()?.checksums().map(|sums| {
            sums.into_iter()
                .map(|(role, sum)| (role.name(), sum))
                .collect()
        }))
    }

    /// Reads every buffer and compares its checksum with the one the file
    /// records: `True` when all match, `False` when the file records none
    /// (or the tensor is descriptor-only). A mismatch raises `ChecksumError`
    /// naming the tensor, the buffer and both values.
    fn verify_checksum(&self) -> PyResult<bool> {
        self.tensor()?.verify_checksum().map_err(err)
    }

    /// The dense values' bytes as stored, copied (DLPack is the zero-copy path).
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, self.tensor()?.data().map_err(err)?))
    }

    /// A quantized tensor's values, dequantized by the runtime (the one
    /// formula of data-model.md section 7, block formats included): a copy,
    /// float32 with the tensor's shape through the buffer protocol
    /// (`numpy.asarray(t.dequantize())` is the float32 array).
    fn dequantize(&self, py: Python<'_>) -> PyResult<DequantizedValues> {
        let t = self.tensor()?;
        let view = t.quantized().map_err(err)?;
        DequantizedValues::new(py, &self.name, t.shape(), &view)
    }

    /// A dense sub-byte tensor's elements one per byte, a copy: the raw codes
    /// (how `ml_dtypes` holds int4, float4_e2m1fn, ...), or with
    /// `sign_extend=True` a signed type's values as int8 bytes. Quantized
    /// tensors are refused, as by DLPack: their codes are not their values.
    #[pyo3(signature = (*, sign_extend=false))]
    fn unpacked<'py>(&self, py: Python<'py>, sign_extend: bool) -> PyResult<Bound<'py, PyBytes>> {
        let t = self.tensor()?;
        hurray::dlpack::refuse_quantized(&t).map_err(err)?;
        let bits = t.element_type().bits();
        if bits >= 8 || t.layout() != Layout::Dense {
            return Err(PyValueError::new_err(format!(
                "tensor {:?}: only dense sub-byte tensors unpack (this one is {} {})",
                self.name,
                t.element_type().name(),
                t.layout().name()
            )));
        }
        // The runtime's packed view: its data (NoData for a descriptor-only
        // tensor) and its element count. The check above stays: this method
        // promises sub-byte types only and a ValueError otherwise, where the
        // view would take 8-bit types and raise a HurrayError.
        let view = t.packed().map_err(err)?;
        let count = usize::try_from(view.len())
            .map_err(|_| PyValueError::new_err("element count overflows"))?;
        let signed =
            sign_extend && t.element_type().class() == hurray::elements::ElementClass::SignedInt;
        PyBytes::new_with(py, count, |out| {
            for (o, code) in out.iter_mut().zip(view.codes()) {
                *o = if signed {
                    hurray::pack::sign_extend(code, bits) as u8
                } else {
                    code
                };
            }
            Ok(())
        })
    }

    /// `self[ranges]`, one `(start, stop, step)` per dimension (`0 <= start
    /// <= stop <= size`, `step >= 1`; an index `i` is `(i, i + 1, 1)`, the
    /// rank is kept), read from only the bytes the slice covers: a new
    /// tensor of the same type and `shape` the ranges' lengths, its own copy
    /// in memory (exported read-only, as `open_bytes` tensors are). Dense
    /// and strided tensors of every type, sub-byte ones packed again from the
    /// slice's first element; bad ranges raise `IndexError` naming the
    /// dimension.
    fn read_slice(&self, py: Python<'_>, ranges: Vec<(u64, u64, u64)>) -> PyResult<PyTensor> {
        let ranges = slice_ranges(ranges);
        let data = py
            .detach(|| self.file.read_slice(&self.name, &ranges))
            .map_err(err)?;
        PyTensor::of_slice(&self.name, data)
    }

    /// This tensor exported as the unsigned integers of its width, bits
    /// unchanged (bf16 as uint16): for NumPy, which lacks the type, to view
    /// with `ml_dtypes`.
    fn stored_bits(&self) -> StoredBits {
        StoredBits::new(self.file.clone(), self.name.clone())
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    /// Exports the tensor as a DLPack capsule: in place (zero-copy), writable
    /// where the file is (`writable`) and flagged read-only otherwise. `copy=True`
    /// hands over a copy; `copy=False` refuses what needs one (1-bit bools
    /// leave as one byte per bool, a copy).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = export::Request::new(stream, max_version, dl_device, copy)?;
        export::capsule_for(py, &self.file, &self.name, request, false)
    }

    /// The tensor as a NumPy array (`numpy.asarray(t)`), zero-copy where
    /// NumPy has the type; bf16, fp8 and sub-byte types need `ml_dtypes`.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("hurray._convert")?
            .getattr("to_numpy")?
            .call1((slf, dtype, copy))
    }

    fn __repr__(&self) -> PyResult<String> {
        let t = self.header()?;
        // The runtime's spelling of a dimension (`?` when dynamic).
        let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
        let mut facts = vec![
            format!("dtype={}", t.element_type().name()),
            format!(
                "shape=({}{})",
                dims.join(", "),
                if dims.len() == 1 { "," } else { "" }
            ),
        ];
        if t.layout() != Layout::Dense {
            facts.push(format!("layout={}", t.layout().name()));
        }
        if t.is_descriptor_only() {
            facts.push("descriptor_only".to_owned());
        }
        if let Some(q) = t.quantization() {
            facts.push(format!("quantized={}", q.scheme.kind().name()));
        }
        Ok(format!(
            "hurray.Tensor({:?}, {})",
            self.name,
            facts.join(", ")
        ))
    }
}

/// `(start, stop, step)` per dimension, as Python's `slice.indices` gives
/// them for steps >= 1; whether they fit is the runtime's to say.
pub(crate) fn slice_ranges(ranges: Vec<(u64, u64, u64)>) -> Vec<hurray::slice::SliceRange> {
    ranges
        .into_iter()
        .map(|(start, stop, step)| hurray::slice::SliceRange::new(start, stop, step))
        .collect()
}
