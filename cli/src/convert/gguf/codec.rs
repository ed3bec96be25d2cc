//! How each GGUF block type is held in Hurray (ADR-0013), and the exact
//! rearrangement of a block's bits between the two: [`Spec::split`] takes a
//! GGUF block apart into its codes, scales and minimums in element order;
//! [`Spec::join`] puts them back. The two are inverse for every block of
//! bytes (tested on random blocks), so a conversion in and back out
//! changes no bit.
//!
//! | GGUF type | codes | scales (per) | zero point | offsets | more |
//! | --- | --- | --- | --- | --- | --- |
//! | Q4_0 | u4 | f16 (32) | 8 | | |
//! | Q4_1 | u4 | f16 (32) | | f16 | |
//! | Q5_0 | u5 | f16 (32) | 16 | | |
//! | Q5_1 | u5 | f16 (32) | | f16 | |
//! | Q8_0 | i8 | f16 (32) | | | |
//! | Q2_K | u2 | u4 (16) | | u4 | scales x f16 d, offsets x f16 -dmin per 256 |
//! | Q3_K | i3 | i6 (16) | | | scales x f16 d per 256 |
//! | Q4_K | u4 | u6 (32) | | u6 | scales x f16 d, offsets x f16 -dmin per 256 |
//! | Q5_K | u5 | u6 (32) | | u6 | as Q4_K |
//! | Q6_K | i6 | i8 (16) | | | scales x f16 d per 256 |
//! | TQ2_0 | u2 | f16 (256) | 1 | | |
//! | IQ4_NL | u4 | f16 (32) | | | code table: 16 i8 levels |
//! | IQ4_XS | u4 | i6 (32) | | | code table; scales x f16 d per 256 |
//!
//! A signed code is the two's-complement form of GGUF's `q - zero`: Q3_K's
//! `q - 4` (its high-bit mask set means "no -4"), Q6_K's `q - 32`, and the
//! `scale - 32` of Q3_K and IQ4_XS; the bits stay the same bits.

// The block layouts are index arithmetic: loops over ranges read as the
// formats define them (element `128 h + 32 s + j` is in byte `32 h + j`).
#![allow(clippy::needless_range_loop)]

use anyhow::{Result, bail};
use hurray::{ElementType, Quantization, descriptor::QuantizationScheme};

/// One block's fields, each value in its Hurray element type's low bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Block {
    /// One code per element, in element order.
    pub(super) q: [u8; 256],
    /// The scales: `f16` bits, or the codes of quantized scales.
    pub(super) s: [u16; 16],
    /// The offsets (minimums): `f16` bits, or codes.
    pub(super) m: [u16; 16],
    /// The super-block scale of quantized scales, `f16` bits.
    pub(super) d: u16,
    /// The super-block scale of quantized offsets, `f16` bits.
    pub(super) dmin: u16,
}

impl Default for Block {
    fn default() -> Self {
        Block {
            q: [0; 256],
            s: [0; 16],
            m: [0; 16],
            d: 0,
            dmin: 0,
        }
    }
}

/// How one GGUF type maps onto a Hurray quantization.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) id: u32,
    pub(super) name: &'static str,
    /// Elements and bytes per GGUF block.
    pub(super) elements: usize,
    pub(super) bytes: usize,
    pub(super) codes: ElementType,
    /// Elements per scale.
    pub(super) sub: usize,
    pub(super) scales: ElementType,
    /// The fixed zero point (a `u8` per scale), if the type has one.
    pub(super) zero_point: Option<u8>,
    pub(super) offsets: Option<ElementType>,
    pub(super) table: Option<&'static [i8; 16]>,
    /// The scales are codes times an `f16` per GGUF block.
    pub(super) scale_level: bool,
    /// The offsets are codes times an `f16` per GGUF block, subtracted.
    pub(super) offset_level: bool,
    split: fn(&[u8], &mut Block),
    join: fn(&Block, &mut [u8]),
}

/// IQ4_NL's (and IQ4_XS's) sixteen non-uniform levels (ggml's `kvalues_iq4nl`).
pub(super) const IQ4_LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

