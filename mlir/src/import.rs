//! Importing a Hurray file as an MLIR module.
//!
//! [`ImportStyle::Hurray`] (the default) gives one `hurray.file` op and a
//! `hurray.tensor` op per tensor: every descriptor field, and each buffer as
//! a `dense_resource` blob of Hurray's wire bytes that borrows the file's
//! memory (no copy). Lowering that module reproduces the file's tensors
//! exactly. [`ImportStyle::MlProgram`] gives plain upstream IR, one
//! `ml_program.global` per dense tensor, for tools that know no `hurray`.

use crate::context::Mlir;
use crate::error::{Error, Result};
use crate::ffi;
use crate::types;
use crate::vocab;
use hurray::{Dim, ElementType, File, Layout, TensorRef, descriptor::QuantizationScheme};
use melior::Context;
use melior::ir::attribute::{
    ArrayAttribute, BoolAttribute, DenseI64ArrayAttribute, DictionaryAttribute, FloatAttribute,
    IntegerAttribute, StringAttribute, TypeAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{Attribute, BlockLike, Identifier, Location, Module, Type, Value};

/// The shape of the imported IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ImportStyle {
    /// `hurray.file` + `hurray.tensor` ops: lossless for every tensor.
    #[default]
    Hurray,
    /// `ml_program.global` per tensor: dense, unquantized tensors only.
    MlProgram,
}

/// Imports `file` into a new module of `mlir`'s context. The module's
/// `dense_resource` blobs borrow `file`'s bytes, hence the shared lifetime.
pub fn import_file<'m>(mlir: &'m Mlir, file: &'m File, style: ImportStyle) -> Result<Module<'m>> {
    let ctx = mlir.context();
    let loc = Location::unknown(ctx);
    let module = Module::new(loc);
    match style {
        ImportStyle::Hurray => import_hurray(ctx, &module, file)?,
        ImportStyle::MlProgram => import_ml_program(ctx, &module, file)?,
    }
    if !module.as_operation().verify() {
        return Err(Error::Malformed {
            op: "imported module".into(),
            reason: format!("fails to verify:\n{}", mlir.take_diagnostics()),
        });
    }
    Ok(module)
}

/// Imports `file` and prints the module as MLIR text (with its resources).
pub fn import_to_text(file: &File, style: ImportStyle) -> Result<String> {
    let mlir = Mlir::new()?;
    let module = import_file(&mlir, file, style)?;
    let bytes = ffi::operation_bytes(module.as_operation());
    String::from_utf8(bytes).map_err(|_| Error::Malformed {
        op: "imported module".into(),
        reason: "MLIR printed bytes that are not UTF-8".into(),
    })
}

/// Imports `file` and writes the module as MLIR bytecode.
pub fn import_to_bytecode(file: &File, style: ImportStyle) -> Result<Vec<u8>> {
    let mlir = Mlir::new()?;
    let module = import_file(&mlir, file, style)?;
    Ok(module.as_operation().write_bytecode())
}

fn id<'c>(ctx: &'c Context, name: &str) -> Identifier<'c> {
    Identifier::new(ctx, name)
}

fn i64_attr(ctx: &Context, v: i64) -> Attribute<'_> {
    IntegerAttribute::new(IntegerType::new(ctx, 64).into(), v).into()
}

fn type_of(ctx: &Context, et: ElementType) -> Result<Type<'_>> {
    types::mlir_type(ctx, et).ok_or_else(|| Error::UnsupportedType {
        op: "import".into(),
        ty: et.mlir_name().to_owned(),
        context: format!("element type {}", et.name()),
        hint: " (this MLIR build does not parse the schema's spelling)",
    })
}

/// Metadata as a dictionary attribute. MLIR has no attribute name for an
/// empty key (`{"" = ...}` does not parse), so one is refused rather than
/// printed as IR that no MLIR tool reads back.
fn string_dict<'c>(
    ctx: &'c Context,
    owner: &str,
    entries: impl Iterator<Item = (String, String)>,
) -> Result<Attribute<'c>> {
    let mut named = Vec::new();
    for (k, v) in entries {
        if k.is_empty() {
            return Err(Error::Unsupported {
                op: "import".into(),
                what: format!("metadata of {owner}: an empty key"),
                reason: "MLIR attribute names cannot be empty".into(),
            });
        }
        named.push((id(ctx, &k), StringAttribute::new(ctx, &v).into()));
    }
    Ok(DictionaryAttribute::new(ctx, &named).into())
}

