//! Hurray tensors as Apache Arrow arrays, without copying.
//!
//! Arrow is retiring its `Tensor`/`SparseTensor` IPC messages; tensors travel
//! in Arrow as the canonical extension type `arrow.fixed_shape_tensor`: a
//! `FixedSizeList<T>` column whose field metadata carries
//! `ARROW:extension:name = arrow.fixed_shape_tensor` and
//! `ARROW:extension:metadata = {"shape":[...]}` (plus `"permutation"` when the
//! logical order differs from the memory order).
//!
//! [`export`] turns one dense Hurray tensor into a one-row array holding the
//! whole tensor; [`export_batch`] makes the first dimension the rows. Either
//! way the Arrow values buffer *is* the tensor's bytes in the memory-mapped
//! file: it is wrapped with [`Buffer::from_custom_allocation`], whose owner
//! is the `Arc<hurray::File>`, so the mapping lives as long as any Arrow array
//! (or slice, or clone) that points into it.
//!
//! ```no_run
//! use std::sync::Arc;
//! let file = Arc::new(hurray::File::open("model.hurray")?);
//! let t = hurray_arrow::export(&file, "embedding.weight")?;
//! let batch = t.into_record_batch()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Element types map through their DLPack codes (from the schema): the
//! integer, unsigned, float (f16/f32/f64) and bool types have Arrow
//! counterparts (Arrow's bool is bit-packed LSB-first, as Hurray's is).
//! bfloat16, the fp8/fp4 types, sub-byte integers and complex numbers have
//! none and are refused, as are sparse, quantized and descriptor-only tensors
//! and strides that are no permutation of a contiguous layout (those would
//! need a copy).

use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch, make_array};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayData;
use arrow_schema::extension::{EXTENSION_TYPE_METADATA_KEY, EXTENSION_TYPE_NAME_KEY};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use hurray::{ElementType, File, Layout, TensorRef};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Arc;

/// The canonical extension name.
pub const EXTENSION_NAME: &str = "arrow.fixed_shape_tensor";

/// Why a tensor can't be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("tensor {tensor:?}: element type {element_type} has no Arrow type")]
    UnsupportedType {
        tensor: String,
        element_type: &'static str,
    },
    #[error("tensor {tensor:?}: {what}; arrow.fixed_shape_tensor holds dense tensors with data")]
    NotDense { tensor: String, what: String },
    #[error(
        "tensor {tensor:?}: strides {strides:?} are no permutation of a contiguous layout; exporting would need a copy"
    )]
    NotContiguous { tensor: String, strides: Vec<i64> },
    #[error("tensor {tensor:?}: {what} is too large for an Arrow FixedSizeList")]
    TooLarge { tensor: String, what: &'static str },
    #[error("tensor {tensor:?}: export_batch needs rank >= 1")]
    Scalar { tensor: String },
    #[error(transparent)]
    Hurray(#[from] hurray::Error),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Hurray tensor as an Arrow `arrow.fixed_shape_tensor` column.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The column's field: the tensor's name, `FixedSizeList<T>`, and the extension metadata.
    pub field: Field,
    /// The values, borrowed from the file.
    pub array: FixedSizeListArray,
}

impl Exported {
    /// A one-column record batch.
    pub fn into_record_batch(self) -> Result<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![self.field]));
        Ok(RecordBatch::try_new(schema, vec![Arc::new(self.array)])?)
    }
}

/// The Arrow type of a Hurray element type, through its DLPack type code.
pub fn arrow_type(t: ElementType) -> Option<DataType> {
    // DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
    Some(match t.dlpack() {
        (0, 8) => DataType::Int8,
        (0, 16) => DataType::Int16,
        (0, 32) => DataType::Int32,
        (0, 64) => DataType::Int64,
        (1, 8) => DataType::UInt8,
        (1, 16) => DataType::UInt16,
        (1, 32) => DataType::UInt32,
        (1, 64) => DataType::UInt64,
        (2, 16) => DataType::Float16,
        (2, 32) => DataType::Float32,
        (2, 64) => DataType::Float64,
        (6, 1) => DataType::Boolean,
        _ => return None,
    })
}

