//! The schema's element-type table, handed to the Python package so that
//! its lookups (NumPy and ml_dtypes names) have the runtime as their owner.

use hurray::ElementType;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One dict per element type: `name`, `bits`, `numpy` (array-protocol
/// string or None), `ml_dtypes` (name or None), `dlpack` ((code, bits)),
/// `safetensors` (name or None), `onnx` (`TensorProto.DataType` or None), `class` (bool, int, uint, float, complex).
#[pyfunction]
pub(crate) fn element_types(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    ElementType::ALL
        .iter()
        .map(|t| {
            let d = PyDict::new(py);
            d.set_item("name", t.name())?;
            d.set_item("bits", t.bits())?;
            d.set_item("numpy", t.numpy_dtype())?;
            d.set_item("ml_dtypes", t.ml_dtypes_name())?;
            d.set_item("dlpack", t.dlpack())?;
            d.set_item("safetensors", t.safetensors_dtype())?;
            d.set_item("onnx", t.onnx_data_type())?;
            let class = match t.class() {
                hurray::elements::ElementClass::Bool => "bool",
                hurray::elements::ElementClass::SignedInt => "int",
                hurray::elements::ElementClass::UnsignedInt => "uint",
                hurray::elements::ElementClass::Float => "float",
                hurray::elements::ElementClass::Complex => "complex",
            };
            d.set_item("class", class)?;
            Ok(d)
        })
        .collect()
}
