//! One initializer (`TensorProto`): its name, type and shape, where its
//! bytes are (inline `raw_data`, a typed field, or external data), and
//! those bytes as Hurray stores them.
//!
//! ONNX's `raw_data` is Hurray's values buffer byte for byte (little-endian,
//! sub-byte types packed from the least significant bit), except for `BOOL`,
//! one byte per element in ONNX and one bit in Hurray.

use crate::error::{Error, Result};
use crate::wire::{self, Fields, Value};
use hurray::ElementType;
use hurray::limits::MAX_ONNX_RANK;
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
            let field = field.map_err(|e| shifted(e, at))?;
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
                        .map_err(|e| shifted(e, at))?;
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
                    external.push(entry(&proto[s..e]).map_err(|e| shifted(e, at + s))?)
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
            external_data(&name, external)?
        } else if let Some(r) = raw {
            Data::Raw(r)
        } else if let Some(number) = typed {
            if mixed || number != typed_field(element_type) {
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

    /// The external data file this initializer names, if it is external.
    pub(crate) fn external_path(&self, base_dir: &Path) -> Option<PathBuf> {
        match &self.data {
            Data::External { location, .. } => relative_location(&self.name, location)
                .ok()
                .map(|p| base_dir.join(p)),
            _ => None,
        }
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
        let Data::Typed(number) = self.data else {
            return Ok(Vec::new());
        };
        let et = self.element_type;
        let field = match number {
            FLOAT_DATA => "float_data",
            INT32_DATA => "int32_data",
            INT64_DATA => "int64_data",
            DOUBLE_DATA => "double_data",
            UINT64_DATA => "uint64_data",
            _ => "string_data",
        };
        let count = self.count()?;
        let complex = matches!(et, ElementType::Complex64 | ElementType::Complex128);
        // What one entry is: a float or double (a complex element takes
        // two); for int32_data, one element, except the 2- and 4-bit types,
        // whose entries are bytes of packed codes (the 6-bit floats: one code
        // per entry, packed here).
        let (width, fixed, entries) = match number {
            FLOAT_DATA => (
                4,
                Some(4),
                if complex {
                    count.checked_mul(2)
                } else {
                    Some(count)
                },
            ),
            DOUBLE_DATA => (
                8,
                Some(8),
                if complex {
                    count.checked_mul(2)
                } else {
                    Some(count)
                },
            ),
            _ if matches!(et.bits(), 2 | 4) => {
                (1, None, hurray::pack::packed_len(count, et.bits()))
            }
            _ => (et.bits().div_ceil(8) as usize, None, Some(count)),
        };
        let entries = entries.ok_or_else(|| {
            Error::tensor(
                &self.name,
                "dims",
                format!("{:?}", self.dims),
                "the entry count overflows",
            )
        })?;
        let proto = &model[self.proto.clone()];
        let mut found = 0u64;
        self.for_each_entry(proto, number, fixed, |_| {
            found += 1;
            Ok(())
        })?;
        if found != entries {
            return Err(Error::tensor(
                &self.name,
                field,
                format!("{found} entries"),
                format!("{} of {:?} takes {entries}", et.name(), self.dims),
            ));
        }
        // Counted against the shape first: memory follows what is present.
        let mut out = Vec::new();
        out.try_reserve_exact(found as usize * width).map_err(|_| {
            Error::tensor(
                &self.name,
                field,
                found,
                "larger than this machine's memory",
            )
        })?;
        let range = entry_range(et, number);
        self.for_each_entry(proto, number, fixed, |v| {
            let value = match range {
                Range32::Any64 => v as i64 as i128,
                Range32::Int32 { .. } => i128::from(v as i64),
            };
            if let Range32::Int32 { min, max } = range
                && !(min..=max).contains(&value)
            {
                return Err(Error::tensor(
                    &self.name,
                    field,
                    value,
                    format!(
                        "not a value of {} as ONNX stores it ({min}..={max})",
                        et.name()
                    ),
                ));
            }
            out.extend_from_slice(&v.to_le_bytes()[..width]);
            Ok(())
        })?;
        if et.bits() == 6 {
            out = hurray::pack::pack_codes(out, 6);
        }
        self.check_len(field, out.len() as u64, self.onnx_len()?)?;
        Ok(out)
    }

    /// Calls `each` with every entry of the typed field `number` in `proto`.
    fn for_each_entry(
        &self,
        proto: &[u8],
        number: u32,
        fixed: Option<usize>,
        mut each: impl FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        for f in Fields::new(proto, "TensorProto") {
            let f = f?;
            if f.number == number {
                wire::each_scalar(proto, &f, fixed, "TensorProto", &mut each)?;
            }
        }
        Ok(())
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

/// The values an `int32_data` entry may hold for a type (bit patterns and
/// packed bytes as unsigned numbers); the other fields take any value.
#[derive(Debug, Clone, Copy)]
enum Range32 {
    Any64,
    Int32 { min: i128, max: i128 },
}

fn entry_range(t: ElementType, number: u32) -> Range32 {
    if number != INT32_DATA {
        return Range32::Any64;
    }
    let bits = match t.bits() {
        2 | 4 => 8, // a byte of packed codes
        1 => 1,     // BOOL: 0 or 1
        b => b,
    };
    match (t.class(), bits) {
        (hurray::ElementClass::SignedInt, b) if t.bits() >= 8 => Range32::Int32 {
            min: -(1 << (b - 1)),
            max: (1 << (b - 1)) - 1,
        },
        (_, b) => Range32::Int32 {
            min: 0,
            max: (1 << b.min(32)) - 1,
        },
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
            let text = std::str::from_utf8(&bytes[s..e])
                .map_err(|_| Error::Malformed {
                    message: "StringStringEntryProto",
                    at: s,
                    reason: "an external data entry is not UTF-8",
                })?
                .to_owned();
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
