//! GGUF metadata values and their rendering as Hurray metadata strings.

use std::fmt;

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::convert) enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(GgufArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// A metadata array: elements of one type, kept typed so an array costs
/// about what its bytes in the file do (a `u8` array one byte an element).
#[derive(Debug, Clone, PartialEq)]
pub(in crate::convert) enum GgufArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Array(Vec<GgufArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl GgufValue {
    /// The value as a metadata string: a string as it is, an integer in
    /// decimal, a float in the shortest decimal that reads back to the same
    /// float, never in exponent form (`0.00001`, `10000`, `-0`; `NaN`, `inf`,
    /// `-inf`), a bool `true` or `false`, an array as compact JSON (strings
    /// JSON-escaped, non-finite floats as the JSON strings `"NaN"`, `"inf"`,
    /// `"-inf"`, since JSON has no such numbers).
    pub(in crate::convert) fn render(&self) -> String {
        match self {
            GgufValue::U8(v) => v.to_string(),
            GgufValue::I8(v) => v.to_string(),
            GgufValue::U16(v) => v.to_string(),
            GgufValue::I16(v) => v.to_string(),
            GgufValue::U32(v) => v.to_string(),
            GgufValue::I32(v) => v.to_string(),
            GgufValue::U64(v) => v.to_string(),
            GgufValue::I64(v) => v.to_string(),
            GgufValue::F32(v) => v.to_string(),
            GgufValue::F64(v) => v.to_string(),
            GgufValue::Bool(v) => v.to_string(),
            GgufValue::String(s) => s.clone(),
            GgufValue::Array(a) => {
                let mut out = String::new();
                a.render_json(&mut out);
                out
            }
        }
    }

    /// The GGUF name of the value's type, for messages.
    pub(in crate::convert) fn type_name(&self) -> &'static str {
        match self {
            GgufValue::U8(_) => "uint8",
            GgufValue::I8(_) => "int8",
            GgufValue::U16(_) => "uint16",
            GgufValue::I16(_) => "int16",
            GgufValue::U32(_) => "uint32",
            GgufValue::I32(_) => "int32",
            GgufValue::F32(_) => "float32",
            GgufValue::Bool(_) => "bool",
            GgufValue::String(_) => "string",
            GgufValue::Array(_) => "array",
            GgufValue::U64(_) => "uint64",
            GgufValue::I64(_) => "int64",
            GgufValue::F64(_) => "float64",
        }
    }
}

/// A float as a JSON value: a number when finite, else a string.
fn json_float(out: &mut String, v: impl fmt::Display, finite: bool) {
    if finite {
        out.push_str(&v.to_string());
    } else {
        out.push('"');
        out.push_str(&v.to_string());
        out.push('"');
    }
}

impl GgufArray {
    fn render_json(&self, out: &mut String) {
        fn list<T>(out: &mut String, items: &[T], mut one: impl FnMut(&mut String, &T)) {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                one(out, item);
            }
            out.push(']');
        }
        fn num<T: fmt::Display>(out: &mut String, v: &T) {
            out.push_str(&v.to_string());
        }
        match self {
            GgufArray::U8(a) => list(out, a, num),
            GgufArray::I8(a) => list(out, a, num),
            GgufArray::U16(a) => list(out, a, num),
            GgufArray::I16(a) => list(out, a, num),
            GgufArray::U32(a) => list(out, a, num),
            GgufArray::I32(a) => list(out, a, num),
            GgufArray::U64(a) => list(out, a, num),
            GgufArray::I64(a) => list(out, a, num),
            GgufArray::Bool(a) => list(out, a, num),
            GgufArray::F32(a) => list(out, a, |o, v| json_float(o, v, v.is_finite())),
            GgufArray::F64(a) => list(out, a, |o, v| json_float(o, v, v.is_finite())),
            GgufArray::String(a) => list(out, a, |o, s| {
                o.push_str(&serde_json::Value::from(s.as_str()).to_string());
            }),
            GgufArray::Array(a) => list(out, a, |o, inner| inner.render_json(o)),
        }
    }
}
