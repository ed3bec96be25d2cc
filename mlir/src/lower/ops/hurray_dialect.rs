//! The `hurray` dialect: `hurray.file` (file alignment and metadata) and
//! `hurray.tensor` (one entry, descriptor and wire-format buffers verbatim).

use crate::error::{Error, Result};
use crate::ffi;
use crate::lower::payload::raw_bytes;
use crate::lower::{Collector, Entry, FileAttrs, attr};
use crate::typed;
use crate::vocab;
use hurray::{
    Dim, ElementType, Layout, Quantization, TensorDescriptor, descriptor::QuantizationScheme,
};
use melior::ir::Attribute;
use melior::ir::OperationRef;
use std::collections::BTreeMap;

impl<'c> Collector<'c> {
    pub(crate) fn hurray_file(&mut self, op: &OperationRef<'c, '_>, desc: &str) -> Result<()> {
        if let Some((_, first)) = &self.file {
            return Err(Error::Malformed {
                op: desc.to_owned(),
                reason: format!("a second hurray.file (the first is {first})"),
            });
        }
        let alignment = attr(op, vocab::ALIGNMENT)
            .and_then(typed::integer_attr)
            .map(|a| {
                u64::try_from(a).map_err(|_| Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!("alignment {a}"),
                })
            })
            .transpose()?;
        let metadata = string_dict(attr(op, vocab::METADATA), desc, vocab::METADATA)?;
        self.file = Some((
            FileAttrs {
                alignment,
                metadata,
            },
            desc.to_owned(),
        ));
        Ok(())
    }

    pub(crate) fn hurray_tensor(&mut self, op: &OperationRef<'c, '_>, desc: &str) -> Result<()> {
        let bad = |reason: String| Error::Malformed {
            op: desc.to_owned(),
            reason,
        };
        let name = attr(op, vocab::NAME)
            .and_then(ffi::string_attr)
            .ok_or_else(|| bad("hurray.tensor needs a string `name`".into()))?;
        let et_ty = attr(op, vocab::ELEMENT_TYPE)
            .and_then(typed::type_attr_value)
            .ok_or_else(|| bad("hurray.tensor needs a type `element_type`".into()))?;
        let context = format!("tensor {name:?}");
        let et = self.element(et_ty, desc, &context)?;
        let shape: Vec<Dim> = attr(op, vocab::SHAPE)
            .and_then(typed::i64_array_attr)
            .ok_or_else(|| bad("hurray.tensor needs `shape = array<i64: ...>`".into()))?
            .into_iter()
            .map(|d| match d {
                -1 => Ok(Dim::Dynamic),
                d if d >= 0 => Ok(Dim::Fixed(d as u64)),
                d => Err(bad(format!(
                    "shape holds {d}; sizes are >= 0, and -1 is dynamic"
                ))),
            })
            .collect::<Result<_>>()?;
        let params: BTreeMap<String, Attribute<'c>> = attr(op, vocab::PARAMS)
            .and_then(ffi::dictionary_attr)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let int = |k: &str| params.get(k).and_then(|a| typed::integer_attr(*a));
        let ty_param = |k: &str| -> Result<Option<ElementType>> {
            match params.get(k).and_then(|a| typed::type_attr_value(*a)) {
                Some(t) => self
                    .element(t, desc, &format!("{context}, params.{k}"))
                    .map(Some),
                None => Ok(None),
            }
        };
        let nnz = || -> Result<u64> {
            int(vocab::NNZ)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| bad("a sparse hurray.tensor needs params.nnz >= 0".into()))
        };
        let layout_name = attr(op, vocab::LAYOUT)
            .and_then(ffi::string_attr)
            .ok_or_else(|| bad("hurray.tensor needs a string `layout`".into()))?;
        let index_type = ty_param(vocab::INDEX_TYPE)?.unwrap_or(ElementType::Int64);
        let layout = match layout_name.as_str() {
            "dense" => match params
                .get(vocab::STRIDES)
                .and_then(|a| typed::i64_array_attr(*a))
            {
                Some(s) => Layout::Strided(s),
                None => Layout::Dense,
            },
            "coo" => Layout::Coo {
                nnz: nnz()?,
                index_type,
                canonical: params
                    .get(vocab::CANONICAL)
                    .and_then(|a| typed::bool_attr(*a))
                    .unwrap_or(false),
            },
            "csr" => Layout::Csr {
                nnz: nnz()?,
                index_type,
            },
            "csc" => Layout::Csc {
                nnz: nnz()?,
                index_type,
            },
            other => {
                return Err(Error::Unsupported {
                    op: desc.to_owned(),
                    what: format!("layout {other:?}"),
                    reason: "this build lowers dense, coo, csr and csc".into(),
                });
            }
        };
        let mut d = TensorDescriptor::new(name.clone(), et, shape).with_layout(layout);
        d.descriptor_only = params
            .get(vocab::DESCRIPTOR_ONLY)
            .and_then(|a| typed::bool_attr(*a))
            .unwrap_or(false);
        if let Some(a) = int(vocab::ALIGNMENT) {
            d.alignment = Some(u64::try_from(a).map_err(|_| bad(format!("alignment {a}")))?);
        }
        d.metadata = string_dict(attr(op, vocab::METADATA), desc, vocab::METADATA)?;
        if let Some(q) = attr(op, vocab::QUANTIZATION).and_then(ffi::dictionary_attr) {
            let q: BTreeMap<String, Attribute<'c>> = q.into_iter().collect();
            let qi = |k: &str| q.get(k).and_then(|a| typed::integer_attr(*a));
            let qt = |k: &str| -> Result<Option<ElementType>> {
                match q.get(k).and_then(|a| typed::type_attr_value(*a)) {
                    Some(t) => self
                        .element(t, desc, &format!("{context}, quantization.{k}"))
                        .map(Some),
                    None => Ok(None),
                }
            };
            let axis = || -> Result<u32> {
                qi(vocab::AXIS)
                    .and_then(|a| u32::try_from(a).ok())
                    .ok_or_else(|| bad("quantization.axis must be a non-negative integer".into()))
            };
            let scheme_name = q
                .get(vocab::SCHEME)
                .and_then(|a| ffi::string_attr(*a))
                .unwrap_or_default();
            let scheme = match scheme_name.as_str() {
                "per_tensor" => QuantizationScheme::PerTensor,
                "per_axis" => QuantizationScheme::PerAxis { axis: axis()? },
                "per_block" => QuantizationScheme::PerBlock {
                    axis: axis()?,
                    block_size: qi(vocab::BLOCK_SIZE)
                        .and_then(|b| u64::try_from(b).ok())
                        .ok_or_else(|| bad("quantization.block_size must be >= 0".into()))?,
                },
                "per_flat_block" => QuantizationScheme::PerFlatBlock {
                    block_size: qi(vocab::BLOCK_SIZE)
                        .and_then(|b| u64::try_from(b).ok())
                        .ok_or_else(|| bad("quantization.block_size must be >= 0".into()))?,
                },
                other => {
                    return Err(bad(format!("unknown quantization scheme {other:?}")));
                }
            };
            d.quantization = Some(Quantization {
                scheme,
                expressed_type: qt(vocab::EXPRESSED_TYPE)?
                    .ok_or_else(|| bad("quantization.expressed_type is required".into()))?,
                scale_type: qt(vocab::SCALE_TYPE)?.unwrap_or(ElementType::Float32),
                zero_point_type: qt(vocab::ZERO_POINT_TYPE)?,
                storage_min: qi(vocab::STORAGE_MIN).unwrap_or(0),
                storage_max: qi(vocab::STORAGE_MAX).unwrap_or(0),
                tensor_scale: match q.get(vocab::TENSOR_SCALE) {
                    None => 1.0,
                    Some(a) => typed::float_attr(*a).ok_or_else(|| {
                        bad("quantization.tensor_scale must be a float attribute".into())
                    })?,
                },
                offset_type: qt(vocab::OFFSET_TYPE)?,
                ..Default::default()
            });
        }
        let mut buffers = Vec::new();
        for (i, b) in attr(op, vocab::BUFFERS)
            .and_then(typed::array_attr)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            buffers.push(raw_bytes(b, desc, &name, i)?);
        }
        if d.descriptor_only && !buffers.is_empty() {
            return Err(bad(format!(
                "tensor {name:?} is descriptor-only but lists {} buffer(s)",
                buffers.len()
            )));
        }
        self.add(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
            origin: None,
        })
    }
}

fn string_dict(
    a: Option<Attribute<'_>>,
    desc: &str,
    what: &str,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Some(a) = a else { return Ok(out) };
    let Some(entries) = ffi::dictionary_attr(a) else {
        return Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{what} must be a dictionary of strings"),
        });
    };
    for (k, v) in entries {
        let v = ffi::string_attr(v).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{what}.{k} is not a string"),
        })?;
        out.insert(k, v);
    }
    Ok(out)
}
