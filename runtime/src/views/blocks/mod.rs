//! Decoders of the block formats ([`BlockFormat`]): each block's values as
//! its format defines them (GGUF's types, as ggml and the `gguf` package
//! dequantize them, value for value). Every product here is exact in `f32`
//! (a 16-bit scale times a small integer), so the order of the
//! multiplications does not change a bit.

use crate::block_format::BlockFormat;
use crate::{ElementType, minifloat};

#[rustfmt::skip]
mod grids;

/// The most elements a block of any format holds.
const MAX_BLOCK: usize = 256;

/// Decodes the elements `start..start + out.len()` of `blocks`, a run of
/// whole blocks of `format` (verified at open), into `out`.
pub(super) fn dequantize_into(format: BlockFormat, blocks: &[u8], start: u64, out: &mut [f32]) {
    let (per, size) = (format.elements() as usize, format.bytes() as usize);
    let mut values = [0f32; MAX_BLOCK];
    let mut at = start as usize;
    let mut done = 0;
    while done < out.len() {
        let (b, skip) = (at / per, at % per);
        let Some(block) = blocks.get(b * size..(b + 1) * size) else {
            return;
        };
        decode(format, block, &mut values[..per]);
        let n = (per - skip).min(out.len() - done);
        out[done..done + n].copy_from_slice(&values[skip..skip + n]);
        done += n;
        at += n;
    }
}

