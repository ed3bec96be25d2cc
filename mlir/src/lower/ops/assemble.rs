//! `sparse_tensor.assemble` of constant positions, coordinates and values
//! into a CSR, CSC or COO tensor.

use crate::error::{Error, Result};
use crate::ffi::{self, RawDim};
use crate::lower::payload::Buf;
use crate::lower::quant::check_storage;
use crate::lower::sparse::{SparseKind, classify, encode_indices, read_ints, unsupported_encoding};
use crate::lower::{Collector, Entry, attr, dims};
use crate::typed;
use crate::types;
use hurray::{Dim, ElementType, Layout, TensorDescriptor};
use melior::ir::operation::OperationLike;
use melior::ir::{OperationRef, Type, ValueLike};

impl<'c> Collector<'c> {
    /// `sparse_tensor.assemble` of constant positions, coordinates and values
    /// into a CSR, CSC or COO tensor.
    pub(crate) fn assemble(
        &mut self,
        op: &OperationRef<'c, '_>,
        desc: &str,
        name: &str,
    ) -> Result<()> {
        let bad = |reason: String| Error::Malformed {
            op: desc.to_owned(),
            reason,
        };
        let ty = op.result(0).map(|r| r.r#type())?;
        let raw = ffi::ranked_shape(ty)
            .ok_or_else(|| bad(format!("result {} is not ranked", ffi::type_str(ty))))?;
        let shape = dims(&raw, desc, ty)?;
        let enc = typed::tensor_encoding(ty)
            .and_then(ffi::sparse_encoding)
            .ok_or_else(|| bad("assemble without a sparse encoding".into()))?;
        let rank = shape.len();
        let kind = classify(&enc, rank).ok_or_else(|| unsupported_encoding(desc, &enc))?;
        if op.operand_count() != 3 {
            return Err(Error::Unsupported {
                op: desc.to_owned(),
                what: format!(
                    "sparse_tensor.assemble with {} operands",
                    op.operand_count()
                ),
                reason: "Hurray lowers (positions, coordinates), values".into(),
            });
        }
        // Each operand must come from a constant; otherwise the tensor is a
        // run-time value, not data to store.
        let mut attrs = Vec::new();
        for i in 0..3 {
            let constant = op.operand(i).ok().and_then(ffi::defining_op).and_then(|d| {
                ["value", "values"]
                    .iter()
                    .find_map(|k| attr(&d, k).filter(|a| typed::is_elements(*a)))
            });
            match constant {
                Some(a) => attrs.push(a),
                None => {
                    self.skipped.push(format!(
                        "{desc}: tensor {name:?} assembles run-time values, not constants"
                    ));
                    return Ok(());
                }
            }
        }
        let el = ffi::element_type(ty).ok_or_else(|| bad("no element type".into()))?;
        let et = self.element(el, desc, &format!("tensor {name:?}"))?;
        let storage = types::storage(et);
        check_storage(
            ffi::element_type(typed::attr_type(attrs[2])).unwrap_or(el),
            storage,
            desc,
        )?;
        let nnz = elements_of(typed::attr_type(attrs[2]))
            .ok_or_else(|| bad("values of non-static size".into()))?;
        let n_pos = elements_of(typed::attr_type(attrs[0])).unwrap_or(0);
        let n_crd = elements_of(typed::attr_type(attrs[1])).unwrap_or(0);
        let (pos, pos_bits) = read_ints(attrs[0], n_pos, desc, "positions")?;
        let (crd, crd_bits) = read_ints(attrs[1], n_crd, desc, "coordinates")?;
        let index_type = if pos_bits.max(crd_bits) == 32 {
            ElementType::Int32
        } else {
            ElementType::Int64
        };
        let values = self.values_buf(attrs[2], storage, nnz, desc, name)?;
        let fixed = |i: usize| match shape.get(i) {
            Some(Dim::Fixed(n)) => Ok(*n),
            _ => Err(bad("a sparse constant needs static dimensions".into())),
        };
        let empty = shape.contains(&Dim::Fixed(0));
        let (layout, buffers) = match kind {
            SparseKind::Compressed { by_column } => {
                let (major, minor) = if by_column {
                    (fixed(1)?, fixed(0)?)
                } else {
                    (fixed(0)?, fixed(1)?)
                };
                let ok_pos = pos.len() as u64 == major + 1
                    && pos.first() == Some(&0)
                    && pos.windows(2).all(|w| w[0] <= w[1])
                    && pos.last().is_some_and(|l| *l as u64 == nnz);
                if !ok_pos {
                    return Err(bad(format!(
                        "positions {pos:?} are not {} non-decreasing offsets from 0 to nnz = {nnz}",
                        major + 1
                    )));
                }
                if crd.len() as u64 != nnz || crd.iter().any(|c| *c < 0 || *c as u64 >= minor) {
                    return Err(bad(format!(
                        "coordinates must be {nnz} values below {minor}"
                    )));
                }
                let layout = if by_column {
                    Layout::Csc { nnz, index_type }
                } else {
                    Layout::Csr { nnz, index_type }
                };
                // An empty tensor has no bytes at all, pointers included.
                let pointers = if empty {
                    Vec::new()
                } else {
                    encode_indices(&pos, index_type)
                };
                (
                    layout,
                    vec![
                        Buf::Owned(pointers),
                        Buf::Owned(encode_indices(&crd, index_type)),
                        values,
                    ],
                )
            }
            SparseKind::Coo => {
                if pos != [0, nnz as i64] && !(nnz == 0 && pos.iter().all(|p| *p == 0)) {
                    return Err(bad(format!("COO positions {pos:?} are not [0, {nnz}]")));
                }
                if Some(crd.len() as u64) != nnz.checked_mul(rank as u64) {
                    return Err(bad(format!(
                        "COO coordinates hold {} values, not nnz x rank = {nnz} x {rank}",
                        crd.len(),
                    )));
                }
                for c in crd.chunks(rank.max(1)) {
                    for (i, x) in c.iter().enumerate() {
                        if *x < 0 || *x as u64 >= fixed(i)? {
                            return Err(bad(format!("coordinate {c:?} outside the shape")));
                        }
                    }
                }
                let canonical = crd
                    .chunks(rank.max(1))
                    .collect::<Vec<_>>()
                    .windows(2)
                    .all(|w| w[0] < w[1]);
                (
                    Layout::Coo {
                        nnz,
                        index_type,
                        canonical,
                    },
                    vec![Buf::Owned(encode_indices(&crd, index_type)), values],
                )
            }
        };
        let d = TensorDescriptor::new(name, et, shape).with_layout(layout);
        self.add(Entry {
            desc: d,
            op: desc.to_owned(),
            buffers,
            origin: None,
        })
    }
}

/// The number of elements of a rank-1 (or `nnz x rank`) static tensor type,
/// by the runtime's rule ([`hurray::elements::element_count`], a 0 dimension first).
fn elements_of(ty: Type<'_>) -> Option<u64> {
    let dims = ffi::ranked_shape(ty)?
        .iter()
        .map(|d| match d {
            RawDim::Static(n) => Some(*n),
            RawDim::Dynamic => Some(Dim::Dynamic.to_wire()),
            RawDim::Invalid(_) => None,
        })
        .collect::<Option<Vec<u64>>>()?;
    hurray::elements::element_count(&dims).known()
}
