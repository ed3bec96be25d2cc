//! Hyper-rectangular slices: per dimension `start:stop:step` (Python's
//! notation, steps of 1 or more), read from only the bytes they cover.
//!
//! A slice of a dense or strided tensor comes back dense and row-major, in
//! the tensor's stored encoding: sub-byte elements are packed again from
//! element boundaries ([`crate::pack`]), so a slice of an `i4` tensor is an
//! `i4` buffer. Ranks are kept (an index `i` is the range `i:i+1`); dropping
//! indexed dimensions is the caller's presentation. Quantized tensors give
//! their stored values: their scales belong to the whole tensor.
//!
//! The same gather serves a sharded tensor ([`crate::ShardedFile::slice`]):
//! each piece a request touches copies its part into one output.

use crate::error::{Error, Result};
use crate::views::row_major_strides;
use crate::{ElementType, pack};

/// One dimension of a slice: the indices `start, start + step, ...` below
/// `stop`. `step` is at least 1; `start == stop` selects nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SliceRange {
    pub start: u64,
    pub stop: u64,
    pub step: u64,
}

impl SliceRange {
    /// `start:stop:step`.
    pub const fn new(start: u64, stop: u64, step: u64) -> Self {
        SliceRange { start, stop, step }
    }

    /// Every index of a dimension of size `len` (`:`).
    pub const fn full(len: u64) -> Self {
        SliceRange::new(0, len, 1)
    }

    /// The one index `i` (`i:i+1`).
    pub const fn index(i: u64) -> Self {
        SliceRange::new(i, i.saturating_add(1), 1)
    }

    /// How many indices the range selects.
    pub fn len(&self) -> u64 {
        if self.stop <= self.start || self.step == 0 {
            0
        } else {
            (self.stop - self.start - 1) / self.step + 1
        }
    }

    /// Whether the range selects nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The part of this range inside `[lo, lo + extent)`: the range in
    /// coordinates local to `lo`, and the position of its first index among
    /// this range's indices. `None` when they do not meet.
    pub(crate) fn clip(&self, lo: u64, extent: u64) -> Option<(SliceRange, u64)> {
        let hi = lo.checked_add(extent)?.min(self.stop);
        let from = self.start.max(lo);
        // The first index of this range at or after `from`.
        let skip = (from - self.start).div_ceil(self.step);
        let first = self.start.checked_add(skip.checked_mul(self.step)?)?;
        (first < hi).then(|| (SliceRange::new(first - lo, hi - lo, self.step), skip))
    }
}

impl std::fmt::Display for SliceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.start, self.stop)?;
        if self.step != 1 {
            write!(f, ":{}", self.step)?;
        }
        Ok(())
    }
}

/// Parses Python-style slice text against `shape`: `"0:2, :, -1, ::2"`.
/// Each comma-separated item is `i` (one index, rank kept), `start:stop` or
/// `start:stop:step`, with omitted bounds and negative indices as in Python
/// (`-1` is the last). Fewer items than dimensions leave the rest whole.
/// Errors name `tensor`, the dimension and the item.
pub fn parse_slice(tensor: &str, text: &str, shape: &[u64]) -> Result<Vec<SliceRange>> {
    let items: Vec<&str> = if text.trim().is_empty() {
        Vec::new()
    } else {
        text.split(',').map(str::trim).collect()
    };
    if items.len() > shape.len() {
        return Err(invalid(
            tensor,
            shape.len(),
            text,
            "more items than dimensions",
        ));
    }
    let mut out = Vec::with_capacity(shape.len());
    for (dim, &size) in shape.iter().enumerate() {
        let Some(item) = items.get(dim) else {
            out.push(SliceRange::full(size));
            continue;
        };
        let bad = |reason| invalid(tensor, dim, item, reason);
        let bound = |s: &str, default: u64| -> Result<u64> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(default);
            }
            let v: i128 = s.parse().map_err(|_| bad("not an integer"))?;
            let v = if v < 0 { v + i128::from(size) } else { v };
            // Python clamps slice bounds to the dimension.
            Ok(v.clamp(0, i128::from(size)) as u64)
        };
        let parts: Vec<&str> = item.split(':').collect();
        let range = match parts.as_slice() {
            [i] => {
                let v: i128 = i.parse().map_err(|_| bad("not an integer"))?;
                let v = if v < 0 { v + i128::from(size) } else { v };
                if !(0..i128::from(size)).contains(&v) {
                    return Err(bad("index out of range"));
                }
                SliceRange::index(v as u64)
            }
            [a, b] => SliceRange::new(bound(a, 0)?, bound(b, size)?, 1),
            [a, b, c] => {
                let step = if c.trim().is_empty() {
                    1
                } else {
                    c.trim()
                        .parse::<u64>()
                        .map_err(|_| bad("the step must be a positive integer"))?
                };
                if step == 0 {
                    return Err(bad("the step must be a positive integer"));
                }
                SliceRange::new(bound(a, 0)?, bound(b, size)?, step)
            }
            _ => return Err(bad("expected i, start:stop or start:stop:step")),
        };
        out.push(range);
    }
    Ok(out)
}