impl Spec {
    /// Scales (and offsets) per GGUF block.
    pub(super) fn scales_per_block(&self) -> usize {
        self.elements / self.sub
    }

    /// The block's fields.
    pub(super) fn split(&self, block: &[u8]) -> Block {
        let mut b = Block::default();
        (self.split)(block, &mut b);
        b
    }

    /// The GGUF block of `fields`.
    pub(super) fn join(&self, fields: &Block, out: &mut [u8]) {
        (self.join)(fields, out)
    }

    /// The Hurray quantization of a tensor of rank `rank` of this type.
    pub(super) fn quantization(&self, rank: usize) -> Quantization {
        let axis = rank.saturating_sub(1) as u32;
        let per = |block_size: usize| QuantizationScheme::PerBlock {
            axis,
            block_size: block_size as u64,
        };
        let mut q = Quantization::new(per(self.sub), ElementType::Float32, self.scales);
        q.zero_point_type = self.zero_point.map(|_| ElementType::UInt8);
        q.offset_type = self.offsets;
        q.code_table_type = self.table.map(|_| ElementType::Int8);
        let level = |tensor_scale: f64| {
            let mut l = Quantization::new(
                per(self.scales_per_block()),
                ElementType::Float32,
                ElementType::Float16,
            );
            l.tensor_scale = tensor_scale;
            Box::new(l)
        };
        q.scale_quantization = self.scale_level.then(|| level(1.0));
        q.offset_quantization = self.offset_level.then(|| level(-1.0));
        q
    }
}

/// The spec of GGUF type `id`, if it is held as codes and scales.
pub(super) fn spec(id: u32) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.id == id)
}

/// The spec whose quantization `q` is, for a tensor of rank `rank` and
/// stored type `codes`; `None` if no GGUF type has that form.
pub(super) fn spec_of(codes: ElementType, q: &Quantization, rank: usize) -> Option<&'static Spec> {
    SPECS
        .iter()
        .find(|s| s.codes == codes && s.quantization(rank) == *q)
}

/// Checks a row length is whole blocks.
pub(super) fn check_row(name: &str, spec: &Spec, row: u64) -> Result<()> {
    if !row.is_multiple_of(spec.elements as u64) {
        bail!(
            "tensor {name:?}: rows of {row} elements are not whole {} blocks of {}",
            spec.name,
            spec.elements
        );
    }
    Ok(())
}

