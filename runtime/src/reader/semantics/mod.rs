//! The semantic checks of `Reader::new`, after the FlatBuffers verifier:
//! every descriptor through [`validate::plan`], every buffer against the
//! data region, alignment and the other buffers, names, metadata and the
//! name index. Nothing here allocates in proportion to what a header claims.

use super::Reader;
use super::names::{Entry, NameTable};
use super::structure::LeVector;
use crate::buffer::BufferRole;
use crate::error::{Error, Result};
use crate::format::{self, PREFIX_LEN};
use crate::generated::fb;
use crate::generated::verifier::{HeaderFields, LayoutRef, TensorFields};
use crate::validate::{self, LayoutParams, Plan};

mod errors;
mod file;
mod overlap;

use errors::{buffer_count, checksums_error, digests_error, names_not_sorted};
use file::{check_file, check_metadata, check_name_index};

/// One buffer's byte range.
type Range = (u64, u64);
/// The position of a buffer's tensor, and the buffer's role.
type Owner = (u32, &'static str);

/// The per-tensor semantic checks of one pass over a header, and what the
/// whole-file checks need once every tensor was seen. The reference path
/// ([`Reader::check_semantics`]) and the fused one ([`Fused`], run by the
/// generated verifier table by table) share it, so both check the same
/// rules in the same order.
pub(super) struct Checks<'a> {
    data_end: u64,
    flags: u64,
    file_alignment: u64,
    /// Checksums need an algorithm (an unknown one is refused only when
    /// they are verified: reading the data does not need them).
    checksums_in_file: bool,
    /// Each buffer's digest length (format 1.4): `Some(0)` when the header
    /// names no algorithm, `None` for one this build does not know (its
    /// digests are refused when verified).
    digest_len: Option<usize>,
    previous: Option<&'a str>,
    index: usize,
    /// The fused path (its short cuts, its index of names) or the reference.
    fused: bool,
    /// The reference path: every non-empty buffer, in tensor order, and
    /// whose each is (its tensor's position and its role), to name the
    /// buffers that overlap.
    ranges: Vec<Range>,
    owners: Vec<Owner>,
    /// The fused path: each tensor's entry for the index of names, which
    /// holds its first non-empty buffer; any other non-empty buffer in
    /// `extra`. One allocation for a file of dense tensors.
    entries: Vec<Entry>,
    extra: Vec<Range>,
    /// The header the names are in (the fused path; empty on the
    /// reference path, which keeps no index of names).
    header: &'a [u8],
}

impl<'a> Checks<'a> {
    /// Checks against a file whose data region ends at `data_end`, with
    /// footer flags `flags`, the header's `alignment` and checksum algorithm.
    pub(super) fn new(
        data_end: u64,
        flags: u64,
        file_alignment: u64,
        sums: crate::checksum::Algorithms,
        tensors: usize,
        fused: bool,
    ) -> Self {
        Checks {
            data_end,
            flags,
            file_alignment,
            checksums_in_file: sums.checksum != fb::ChecksumAlgorithm::None,
            digest_len: match sums.digest {
                fb::DigestAlgorithm::None => Some(0),
                fb::DigestAlgorithm::Blake3 => Some(crate::digest::DIGEST_LEN),
                _ => None,
            },
            previous: None,
            index: 0,
            fused,
            ranges: Vec::new(),
            owners: Vec::new(),
            entries: Vec::with_capacity(if fused { tensors } else { 0 }),
            extra: Vec::new(),
            header: &[],
        }
    }

