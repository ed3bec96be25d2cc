//! Positioned reads from wherever a file's bytes live: the one storage
//! layer under [`File`](crate::File).
//!
//! A [`Source`] answers two questions: the two ends of the object (what
//! opening needs, in one round trip) and a batch of positioned reads (what
//! reading tensors needs, coalesced and concurrent as the back end likes).
//! The back ends: a local file's memory map (inside [`File`](crate::File),
//! the one back end whose bytes are also addressable in place, so views
//! borrow them), [`PreadSource`] (`pread` on a local file, on several
//! threads), [`MemorySource`] (bytes in memory), and object stores (S3,
//! GCS, Azure, HTTP) in the `hurray-object-store` crate, so that this crate
//! stays free of an async runtime.

use std::ops::Range;

mod plan;
mod pread;

pub use plan::{Coalesced, coalesce};
pub(crate) use pread::in_runs;
pub use pread::{PIECE, PreadSource, default_threads};

/// How many bytes from the end opening a file through a [`Source`] reads
/// with the footer, hoping the header is among them (a header of 1000
/// tensors is about 150 KiB): for an object store, the prefix and this
/// suffix are two range GETs in one round trip.
pub const OPEN_SUFFIX: u64 = 256 << 10;

/// Reads at most this far apart are fetched by one request, the gap read
/// and dropped: a request to an object store costs about as much time as
/// reading a megabyte (what Arrow's `object_store` coalesces by, too).
pub const COALESCE_GAP: u64 = 1 << 20;

/// Positioned reads from one object (a file, a blob, a URL).
pub trait Source: Send + Sync + std::fmt::Debug {
    /// Where the bytes are, for messages: a path or a URL.
    fn location(&self) -> &str;

    /// The object's length, its first `prefix` bytes and its last `suffix`
    /// bytes (fewer of either when the object is shorter), fetched together:
    /// opening a file needs exactly these.
    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends>;

    /// Fills every request's buffer with the object's bytes at its offset.
    /// Back ends may coalesce neighbours and run reads concurrently; a read
    /// past the end is [`std::io::ErrorKind::UnexpectedEof`].
    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()>;

    /// The object's length now, which may differ from what opening saw if
    /// another process changed it since: asked only to explain a read that
    /// ended early.
    fn current_len(&self) -> std::io::Result<u64> {
        self.read_ends(0, 0).map(|ends| ends.len)
    }
}

/// The two ends of an object and its length ([`Source::read_ends`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ends {
    /// The object's length in bytes.
    pub len: u64,
    /// Its first bytes.
    pub prefix: Vec<u8>,
    /// Its last bytes: they start at `len - suffix.len()`.
    pub suffix: Vec<u8>,
}

impl Ends {
    /// The bytes of `range` when the suffix holds them all.
    pub fn suffix_range(&self, range: Range<u64>) -> Option<&[u8]> {
        let start = self.len.checked_sub(self.suffix.len() as u64)?;
        let from = usize::try_from(range.start.checked_sub(start)?).ok()?;
        let to = usize::try_from(range.end.checked_sub(start)?).ok()?;
        self.suffix.get(from..to)
    }
}

/// One positioned read: `buf.len()` bytes at `offset`.
#[derive(Debug)]
pub struct ReadRequest<'b> {
    pub offset: u64,
    pub buf: &'b mut [u8],
}

impl ReadRequest<'_> {
    /// The object's bytes this request covers.
    pub fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.buf.len() as u64
    }
}

/// Bytes in memory as a source (tests, and files already fetched whole).
#[derive(Debug, Clone)]
pub struct MemorySource {
    bytes: Vec<u8>,
    location: String,
}

impl MemorySource {
    /// `bytes`, called `location` in messages.
    pub fn new(bytes: Vec<u8>, location: impl Into<String>) -> Self {
        MemorySource {
            bytes,
            location: location.into(),
        }
    }
}

impl Source for MemorySource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends> {
        Ok(ends_of(&self.bytes, prefix, suffix))
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        copy_many(&self.bytes, requests)
    }
}

/// [`Source::read_ends`] of bytes in memory.
pub(crate) fn ends_of(bytes: &[u8], prefix: u64, suffix: u64) -> Ends {
    let len = bytes.len();
    let head = prefix.min(len as u64) as usize;
    let tail = suffix.min(len as u64) as usize;
    Ends {
        len: len as u64,
        prefix: bytes[..head].to_vec(),
        suffix: bytes[len - tail..].to_vec(),
    }
}

/// [`Source::read_many`] of bytes in memory: copies.
pub(crate) fn copy_many(bytes: &[u8], requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
    requests.iter_mut().try_for_each(|r| {
        let start = usize::try_from(r.offset).unwrap_or(usize::MAX);
        let src = start
            .checked_add(r.buf.len())
            .and_then(|end| bytes.get(start..end))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        r.buf.copy_from_slice(src);
        Ok(())
    })
}
