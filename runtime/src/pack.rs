//! Sub-byte packing, the format's one rule for elements of 1 to 7 bits:
//! element `i` occupies bits `[i*bits, (i+1)*bits)` of the buffer, counted
//! from the least significant bit of byte 0 (LSB-first; a 3-, 5- or 6-bit
//! element may span two bytes, its low bits in the first), and the unused high bits of
//! the last byte are zero. This is DLPack's "little bit-endian" packing.
//!
//! Writers that produce codes one chunk at a time (a lowering that streams a
//! constant, a converter that reads unpacked bytes) use [`Packer`]; readers
//! use [`code_at`] or [`unpack_codes`].

pub use crate::count::packed_len;
use crate::{ElementType, elements::ElementClass};

/// The mask of a `bits`-wide code.
fn mask(bits: u32) -> u8 {
    debug_assert!((1..=8).contains(&bits), "packed widths are 1 to 8 bits");
    ((1u16 << bits) - 1) as u8
}

/// A streaming LSB-first packer: feed codes in chunks of any size, get
/// whole bytes as soon as they are complete.
#[derive(Debug, Clone)]
pub struct Packer {
    bits: u32,
    /// The partial byte not yet emitted, and how many of its bits are used.
    partial: u8,
    used: u32,
}

impl Packer {
    /// A packer of `bits`-wide codes (1 to 7; 8 copies bytes as they are).
    pub fn new(bits: u32) -> Self {
        Packer {
            bits,
            partial: 0,
            used: 0,
        }
    }

    /// Packs `codes` (each in its low `bits` bits; higher bits are ignored)
    /// and appends every completed byte to `out`.
    pub fn push(&mut self, mut codes: &[u8], out: &mut Vec<u8>) {
        let m = mask(self.bits);
        out.reserve(packed_len(codes.len() as u64, self.bits).unwrap_or(0) as usize);
        // Finish a partial byte one code at a time ...
        while self.used != 0 {
            let Some((&c, rest)) = codes.split_first() else {
                return;
            };
            self.push_one(c & m, out);
            codes = rest;
        }
        // ... then whole bytes from whole groups of codes, which the compiler
        // turns into straight-line shifts (packing is otherwise the slow step
        // of a 4-bit lowering) ...
        // (Each arm names its group size as a constant: with a run-time size
        // the indexing keeps its bounds checks and runs 3x slower.)
        let rest = match self.bits {
            4 => {
                // A byte from each pair, read as one little-endian u16: the
                // odd code is its high byte, shifted down four bits. In u16
                // lanes LLVM vectorises this to a shift, two masks, an or
                // and a narrowing pack per sixteen codes: 25 % faster than
                // combining the pair's two bytes, and faster than memcpy.
                let (pairs, rest) = codes.as_chunks::<2>();
                out.extend(pairs.iter().map(|p| {
                    let w = u16::from_le_bytes(*p);
                    (w as u8 & 0x0F) | ((w >> 4) as u8 & 0xF0)
                }));
                rest
            }
            2 => {
                // Eight codes (one u64) become two bytes: the odd codes
                // shift down beside the even ones, then the pairs close up
                // (SWAR; faster than the four-code loop).
                let words = codes.chunks_exact(8);
                let rest = words.remainder();
                let start = out.len();
                out.resize(start + codes.len() / 8 * 2, 0);
                for (o, w) in out[start..].chunks_exact_mut(2).zip(words) {
                    let mut x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                    x &= 0x0303_0303_0303_0303;
                    x = (x | (x >> 6)) & 0x000F_000F_000F_000F;
                    x = (x | (x >> 12)) & 0x0000_00FF_0000_00FF;
                    x = (x | (x >> 24)) & 0xFFFF;
                    o.copy_from_slice(&(x as u16).to_le_bytes());
                }
                rest
            }
            1 => {
                // Eight codes (one u64) become one byte: the multiply moves
                // bit 0 of byte i to bit 56 + i, with no carries between them.
                let words = codes.chunks_exact(8);
                let rest = words.remainder();
                out.extend(words.map(|w| {
                    let x =
                        u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) & 0x0101_0101_0101_0101;
                    (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
                }));
                rest
            }
            6 => {
                // Four 6-bit codes make three whole bytes.
                let groups = codes.chunks_exact(4);
                let rest = groups.remainder();
                out.extend(groups.flat_map(|g| {
                    let w = u32::from(g[0] & 63)
                        | u32::from(g[1] & 63) << 6
                        | u32::from(g[2] & 63) << 12
                        | u32::from(g[3] & 63) << 18;
                    [w as u8, (w >> 8) as u8, (w >> 16) as u8]
                }));
                rest
            }
            8 => {
                out.extend_from_slice(codes);
                &[]
            }
            // 3, 5 and 7 bits: one code at a time.
            _ => codes,
        };
        // ... and keep the tail for the next call.
        for &c in rest {
            self.push_one(c & m, out);
        }
    }

