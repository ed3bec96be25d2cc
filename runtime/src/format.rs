//! The byte layout around the FlatBuffers header: a fixed prefix, the data
//! region, the header, and a fixed footer (docs/spec/buffer-protocol.md).

/// First eight bytes of every Hurray file. The leading 0x89 and the trailing
/// newline catch transfers that mangle bytes as text (as PNG does).
pub const MAGIC: [u8; 8] = *b"\x89HURRAY\n";
/// Last eight bytes of every Hurray file.
pub const FOOTER_MAGIC: [u8; 8] = *b"HRRY_END";
/// Major format version this crate reads and writes. A reader refuses other majors.
pub const VERSION_MAJOR: u16 = 1;
/// Minor format version this crate writes. A reader accepts any minor of its major.
pub const VERSION_MINOR: u16 = 5;
/// Footer flag bit 0 (format 1.2): some tensor's quantization has a tensor
/// scale other than 1 or offsets, fields a 1.1 reader would ignore; the flag
/// makes such a reader refuse the file instead of misreading its values.
pub const FLAG_EXTENDED_QUANTIZATION: u64 = 1;
/// Footer flag bit 1 (format 1.3): the file is the index of a sharded
/// checkpoint (`Header.shard_index`, ADR-0010). It holds no tensors, so a
/// 1.2 reader, which would see an empty file, refuses it instead.
pub const FLAG_SHARD_INDEX: u64 = 2;
/// Footer flag bit 2 (format 1.4): some tensor's quantization uses a field
/// a 1.2 or 1.3 reader would ignore: a code table, quantized scales or
/// offsets, a tensor offset other than 0, a group index or a block format.
pub const FLAG_COMPOSITE_QUANTIZATION: u64 = 4;
/// Every footer flag this crate understands; a reader refuses any other.
pub const KNOWN_FLAGS: u64 =
    FLAG_EXTENDED_QUANTIZATION | FLAG_SHARD_INDEX | FLAG_COMPOSITE_QUANTIZATION;
/// Length of the prefix; the data region starts right after it.
pub const PREFIX_LEN: u64 = 64;
/// Length of the footer.
pub const FOOTER_LEN: u64 = 32;
/// The smallest buffer alignment, and the default.
pub const MIN_ALIGNMENT: u64 = 64;
/// The largest buffer alignment a file may ask for (1 GiB).
pub const MAX_ALIGNMENT: u64 = 1 << 30;
/// The shape value that marks a dynamic (unresolved) dimension.
pub const DYNAMIC_DIM: u64 = u64::MAX;

/// The 64-byte prefix.
pub(crate) fn prefix() -> [u8; PREFIX_LEN as usize] {
    let mut p = [0u8; PREFIX_LEN as usize];
    p[..8].copy_from_slice(&MAGIC);
    p[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    p[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    p
}

/// A whole file around a finished FlatBuffer `header`: the prefix, then
/// `data` as the data region, zero padding to a multiple of 8, the header,
/// and the footer locating it with `flags`. For tests, fuzz targets and
/// tools that build headers by hand; nothing is checked. A test hook, not
/// part of the documented API.
#[doc(hidden)]
pub fn frame(data: &[u8], header: &[u8], flags: u64) -> Vec<u8> {
    let mut out = prefix().to_vec();
    out.extend_from_slice(data);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let header_offset = out.len() as u64;
    out.extend_from_slice(header);
    out.extend_from_slice(
        &Footer {
            header_offset,
            header_length: header.len() as u64,
            flags,
        }
        .encode(),
    );
    out
}

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) header_offset: u64,
    pub(crate) header_length: u64,
    pub(crate) flags: u64,
}

impl Footer {
    pub(crate) fn encode(self) -> [u8; FOOTER_LEN as usize] {
        let mut f = [0u8; FOOTER_LEN as usize];
        f[0..8].copy_from_slice(&self.header_offset.to_le_bytes());
        f[8..16].copy_from_slice(&self.header_length.to_le_bytes());
        f[16..24].copy_from_slice(&self.flags.to_le_bytes());
        f[24..32].copy_from_slice(&FOOTER_MAGIC);
        f
    }

    /// The footer in `f` (its 32 bytes), or the end magic found instead of
    /// [`FOOTER_MAGIC`]. The fields are not checked: `locate_parts` does.
    pub(crate) fn decode(f: &[u8; FOOTER_LEN as usize]) -> Result<Footer, [u8; 8]> {
        let mut end_magic = [0u8; 8];
        end_magic.copy_from_slice(&f[24..32]);
        if end_magic != FOOTER_MAGIC {
            return Err(end_magic);
        }
        Ok(Footer {
            header_offset: read_u64(f, 0),
            header_length: read_u64(f, 8),
            flags: read_u64(f, 16),
        })
    }
}

/// The format version (major, minor) in the prefix's first 12 bytes, or the
/// magic found instead of [`MAGIC`].
pub(crate) fn decode_prefix(p: &[u8; 12]) -> Result<(u16, u16), [u8; 8]> {
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&p[..8]);
    if magic != MAGIC {
        return Err(magic);
    }
    Ok((read_u16(p, 8), read_u16(p, 10)))
}

#[inline]
pub(crate) fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

#[inline]
pub(crate) fn read_u16(bytes: &[u8], at: usize) -> u16 {
    // One bounds check and one load (indexing each byte made two).
    let mut b = [0u8; 2];
    b.copy_from_slice(&bytes[at..at + 2]);
    u16::from_le_bytes(b)
}

/// Rounds `pos` up to a multiple of `align` (a power of two), or `None` on overflow.
pub(crate) fn align_up(pos: u64, align: u64) -> Option<u64> {
    Some(pos.checked_add(align - 1)? & !(align - 1))
}

/// Whether `a` is a valid buffer alignment.
pub(crate) fn valid_alignment(a: u64) -> bool {
    a.is_power_of_two() && (MIN_ALIGNMENT..=MAX_ALIGNMENT).contains(&a)
}

/// FNV-1a, 64-bit: the hash of the header's name index (format 1.1).
pub fn name_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Slots of the name index for `n` tensors: the smallest power of two >= 2n.
pub(crate) fn name_index_len(n: usize) -> usize {
    (2 * n).next_power_of_two()
}

/// Probes of one look-up before falling back to binary search; bounds the
/// cost of a crafted index.
pub(crate) const MAX_PROBES: usize = 64;
