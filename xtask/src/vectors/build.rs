//! Valid files and their expectations: a [`Spec`] per tensor (descriptor,
//! stored buffers, expected values), written by the `hurray` writer and
//! described from the specs, never from what a reader reads back.

use super::Vector;
use super::encode::{decode_all, encode, f32_codes, float_json, hex, int_codes, ints_json};
use anyhow::{Context, Result, bail};
use hurray::{
    Dim, ElementType, Layout, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme, elements::ElementClass, shape,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One tensor to write: its descriptor, buffers and expected JSON.
pub(super) struct Spec {
    pub(super) desc: TensorDescriptor,
    pub(super) buffers: Vec<Vec<u8>>,
    /// Extra expectation fields (values, indices, pointers, quantization values).
    pub(super) extra: serde_json::Map<String, Value>,
}

impl Spec {
    pub(super) fn new(desc: TensorDescriptor) -> Self {
        Spec {
            desc,
            buffers: Vec::new(),
            extra: serde_json::Map::new(),
        }
    }

    /// A dense tensor whose row-major values are `codes`.
    pub(super) fn dense(name: &str, et: ElementType, dims: &[u64], codes: &[u128]) -> Result<Self> {
        let mut s = Spec::new(TensorDescriptor::new(name, et, shape(dims)));
        s.buffers.push(encode(et, codes));
        s.extra.insert("values".into(), decode_all(et, codes)?);
        Ok(s)
    }

    /// The spec with its descriptor changed by `f`.
    pub(super) fn map_desc(mut self, f: impl FnOnce(TensorDescriptor) -> TensorDescriptor) -> Self {
        self.desc = f(self.desc);
        self
    }

    /// The spec with the expectation field `key` set to `v`.
    pub(super) fn with(mut self, key: &str, v: Value) -> Self {
        self.extra.insert(key.into(), v);
        self
    }
}

fn dims_json(shape: &[Dim]) -> Value {
    Value::Array(
        shape
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => json!(n),
                Dim::Dynamic => json!("?"),
            })
            .collect(),
    )
}

fn metadata_json(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>(),
    )
}