/// The dimensions of `d` as MLIR's signed 64-bit sizes, `dynamic` standing
/// for a dynamic one. A fixed dimension of 2^63 or more has no MLIR form
/// (it would read back as dynamic), so it is refused.
fn mlir_dims(d: &hurray::TensorDescriptor, dynamic: i64) -> Result<Vec<i64>> {
    d.shape
        .iter()
        .map(|dim| match dim {
            Dim::Dynamic => Ok(dynamic),
            Dim::Fixed(n) => i64::try_from(*n).map_err(|_| Error::Unsupported {
                op: "import".into(),
                what: format!("tensor {:?}: dimension {n}", d.name),
                reason: "MLIR shapes are signed 64-bit, so 2^63 and above do not fit".into(),
            }),
        })
        .collect()
}

/// A resource key MLIR prints as a bare identifier.
fn resource_key(tensor: &str, role: &str) -> String {
    let mut k: String = format!("{tensor}.{role}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        k.insert(0, '_');
    }
    k
}

fn alignment_of(bytes: &[u8]) -> usize {
    let addr = bytes.as_ptr() as usize;
    [64, 32, 16, 8, 4, 2]
        .into_iter()
        .find(|a| addr.is_multiple_of(*a))
        .unwrap_or(1)
}

/// A payload reference to `bytes` (borrowed, never copied), as a buffer of
/// raw bytes (`tensor<N x i8>`).
fn byte_buffer<'c>(ctx: &'c Context, key: &str, bytes: &'c [u8]) -> Result<Attribute<'c>> {
    let i8t: Type<'c> = IntegerType::new(ctx, 8).into();
    let ty: Type<'c> = RankedTensorType::new(&[bytes.len() as u64], i8t, None).into();
    if bytes.is_empty() {
        // An empty blob does not survive MLIR bytecode; a 0-element dense
        // attribute does (ADR-007: 0 bytes, nothing to point at).
        return ffi::dense_from_raw(ty, &[]).ok_or_else(|| Error::Malformed {
            op: "import".into(),
            reason: "MLIR rejected an empty dense buffer".into(),
        });
    }
    // SAFETY: `bytes` borrows the `File` for 'c (see `import_file`'s
    // signature), which outlives the module and every print of it; the file
    // is never mutated while borrowed.
    Ok(unsafe { ffi::unmanaged_resource(ty, key, bytes, alignment_of(bytes)) })
}

fn import_hurray<'c>(ctx: &'c Context, module: &Module<'c>, file: &'c File) -> Result<()> {
    let loc = Location::unknown(ctx);
    let reader = file.reader();
    let handle_ty = Type::parse(ctx, "!hurray.file_handle").ok_or_else(|| Error::Dialect {
        diagnostics: "!hurray.file_handle does not parse: is the hurray dialect loaded?".into(),
    })?;
    let file_op = OperationBuilder::new(vocab::FILE_OP, loc)
        .add_attributes(&[
            (
                id(ctx, vocab::ALIGNMENT),
                i64_attr(ctx, reader.alignment() as i64),
            ),
            (
                id(ctx, vocab::METADATA),
                string_dict(
                    ctx,
                    "the file",
                    reader.metadata().map(|(k, v)| (k.to_owned(), v.to_owned())),
                )?,
            ),
        ])
        .add_results(&[handle_ty])
        .build()?;
    let body = module.body();
    let file_op = body.append_operation(file_op);
    let handle: Value<'c, '_> = file_op.result(0)?.into();
    for t in file.tensors() {
        let op = tensor_op(ctx, loc, handle, &t)?;
        body.append_operation(op);
    }
    Ok(())
}

