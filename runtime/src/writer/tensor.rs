//! [`TensorWriter`]: one tensor's bytes streamed into its buffers in order,
//! each padded to its alignment and checksummed as it passes.

use super::sums::{BufferSums, Sums, SumsWanted};
use super::{PACK_PIECE, Writer, Written};
use crate::buffer::BufferRole;
use crate::descriptor::TensorDescriptor;
use crate::error::{Error, Result};
use std::io::Write;

/// The bytes of one buffer handed over at once from which its checksum is
/// computed on a thread of its own, beside the writes: below this, a
/// thread's start (tens of microseconds) costs more than the overlap saves.
/// At 8 MiB, a model of 7 MiB tensors was checksummed inline and saved at
/// 0.83 of a plain `write` of its bytes; at 1 MiB, 1.07 (ADR-0009).
const CHECKSUM_BESIDE_MIN: usize = 1 << 20;

/// Hands `bytes` to `writer` in the pieces it takes whole ([`Writer::piece`]).
fn write_in_pieces<W: Write>(writer: &mut Writer<W>, mut bytes: &[u8]) -> Result<()> {
    while !bytes.is_empty() {
        let n = writer.piece().min(bytes.len());
        writer.raw_write(&bytes[..n])?;
        bytes = &bytes[n..];
    }
    Ok(())
}

/// Streams the bytes of one tensor. Buffers are filled in order; when one is
/// complete the next one starts at its alignment. [`TensorWriter::finish`]
/// checks every byte the descriptor needs arrived.
#[derive(Debug)]
pub struct TensorWriter<'w, W: Write> {
    pub(super) writer: &'w mut Writer<W>,
    pub(super) desc: TensorDescriptor,
    pub(super) alignment: u64,
    pub(super) lengths: Vec<u64>,
    pub(super) roles: Vec<BufferRole>,
    pub(super) buffers: Vec<(u64, u64)>,
    /// Bytes still owed to the current buffer; `None` before the first byte.
    pub(super) remaining: Option<u64>,
    pub(super) wanted: SumsWanted,
    /// The checksum and digest of the current buffer so far.
    pub(super) running: Option<BufferSums>,
    /// The checksums and digests of the buffers completed so far.
    pub(super) sums: Sums,
}