fn invalid(tensor: &str, dim: usize, range: &str, reason: &'static str) -> Error {
    Error::InvalidSlice {
        tensor: tensor.to_owned(),
        dim,
        range: range.to_owned(),
        reason,
    }
}

/// Checks `ranges` against `dims`: one per dimension, steps of at least 1,
/// `start <= stop <= size`. Returns the slice's shape.
pub(crate) fn check_ranges(tensor: &str, ranges: &[SliceRange], dims: &[u64]) -> Result<Vec<u64>> {
    if ranges.len() != dims.len() {
        return Err(invalid(
            tensor,
            ranges.len().min(dims.len()),
            &format!("{} range(s) for rank {}", ranges.len(), dims.len()),
            "one range per dimension",
        ));
    }
    ranges
        .iter()
        .zip(dims)
        .enumerate()
        .map(|(dim, (r, &size))| {
            if r.step == 0 {
                Err(invalid(
                    tensor,
                    dim,
                    &r.to_string(),
                    "the step must be at least 1",
                ))
            } else if r.start > r.stop || r.stop > size {
                Err(invalid(
                    tensor,
                    dim,
                    &r.to_string(),
                    "needs start <= stop <= the dimension's size",
                ))
            } else {
                Ok(r.len())
            }
        })
        .collect()
}

/// A slice's values: dense, row-major, in the source's stored encoding
/// (sub-byte elements packed LSB-first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceData {
    pub element_type: ElementType,
    pub shape: Vec<u64>,
    pub bytes: Vec<u8>,
}

/// Bytes per element in the unpacked working form of a gather: sub-byte
/// codes take one byte each until the result is packed.
pub(crate) fn unit_of(element_type: ElementType) -> usize {
    (element_type.bits() as usize / 8).max(1)
}

/// An output being filled: unpacked elements of `unit` bytes, row-major
/// over `shape`.
pub(crate) struct Gathered {
    pub(crate) element_type: ElementType,
    pub(crate) shape: Vec<u64>,
    pub(crate) strides: Vec<i64>,
    pub(crate) unit: usize,
    pub(crate) bytes: Vec<u8>,
}

impl Gathered {
    /// A zeroed output. Callers bound `shape` by bytes really present (a
    /// slice is never larger than what it reads) before calling this.
    pub(crate) fn new(tensor: &str, element_type: ElementType, shape: Vec<u64>) -> Result<Self> {
        let unit = unit_of(element_type);
        let len = shape
            .iter()
            .try_fold(unit as u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::SizeOverflow {
                tensor: tensor.to_owned(),
                field: "slice",
            })?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|_| Error::SizeOverflow {
                tensor: tensor.to_owned(),
                field: "slice",
            })?;
        bytes.resize(len, 0);
        let strides = row_major_strides(&shape);
        Ok(Gathered {
            element_type,
            shape,
            strides,
            unit,
            bytes,
        })
    }

    /// The finished slice, packed again for sub-byte types.
    pub(crate) fn finish(self) -> SliceData {
        let bits = self.element_type.bits();
        let bytes = if bits < 8 {
            pack::pack_codes(self.bytes, bits)
        } else {
            self.bytes
        };
        SliceData {
            element_type: self.element_type,
            shape: self.shape,
            bytes,
        }
    }
}