/// Writes a file of `specs` and describes it; `offsets` come from the file
/// itself (the writer chooses them), everything else from the specs.
pub(super) fn build(
    name: &str,
    description: &str,
    alignment: Option<u64>,
    file_metadata: &[(&str, &str)],
    specs: Vec<Spec>,
) -> Result<Vector> {
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes)?;
    // Format 1.4: every vector records a BLAKE3 digest of each buffer too.
    w.set_digests(Some(hurray::integrity::DigestAlgorithm::Blake3))?;
    // Format 1.5: and an identity, drawn from its name rather than at
    // random, so that regenerating the vectors gives the same bytes.
    let file_id = file_id_of(name);
    w.set_file_id(Some(file_id));
    if let Some(a) = alignment {
        w.set_alignment(a)?;
    }
    for (k, v) in file_metadata {
        w.set_metadata(*k, *v);
    }
    for s in &specs {
        let b: Vec<&[u8]> = s.buffers.iter().map(Vec::as_slice).collect();
        w.add_tensor(&s.desc, &b)
            .with_context(|| format!("vector {name}: writing {}", s.desc.name))?;
    }
    w.finish()?;

    let file_alignment = alignment.unwrap_or(64);
    let mut specs = specs;
    specs.sort_by(|a, b| a.desc.name.as_bytes().cmp(b.desc.name.as_bytes()));
    let mut tensors = Vec::new();
    for s in &specs {
        let d = &s.desc;
        let plan = d.buffer_plan()?;
        let mut t = serde_json::Map::new();
        t.insert("name".into(), json!(d.name));
        t.insert("dtype".into(), json!(d.element_type.name()));
        t.insert("shape".into(), dims_json(&d.shape));
        t.insert("layout".into(), json!(d.layout.name()));
        match &d.layout {
            Layout::Dense => {}
            Layout::Strided(st) => {
                t.insert("strides".into(), json!(st));
            }
            Layout::Coo {
                nnz,
                index_type,
                canonical,
            } => {
                t.insert("nnz".into(), json!(nnz));
                t.insert("index_type".into(), json!(index_type.name()));
                t.insert("canonical".into(), json!(canonical));
            }
            Layout::Csr { nnz, index_type } | Layout::Csc { nnz, index_type } => {
                t.insert("nnz".into(), json!(nnz));
                t.insert("index_type".into(), json!(index_type.name()));
            }
        }
        t.insert("descriptor_only".into(), json!(d.descriptor_only));
        t.insert(
            "alignment".into(),
            json!(d.alignment.unwrap_or(file_alignment)),
        );
        t.insert(
            "element_count".into(),
            plan.elements.map_or(Value::Null, |e| json!(e)),
        );
        let roles = plan.buffers();
        let buffers: Vec<Value> = if d.descriptor_only {
            Vec::new()
        } else {
            roles
                .iter()
                .zip(&s.buffers)
                .map(|((role, len), b)| {
                    // Computed here from the bytes, not taken from the writer.
                    let crc32c = hurray::integrity::ChecksumAlgorithm::Crc32c.of(b);
                    let blake3 = hurray::integrity::DigestAlgorithm::Blake3.of(b).to_hex();
                    json!({
                        "role": role.name(), "length": len, "hex": hex(b),
                        "crc32c": crc32c, "blake3": blake3,
                    })
                })
                .collect()
        };
        t.insert("buffers".into(), Value::Array(buffers));
        t.insert(
            "quantization".into(),
            match &d.quantization {
                None => Value::Null,
                Some(q) => {
                    // 0 for the parameters a scheme does not have.
                    // A level's fields, then those only the outer one has.
                    let mut qj = level_json(q);
                    for (key, value) in [
                        (
                            "zero_point_type",
                            json!(q.zero_point_type.map(ElementType::name)),
                        ),
                        ("storage_min", json!(q.storage_min)),
                        ("storage_max", json!(q.storage_max)),
                        ("offset_type", json!(q.offset_type.map(ElementType::name))),
                        (
                            "group_index_type",
                            json!(q.group_index_type.map(ElementType::name)),
                        ),
                        (
                            "block_format",
                            json!(q.block_format.map(hurray::descriptor::BlockFormat::name)),
                        ),
                        (
                            "scale_quantization",
                            json!(q.scale_quantization.as_deref().map(level_json)),
                        ),
                        (
                            "offset_quantization",
                            json!(q.offset_quantization.as_deref().map(level_json)),
                        ),
                    ] {
                        qj[key] = value;
                    }
                    for key in [
                        "scales",
                        "zero_points",
                        "offsets",
                        "code_table",
                        "group_index",
                        "dequantized",
                    ] {
                        if let Some(v) = s.extra.get(key) {
                            qj[key] = v.clone();
                        }
                    }
                    qj
                }
            },
        );
        t.insert("metadata".into(), metadata_json(&d.metadata));
        for key in ["values", "indices", "pointers"] {
            t.insert(key.into(), s.extra.get(key).cloned().unwrap_or(Value::Null));
        }
        tensors.push(Value::Object(t));
    }
    let metadata: BTreeMap<String, String> = file_metadata
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Ok(Vector {
        name: name.to_owned(),
        description: description.to_owned(),
        bytes,
        json: json!({
            "valid": true,
            "version": [hurray::format::VERSION_MAJOR, hurray::format::VERSION_MINOR],
            "alignment": file_alignment,
            "metadata": metadata_json(&metadata),
            "file_id": file_id.to_string(),
            "tensors": tensors,
        }),
    })
}

