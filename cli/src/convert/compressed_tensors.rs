//! compressed-tensors' "pack-quantized" checkpoints (llm-compressor and
//! vLLM's integer weight formats) and Hurray's one-tensor form of them.
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

use super::{Data, Entry, Quantized};
use anyhow::{Context, Result, bail};
use hurray::{BufferRole, ElementType, Quantization, QuantizationScheme, TensorRef};
use std::collections::BTreeMap;
use std::path::Path;

/// The tensor metadata key saying whether the layer stored zero points.
pub(super) const ZERO_POINT_KEY: &str = "compressed_tensors.zero_point";
const PACKED: &str = ".weight_packed";

/// One config group's weight arguments and the layers it targets.
#[derive(Debug)]
pub(super) struct Group {
    bits: u32,
    /// The columns one scale covers (`strategy: "group"`); `None` for one
    /// scale a row (`strategy: "channel"`).
    group_size: Option<u64>,
    targets: Vec<regex::Regex>,
    /// Targets that are class names (`Linear`): they match any layer.
    by_class: bool,
}

/// The pack-quantized groups of a `config.json` beside `input`, if it says
/// compressed-tensors; `None` when there is no such config.
pub(super) fn config_beside(input: &Path) -> Result<Option<Vec<Group>>> {
    let Some(path) = input.parent().map(|d| d.join("config.json")) else {
        return Ok(None);
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    config(&text, &path)
}

/// The pack-quantized groups of the `config.json` text found at `path`.
pub(super) fn config(text: &str, path: &Path) -> Result<Option<Vec<Group>>> {
    let json: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("{}: not JSON", path.display()))?;
    let q = &json["quantization_config"];
    if q["quant_method"] != "compressed-tensors" {
        return Ok(None);
    }
    let mut groups = Vec::new();
    for (name, g) in q["config_groups"].as_object().into_iter().flatten() {
        let format = g["format"].as_str().or(q["format"].as_str()).unwrap_or("");
        let w = &g["weights"];
        if format != "pack-quantized" || w["type"] != "int" {
            continue;
        }
        let bits = w["num_bits"]
            .as_u64()
            .filter(|b| (1..=8).contains(b))
            .with_context(|| format!("{}: group {name}: num_bits", path.display()))?
            as u32;
        // The strategy as compressed-tensors infers it when absent: a
        // positive group size means groups, -1 one scale a row. Any other
        // (tensor, block) is refused where its layer folds: its scales are
        // not [out, groups].
        let strategy = match (w["strategy"].as_str(), w["group_size"].as_i64()) {
            (Some(s), _) => s,
            (None, Some(g)) if g > 0 => "group",
            (None, Some(-1)) => "channel",
            (None, _) => "tensor",
        };
        let group_size = match strategy {
            "group" => Some(
                w["group_size"]
                    .as_u64()
                    .filter(|&g| g > 0)
                    .with_context(|| format!("{}: group {name}: group_size", path.display()))?,
            ),
            _ => None,
        };
        let mut targets = Vec::new();
        let mut by_class = false;
        for t in g["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str())
        {
            match t.strip_prefix("re:") {
                Some(re) => {
                    targets.push(regex::Regex::new(re).with_context(|| {
                        format!("{}: group {name}: target {t:?}", path.display())
                    })?)
                }
                None => by_class = true,
            }
        }
        groups.push(Group {
            bits,
            group_size,
            targets,
            by_class,
        });
    }
    Ok(Some(groups))
}

/// Folds every pack-quantized layer of `entries` into one tensor `L.weight`.
pub(super) fn fold<'a>(entries: Vec<Entry<'a>>, groups: &[Group]) -> Result<Vec<Entry<'a>>> {
    let index: BTreeMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    let mut layers = BTreeMap::new();
    for e in &entries {
        let Some(layer) = e.name.strip_suffix(PACKED) else {
            continue;
        };
        let part = |s: &str| index.get(&format!("{layer}.{s}")).copied();
        let packed = part("weight_packed").context("indexed")?;
        let shape =
            part("weight_shape").with_context(|| format!("layer {layer:?}: no weight_shape"))?;
        let scale =
            part("weight_scale").with_context(|| format!("layer {layer:?}: no weight_scale"))?;
        if index.contains_key(&format!("{layer}.weight")) {
            bail!("layer {layer:?}: both weight_packed and weight");
        }
        let parts = [
            Some(packed),
            Some(shape),
            Some(scale),
            part("weight_zero_point"),
            part("weight_g_idx"),
        ];
        layers.insert(packed, (layer.to_owned(), parts));
    }
    if layers.is_empty() {
        return Ok(entries);
    }
    let taken: std::collections::BTreeSet<usize> = layers
        .values()
        .flat_map(|(_, p)| p.iter().flatten().copied())
        .collect();
    let mut out = Vec::with_capacity(entries.len());
    let mut folded = BTreeMap::new();
    for (&at, (layer, parts)) in &layers {
        folded.insert(at, fold_layer(&entries, layer, parts, groups)?);
    }
    for (i, e) in entries.into_iter().enumerate() {
        if let Some(f) = folded.remove(&i) {
            out.push(f);
        } else if !taken.contains(&i) {
            out.push(e);
        }
    }
    Ok(out)
}

