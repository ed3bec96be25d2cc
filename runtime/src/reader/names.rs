//! The reader's own index of tensor names, built while verifying.
//!
//! A file's `name_index` (format 1.1) hashes names with FNV-1a, one byte
//! per step: about 40 ns for a 24-byte name on the reference machine, most
//! of a look-up. Verification reads every name anyway (each is checked to
//! follow the previous one), so it also keys each into a table of its own:
//! a file of up to [`SCAN_UP_TO`] tensors by [`tag`] (last eight bytes and
//! length, one load), scanned; a larger one by [`hash`] (sixteen bytes per
//! folded multiply), in slots. Look-ups then cost a fraction of that. The
//! file's index stays verified and is what a reader without this table
//! (the reference path) uses.
//!
//! The hash is not keyed, so names can be crafted to collide. Cost stays
//! bounded: an entry that finds no free slot within [`MAX_PROBES`] is left
//! out, and a look-up that does not find its name within as many probes
//! falls back to binary search over the sorted names.

use crate::format::{MAX_PROBES, read_u64};

/// A table of tensor positions by name hash: open addressing, linear
/// probing, at least twice as many slots as names.
#[derive(Debug, Clone)]
pub(crate) struct NameTable {
    /// `(tag, position + 1)`; position 0 marks an empty slot. The tag is
    /// the low half of the hash, so most mismatches never read a name.
    slots: Box<[(u32, u32)]>,
    /// Each tensor's [`Entry`], by position.
    entries: Vec<Entry>,
    /// Slot of a hash: its top bits.
    shift: u32,
    /// Whether every name is in the table: a miss is then an answer.
    complete: bool,
}

/// Up to this many tensors, a look-up compares the name's hash with each
/// tensor's, and opening allocates no slots.
const SCAN_UP_TO: usize = 16;

/// What the table keeps of each tensor, so that a look-up reads no vtable.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// The name's [`tag`] in a table that is scanned, its [`hash`] in one
    /// with slots. The walk records whichever the header's size suggests
    /// ([`hashes_for`]); [`NameTable::build`] recomputes the other if the
    /// count of tensors says otherwise.
    pub(crate) key: u64,
    /// Where the name's bytes are in the header, and how many.
    pub(crate) name_at: usize,
    pub(crate) name_len: u32,
    /// The tensor's element type (wire value) and its `alignment` field.
    pub(crate) element_type: u8,
    pub(crate) alignment: u64,
    /// The tensor's first non-empty buffer, `(start, end)`; `(0, 0)` when
    /// it has none (the overlap check reads it).
    pub(crate) first: (u64, u64),
    /// Whether `first` is a dense tensor's values (what `data()` returns).
    pub(crate) first_is_values: bool,
}

/// What a look-up in the table found.
pub(crate) enum Found {
    /// The tensor at this position.
    At(usize, Entry),
    /// No tensor has the name.
    Absent,
    /// The table cannot tell (the name may be one left out): search.
    Unknown,
}

/// The hash of a name: sixteen bytes per folded multiply (the 128-bit
/// product's halves XORed), the blocks of a name of up to 32 bytes folded
/// independently, then one fold to mix them; the top bits pick the slot,
/// the low half is the tag. Two multiplies deep for the names of most files,
/// where a multiply per eight bytes in a chain was five.
#[inline]
pub(crate) fn hash(name: &[u8]) -> u64 {
    // Digits of pi: odd, dense, and nothing up the sleeve.
    const K: [u64; 6] = [
        0x243F_6A88_85A3_08D3,
        0x1319_8A2E_0370_7345,
        0xA409_3822_299F_31D1,
        0x082E_FA98_EC4E_6C89,
        0x4528_21E6_38D0_1377,
        0xBE54_66CF_34E9_0C6D,
    ];
    let word = |at: usize| read_u64(name, at);
    let n = name.len();
    let len = n as u64;
    let (first, last) = if n > 16 {
        // Every block but the last, chained; the last sixteen bytes
        // (overlapping the block before if need be) on their own.
        let mut acc = fold(word(0) ^ K[0], word(8) ^ K[1]);
        let mut at = 16;
        while at + 16 < n {
            acc = fold(word(at) ^ K[0], word(at + 8) ^ acc);
            at += 16;
        }
        (acc, fold(word(n - 16) ^ K[2], word(n - 8) ^ K[3] ^ len))
    } else {
        // Two words that together cover the name (overlapping, or the
        // bytes of a short one).
        let (a, b) = if n >= 8 {
            (word(0), word(n - 8))
        } else {
            (short_word(name), 0)
        };
        (K[0], fold(a ^ K[2], b ^ K[3] ^ len))
    };
    fold(first ^ K[4], last ^ K[5])
}