impl<W: Write> TensorWriter<'_, W> {
    fn mismatch(&mut self, reason: String) -> Error {
        self.writer.poisoned = Some(format!("tensor {:?} was left incomplete", self.desc.name));
        Error::WriteMismatch {
            tensor: self.desc.name.clone(),
            reason,
        }
    }

    /// Records a zero-length buffer, and its checksum and digest (those of
    /// no bytes).
    fn push_empty(&mut self) {
        self.buffers.push((0, 0));
        if let Some(s) = self.wanted.start() {
            s.finish_into(&mut self.sums);
        }
    }

    /// Starts the next buffer: empty ones are recorded with no padding.
    fn open_next(&mut self) -> Result<()> {
        while self.buffers.len() < self.lengths.len() {
            let len = self.lengths[self.buffers.len()];
            if len == 0 {
                // ADR-007: a zero-length buffer takes no space and no alignment.
                self.push_empty();
                continue;
            }
            self.writer.pad_to(self.alignment)?;
            self.buffers.push((self.writer.pos, len));
            self.remaining = Some(len);
            self.running = self.wanted.start();
            return Ok(());
        }
        self.remaining = Some(0);
        Ok(())
    }

    /// The bytes the current buffer still takes, after opening the next
    /// buffer if the current one is full; an error past the last buffer.
    fn room(&mut self) -> Result<u64> {
        loop {
            if let Some(r) = self.remaining.filter(|&r| r > 0) {
                return Ok(r);
            }
            if self.buffers.len() == self.lengths.len() {
                let total: u64 = self.lengths.iter().sum();
                let reason = format!("more than the {total} byte(s) the descriptor implies");
                return Err(self.mismatch(reason));
            }
            self.open_next()?;
        }
    }

    /// Appends `bytes` to the tensor's data.
    pub fn write_all(&mut self, mut bytes: &[u8]) -> Result<()> {
        if self.desc.descriptor_only && !bytes.is_empty() {
            let reason = "a descriptor-only tensor carries no data".to_owned();
            return Err(self.mismatch(reason));
        }
        while !bytes.is_empty() {
            let r = self.room()?;
            let mut n = (r.min(bytes.len() as u64)) as usize;
            match self.running.take() {
                Some(running) if n >= CHECKSUM_BESIDE_MIN => {
                    // Many bytes of one buffer at hand: the checksum runs on
                    // a second thread while this one writes them, so the
                    // save takes as long as the writes, not writes plus
                    // checksum (measured: docs/head-to-head.md).
                    let writer = &mut *self.writer;
                    let now = &bytes[..n];
                    let (written, running) = std::thread::scope(|scope| {
                        let checksum = scope.spawn(move || {
                            let mut running = running;
                            running.update(now);
                            running
                        });
                        let written = write_in_pieces(writer, now);
                        let running = checksum
                            .join()
                            .unwrap_or_else(|p| std::panic::resume_unwind(p));
                        (written, running)
                    });
                    self.running = Some(running);
                    written?;
                }
                Some(mut running) => {
                    // The same pass computes the checksum (ADR-0009): a
                    // piece at a time, so the checksum reads what the copy
                    // just brought into the cache instead of reading memory
                    // a second time.
                    n = n.min(self.writer.piece());
                    let written = self.writer.raw_write(&bytes[..n]);
                    running.update(&bytes[..n]);
                    self.running = Some(running);
                    written?;
                }
                None => self.writer.raw_write(&bytes[..n])?,
            }
            self.advance(n as u64);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Appends `codes` (one per byte, each in its low `bits` bits; 1 to 8)
    /// packed LSB-first as [`crate::pack`] defines, straight into
    /// the output: no packed copy is made first. The codes must end on a
    /// byte boundary unless they are the last of their buffer, and must not
    /// run past it.
    pub fn write_packed(&mut self, codes: &[u8], bits: u32) -> Result<()> {
        if bits == 8 {
            return self.write_all(codes);
        }
        if !(1..8).contains(&bits) {
            let reason = format!("{bits}-bit codes: packed widths are 1 to 8 bits");
            return Err(self.mismatch(reason));
        }
        if codes.is_empty() {
            return Ok(());
        }
        if self.desc.descriptor_only {
            let reason = "a descriptor-only tensor carries no data".to_owned();
            return Err(self.mismatch(reason));
        }
        let packed = crate::count::packed_len(codes.len() as u64, bits).unwrap_or(u64::MAX);
        let room = self.room()?;
        let role = self.roles[self.buffers.len() - 1];
        let ends_inside_a_byte = !(codes.len() as u64 * u64::from(bits)).is_multiple_of(8);
        if packed > room || (ends_inside_a_byte && packed != room) {
            let reason = format!(
                "{} {bits}-bit code(s) pack into {packed} byte(s), buffer {role} has {room} left{}",
                codes.len(),
                if packed > room {
                    ""
                } else {
                    " (codes may end inside a byte only at the end of their buffer)"
                }
            );
            return Err(self.mismatch(reason));
        }
        // Pieces of whole bytes (a multiple of 8 codes) small enough that the
        // checksum reads what the packer just wrote while it is in the cache.
        let piece = PACK_PIECE * 8 / bits as usize;
        for codes in codes.chunks(piece) {
            let out = self.writer.appender(PACK_PIECE)?;
            let start = out.len();
            let mut packer = crate::pack::Packer::new(bits);
            packer.push(codes, out);
            packer.finish(out);
            if let Some(running) = &mut self.running {
                running.update(&out[start..]);
            }
            let n = (out.len() - start) as u64;
            self.writer.pos += n;
            self.advance(n);
        }
        Ok(())
    }

    /// Counts `n` bytes written into the current buffer (which had room for
    /// them); its checksum is complete when the buffer is.
    fn advance(&mut self, n: u64) {
        let left = self.remaining.unwrap_or(0) - n;
        self.remaining = Some(left);
        if left == 0
            && let Some(running) = self.running.take()
        {
            running.finish_into(&mut self.sums);
        }
    }

    /// Completes the tensor; fails if a buffer is short.
    pub fn finish(mut self) -> Result<()> {
        if self.remaining.is_none_or(|r| r == 0) && !self.desc.descriptor_only {
            // Record trailing empty buffers (or all of them, for an empty tensor).
            while self.buffers.len() < self.lengths.len() && self.lengths[self.buffers.len()] == 0 {
                self.push_empty();
            }
        }
        let complete = self.desc.descriptor_only
            || (self.buffers.len() == self.lengths.len() && self.remaining.is_none_or(|r| r == 0));
        if !complete {
            let role = self
                .roles
                .get(self.buffers.len().saturating_sub(1))
                .copied()
                .unwrap_or(BufferRole::Values);
            let reason = format!("buffer {role} is short of bytes");
            return Err(self.mismatch(reason));
        }
        let (buffers, sums) = if self.desc.descriptor_only {
            (Vec::new(), Sums::default())
        } else {
            (
                std::mem::take(&mut self.buffers),
                std::mem::take(&mut self.sums),
            )
        };
        debug_assert!(self.wanted.checksum.is_none() || sums.checksums.len() == buffers.len());
        debug_assert!(self.wanted.digest.is_none() || sums.digests.len() == buffers.len());
        self.writer.written.push(Written {
            desc: self.desc.clone(),
            buffers,
            sums,
        });
        Ok(())
    }
}

impl<W: Write> Drop for TensorWriter<'_, W> {
    fn drop(&mut self) {
        let done = self
            .writer
            .written
            .last()
            .is_some_and(|w| w.desc.name == self.desc.name);
        if !done && self.writer.poisoned.is_none() {
            self.writer.poisoned = Some(format!(
                "tensor {:?} was dropped before finish()",
                self.desc.name
            ));
        }
    }
}
