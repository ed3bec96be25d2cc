//! An output whose tensors each go at an offset fixed before the first is
//! written (an IRPA archive's storage, a `.ptd` file's segments), with
//! zeros between them: the sink of both formats, which differ only in the
//! head they write first.

use super::{Entry, Feed};
use anyhow::{Context, Result};
use hurray::atomic::AtomicFile;
use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::Path;

pub(super) struct Placed {
    file: AtomicFile,
    out: BufWriter<std::fs::File>,
    /// Each tensor's offset in the file, in the order they arrive.
    places: std::vec::IntoIter<u64>,
    /// Where the writer is.
    at: u64,
    /// Where the file ends, if past the last tensor (padding).
    end: Option<u64>,
}

impl Placed {
    /// Starts `path` (atomically) with `head`, its parts in order; the
    /// tensors will go at `places`, and the file is padded with zeros to
    /// `end`, if given.
    pub(super) fn create(
        path: &Path,
        head: &[&[u8]],
        places: Vec<u64>,
        end: Option<u64>,
    ) -> Result<Self> {
        let (file, mut out) = super::atomic_output(path)?;
        let mut at = 0;
        for part in head {
            out.write_all(part)?;
            at += part.len() as u64;
        }
        Ok(Placed {
            file,
            out,
            places: places.into_iter(),
            at,
            end,
        })
    }

    /// Writes zeros up to `to`.
    fn pad_to(&mut self, to: u64) -> Result<()> {
        let n = to.checked_sub(self.at).context("data out of order")?;
        self.out.write_all(&vec![0; n as usize])?;
        self.at = to;
        Ok(())
    }
}

impl super::Sink for Placed {
    /// Writes `e` at its place.
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        _quantization: &[Cow<'_, [u8]>],
    ) -> Result<()> {
        let place = self.places.next().context("more tensors than places")?;
        self.pad_to(place)?;
        super::write_exact(e, &mut self.out, feed)?;
        self.at += e.canonical_len()?;
        Ok(())
    }

    /// Pads the file with zeros to its end, if given, and moves it into
    /// place.
    fn finish(mut self: Box<Self>) -> Result<()> {
        if let Some(end) = self.end {
            self.pad_to(end)?;
        }
        let Placed { file, out, .. } = *self;
        super::commit(file, out)
    }
}
