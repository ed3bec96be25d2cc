//! compressed-tensors checkpoints (llm-compressor and vLLM's quantized
//! weight formats) and Hurray's one-tensor form of each quantized layer.
//!
//! The quantization is described only in `config.json`'s
//! `quantization_config`, beside the weights: config groups, each with the
//! layers it targets (`re:` patterns or class names), its weights' bits,
//! type (`int` or `float`), strategy (`tensor`, `channel`, `group` with a
//! group size) and the format its layers were saved in. Two families of
//! formats fold:
//!
//! - [`packed`]: `pack-quantized`, integer codes of 1-8 bits packed into
//!   `int32` words, with `weight_shape` and optionally `weight_g_idx`;
//! - [`unpacked`]: `naive-quantized`, `int-quantized` (W8A8 int8) and
//!   `float-quantized` (FP8 E4M3), one code per element in the weight's
//!   own dtype.
//!
//! Every other format (`nvfp4-pack-quantized`, `mxfp4-pack-quantized`,
//! `marlin-24`, the sparse ones) and strategy (`block`, `tensor_group`) is
//! carried as its saved entries, untyped, with a warning naming it.

mod packed;
mod unpacked;

use super::{Data, Entry};
use anyhow::{Context, Result, bail};
use hurray::{ElementType, Quantization, TensorRef, descriptor::QuantizationScheme};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// How a config group's layers are saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `pack-quantized`.
    Packed,
    /// `naive-quantized`, `int-quantized`, `float-quantized`.
    Unpacked,
    /// Any other: its layers are carried as their saved entries.
    Carried,
}

/// What one scale covers, as the config's `strategy` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// One scale for the whole weight.
    Tensor,
    /// One scale a row (output channel).
    Channel,
    /// One scale per this many columns of a row.
    Group(u64),
    /// Anything else (`block`, `tensor_group`): no Hurray form here.
    Other,
}

impl Strategy {
    /// How many scales a row of `cols` columns has, for a strategy with
    /// scales `[out, groups]`.
    fn groups(self, cols: u64) -> Option<u64> {
        match self {
            Strategy::Channel => Some(1),
            Strategy::Group(size) => Some(cols.div_ceil(size)),
            Strategy::Tensor | Strategy::Other => None,
        }
    }
}

/// One config group's weight arguments and the layers it targets.
#[derive(Debug)]
pub(super) struct Group {
    format: Format,
    /// `type: "float"` (FP8 codes) rather than `"int"`.
    float: bool,
    bits: u32,
    strategy: Strategy,
    /// `re:` targets, anchored at the start as Python's `re.match` is.
    targets: Vec<regex::Regex>,
    /// The other targets: a layer's exact name, or a class name (`Linear`),
    /// which matches any layer no group names.
    names: Vec<String>,
}

/// The quantized groups of a `config.json` beside `input`, if it says
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

/// The quantized groups of the `config.json` text found at `path`.
pub(super) fn config(text: &str, path: &Path) -> Result<Option<Vec<Group>>> {
    let json: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("{}: not JSON", path.display()))?;
    let q = &json["quantization_config"];
    if q["quant_method"] != "compressed-tensors" {
        return Ok(None);
    }
    let mut groups = Vec::new();
    for (name, g) in q["config_groups"].as_object().into_iter().flatten() {
        let w = &g["weights"];
        if w.is_null() {
            continue; // activations only
        }
        let format = g["format"].as_str().or(q["format"].as_str()).unwrap_or("");
        let float = w["type"] == "float";
        let mut format = match format {
            "pack-quantized" if !float => Format::Packed,
            "naive-quantized" | "int-quantized" | "float-quantized" => Format::Unpacked,
            _ => Format::Carried,
        };
        let bits = match format {
            Format::Carried => 0,
            _ => w["num_bits"]
                .as_u64()
                .filter(|b| (1..=8).contains(b))
                .with_context(|| format!("{}: group {name}: num_bits", path.display()))?
                as u32,
        };
        // The strategy as compressed-tensors infers it when absent: a
        // positive group size means groups, -1 one scale a row.
        let strategy = match (w["strategy"].as_str(), w["group_size"].as_i64()) {
            (Some("tensor"), _) | (None, None) => Strategy::Tensor,
            (Some("channel"), _) | (None, Some(-1)) => Strategy::Channel,
            (Some("group"), _) | (None, Some(1..)) => Strategy::Group(
                w["group_size"]
                    .as_u64()
                    .filter(|&g| g > 0)
                    .with_context(|| format!("{}: group {name}: group_size", path.display()))?,
            ),
            _ => Strategy::Other,
        };
        // Pack-quantized scales are [out, groups]: per tensor has no such form.
        if format == Format::Carried
            || strategy == Strategy::Other
            || format == Format::Packed && strategy == Strategy::Tensor
        {
            eprintln!(
                "hurray: warning: {}: group {name}: {} {} is not folded; its layers are carried as their saved entries",
                path.display(),
                g["format"]
                    .as_str()
                    .or(q["format"].as_str())
                    .unwrap_or("no format"),
                w["strategy"]
                    .as_str()
                    .map_or(String::new(), |s| format!("with strategy {s:?}")),
            );
            format = Format::Carried;
        }
        let mut targets = Vec::new();
        let mut names = Vec::new();
        for t in g["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str())
        {
            match t.strip_prefix("re:") {
                Some(re) => {
                    targets.push(regex::Regex::new(&format!("^(?:{re})")).with_context(|| {
                        format!("{}: group {name}: target {t:?}", path.display())
                    })?)
                }
                None => names.push(t.to_owned()),
            }
        }
        groups.push(Group {
            format,
            float,
            bits,
            strategy,
            targets,
            names,
        });
    }
    Ok(Some(groups))
}