/// Exports tensor `name` of `file` as a one-row array: the row is the whole
/// tensor, the extension shape is the tensor's shape. An empty tensor
/// (`[3, 0, 5]`) gives one row of zero values (list size 0).
pub fn export(file: &Arc<File>, name: &str) -> Result<Exported> {
    let t = file.tensor(name)?;
    build(file, &t, false)
}

/// Exports tensor `name` of `file` with its first dimension as the rows and
/// the rest as the extension shape: `[n, d1, .. dk]` gives `n` tensors of
/// shape `[d1, .. dk]`. The first dimension must be the outermost in memory.
pub fn export_batch(file: &Arc<File>, name: &str) -> Result<Exported> {
    let t = file.tensor(name)?;
    build(file, &t, true)
}

/// The physical (row-major in memory) order of a strided tensor's dimensions,
/// if its strides are a permutation of a contiguous layout.
fn physical_order(dims: &[u64], strides: &[i64]) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..dims.len()).collect();
    // Row-major already (a size-1 dimension's stride is irrelevant): no permutation.
    let row_major = hurray::views::row_major_strides(dims);
    if (0..dims.len()).all(|d| dims[d] == 1 || strides[d] == row_major[d]) {
        return Some(order);
    }
    // Outermost first: larger strides first; a size-1 dimension's stride is irrelevant,
    // so keep those in their logical place relative to each other.
    order.sort_by(|&a, &b| strides[b].cmp(&strides[a]).then(a.cmp(&b)));
    let mut expected: i64 = 1;
    for &d in order.iter().rev() {
        if dims[d] != 1 && strides[d] != expected {
            return None;
        }
        expected = expected.checked_mul(i64::try_from(dims[d]).ok()?)?;
    }
    Some(order)
}

fn build(file: &Arc<File>, t: &TensorRef<'_>, batch: bool) -> Result<Exported> {
    let tensor = || t.name().to_owned();
    let not_dense = |what: String| Error::NotDense {
        tensor: tensor(),
        what,
    };
    if t.is_descriptor_only() {
        return Err(not_dense(
            "it is descriptor-only (it carries no data)".into(),
        ));
    }
    if let Some(q) = t.quantization() {
        return Err(not_dense(format!(
            "it is quantized (expressed as {})",
            q.expressed_type.name()
        )));
    }
    let value_type = arrow_type(t.element_type()).ok_or_else(|| Error::UnsupportedType {
        tensor: tensor(),
        element_type: t.element_type().name(),
    })?;
    let dims = t.shape().to_wire();
    let count = t.element_count().ok_or_else(|| Error::TooLarge {
        tensor: tensor(),
        what: "the element count",
    })?;
    // Physical shape (row-major in memory) and the permutation back to the logical order.
    let (physical, permutation) = match t.layout() {
        Layout::Dense => (dims.clone(), None),
        Layout::Strided(_) if count == 0 => (dims.clone(), None),
        Layout::Strided(strides) => {
            let order = physical_order(&dims, &strides).ok_or_else(|| Error::NotContiguous {
                tensor: tensor(),
                strides: strides.clone(),
            })?;
            let physical: Vec<u64> = order.iter().map(|&d| dims[d]).collect();
            let mut permutation = vec![0usize; dims.len()];
            for (position, &d) in order.iter().enumerate() {
                permutation[d] = position;
            }
            let identity = permutation.iter().enumerate().all(|(i, &p)| i == p);
            (physical, (!identity).then_some(permutation))
        }
        other => return Err(not_dense(format!("it is sparse ({})", other.name()))),
    };
    let (rows, shape, permutation) = if batch {
        match (&permutation, physical.split_first()) {
            (_, None) => return Err(Error::Scalar { tensor: tensor() }),
            // The batch dimension must be logical dimension 0 and outermost in memory.
            (Some(p), Some(_)) if p[0] != 0 => {
                return Err(Error::NotContiguous {
                    tensor: tensor(),
                    strides: match t.layout() {
                        Layout::Strided(s) => s,
                        _ => Vec::new(),
                    },
                });
            }
            (p, Some((&n, rest))) => (
                n,
                rest.to_vec(),
                p.as_ref()
                    .map(|p| p[1..].iter().map(|&x| x - 1).collect::<Vec<_>>()),
            ),
        }
    } else {
        (1, physical, permutation)
    };
    let too_large = |what| Error::TooLarge {
        tensor: tensor(),
        what,
    };
    // The runtime's count: a 0 decides before any multiplication (ADR-007),
    // and a product past 64 bits is an error like one past i32.
    let list_size = hurray::elements::element_count(&shape)
        .known()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| too_large("the list size"))?;
    let rows = usize::try_from(rows).map_err(|_| too_large("the row count"))?;
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| too_large("a dimension"))?;

    let values = values(file, t, value_type.clone(), count)?;
    let item = Arc::new(Field::new("item", value_type.clone(), false));
    let array = FixedSizeListArray::try_new_with_length(item, list_size, values, None, rows)?;
    let field = Field::new(t.name(), array.data_type().clone(), false)
        .with_metadata(extension_metadata(t, &shape, permutation.as_deref()));
    Ok(Exported { field, array })
}