/// Copies `src[ranges]` into `out` at position `at` (a coordinate of the
/// output). `ranges` are checked against the source's dims by the caller.
pub(crate) fn gather(
    src: &Stored<'_>,
    ranges: &[SliceRange],
    out: &mut Gathered,
    at: &[u64],
) -> Result<()> {
    let (name, bits, values, base) = (src.name, src.bits, src.values, src.base);
    let src_strides = &src.strides;
    let unit = out.unit;
    let counts: Vec<u64> = ranges.iter().map(SliceRange::len).collect();
    if counts.contains(&0) {
        return Ok(());
    }
    let stored = base + values.len() as u64 * 8 / u64::from(bits);
    let out_of_bounds = || Error::InvalidField {
        tensor: name.to_owned(),
        field: "strides".into(),
        value: format!("{src_strides:?}"),
        reason: "an element of the slice lies outside the values buffer".into(),
    };
    let element = |coords: &[u64]| -> Result<u64> {
        let mut e: i128 = 0;
        for ((c, r), s) in coords.iter().zip(ranges).zip(src_strides) {
            let i = i128::from(r.start) + i128::from(*c) * i128::from(r.step);
            e += i * i128::from(*s);
        }
        u64::try_from(e)
            .ok()
            .filter(|&e| e >= base && e < stored)
            .map(|e| e - base)
            .ok_or_else(out_of_bounds)
    };
    let rank = ranges.len();
    let dst_at = |coords: &[u64]| -> usize {
        let mut d: i64 = 0;
        for ((c, a), s) in coords.iter().zip(at).zip(&out.strides) {
            d += (*c + *a) as i64 * *s;
        }
        d as usize * unit
    };
    if rank == 0 {
        let e = element(&[])?;
        copy_element(values, bits, unit, e, &mut out.bytes[..unit]);
        return Ok(());
    }
    let last = rank - 1;
    let row_len = counts[last];
    // A run of whole bytes copied at once: byte-aligned elements, step 1,
    // contiguous in the source.
    let run = bits >= 8 && ranges[last].step == 1 && src_strides[last] == 1;
    // Source elements between two of a row's (negative for a reversed layout).
    let step = ranges[last].step as i64 * src_strides[last];
    let mut coords = vec![0u64; rank];
    loop {
        // A row's elements lie on a line: its first and last are checked
        // inside the buffer, so every one between is.
        let first = element(&coords)?;
        coords[last] = row_len - 1;
        element(&coords)?;
        coords[last] = 0;
        let dst = dst_at(&coords);
        let row = &mut out.bytes[dst..dst + row_len as usize * unit];
        if run {
            let from = first as usize * unit;
            row.copy_from_slice(&values[from..from + row.len()]);
        } else {
            match (bits, unit) {
                (8.., 1) => copy_row::<1>(values, first, step, row),
                (8.., 2) => copy_row::<2>(values, first, step, row),
                (8.., 4) => copy_row::<4>(values, first, step, row),
                (8.., 8) => copy_row::<8>(values, first, step, row),
                (8.., 16) => copy_row::<16>(values, first, step, row),
                _ => {
                    for (k, d) in row.chunks_exact_mut(unit).enumerate() {
                        let e = (first as i64 + k as i64 * step) as u64;
                        copy_element(values, bits, unit, e, d);
                    }
                }
            }
        }
        // The next row: an odometer over every dimension but the last.
        let mut d = last;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            coords[d] += 1;
            if coords[d] < counts[d] {
                break;
            }
            coords[d] = 0;
        }
    }
}

/// The stored values a gather reads: the part of a tensor's values buffer
/// that starts at element `base` (a byte boundary; 0 for the whole buffer,
/// more for the window a slice read through a source fetched).
pub(crate) struct Stored<'a> {
    /// The tensor, for errors.
    pub(crate) name: &'a str,
    pub(crate) bits: u32,
    /// Element strides of the tensor's dimensions.
    pub(crate) strides: Vec<i64>,
    pub(crate) values: &'a [u8],
    pub(crate) base: u64,
}

