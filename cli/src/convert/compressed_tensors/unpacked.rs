//! The unpacked formats: `naive-quantized`, `int-quantized` (W8A8 int8)
//! and `float-quantized` (FP8), one code per element in the weight's own
//! dtype.
//!
//! A quantized layer `L` is saved as `L.weight` (`I8 [out, in]`, the signed
//! codes, or `F8_E4M3 [out, in]`), `L.weight_scale` (in the dequantized
//! dtype: `[out, 1]` per channel, `[out, groups]` per group, `[1]` per
//! tensor) and, for an asymmetric integer layer, `L.weight_zero_point`
//! (`I8`, the scale's shape). compressed-tensors dequantizes `(q - zp) *
//! scale` in the scale's dtype: the difference of two int8 values and the
//! product with an FP8 or 8-bit code are exact before its one rounding.
//!
//! Hurray holds `L.weight` as the same codes (`i8` or `f8e4m3fn`), per
//! tensor, per axis 0 or per block of the group size along axis 1, with the
//! scales as stored and the zero points as stored, expressed in the scales'
//! type. The scale array's saved shape is kept in tensor metadata
//! ([`SCALE_SHAPE_KEY`]), so unfolding writes the same entries back, byte
//! for byte. Activation scales (`input_scale`) are entries of their own and
//! stay so.

use super::{Group, Strategy, group_index, group_of, marked, sizes, slice, unfolds_to};
use crate::convert::{Data, Entry, Quantized};
use anyhow::{Context, Result, bail};
use hurray::{
    ElementType, Quantization, TensorRef,
    descriptor::{BufferRole, QuantizationScheme},
};

/// The tensor metadata key holding the saved shape of the layer's scales.
pub(super) const SCALE_SHAPE_KEY: &str = "compressed_tensors.scale_shape";
/// The suffix of a layer's scales.
pub(super) const SCALE: &str = ".weight_scale";

/// The names of an unpacked layer's entries after `LAYER.`, in the order
/// [`fold_layer`] takes their indices.
pub(super) const PARTS: [&str; 4] = [
    "weight",
    "weight_scale",
    "weight_zero_point",
    "weight_g_idx",
];

/// The scheme whose scale array a layer of `rows` x `cols` with scales of
/// `scale_shape` has under `strategy`, if it has that array.
fn scheme(
    strategy: Strategy,
    rows: u64,
    cols: u64,
    scale_shape: &[u64],
) -> Option<QuantizationScheme> {
    match (strategy, scale_shape) {
        (Strategy::Tensor, [] | [1]) => Some(QuantizationScheme::PerTensor),
        (Strategy::Channel, [r] | [r, 1]) if *r == rows => {
            Some(QuantizationScheme::PerAxis { axis: 0 })
        }
        (Strategy::Group(size), [r, g]) if *r == rows && cols.div_ceil(size) == *g => {
            Some(QuantizationScheme::PerBlock {
                axis: 1,
                block_size: size,
            })
        }
        _ => None,
    }
}

