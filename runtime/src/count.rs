//! Element and byte counts: the one place that turns a shape into a number
//! of elements and a number of elements into bytes.
//!
//! ADR-0007 fixes the order: a resolved 0 anywhere in a shape makes the
//! tensor empty before anything is multiplied, so `[2^40, 2^40, 0]` has 0
//! elements (it does not overflow) and `[?, 0]` has 0 elements (it is not
//! dynamic). Every front door that needs a count calls [`element_count`].

use crate::ElementType;
use crate::format::DYNAMIC_DIM;

/// The number of elements a shape holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementCount {
    /// A known count (0 for an empty tensor).
    Known(u64),
    /// A dimension is dynamic and none is 0: the count is not known.
    Dynamic,
    /// The product of the dimensions does not fit in 64 bits.
    Overflow,
}

impl ElementCount {
    /// The count, when known.
    pub fn known(self) -> Option<u64> {
        match self {
            ElementCount::Known(n) => Some(n),
            ElementCount::Dynamic | ElementCount::Overflow => None,
        }
    }
}

/// The number of elements of a shape given as wire dimensions
/// ([`DYNAMIC_DIM`] marks a dynamic one), in ADR-0007's order.
pub fn element_count(shape: &[u64]) -> ElementCount {
    element_count_of(shape.iter().copied())
}

/// [`element_count`] over any sequence of wire dimensions (the reader's
/// FlatBuffers vectors, a descriptor's [`Dim`](crate::Dim)s).
pub(crate) fn element_count_of(dims: impl Iterator<Item = u64> + Clone) -> ElementCount {
    if dims.clone().any(|d| d == 0) {
        return ElementCount::Known(0);
    }
    let mut count = Some(1u64);
    for d in dims {
        if d == DYNAMIC_DIM {
            return ElementCount::Dynamic;
        }
        count = count.and_then(|c| c.checked_mul(d));
    }
    // An overflowing prefix followed by a dynamic dimension is `Dynamic`:
    // such a tensor is descriptor-only, so no size is ever computed from it.
    count.map_or(ElementCount::Overflow, ElementCount::Known)
}

/// Bytes of `count` elements of `bits` each, packed without padding between
/// elements: ceil(count * bits / 8); `None` when that exceeds u64.
pub fn packed_len(count: u64, bits: u32) -> Option<u64> {
    let total_bits = u128::from(count) * u128::from(bits);
    u64::try_from(total_bits.div_ceil(8)).ok()
}

impl ElementType {
    /// Bytes of `count` elements of this type as stored (sub-byte types
    /// packed, see [`packed_len`]); `None` when that exceeds u64.
    #[inline]
    pub fn byte_len(self, count: u64) -> Option<u64> {
        packed_len(count, self.bits())
    }

    /// Bytes of one element when unpacked to whole bytes (1 for the packed
    /// sub-byte types, as NumPy, safetensors and DLPack hold them).
    pub fn unpacked_size(self) -> u64 {
        u64::from(self.bits().div_ceil(8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_decides_before_any_multiplication() {
        assert_eq!(
            element_count(&[1 << 40, 1 << 40, 0]),
            ElementCount::Known(0)
        );
        assert_eq!(element_count(&[DYNAMIC_DIM, 0]), ElementCount::Known(0));
        assert_eq!(element_count(&[1 << 40, 1 << 40]), ElementCount::Overflow);
        assert_eq!(
            element_count(&[1 << 40, 1 << 40, DYNAMIC_DIM]),
            ElementCount::Dynamic
        );
        assert_eq!(element_count(&[]), ElementCount::Known(1));
        assert_eq!(element_count(&[3, 5]), ElementCount::Known(15));
    }

    #[test]
    fn byte_lengths_pack_sub_byte_types() {
        assert_eq!(ElementType::Int4.byte_len(3), Some(2));
        assert_eq!(ElementType::Bool.byte_len(9), Some(2));
        assert_eq!(ElementType::Float32.byte_len(3), Some(12));
        assert_eq!(ElementType::Float64.byte_len(u64::MAX), None);
        assert_eq!(ElementType::Int4.unpacked_size(), 1);
        assert_eq!(ElementType::Complex128.unpacked_size(), 16);
    }

    #[test]
    fn numpy_type_strings_both_ways() {
        for t in ElementType::ALL {
            if let Some(d) = t.numpy_dtype() {
                assert_eq!(ElementType::from_numpy_dtype(d), Some(t), "{d}");
            }
        }
        assert_eq!(
            ElementType::from_numpy_dtype("=f4"),
            Some(ElementType::Float32)
        );
        assert_eq!(
            ElementType::from_numpy_dtype("<b1"),
            Some(ElementType::Bool)
        );
        assert_eq!(ElementType::from_numpy_dtype(">f4"), None);
        assert_eq!(ElementType::from_numpy_dtype("<U4"), None);
        assert_eq!(ElementType::from_numpy_dtype(""), None);
    }
}
