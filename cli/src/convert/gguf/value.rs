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

/// The scalar types, by GGUF id and name.
const SCALARS: [(u32, &str); 12] = [
    (0, "uint8"),
    (1, "int8"),
    (2, "uint16"),
    (3, "int16"),
    (4, "uint32"),
    (5, "int32"),
    (6, "float32"),
    (7, "bool"),
    (8, "string"),
    (10, "uint64"),
    (11, "int64"),
    (12, "float64"),
];

/// The id of GGUF's array type.
const ARRAY: u32 = 9;

impl GgufArray {
    /// The GGUF id and name of the elements' type.
    fn element(&self) -> (u32, String) {
        let scalar = |id: u32| {
            (
                id,
                SCALARS
                    .iter()
                    .find(|s| s.0 == id)
                    .map_or("?", |s| s.1)
                    .to_owned(),
            )
        };
        match self {
            GgufArray::U8(_) => scalar(0),
            GgufArray::I8(_) => scalar(1),
            GgufArray::U16(_) => scalar(2),
            GgufArray::I16(_) => scalar(3),
            GgufArray::U32(_) => scalar(4),
            GgufArray::I32(_) => scalar(5),
            GgufArray::F32(_) => scalar(6),
            GgufArray::Bool(_) => scalar(7),
            GgufArray::String(_) => scalar(8),
            GgufArray::U64(_) => scalar(10),
            GgufArray::I64(_) => scalar(11),
            GgufArray::F64(_) => scalar(12),
            GgufArray::Array(inner) => {
                // Nested arrays are recorded by the first's type; GGUF
                // lets them differ, and a file where they do is refused
                // on the way out (`encode` checks).
                let t = inner
                    .first()
                    .map_or("array<uint8>".to_owned(), |a| a.type_spec());
                (ARRAY, t)
            }
        }
    }

    fn type_spec(&self) -> String {
        format!("array<{}>", self.element().1)
    }

    fn len(&self) -> usize {
        match self {
            GgufArray::U8(v) => v.len(),
            GgufArray::I8(v) => v.len(),
            GgufArray::U16(v) => v.len(),
            GgufArray::I16(v) => v.len(),
            GgufArray::U32(v) => v.len(),
            GgufArray::I32(v) => v.len(),
            GgufArray::F32(v) => v.len(),
            GgufArray::Bool(v) => v.len(),
            GgufArray::String(v) => v.len(),
            GgufArray::Array(v) => v.len(),
            GgufArray::U64(v) => v.len(),
            GgufArray::I64(v) => v.len(),
            GgufArray::F64(v) => v.len(),
        }
    }

    /// The array parsed back from its [`GgufValue::render`]ing `text`, its
    /// type spelled `spec` (`array<T>`). Numbers are parsed from their own
    /// digits in their own type (a float32 straight to `f32`, never through
    /// `f64`), so every value reads back to the same bits.
    fn parse(spec: &str, text: &str) -> anyhow::Result<GgufArray> {
        use anyhow::{Context, bail};
        let inner = spec
            .strip_prefix("array<")
            .and_then(|s| s.strip_suffix('>'))
            .with_context(|| format!("{spec:?} is not an array type"))?;
        let body = text
            .trim()
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .context("not a JSON array")?;
        // Numbers and bools hold no comma: their items split on commas.
        let tokens: Vec<&str> = body
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let float = |t: &str| -> Option<f64> { parse_float(t.trim_matches('"')) };
        let float32 = |t: &str| -> Option<f32> {
            match t.trim_matches('"') {
                "NaN" => Some(f32::NAN),
                "inf" => Some(f32::INFINITY),
                "-inf" => Some(f32::NEG_INFINITY),
                t => t.parse().ok(),
            }
        };
        fn each<T>(tokens: &[&str], f: impl Fn(&str) -> Option<T>) -> anyhow::Result<Vec<T>> {
            tokens
                .iter()
                .map(|t| f(t).with_context(|| format!("{t:?} is not of the array's type")))
                .collect()
        }
        Ok(match inner {
            "uint8" => GgufArray::U8(each(&tokens, |t| t.parse().ok())?),
            "int8" => GgufArray::I8(each(&tokens, |t| t.parse().ok())?),
            "uint16" => GgufArray::U16(each(&tokens, |t| t.parse().ok())?),
            "int16" => GgufArray::I16(each(&tokens, |t| t.parse().ok())?),
            "uint32" => GgufArray::U32(each(&tokens, |t| t.parse().ok())?),
            "int32" => GgufArray::I32(each(&tokens, |t| t.parse().ok())?),
            "uint64" => GgufArray::U64(each(&tokens, |t| t.parse().ok())?),
            "int64" => GgufArray::I64(each(&tokens, |t| t.parse().ok())?),
            "float32" => GgufArray::F32(each(&tokens, float32)?),
            "float64" => GgufArray::F64(each(&tokens, float)?),
            "bool" => GgufArray::Bool(each(&tokens, |t| t.parse().ok())?),
            "string" => GgufArray::String(
                serde_json::from_str(text).context("not a JSON array of strings")?,
            ),
            t if t.starts_with("array<") => {
                let items: Vec<serde_json::Value> =
                    serde_json::from_str(text).context("not a JSON array of arrays")?;
                GgufArray::Array(
                    items
                        .iter()
                        .map(|v| GgufArray::parse(t, &v.to_string()))
                        .collect::<anyhow::Result<_>>()?,
                )
            }
            t => bail!("unknown array element type {t:?}"),
        })
    }