/// One block's values.
fn decode(format: BlockFormat, b: &[u8], y: &mut [f32]) {
    match format {
        BlockFormat::GgmlQ8_1 => scaled_i8(f32_at(b, 0), &b[8..40], y),
        BlockFormat::GgmlQ8_K => scaled_i8(f32_at(b, 0), &b[4..260], y),
        BlockFormat::GgmlQ1_0 => q1_0(b, y),
        BlockFormat::GgmlTq1_0 => tq1_0(b, y),
        BlockFormat::GgmlMxfp4 => mxfp4(b, y),
        BlockFormat::GgmlNvfp4 => nvfp4(b, y),
        BlockFormat::GgmlIq2Xxs => iq2_xxs(b, y),
        BlockFormat::GgmlIq2Xs => iq2_xs(b, y),
        BlockFormat::GgmlIq2S => iq2_s(b, y),
        BlockFormat::GgmlIq3Xxs => iq3_xxs(b, y),
        BlockFormat::GgmlIq3S => iq3_s(b, y),
        BlockFormat::GgmlIq1S => iq1_s(b, y),
        BlockFormat::GgmlIq1M => iq1_m(b, y),
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn f16_bits(bits: u16) -> f32 {
    minifloat::to_f64(ElementType::Float16, u64::from(bits)).unwrap_or(f64::NAN) as f32
}

fn f16(b: &[u8], at: usize) -> f32 {
    f16_bits(u16_at(b, at))
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_bits(u32_at(b, at))
}

/// `d * q` for `i8` codes (Q8_1, whose second `f32` is the block's sum,
/// which decoding does not use; Q8_K, whose trailing group sums likewise).
fn scaled_i8(d: f32, qs: &[u8], y: &mut [f32]) {
    for (o, &q) in y.iter_mut().zip(qs) {
        *o = f32::from(q as i8) * d;
    }
}

/// Q1_0: an `f16` scale, then one bit per element (LSB-first): `+d` or `-d`.
fn q1_0(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for (j, o) in y.iter_mut().enumerate() {
        *o = if b[2 + j / 8] >> (j % 8) & 1 == 1 {
            d
        } else {
            -d
        };
    }
}

/// TQ1_0: ternary digits, five to a byte in the first 48 bytes and four to
/// a byte in the next 4, stored as `ceil(v * 256 / 243)`: digit `n` of
/// byte `q` is the top two bits' value of `(q * 3^n mod 256) * 3`, minus 1.
fn tq1_0(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 52);
    let trit = |q: u8, n: u32| ((u16::from(q.wrapping_mul(3u8.pow(n))) * 3) >> 8) as i8 - 1;
    let mut e = 0;
    for (bytes, digits) in [(&b[0..32], 5), (&b[32..48], 5), (&b[48..52], 4)] {
        for n in 0..digits {
            for &q in bytes {
                y[e] = f32::from(trit(q, n)) * d;
                e += 1;
            }
        }
    }
}

/// E2M1 codes as the integers ggml uses (twice the value).
const E2M1_DOUBLED: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// MXFP4 as ggml reads it: half of `2^(e - 127)` (a subnormal below e = 2,
/// and `2^127` at e = 255, where OCP has NaN) times the doubled E2M1 value;
/// element `j` in the low nibble of byte `j`, `j + 16` in its high nibble.
fn mxfp4(b: &[u8], y: &mut [f32]) {
    let e = u32::from(b[0]);
    let d = f32::from_bits(if e < 2 {
        0x0020_0000 << e
    } else {
        (e - 1) << 23
    });
    for j in 0..16 {
        let q = b[1 + j];
        y[j] = d * f32::from(E2M1_DOUBLED[usize::from(q & 0x0F)]);
        y[j + 16] = d * f32::from(E2M1_DOUBLED[usize::from(q >> 4)]);
    }
}

/// NVFP4 as ggml reads it: four sub-blocks of 16, each with an unsigned
/// E4M3 scale (bias 7, the top bit ignored; 0 and 0x7F read as 0) halved,
/// times the doubled E2M1 value; in each sub-block's 8 bytes element `j` in
/// the low nibble of byte `j`, `j + 8` in its high nibble.
fn nvfp4(b: &[u8], y: &mut [f32]) {
    for s in 0..4 {
        let x = b[s];
        let (exp, man) = (i32::from((x >> 3) & 0x0F), f32::from(x & 7));
        let raw = if exp == 0 {
            man * 2f32.powi(-9)
        } else {
            (1.0 + man / 8.0) * 2f32.powi(exp - 7)
        };
        let d = if x == 0 || x == 0x7F { 0.0 } else { raw * 0.5 };
        for j in 0..8 {
            let q = b[4 + 8 * s + j];
            y[16 * s + j] = d * f32::from(E2M1_DOUBLED[usize::from(q & 0x0F)]);
            y[16 * s + j + 8] = d * f32::from(E2M1_DOUBLED[usize::from(q >> 4)]);
        }
    }
}

/// The sign pattern of a 7-bit index: its bits, and an eighth that makes
/// the count of minus signs even (ggml's `ksigns_iq2xs`).
fn ksigns(i: u32) -> u8 {
    let i = (i & 0x7F) as u8;
    i | (((i.count_ones() & 1) as u8) << 7)
}

fn sign(signs: u8, k: usize) -> f32 {
    if signs >> k & 1 == 1 { -1.0 } else { 1.0 }
}

/// Value `k` of row `r` of a grid.
fn grid<T: Copy + Into<f32>>(rows: &[u16], map: &[T], bits: u32, r: usize, k: usize) -> f32 {
    let mask = (1u16 << bits) - 1;
    let i = (rows.get(r).copied().unwrap_or(0) >> (bits as usize * k)) & mask;
    map.get(usize::from(i)).copied().map_or(0.0, Into::into)
}

/// IQ2_XXS: per 32 elements a `u32` of four grid rows (one byte each) and
/// a `u32` of four 7-bit sign indices and a 4-bit scale.
fn iq2_xxs(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for ib in 0..8 {
        let (aux0, aux1) = (u32_at(b, 2 + 8 * ib), u32_at(b, 6 + 8 * ib));
        let db = d * (0.5 + (aux1 >> 28) as f32) * 0.25;
        for l in 0..4 {
            let row = (aux0 >> (8 * l)) as u8 as usize;
            let signs = ksigns(aux1 >> (7 * l));
            for k in 0..8 {
                let g = grid(
                    &grids::IQ2XXS_ROWS,
                    &grids::IQ2XXS_MAP,
                    grids::IQ2XXS_BITS,
                    row,
                    k,
                );
                y[32 * ib + 8 * l + k] = db * g * sign(signs, k);
            }
        }
    }
}

/// IQ2_XS: 32 `u16`s of a 9-bit grid row and a 7-bit sign index, and a
/// 4-bit scale per 16 elements.
fn iq2_xs(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for r in 0..32 {
        let q = u16_at(b, 2 + 2 * r);
        let s = u32::from(b[66 + r / 4] >> (4 * (r / 2 % 2)) & 0x0F);
        let db = d * (0.5 + s as f32) * 0.25;
        let signs = ksigns(u32::from(q >> 9));
        for k in 0..8 {
            let g = grid(
                &grids::IQ2XS_ROWS,
                &grids::IQ2XS_MAP,
                grids::IQ2XS_BITS,
                usize::from(q & 511),
                k,
            );
            y[8 * r + k] = db * g * sign(signs, k);
        }
    }
}

/// IQ2_S: 10-bit grid rows (8 low bits, 2 high bits four to a byte), one
/// sign bit per element, a 4-bit scale per 16 elements.
fn iq2_s(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for r in 0..32 {
        let row = usize::from(b[2 + r]) | usize::from(b[66 + r / 4] >> (2 * (r % 4)) & 3) << 8;
        let s = u32::from(b[74 + r / 4] >> (4 * (r / 2 % 2)) & 0x0F);
        let db = d * (0.5 + s as f32) * 0.25;
        for k in 0..8 {
            let g = grid(
                &grids::IQ2S_ROWS,
                &grids::IQ2S_MAP,
                grids::IQ2S_BITS,
                row,
                k,
            );
            y[8 * r + k] = db * g * sign(b[34 + r], k);
        }
    }
}

/// IQ3_XXS: 64 grid rows of 4 (a byte each), then per 32 elements a `u32`
/// of four 7-bit sign indices and a 4-bit scale.
fn iq3_xxs(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for ib in 0..8 {
        let aux = u32_at(b, 66 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for l in 0..4 {
            let signs = ksigns(aux >> (7 * l));
            for k in 0..8 {
                let e = 32 * ib + 8 * l + k;
                let row = usize::from(b[2 + e / 4]);
                let g = grid(
                    &grids::IQ3XXS_ROWS,
                    &grids::IQ3XXS_MAP,
                    grids::IQ3XXS_BITS,
                    row,
                    e % 4,
                );
                y[e] = db * g * sign(signs, k);
            }
        }
    }
}

/// IQ3_S: 9-bit grid rows of 4 (8 low bits, the high bits eight to a
/// byte), a sign bit per element, a 4-bit odd scale per 32 elements.
fn iq3_s(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for e in 0..256 {
        let r = e / 4;
        let row = usize::from(b[2 + r]) | usize::from(b[66 + r / 8] >> (r % 8) & 1) << 8;
        let s = u32::from(b[106 + e / 64] >> (4 * (e / 32 % 2)) & 0x0F);
        let db = d * (1 + 2 * s) as f32;
        let g = grid(
            &grids::IQ3S_ROWS,
            &grids::IQ3S_MAP,
            grids::IQ3S_BITS,
            row,
            e % 4,
        );
        y[e] = db * g * sign(b[74 + e / 8], e % 8);
    }
}

/// The shift every IQ1 value gets, its sign chosen per group.
const IQ1_DELTA: f32 = 0.125;

fn iq1_grid(row: usize, k: usize) -> f32 {
    grid(
        &grids::IQ1S_ROWS,
        &grids::IQ1S_MAP,
        grids::IQ1S_BITS,
        row,
        k,
    )
}

/// IQ1_S: 11-bit grid rows of values in {-1, 0, 1} (8 low bits, 3 high
/// bits from a `u16` per 32 elements that also holds a 3-bit odd scale
/// and the sign of the shift).
fn iq1_s(b: &[u8], y: &mut [f32]) {
    let d = f16(b, 0);
    for ib in 0..8 {
        let qh = u16_at(b, 34 + 2 * ib);
        let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
        let delta = if qh & 0x8000 == 0 {
            IQ1_DELTA
        } else {
            -IQ1_DELTA
        };
        for l in 0..4 {
            let row = usize::from(b[2 + 4 * ib + l]) | usize::from((qh >> (3 * l)) & 7) << 8;
            for k in 0..8 {
                y[32 * ib + 8 * l + k] = dl * (iq1_grid(row, k) + delta);
            }
        }
    }
}

/// IQ1_M: as IQ1_S, the high bits and the shift's sign a nibble per row,
/// 3-bit odd scales per 16 elements, and the `f16` block scale spread over
/// the top nibbles of the four scale words.
fn iq1_m(b: &[u8], y: &mut [f32]) {
    let sc = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
    let d =
        f16_bits((sc[0] >> 12) | (sc[1] >> 8 & 0x00F0) | (sc[2] >> 4 & 0x0F00) | (sc[3] & 0xF000));
    for r in 0..32 {
        let nib = b[32 + r / 2] >> (4 * (r % 2));
        let row = usize::from(b[r]) | usize::from(nib & 7) << 8;
        let delta = if nib & 8 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
        let half = r / 2;
        let s = (sc[half / 4] >> (3 * (half % 4))) & 7;
        let dl = d * f32::from(2 * s + 1);
        for k in 0..8 {
            y[8 * r + k] = dl * (iq1_grid(row, k) + delta);
        }
    }
}