/// The field metadata: the tensor's own metadata, then the extension keys.
///
/// The JSON is written here, to the letter of the canonical spec: `"shape"`,
/// and `"permutation"` only when there is one. (arrow-rs 60's
/// `FixedShapeTensor` writes `"permutations"` and `"dim_names": null`, which
/// other Arrow implementations don't read.)
fn extension_metadata(
    t: &TensorRef<'_>,
    shape: &[usize],
    permutation: Option<&[usize]>,
) -> HashMap<String, String> {
    let mut json = serde_json::Map::new();
    json.insert("shape".into(), serde_json::json!(shape));
    if let Some(p) = permutation {
        json.insert("permutation".into(), serde_json::json!(p));
    }
    let mut metadata: HashMap<String, String> = t
        .metadata()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    metadata.insert(EXTENSION_TYPE_NAME_KEY.into(), EXTENSION_NAME.into());
    metadata.insert(
        EXTENSION_TYPE_METADATA_KEY.into(),
        serde_json::Value::Object(json).to_string(),
    );
    metadata
}

/// The tensor's values as an Arrow array over the file's own bytes.
fn values(
    file: &Arc<File>,
    t: &TensorRef<'_>,
    value_type: DataType,
    count: u64,
) -> Result<ArrayRef> {
    let len = usize::try_from(count).map_err(|_| Error::TooLarge {
        tensor: t.name().to_owned(),
        what: "the element count",
    })?;
    let bytes = t.data()?;
    let buffer = if bytes.is_empty() {
        // ADR-007: a zero-length buffer is never dereferenced; Arrow gets an empty one of its own.
        // (`MutableBuffer` gives a suitably aligned dangling pointer; a `Vec<u8>` would not.)
        Buffer::from(MutableBuffer::new(0))
    } else {
        let ptr = NonNull::from(bytes).cast::<u8>();
        let owner: Arc<File> = Arc::clone(file);
        // SAFETY: `bytes` is a slice of `file`'s storage (`TensorRef` borrows
        // from `file`), which is immutable and stays at the same address for
        // the life of the `File` (a read-only memory map, a heap block that
        // is never resized, or a tensor's buffers read once through a source
        // and kept, never replaced, until the `File` drops). The `Arc<File>` handed to Arrow as the owner
        // keeps that storage alive for as long as any buffer refers to it, so
        // `ptr` stays valid for `bytes.len()` bytes and is never written.
        unsafe { Buffer::from_custom_allocation(ptr, bytes.len(), owner) }
    };
    // `build` checks the length and the alignment of the buffer for the type.
    let data = ArrayData::builder(value_type)
        .len(len)
        .add_buffer(buffer)
        .build()?;
    Ok(make_array(data))
}