/// A vector's identity (format 1.5): the first 16 bytes of its name's
/// BLAKE3 digest.
fn file_id_of(name: &str) -> hurray::sharded::FileId {
    let digest = hurray::integrity::DigestAlgorithm::Blake3.of(name.as_bytes());
    let mut id = [0u8; hurray::sharded::FILE_ID_LEN];
    id.copy_from_slice(&digest.0[..hurray::sharded::FILE_ID_LEN]);
    hurray::sharded::FileId(id)
}

/// A second level of quantization (format 1.4), as an expectation spells it.
fn level_json(l: &Quantization) -> Value {
    json!({
        "scheme": l.scheme.kind().name(),
        "axis": l.scheme.axis().unwrap_or(0),
        "block_size": l.scheme.block_size().unwrap_or(0),
        "expressed_type": l.expressed_type.name(),
        "scale_type": l.scale_type.name(),
        "code_table_type": l.code_table_type.map(ElementType::name),
        "tensor_scale": l.tensor_scale,
        "tensor_offset": l.tensor_offset,
    })
}

/// A sparse tensor: index buffers then values.
pub(super) fn sparse(
    name: &str,
    et: ElementType,
    dims: &[u64],
    layout: Layout,
    index_buffers: &[(&str, &[i128])],
    values: &[u128],
) -> Result<Spec> {
    let it = match &layout {
        Layout::Coo { index_type, .. }
        | Layout::Csr { index_type, .. }
        | Layout::Csc { index_type, .. } => *index_type,
        _ => bail!("not a sparse layout"),
    };
    let mut s = Spec::new(TensorDescriptor::new(name, et, shape(dims)).with_layout(layout));
    for (role, v) in index_buffers {
        s.buffers.push(encode(it, &int_codes(it, v)));
        s.extra.insert((*role).into(), ints_json(v));
    }
    s.buffers.push(encode(et, values));
    s.extra.insert("values".into(), decode_all(et, values)?);
    Ok(s)
}

/// A quantized dense tensor; `dequantized` is computed here from the inputs.
#[allow(clippy::too_many_arguments)]
pub(super) fn quantized(
    name: &str,
    et: ElementType,
    dims: &[u64],
    scheme: QuantizationScheme,
    stored: &[i128],
    scales: &[f32],
    zero_points: Option<(ElementType, &[i128])>,
) -> Result<Spec> {
    let q = Quantization {
        scheme,
        expressed_type: ElementType::Float32,
        scale_type: ElementType::Float32,
        zero_point_type: zero_points.map(|z| z.0),
        storage_min: if et.class() == ElementClass::SignedInt {
            -(1i64 << (et.bits() - 1))
        } else {
            0
        },
        storage_max: if et.class() == ElementClass::SignedInt {
            (1i64 << (et.bits() - 1)) - 1
        } else {
            (1i64 << et.bits()) - 1
        },
        tensor_scale: 1.0,
        offset_type: None,
        ..Default::default()
    };
    let mut s = Spec::new(TensorDescriptor::new(name, et, shape(dims)).with_quantization(q));
    s.buffers.push(encode(et, &int_codes(et, stored)));
    s.buffers
        .push(encode(ElementType::Float32, &f32_codes(scales)));
    s.buffers.push(match zero_points {
        Some((zt, z)) => encode(zt, &int_codes(zt, z)),
        None => Vec::new(),
    });
    // Index of the scale for element i (row-major), per the schema's rule.
    // Per-axis: one scale per index along the axis. Per-block: the scales
    // have the tensor's shape with the axis shrunk to ceil(d / block), row-major.
    let mut deq = Vec::new();
    for (i, &v) in stored.iter().enumerate() {
        let i = i as u64;
        let along = |a: u32| {
            let a = a as usize;
            let inner: u64 = dims[a + 1..].iter().product();
            let d = dims[a];
            (i / (d * inner), (i / inner) % d, i % inner, d, inner)
        };
        let si = match scheme {
            QuantizationScheme::PerTensor => 0,
            QuantizationScheme::PerAxis { axis } => along(axis).1,
            QuantizationScheme::PerBlock { axis, block_size } => {
                let (outer, idx, rest, d, inner) = along(axis);
                (outer * d.div_ceil(block_size) + idx / block_size) * inner + rest
            }
            QuantizationScheme::PerFlatBlock { block_size } => i / block_size,
        } as usize;
        let zp = zero_points.map_or(0, |z| z.1[si]);
        deq.push(float_json(f64::from(
            ((v - zp) as f64 * f64::from(scales[si])) as f32,
        )));
    }
    s.extra
        .insert("values".into(), decode_all(et, &int_codes(et, stored))?);
    s.extra.insert(
        "scales".into(),
        decode_all(ElementType::Float32, &f32_codes(scales))?,
    );
    s.extra.insert(
        "zero_points".into(),
        match zero_points {
            Some((_, z)) => ints_json(z),
            None => json!([]),
        },
    );
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}

