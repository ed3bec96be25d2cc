//! bitsandbytes' 4-bit checkpoints (NF4 and FP4, with or without "double
//! quantization" of the block scales) and Hurray's one-tensor form of them.
//!
//! transformers saves a 4-bit weight `W` (a `Params4bit`) as up to six
//! safetensors entries:
//! - `W`: `U8 [ceil(n / 2), 1]`, two 4-bit codes a byte, the first in the
//!   HIGH nibble;
//! - `W.absmax`: the block scales, `F32 [blocks]`, or with double
//!   quantization `U8 [blocks]` codes;
//! - `W.quant_map`: `F32 [16]`, the code table (NF4's or FP4's levels);
//! - `W.nested_absmax`: `F32 [ceil(blocks / nested_blocksize)]` and
//!   `W.nested_quant_map`: `F32 [256]`, the scales' own scales and code
//!   table (double quantization only);
//! - `W.quant_state.bitsandbytes__nf4` (or `__fp4`): `U8`, the JSON of
//!   `quant_type`, `blocksize`, `dtype`, `shape` and, nested,
//!   `nested_blocksize`, `nested_dtype` and `nested_offset`.
//!
//! Blocks run over the flattened tensor, so Hurray holds `W` as `u4` codes
//! of its logical shape, per flat block of `blocksize` (format 1.4), with
//! the code table, and with double quantization `u8` scale codes whose own
//! quantization (per flat block of `nested_blocksize` over the scale array,
//! its code table, and `nested_offset` as the tensor offset) dequantizes
//! them: `absmax = nested_quant_map[c] * nested_absmax + offset`, then
//! `w = quant_map[q] * absmax`, each in f32, as bitsandbytes computes it.
//! The expressed type is the state's `dtype`.
//!
//! Folding swaps the two codes of each byte (Hurray packs the first in the
//! low nibble); every code keeps its bits. The JSON is kept verbatim in the
//! tensor's metadata ([`STATE_KEY`]), and the packed weight's shape in
//! [`PACKED_SHAPE_KEY`], so unfolding writes the same entries back, byte
//! for byte, after checking the JSON still says what the typed
//! quantization says.

use super::{Data, Entry, Quantized};
use anyhow::{Context, Result, bail};
use hurray::{
    ElementType, Quantization, TensorRef,
    descriptor::{BufferRole, QuantizationScheme},
};
use std::collections::BTreeMap;

/// The tensor metadata key holding the quant state's JSON, verbatim.
pub(super) const STATE_KEY: &str = "bitsandbytes.quant_state";
/// The tensor metadata key holding the packed weight's shape, as JSON.
pub(super) const PACKED_SHAPE_KEY: &str = "bitsandbytes.packed_shape";
/// The suffix of the quant state entry, before the quant type.
const STATE: &str = ".quant_state.bitsandbytes__";

/// What a quant state's JSON says.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
struct State {
    quant_type: String,
    blocksize: u64,
    dtype: String,
    shape: Vec<u64>,
    #[serde(default)]
    nested_blocksize: Option<u64>,
    #[serde(default)]
    nested_dtype: Option<String>,
    #[serde(default)]
    nested_offset: Option<f64>,
}

fn expressed(dtype: &str) -> Option<ElementType> {
    Some(match dtype {
        "float32" => ElementType::Float32,
        "bfloat16" => ElementType::BFloat16,
        "float16" => ElementType::Float16,
        _ => return None,
    })
}

impl State {
    fn parse(name: &str, json: &[u8]) -> Result<State> {
        let s: State = serde_json::from_slice(json).with_context(|| {
            format!("tensor {name:?}: the bitsandbytes quant state is not its JSON")
        })?;
        if s.blocksize == 0 || s.nested_blocksize == Some(0) {
            bail!("tensor {name:?}: a bitsandbytes block size of 0");
        }
        if expressed(&s.dtype).is_none() {
            bail!(
                "tensor {name:?}: bitsandbytes dtype {:?} is not float32, bfloat16 or float16",
                s.dtype
            );
        }
        if s.nested_offset.is_some_and(|o| !o.is_finite()) {
            bail!("tensor {name:?}: the nested offset is not finite");
        }
        let nested = [
            s.nested_blocksize.is_some(),
            s.nested_dtype.is_some(),
            s.nested_offset.is_some(),
        ];
        if nested.iter().any(|&n| n != nested[0])
            || s.nested_dtype.as_deref().is_some_and(|d| d != "float32")
        {
            bail!("tensor {name:?}: the nested fields are partly missing, or not float32");
        }
        Ok(s)
    }

