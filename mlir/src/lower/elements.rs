//! A tensor entry from an elements attribute (dense, splat, `dense_resource`,
//! sparse), with the quantization and sparse encoding of its declared type.

use super::payload::{Buf, blob_buf};
use super::quant::check_storage;
use super::sparse::dense_to_sparse;
use super::{Collector, Entry, dims, element_count, short};
use crate::error::{Error, Result};
use crate::ffi::{self, Blob, SparseLevel};
use crate::typed;
use crate::types::{self, Storage};
use hurray::TensorDescriptor;
use hurray::elements::ElementCount;
use melior::ir::{Attribute, Type};

impl<'c> Collector<'c> {
    /// A tensor entry from an elements attribute; `declared` is the type the
    /// op gives the value (a result type, a global's type), which may add a
    /// quantized element type or a sparse encoding.
    pub(crate) fn elements_entry(
        &self,
        name: &str,
        desc: &str,
        value: Attribute<'c>,
        declared: Option<Type<'c>>,
    ) -> Result<Entry<'c>> {
        let attr_ty = typed::attr_type(value);
        let raw = ffi::ranked_shape(attr_ty).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "constant of type {} is not a ranked tensor",
                ffi::type_str(attr_ty)
            ),
        })?;
        let shape = dims(&raw, desc, attr_ty)?;
        let count = match element_count(&shape) {
            ElementCount::Known(n) => n,
            ElementCount::Dynamic => {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!(
                        "constant of type {} has no static element count",
                        ffi::type_str(attr_ty)
                    ),
                });
            }
            ElementCount::Overflow => {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!(
                        "constant of type {} has more than 2^64 elements",
                        ffi::type_str(attr_ty)
                    ),
                });
            }
        };
        let declared = declared
            .filter(|t| {
                typed::is_ranked_tensor(*t) && ffi::ranked_shape(*t).as_deref() == Some(&raw)
            })
            .unwrap_or(attr_ty);
        let data_el = ffi::element_type(attr_ty).ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: format!("{} has no element type", ffi::type_str(attr_ty)),
        })?;
        let declared_el = ffi::element_type(declared).unwrap_or(data_el);
        let context = format!("tensor {name:?}");
        let (et, quant) = match ffi::quant_type(declared_el) {
            Some(q) => {
                let (et, quant, bytes) =
                    self.quantization(&q, declared_el, &shape, desc, &context)?;
                (et, Some((quant, bytes)))
            }
            None => (self.element(declared_el, desc, &context)?, None),
        };
        if quant.is_none() && declared_el != data_el {
            let data_et = self.element(data_el, desc, &context)?;
            if data_et != et {
                return Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: format!(
                        "value of element type {} declared as {}",
                        ffi::type_str(data_el),
                        ffi::type_str(declared_el)
                    ),
                });
            }
        }
        let storage = types::storage(et);
        check_storage(data_el, storage, desc)?;

        let encoding = typed::tensor_encoding(declared).or_else(|| typed::tensor_encoding(attr_ty));
        let sparse = encoding.and_then(ffi::sparse_encoding);
        if let (Some(enc), None) = (encoding, &sparse) {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!("tensor encoding {}", ffi::attr_str(enc)),
                reason: "only #sparse_tensor.encoding encodings map to Hurray layouts".into(),
            });
        }

        let mut d = TensorDescriptor::new(name, et, shape.clone());
        let mut buffers = Vec::new();
        if typed::is_sparse_elements(value) {
            let (layout, bufs) =
                self.sparse_entry(value, &shape, storage, sparse.as_ref(), desc, name)?;
            d.layout = layout;
            buffers = bufs;
        } else {
            let values = self.values_buf(value, storage, count, desc, name)?;
            match &sparse {
                None => buffers.push(values),
                Some(enc) if enc.levels.iter().all(|l| *l == SparseLevel::Dense) => {
                    buffers.push(values)
                }
                Some(enc) => {
                    if !zero_code_is_zero(et) {
                        return Err(Error::Unsupported {
                            op: desc.to_owned(),
                            what: format!(
                                "a dense constant of {} with a sparse encoding",
                                ffi::type_str(data_el)
                            ),
                            reason: "the type has no zero (its all-zero code is a number), so \
                                     leaving zeros out would drop values; write it as sparse<...>"
                                .into(),
                        });
                    }
                    let (layout, bufs) =
                        dense_to_sparse(values, &shape, storage, enc, desc, self.budget(name))?;
                    d.layout = layout;
                    buffers = bufs;
                }
            }
        }
        if let Some((q, (scales, zps))) = quant {
            d.quantization = Some(q);
            if count == 0 {
                // An empty tensor has no bytes at all, scales included
                // (ADR-007; the runtime's rule): the scheme and types remain.
                buffers.push(Buf::Raw(&[]));
                buffers.push(Buf::Raw(&[]));
            } else {
                buffers.push(Buf::Owned(scales));
                buffers.push(Buf::Owned(zps));
            }
        }
        Ok(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
            origin: None,
        })
    }

    /// The values of a dense or dense_resource attribute, `count` elements.
    pub(crate) fn values_buf(
        &self,
        value: Attribute<'c>,
        storage: Storage,
        count: u64,
        desc: &str,
        name: &str,
    ) -> Result<Buf<'c>> {
        if count == 0 {
            // ADR-007: an empty tensor has a 0-byte buffer, whatever MLIR stores.
            return Ok(Buf::Raw(&[]));
        }
        if ffi::is_dense_resource(value) {
            return match ffi::resource_blob(value) {
                Blob::Data(key, bytes) => blob_buf(bytes, storage, count, desc, name, &key),
                Blob::Missing(key) => match crate::reference::target(&key) {
                    // Not elided data: a reference hurray-export-constants left.
                    Some(tensor) => Err(Error::Unsupported {
                        op: desc.to_owned(),
                        what: format!("tensor {name:?}: dense_resource<{key:?}>"),
                        reason: format!(
                            "it refers to tensor {tensor:?} of the file the module's \
                             hurray.file names; run hurray-import-constants first"
                        ),
                    }),
                    None => Err(Error::MissingResourceData {
                        op: desc.to_owned(),
                        tensor: name.to_owned(),
                        resource: key,
                    }),
                },
                Blob::NotResource => Err(Error::Malformed {
                    op: desc.to_owned(),
                    reason: "dense_resource attribute without a resource handle".into(),
                }),
            };
        }
        if !typed::is_dense_elements(value) {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!("elements attribute {}", short(&ffi::attr_str(value))),
                reason: "not a dense, dense_resource or sparse elements attribute".into(),
            });
        }
        let splat = ffi::dense_is_splat(value);
        // MLIR's storage: one element for a splat; else Hurray's size for
        // byte-aligned types and bit-packed i1 (the runtime's rule), one byte
        // per element for the other sub-byte types (2, 4 and 6 bits).
        let len = match (splat, storage) {
            (true, Storage::Same { bytes }) => Some(bytes as u64),
            (true, _) => Some(1),
            (false, Storage::BytePerElement { .. }) => Some(count),
            (false, _) => hurray::elements::packed_len(count, storage.bits()),
        }
        .ok_or_else(|| Error::Malformed {
            op: desc.to_owned(),
            reason: "constant size overflows".into(),
        })?;
        let len = usize::try_from(len).map_err(|_| Error::Malformed {
            op: desc.to_owned(),
            reason: "constant larger than the address space".into(),
        })?;
        // SAFETY: `value` is a dense int/float/complex elements attribute
        // (string elements were rejected by the element type mapping), and
        // `len` is exactly its storage size: one element for a splat, else
        // `count` elements at MLIR's storage width (bit-packed for i1, one
        // byte for 2-, 4- and 6-bit types), as `check_storage` confirmed.
        let data = unsafe { ffi::dense_raw(value, len) };
        Ok(if splat {
            Buf::Splat {
                element: data,
                storage,
                count,
            }
        } else {
            match storage {
                Storage::Same { .. } => Buf::Raw(data),
                Storage::Bits => Buf::Packed {
                    data,
                    count,
                    bits: 1,
                },
                Storage::BytePerElement { bits } => Buf::Unpacked { data, bits },
            }
        })
    }
}

