//! Slices as tensors: `Tensor.read_slice` and `ShardedTensor.read_slice`
//! return the runtime's [`SliceData`] as a [`PyTensor`] of a one-tensor file
//! in memory, so that every road into a framework (`hurray._convert`) takes
//! a slice exactly as it takes a whole tensor.

use crate::error::err;
use crate::tensor::PyTensor;
use hurray::{File, SliceData, SliceRange, TensorDescriptor, Writer};
use pyo3::prelude::*;
use std::sync::Arc;

/// `(start, stop, step)` per dimension, as Python's `slice.indices` gives
/// them for steps >= 1; whether they fit is the runtime's to say.
pub(crate) fn ranges(ranges: Vec<(u64, u64, u64)>) -> Vec<SliceRange> {
    ranges
        .into_iter()
        .map(|(start, stop, step)| SliceRange::new(start, stop, step))
        .collect()
}

/// `data` as tensor `name` of a verified file in memory (read-only exports,
/// as `open_bytes` gives; the bytes are this slice's own copy).
pub(crate) fn into_tensor(name: &str, data: SliceData) -> PyResult<PyTensor> {
    let desc = TensorDescriptor::new(name, data.element_type, hurray::shape(&data.shape));
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).map_err(err)?;
    // The bytes were just read from a file: nothing to record a checksum for.
    w.set_checksums(None).map_err(err)?;
    w.add_tensor(&desc, &[&data.bytes]).map_err(err)?;
    drop(data);
    w.finish().map_err(err)?;
    let file = File::from_bytes(&out).map_err(err)?;
    Ok(PyTensor::new(Arc::new(file), name.to_owned()))
}