fn h(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn put(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// 32 nibbles: element `j` low in byte `j`, `j + 16` high (Q4_0, Q4_1, IQ4_NL).
fn split_nibbles32(qs: &[u8], q: &mut [u8]) {
    for j in 0..16 {
        q[j] = qs[j] & 0x0F;
        q[j + 16] = qs[j] >> 4;
    }
}

fn join_nibbles32(q: &[u8], qs: &mut [u8]) {
    for j in 0..16 {
        qs[j] = (q[j] & 0x0F) | (q[j + 16] << 4);
    }
}

/// Q5's 32 high bits: element `j`'s is bit `j` of a `u32`.
fn split_high32(qh: &[u8], q: &mut [u8]) {
    let bits = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
    for (j, c) in q.iter_mut().enumerate().take(32) {
        *c |= (((bits >> j) & 1) as u8) << 4;
    }
}

fn join_high32(q: &[u8], qh: &mut [u8]) {
    let bits = (0..32).fold(0u32, |acc, j| acc | (u32::from(q[j] >> 4 & 1) << j));
    qh.copy_from_slice(&bits.to_le_bytes());
}

/// Element `128 h + 32 s + j` is bits `2s..2s+2` of byte `32 h + j` (the
/// K-quants' and TQ2_0's 2-bit planes).
fn split_crumbs(qs: &[u8], q: &mut [u8], mask: u8) {
    for h in 0..2 {
        for s in 0..4 {
            for j in 0..32 {
                q[128 * h + 32 * s + j] = (qs[32 * h + j] >> (2 * s)) & mask;
            }
        }
    }
}

fn join_crumbs(q: &[u8], qs: &mut [u8]) {
    for h in 0..2 {
        for j in 0..32 {
            qs[32 * h + j] =
                (0..4).fold(0, |acc, s| acc | (q[128 * h + 32 * s + j] & 3) << (2 * s));
        }
    }
}

/// Element `32 s + j`'s bit is bit `s` of byte `j` (Q3_K's mask, Q5_K's high bits).
fn split_bitplanes(qh: &[u8], q: &mut [u8], to: u32) -> [u8; 256] {
    let mut bits = [0u8; 256];
    for (e, b) in bits.iter_mut().enumerate() {
        *b = (qh[e % 32] >> (e / 32)) & 1;
        q[e] |= *b << to;
    }
    bits
}

fn join_bitplanes(bit: impl Fn(usize) -> u8, qh: &mut [u8]) {
    for (j, byte) in qh.iter_mut().enumerate().take(32) {
        *byte = (0..8).fold(0, |acc, s| acc | (bit(32 * s + j) & 1) << s);
    }
}

/// Element `64 c + 32 n + j` is nibble `n` of byte `32 c + j` (Q4_K, Q5_K).
fn split_k_nibbles(qs: &[u8], q: &mut [u8]) {
    for c in 0..4 {
        for n in 0..2 {
            for j in 0..32 {
                q[64 * c + 32 * n + j] = (qs[32 * c + j] >> (4 * n)) & 0x0F;
            }
        }
    }
}

fn join_k_nibbles(q: &[u8], qs: &mut [u8]) {
    for c in 0..4 {
        for j in 0..32 {
            qs[32 * c + j] = (q[64 * c + j] & 0x0F) | (q[64 * c + 32 + j] & 0x0F) << 4;
        }
    }
}

/// The K-quants' 12 bytes of eight 6-bit scales and eight 6-bit minimums.
fn split_scale_min(b: &[u8], s: &mut [u16], m: &mut [u16]) {
    for i in 0..4 {
        s[i] = u16::from(b[i] & 0x3F);
        m[i] = u16::from(b[4 + i] & 0x3F);
        s[4 + i] = u16::from((b[8 + i] & 0x0F) | ((b[i] >> 2) & 0x30));
        m[4 + i] = u16::from((b[8 + i] >> 4) | ((b[4 + i] >> 2) & 0x30));
    }
}

fn join_scale_min(s: &[u16], m: &[u16], b: &mut [u8]) {
    for i in 0..4 {
        let (s_lo, s_hi) = (s[i] as u8 & 0x3F, s[4 + i] as u8 & 0x3F);
        let (m_lo, m_hi) = (m[i] as u8 & 0x3F, m[4 + i] as u8 & 0x3F);
        b[i] = s_lo | (s_hi >> 4) << 6;
        b[4 + i] = m_lo | (m_hi >> 4) << 6;
        b[8 + i] = (s_hi & 0x0F) | (m_hi & 0x0F) << 4;
    }
}

fn q4_0_split(b: &[u8], f: &mut Block) {
    f.s[0] = h(b, 0);
    split_nibbles32(&b[2..18], &mut f.q);
}
fn q4_0_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.s[0]);
    join_nibbles32(&f.q, &mut b[2..18]);
}

fn q4_1_split(b: &[u8], f: &mut Block) {
    (f.s[0], f.m[0]) = (h(b, 0), h(b, 2));
    split_nibbles32(&b[4..20], &mut f.q);
}
fn q4_1_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.s[0]);
    put(b, 2, f.m[0]);
    join_nibbles32(&f.q, &mut b[4..20]);
}

fn q5_0_split(b: &[u8], f: &mut Block) {
    f.s[0] = h(b, 0);
    split_nibbles32(&b[6..22], &mut f.q);
    split_high32(&b[2..6], &mut f.q);
}
fn q5_0_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.s[0]);
    join_high32(&f.q, &mut b[2..6]);
    join_nibbles32(&f.q, &mut b[6..22]);
}

fn q5_1_split(b: &[u8], f: &mut Block) {
    (f.s[0], f.m[0]) = (h(b, 0), h(b, 2));
    split_nibbles32(&b[8..24], &mut f.q);
    split_high32(&b[4..8], &mut f.q);
}
fn q5_1_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.s[0]);
    put(b, 2, f.m[0]);
    join_high32(&f.q, &mut b[4..8]);
    join_nibbles32(&f.q, &mut b[8..24]);
}

