//! Positioned reads from wherever a file's bytes live: the storage layer
//! under [`RangedFile`](crate::RangedFile).
//!
//! A [`Source`] answers two questions: the two ends of the object (what
//! opening needs, in one round trip) and a batch of positioned reads (what
//! reading tensors needs, coalesced and concurrent as the back end likes).
//! Two back ends live here: [`PreadSource`] (`pread` on a local file, on
//! several threads) and, for tests and bytes already in memory,
//! [`MemorySource`]. Object stores (S3, GCS, Azure, HTTP) are a third, in
//! the `hurray-object-store` crate, so that this crate stays free of an
//! async runtime. The memory map stays [`File`](crate::File)'s: it is the
//! one back end that needs no copy.

use crate::error::{Error, Result};
use std::ops::Range;
use std::path::Path;

mod plan;

pub use plan::{Coalesced, coalesce};

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

/// `pread` on a local file: owned, aligned memory instead of a map, so a
/// file truncated under the reader is an error rather than a fault, and a
/// network file system is read at its bandwidth rather than page by page.
#[derive(Debug)]
pub struct PreadSource {
    file: std::fs::File,
    location: String,
    threads: usize,
}

impl PreadSource {
    /// Opens `path` for positioned reads; a batch is read on up to
    /// [`crate::load::default_threads`] threads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
            return Err(Error::io("opening", path, e));
        }
        Ok(PreadSource {
            file,
            location: path.display().to_string(),
            threads: crate::load::default_threads(),
        })
    }
}

impl Source for PreadSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends> {
        let len = self.file.metadata()?.len();
        let mut head = vec![0; prefix.min(len) as usize];
        let mut tail = vec![0; suffix.min(len) as usize];
        crate::load::pread(&self.file, &mut head, 0)?;
        let tail_at = len - tail.len() as u64;
        crate::load::pread(&self.file, &mut tail, tail_at)?;
        Ok(Ends {
            len,
            prefix: head,
            suffix: tail,
        })
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        let pieces = requests
            .iter_mut()
            .flat_map(|r| {
                let offset = r.offset;
                r.buf
                    .chunks_mut(crate::load::PIECE)
                    .scan(offset, |at, buf| {
                        let piece = ReadRequest { offset: *at, buf };
                        *at += piece.buf.len() as u64;
                        Some(piece)
                    })
            })
            .collect();
        crate::load::on_threads(pieces, self.threads, |p| {
            crate::load::pread(&self.file, p.buf, p.offset)
        })
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

    fn read(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.bytes.get(start..end))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl Source for MemorySource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends> {
        let len = self.bytes.len();
        let head = prefix.min(len as u64) as usize;
        let tail = suffix.min(len as u64) as usize;
        Ok(Ends {
            len: len as u64,
            prefix: self.bytes[..head].to_vec(),
            suffix: self.bytes[len - tail..].to_vec(),
        })
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        requests
            .iter_mut()
            .try_for_each(|r| self.read(r.offset, r.buf))
    }
}
