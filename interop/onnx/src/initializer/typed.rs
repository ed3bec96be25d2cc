//! Typed fields (`float_data`, `int32_data`, ...) decoded into `raw_data`'s
//! layout: counted against the shape before anything is allocated, each
//! entry checked to be a value of its type.

use super::{DOUBLE_DATA, Data, FLOAT_DATA, INT32_DATA, INT64_DATA, Initializer, UINT64_DATA};
use crate::error::{Error, Result};
use crate::wire::{self, Fields};
use hurray::ElementType;

impl Initializer {
    /// The typed field decoded into `raw_data`'s layout.
    pub(super) fn typed_bytes(&self, model: &[u8]) -> Result<Vec<u8>> {
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
        (hurray::elements::ElementClass::SignedInt, b) if t.bits() >= 8 => Range32::Int32 {
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
pub(super) fn typed_field(t: ElementType) -> u32 {
    use ElementType::*;
    match t {
        Float32 | Complex64 => FLOAT_DATA,
        Float64 | Complex128 => DOUBLE_DATA,
        Int64 => INT64_DATA,
        UInt32 | UInt64 => UINT64_DATA,
        _ => INT32_DATA,
    }
}