    /// The checks of the next tensor, `t`: its name (non-empty, after the
    /// previous one), alignment, buffer plan, every buffer, quantization
    /// flags, checksums and metadata.
    pub(super) fn tensor(&mut self, t: &TensorFields<'a>) -> Result<()> {
        let index = self.index;
        self.index += 1;
        let name = t.name;
        validate::tensor_name(index, name)?;
        // The fused path compares eight bytes at a time; the reference
        // uses the standard order, so the two are compared.
        if let Some(p) = self.previous
            && if self.fused {
                !before(p.as_bytes(), name.as_bytes())
            } else {
                p >= name
            }
        {
            return Err(names_not_sorted(p, name));
        }
        self.previous = Some(name);

        let alignment = validate::tensor_alignment(name, t.alignment, self.file_alignment)?;
        let descriptor_only = t.descriptor_only;
        let buffers = t.buffers;
        let quant = t.quantization.as_ref();
        // The fused path takes the plain dense tensor's short cut; the
        // reference always the general rules, so the two are compared.
        if self.fused
            && t.layout.is_none()
            && quant.is_none()
            && !descriptor_only
            && let Some(values) = validate::plain_dense_len(t.element_type, &t.shape)
        {
            return self.plain_dense(t, alignment, values);
        }
        let plan = validate::plan(
            name,
            t.element_type,
            &t.shape,
            layout_params_of(t.layout),
            descriptor_only,
            quant.map(super::quant::params),
        )?;
        let listed = buffers.map_or(0, |b| b.len());
        let layout_buffers = if descriptor_only { 0 } else { plan.roles.len() };
        if listed != layout_buffers {
            if descriptor_only {
                return Err(Error::DescriptorOnlyWithData {
                    tensor: name.to_owned(),
                    field: "buffers".into(),
                    value: listed as u64,
                });
            }
            return Err(buffer_count(name, plan.layout, layout_buffers, listed));
        }
        let data_end = self.data_end;
        let check = |role: BufferRole, expected_len: u64, b: Option<fb::Buffer>| {
            let (offset, length) = b.map_or((0, 0), |b| (b.offset(), b.length()));
            BufferCheck {
                name,
                role,
                expected_len,
                offset,
                length,
                alignment,
                data_end,
            }
            .range()
        };
        let mut first: Range = (0, 0);
        if let Some(buffers) = buffers {
            for (i, b) in buffers.iter().enumerate() {
                let range = check(plan.roles[i], plan.lengths[i], Some(b))?;
                first = self.record(first, range, index, plan.roles[i]);
            }
        }
        if let Some(q) = quant {
            // Every quantization buffer the plan lists; the offsets `Buffer`
            // also without offsets, when it must be empty.
            let roles = [
                BufferRole::Scales,
                BufferRole::ZeroPoints,
                BufferRole::Offsets,
            ]
            .into_iter()
            .chain(
                BufferRole::QUANTIZATION_1_4
                    .into_iter()
                    .filter(|r| plan.length(*r).is_some()),
            );
            for role in roles {
                let b = super::quant::buffer(q, role).copied();
                let range = check(role, plan.length(role).unwrap_or(0), b)?;
                first = self.record(first, range, index, role);
            }
            let params = super::quant::params(q);
            if let Some((field, value)) = params.composite_field()
                && self.flags & format::FLAG_COMPOSITE_QUANTIZATION == 0
            {
                return Err(errors::composite_without_flag(name, field, value));
            }
            if params.is_extended() && self.flags & format::FLAG_EXTENDED_QUANTIZATION == 0 {
                return Err(errors::extended_without_flag(name, &params));
            }
        }
        let buffer_count = if descriptor_only {
            0
        } else {
            plan.buffer_count()
        };
        check_checksums(t.checksums, name, buffer_count, self.checksums_in_file)?;
        check_digests(t.digests, name, buffer_count, self.digest_len)?;
        if t.metadata.is_some() {
            check_metadata(name, t.metadata)?;
        }
        if self.fused {
            // A dense tensor's values buffer is its first; when not empty,
            // it is `first`.
            let first_is_values = matches!(t.layout, None | Some(LayoutRef::Dense(_)))
                && buffers.is_some_and(|b| b.len() > 0 && b.get(0).length() > 0);
            self.enter(t, first, first_is_values);
        }
        Ok(())
    }