/// Whether the walk over a header of `header_len` bytes should record
/// hashes (else tags): a header this small holds few tensors, usually no
/// more than a table scans, and a large one many.
pub(crate) fn hashes_for(header_len: usize) -> bool {
    header_len > 4096
}

/// A name's tag: its last eight bytes and its length, which tell most
/// names of a file apart (they differ at the end) at the cost of one load;
/// a small table compares tags before names instead of hashing.
#[inline]
pub(crate) fn tag(name: &[u8]) -> u64 {
    let n = name.len();
    let last = if n >= 8 {
        read_u64(name, n - 8)
    } else {
        short_word(name)
    };
    last ^ (n as u64).rotate_right(8)
}

/// The bytes of a name shorter than eight bytes, as one little-endian word.
#[inline]
fn short_word(name: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..name.len()].copy_from_slice(name);
    u64::from_le_bytes(w)
}

/// Whether `a` and `b` are the same bytes: eight at a time, the last word
/// overlapping the one before, inline (a name is a few words: the library
/// call cost more than the comparison).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a == b;
    }
    let mut at = 0;
    while at + 8 < n {
        if read_u64(a, at) != read_u64(b, at) {
            return false;
        }
        at += 8;
    }
    read_u64(a, n - 8) == read_u64(b, n - 8)
}

