//! The primitives of the generated structural verifier
//! (`gen/verifier.rs`, emitted by `cargo xtask codegen` from the schema).
//!
//! The generated code walks the header table by table, field by field, in
//! the order the generic FlatBuffers verifier (`flatbuffers::Verifier`)
//! does, and asks this module for every check. Each check here is the
//! generic verifier's own rule: the same alignment (`align_of` of the
//! field's Rust type, relative to the buffer start), the same bounds, the
//! same string rules (UTF-8, then the null terminator), the same table and
//! depth limits and the same "apparent size" sum. So the two accept exactly
//! the same headers, which `fuzz/fuzz_targets/verifier.rs` and
//! `runtime/tests/verifier.rs` check against the generic verifier, kept as
//! the reference.
//!
//! What differs is cost, not rules:
//! - each bounds check hands back the bytes it proved ([`Cursor::bytes`],
//!   [`Cursor::array`]), so a value is read from them and no read checks
//!   again; a table's vtable is such a slice, whose length is the test of
//!   whether a field's slot is in it;
//! - a check that the structure already proves (a field slot inside a
//!   vtable that passed its range check, an element offset inside a vector
//!   that passed its own) is not repeated, only counted in the apparent size;
//! - the apparent size only grows, so it is compared with its limit at each
//!   table, each string (before its bytes are read), at the first failure
//!   and at the end, not after every step: a failure found after the sum
//!   passed its limit is reported as the limit, as the generic verifier,
//!   which checks at every step, would have reported it, and the walk never
//!   does more than a table's fields of work past the limit;
//! - failures carry their [`Structural`] kind only. The caller, on the cold
//!   path, runs the generic verifier for the full error with its trace.
//!
//! The one unsafe operation, turning a verified position into a typed
//! table, is [`Cursor::view`]; its proof is a [`Verified`] token that only
//! [`Cursor::done`] makes.

use crate::format::read_u64;
use flatbuffers::{InvalidFlatbuffer, VerifierOptions};

/// How a header failed the structural checks: the variant of
/// [`InvalidFlatbuffer`] the generic verifier reports, without its details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structural {
    MissingRequiredField,
    InconsistentUnion,
    Utf8Error,
    MissingNullTerminator,
    Unaligned,
    RangeOutOfBounds,
    SignedOffsetOutOfBounds,
    TooManyTables,
    ApparentSizeTooLarge,
    DepthLimitReached,
}

impl Structural {
    /// The kind of a generic verifier's error.
    pub fn of(e: &InvalidFlatbuffer) -> Structural {
        match e {
            InvalidFlatbuffer::MissingRequiredField { .. } => Structural::MissingRequiredField,
            InvalidFlatbuffer::InconsistentUnion { .. } => Structural::InconsistentUnion,
            InvalidFlatbuffer::Utf8Error { .. } => Structural::Utf8Error,
            InvalidFlatbuffer::MissingNullTerminator { .. } => Structural::MissingNullTerminator,
            InvalidFlatbuffer::Unaligned { .. } => Structural::Unaligned,
            InvalidFlatbuffer::RangeOutOfBounds { .. } => Structural::RangeOutOfBounds,
            InvalidFlatbuffer::SignedOffsetOutOfBounds { .. } => {
                Structural::SignedOffsetOutOfBounds
            }
            InvalidFlatbuffer::TooManyTables => Structural::TooManyTables,
            InvalidFlatbuffer::ApparentSizeTooLarge => Structural::ApparentSizeTooLarge,
            InvalidFlatbuffer::DepthLimitReached => Structural::DepthLimitReached,
        }
    }
}

/// The result of one structural step.
pub(crate) type Step<T> = Result<T, Structural>;

/// A table whose vtable passed its checks.
#[derive(Clone, Copy)]
pub(crate) struct TableAt<'a> {
    pos: usize,
    /// The vtable's bytes, its two sizes included: a field's slot is
    /// inside them or the field is absent.
    vtable: &'a [u8],
}