    fn nested(&self) -> bool {
        self.nested_blocksize.is_some()
    }

    fn count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// The Hurray quantization this state describes.
    fn quantization(&self) -> Quantization {
        let flat = |block_size| QuantizationScheme::PerFlatBlock { block_size };
        let expressed = expressed(&self.dtype).unwrap_or(ElementType::Float32);
        let scale_type = if self.nested() {
            ElementType::UInt8
        } else {
            ElementType::Float32
        };
        let mut q = Quantization::new(flat(self.blocksize), expressed, scale_type);
        q.code_table_type = Some(ElementType::Float32);
        if let Some(nested_blocksize) = self.nested_blocksize {
            let mut l = Quantization::new(
                flat(nested_blocksize),
                ElementType::Float32,
                ElementType::Float32,
            );
            l.code_table_type = Some(ElementType::Float32);
            l.tensor_offset = self.nested_offset.unwrap_or(0.0);
            q.scale_quantization = Some(Box::new(l));
        }
        q
    }
}

/// Folds every bitsandbytes 4-bit weight of `entries` (recognised by its
/// quant state entry) into one quantized entry, in the weight's place.
/// A weight whose entries do not fit the convention is an error naming it:
/// a quant state says the tensor is 4-bit, so writing its codes as plain
/// bytes would lose what they mean.
pub(super) fn fold(entries: Vec<Entry<'_>>) -> Result<Vec<Entry<'_>>> {
    let index: BTreeMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    // weight index -> (its part entries' indices, state)
    let mut weights: BTreeMap<usize, (Vec<usize>, State, String)> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(at) = e.name.find(STATE) else {
            continue;
        };
        let (name, quant_type) = (&e.name[..at], &e.name[at + STATE.len()..]);
        let Data::Slice(json) = e.data else {
            bail!(
                "tensor {:?}: a quant state read from a compressed member",
                e.name
            );
        };
        let state = State::parse(name, json)?;
        if state.quant_type != quant_type || !matches!(quant_type, "nf4" | "fp4") {
            bail!(
                "tensor {name:?}: quant state {:?} of type {:?}",
                e.name,
                state.quant_type
            );
        }
        let part = |suffix: &str| index.get(&format!("{name}{suffix}")).copied();
        let w = part("")
            .with_context(|| format!("tensor {name:?}: a quant state without its weight"))?;
        let mut parts = vec![
            i,
            part(".absmax").with_context(|| format!("tensor {name:?}: no {name}.absmax"))?,
            part(".quant_map").with_context(|| format!("tensor {name:?}: no {name}.quant_map"))?,
        ];
        if state.nested() {
            for s in [".nested_absmax", ".nested_quant_map"] {
                parts.push(part(s).with_context(|| format!("tensor {name:?}: no {name}{s}"))?);
            }
        }
        check(&entries, w, &parts, &state)?;
        weights.insert(
            w,
            (parts, state, String::from_utf8_lossy(json).into_owned()),
        );
    }
    if weights.is_empty() {
        return Ok(entries);
    }
    let taken: std::collections::BTreeSet<usize> = weights
        .values()
        .flat_map(|(p, ..)| p.iter().copied())
        .collect();
    let mut slots: Vec<Option<Entry<'_>>> = entries.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        if taken.contains(&i) {
            continue;
        }
        let Some(e) = slots[i].take() else { continue };
        let Some((parts, state, json)) = weights.remove(&i) else {
            out.push(e);
            continue;
        };
        let mut part = |k: usize| slots[parts[k]].take().map(|p| p.data).unwrap_or(Data::None);
        let (absmax, quant_map) = (part(1), part(2));
        let q = state.quantization();
        let mut buffers = vec![absmax, Data::None, quant_map];
        if state.nested() {
            buffers.push(part(3));
            buffers.push(part(4));
        }
        let packed_shape = serde_json::to_string(&e.shape)?;
        let Data::Slice(codes) = e.data else {
            bail!(
                "tensor {:?}: 4-bit codes read from a compressed member",
                e.name
            );
        };
        let mut f = Entry::new(
            e.name,
            ElementType::UInt4,
            state.shape.clone(),
            Data::Nibbles(codes),
        );
        f.tensor_metadata = vec![
            (PACKED_SHAPE_KEY.to_owned(), packed_shape),
            (STATE_KEY.to_owned(), json),
        ];
        f.quantized = Some(Quantized {
            quantization: q,
            buffers,
        });
        out.push(f);
    }
    Ok(out)
}