    fn push_one(&mut self, code: u8, out: &mut Vec<u8>) {
        // The code's bits that fit in the partial byte; a code wider than the
        // bits left carries over into the next one.
        let stream = u16::from(self.partial) | (u16::from(code) << self.used);
        self.used += self.bits;
        if self.used >= 8 {
            out.push(stream as u8);
            self.used -= 8;
            self.partial = (stream >> 8) as u8;
        } else {
            self.partial = stream as u8;
        }
    }

    /// Appends the last, partial byte (its unused high bits zero), if any.
    pub fn finish(self, out: &mut Vec<u8>) {
        if self.used > 0 {
            out.push(self.partial);
        }
    }
}

/// Packs `codes` (each in its low `bits` bits) into a new buffer.
pub fn pack_codes(codes: impl IntoIterator<Item = u8>, bits: u32) -> Vec<u8> {
    let mut packer = Packer::new(bits);
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    let mut n = 0;
    for c in codes {
        chunk[n] = c;
        n += 1;
        if n == chunk.len() {
            packer.push(&chunk, &mut out);
            n = 0;
        }
    }
    packer.push(&chunk[..n], &mut out);
    packer.finish(&mut out);
    out
}

/// The code of element `i` of packed `bytes`, or `None` past the end.
pub fn code_at(bytes: &[u8], bits: u32, i: u64) -> Option<u8> {
    let bit = i.checked_mul(u64::from(bits))?;
    let at = usize::try_from(bit / 8).ok()?;
    let shift = bit % 8;
    if shift + u64::from(bits) <= 8 {
        return Some((*bytes.get(at)? >> shift) & mask(bits));
    }
    // A code that spans two bytes (3-, 5-, 6-bit types): both must be present.
    let pair = u16::from(*bytes.get(at)?) | (u16::from(*bytes.get(at.checked_add(1)?)?) << 8);
    Some((pair >> shift) as u8 & mask(bits))
}

/// The first `count` codes of packed `bytes` (fewer if the bytes run out).
pub fn unpack_codes(bytes: &[u8], bits: u32, count: u64) -> impl ExactSizeIterator<Item = u8> + '_ {
    let present = bytes.len() as u64 * 8 / u64::from(bits);
    let n = usize::try_from(count.min(present)).unwrap_or(usize::MAX);
    (0..n).map(move |i| code_at(bytes, bits, i as u64).unwrap_or(0))
}

/// Sign-extends a `bits`-wide two's-complement code.
pub fn sign_extend(code: u8, bits: u32) -> i8 {
    let shift = 8 - bits;
    ((code << shift) as i8) >> shift
}

/// A packed code as an integer: sign-extended for the signed types, the
/// code itself for the others.
pub fn int_value(element_type: ElementType, code: u8) -> i16 {
    match element_type.class() {
        ElementClass::SignedInt => i16::from(sign_extend(code, element_type.bits())),
        _ => i16::from(code),
    }
}

