//! The two passes that run [`Checks`]: the reference one after the generic
//! FlatBuffers verifier, and the one fused into the generated verifier.

use super::super::Reader;
use super::super::names::NameTable;
use super::{Checks, check_file};
use crate::error::{Error, Result};
use crate::generated::fb;
use crate::generated::verifier::{HeaderFields, TensorFields};

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
            fb::ChecksumAlgorithm(header.checksum_algorithm),
            tensors.map_or(0, |t| t.len()),
            false,
        );
        for t in tensors.iter().flatten() {
            checks.tensor(&TensorFields::of(t))?;
        }
        checks.finish(&header)
    }
}

/// The semantic checks as hooks of the generated verifier: each tensor is
/// checked as soon as it passed the structural checks. The first failure is
/// kept and the structural walk goes on, so that a structural failure
/// anywhere still wins, as in the reference path (structure first).
pub(in crate::reader) struct Fused<'a> {
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