    /// The rest of [`Checks::tensor`] for a plain dense tensor whose values
    /// take `values` bytes: the general path's checks in its order, for
    /// the one buffer such a tensor has, without building its plan.
    #[inline(always)]
    fn plain_dense(&mut self, t: &TensorFields<'a>, alignment: u64, values: u64) -> Result<()> {
        let name = t.name;
        let listed = t.buffers.map_or(0, |b| b.len());
        let Some(b) = t.buffers.filter(|_| listed == 1).map(|b| b.get(0)) else {
            return Err(buffer_count(name, "dense", 1, listed));
        };
        let first = BufferCheck {
            name,
            role: BufferRole::Values,
            expected_len: values,
            offset: b.offset(),
            length: b.length(),
            alignment,
            data_end: self.data_end,
        }
        .range()?;
        check_checksums(t.checksums, name, 1, self.checksums_in_file)?;
        check_digests(t.digests, name, 1, self.digest_len)?;
        if t.metadata.is_some() {
            check_metadata(name, t.metadata)?;
        }
        self.enter(t, first, first.1 != 0);
        Ok(())
    }

    /// The fused path's entry for tensor `t`, whose first non-empty buffer
    /// is `first`, in the index of names.
    #[inline(always)]
    fn enter(&mut self, t: &TensorFields<'a>, first: Range, first_is_values: bool) {
        let name = t.name;
        self.entries.push(Entry {
            key: if super::names::hashes_for(self.header.len()) {
                super::names::hash(name.as_bytes())
            } else {
                super::names::tag(name.as_bytes())
            },
            // An address inside the header.
            name_at: (name.as_ptr() as usize).wrapping_sub(self.header.as_ptr() as usize),
            name_len: name.len() as u32,
            element_type: t.element_type,
            alignment: t.alignment,
            first,
            first_is_values,
        });
    }

    /// Records the non-empty `range` of buffer `role` of tensor `index`:
    /// every one on the reference path; on the fused path the tensor's
    /// first (`first`, which is returned, in registers) or else in `extra`.
    #[inline(always)]
    fn record(&mut self, first: Range, range: Range, index: usize, role: BufferRole) -> Range {
        if range.1 == 0 {
            return first;
        }
        if !self.fused {
            self.ranges.push(range);
            self.owners.push((index as u32, role.name()));
        } else if first.1 == 0 {
            return range;
        } else {
            self.extra.push(range);
        }
        first
    }

    /// What needs every tensor: the name index, then that no two buffers
    /// overlap. Without owners (the fused path) an overlap is only found,
    /// as [`Error::BuffersOverlap`] naming no one: the caller runs the
    /// reference path for the names.
    fn finish(self, header: &HeaderFields<'a>) -> Result<()> {
        check_name_index(header, self.index)?;
        overlap::reference(self.ranges, self.owners, header)
    }

    /// [`Checks::finish`] of the fused path, whose `entries` were taken out.
    fn finish_with(&self, header: &HeaderFields<'a>) -> Result<()> {
        check_name_index(header, self.index)?;
        if overlap::any(&self.entries, &self.extra, self.data_end) {
            return Err(Error::BuffersOverlap {
                first: String::new(),
                first_buffer: "",
                second: String::new(),
                second_buffer: "",
            });
        }
        Ok(())
    }
}

/// One buffer of tensor `name` as its header lists it (`offset`,
/// `length`), and what it must be: `expected_len` bytes, aligned to
/// `alignment`, inside the data region ending at `data_end`.
#[derive(Clone, Copy)]
struct BufferCheck<'n> {
    name: &'n str,
    role: BufferRole,
    expected_len: u64,
    offset: u64,
    length: u64,
    alignment: u64,
    data_end: u64,
}