pub(super) fn fold_layer<'a>(
    entries: &[Entry<'a>],
    layer: &str,
    parts: &[Option<usize>],
    groups: &[Group],
) -> Result<Entry<'a>> {
    let parts: [Option<usize>; 4] = parts.try_into().context("an unpacked layer's parts")?;
    let [weight, scale, zp, g_idx] = parts.map(|p| p.map(|i| &entries[i]));
    let (weight, scale) = (weight.context("weight")?, scale.context("scale")?);
    let (&[rows, cols], float) = (
        &weight.shape[..],
        match weight.dtype {
            ElementType::Int8 => false,
            ElementType::Float8E4M3FN => true,
            other => bail!(
                "layer {layer:?}: weight is {}; compressed-tensors saves int8 or float8_e4m3fn codes",
                other.name()
            ),
        },
    ) else {
        bail!(
            "layer {layer:?}: weight {:?} is not [out, in]",
            weight.shape
        );
    };
    sizes(layer, rows, cols)?;
    if !matches!(
        scale.dtype,
        ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32
    ) {
        bail!(
            "layer {layer:?}: weight_scale is {}, not a float type",
            scale.dtype.name()
        );
    }
    let group = group_of(layer, groups, |g| {
        g.format == super::Format::Unpacked
            && g.float == float
            && (!float || g.bits == 8)
            && scheme(g.strategy, rows, cols, &scale.shape).is_some()
    })?
    .with_context(|| {
        format!(
            "layer {layer:?}: no quantized config group fits its {} weight with scales {:?}",
            weight.dtype.name(),
            scale.shape
        )
    })?;
    let scheme = scheme(group.strategy, rows, cols, &scale.shape).context("fits")?;
    let mut q = Quantization::new(scheme, scale.dtype, scale.dtype);
    let mut buffers = vec![Data::Slice(slice(scale)?), Data::None];
    if let Some(z) = zp {
        if float || z.dtype != ElementType::Int8 || z.shape != scale.shape {
            bail!(
                "layer {layer:?}: weight_zero_point is {} {:?}; an int8 layer's are I8 {:?}",
                z.dtype.name(),
                z.shape,
                scale.shape
            );
        }
        q.zero_point_type = Some(ElementType::Int8);
        buffers[1] = Data::Slice(slice(z)?);
    }
    if let Some(g) = g_idx {
        buffers.push(Data::Slice(group_index(layer, g, scheme, cols)?));
        q.group_index_type = Some(ElementType::Int32);
    }
    let mut e = Entry::new(
        format!("{layer}.weight"),
        weight.dtype,
        vec![rows, cols],
        Data::Slice(slice(weight)?),
    );
    e.tensor_metadata = vec![(
        SCALE_SHAPE_KEY.to_owned(),
        serde_json::to_string(&scale.shape)?,
    )];
    e.quantized = Some(Quantized {
        quantization: q,
        buffers,
    });
    Ok(e)
}

/// The safetensors entries of an unpacked layer held in Hurray form, or
/// `None` when `t` is not one.
pub(super) fn unfold<'a>(t: &TensorRef<'a>) -> Result<Option<Vec<Entry<'a>>>> {
    let Some((scale_shape, layer, q)) = marked(t, SCALE_SHAPE_KEY)? else {
        return Ok(None);
    };
    let name = t.name();
    let scale_shape: Vec<u64> = serde_json::from_str(scale_shape)
        .with_context(|| format!("tensor {name:?}: {SCALE_SHAPE_KEY} is not a shape"))?;
    let shape = t.shape().to_wire();
    let (&[rows, cols], true) = (
        &shape[..],
        matches!(
            t.element_type(),
            ElementType::Int8 | ElementType::Float8E4M3FN
        ),
    ) else {
        bail!("tensor {name:?}: not [out, in] int8 or float8_e4m3fn codes");
    };
    let strategy = match q.scheme {
        QuantizationScheme::PerTensor => Strategy::Tensor,
        QuantizationScheme::PerAxis { axis: 0 } => Strategy::Channel,
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size,
        } => Strategy::Group(block_size),
        _ => Strategy::Other,
    };
    sizes(layer, rows, cols)?;
    unfolds_to(t, &q, q.zero_point_type.filter(|&z| z == ElementType::Int8))?;
    if scheme(strategy, rows, cols, &scale_shape) != Some(q.scheme) {
        bail!(
            "tensor {name:?}: its {SCALE_SHAPE_KEY} {scale_shape:?} and quantization are not compressed-tensors' form"
        );
    }
    let entry = |suffix: &str, dtype, shape: Vec<u64>, role| {
        Entry::new(
            format!("{layer}.{suffix}"),
            dtype,
            shape,
            Data::Slice(t.buffer(role).unwrap_or(&[])),
        )
    };
    let mut out = vec![
        Entry::new(
            name.to_owned(),
            t.element_type(),
            shape.clone(),
            Data::Slice(t.data()?),
        ),
        entry(
            "weight_scale",
            q.scale_type,
            scale_shape.clone(),
            BufferRole::Scales,
        ),
    ];
    if q.zero_point_type.is_some() {
        out.push(entry(
            "weight_zero_point",
            ElementType::Int8,
            scale_shape,
            BufferRole::ZeroPoints,
        ));
    }
    if q.group_index_type.is_some() {
        out.push(entry(
            "weight_g_idx",
            ElementType::Int32,
            vec![cols],
            BufferRole::GroupIndex,
        ));
    }
    Ok(Some(out))
}