fn q8_0_split(b: &[u8], f: &mut Block) {
    f.s[0] = h(b, 0);
    f.q[..32].copy_from_slice(&b[2..34]);
}
fn q8_0_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.s[0]);
    b[2..34].copy_from_slice(&f.q[..32]);
}

fn q2_k_split(b: &[u8], f: &mut Block) {
    for k in 0..16 {
        f.s[k] = u16::from(b[k] & 0x0F);
        f.m[k] = u16::from(b[k] >> 4);
    }
    split_crumbs(&b[16..80], &mut f.q, 3);
    (f.d, f.dmin) = (h(b, 80), h(b, 82));
}
fn q2_k_join(f: &Block, b: &mut [u8]) {
    for k in 0..16 {
        b[k] = (f.s[k] as u8 & 0x0F) | (f.m[k] as u8 & 0x0F) << 4;
    }
    join_crumbs(&f.q, &mut b[16..80]);
    put(b, 80, f.d);
    put(b, 82, f.dmin);
}

fn q3_k_split(b: &[u8], f: &mut Block) {
    split_crumbs(&b[32..96], &mut f.q, 3);
    let high = split_bitplanes(&b[0..32], &mut [0; 256], 0);
    for (c, hb) in f.q.iter_mut().zip(high) {
        // q = low2 - 4 unless the mask bit is set: as 3 bits, the mask bit
        // inverted is the sign bit.
        *c |= (hb ^ 1) << 2;
    }
    let sc = &b[96..108];
    for i in 0..16 {
        let low = if i < 8 { sc[i] & 0x0F } else { sc[i - 8] >> 4 };
        let high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        // The stored value is `scale + 32`; its 6-bit two's complement
        // flips bit 5.
        f.s[i] = u16::from((low | high << 4) ^ 0x20);
    }
    f.d = h(b, 108);
}
fn q3_k_join(f: &Block, b: &mut [u8]) {
    join_bitplanes(|e| (f.q[e] >> 2 & 1) ^ 1, &mut b[0..32]);
    join_crumbs(&f.q, &mut b[32..96]);
    let sc: Vec<u8> = f.s.iter().map(|&s| (s as u8 & 0x3F) ^ 0x20).collect();
    for i in 0..8 {
        b[96 + i] = (sc[i] & 0x0F) | (sc[i + 8] & 0x0F) << 4;
    }
    for t in 0..4 {
        b[104 + t] = (0..4).fold(0, |acc, s| acc | (sc[4 * s + t] >> 4 & 3) << (2 * s));
    }
    put(b, 108, f.d);
}

fn q4_k_split(b: &[u8], f: &mut Block) {
    (f.d, f.dmin) = (h(b, 0), h(b, 2));
    split_scale_min(&b[4..16], &mut f.s, &mut f.m);
    split_k_nibbles(&b[16..144], &mut f.q);
}
fn q4_k_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.d);
    put(b, 2, f.dmin);
    join_scale_min(&f.s, &f.m, &mut b[4..16]);
    join_k_nibbles(&f.q, &mut b[16..144]);
}

fn q5_k_split(b: &[u8], f: &mut Block) {
    (f.d, f.dmin) = (h(b, 0), h(b, 2));
    split_scale_min(&b[4..16], &mut f.s, &mut f.m);
    split_k_nibbles(&b[48..176], &mut f.q);
    split_bitplanes(&b[16..48], &mut f.q, 4);
}
fn q5_k_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.d);
    put(b, 2, f.dmin);
    join_scale_min(&f.s, &f.m, &mut b[4..16]);
    join_bitplanes(|e| f.q[e] >> 4, &mut b[16..48]);
    join_k_nibbles(&f.q, &mut b[48..176]);
}