impl BufferCheck<'_> {
    /// The buffer's checks: its length, bounds and alignment. Gives its
    /// non-empty range, or (0, 0). Inlined: returned through memory, the
    /// range was written by two stores and read back by one load, which
    /// stalls (store forwarding) on every tensor. The error is built out
    /// of line ([`BufferCheck::error`]), so the checks inline small.
    #[inline(always)]
    fn range(self) -> Result<Range> {
        let (offset, length) = (self.offset, self.length);
        if length == self.expected_len {
            if length == 0 {
                // ADR-007: a zero-length buffer has no alignment and no
                // position that matters; it is never dereferenced.
                return Ok((0, 0));
            }
            if let Some(end) = offset.checked_add(length)
                && offset >= PREFIX_LEN
                && end <= self.data_end
                && aligned(offset, self.alignment)
            {
                return Ok((offset, end));
            }
        }
        Err(self.error())
    }

    /// Which of [`BufferCheck::range`]'s checks failed, in its order.
    #[cold]
    #[inline(never)]
    fn error(&self) -> Error {
        let (tensor, buffer) = (self.name.to_owned(), self.role.name());
        if self.length != self.expected_len {
            return Error::BufferLength {
                tensor,
                buffer,
                expected: self.expected_len,
                found: self.length,
            };
        }
        let end = self.offset.checked_add(self.length);
        if self.offset < PREFIX_LEN || end.is_none_or(|e| e > self.data_end) {
            return Error::BufferOutOfBounds {
                tensor,
                buffer,
                offset: self.offset,
                length: self.length,
                start: PREFIX_LEN,
                end: self.data_end,
            };
        }
        Error::BufferMisaligned {
            tensor,
            buffer,
            offset: self.offset,
            alignment: self.alignment,
        }
    }
}

/// Whether `offset` is a multiple of `alignment`: a mask for a power of
/// two (every valid alignment), no division; `is_multiple_of` otherwise:
/// the fused pass may meet an invalid (0) file alignment here, refused
/// later by the file-wide checks.
#[inline(always)]
fn aligned(offset: u64, alignment: u64) -> bool {
    if alignment.is_power_of_two() {
        offset & (alignment - 1) == 0
    } else {
        offset.is_multiple_of(alignment)
    }
}

/// Whether `a` sorts before `b`, byte-wise (as `str`'s order): eight
/// bytes at a time, big-endian, so the first differing byte decides.
#[inline]
fn before(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        u64::from_be_bytes(w)
    };
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            let (x, y) = (word(a, i), word(b, i));
            if x != y {
                return x < y;
            }
            i += 8;
        }
        // The last eight bytes of the common length, overlapping the word
        // before (whose bytes are equal): its first difference decides.
        let (x, y) = (word(a, n - 8), word(b, n - 8));
        if x != y {
            return x < y;
        }
    } else {
        for i in 0..n {
            if a[i] != b[i] {
                return a[i] < b[i];
            }
        }
    }
    a.len() < b.len()
}

/// The layout fields of a verified tensor's `layout` union.
fn layout_params_of(layout: Option<LayoutRef<'_>>) -> LayoutParams<flatbuffers::Vector<'_, i64>> {
    match layout {
        None => LayoutParams::Dense { strides: None },
        Some(LayoutRef::Dense(d)) => LayoutParams::Dense {
            strides: d.strides(),
        },
        Some(LayoutRef::Coo(c)) => LayoutParams::Coo {
            nnz: c.nnz(),
            index_type: c.index_type().0,
        },
        Some(LayoutRef::Csr(c)) => LayoutParams::Csr {
            nnz: c.nnz(),
            index_type: c.index_type().0,
        },
        Some(LayoutRef::Csc(c)) => LayoutParams::Csc {
            nnz: c.nnz(),
            index_type: c.index_type().0,
        },
        Some(LayoutRef::Unknown(other)) => LayoutParams::Unknown(other),
    }
}

/// The layout fields of a verified tensor, read through its accessors.
pub(crate) fn layout_params<'a>(t: &fb::Tensor<'a>) -> LayoutParams<flatbuffers::Vector<'a, i64>> {
    layout_params_of(TensorFields::layout_of(*t))
}

/// A tensor's checksums, if any, are one per buffer it has (format 1.2).
#[inline(always)]
fn check_checksums(
    sums: Option<LeVector<'_, u64>>,
    name: &str,
    buffers: usize,
    in_file: bool,
) -> Result<()> {
    match sums {
        None => Ok(()),
        Some(sums) if in_file && sums.len() == buffers => Ok(()),
        Some(sums) => Err(checksums_error(name, sums.len(), buffers, in_file)),
    }
}

