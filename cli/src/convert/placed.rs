//! An output whose tensors each go at an offset fixed before the first is
//! written (an IRPA archive's storage, a `.ptd` file's segments), with
//! zeros between them.

use super::{Entry, Feed};
use anyhow::{Context, Result};
use hurray::atomic::AtomicFile;
use std::io::{BufWriter, Write};
use std::path::Path;

pub(super) struct Placed {
    file: AtomicFile,
    out: BufWriter<std::fs::File>,
    /// Each tensor's offset in the file, in the order they arrive.
    places: std::vec::IntoIter<u64>,
    /// Where the writer is.
    at: u64,
}

impl Placed {
    /// Starts `path` (atomically) with `head`, its parts in order; the
    /// tensors will go at `places`.
    pub(super) fn create(path: &Path, head: &[&[u8]], places: Vec<u64>) -> Result<Self> {
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
        })
    }

    /// Writes zeros up to `to`.
    fn pad_to(&mut self, to: u64) -> Result<()> {
        let n = to.checked_sub(self.at).context("data out of order")?;
        self.out.write_all(&vec![0; n as usize])?;
        self.at = to;
        Ok(())
    }

    /// Writes `e` at its place.
    pub(super) fn tensor(&mut self, e: &Entry<'_>, feed: &mut Feed<'_>) -> Result<()> {
        let place = self.places.next().context("more tensors than places")?;
        self.pad_to(place)?;
        super::write_exact(e, &mut self.out, feed)?;
        self.at += e.canonical_len()?;
        Ok(())
    }

    /// Pads the file with zeros to `end`, if given, and moves it into place.
    pub(super) fn finish(mut self, end: Option<u64>) -> Result<()> {
        if let Some(end) = end {
            self.pad_to(end)?;
        }
        super::commit(self.file, self.out)
    }
}