fn q6_k_split(b: &[u8], f: &mut Block) {
    for half in 0..2 {
        for n in 0..2 {
            for k in 0..64 {
                let e = 128 * half + 64 * n + k;
                f.q[e] = (b[64 * half + k] >> (4 * n)) & 0x0F;
            }
        }
    }
    let mut high = [0u8; 256];
    split_crumbs(&b[128..192], &mut high, 3);
    for (c, hb) in f.q.iter_mut().zip(high) {
        // q - 32 in 6-bit two's complement flips bit 5.
        *c = (*c | hb << 4) ^ 0x20;
    }
    for k in 0..16 {
        f.s[k] = u16::from(b[192 + k]);
    }
    f.d = h(b, 208);
}
fn q6_k_join(f: &Block, b: &mut [u8]) {
    let q: Vec<u8> = f.q.iter().map(|&c| (c & 0x3F) ^ 0x20).collect();
    for half in 0..2 {
        for k in 0..64 {
            let e = 128 * half + k;
            b[64 * half + k] = (q[e] & 0x0F) | (q[e + 64] & 0x0F) << 4;
        }
    }
    let high: Vec<u8> = q.iter().map(|c| c >> 4).collect();
    join_crumbs(&high, &mut b[128..192]);
    for k in 0..16 {
        b[192 + k] = f.s[k] as u8;
    }
    put(b, 208, f.d);
}

fn tq2_0_split(b: &[u8], f: &mut Block) {
    split_crumbs(&b[0..64], &mut f.q, 3);
    f.s[0] = h(b, 64);
}
fn tq2_0_join(f: &Block, b: &mut [u8]) {
    join_crumbs(&f.q, &mut b[0..64]);
    put(b, 64, f.s[0]);
}

fn iq4_nl_split(b: &[u8], f: &mut Block) {
    f.s[0] = h(b, 0);
    split_nibbles32(&b[2..18], &mut f.q);
}
fn iq4_nl_join(f: &Block, b: &mut [u8]) {
    q4_0_join(f, b);
}

fn iq4_xs_split(b: &[u8], f: &mut Block) {
    f.d = h(b, 0);
    let high = h(b, 2);
    for k in 0..8 {
        let low = (b[4 + k / 2] >> (4 * (k % 2))) & 0x0F;
        let ls = low | (((high >> (2 * k)) & 3) as u8) << 4;
        f.s[k] = u16::from(ls ^ 0x20);
    }
    for k in 0..8 {
        for n in 0..2 {
            for j in 0..16 {
                f.q[32 * k + 16 * n + j] = (b[8 + 16 * k + j] >> (4 * n)) & 0x0F;
            }
        }
    }
}
fn iq4_xs_join(f: &Block, b: &mut [u8]) {
    put(b, 0, f.d);
    let ls: Vec<u8> = f.s[..8].iter().map(|&s| (s as u8 & 0x3F) ^ 0x20).collect();
    let high = (0..8).fold(0u16, |acc, k| acc | u16::from(ls[k] >> 4) << (2 * k));
    put(b, 2, high);
    for i in 0..4 {
        b[4 + i] = (ls[2 * i] & 0x0F) | (ls[2 * i + 1] & 0x0F) << 4;
    }
    for k in 0..8 {
        for j in 0..16 {
            b[8 + 16 * k + j] = (f.q[32 * k + j] & 0x0F) | (f.q[32 * k + 16 + j] & 0x0F) << 4;
        }
    }
}

use ElementType as E;

