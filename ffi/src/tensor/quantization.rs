//! The C view of a tensor's quantization: the scheme and the descriptor
//! `hurray_tensor_quantization` fills in.

use crate::HurrayQuantScheme::{
    HURRAY_QUANT_PER_AXIS, HURRAY_QUANT_PER_BLOCK, HURRAY_QUANT_PER_TENSOR,
};
use hurray::QuantizationKind;

/// The granularity of a quantization descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum HurrayQuantScheme {
    HURRAY_QUANT_PER_TENSOR = 1,
    HURRAY_QUANT_PER_AXIS = 2,
    HURRAY_QUANT_PER_BLOCK = 3,
}

impl HurrayQuantScheme {
    /// The C value of a scheme kind: the schema's wire value, as the
    /// assertions below hold at build time.
    pub(crate) const fn of(kind: QuantizationKind) -> Self {
        match kind {
            QuantizationKind::PerTensor => HURRAY_QUANT_PER_TENSOR,
            QuantizationKind::PerAxis => HURRAY_QUANT_PER_AXIS,
            QuantizationKind::PerBlock => HURRAY_QUANT_PER_BLOCK,
        }
    }
}

const _: () = {
    let mut i = 0;
    while i < QuantizationKind::ALL.len() {
        let kind = QuantizationKind::ALL[i];
        assert!(HurrayQuantScheme::of(kind) as u8 == kind.to_wire());
        i += 1;
    }
};

/// A tensor's quantization: `expressed = (stored - zero_point) * scale *
/// tensor_scale + offset`, evaluated in double in that order.
/// Element types are wire values (see `hurray_dtype_name`); `zero_point_type`
/// is 0 for symmetric quantization (no zero points) and `offset_type` 0 when
/// there are no offsets (format 1.2). The scales, zero points and offsets
/// themselves are the `scales` / `zero_points` / `offsets` buffers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HurrayQuantization {
    pub scheme: HurrayQuantScheme,
    /// The quantized dimension (per-axis and per-block; 0 otherwise).
    pub axis: u32,
    /// Elements per block along `axis` (per-block; 0 otherwise).
    pub block_size: u64,
    pub expressed_type: u8,
    pub scale_type: u8,
    pub zero_point_type: u8,
    /// The stored value range the producer uses; both 0 when unset.
    pub storage_min: i64,
    pub storage_max: i64,
    /// One factor for every element (format 1.2; NVFP4's per-tensor scale,
    /// MXINT8's 2^-6); 1.0 when unused.
    pub tensor_scale: f64,
    /// Element type of the offsets (format 1.2), 0 for none.
    pub offset_type: u8,
}
