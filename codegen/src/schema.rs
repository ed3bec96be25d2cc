//! Reading the facts the generator needs out of flatc's binary schema.

use anyhow::{Context, Result, anyhow, bail};
use flatbuffers_reflection::reflection;

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
    pub class: String,
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
        out.push(ElementTypeFacts {
            variant: v.name().to_owned(),
            value,
            doc: v
                .documentation()
                .map(|d| d.iter().map(|l| l.trim().to_owned()).collect())
                .unwrap_or_default(),
            bits: u32::try_from(num("hurray_bits")?)?,
            name: need("hurray_name")?,
            mlir: need("hurray_mlir")?,
            dlpack_code: u8::try_from(num("hurray_dlpack_code")?)?,
            dlpack_bits: u8::try_from(num("hurray_dlpack_bits")?)?,
            numpy: attr("hurray_numpy"),
            safetensors: attr("hurray_safetensors"),
            ml_dtypes: attr("hurray_ml_dtypes"),
            class,
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