#[rustfmt::skip]
static SPECS: [Spec; 13] = [
    Spec { id: 2, name: "Q4_0", elements: 32, bytes: 18, codes: E::UInt4, sub: 32, scales: E::Float16, zero_point: Some(8), offsets: None, table: None, scale_level: false, offset_level: false, split: q4_0_split, join: q4_0_join },
    Spec { id: 3, name: "Q4_1", elements: 32, bytes: 20, codes: E::UInt4, sub: 32, scales: E::Float16, zero_point: None, offsets: Some(E::Float16), table: None, scale_level: false, offset_level: false, split: q4_1_split, join: q4_1_join },
    Spec { id: 6, name: "Q5_0", elements: 32, bytes: 22, codes: E::UInt5, sub: 32, scales: E::Float16, zero_point: Some(16), offsets: None, table: None, scale_level: false, offset_level: false, split: q5_0_split, join: q5_0_join },
    Spec { id: 7, name: "Q5_1", elements: 32, bytes: 24, codes: E::UInt5, sub: 32, scales: E::Float16, zero_point: None, offsets: Some(E::Float16), table: None, scale_level: false, offset_level: false, split: q5_1_split, join: q5_1_join },
    Spec { id: 8, name: "Q8_0", elements: 32, bytes: 34, codes: E::Int8, sub: 32, scales: E::Float16, zero_point: None, offsets: None, table: None, scale_level: false, offset_level: false, split: q8_0_split, join: q8_0_join },
    Spec { id: 10, name: "Q2_K", elements: 256, bytes: 84, codes: E::UInt2, sub: 16, scales: E::UInt4, zero_point: None, offsets: Some(E::UInt4), table: None, scale_level: true, offset_level: true, split: q2_k_split, join: q2_k_join },
    Spec { id: 11, name: "Q3_K", elements: 256, bytes: 110, codes: E::Int3, sub: 16, scales: E::Int6, zero_point: None, offsets: None, table: None, scale_level: true, offset_level: false, split: q3_k_split, join: q3_k_join },
    Spec { id: 12, name: "Q4_K", elements: 256, bytes: 144, codes: E::UInt4, sub: 32, scales: E::UInt6, zero_point: None, offsets: Some(E::UInt6), table: None, scale_level: true, offset_level: true, split: q4_k_split, join: q4_k_join },
    Spec { id: 13, name: "Q5_K", elements: 256, bytes: 176, codes: E::UInt5, sub: 32, scales: E::UInt6, zero_point: None, offsets: Some(E::UInt6), table: None, scale_level: true, offset_level: true, split: q5_k_split, join: q5_k_join },
    Spec { id: 14, name: "Q6_K", elements: 256, bytes: 210, codes: E::Int6, sub: 16, scales: E::Int8, zero_point: None, offsets: None, table: None, scale_level: true, offset_level: false, split: q6_k_split, join: q6_k_join },
    Spec { id: 35, name: "TQ2_0", elements: 256, bytes: 66, codes: E::UInt2, sub: 256, scales: E::Float16, zero_point: Some(1), offsets: None, table: None, scale_level: false, offset_level: false, split: tq2_0_split, join: tq2_0_join },
    Spec { id: 20, name: "IQ4_NL", elements: 32, bytes: 18, codes: E::UInt4, sub: 32, scales: E::Float16, zero_point: None, offsets: None, table: Some(&IQ4_LEVELS), scale_level: false, offset_level: false, split: iq4_nl_split, join: iq4_nl_join },
    Spec { id: 23, name: "IQ4_XS", elements: 256, bytes: 136, codes: E::UInt4, sub: 32, scales: E::Int6, zero_point: None, offsets: None, table: Some(&IQ4_LEVELS), scale_level: true, offset_level: false, split: iq4_xs_split, join: iq4_xs_join },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic byte stream (xorshift).
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn split_then_join_gives_back_every_block() {
        for spec in &SPECS {
            for seed in 1..200 {
                let block = bytes(seed * 7919 + u64::from(spec.id), spec.bytes);
                let f = spec.split(&block);
                let mut back = vec![0u8; spec.bytes];
                spec.join(&f, &mut back);
                assert_eq!(back, block, "{} seed {seed}", spec.name);
                // Every field is within its type's bits.
                let bits = spec.codes.bits();
                assert!(
                    f.q[..spec.elements]
                        .iter()
                        .all(|&c| u32::from(c) < 1 << bits),
                    "{}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn specs_agree_with_the_type_table() {
        for spec in &SPECS {
            let (_, name, elements, bytes) = super::super::GGML_TYPES
                .iter()
                .find(|t| t.0 == spec.id)
                .expect("a GGUF type");
            assert_eq!(
                (*name, *elements, *bytes),
                (spec.name, spec.elements as u64, spec.bytes as u64)
            );
            assert!(spec.elements.is_multiple_of(spec.sub));
        }
    }
}
