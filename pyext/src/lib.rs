//! The `hurray._hurray` extension module, wrapped by the `hurray` Python
//! package (`pyext/python/hurray/`), which adds safetensors' verbs and the
//! framework helpers on top of it.
//!
//! - [`file`]: `open(path, read_only=False)` and `open_bytes(data)` →
//!   `File`, a mapping of names to tensors over a verified file.
//! - [`tensor`]: `Tensor`, one tensor of a file: facts, `repr`, and the
//!   unpacked codes of sub-byte types; [`dequantized`]: what
//!   `Tensor.dequantize()` returns, float32 values with the tensor's shape.
//! - [`export`]: `Tensor.__dlpack__` (zero-copy, writable over a
//!   copy-on-write map, `copy=True/False`) and the capsules it returns.
//! - [`import`]: reading another runtime's DLPack capsule (torch, JAX,
//!   NumPy) to write its tensor without a copy.
//! - [`write`]: `write(path | None, items, metadata)`, the one writer behind
//!   every `save`/`save_file`.
//! - [`url`]: a file in an object store opened for `open(url)`, read
//!   tensor by tensor with range GETs; [`remote`]: `open_sharded_remote`.
//! - [`sharded`]: `open_sharded(path)` → `ShardedFile`, a sharded
//!   checkpoint's index as a mapping of names to `ShardedTensor`s.
//! - [`sharded_writer`]: `ShardedWriter`, member files then the index.
//! - [`dtypes`]: the schema's element-type table, for the package's lookups.

// The extension has no Rust API: its table of contents links the private
// modules it lists, for the developers who read it with
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod dequantized;
mod dtypes;
mod error;
mod export;
mod file;
mod import;
mod onnx;
mod remote;
mod sharded;
mod sharded_writer;
mod sign;
mod tensor;
mod url;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _hurray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(file::open, m)?)?;
    m.add_function(wrap_pyfunction!(file::open_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(sharded::open_sharded, m)?)?;
    m.add_function(wrap_pyfunction!(sharded::open_sharded_index, m)?)?;
    m.add_function(wrap_pyfunction!(url::is_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::open_sharded_remote, m)?)?;
    m.add_function(wrap_pyfunction!(write::write, m)?)?;
    m.add_function(wrap_pyfunction!(write::write_member, m)?)?;
    m.add_function(wrap_pyfunction!(dtypes::element_types, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::onnx_externalize, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::onnx_write_weights, m)?)?;
    m.add_function(wrap_pyfunction!(sign::sign, m)?)?;
    m.add_function(wrap_pyfunction!(sign::verify, m)?)?;
    m.add_function(wrap_pyfunction!(sign::check_signature, m)?)?;
    m.add_class::<file::PyFile>()?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<export::StoredBits>()?;
    m.add_class::<dequantized::DequantizedValues>()?;
    m.add_class::<sharded::PyShardedFile>()?;
    m.add_class::<sharded::PyShardedTensor>()?;
    m.add_class::<sharded_writer::PyShardedWriter>()?;
    m.add("HurrayError", m.py().get_type::<error::HurrayError>())?;
    m.add("ChecksumError", m.py().get_type::<error::ChecksumError>())?;
    m.add("SignatureError", m.py().get_type::<error::SignatureError>())?;
    m.add(
        "MemberMismatchError",
        m.py().get_type::<error::MemberMismatchError>(),
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