/// A vector whose length and elements passed their checks.
#[derive(Clone, Copy)]
pub(crate) struct VectorAt<'a> {
    /// Its length field; the elements follow it.
    pos: usize,
    /// How many elements there are.
    pub(crate) len: usize,
    /// The elements' bytes.
    bytes: &'a [u8],
}

impl VectorAt<'_> {
    /// Its first element's position.
    #[inline(always)]
    fn start(&self) -> usize {
        self.pos + 4
    }
}

/// Proof that the `T` (a table, or a vector of tables) at `pos` and
/// everything under it passed every structural check: made only by
/// [`Cursor::done`] and [`Cursor::done_vector`], and it opens only a `T`.
pub(crate) struct Verified<T> {
    pos: usize,
    _type: std::marker::PhantomData<fn() -> T>,
}

/// The verifier's position-independent state over one header buffer.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    apparent: usize,
    max_apparent: usize,
    tables: usize,
    max_tables: usize,
    max_depth: usize,
    /// The generic verifier's option to accept strings without their NUL.
    ignore_missing_null_terminator: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf` with the generic verifier's limits `opts`.
    pub(crate) fn new(buf: &'a [u8], opts: &VerifierOptions) -> Self {
        Cursor {
            buf,
            apparent: 0,
            max_apparent: opts.max_apparent_size,
            tables: 0,
            max_tables: opts.max_tables,
            max_depth: opts.max_depth,
            ignore_missing_null_terminator: opts.ignore_missing_null_terminator,
        }
    }

    /// A failure of kind `kind`, or the apparent-size limit if the sum had
    /// already passed it (the generic verifier would have stopped there).
    #[inline(always)]
    fn fail<T>(&self, kind: Structural) -> Step<T> {
        Err(failure(self.apparent, self.max_apparent, kind))
    }

    /// The final apparent-size check, after the whole walk.
    pub(crate) fn finish(&self) -> Step<()> {
        if self.apparent > self.max_apparent {
            return Err(Structural::ApparentSizeTooLarge);
        }
        Ok(())
    }

    #[inline(always)]
    fn aligned(&self, pos: usize, align: usize) -> Step<()> {
        if !pos.is_multiple_of(align) {
            return self.fail(Structural::Unaligned);
        }
        Ok(())
    }

    /// The `size` bytes at `pos`, if they lie in the buffer; they count in
    /// the apparent size. Every read of the walk goes through here or
    /// [`Cursor::array`]: the check that proves a read in bounds is the one
    /// that gives its bytes, so no read checks again.
    #[inline(always)]
    fn bytes(&mut self, pos: usize, size: usize) -> Step<&'a [u8]> {
        // `pos + size > len` without overflow.
        let Some(bytes) = self.buf.get(pos..).and_then(|rest| rest.get(..size)) else {
            return self.fail(Structural::RangeOutOfBounds);
        };
        // No overflow: the sum is checked against its limit (at most twice
        // the buffer, or 64 KiB) at every table and string, and between
        // two checks grows by at most a table's fields of at most `len`.
        self.apparent += size;
        Ok(bytes)
    }

    /// [`Cursor::bytes`] of a size known at compile time.
    #[inline(always)]
    fn array<const N: usize>(&mut self, pos: usize) -> Step<&'a [u8; N]> {
        // One comparison against a bound the walk computes once, where
        // `pos + N <= len` took two (`pos` may be any value).
        let in_buffer = self
            .buf
            .len()
            .checked_sub(N)
            .is_some_and(|last| pos <= last);
        let Some(bytes) = in_buffer
            .then(|| self.buf.get(pos..pos + N))
            .flatten()
            .and_then(|b| b.first_chunk::<N>())
        else {
            return self.fail(Structural::RangeOutOfBounds);
        };
        self.apparent += N;
        Ok(bytes)
    }

    /// The apparent-size limit, checked where the walk is about to do work
    /// in proportion to what it visits (a table, a string's bytes): so the
    /// walk stops near where the generic verifier, which checks after every
    /// step, would, and a header that reuses one string or table many times
    /// costs no more than the limit allows.
    #[inline(always)]
    fn within_apparent_limit(&self) -> Step<()> {
        if self.apparent > self.max_apparent {
            return Err(Structural::ApparentSizeTooLarge);
        }
        Ok(())
    }

    /// The value of type `T` at `pos`: aligned to `align` (the generic
    /// verifier's `align_of` of the field's Rust type) and in the buffer.
    #[inline(always)]
    pub(crate) fn scalar<T: FromLe>(&mut self, pos: usize, align: usize) -> Step<T> {
        self.aligned(pos, align)?;
        Ok(T::from_le(self.bytes(pos, T::SIZE)?))
    }

    /// The `u32` at `pos`, aligned and in the buffer.
    #[inline(always)]
    fn u32_at(&mut self, pos: usize) -> Step<u32> {
        self.aligned(pos, 4)?;
        Ok(u32::from_le_bytes(*self.array::<4>(pos)?))
    }

    /// Follows the unsigned offset at `pos` (a field or vector element).
    #[inline(always)]
    pub(crate) fn offset(&mut self, pos: usize) -> Step<usize> {
        let offset = self.u32_at(pos)?;
        Ok(follow(pos, offset))
    }

    /// Follows element `i` of a vector of offsets that passed
    /// [`Cursor::vector`]: aligned and in range by that check, so only
    /// counted in the apparent size.
    #[inline(always)]
    pub(crate) fn element_offset(&mut self, v: &VectorAt<'a>, i: usize) -> usize {
        self.apparent += 4;
        let slot = v
            .bytes
            .get(4 * i..)
            .and_then(|rest| rest.first_chunk::<4>());
        let value = slot.map_or(0, |b| u32::from_le_bytes(*b));
        follow(v.start() + 4 * i, value)
    }

    /// The table at `pos`, `depth` tables deep: its vtable, the table count
    /// and the depth limit.
    #[inline(always)]
    pub(crate) fn table(&mut self, pos: usize, depth: usize) -> Step<TableAt<'a>> {
        self.within_apparent_limit()?;
        let soffset = self.u32_at(pos)? as i32;
        let vtable = if soffset > 0 {
            pos.checked_sub(soffset.unsigned_abs() as usize)
        } else {
            pos.checked_add(soffset.unsigned_abs() as usize)
        };
        let vtable = match vtable {
            Some(v) if v < self.buf.len() => v,
            _ => return self.fail(Structural::SignedOffsetOutOfBounds),
        };
        self.aligned(vtable, 2)?;
        let vtable_len = usize::from(u16::from_le_bytes(*self.array::<2>(vtable)?));
        self.aligned(vtable.saturating_add(vtable_len), 2)?;
        let vtable = self.bytes(vtable, vtable_len)?;
        self.tables += 1;
        if self.tables > self.max_tables {
            return self.fail(Structural::TooManyTables);
        }
        if depth > self.max_depth {
            return self.fail(Structural::DepthLimitReached);
        }
        Ok(TableAt { pos, vtable })
    }

    /// The position of the field at `voffset` of table `t`, if present.
    /// The vtable passed its range check; reading a slot inside it is
    /// only counted in the apparent size, as the generic verifier does.
    #[inline(always)]
    pub(crate) fn field(&mut self, t: &TableAt<'a>, voffset: usize) -> Option<usize> {
        // Inside the vtable exactly when `voffset < vtable_len`: both are
        // even (a voffset is 4 + 2k; the vtable's start and end passed
        // their alignment checks).
        let slot = t.vtable.get(voffset..voffset + 2)?;
        self.apparent += 2;
        match u16::from_le_bytes([slot[0], slot[1]]) {
            0 => None,
            at => Some(follow(t.pos, u32::from(at))),
        }
    }

    /// A required field that is absent.
    #[inline(always)]
    pub(crate) fn missing<T>(&self) -> Step<T> {
        self.fail(Structural::MissingRequiredField)
    }

    /// A union whose type and value are not both present or both absent.
    #[inline(always)]
    pub(crate) fn inconsistent_union<T>(&self) -> Step<T> {
        self.fail(Structural::InconsistentUnion)
    }

    /// The vector at `pos`: its length, then `len * size` bytes of
    /// elements aligned to `align`.
    #[inline(always)]
    pub(crate) fn vector(&mut self, pos: usize, size: usize, align: usize) -> Step<VectorAt<'a>> {
        let len = self.u32_at(pos)? as usize;
        // No overflow: `pos + 4` is inside the buffer.
        let start = pos + 4;
        self.aligned(start, align)?;
        let bytes = self.bytes(start, len.saturating_mul(size))?;
        Ok(VectorAt { pos, len, bytes })
    }

    /// A string at `pos`: UTF-8, then a null terminator after it.
    #[inline(always)]
    pub(crate) fn string(&mut self, pos: usize) -> Step<&'a str> {
        let v = self.vector(pos, 1, 1)?;
        self.within_apparent_limit()?;
        let Some(s) = utf8(v.bytes) else {
            return self.fail(Structural::Utf8Error);
        };
        if !self.ignore_missing_null_terminator && self.buf.get(v.start() + v.len) != Some(&0) {
            return self.fail(Structural::MissingNullTerminator);
        }
        Ok(s)
    }

    /// The elements of a vector of `T` that passed [`Cursor::vector`].
    #[inline(always)]
    pub(crate) fn elements<T: FromLe>(&self, v: &VectorAt<'a>) -> LeVector<'a, T> {
        LeVector::new(v.bytes)
    }

    /// Marks the table `t` as verified with everything under it.
    #[inline(always)]
    pub(crate) fn done<T>(&self, t: TableAt<'a>) -> Verified<T> {
        Verified {
            pos: t.pos,
            _type: std::marker::PhantomData,
        }
    }

    /// Marks the vector at `pos` (its length field) as verified with every
    /// element: called by the generated code after the vector's range and
    /// each element passed.
    #[inline(always)]
    pub(crate) fn done_vector<T>(&self, v: &VectorAt<'a>) -> Verified<T> {
        Verified {
            pos: v.pos,
            _type: std::marker::PhantomData,
        }
    }

    /// The typed table (or vector of tables) a [`Verified`] token proves.
    #[inline(always)]
    pub(crate) fn view<T: flatbuffers::Follow<'a>>(&self, proof: &Verified<T>) -> T::Inner {
        // SAFETY: verified by the generated verifier (`gen/verifier.rs`):
        // `proof` comes from `Cursor::done` (`done_vector`), which the
        // generated code calls for a table (vector) of type `T` only after
        // every field (element) of it, and every table, vector and string
        // under it, passed the checks above, the generic verifier's own.
        // `T`'s accessors then read only what those checks covered, as
        // after `flatbuffers::root`.
        unsafe { <T as flatbuffers::Follow<'a>>::follow(self.buf, proof.pos) }
    }
}

/// The position `offset` bytes past `pos`, as the generic verifier's
/// saturating sum: computed in 64 bits, where it cannot overflow, so on a
/// 64-bit target it is one addition (`pos` is inside a buffer, whose length
/// is below `isize::MAX`).
#[inline(always)]
fn follow(pos: usize, offset: u32) -> usize {
    usize::try_from(pos as u64 + u64::from(offset)).unwrap_or(usize::MAX)
}

/// [`Cursor::fail`]'s verdict, out of line and given the sums by value: a
/// cursor passed by reference to a call, even one never made, would have
/// to live in memory, and every count the walk keeps would be a store.
#[cold]
#[inline(never)]
fn failure(apparent: usize, max_apparent: usize, kind: Structural) -> Structural {
    if apparent > max_apparent {
        Structural::ApparentSizeTooLarge
    } else {
        kind
    }
}

/// `bytes` as a `str` if they are UTF-8. Names are ASCII: checked eight
/// bytes at a time here, the standard check for anything else.
#[inline(always)]
fn utf8(bytes: &[u8]) -> Option<&str> {
    let n = bytes.len();
    let mut high = 0u64;
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            high |= read_u64(bytes, at);
            at += 8;
        }
        // The last eight bytes, overlapping the word before if need be.
        high |= read_u64(bytes, n - 8);
    } else {
        for &b in bytes {
            high |= u64::from(b);
        }
    }
    if high & 0x8080_8080_8080_8080 == 0 {
        // SAFETY: no byte has its high bit set: every byte is ASCII, and
        // ASCII is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// A value stored little-endian in a FlatBuffer: a scalar, or a struct
/// (the generated code implements it for the schema's structs).
pub(crate) trait FromLe: Copy {
    /// Its size in bytes.
    const SIZE: usize;
    /// The value of its `SIZE` bytes `b`.
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! from_le {
    ($($t:ty),*) => {$(
        impl FromLe for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
from_le!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

impl FromLe for bool {
    const SIZE: usize = 1;
    #[inline(always)]
    fn from_le(b: &[u8]) -> Self {
        b[0] != 0
    }
}

/// A verified vector of little-endian values, read in place without
/// `unsafe`: what the generated fields hold for vectors of scalars and
/// structs.
#[derive(Clone, Copy)]
pub(crate) struct LeVector<'a, T> {
    bytes: &'a [u8],
    _element: std::marker::PhantomData<T>,
}

impl<'a, T: FromLe> LeVector<'a, T> {
    /// The vector whose elements are `bytes` (a multiple of `T::SIZE`).
    #[inline(always)]
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        LeVector {
            bytes,
            _element: std::marker::PhantomData,
        }
    }

    /// Number of elements.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / T::SIZE
    }

    /// Element `i`; panics past the end, as slice indexing does.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> T {
        T::from_le(&self.bytes[i * T::SIZE..(i + 1) * T::SIZE])
    }

    /// Every element, in order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = T> + 'a
    where
        T: 'a,
    {
        self.bytes.chunks_exact(T::SIZE).map(T::from_le)
    }
}

impl<T: FromLe> crate::validate::Seq<T> for LeVector<'_, T> {
    #[inline(always)]
    fn len(&self) -> usize {
        LeVector::len(self)
    }
    #[inline(always)]
    fn at(&self, i: usize) -> T {
        self.get(i)
    }
}

/// The position of field `voffset` of the root table of `buf`, read with
/// bounds checks and no trust: `None` where any step falls outside `buf` or
/// the field is absent. The fused pass reads the header's scalars that
/// every tensor's checks need (the file's alignment, its checksum
/// algorithm) this way before the walk reaches them; once the walk passed,
/// the caller compares them with what the verified header says.
pub(crate) fn peek_root_field(buf: &[u8], voffset: usize) -> Option<usize> {
    let u32_at = |pos: usize| -> Option<u32> {
        let b = buf.get(pos..pos.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u16_at = |pos: usize| -> Option<usize> {
        let b = buf.get(pos..pos.checked_add(2)?)?;
        Some(usize::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let table = usize::try_from(u32_at(0)?).ok()?;
    let soffset = u32_at(table)? as i32;
    let vtable = if soffset > 0 {
        table.checked_sub(soffset.unsigned_abs() as usize)?
    } else {
        table.checked_add(soffset.unsigned_abs() as usize)?
    };
    if voffset >= u16_at(vtable)? {
        return None;
    }
    match u16_at(vtable.checked_add(voffset)?)? {
        0 => None,
        at => table.checked_add(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_agrees_with_the_standard_check() {
        let cases: [&[u8]; 9] = [
            b"",
            b"a",
            b"model.layers.1234.weight",
            "é".as_bytes(),
            "model.layers.é.weight.0123456789".as_bytes(),
            b"\xff",
            b"abcdefgh\x80",
            b"abcdefg\xc3",
            b"\xe2\x82",
        ];
        for c in cases {
            assert_eq!(utf8(c), std::str::from_utf8(c).ok(), "{c:?}");
        }
        for b in 0..=255u8 {
            for n in [1, 7, 8, 9, 17] {
                let v = vec![b; n];
                assert_eq!(utf8(&v), std::str::from_utf8(&v).ok());
            }
        }
        // A byte with its high bit at every position of every length up to
        // five words: the words, and the overlapping last one, see it.
        for n in 1..40 {
            for at in 0..n {
                for high in [0x80u8, 0xC3, 0xFF] {
                    let mut v = vec![b'a'; n];
                    v[at] = high;
                    assert_eq!(utf8(&v), std::str::from_utf8(&v).ok(), "{v:?}");
                }
            }
        }
    }
}
