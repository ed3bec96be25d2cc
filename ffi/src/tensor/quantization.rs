//! The C view of a tensor's quantization: the scheme and the descriptor
//! `hurray_tensor_quantization` fills in.

use crate::HurrayQuantScheme::{
    HURRAY_QUANT_PER_AXIS, HURRAY_QUANT_PER_BLOCK, HURRAY_QUANT_PER_FLAT_BLOCK,
    HURRAY_QUANT_PER_TENSOR,
};
use hurray::descriptor::QuantizationKind;

/// The granularity of a quantization descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum HurrayQuantScheme {
    HURRAY_QUANT_PER_TENSOR = 1,
    HURRAY_QUANT_PER_AXIS = 2,
    HURRAY_QUANT_PER_BLOCK = 3,
    /// Format 1.4: blocks of the whole tensor, row-major (`axis` unused).
    HURRAY_QUANT_PER_FLAT_BLOCK = 4,
}

impl HurrayQuantScheme {
    /// The C value of a scheme kind: the schema's wire value, as the
    /// assertions below hold at build time.
    pub(crate) const fn of(kind: QuantizationKind) -> Self {
        match kind {
            QuantizationKind::PerTensor => HURRAY_QUANT_PER_TENSOR,
            QuantizationKind::PerAxis => HURRAY_QUANT_PER_AXIS,
            QuantizationKind::PerBlock => HURRAY_QUANT_PER_BLOCK,
            QuantizationKind::PerFlatBlock => HURRAY_QUANT_PER_FLAT_BLOCK,
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

/// A quantized tensor's elements `start .. start + count` (row-major),
/// dequantized by the runtime into `out` (`count` floats): the one formula
/// of data-model.md section 7 that Rust and Python use too, block formats
/// (GGUF's IQ and TQ types) included. `count` may run past the end: only
/// the elements that exist are written, and `*written` says how many.
/// `HURRAY_ERR_UNSUPPORTED` for a tensor that is not quantized, or whose
/// group index names no group (`hurray_last_error` says which entry).
///
/// # Safety
/// `tensor` is a live handle; `out` is NULL with `count` 0, or valid for
/// writes of `count` floats; `written` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_dequantize(
    tensor: *const crate::HurrayTensor,
    start: u64,
    out: *mut f32,
    count: usize,
    written: *mut usize,
) -> crate::HurrayStatus {
    use crate::args::{check_out, put};
    use crate::status::{Context, Failure};
    super::with_tensor(tensor, |t| {
        check_out(written, "written")?;
        if count > 0 {
            check_out(out, "out")?;
        }
        let r = t.data_ref()?;
        let view = r
            .quantized()
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        let n = usize::try_from(view.len().saturating_sub(start))
            .unwrap_or(usize::MAX)
            .min(count);
        if n > 0 {
            // SAFETY: non-null (checked), and the caller promises `count`
            // writable floats; `n <= count`.
            let dst = unsafe { std::slice::from_raw_parts_mut(out, n) };
            view.dequantize_into(start, dst);
        }
        // SAFETY: checked non-null; caller contract.
        unsafe { put(written, "written", n) }
    })
}