/// The folded multiply: the two halves of the 128-bit product, XORed.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl NameTable {
    /// The table of the tensors whose entries are `entries`, in tensor
    /// order, their names in `header`. A few tensors get no slots: a
    /// look-up scans them, comparing tags; more are hashed into slots.
    /// `hashed`: whether the entries' keys are hashes (else tags).
    pub(crate) fn build(entries: Vec<Entry>, header: &[u8], hashed: bool) -> NameTable {
        NameTable::build_with(entries, header, hashed, hash)
    }

    /// [`NameTable::build`] with the hash `hash` (tests force collisions).
    fn build_with(
        mut entries: Vec<Entry>,
        header: &[u8],
        hashed: bool,
        hash: fn(&[u8]) -> u64,
    ) -> NameTable {
        // The walk verified every name inside the header.
        let name = |e: &Entry| {
            header
                .get(e.name_at..e.name_at + e.name_len as usize)
                .unwrap_or_default()
        };
        if entries.len() <= SCAN_UP_TO {
            if hashed {
                for e in &mut entries {
                    e.key = tag(name(e));
                }
            }
            return NameTable {
                slots: Box::default(),
                entries,
                shift: 0,
                complete: true,
            };
        }
        let len = (2 * entries.len()).next_power_of_two();
        let bits = len.trailing_zeros();
        let shift = u64::BITS - bits;
        let mask = len - 1;
        let mut slots = vec![(0u32, 0u32); len].into_boxed_slice();
        let mut complete = true;
        if !hashed {
            for e in &mut entries {
                e.key = hash(name(e));
            }
        }
        for (position, h) in entries.iter().map(|e| e.key).enumerate() {
            let mut slot = (h >> shift) as usize;
            let mut placed = false;
            for _ in 0..MAX_PROBES.min(len) {
                if slots[slot].1 == 0 {
                    // Positions fit: a header holds fewer than 2^32 tensors.
                    slots[slot] = (h as u32, position as u32 + 1);
                    placed = true;
                    break;
                }
                slot = (slot + 1) & mask;
            }
            complete &= placed;
        }
        NameTable {
            slots,
            entries,
            shift,
            complete,
        }
    }

    /// The position of the tensor named `name`, in the header `header`.
    #[inline]
    pub(crate) fn find(&self, name: &str, header: &[u8]) -> Found {
        let is = |e: &Entry| {
            header
                .get(e.name_at..e.name_at + e.name_len as usize)
                .is_some_and(|stored| same(stored, name.as_bytes()))
        };
        if self.slots.is_empty() {
            let t = tag(name.as_bytes());
            return match self.entries.iter().position(|e| e.key == t && is(e)) {
                Some(i) => Found::At(i, self.entries[i]),
                None => Found::Absent,
            };
        }
        let h = hash(name.as_bytes());
        let mask = self.slots.len() - 1;
        let mut slot = (h >> self.shift) as usize;
        for _ in 0..MAX_PROBES.min(self.slots.len()) {
            let (tag, entry) = self.slots[slot];
            if entry == 0 {
                return if self.complete {
                    Found::Absent
                } else {
                    Found::Unknown
                };
            }
            if tag == h as u32 {
                let e = self.entries[entry as usize - 1];
                if is(&e) {
                    return Found::At(entry as usize - 1, e);
                }
            }
            slot = (slot + 1) & mask;
        }
        Found::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names laid out one after another, as a header holds them, with
    /// their entries.
    fn layout(names: &[String]) -> (Vec<u8>, Vec<Entry>) {
        let mut header = Vec::new();
        let mut entries = Vec::new();
        for n in names {
            entries.push(Entry {
                key: tag(n.as_bytes()),
                first: (0, 0),
                first_is_values: false,
                name_at: header.len(),
                name_len: n.len() as u32,
                element_type: 0,
                alignment: 0,
            });
            header.extend_from_slice(n.as_bytes());
        }
        (header, entries)
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("model.layers.{i}.weight")).collect()
    }

    /// Whatever keys the walk recorded (tags or hashes), for tables that
    /// are scanned and tables with slots.
    #[test]
    fn every_name_is_found_and_no_other() {
        for (n, hashed) in [0, 1, 2, 7, 16, 17, 100, 1000]
            .into_iter()
            .flat_map(|n| [(n, false), (n, true)])
        {
            let names = names(n);
            let (header, mut entries) = layout(&names);
            if hashed {
                for (e, name) in entries.iter_mut().zip(&names) {
                    e.key = hash(name.as_bytes());
                }
            }
            let table = NameTable::build(entries, &header, hashed);
            for (i, s) in names.iter().enumerate() {
                assert!(matches!(table.find(s, &header), Found::At(p, _) if p == i));
            }
            for absent in ["", "model", "model.layers.0.bias", "x"] {
                assert!(matches!(table.find(absent, &header), Found::Absent));
            }
        }
    }

    #[test]
    fn colliding_names_are_left_out_and_searched_for() {
        // Every name with the same hash: the first MAX_PROBES fit, the
        // rest are left out and the table no longer answers "absent".
        let names: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
        let (header, entries) = layout(&names);
        let table = NameTable::build_with(entries, &header, false, |_| 7);
        assert!(!table.complete);
        let placed = table.slots.iter().filter(|s| s.1 != 0).count();
        assert_eq!(placed, MAX_PROBES);
        // The real hash of a name left out leads to no entry of its own.
        assert!(matches!(table.find("n199", &header), Found::Unknown));
    }

    #[test]
    fn the_hash_uses_every_byte() {
        let base = hash(b"model.layers.1234.weight");
        let mut seen = std::collections::HashSet::new();
        for i in 0..24 {
            let mut b = b"model.layers.1234.weight".to_vec();
            b[i] ^= 1;
            let h = hash(&b);
            assert_ne!(h, base, "byte {i}");
            assert!(seen.insert(h));
        }
        for n in 0..40 {
            assert_ne!(hash(&vec![0u8; n]), hash(&vec![0u8; n + 1]));
        }
    }

    #[test]
    fn same_is_byte_equality() {
        // Fewer under Miri, which runs each comparison a thousand times slower.
        let longest = if cfg!(miri) { 12 } else { 40 };
        let words: Vec<Vec<u8>> = (0..longest)
            .flat_map(|n| {
                let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
                let mut changed = Vec::new();
                for i in 0..n {
                    let mut c = base.clone();
                    c[i] ^= 1;
                    changed.push(c);
                }
                std::iter::once(base).chain(changed)
            })
            .collect();
        for a in &words {
            for b in &words {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    /// Families of names as files hold them, short to long: no two share a
    /// hash, the slots (the top bits) spread them so that every name finds
    /// a slot within the probe limit, and the tags (the low bits) differ.
    #[test]
    #[cfg_attr(miri, ignore = "statistics over 100,000 names, safe code")]
    fn real_names_spread_over_slots_and_tags() {
        let families: [Box<dyn Fn(usize) -> String>; 5] = [
            Box::new(|i| format!("model.layers.{i}.weight")),
            Box::new(|i| format!("{i}")),
            Box::new(|i| format!("t{i:x}")),
            Box::new(|i| format!("{i:08}")),
            Box::new(|i| format!("transformer.h.{}.mlp.c_proj.weight_scale_inv.{i}", i % 7)),
        ];
        for family in &families {
            let names: Vec<String> = (0..20_000).map(family).collect();
            let (header, entries) = layout(&names);
            let hashes: std::collections::HashSet<u64> =
                names.iter().map(|n| hash(n.as_bytes())).collect();
            assert_eq!(hashes.len(), names.len(), "{}: full collisions", names[1]);
            let tags: std::collections::HashSet<u32> =
                names.iter().map(|n| hash(n.as_bytes()) as u32).collect();
            assert!(tags.len() > names.len() - 4, "{}: tags collide", names[1]);
            let table = NameTable::build(entries, &header, false);
            assert!(table.complete, "{}: a name found no slot", names[1]);
            assert!(matches!(
                table.find(&names[777], &header),
                Found::At(777, _)
            ));
        }
    }
}
