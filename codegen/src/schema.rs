//! Reading the facts the generator needs out of flatc's binary schema.

use anyhow::{Context, Result, anyhow, bail};
use flatbuffers_reflection::reflection;

/// A schema identifier in snake case, as the generated code names things:
/// `PerAxis` -> `per_axis`, `ShardMember` -> `shard_member`, `Csr` -> `csr`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The fully qualified name of the element-type enum in the schema.
pub const ELEMENT_TYPE_ENUM: &str = "hurray.fb.ElementType";

/// One element type as the schema declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementTypeFacts {
    /// Enum value name, e.g. `Float8E4M3FN`.
    pub variant: String,
    /// Wire value.
    pub value: u8,
    /// Documentation comment lines.
    pub doc: Vec<String>,
    pub bits: u32,
    pub name: String,
    pub mlir: String,
    pub dlpack_code: u8,
    pub dlpack_bits: u8,
    pub numpy: Option<String>,
    pub safetensors: Option<String>,
    pub ml_dtypes: Option<String>,
    /// ONNX `TensorProto.DataType` value, where ONNX has the type.
    pub onnx: Option<i32>,
    pub class: String,
    /// Bit layout of a float type (`hurray_float`); `None` for other classes.
    pub float: Option<FloatFacts>,
}

/// The bit layout of a float element type, from its `hurray_float` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FloatFacts {
    pub exponent_bits: u32,
    pub mantissa_bits: u32,
    pub bias: i32,
    /// One of [`FLOAT_SPECIALS`].
    pub specials: String,
}

/// The values `specials=` may take (schema comment of `hurray_float`).
pub const FLOAT_SPECIALS: &[&str] = &["ieee", "fn", "fnuz", "finite", "fnu"];

impl FloatFacts {
    /// Parses `exponent=E mantissa=M bias=B specials=S` (every key once, in any order).
    fn parse(variant: &str, text: &str, bits: u32) -> Result<FloatFacts> {
        let mut fields = std::collections::BTreeMap::new();
        for part in text.split_whitespace() {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                anyhow!("ElementType.{variant}: hurray_float part {part:?} is not key=value")
            })?;
            if fields.insert(k, v).is_some() {
                bail!("ElementType.{variant}: hurray_float repeats {k}");
            }
        }
        let mut take = |k: &str| {
            fields
                .remove(k)
                .ok_or_else(|| anyhow!("ElementType.{variant}: hurray_float lacks {k}="))
        };
        let number = |k: &str, v: &str| -> Result<i64> {
            v.parse().map_err(|_| {
                anyhow!("ElementType.{variant}: hurray_float {k}={v:?} is not a number")
            })
        };
        let e = take("exponent")?;
        let m = take("mantissa")?;
        let b = take("bias")?;
        let specials = take("specials")?.to_owned();
        if let Some(k) = fields.keys().next() {
            bail!("ElementType.{variant}: hurray_float has unknown key {k:?}");
        }
        if !FLOAT_SPECIALS.contains(&specials.as_str()) {
            bail!("ElementType.{variant}: unknown hurray_float specials {specials:?}");
        }
        let facts = FloatFacts {
            exponent_bits: u32::try_from(number("exponent", e)?)?,
            mantissa_bits: u32::try_from(number("mantissa", m)?)?,
            bias: i32::try_from(number("bias", b)?)?,
            specials,
        };
        let sign = u32::from(facts.specials != "fnu");
        if sign + facts.exponent_bits + facts.mantissa_bits != bits {
            bail!(
                "ElementType.{variant}: hurray_float describes {} bits, hurray_bits says {bits}",
                sign + facts.exponent_bits + facts.mantissa_bits
            );
        }
        Ok(facts)
    }
}

/// The element-type facts of a binary schema (`flatc --schema -b`), in value
/// order, `Invalid` excluded. Every required attribute must be present.
pub fn element_types(bfbs: &[u8]) -> Result<Vec<ElementTypeFacts>> {
    let schema = reflection::root_as_schema(bfbs).context("reading the binary schema")?;
    let en = schema
        .enums()
        .iter()
        .find(|e| e.name() == ELEMENT_TYPE_ENUM)
        .ok_or_else(|| anyhow!("the schema declares no enum {ELEMENT_TYPE_ENUM}"))?;
    let mut out = Vec::new();
    for v in en.values().iter() {
        if v.value() == 0 {
            continue; // `Invalid`
        }
        let attr = |key: &str| -> Option<String> {
            v.attributes()?
                .iter()
                .find(|kv| kv.key() == key)
                .and_then(|kv| kv.value().map(str::to_owned))
        };
        let need = |key: &str| -> Result<String> {
            attr(key).ok_or_else(|| anyhow!("ElementType.{} lacks attribute {key}", v.name()))
        };
        let num = |key: &str| -> Result<u64> {
            let s = need(key)?;
            s.parse()
                .map_err(|_| anyhow!("ElementType.{}: {key} = {s:?} is not a number", v.name()))
        };
        let value = u8::try_from(v.value())
            .map_err(|_| anyhow!("ElementType.{} has value {} > 255", v.name(), v.value()))?;
        let class = need("hurray_class")?;
        if !["bool", "int", "uint", "float", "complex"].contains(&class.as_str()) {
            bail!("ElementType.{}: unknown hurray_class {class:?}", v.name());
        }
        let bits = u32::try_from(num("hurray_bits")?)?;
        let float = match (class.as_str(), attr("hurray_float")) {
            ("float", Some(text)) => Some(FloatFacts::parse(v.name(), &text, bits)?),
            ("float", None) => bail!("ElementType.{} lacks attribute hurray_float", v.name()),
            (_, Some(_)) => bail!("ElementType.{}: hurray_float on a {class} type", v.name()),
            (_, None) => None,
        };
        out.push(ElementTypeFacts {
            variant: v.name().to_owned(),
            value,
            doc: v
                .documentation()
                .map(|d| d.iter().map(|l| l.trim().to_owned()).collect())
                .unwrap_or_default(),
            bits,
            name: need("hurray_name")?,
            mlir: need("hurray_mlir")?,
            dlpack_code: u8::try_from(num("hurray_dlpack_code")?)?,
            dlpack_bits: u8::try_from(num("hurray_dlpack_bits")?)?,
            numpy: attr("hurray_numpy"),
            safetensors: attr("hurray_safetensors"),
            ml_dtypes: attr("hurray_ml_dtypes"),
            onnx: attr("hurray_onnx")
                .map(|s| {
                    s.parse().map_err(|_| {
                        anyhow!(
                            "ElementType.{}: hurray_onnx = {s:?} is not a number",
                            v.name()
                        )
                    })
                })
                .transpose()?,
            class,
            float,
        });
    }
    out.sort_by_key(|f| f.value);
    for pair in out.windows(2) {
        if pair[0].name == pair[1].name {
            bail!("two element types share the short name {:?}", pair[0].name);
        }
    }
    Ok(out)
}