fn slice<'a>(e: &Entry<'a>) -> Result<&'a [u8]> {
    match e.data {
        Data::Slice(s) if e.strides.is_none() && !e.big_endian => Ok(s),
        _ => bail!("tensor {:?}: not a plain stored tensor", e.name),
    }
}

/// The config group of `layer`: the one that targets it by name, else by
/// class; among several, the one whose width fills the packed rows exactly
/// and whose group size makes as many groups as the layer has scales.
fn group_of<'g>(
    layer: &str,
    groups: &'g [Group],
    cols: u64,
    words: u64,
    n_groups: u64,
) -> Result<&'g Group> {
    let named: Vec<&Group> = groups
        .iter()
        .filter(|g| g.targets.iter().any(|t| t.is_match(layer)))
        .collect();
    let candidates = if named.is_empty() {
        groups.iter().filter(|g| g.by_class).collect()
    } else {
        named
    };
    let mut fits: Vec<&Group> = candidates
        .into_iter()
        .filter(|g| {
            (cols * u64::from(g.bits)).div_ceil(32) == words
                && g.group_size.map_or(1, |size| cols.div_ceil(size)) == n_groups
        })
        .collect();
    fits.dedup_by_key(|g| (g.bits, g.group_size));
    match fits[..] {
        [g] => Ok(g),
        [] => bail!(
            "layer {layer:?}: no pack-quantized config group fits its {words} words and \
             {n_groups} scales a row for {cols} columns"
        ),
        _ => bail!(
            "layer {layer:?}: config groups of {:?} bits all fit; which is ambiguous",
            fits.iter().map(|g| g.bits).collect::<Vec<_>>()
        ),
    }
}

fn fold_layer<'a>(
    entries: &[Entry<'a>],
    layer: &str,
    parts: &[Option<usize>; 5],
    groups: &[Group],
) -> Result<Entry<'a>> {
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
    let group = group_of(layer, groups, cols, words, n_groups)?;
    let bits = group.bits;
    // The schema's unsigned integer type of that width (there is no 1-bit one).
    let code_type = ElementType::ALL
        .into_iter()
        .find(|t| t.class() == hurray::ElementClass::UnsignedInt && t.bits() == bits)
        .with_context(|| format!("layer {layer:?}: no unsigned {bits}-bit element type"))?;
    // The config's group size, never one guessed from the scales' shape: 100
    // columns in groups of 32 have 4 scales a row, as groups of 25 would.
    let scheme = match group.group_size {
        None => QuantizationScheme::PerAxis { axis: 0 },
        Some(block_size) => QuantizationScheme::PerBlock {
            axis: 1,
            block_size,
        },
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
        if g.dtype != ElementType::Int32
            || g.shape != [cols]
            || !matches!(scheme, QuantizationScheme::PerBlock { .. })
        {
            bail!(
                "layer {layer:?}: weight_g_idx is {} {:?}, not I32 [{cols}] of a grouped layer",
                g.dtype.name(),
                g.shape
            );
        }
        let idx = slice(g)?;
        if let Some((c, v)) = idx
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
            .enumerate()
            .find(|(_, v)| *v < 0 || *v as u64 >= n_groups)
        {
            bail!("layer {layer:?}: weight_g_idx[{c}] = {v} is not one of its {n_groups} groups");
        }
        q.group_index_type = Some(ElementType::Int32);
        buffers.push(Data::Slice(idx));
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
    let Some(zp_kind) = t
        .metadata()
        .find(|(k, _)| *k == ZERO_POINT_KEY)
        .map(|(_, v)| v)
    else {
        return Ok(None);
    };
    let name = t.name();
    let layer = name.strip_suffix(".weight").with_context(|| {
        format!("tensor {name:?}: {ZERO_POINT_KEY} on a tensor not named LAYER.weight")
    })?;
    let q = t.quantization().with_context(|| {
        format!("tensor {name:?}: {ZERO_POINT_KEY} on a tensor that is not quantized")
    })?;
    let shape = t.shape().to_wire();
    let bits = t.element_type().bits();
    let (&[rows, cols], true) = (
        &shape[..],
        t.element_type().class() == hurray::ElementClass::UnsignedInt && bits <= 8,
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
    if q.zero_point_type != Some(t.element_type())
        || q.scale_type != q.expressed_type
        || q.is_composite() && q.group_index_type.is_none()
    {
        bail!("tensor {name:?}: its quantization is not compressed-tensors' form");
    }
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
