//! sparse_tensor encodings: a `#sparse_tensor.encoding` reduced to the level
//! formats, level order and index widths Hurray's layouts need.

use melior::ir::{Attribute, AttributeLike};
use mlir_sys as sys;

/// A `#sparse_tensor.encoding` reduced to what Hurray's layouts need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SparseEncoding {
    /// Level formats, outermost first.
    pub(crate) levels: Vec<SparseLevel>,
    /// The level order as dimension positions (`None` when the map is not a
    /// permutation).
    pub(crate) dim_of_level: Option<Vec<usize>>,
    pub(crate) pos_width: u32,
    pub(crate) crd_width: u32,
}

/// One level's storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SparseLevel {
    Dense,
    Compressed { unique: bool },
    Singleton { unique: bool },
    Other(u64),
}

/// The sparse encoding of `attr`, if it is a `#sparse_tensor.encoding`.
pub(crate) fn sparse_encoding(attr: Attribute<'_>) -> Option<SparseEncoding> {
    // SAFETY: a type query, then bounded level accessors on a checked
    // sparse tensor encoding; the affine map handles belong to the context.
    unsafe {
        let raw = attr.to_raw();
        if !sys::mlirAttributeIsASparseTensorEncodingAttr(raw) {
            return None;
        }
        let rank = sys::mlirSparseTensorEncodingGetLvlRank(raw);
        let mut levels = Vec::new();
        for l in 0..rank {
            let lt = sys::mlirSparseTensorEncodingAttrGetLvlType(raw, l);
            let fmt = u64::from(sys::mlirSparseTensorEncodingAttrGetLvlFmt(raw, l));
            let unique =
                lt & u64::from(
                    sys::MlirSparseTensorLevelPropertyNondefault_MLIR_SPARSE_PROPERTY_NON_UNIQUE,
                ) == 0;
            levels.push(match fmt {
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_DENSE,
                    ) =>
                {
                    SparseLevel::Dense
                }
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_COMPRESSED,
                    ) =>
                {
                    SparseLevel::Compressed { unique }
                }
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_SINGLETON,
                    ) =>
                {
                    SparseLevel::Singleton { unique }
                }
                f => SparseLevel::Other(f),
            });
        }
        let map = sys::mlirSparseTensorEncodingAttrGetDimToLvl(raw);
        let dim_of_level = if map.ptr.is_null() {
            Some((0..levels.len()).collect())
        } else if sys::mlirAffineMapIsPermutation(map) {
            let n = sys::mlirAffineMapGetNumResults(map);
            let mut dims = Vec::new();
            for i in 0..n {
                let e = sys::mlirAffineMapGetResult(map, i);
                if !sys::mlirAffineExprIsADim(e) {
                    break;
                }
                dims.push(sys::mlirAffineDimExprGetPosition(e) as usize);
            }
            (dims.len() == n as usize).then_some(dims)
        } else {
            None
        };
        Some(SparseEncoding {
            levels,
            dim_of_level,
            pos_width: sys::mlirSparseTensorEncodingAttrGetPosWidth(raw) as u32,
            crd_width: sys::mlirSparseTensorEncodingAttrGetCrdWidth(raw) as u32,
        })
    }
}