/// Whether the all-zero code of `et` is the value 0, the implicit value a
/// dense constant's conversion to a sparse layout leaves out. Not for
/// `f8E8M0FNU`, whose code 0 is 2^-127 (it has no zero); the float layouts
/// come from the schema through `hurray::minifloat`.
fn zero_code_is_zero(et: hurray::ElementType) -> bool {
    hurray::minifloat::to_f64(et, 0).is_none_or(|v| v == 0.0)
}

#[cfg(test)]
mod tests {
    use super::super::{LowerOptions, collect};
    use super::*;
    use melior::ir::BlockLike;
    use melior::ir::operation::OperationLike;

    #[test]
    fn dense_resource_and_dense_payloads_are_borrowed_not_copied() {
        let mlir = crate::Mlir::new().unwrap();
        let module = mlir
            .parse_text(
                r#"ml_program.global private @r(dense_resource<blob> : tensor<2xf32>) : tensor<2xf32>
ml_program.global private @d(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
{-#
  dialect_resources: { builtin: { blob: "0x040000000000803F00000040" } }
#-}"#,
            )
            .unwrap();
        let collected = collect(&module.as_operation(), LowerOptions::default()).unwrap();
        let body = module.body();
        let ops: Vec<_> =
            std::iter::successors(body.first_operation(), |o| o.next_in_block()).collect();
        let value = |i: usize| ops[i].attribute("value").unwrap();
        let Blob::Data(_, blob) = ffi::resource_blob(value(0)) else {
            panic!("resource without data")
        };
        // SAFETY: a dense f32 attribute of 2 elements stores 8 bytes.
        let dense = unsafe { ffi::dense_raw(value(1), 8) };
        for (entry, source) in collected.entries.iter().zip([blob, dense]) {
            let [Buf::Raw(bytes)] = entry.buffers.as_slice() else {
                panic!("{:?}", entry.buffers)
            };
            assert_eq!(bytes.as_ptr(), source.as_ptr(), "{}", entry.desc.name);
            assert_eq!(bytes.len(), 8);
        }
    }
}