/// The stored-value parts of a [`scaled`] tensor: element type, shape and
/// raw codes (integers' two's complement, floats' bits).
pub(super) struct Stored<'a> {
    pub(super) et: ElementType,
    pub(super) dims: &'a [u64],
    pub(super) codes: &'a [u128],
}

/// A per-block quantized dense tensor whose scales may be any scale type
/// (the microscaling E8M0 and E4M3FN included), with a tensor scale and
/// offsets (format 1.2). `dequantized` is computed here, from the schema's
/// formula: (stored - 0) * scale * tensor_scale + offset, in f64, rounded
/// once to f32.
pub(super) fn scaled(
    name: &str,
    stored: Stored<'_>,
    (axis, block_size): (u32, u64),
    scales: (ElementType, &[u128]),
    tensor_scale: f64,
    offsets: Option<(ElementType, &[u128])>,
) -> Result<Spec> {
    let Stored { et, dims, codes } = stored;
    let mut q = Quantization::new(
        QuantizationScheme::PerBlock { axis, block_size },
        ElementType::Float32,
        scales.0,
    );
    q.tensor_scale = tensor_scale;
    q.offset_type = offsets.map(|o| o.0);
    let mut s = Spec::new(TensorDescriptor::new(name, et, shape(dims)).with_quantization(q));
    s.buffers.push(encode(et, codes));
    s.buffers.push(encode(scales.0, scales.1));
    s.buffers.push(Vec::new());
    if let Some((ot, o)) = offsets {
        s.buffers.push(encode(ot, o));
    }
    let value = |t: ElementType, code: u128| -> f64 {
        match t.class() {
            ElementClass::SignedInt => {
                let shift = 128 - t.bits();
                ((code << shift) as i128 >> shift) as f64
            }
            ElementClass::UnsignedInt => code as f64,
            _ => hurray::minifloat::to_f64(t, code as u64).unwrap_or(f64::NAN),
        }
    };
    let a = axis as usize;
    let inner: u64 = dims[a + 1..].iter().product();
    let d = dims[a];
    let deq = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let i = i as u64;
            let (outer, idx, rest) = (i / (d * inner), (i / inner) % d, i % inner);
            let si = ((outer * d.div_ceil(block_size) + idx / block_size) * inner + rest) as usize;
            let scaled = value(et, c) * value(scales.0, scales.1[si]) * tensor_scale;
            let v = match offsets {
                Some((ot, o)) => scaled + value(ot, o[si]),
                None => scaled,
            };
            float_json(f64::from(v as f32))
        })
        .collect();
    s.extra.insert("values".into(), decode_all(et, codes)?);
    s.extra
        .insert("scales".into(), decode_all(scales.0, scales.1)?);
    s.extra.insert("zero_points".into(), json!([]));
    if let Some((ot, o)) = offsets {
        s.extra.insert("offsets".into(), decode_all(ot, o)?);
    }
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}