/// Clears the unused high bits of the last byte of `count` packed codes, so
/// a buffer taken from elsewhere (a byte per code, or a padded blob) meets
/// the format's zero-padding rule.
pub fn clear_padding(bytes: &mut [u8], bits: u32, count: u64) {
    let used = (u128::from(count) * u128::from(bits) % 8) as u32;
    if used != 0
        && let Some(last) = bytes.last_mut()
    {
        *last &= ((1u16 << used) - 1) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_bit_codes_span_bytes_lsb_first() {
        // 0b000001, 0b111111, 0b101010 -> bits (LSB first) 100000 111111 010101
        let packed = pack_codes([0x01, 0x3f, 0x2a], 6);
        assert_eq!(packed, vec![0xc1, 0xaf, 0x02]);
        assert_eq!(code_at(&packed, 6, 0), Some(0x01));
        assert_eq!(code_at(&packed, 6, 1), Some(0x3f));
        assert_eq!(code_at(&packed, 6, 2), Some(0x2a));
        assert_eq!(code_at(&packed, 6, 3), Some(0)); // the zero padding
        assert_eq!(code_at(&packed, 6, 4), None);
        // Any chunking gives the bytes of one whole push, and round-trips.
        let codes: Vec<u8> = (0..203u32).map(|i| (i * 37 % 64) as u8).collect();
        let whole = pack_codes(codes.iter().copied(), 6);
        assert_eq!(whole.len(), (203 * 6usize).div_ceil(8));
        for split in [1, 2, 3, 5, 7, 100] {
            let mut p = Packer::new(6);
            let mut out = Vec::new();
            for c in codes.chunks(split) {
                p.push(c, &mut out);
            }
            p.finish(&mut out);
            assert_eq!(out, whole, "chunks of {split}");
        }
        let back: Vec<u8> = unpack_codes(&whole, 6, 203).collect();
        assert_eq!(back, codes);
    }

    #[test]
    fn packs_lsb_first_and_zero_pads() {
        assert_eq!(pack_codes([1, 2, 3], 4), vec![0x21, 0x03]);
        assert_eq!(pack_codes([1, 0, 1, 1, 0, 0, 0, 0, 1], 1), vec![0x0d, 0x01]);
        assert_eq!(pack_codes([3, 0, 1, 2, 1], 2), vec![0b1001_0011, 0b01]);
        assert_eq!(pack_codes([0xff, 0x1f], 4), vec![0xff], "high bits ignored");
    }

    #[test]
    fn streaming_matches_one_shot_across_chunk_boundaries() {
        // Codes with junk in their high bits, fed in chunks that start and end
        // at every offset within a byte; checked by the independent reader.
        let codes: Vec<u8> = (0..1001u32).map(|i| (i * 37 % 256) as u8).collect();
        for bits in [1, 2, 3, 4, 5, 6, 7, 8] {
            let m = ((1u16 << bits) - 1) as u8;
            let want: Vec<u8> = codes.iter().map(|c| c & m).collect();
            let whole = pack_codes(codes.iter().copied(), bits);
            assert_eq!(
                whole.len() as u64,
                packed_len(codes.len() as u64, bits).unwrap()
            );
            for chunk in [1, 3, 5, 8, 13, 1001] {
                let mut p = Packer::new(bits);
                let mut out = Vec::new();
                for c in codes.chunks(chunk) {
                    p.push(c, &mut out);
                }
                p.finish(&mut out);
                assert_eq!(out, whole, "bits {bits}, chunks of {chunk}");
            }
            let back: Vec<u8> = unpack_codes(&whole, bits, codes.len() as u64).collect();
            assert_eq!(back, want, "bits {bits}");
            if bits < 8 {
                // The unused high bits of the last byte are zero.
                let used = (codes.len() as u32 * bits) % 8;
                if used != 0 {
                    assert_eq!(whole[whole.len() - 1] >> used, 0, "bits {bits}");
                }
            }
        }
    }

    #[test]
    fn reads_past_the_end_are_none() {
        assert_eq!(code_at(&[0xab], 4, 1), Some(0xa));
        assert_eq!(code_at(&[0xab], 4, 2), None);
        assert_eq!(code_at(&[0xab], 4, u64::MAX), None);
        assert_eq!(unpack_codes(&[0xab], 4, 5).count(), 2);
    }

    #[test]
    fn sign_extension_and_padding() {
        assert_eq!(sign_extend(0xf, 4), -1);
        assert_eq!(sign_extend(0x7, 4), 7);
        assert_eq!(sign_extend(0b10, 2), -2);
        let mut b = [0xff, 0xff];
        clear_padding(&mut b, 4, 3);
        assert_eq!(b, [0xff, 0x0f]);
        let mut b = [0xff];
        clear_padding(&mut b, 1, 8);
        assert_eq!(b, [0xff]);
    }
}