fn tensor_op<'c, 'a>(
    ctx: &'c Context,
    loc: Location<'c>,
    handle: Value<'c, 'a>,
    t: &TensorRef<'c>,
) -> Result<melior::ir::Operation<'c>> {
    let d = t.descriptor();
    let shape = mlir_dims(&d, -1)?;
    let mut params: Vec<(Identifier<'c>, Attribute<'c>)> = Vec::new();
    let layout = match &d.layout {
        Layout::Dense => "dense",
        Layout::Strided(s) => {
            params.push((
                id(ctx, vocab::STRIDES),
                DenseI64ArrayAttribute::new(ctx, s).into(),
            ));
            "dense"
        }
        Layout::Coo {
            nnz,
            index_type,
            canonical,
        } => {
            params.push((id(ctx, vocab::NNZ), i64_attr(ctx, *nnz as i64)));
            params.push((
                id(ctx, vocab::INDEX_TYPE),
                TypeAttribute::new(type_of(ctx, *index_type)?).into(),
            ));
            params.push((
                id(ctx, vocab::CANONICAL),
                BoolAttribute::new(ctx, *canonical).into(),
            ));
            "coo"
        }
        Layout::Csr { nnz, index_type } | Layout::Csc { nnz, index_type } => {
            params.push((id(ctx, vocab::NNZ), i64_attr(ctx, *nnz as i64)));
            params.push((
                id(ctx, vocab::INDEX_TYPE),
                TypeAttribute::new(type_of(ctx, *index_type)?).into(),
            ));
            if matches!(d.layout, Layout::Csr { .. }) {
                "csr"
            } else {
                "csc"
            }
        }
    };
    if d.descriptor_only {
        params.push((
            id(ctx, vocab::DESCRIPTOR_ONLY),
            BoolAttribute::new(ctx, true).into(),
        ));
    }
    if let Some(a) = d.alignment {
        params.push((id(ctx, vocab::ALIGNMENT), i64_attr(ctx, a as i64)));
    }
    let quantization: Attribute<'c> = match &d.quantization {
        None => Attribute::unit(ctx),
        Some(q) if q.is_composite() => {
            // Neither MLIR's quant dialect nor the dialect's quantization
            // attribute has code tables, quantized scales, group indices or
            // block formats: the tensor would lose how its codes read.
            return Err(Error::Unsupported {
                op: "import".into(),
                what: format!(
                    "tensor {:?}: quantization.{}",
                    d.name,
                    q.composite_field().unwrap_or("composite")
                ),
                reason:
                    "format 1.4 composite quantization (code tables, quantized scales or offsets, \
                         tensor offsets, group indices, block formats) has no MLIR form"
                        .into(),
            });
        }
        Some(q) => {
            let (scheme, axis, block) = match q.scheme {
                QuantizationScheme::PerTensor => ("per_tensor", 0, 0),
                QuantizationScheme::PerAxis { axis } => ("per_axis", axis, 0),
                QuantizationScheme::PerBlock { axis, block_size } => {
                    ("per_block", axis, block_size)
                }
                QuantizationScheme::PerFlatBlock { block_size } => {
                    ("per_flat_block", 0, block_size)
                }
            };
            let mut e: Vec<(Identifier<'c>, Attribute<'c>)> = vec![
                (
                    id(ctx, vocab::SCHEME),
                    StringAttribute::new(ctx, scheme).into(),
                ),
                (id(ctx, vocab::AXIS), i64_attr(ctx, i64::from(axis))),
                (id(ctx, vocab::BLOCK_SIZE), i64_attr(ctx, block as i64)),
                (
                    id(ctx, vocab::EXPRESSED_TYPE),
                    TypeAttribute::new(type_of(ctx, q.expressed_type)?).into(),
                ),
                (
                    id(ctx, vocab::SCALE_TYPE),
                    TypeAttribute::new(type_of(ctx, q.scale_type)?).into(),
                ),
                (id(ctx, vocab::STORAGE_MIN), i64_attr(ctx, q.storage_min)),
                (id(ctx, vocab::STORAGE_MAX), i64_attr(ctx, q.storage_max)),
            ];
            if let Some(z) = q.zero_point_type {
                e.push((
                    id(ctx, vocab::ZERO_POINT_TYPE),
                    TypeAttribute::new(type_of(ctx, z)?).into(),
                ));
            }
            // Format 1.2's fields, only when used (a 1.1 descriptor reads the same).
            if q.tensor_scale.to_bits() != 1.0f64.to_bits() {
                e.push((
                    id(ctx, vocab::TENSOR_SCALE),
                    FloatAttribute::new(ctx, Type::float64(ctx), q.tensor_scale).into(),
                ));
            }
            if let Some(o) = q.offset_type {
                e.push((
                    id(ctx, vocab::OFFSET_TYPE),
                    TypeAttribute::new(type_of(ctx, o)?).into(),
                ));
            }
            DictionaryAttribute::new(ctx, &e).into()
        }
    };
    let mut buffers = Vec::new();
    if !d.descriptor_only {
        // In wire order, scales and zero points included.
        for (role, bytes) in t.buffers() {
            buffers.push(byte_buffer(
                ctx,
                &resource_key(&d.name, role.name()),
                bytes,
            )?);
        }
    }
    let op = OperationBuilder::new(vocab::TENSOR_OP, loc)
        .add_operands(&[handle])
        .add_attributes(&[
            (
                id(ctx, vocab::NAME),
                StringAttribute::new(ctx, &d.name).into(),
            ),
            (
                id(ctx, vocab::ELEMENT_TYPE),
                TypeAttribute::new(type_of(ctx, d.element_type)?).into(),
            ),
            (
                id(ctx, vocab::SHAPE),
                DenseI64ArrayAttribute::new(ctx, &shape).into(),
            ),
            (
                id(ctx, vocab::LAYOUT),
                StringAttribute::new(ctx, layout).into(),
            ),
            (
                id(ctx, vocab::PARAMS),
                DictionaryAttribute::new(ctx, &params).into(),
            ),
            (id(ctx, vocab::QUANTIZATION), quantization),
            (
                id(ctx, vocab::BUFFERS),
                ArrayAttribute::new(ctx, &buffers).into(),
            ),
            (
                id(ctx, vocab::METADATA),
                string_dict(
                    ctx,
                    &format!("tensor {:?}", d.name),
                    d.metadata.clone().into_iter(),
                )?,
            ),
        ])
        .build()?;
    Ok(op)
}