    /// Appends the array's GGUF encoding (element type, count, elements).
    fn encode(&self, out: &mut Vec<u8>) -> anyhow::Result<()> {
        let (id, _) = self.element();
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        macro_rules! each {
            ($v:expr) => {
                for x in $v {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            };
        }
        match self {
            GgufArray::U8(v) => out.extend_from_slice(v),
            GgufArray::I8(v) => each!(v),
            GgufArray::U16(v) => each!(v),
            GgufArray::I16(v) => each!(v),
            GgufArray::U32(v) => each!(v),
            GgufArray::I32(v) => each!(v),
            GgufArray::F32(v) => each!(v),
            GgufArray::U64(v) => each!(v),
            GgufArray::I64(v) => each!(v),
            GgufArray::F64(v) => each!(v),
            GgufArray::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
            GgufArray::String(v) => {
                for s in v {
                    encode_string(s, out);
                }
            }
            GgufArray::Array(v) => {
                let first = v.first().map(GgufArray::type_spec);
                for a in v {
                    if Some(a.type_spec()) != first {
                        anyhow::bail!("nested arrays of different types are not written");
                    }
                    a.encode(out)?;
                }
            }
        }
        Ok(())
    }
}

/// A rendered float: a decimal, or `NaN`, `inf`, `-inf`.
fn parse_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        s => s.parse().ok(),
    }
}

/// Appends a GGUF string: its `u64` length and its bytes.
pub(in crate::convert) fn encode_string(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl GgufValue {
    /// The value's full GGUF type: a scalar's name (`uint32`), an array's
    /// `array<T>` (nested: `array<array<T>>`).
    pub(in crate::convert) fn type_spec(&self) -> String {
        match self {
            GgufValue::Array(a) => a.type_spec(),
            v => v.type_name().to_owned(),
        }
    }

    /// The value of type `spec` whose [`render`](Self::render)ing is `text`.
    pub(in crate::convert) fn parse(spec: &str, text: &str) -> anyhow::Result<GgufValue> {
        use anyhow::Context;
        let bad = || format!("{text:?} is not a GGUF {spec}");
        Ok(match spec {
            "uint8" => GgufValue::U8(text.parse().with_context(bad)?),
            "int8" => GgufValue::I8(text.parse().with_context(bad)?),
            "uint16" => GgufValue::U16(text.parse().with_context(bad)?),
            "int16" => GgufValue::I16(text.parse().with_context(bad)?),
            "uint32" => GgufValue::U32(text.parse().with_context(bad)?),
            "int32" => GgufValue::I32(text.parse().with_context(bad)?),
            "uint64" => GgufValue::U64(text.parse().with_context(bad)?),
            "int64" => GgufValue::I64(text.parse().with_context(bad)?),
            "float32" => GgufValue::F32(match text {
                "NaN" => f32::NAN,
                "inf" => f32::INFINITY,
                "-inf" => f32::NEG_INFINITY,
                t => t.parse().with_context(bad)?,
            }),
            "float64" => GgufValue::F64(parse_float(text).with_context(bad)?),
            "bool" => GgufValue::Bool(text.parse().with_context(bad)?),
            "string" => GgufValue::String(text.to_owned()),
            s if s.starts_with("array<") => {
                GgufValue::Array(GgufArray::parse(s, text).with_context(bad)?)
            }
            s => anyhow::bail!("unknown GGUF type {s:?}"),
        })
    }

    /// Appends the value's type id and encoding.
    pub(in crate::convert) fn encode(&self, out: &mut Vec<u8>) -> anyhow::Result<()> {
        let id = match self {
            GgufValue::Array(_) => ARRAY,
            v => SCALARS
                .iter()
                .find(|s| s.1 == v.type_name())
                .map_or(0, |s| s.0),
        };
        out.extend_from_slice(&id.to_le_bytes());
        match self {
            GgufValue::U8(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
            GgufValue::Bool(v) => out.push(u8::from(*v)),
            GgufValue::String(s) => encode_string(s, out),
            GgufValue::Array(a) => a.encode(out)?,
        }
        Ok(())
    }
}
