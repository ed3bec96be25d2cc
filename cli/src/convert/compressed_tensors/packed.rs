//! The "pack-quantized" format: integer codes of 1 to 8 bits packed into
//! `int32` words.
//!
//! A quantized linear layer `L` is saved as `L.weight_packed` (`I32 [out,
//! ceil(in * bits / 32)]`: each row a little-endian bit stream, element `c`
//! at bit `c * bits`, holding `q + 2^(bits-1)` for the signed code `q`; the
//! row padded with zero bits to whole words), `L.weight_shape` (`I64 [2]`),
//! `L.weight_scale` (`[out, groups]` in the dequantized dtype), and, when
//! asymmetric, `L.weight_zero_point` (the signed zero points, offset the
//! same way and packed along dimension 0: `I32 [ceil(out * bits / 32),
//! groups]`), and, from versions that wrote activation order,
//! `L.weight_g_idx` (`I32 [in]`, each column's group). The number of bits
//! is only in `config.json`'s `quantization_config`, beside the weights.
//!
//! Hurray holds `L.weight` as `u<bits>` codes `[out, in]` (the stored,
//! offset values: the same bits), per block of the group size along axis 1
//! (per axis 0 for one group a row), the scales as stored, and zero points
//! `u<bits>` of `2^(bits-1) + zp` (for a symmetric layer, `2^(bits-1)`), so
//! `w = (u - zp_u) * scale = (q - zp) * scale`, expressed in the scales'
//! type, as compressed-tensors computes it; a `g_idx` becomes the group
//! index. Rows are re-packed without the word padding; unfolding pads them
//! again, and writes `weight_shape` and (when the original had one) the
//! packed zero points back, byte for byte.

use super::{Group, Strategy, group_index, group_of, marked, sizes, slice, unfolds_to};
use crate::convert::{Data, Entry, Quantized};
use anyhow::{Context, Result, bail};
use hurray::{
    ElementType, Quantization, TensorRef,
    descriptor::{BufferRole, QuantizationScheme},
};

/// The tensor metadata key saying whether the layer stored zero points.
pub(super) const ZERO_POINT_KEY: &str = "compressed_tensors.zero_point";
/// The suffix of a packed layer's codes.
pub(super) const PACKED: &str = ".weight_packed";

/// The names of a packed layer's entries after `LAYER.`, in the order
/// [`fold_layer`] takes their indices.
pub(super) const PARTS: [&str; 5] = [
    "weight_packed",
    "weight_shape",
    "weight_scale",
    "weight_zero_point",
    "weight_g_idx",
];