fn import_ml_program<'c>(ctx: &'c Context, module: &Module<'c>, file: &'c File) -> Result<()> {
    let loc = Location::unknown(ctx);
    let body = module.body();
    for t in file.tensors() {
        let d = t.descriptor();
        let unsupported = |what: &str| Error::Unsupported {
            op: "import (ml_program style)".into(),
            what: format!("tensor {:?}: {what}", d.name),
            reason:
                "ml_program.global holds dense, unquantized tensors; import in the hurray style"
                    .into(),
        };
        if d.layout != Layout::Dense {
            return Err(unsupported(&format!("layout {}", d.layout.name())));
        }
        if d.quantization.is_some() {
            return Err(unsupported("quantization"));
        }
        let dims = mlir_dims(&d, i64::MIN)?;
        let el = type_of(ctx, d.element_type)?;
        let ty_text = format!(
            "tensor<{}{}>",
            dims.iter()
                .map(|x| if *x == i64::MIN {
                    "?x".to_owned()
                } else {
                    format!("{x}x")
                })
                .collect::<String>(),
            ffi::type_str(el)
        );
        let ty = Type::parse(ctx, &ty_text).ok_or_else(|| Error::Malformed {
            op: "import".into(),
            reason: format!("type {ty_text} does not parse"),
        })?;
        let mut attrs: Vec<(Identifier<'c>, Attribute<'c>)> = vec![
            (
                id(ctx, "sym_name"),
                StringAttribute::new(ctx, &d.name).into(),
            ),
            (
                id(ctx, "sym_visibility"),
                StringAttribute::new(ctx, "private").into(),
            ),
            (id(ctx, "type"), TypeAttribute::new(ty).into()),
        ];
        if d.descriptor_only {
            attrs.push((id(ctx, "is_mutable"), Attribute::unit(ctx)));
        } else {
            let bytes = t
                .buffer(hurray::descriptor::BufferRole::Values)
                .unwrap_or(&[]);
            let value = match types::storage(d.element_type) {
                types::Storage::Same { .. } if !bytes.is_empty() => {
                    // SAFETY: `bytes` borrows the file for 'c, which outlives
                    // the module (see `import_file`).
                    unsafe {
                        ffi::unmanaged_resource(
                            ty,
                            &resource_key(&d.name, "values"),
                            bytes,
                            alignment_of(bytes),
                        )
                    }
                }
                storage => {
                    let count = d.element_count().unwrap_or(0);
                    let raw = types::dense_raw(storage, bytes, count);
                    ffi::dense_from_raw(ty, &raw).ok_or_else(|| Error::Malformed {
                        op: "import".into(),
                        reason: format!(
                            "MLIR rejects {} raw bytes for {}",
                            raw.len(),
                            ffi::type_str(ty)
                        ),
                    })?
                }
            };
            attrs.push((id(ctx, "value"), value));
        }
        let op = OperationBuilder::new("ml_program.global", loc)
            .add_attributes(&attrs)
            .build()?;
        body.append_operation(op);
    }
    Ok(())
}