/// The entries of one weight fit its state: types, counts, plain layout.
fn check(entries: &[Entry<'_>], w: usize, parts: &[usize], s: &State) -> Result<()> {
    let name = &entries[w].name;
    let n = s
        .count()
        .with_context(|| format!("tensor {name:?}: shape {:?} overflows", s.shape))?;
    let blocks = n.div_ceil(s.blocksize);
    let want = |k: usize, dtype: ElementType, count: u64| -> Result<()> {
        let e = &entries[k];
        let got = e.count()?;
        if e.dtype != dtype || got != count || e.strides.is_some() || e.big_endian {
            bail!(
                "tensor {name:?}: {:?} is {} with {got} elements; bitsandbytes stores {} with {count}",
                e.name,
                e.dtype.name(),
                dtype.name()
            );
        }
        Ok(())
    };
    want(w, ElementType::UInt8, n.div_ceil(2))?;
    let scales = if s.nested() {
        ElementType::UInt8
    } else {
        ElementType::Float32
    };
    want(parts[1], scales, blocks)?;
    want(parts[2], ElementType::Float32, 16)?;
    if let Some(nb) = s.nested_blocksize {
        want(parts[3], ElementType::Float32, blocks.div_ceil(nb))?;
        want(parts[4], ElementType::Float32, 256)?;
    }
    if n % 2 == 1 {
        // The last byte's second code does not exist; its nibble stays 0
        // on the way in and out only if it is 0.
        bail!(
            "tensor {name:?}: an odd element count ({n}) is not held (its last byte is half a pair)"
        );
    }
    Ok(())
}

/// The safetensors entries of a bitsandbytes weight held in Hurray form, or
/// `None` when `t` is not one (no quant state in its metadata).
pub(super) fn unfold<'a>(t: &TensorRef<'a>) -> Result<Option<Vec<Entry<'a>>>> {
    let mut state_json = None;
    let mut packed_shape = None;
    for (k, v) in t.metadata() {
        match k {
            STATE_KEY => state_json = Some(v),
            PACKED_SHAPE_KEY => packed_shape = Some(v),
            _ => {}
        }
    }
    let (Some(json), Some(packed_shape)) = (state_json, packed_shape) else {
        return Ok(None);
    };
    let name = t.name();
    let state = State::parse(name, json.as_bytes())?;
    let q = t.quantization();
    if q.as_ref() != Some(&state.quantization())
        || t.element_type() != ElementType::UInt4
        || t.shape().to_wire() != state.shape
        || t.is_descriptor_only()
    {
        bail!(
            "tensor {name:?}: its {STATE_KEY} metadata no longer describes its quantization; \
             it cannot be written back as bitsandbytes entries"
        );
    }
    let packed_shape: Vec<u64> = serde_json::from_str(packed_shape)
        .with_context(|| format!("tensor {name:?}: {PACKED_SHAPE_KEY} is not a shape"))?;
    let n = state.count().unwrap_or(0);
    if packed_shape.iter().product::<u64>() != n.div_ceil(2) {
        bail!("tensor {name:?}: {PACKED_SHAPE_KEY} {packed_shape:?} does not hold {n} codes");
    }
    let blocks = n.div_ceil(state.blocksize);
    let entry = |suffix: &str, dtype, shape: Vec<u64>, data| {
        Entry::new(format!("{name}{suffix}"), dtype, shape, data)
    };
    let buffer = |role| Data::Slice(t.buffer(role).unwrap_or(&[]));
    let mut out = vec![
        entry(
            "",
            ElementType::UInt8,
            packed_shape,
            Data::Nibbles(t.data()?),
        ),
        entry(
            ".absmax",
            if state.nested() {
                ElementType::UInt8
            } else {
                ElementType::Float32
            },
            vec![blocks],
            buffer(BufferRole::Scales),
        ),
        entry(
            ".quant_map",
            ElementType::Float32,
            vec![16],
            buffer(BufferRole::CodeTable),
        ),
    ];
    if let Some(nb) = state.nested_blocksize {
        out.push(entry(
            ".nested_absmax",
            ElementType::Float32,
            vec![blocks.div_ceil(nb)],
            buffer(BufferRole::ScaleScales),
        ));
        out.push(entry(
            ".nested_quant_map",
            ElementType::Float32,
            vec![256],
            buffer(BufferRole::ScaleCodeTable),
        ));
    }
    out.push(entry(
        &format!("{STATE}{}", state.quant_type),
        ElementType::UInt8,
        vec![json.len() as u64],
        Data::Slice(json.as_bytes()),
    ));
    Ok(Some(out))
}