/// Folds every quantized layer of `entries` into one tensor `L.weight`, in
/// the place of its first entry.
pub(super) fn fold<'a>(entries: Vec<Entry<'a>>, groups: &[Group]) -> Result<Vec<Entry<'a>>> {
    let index: BTreeMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    let unpacked_groups = groups.iter().any(|g| g.format == Format::Unpacked);
    // A layer stays as saved when all its groups say a form not folded, or
    // when it has an entry `LAYER.weight_*` its format does not name (a
    // global scale, say), which folding would leave behind, meaning
    // nothing. An unpacked layer no group targets is not a quantized one.
    let carried = |layer: &str, unpacked: bool| {
        let parts: &[&str] = if unpacked {
            &unpacked::PARTS
        } else {
            &packed::PARTS
        };
        let prefix = format!("{layer}.");
        // The layer's entries are one run of the sorted index.
        if let Some(other) = index
            .range(prefix.clone()..)
            .map(|(n, _)| n)
            .take_while(|n| n.starts_with(&prefix))
            .find(|n| {
                let rest = &n[prefix.len()..];
                rest.starts_with("weight_") && !parts.contains(&rest)
            })
        {
            eprintln!(
                "hurray: warning: layer {layer:?}: {other:?} is no part of its compressed-tensors format; the layer is carried as its saved entries"
            );
            return true;
        }
        let targeting = targeting(layer, groups);
        if targeting.is_empty() {
            unpacked
        } else {
            targeting.iter().all(|g| g.format == Format::Carried)
        }
    };
    // A layer's first part -> (layer, its parts' indices, packed or not).
    let mut layers = BTreeMap::new();
    for e in &entries {
        if let Some(layer) = e.name.strip_suffix(packed::PACKED)
            && !carried(layer, false)
        {
            let part = |s: &str| index.get(&format!("{layer}.{s}")).copied();
            let parts = packed::PARTS.map(part);
            for (k, required) in [(1, "weight_shape"), (2, "weight_scale")] {
                if parts[k].is_none() {
                    bail!("layer {layer:?}: no {required}");
                }
            }
            if index.contains_key(&format!("{layer}.weight")) {
                bail!("layer {layer:?}: both weight_packed and weight");
            }
            let at = parts[0].context("indexed")?;
            layers.insert(at, (layer.to_owned(), parts.to_vec(), Format::Packed));
        } else if let Some(layer) = e.name.strip_suffix(unpacked::SCALE)
            && unpacked_groups
            && !index.contains_key(&format!("{layer}{}", packed::PACKED))
            && let Some(&weight) = index.get(&format!("{layer}.weight"))
            && !carried(layer, true)
        {
            let part = |s: &str| index.get(&format!("{layer}.{s}")).copied();
            let parts = unpacked::PARTS.map(part);
            layers.insert(weight, (layer.to_owned(), parts.to_vec(), Format::Unpacked));
        }
    }
    if layers.is_empty() {
        return Ok(entries);
    }
    let taken: BTreeSet<usize> = layers
        .values()
        .flat_map(|(_, p, _)| p.iter().flatten().copied())
        .collect();
    let mut folded = BTreeMap::new();
    for (&at, (layer, parts, format)) in &layers {
        let entry = match format {
            Format::Packed => packed::fold_layer(&entries, layer, parts, groups)?,
            Format::Unpacked | Format::Carried => {
                unpacked::fold_layer(&entries, layer, parts, groups)?
            }
        };
        folded.insert(at, entry);
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        if let Some(f) = folded.remove(&i) {
            out.push(f);
        } else if !taken.contains(&i) {
            out.push(e);
        }
    }
    Ok(out)
}

/// The safetensors entries of a compressed-tensors layer held in Hurray
/// form, or `None` when `t` is not one.
pub(super) fn unfold<'a>(t: &TensorRef<'a>) -> Result<Option<Vec<Entry<'a>>>> {
    match packed::unfold(t)? {
        Some(parts) => Ok(Some(parts)),
        None => unpacked::unfold(t),
    }
}

