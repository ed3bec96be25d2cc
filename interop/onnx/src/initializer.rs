//! One initializer (`TensorProto`): its name, type and shape, where its
//! bytes are (inline `raw_data`, a typed field, or external data), and
//! those bytes as Hurray stores them.
//!
//! ONNX's `raw_data` is Hurray's values buffer byte for byte (little-endian,
//! sub-byte types packed from the least significant bit), except for `BOOL`,
//! one byte per element in ONNX and one bit in Hurray.

use crate::error::{Error, Result};
use crate::wire::{self, Field, Fields, Value};
use hurray::ElementType;
use std::borrow::Cow;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

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
    /// A typed field (`float_data`, `int32_data`, ...): its number and each
    /// occurrence (a packed run or one element), ranges of the model.
    Typed(u32, Vec<Field>),
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
        let mut typed: Vec<Field> = Vec::new();
        let mut external = Vec::new();
        let mut location = 0;
        let mut segmented = false;
        let shift = |r: Range<usize>| r.start + at..r.end + at;
        for field in Fields::new(proto, what) {
            let mut field = field.map_err(|e| shifted(e, at))?;
            match (field.number, field.value) {
                (NAME, Value::Bytes(s, e)) => {
                    name = Some(String::from_utf8_lossy(&proto[s..e]).into_owned());
                }
                (DATA_TYPE, Value::Varint(v)) => data_type = v as i32,
                (DIMS, _) => wire::scalars(proto, &field, None, &mut dims, what)?,
                (RAW_DATA, Value::Bytes(s, e)) => raw = Some(s + at..e + at),
                (
                    FLOAT_DATA | INT32_DATA | STRING_DATA | INT64_DATA | DOUBLE_DATA | UINT64_DATA,
                    _,
                ) => {
                    if let Value::Bytes(s, e) = field.value {
                        field.value = Value::Bytes(s + at, e + at);
                    }
                    field.span = shift(field.span);
                    typed.push(field);
                }
                (EXTERNAL_DATA, Value::Bytes(s, e)) => external.push(entry(&proto[s..e])?),
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
        let dims = dims
            .into_iter()
            .map(|d| i64::try_from(d).ok().filter(|d| *d >= 0).map(|d| d as u64))
            .collect::<Option<Vec<u64>>>();
        let Some(dims) = dims else {
            return bad("dims", "negative".into(), "dimensions are at least 0");
        };
        let data = if location == LOCATION_EXTERNAL {
            external_data(&name, external)?
        } else if let Some(r) = raw {
            Data::Raw(r)
        } else if let Some(first) = typed.first() {
            let number = first.number;
            if typed.iter().any(|f| f.number != number) || number != typed_field(element_type) {
                return bad(
                    "data",
                    format!("field {number}"),
                    &format!("not the field ONNX keeps {} in", element_type.name()),
                );
            }
            Data::Typed(number, typed)
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
                let (path, offset, length) = self.external_range(base_dir)?;
                let too_large = || {
                    Error::tensor(
                        &self.name,
                        "external_data",
                        length,
                        "larger than this machine's memory",
                    )
                };
                let len = usize::try_from(length).map_err(|_| too_large())?;
                let mut buf = Vec::new();
                buf.try_reserve_exact(len).map_err(|_| too_large())?;
                buf.resize(len, 0);
                let file = std::fs::File::open(&path).map_err(Error::io(&path))?;
                file.read_exact_at(&mut buf, offset)
                    .map_err(Error::io(&path))?;
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
        let (path, offset, length) = self.external_range(base_dir)?;
        let file = std::fs::File::open(&path).map_err(Error::io(&path))?;
        let mut buf = vec![0u8; PIECE.min(length) as usize];
        let mut done = 0u64;
        while done < length {
            let n = PIECE.min(length - done) as usize;
            file.read_exact_at(&mut buf[..n], offset + done)
                .map_err(Error::io(&path))?;
            sink(&buf[..n])?;
            done += n as u64;
        }
        Ok(())
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

    /// The values as Hurray stores them (ONNX's bytes, with `BOOL` packed to
    /// bits), read from the model or its external data file.
    pub fn values<'m>(&self, model: &'m crate::Model) -> Result<Cow<'m, [u8]>> {
        self.hurray_bytes(&model.bytes, &model.base_dir)
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
        if let Some(b) = bytes.iter().find(|b| **b > 1) {
            return Err(Error::tensor(
                &self.name,
                "data",
                b,
                "a BOOL byte is 0 or 1",
            ));
        }
        Ok(Cow::Owned(hurray::pack::pack_codes(
            bytes.iter().copied(),
            1,
        )))
    }

    /// The typed field decoded into `raw_data`'s layout.
    fn typed_bytes(&self, model: &[u8]) -> Result<Vec<u8>> {
        let Data::Typed(number, fields) = &self.data else {
            return Ok(Vec::new());
        };
        let et = self.element_type;
        // Bytes per entry: a float or double (a complex element takes two);
        // otherwise the element's width, sub-byte types keeping one packed
        // byte per entry (the 6-bit floats: one code each, packed below).
        let (width, fixed) = match *number {
            FLOAT_DATA => (4, Some(4)),
            DOUBLE_DATA => (8, Some(8)),
            _ => (et.bits().div_ceil(8) as usize, None),
        };
        let mut values = Vec::new();
        let mut out = Vec::new();
        for f in fields {
            values.clear();
            wire::scalars(model, f, fixed, &mut values, "TensorProto")?;
            for v in &values {
                out.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        if et.bits() == 6 {
            out = hurray::pack::pack_codes(out.into_iter().map(|c| c & 0x3f), 6);
        }
        let field = match *number {
            FLOAT_DATA => "float_data",
            INT32_DATA => "int32_data",
            INT64_DATA => "int64_data",
            DOUBLE_DATA => "double_data",
            UINT64_DATA => "uint64_data",
            _ => "string_data",
        };
        self.check_len(field, out.len() as u64, self.onnx_len()?)?;
        Ok(out)
    }

    /// The external file, offset and length, checked to lie inside the file
    /// and to hold exactly the tensor's bytes.
    fn external_range(&self, base_dir: &Path) -> Result<(PathBuf, u64, u64)> {
        let Data::External {
            location,
            offset,
            length,
        } = &self.data
        else {
            return Err(Error::tensor(
                &self.name,
                "data_location",
                "DEFAULT",
                "not external",
            ));
        };
        let path = base_dir.join(relative_location(&self.name, location)?);
        let size = std::fs::metadata(&path).map_err(Error::io(&path))?.len();
        let length = length.unwrap_or(size.saturating_sub(*offset));
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(Error::tensor(
                &self.name,
                "external_data",
                format!("offset {offset}, length {length}"),
                format!("outside {} ({size} bytes)", path.display()),
            ));
        }
        self.check_len("external_data.length", length, self.onnx_len()?)?;
        Ok((path, *offset, length))
    }
}

fn shifted(e: Error, at: usize) -> Error {
    match e {
        Error::Malformed {
            message,
            at: a,
            reason,
        } => Error::Malformed {
            message,
            at: a + at,
            reason,
        },
        e => e,
    }
}

/// The typed field ONNX keeps a type's values in.
fn typed_field(t: ElementType) -> u32 {
    use ElementType::*;
    match t {
        Float32 | Complex64 => FLOAT_DATA,
        Float64 | Complex128 => DOUBLE_DATA,
        Int64 => INT64_DATA,
        UInt32 | UInt64 => UINT64_DATA,
        _ => INT32_DATA,
    }
}

/// One `StringStringEntryProto` (key 1, value 2).
fn entry(bytes: &[u8]) -> Result<(String, String)> {
    let (mut key, mut value) = (String::new(), String::new());
    for f in Fields::new(bytes, "StringStringEntryProto") {
        let f = f?;
        if let Value::Bytes(s, e) = f.value {
            let text = String::from_utf8_lossy(&bytes[s..e]).into_owned();
            match f.number {
                1 => key = text,
                2 => value = text,
                _ => {}
            }
        }
    }
    Ok((key, value))
}

fn external_data(name: &str, entries: Vec<(String, String)>) -> Result<Data> {
    let (mut location, mut offset, mut length) = (None, 0, None);
    for (k, v) in entries {
        let number = |v: &str| {
            v.parse::<u64>().map_err(|_| {
                Error::tensor(name, "external_data", format!("{k}={v}"), "not a number")
            })
        };
        match k.as_str() {
            "location" => location = Some(v),
            "offset" => offset = number(&v)?,
            "length" => length = Some(number(&v)?),
            // "checksum" (SHA-1) and keys of later versions are not needed to read.
            _ => {}
        }
    }
    let location = location.ok_or_else(|| {
        Error::tensor(
            name,
            "external_data",
            "no location",
            "external data needs a location",
        )
    })?;
    Ok(Data::External {
        location,
        offset,
        length,
    })
}

/// `location` as a relative path that stays inside the model's directory
/// (ONNX Runtime's rule too): no root, no `..`.
pub(crate) fn relative_location(name: &str, location: &str) -> Result<PathBuf> {
    let path = Path::new(location);
    let inside = !location.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(Error::tensor(
            name,
            "external_data.location",
            format!("{location:?}"),
            "external data must be a relative path inside the model's directory",
        ));
    }
    Ok(path.to_owned())
}
