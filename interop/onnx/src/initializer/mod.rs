//! One initializer (`TensorProto`): its name, type and shape, where its
//! bytes are (inline `raw_data`, a typed field, or external data), and
//! those bytes as Hurray stores them.
//!
//! ONNX's `raw_data` is Hurray's values buffer byte for byte (little-endian,
//! sub-byte types packed from the least significant bit), except for `BOOL`,
//! one byte per element in ONNX and one bit in Hurray.

mod external;
mod typed;

pub(crate) use external::relative_location;

use crate::error::{Error, Result};
use crate::wire::{self, Fields, Value};
use hurray::ElementType;
use hurray::limits::MAX_ONNX_RANK;
use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

// TensorProto's fields (onnx.proto).
pub(crate) const DIMS: u32 = 1;
pub(crate) const DATA_TYPE: u32 = 2;
const SEGMENT: u32 = 3;
const FLOAT_DATA: u32 = 4;
const INT32_DATA: u32 = 5;
const STRING_DATA: u32 = 6;
const INT64_DATA: u32 = 7;
pub(crate) const NAME: u32 = 8;
pub(crate) const RAW_DATA: u32 = 9;
const DOUBLE_DATA: u32 = 10;
const UINT64_DATA: u32 = 11;
pub(crate) const EXTERNAL_DATA: u32 = 13;
pub(crate) const DATA_LOCATION: u32 = 14;
/// The fields that hold or locate a tensor's data: what externalizing drops.
pub(crate) const DATA_FIELDS: &[u32] = &[
    FLOAT_DATA,
    INT32_DATA,
    STRING_DATA,
    INT64_DATA,
    RAW_DATA,
    DOUBLE_DATA,
    UINT64_DATA,
    EXTERNAL_DATA,
    DATA_LOCATION,
];
/// `TensorProto.DataLocation.EXTERNAL`.
pub(crate) const LOCATION_EXTERNAL: u64 = 1;
const STRING_TYPE: i32 = 8;
/// The piece external data is read in (8 MiB).
pub(crate) const PIECE: u64 = 8 << 20;

/// Where an initializer's bytes are.
#[derive(Debug, Clone)]
enum Data {
    /// `raw_data`, a range of the model.
    Raw(Range<usize>),
    /// A typed field (`float_data`, `int32_data`, ...), by number: its
    /// occurrences are found again in the `TensorProto` when read, so
    /// parsing keeps nothing per element.
    Typed(u32),
    /// External data: a file relative to the model's directory, an offset
    /// and an optional length (the rest of the file when absent).
    External {
        location: String,
        offset: u64,
        length: Option<u64>,
    },
}

/// An initializer of the model.
#[derive(Debug, Clone)]
pub struct Initializer {
    name: String,
    element_type: ElementType,
    dims: Vec<u64>,
    data: Data,
    /// The `TensorProto`'s bytes, a range of the model.
    pub(crate) proto: Range<usize>,
}