/// For a tensor `LAYER.weight` that tensor metadata `key` marks as a
/// folded layer: the key's value, `LAYER` and the tensor's quantization;
/// `None` when `t` carries no `key`.
fn marked<'a>(t: &TensorRef<'a>, key: &str) -> Result<Option<(&'a str, &'a str, Quantization)>> {
    let Some(value) = t.metadata().find(|(k, _)| *k == key).map(|(_, v)| v) else {
        return Ok(None);
    };
    let name = t.name();
    let layer = name
        .strip_suffix(".weight")
        .with_context(|| format!("tensor {name:?}: {key} on a tensor not named LAYER.weight"))?;
    let q = t
        .quantization()
        .with_context(|| format!("tensor {name:?}: {key} on a tensor that is not quantized"))?;
    Ok(Some((value, layer, q)))
}

/// Refuses a layer of no elements (its scales could claim any number of
/// groups over nothing) or one whose sizes overflow with 8 bits a code.
fn sizes(layer: &str, rows: u64, cols: u64) -> Result<()> {
    if rows == 0
        || cols == 0
        || rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(8))
            .is_none()
    {
        bail!("layer {layer:?}: a weight of [{rows}, {cols}] is not folded or unfolded");
    }
    Ok(())
}

/// The group index of a layer grouped by `scheme` along its `cols`
/// columns: `I32 [cols]`, every entry one of the blocks of the row.
fn group_index<'a>(
    layer: &str,
    g: &Entry<'a>,
    scheme: QuantizationScheme,
    cols: u64,
) -> Result<&'a [u8]> {
    let (QuantizationScheme::PerBlock { block_size, .. }, ElementType::Int32, true) =
        (scheme, g.dtype, g.shape == [cols])
    else {
        bail!(
            "layer {layer:?}: weight_g_idx is {} {:?}, not I32 [{cols}] of a grouped layer",
            g.dtype.name(),
            g.shape
        );
    };
    let n_groups = cols.div_ceil(block_size);
    let idx = slice(g)?;
    if let Some((c, v)) = idx
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
        .enumerate()
        .find(|(_, v)| *v < 0 || *v as u64 >= n_groups)
    {
        bail!("layer {layer:?}: weight_g_idx[{c}] = {v} is not one of its {n_groups} groups");
    }
    Ok(idx)
}

/// Checks that `t`'s quantization `q` is exactly what folding makes: its
/// scheme, the scales' float type as expressed type, `zero_points`, a group
/// index only per block, and nothing else; otherwise unfolding would write
/// entries that mean other values.
fn unfolds_to(t: &TensorRef<'_>, q: &Quantization, zero_points: Option<ElementType>) -> Result<()> {
    let mut want = Quantization::new(q.scheme, q.scale_type, q.scale_type);
    want.zero_point_type = zero_points;
    if matches!(q.scheme, QuantizationScheme::PerBlock { .. }) {
        want.group_index_type = q.group_index_type.filter(|&g| g == ElementType::Int32);
    }
    if *q != want
        || !matches!(
            q.scale_type,
            ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32
        )
    {
        bail!(
            "tensor {:?}: its quantization is not compressed-tensors' form",
            t.name()
        );
    }
    Ok(())
}

/// The bytes of a plain stored entry.
fn slice<'a>(e: &Entry<'a>) -> Result<&'a [u8]> {
    match e.data {
        Data::Slice(s) if e.strides.is_none() && !e.big_endian => Ok(s),
        _ => bail!("tensor {:?}: not a plain stored tensor", e.name),
    }
}

/// The config groups that target `layer`: by its exact name or a `re:`
/// pattern, else by class.
fn targeting<'g>(layer: &str, groups: &'g [Group]) -> Vec<&'g Group> {
    let named: Vec<&Group> = groups
        .iter()
        .filter(|g| {
            g.names.iter().any(|n| n == layer) || g.targets.iter().any(|t| t.is_match(layer))
        })
        .collect();
    if named.is_empty() {
        groups.iter().filter(|g| !g.names.is_empty()).collect()
    } else {
        named
    }
}

/// The config group of `layer` that `fits` it: among the groups that target
/// it by name, else among those that target it by class. `None` when no
/// group fits; an error when several different ones do.
fn group_of<'g>(
    layer: &str,
    groups: &'g [Group],
    fits: impl Fn(&Group) -> bool,
) -> Result<Option<&'g Group>> {
    let mut fit: Vec<&Group> = targeting(layer, groups)
        .into_iter()
        .filter(|g| fits(g))
        .collect();
    fit.dedup_by_key(|g| (g.format, g.float, g.bits, g.strategy));
    match fit[..] {
        [g] => Ok(Some(g)),
        [] => Ok(None),
        _ => bail!(
            "layer {layer:?}: config groups of {:?} bits all fit; which is ambiguous",
            fit.iter().map(|g| g.bits).collect::<Vec<_>>()
        ),
    }
}