/// A tensor's digests, if any, are one per buffer it has, each as long as
/// the header's algorithm makes them (format 1.4).
#[inline(always)]
fn check_digests(
    digests: Option<LeVector<'_, u8>>,
    name: &str,
    buffers: usize,
    digest_len: Option<usize>,
) -> Result<()> {
    match (digests, digest_len) {
        // With a digest algorithm, a tensor with buffers has digests: a
        // header whose signature covers it then covers every tensor's data.
        (None, Some(len)) if len > 0 && buffers > 0 => Err(digests_error(name, 0, buffers, len)),
        (None, _) | (Some(_), None) => Ok(()),
        (Some(d), Some(len)) if len > 0 && d.len() == len.saturating_mul(buffers) => Ok(()),
        (Some(d), Some(len)) => Err(digests_error(name, d.len(), buffers, len)),
    }
}

pub(super) fn plan_of(t: &fb::Tensor<'_>) -> Result<Plan> {
    validate::plan(
        t.name(),
        t.element_type().0,
        &t.shape(),
        layout_params(t),
        t.descriptor_only(),
        t.quantization().as_ref().map(super::quant::params),
    )
}

/// The semantic checks as hooks of the generated verifier: each tensor is
/// checked as soon as it passed the structural checks. The first failure is
/// kept and the structural walk goes on, so that a structural failure
/// anywhere still wins, as in the reference path (structure first).
pub(super) struct Fused<'a> {
    checks: Checks<'a>,
    /// Boxed: the walk carries this state, and failures are rare.
    failure: Option<Box<Error>>,
    /// The header's fields, once the walk verified them.
    header: Option<HeaderFields<'a>>,
}

impl<'a> Fused<'a> {
    /// The fused pass over the header `header`.
    pub(in crate::reader) fn new(mut checks: Checks<'a>, header: &'a [u8]) -> Self {
        checks.header = header;
        Fused {
            checks,
            failure: None,
            header: None,
        }
    }

    /// The verified header's fields (after a walk that passed).
    pub(in crate::reader) fn header(&self) -> Option<&HeaderFields<'a>> {
        self.header.as_ref()
    }

    /// After the structural walk passed: the checks in the reference's
    /// order (file-wide, the first tensor that failed, the name index,
    /// overlaps). Gives the index of names.
    pub(in crate::reader) fn finish(
        &mut self,
        header: &HeaderFields<'a>,
        flags: u64,
    ) -> Result<NameTable> {
        check_file(header, flags)?;
        if let Some(e) = self.failure.take() {
            return Err(*e);
        }
        self.checks.finish_with(header)?;
        let entries = std::mem::take(&mut self.checks.entries);
        let bytes = self.checks.header;
        Ok(NameTable::build(
            entries,
            bytes,
            crate::reader::names::hashes_for(bytes.len()),
        ))
    }
}

impl<'a> crate::generated::verifier::Visit<'a> for Fused<'a> {
    #[inline(always)]
    fn header(&mut self, h: &HeaderFields<'a>) {
        self.header = Some(*h);
    }

    #[inline(always)]
    fn tensor(&mut self, t: &TensorFields<'a>) {
        if self.failure.is_none()
            && let Err(e) = self.checks.tensor(t)
        {
            self.failure = Some(Box::new(e));
        }
    }
}

/// The reference pass runs [`Checks`] after the generic FlatBuffers
/// verifier. (The fused pass, [`Fused`], lives beside `Checks` too: the
/// generated verifier's walk calls into it for every tensor, and keeping
/// the two together keeps that call inlined.)
impl Reader<'_> {
    /// The reference semantic pass, after the generic FlatBuffers verifier:
    /// the file-wide checks, every tensor in order, the name index, overlaps.
    pub(in crate::reader) fn check_semantics(&self, data_end: u64, flags: u64) -> Result<()> {
        let header = HeaderFields::of(self.header);
        check_file(&header, flags)?;
        let tensors = header.tensors;
        let mut checks = Checks::new(
            data_end,
            flags,
            header.alignment,
            crate::checksum::Algorithms {
                checksum: fb::ChecksumAlgorithm(header.checksum_algorithm),
                digest: fb::DigestAlgorithm(header.digest_algorithm),
            },
            tensors.map_or(0, |t| t.len()),
            false,
        );
        for t in tensors.iter().flatten() {
            checks.tensor(&TensorFields::of(t))?;
        }
        checks.finish(&header)
    }
}

#[cfg(test)]
mod tests;