impl Initializer {
    /// Parses a `TensorProto` found at offset `at` of the model.
    pub(crate) fn parse(proto: &[u8], at: usize) -> Result<Initializer> {
        let what = "TensorProto";
        let mut name = None;
        let mut data_type = 0i32;
        let mut dims = Vec::new();
        let mut raw = None;
        let mut typed: Option<u32> = None;
        let mut mixed = false;
        let mut external = Vec::new();
        let mut location = 0;
        let mut segmented = false;
        for field in Fields::new(proto, what) {
            let field = field.map_err(|e| e.shifted(at))?;
            match (field.number, field.value) {
                (NAME, Value::Bytes(s, e)) => {
                    let text = std::str::from_utf8(&proto[s..e]).map_err(|_| Error::Malformed {
                        message: what,
                        at: at + s,
                        reason: "an initializer's name is not UTF-8",
                    })?;
                    name = Some(text.to_owned());
                }
                (DATA_TYPE, Value::Varint(v)) => data_type = v as i32,
                (DIMS, _) => {
                    wire::scalars(proto, &field, None, &mut dims, what)
                        .map_err(|e| e.shifted(at))?;
                    if dims.len() > MAX_ONNX_RANK {
                        return Err(Error::Malformed {
                            message: what,
                            at: at + field.span.start,
                            reason: "more dimensions than the limit (MAX_ONNX_RANK)",
                        });
                    }
                }
                (RAW_DATA, Value::Bytes(s, e)) => raw = Some(s + at..e + at),
                (
                    FLOAT_DATA | INT32_DATA | STRING_DATA | INT64_DATA | DOUBLE_DATA | UINT64_DATA,
                    _,
                ) => {
                    mixed |= typed.is_some_and(|n| n != field.number);
                    typed = Some(field.number);
                }
                (EXTERNAL_DATA, Value::Bytes(s, e)) => {
                    external.push(external::entry(&proto[s..e]).map_err(|e| e.shifted(at + s))?)
                }
                (DATA_LOCATION, Value::Varint(v)) => location = v,
                (SEGMENT, _) => segmented = true,
                _ => {}
            }
        }
        let name = name.unwrap_or_default();
        let bad = |field: &'static str, value: String, reason: &str| {
            Err(Error::tensor(&name, field, value, reason))
        };
        if name.is_empty() {
            return bad("name", "\"\"".into(), "an initializer needs a name");
        }
        if segmented {
            return bad(
                "segment",
                "present".into(),
                "segmented tensors are not read",
            );
        }
        let element_type = match ElementType::from_onnx_data_type(data_type) {
            Some(t) => t,
            None if data_type == STRING_TYPE => {
                return bad("data_type", "STRING".into(), "Hurray holds no strings");
            }
            None => {
                return bad(
                    "data_type",
                    data_type.to_string(),
                    "not an ONNX type Hurray has",
                );
            }
        };
        if let Some(d) = dims.iter().find(|d| (**d as i64) < 0) {
            return bad("dims", (*d as i64).to_string(), "dimensions are at least 0");
        }
        let data = if location == LOCATION_EXTERNAL {
            external::external_data(&name, external)?
        } else if let Some(r) = raw {
            Data::Raw(r)
        } else if let Some(number) = typed {
            if mixed || number != typed::typed_field(element_type) {
                return bad(
                    "data",
                    format!("field {number}"),
                    &format!("not the field ONNX keeps {} in", element_type.name()),
                );
            }
            Data::Typed(number)
        } else {
            // No data at all: an empty tensor, or one the length check refuses.
            Data::Raw(at..at)
        };
        Ok(Initializer {
            name,
            element_type,
            dims,
            data,
            proto: at..at + proto.len(),
        })
    }

    /// The initializer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The dimensions.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Whether the model keeps this initializer's bytes in an external file.
    pub fn is_external(&self) -> bool {
        matches!(self.data, Data::External { .. })
    }

    /// The element count.
    pub(crate) fn count(&self) -> Result<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| {
                Error::tensor(
                    &self.name,
                    "dims",
                    format!("{:?}", self.dims),
                    "the element count overflows",
                )
            })
    }

    /// How many bytes ONNX stores: one per `BOOL`, packed otherwise.
    pub fn onnx_len(&self) -> Result<u64> {
        let n = self.count()?;
        let bits = match self.element_type {
            ElementType::Bool => 8,
            t => t.bits(),
        };
        hurray::pack::packed_len(n, bits).ok_or_else(|| {
            Error::tensor(
                &self.name,
                "dims",
                format!("{:?}", self.dims),
                "the byte length overflows",
            )
        })
    }

    /// Checks what can be checked without reading the data: the byte length
    /// of inline data, and that external data lies inside its file.
    pub(crate) fn check(&self, model: &[u8], base_dir: &Path) -> Result<()> {
        let want = self.onnx_len()?;
        match &self.data {
            Data::Raw(r) => self.check_len("raw_data", r.len() as u64, want),
            Data::Typed(..) => self.typed_bytes(model).map(|_| ()),
            Data::External { .. } => self.external_range(base_dir).map(|_| ()),
        }
    }

    fn check_len(&self, field: &'static str, found: u64, want: u64) -> Result<()> {
        if found != want {
            return Err(Error::tensor(
                &self.name,
                field,
                format!("{found} bytes"),
                format!(
                    "{} of {:?} takes {want} bytes",
                    self.element_type.name(),
                    self.dims
                ),
            ));
        }
        Ok(())
    }

    /// The bytes as ONNX stores them (`raw_data`'s layout).
    pub(crate) fn onnx_bytes<'m>(&self, model: &'m [u8], base_dir: &Path) -> Result<Cow<'m, [u8]>> {
        let want = self.onnx_len()?;
        match &self.data {
            Data::Raw(r) => {
                self.check_len("raw_data", r.len() as u64, want)?;
                Ok(Cow::Borrowed(&model[r.clone()]))
            }
            Data::Typed(..) => Ok(Cow::Owned(self.typed_bytes(model)?)),
            Data::External { .. } => {
                let too_large = || {
                    Error::tensor(
                        &self.name,
                        "external_data",
                        want,
                        "larger than this machine's memory",
                    )
                };
                let mut buf = Vec::new();
                buf.try_reserve_exact(usize::try_from(want).map_err(|_| too_large())?)
                    .map_err(|_| too_large())?;
                self.stream(model, base_dir, |piece| {
                    buf.extend_from_slice(piece);
                    Ok(())
                })?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    /// Hands the bytes as ONNX stores them to `sink` in order: inline data
    /// at once, external data in pieces of [`PIECE`] bytes (a multiple of 8,
    /// so a `BOOL` piece packs to whole bytes), never the whole tensor.
    pub(crate) fn stream(
        &self,
        model: &[u8],
        base_dir: &Path,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if !matches!(self.data, Data::External { .. }) {
            return sink(&self.onnx_bytes(model, base_dir)?);
        }
        self.read_external(base_dir, &mut sink)
    }

    /// Checks `BOOL` bytes are 0 or 1.
    pub(crate) fn check_bools(&self, bytes: &[u8]) -> Result<()> {
        match bytes.iter().find(|b| **b > 1) {
            Some(b) => Err(Error::tensor(
                &self.name,
                "data",
                b,
                "a BOOL byte is 0 or 1",
            )),
            None => Ok(()),
        }
    }

    /// The bytes as Hurray stores them: ONNX's, with `BOOL` packed to bits.
    pub(crate) fn hurray_bytes<'m>(
        &self,
        model: &'m [u8],
        base_dir: &Path,
    ) -> Result<Cow<'m, [u8]>> {
        let bytes = self.onnx_bytes(model, base_dir)?;
        if self.element_type != ElementType::Bool {
            return Ok(bytes);
        }
        self.check_bools(&bytes)?;
        Ok(Cow::Owned(hurray::pack::pack_codes(
            bytes.iter().copied(),
            1,
        )))
    }
}