pub(super) fn fold_layer<'a>(
    entries: &[Entry<'a>],
    layer: &str,
    parts: &[Option<usize>],
    groups: &[Group],
) -> Result<Entry<'a>> {
    let parts: [Option<usize>; 5] = parts.try_into().context("a packed layer's parts")?;
    let [packed, shape, scale, zp, g_idx] = parts.map(|p| p.map(|i| &entries[i]));
    let (packed, shape, scale) = (
        packed.context("packed")?,
        shape.context("shape")?,
        scale.context("scale")?,
    );
    let dims: Vec<u64> = slice(shape)?
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let (&[rows, cols], ElementType::Int64) = (&dims[..], shape.dtype) else {
        bail!("layer {layer:?}: weight_shape {dims:?} is not [out, in]");
    };
    sizes(layer, rows, cols)?;
    let words = *packed.shape.get(1).unwrap_or(&0);
    if packed.dtype != ElementType::Int32 || packed.shape != [rows, words] {
        bail!(
            "layer {layer:?}: weight_packed is {} {:?}, not I32 [{rows}, words]",
            packed.dtype.name(),
            packed.shape
        );
    }
    let n_groups = *scale.shape.get(1).unwrap_or(&0);
    if scale.shape.len() != 2
        || scale.shape[0] != rows
        || n_groups == 0
        || !matches!(
            scale.dtype,
            ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32
        )
    {
        bail!(
            "layer {layer:?}: weight_scale is {} {:?}, not a float [{rows}, groups]",
            scale.dtype.name(),
            scale.shape
        );
    }
    let group = group_of(layer, groups, |g| {
        g.format == super::Format::Packed
            && (cols * u64::from(g.bits)).div_ceil(32) == words
            && g.strategy.groups(cols) == Some(n_groups)
    })?
    .with_context(|| {
        format!(
            "layer {layer:?}: no pack-quantized config group fits its {words} words and \
             {n_groups} scales a row for {cols} columns"
        )
    })?;
    let bits = group.bits;
    // The schema's unsigned integer type of that width (there is no 1-bit one).
    let code_type = ElementType::ALL
        .into_iter()
        .find(|t| t.class() == hurray::elements::ElementClass::UnsignedInt && t.bits() == bits)
        .with_context(|| format!("layer {layer:?}: no unsigned {bits}-bit element type"))?;
    // The config's group size, never one guessed from the scales' shape: 100
    // columns in groups of 32 have 4 scales a row, as groups of 25 would.
    let scheme = match group.strategy {
        Strategy::Group(block_size) => QuantizationScheme::PerBlock {
            axis: 1,
            block_size,
        },
        _ => QuantizationScheme::PerAxis { axis: 0 },
    };
    let mut q = Quantization::new(scheme, scale.dtype, scale.dtype);
    q.zero_point_type = Some(code_type);
    let offset = 1u8 << (bits - 1);
    // Rows that fill their words exactly are already one Hurray stream.
    let codes = if (cols * u64::from(bits)).is_multiple_of(32) {
        Data::Slice(slice(packed)?)
    } else {
        Data::Owned(repack_rows(slice(packed)?, bits, rows, cols, words))
    };
    let zero_points = match zp {
        None => hurray::pack::pack_codes(
            std::iter::repeat_n(offset, (rows * n_groups) as usize),
            code_type.bits(),
        ),
        Some(z) => {
            let zwords = (rows * u64::from(bits)).div_ceil(32);
            if z.dtype != ElementType::Int32 || z.shape != [zwords, n_groups] {
                bail!(
                    "layer {layer:?}: weight_zero_point is {} {:?}, not I32 [{zwords}, {n_groups}]",
                    z.dtype.name(),
                    z.shape
                );
            }
            // Packed along dimension 0: column g's words hold rows in order.
            let bytes = slice(z)?;
            let mut values = vec![0u8; (rows * n_groups) as usize];
            for g in 0..n_groups {
                let column: Vec<u8> = (0..zwords)
                    .flat_map(|w| {
                        let at = ((w * n_groups + g) * 4) as usize;
                        bytes[at..at + 4].to_vec()
                    })
                    .collect();
                for (r, v) in hurray::pack::unpack_codes(&column, bits, rows).enumerate() {
                    values[r * n_groups as usize + g as usize] = v;
                }
            }
            hurray::pack::pack_codes(values, code_type.bits())
        }
    };
    let mut buffers = vec![Data::Slice(slice(scale)?), Data::Owned(zero_points)];
    if let Some(g) = g_idx {
        buffers.push(Data::Slice(group_index(layer, g, scheme, cols)?));
        q.group_index_type = Some(ElementType::Int32);
    }
    let mut e = Entry::new(
        format!("{layer}.weight"),
        code_type,
        vec![rows, cols],
        codes,
    );
    e.tensor_metadata = vec![(
        ZERO_POINT_KEY.to_owned(),
        if zp.is_some() { "packed" } else { "none" }.to_owned(),
    )];
    e.quantized = Some(Quantized {
        quantization: q,
        buffers,
    });
    Ok(e)
}

/// Rows of `words` little-endian 32-bit words, `cols` codes each, as one
/// Hurray stream (no per-row padding).
fn repack_rows(packed: &[u8], bits: u32, rows: u64, cols: u64, words: u64) -> Vec<u8> {
    let row_bytes = (words * 4) as usize;
    let codes = packed
        .chunks_exact(row_bytes.max(1))
        .take(rows as usize)
        .flat_map(|row| hurray::pack::unpack_codes(row, bits, cols).collect::<Vec<_>>());
    hurray::pack::pack_codes(codes, bits)
}

