//! Whether buffers overlap: the fused path's check (a scan, a map of
//! 64-byte granules, or a sort) and the reference's, which names the pair.

use super::{Entry, HeaderFields, Owner, Range};
use crate::error::{Error, Result};

/// Whether any two buffers overlap: each entry's first buffer and the
/// `extra` ones. Two ranges overlap exactly when, sorted by start, some
/// neighbours do. Buffers already in order (a file whose data follows
/// its names) take one scan and no allocation; others are sorted by
/// start first, by radix when there are many (non-empty buffers start
/// at multiples of 64, so the keys are short).
pub(super) fn any(entries: &[Entry], extra: &[Range], data_end: u64) -> bool {
    if extra.is_empty() {
        let mut end = 0;
        let in_order = entries.iter().all(|e| {
            let (s, e) = e.first;
            // (0, 0): no non-empty buffer.
            let ok = e == 0 || s >= end;
            end = end.max(e);
            ok
        });
        if in_order {
            return false;
        }
    }
    let firsts = entries.iter().map(|e| e.first).filter(|r| r.1 != 0);
    let count = entries.len() + extra.len();
    let all = firsts.clone().chain(extra.iter().copied());
    if let Some(found) = by_granules(all, count, data_end) {
        return found;
    }
    let mut ranges: Vec<Range> = firsts.chain(extra.iter().copied()).collect();
    if ranges.len() >= RADIX_FROM {
        ranges = radix_sort_by_start(ranges);
    } else {
        ranges.sort_unstable_by_key(|r| r.0);
    }
    ranges.windows(2).any(|w| w[1].0 < w[0].1)
}

/// Whether any two of `ranges` overlap, by marking the 64-byte granules
/// of the data region (ending at `data_end`) each one covers: exact
/// when every start is a multiple of 64 (two buffers that do not
/// overlap then never share a granule), linear, and no sort. `None`
/// when it does not apply: a start that is not such a multiple (never
/// in a verified file), or a data region of more than 64 granules per
/// range (of `count`, at most), where the map would cost more than
/// sorting.
fn by_granules(ranges: impl Iterator<Item = Range>, count: usize, data_end: u64) -> Option<bool> {
    let words = usize::try_from(data_end.div_ceil(64 * 64)).ok()?;
    if words > count {
        return None;
    }
    let mut map = vec![0u64; words];
    for (start, end) in ranges {
        if start % 64 != 0 || end > data_end {
            return None;
        }
        // Granules [first, last], as bit positions.
        let (first, last) = ((start / 64) as usize, ((end - 1) / 64) as usize);
        let (first_word, last_word) = (first / 64, last / 64);
        for (word, bits) in map[first_word..=last_word].iter_mut().enumerate() {
            let word = first_word + word;
            let lo = if word == first_word { first % 64 } else { 0 };
            let hi = if word == last_word { last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            if *bits & mask != 0 {
                return Some(true);
            }
            *bits |= mask;
        }
    }
    Some(false)
}

/// From this many ranges on, a radix sort beats a comparison sort.
const RADIX_FROM: usize = 256;
/// Bits of the key per pass.
const DIGIT: u32 = 11;

/// `ranges` stably sorted by start: an LSD radix sort on start / 64, in
/// as many passes of [`DIGIT`] bits as the largest start needs.
fn radix_sort_by_start(mut ranges: Vec<Range>) -> Vec<Range> {
    let max = ranges.iter().map(|r| r.0 >> 6).max().unwrap_or(0);
    let bits = u64::BITS - max.leading_zeros();
    let mut other = vec![(0u64, 0u64); ranges.len()];
    let mut shift = 6;
    let mut done = 0;
    while done < bits {
        let mut counts = [0usize; 1 << DIGIT];
        let digit = |r: &Range| ((r.0 >> shift) & ((1 << DIGIT) - 1)) as usize;
        for r in &ranges {
            counts[digit(r)] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for r in &ranges {
            let d = digit(r);
            other[counts[d]] = *r;
            counts[d] += 1;
        }
        std::mem::swap(&mut ranges, &mut other);
        shift += DIGIT;
        done += DIGIT;
    }
    // Starts not multiples of 64 (never in a verified file: each is a
    // multiple of its tensor's alignment, at least 64) would be only
    // nearly sorted; finish with a sort that is linear on sorted runs.
    ranges.sort_by_key(|r| r.0);
    ranges
}

/// The reference check, and the error: sorted by the whole tuple, so
/// the reported pair is deterministic.
pub(super) fn reference(
    ranges: Vec<Range>,
    owners: Vec<Owner>,
    header: &HeaderFields<'_>,
) -> Result<()> {
    let mut all: Vec<(u64, u64, u32, &'static str)> = ranges
        .into_iter()
        .zip(owners)
        .map(|((start, end), (index, role))| (start, end, index, role))
        .collect();
    all.sort_unstable();
    for w in all.windows(2) {
        if w[1].0 < w[0].1 {
            let name = |i: u32| {
                header
                    .tensors
                    .map(|t| t.get(i as usize).name().to_owned())
                    .unwrap_or_default()
            };
            return Err(Error::BuffersOverlap {
                first: name(w[0].2),
                first_buffer: w[0].3,
                second: name(w[1].2),
                second_buffer: w[1].3,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Entry, Range};
    use proptest::prelude::*;

    fn entry(first: Range) -> Entry {
        Entry {
            key: 0,
            name_at: 0,
            name_len: 0,
            element_type: 0,
            alignment: 0,
            first,
            first_is_values: true,
        }
    }

    /// Whether two of the non-empty `ranges` overlap, pair by pair.
    fn brute_force(ranges: &[Range]) -> bool {
        let ranges: Vec<&Range> = ranges.iter().filter(|r| r.1 != 0).collect();
        ranges
            .iter()
            .enumerate()
            .any(|(i, a)| ranges[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1))
    }

    proptest! {
        /// The fused path's overlap check (scan, granule map, sorts) is the
        /// pairwise definition: buffers at multiples of 64 (as in a
        /// verified file) or anywhere, few or many, in a small data region
        /// (the granule map) or a large one (the sorts), some in `extra`.
        #[test]
        #[cfg_attr(miri, ignore = "a pairwise check of hundreds of ranges per case, safe code")]
        fn the_overlap_check_is_the_pairwise_definition(
            spans in prop::collection::vec((0u64..400, 1u64..300, any::<bool>()), 0..600),
            aligned in any::<bool>(),
            spread in prop::sample::select(vec![1u64, 64, 1 << 20]),
            extra_every in 1usize..10,
        ) {
            let ranges: Vec<Range> = spans
                .iter()
                .map(|&(slot, len, empty)| {
                    let start = 64 + if aligned { slot * 64 * spread } else { slot * 37 * spread };
                    if empty { (0, 0) } else { (start, start + len * spread.min(64)) }
                })
                .collect();
            let data_end = ranges.iter().map(|r| r.1).max().unwrap_or(0) + 64;
            let (mut entries, mut extra) = (Vec::new(), Vec::new());
            for (i, r) in ranges.iter().enumerate() {
                if i % extra_every == 1 && r.1 != 0 {
                    extra.push(*r);
                } else {
                    entries.push(entry(*r));
                }
            }
            prop_assert_eq!(super::any(&entries, &extra, data_end), brute_force(&ranges));
        }
    }
}
