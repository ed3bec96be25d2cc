//! A GGUF block tensor taken apart into the buffers of its Hurray form
//! ([`split`]), and put back together ([`join`]), through its type's
//! [`Spec`].

use super::codec::Spec;
use anyhow::{Result, bail};
use hurray::ElementType;
use hurray::pack::{Packer, code_at};

/// The buffers of a block tensor's Hurray form: owned when split from GGUF
/// blocks, borrowed from a Hurray file when joined back into them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::convert) struct Parts<B = Vec<u8>> {
    /// The codes in element order, packed as Hurray packs its type.
    pub(in crate::convert) codes: B,
    pub(in crate::convert) scales: B,
    pub(in crate::convert) zero_points: B,
    pub(in crate::convert) offsets: B,
    /// The super-block `f16` scales of quantized scales and offsets.
    pub(in crate::convert) scale_scales: B,
    pub(in crate::convert) offset_scales: B,
}

/// Appends values of `t` (`f16` bits, or codes) packed as Hurray stores `t`.
struct Stream {
    t: ElementType,
    packer: Packer,
    out: Vec<u8>,
}

impl Stream {
    fn new(t: ElementType) -> Self {
        Stream {
            t,
            packer: Packer::new(t.bits().min(8)),
            out: Vec::new(),
        }
    }

    fn push(&mut self, v: u16) {
        if self.t.bits() == 16 {
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.packer.push(&[v as u8], &mut self.out);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.packer.finish(&mut self.out);
        self.out
    }
}

/// Value `i` of a buffer of `t` written by [`Stream`].
fn value_at(bytes: &[u8], t: ElementType, i: usize) -> u16 {
    if t.bits() == 16 {
        bytes
            .get(2 * i..2 * i + 2)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
    } else {
        u16::from(code_at(bytes, t.bits(), i as u64).unwrap_or(0))
    }
}

/// The Hurray buffers of `data`, whole blocks of `spec`'s type. No bit of
/// any field changes; only where it sits.
pub(in crate::convert) fn split(name: &str, spec: &Spec, data: &[u8]) -> Result<Parts> {
    if !data.len().is_multiple_of(spec.bytes) {
        bail!(
            "tensor {name:?}: {} data bytes are not whole {}-byte {} blocks",
            data.len(),
            spec.bytes,
            spec.name
        );
    }
    let per = spec.scales_per_block();
    let mut codes = Stream::new(spec.codes);
    let mut scales = Stream::new(spec.scales);
    let mut offsets = spec.offsets.map(Stream::new);
    let mut parts = Parts::<Vec<u8>>::default();
    for block in data.chunks_exact(spec.bytes) {
        let f = spec.split(block);
        for &q in &f.q[..spec.elements] {
            codes.push(u16::from(q));
        }
        for k in 0..per {
            scales.push(f.s[k]);
            if let Some(o) = offsets.as_mut() {
                o.push(f.m[k]);
            }
        }
        if let Some(zp) = spec.zero_point {
            parts.zero_points.extend(std::iter::repeat_n(zp, per));
        }
        if spec.scale_level {
            parts.scale_scales.extend_from_slice(&f.d.to_le_bytes());
        }
        if spec.offset_level {
            parts.offset_scales.extend_from_slice(&f.dmin.to_le_bytes());
        }
    }
    parts.codes = codes.finish();
    parts.scales = scales.finish();
    parts.offsets = offsets.map(Stream::finish).unwrap_or_default();
    Ok(parts)
}

/// The GGUF blocks of `blocks` blocks held as `parts`. A fixed field that
/// holds another value (a zero point other than the type's) is refused:
/// the tensor is then not of this type.
pub(in crate::convert) fn join(
    name: &str,
    spec: &Spec,
    blocks: usize,
    parts: &Parts<impl AsRef<[u8]>>,
) -> Result<Vec<u8>> {
    let per = spec.scales_per_block();
    if let Some(zp) = spec.zero_point
        && let Some(at) = parts.zero_points.as_ref().iter().position(|&z| z != zp)
    {
        bail!(
            "tensor {name:?}: zero point {at} is {}, and {} blocks have {zp}",
            parts.zero_points.as_ref()[at],
            spec.name
        );
    }
    let mut out = vec![0u8; blocks * spec.bytes];
    let mut f = super::codec::Block::default();
    for (b, block) in out.chunks_exact_mut(spec.bytes).enumerate() {
        for (j, q) in f.q[..spec.elements].iter_mut().enumerate() {
            *q = value_at(parts.codes.as_ref(), spec.codes, b * spec.elements + j) as u8;
        }
        for k in 0..per {
            f.s[k] = value_at(parts.scales.as_ref(), spec.scales, b * per + k);
            if let Some(t) = spec.offsets {
                f.m[k] = value_at(parts.offsets.as_ref(), t, b * per + k);
            }
        }
        f.d = value_at(parts.scale_scales.as_ref(), ElementType::Float16, b);
        f.dmin = value_at(parts.offset_scales.as_ref(), ElementType::Float16, b);
        spec.join(&f, block);
    }
    Ok(out)
}
