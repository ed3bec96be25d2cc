//! Reading tensors through a file's [`Source`] into owned memory: the one
//! read path under [`File::fetch`](super::File::fetch) and the tensors a
//! file read through a source keeps once read.

use super::tensor::{FetchedBuffer, TensorRef};
use crate::aligned::AlignedBytes;
use crate::error::{Error, Result};
use crate::source::{ReadRequest, Source};
use std::sync::OnceLock;

/// Each tensor's buffers once read, by the tensor's place in the file.
pub(super) type ReadCells = Box<[OnceLock<Box<[FetchedBuffer]>>]>;

/// A tensor read into memory of its own ([`File::fetch`](super::File::fetch)):
/// each of its buffers in 64-byte aligned memory, so that memory is the
/// tensor's bytes however the file lays its buffers out.
pub struct Fetched<'f> {
    /// The tensor with the header alone.
    header: TensorRef<'f>,
    buffers: Vec<FetchedBuffer>,
}

impl std::fmt::Debug for Fetched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("tensor", &self.header)
            .field("bytes", &self.byte_len())
            .finish()
    }
}

impl<'f> Fetched<'f> {
    pub(super) fn new(header: TensorRef<'f>, buffers: Vec<FetchedBuffer>) -> Self {
        Fetched { header, buffers }
    }

    /// The tensor, with its data: every view, slice, checksum and export.
    pub fn tensor(&self) -> TensorRef<'_> {
        self.header.with_fetched(&self.buffers)
    }

    /// The bytes read: the tensor's buffers.
    pub fn byte_len(&self) -> usize {
        self.buffers.iter().map(|b| b.bytes.as_slice().len()).sum()
    }
}

/// Reads the non-empty buffers of every tensor of `tensors` (verified
/// headers: every range lies inside the file as opened) through `source`
/// in one batch. Memory is what the verified ranges say, no more than the
/// file's length at open. An object that ended early is
/// [`Error::Truncated`] ([`read_error`]).
pub(super) fn fetch_into(
    source: &dyn Source,
    tensors: &[TensorRef<'_>],
) -> Result<Vec<Vec<FetchedBuffer>>> {
    let mut all = Vec::with_capacity(tensors.len());
    // (tensor, buffer role name, end) of each buffer, to name a truncation.
    let mut ends = Vec::new();
    for t in tensors {
        let mut buffers = Vec::new();
        if !t.is_descriptor_only() {
            for role in t.roles() {
                let Some((offset, length)) = t.buffer_range(role) else {
                    continue;
                };
                if length == 0 {
                    continue;
                }
                let bytes = AlignedBytes::for_buffer(length, t.name(), role.name())?;
                buffers.push(FetchedBuffer { offset, bytes });
                ends.push((t.name(), role.name(), offset + length));
            }
        }
        all.push(buffers);
    }
    let mut requests: Vec<ReadRequest<'_>> = all
        .iter_mut()
        .flatten()
        .map(|b| ReadRequest {
            offset: b.offset,
            buf: b.bytes.as_mut_slice(),
        })
        .collect();
    if requests.is_empty() {
        return Ok(all);
    }
    source
        .read_many(&mut requests)
        .map_err(|e| read_error(source, e, &ends))?;
    Ok(all)
}

/// Reads `length` bytes at `offset` (inside buffer `buffer` of `tensor`, as
/// a verified header places it) through `source` into aligned memory.
pub(super) fn fetch_range(
    source: &dyn Source,
    tensor: &str,
    buffer: &'static str,
    offset: u64,
    length: u64,
) -> Result<AlignedBytes> {
    let mut bytes = AlignedBytes::for_buffer(length, tensor, buffer)?;
    if length > 0 {
        let mut request = [ReadRequest {
            offset,
            buf: bytes.as_mut_slice(),
        }];
        source
            .read_many(&mut request)
            .map_err(|e| read_error(source, e, &[(tensor, buffer, offset + length)]))?;
    }
    Ok(bytes)
}

/// The error of a batch of reads of the buffers `ends` (tensor, buffer,
/// end): an object that ended early (truncated since it was opened) is
/// [`Error::Truncated`] naming the first buffer past its end now.
fn read_error(source: &dyn Source, e: std::io::Error, ends: &[(&str, &'static str, u64)]) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        let now = source.current_len().unwrap_or(0);
        if let Some(&(tensor, buffer, end)) = ends.iter().find(|(_, _, end)| *end > now) {
            return Error::Truncated {
                tensor: tensor.to_owned(),
                buffer,
                end,
                file_len: now,
            };
        }
    }
    Error::io("reading", source.location(), e)
}