/// Codes of a Hurray stream, as rows of `words` words each.
fn pad_rows(stream: &[u8], bits: u32, rows: u64, cols: u64, words: u64) -> Vec<u8> {
    let all: Vec<u8> = hurray::pack::unpack_codes(stream, bits, rows * cols).collect();
    let mut out = Vec::with_capacity((rows * words * 4) as usize);
    for row in all.chunks((cols as usize).max(1)).take(rows as usize) {
        let mut packed = hurray::pack::pack_codes(row.iter().copied(), bits);
        packed.resize((words * 4) as usize, 0);
        out.extend(packed);
    }
    out
}

/// The safetensors entries of a compressed-tensors layer held in Hurray
/// form, or `None` when `t` is not one.
pub(super) fn unfold<'a>(t: &TensorRef<'a>) -> Result<Option<Vec<Entry<'a>>>> {
    let Some((zp_kind, layer, q)) = marked(t, ZERO_POINT_KEY)? else {
        return Ok(None);
    };
    let name = t.name();
    let shape = t.shape().to_wire();
    let bits = t.element_type().bits();
    let (&[rows, cols], true) = (
        &shape[..],
        t.element_type().class() == hurray::elements::ElementClass::UnsignedInt && bits <= 8,
    ) else {
        bail!("tensor {name:?}: not [out, in] unsigned codes of at most 8 bits");
    };
    let n_groups = match q.scheme {
        QuantizationScheme::PerAxis { axis: 0 } => 1,
        QuantizationScheme::PerBlock {
            axis: 1,
            block_size,
        } => cols.div_ceil(block_size),
        _ => bail!(
            "tensor {name:?}: {} is not compressed-tensors' grouping",
            q.scheme.kind()
        ),
    };
    sizes(layer, rows, cols)?;
    unfolds_to(t, &q, Some(t.element_type()))?;
    let words = (cols * u64::from(bits)).div_ceil(32);
    let entry = |suffix: &str, dtype, shape: Vec<u64>, data| {
        Entry::new(format!("{layer}.{suffix}"), dtype, shape, data)
    };
    let codes = pad_rows(t.data()?, bits, rows, cols, words);
    let dims: Vec<u8> = [rows, cols].iter().flat_map(|d| d.to_le_bytes()).collect();
    let mut out = vec![
        entry(
            "weight_packed",
            ElementType::Int32,
            vec![rows, words],
            Data::Owned(codes),
        ),
        entry(
            "weight_scale",
            q.scale_type,
            vec![rows, n_groups],
            Data::Slice(t.buffer(BufferRole::Scales).unwrap_or(&[])),
        ),
        entry(
            "weight_shape",
            ElementType::Int64,
            vec![2],
            Data::Owned(dims),
        ),
    ];
    let zps: Vec<u8> = hurray::pack::unpack_codes(
        t.buffer(BufferRole::ZeroPoints).unwrap_or(&[]),
        bits,
        rows * n_groups,
    )
    .collect();
    match zp_kind {
        "packed" => {
            let zwords = (rows * u64::from(bits)).div_ceil(32);
            let mut bytes = vec![0u8; (zwords * n_groups * 4) as usize];
            for g in 0..n_groups {
                let column = zps
                    .iter()
                    .skip(g as usize)
                    .step_by(n_groups as usize)
                    .copied();
                let mut packed = hurray::pack::pack_codes(column, bits);
                packed.resize((zwords * 4) as usize, 0);
                for w in 0..zwords {
                    let at = ((w * n_groups + g) * 4) as usize;
                    bytes[at..at + 4]
                        .copy_from_slice(&packed[(w * 4) as usize..(w * 4 + 4) as usize]);
                }
            }
            out.push(entry(
                "weight_zero_point",
                ElementType::Int32,
                vec![zwords, n_groups],
                Data::Owned(bytes),
            ));
        }
        "none" if zps.iter().all(|&z| z == 1 << (bits - 1)) => {}
        other => bail!(
            "tensor {name:?}: {ZERO_POINT_KEY} {other:?} with zero points a symmetric layer does not have"
        ),
    }
    if q.group_index_type.is_some() {
        out.push(entry(
            "weight_g_idx",
            ElementType::Int32,
            vec![cols],
            Data::Slice(t.buffer(BufferRole::GroupIndex).unwrap_or(&[])),
        ));
    }
    Ok(Some(out))
}