/// The element offset `p` of a whole number of bytes at or below element
/// `first`, for elements of `bits` bits (packed sub-byte types start a byte
/// only every few elements).
pub(crate) fn byte_boundary_at_or_below(first: u64, bits: u64) -> u64 {
    let per_byte_boundary = 8 / gcd(bits, 8);
    first - first % per_byte_boundary
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// One row of `U`-byte elements, `step` elements apart in `values` from
/// element `first` (the caller checked both ends lie in `values`).
///
/// The row's span is cut from `values` once and walked with `step_by`, so
/// the loop carries no bounds check per element (indexing each element
/// checked every one).
fn copy_row<const U: usize>(values: &[u8], first: u64, step: i64, row: &mut [u8]) {
    let (elements, _) = values.as_chunks::<U>();
    let (dst, _) = row.as_chunks_mut::<U>();
    let (Some(gaps), Ok(first)) = (dst.len().checked_sub(1), usize::try_from(first)) else {
        return;
    };
    let stride = step.unsigned_abs() as usize;
    if stride == 0 {
        dst.fill(elements[first]);
        return;
    }
    let reach = gaps * stride;
    if step > 0 {
        let span = &elements[first..=first + reach];
        for (d, e) in dst.iter_mut().zip(span.iter().step_by(stride)) {
            *d = *e;
        }
    } else {
        let span = &elements[first - reach..=first];
        for (d, e) in dst.iter_mut().zip(span.iter().rev().step_by(stride)) {
            *d = *e;
        }
    }
}

fn copy_element(values: &[u8], bits: u32, unit: usize, e: u64, dst: &mut [u8]) {
    if bits < 8 {
        // `e` is below the stored element count, so the code is present.
        dst[0] = pack::code_at(values, bits, e).unwrap_or(0);
    } else {
        let from = e as usize * unit;
        dst.copy_from_slice(&values[from..from + unit]);
    }
}

/// The elements `first..=last` of the values buffer that `src[ranges]`
/// touches (strides of either sign), when they lie in the buffer of
/// `stored` elements; `None` for an empty slice or one that leaves the
/// buffer (the gather over the whole buffer then names the problem).
pub(crate) fn element_span(
    strides: &[i64],
    ranges: &[SliceRange],
    stored: u64,
) -> Option<(u64, u64)> {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (r, s) in ranges.iter().zip(strides) {
        let n = r.len();
        if n == 0 {
            return None;
        }
        let a = i128::from(r.start) * i128::from(*s);
        let b = (i128::from(r.start) + i128::from(n - 1) * i128::from(r.step)) * i128::from(*s);
        lo += a.min(b);
        hi += a.max(b);
    }
    let (lo, hi) = (u64::try_from(lo).ok()?, u64::try_from(hi).ok()?);
    (hi < stored).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::copy_row;

    fn row_of<const U: usize>(values: &[u8], first: u64, step: i64, n: usize) -> Vec<u8> {
        let mut row = vec![0u8; n * U];
        copy_row::<U>(values, first, step, &mut row);
        row
    }

    #[test]
    fn a_row_is_copied_forwards_backwards_and_broadcast() {
        let values: Vec<u8> = (0..32).collect();
        // Every third 2-byte element from element 1: elements 1, 4, 7.
        assert_eq!(row_of::<2>(&values, 1, 3, 3), [2, 3, 8, 9, 14, 15]);
        // Backwards from element 7 by two: 7, 5, 3.
        assert_eq!(row_of::<2>(&values, 7, -2, 3), [14, 15, 10, 11, 6, 7]);
        // A stride of zero repeats one element.
        assert_eq!(row_of::<4>(&values, 2, 0, 3), [8, 9, 10, 11].repeat(3));
        // The last element of the buffer is in reach; an empty row copies nothing.
        assert_eq!(
            row_of::<8>(&values, 0, 3, 2),
            [&values[..8], &values[24..]].concat()
        );
        assert!(row_of::<1>(&values, 31, 1, 0).is_empty());
    }

    /// A broadcast tensor (stride 0) of 2^32 × 2^6 f32 stores 4 bytes; a
    /// slice of it would be 1 TiB. It is refused by the expansion limit
    /// before anything is allocated (a fuzz input found the allocation).
    #[test]
    fn a_broadcast_slice_past_the_expansion_limit_is_refused() {
        use crate::{
            ElementType, Error, File, Layout, TensorDescriptor, Writer, shape, slice::SliceRange,
        };
        let mut bytes = Vec::new();
        let mut w = Writer::new(&mut bytes).unwrap();
        let d = TensorDescriptor::new("b", ElementType::Float32, shape(&[1 << 32, 64]))
            .with_layout(Layout::Strided(vec![0, 0]));
        w.add_tensor(&d, &[&1.0f32.to_le_bytes()]).unwrap();
        w.finish().unwrap();
        let file = File::from_bytes(&bytes).unwrap();
        let t = file.tensor("b").unwrap();
        let all = [SliceRange::new(0, 1 << 32, 1), SliceRange::new(0, 64, 1)];
        assert!(matches!(t.read_slice(&all), Err(Error::Expansion { .. })));
        // Within the limit it reads: 16 rows, every value the one stored.
        let some = [SliceRange::new(0, 16, 1), SliceRange::new(0, 64, 1)];
        let s = t.read_slice(&some).unwrap();
        assert_eq!(s.bytes.len(), 16 * 64 * 4);
        assert!(s.bytes.chunks_exact(4).all(|c| c == 1.0f32.to_le_bytes()));
    }
}
