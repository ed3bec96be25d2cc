//! Where a sharded checkpoint's files go: a directory here
//! ([`LocalStore`]), an object store in `hurray-object-store`.
//!
//! [`ShardedWriter`](super::ShardedWriter) keeps its promises (the
//! checkpoint it replaces stays whole until the new index is in place; two
//! saves at once never mix) through this interface alone: it writes only
//! names it claimed ([`CheckpointStore::claim`]), every file it writes
//! appears whole or not at all ([`NewFile::commit`]), the index is swapped
//! knowing what it replaced ([`CheckpointStore::replace_index`]), and it
//! removes only what it claimed or what that replaced index listed. A store
//! needs no rename and no listing, so an object store, where a multipart
//! upload appears whole on completion and a put can be conditional, is one
//! as much as a directory is.

use super::lock::IndexLock;
use crate::atomic::{AtomicFile, CommitFailed, Durability, hidden_beside};
use crate::checksum::{ChecksumAlgorithm, Running};
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::reader::File;
use std::fmt::Debug;
use std::io::{IoSlice, Write};
use std::path::PathBuf;

/// The files of one sharded checkpoint, by paths relative to its index's
/// folder (`/`-separated, checked by the writer before any reaches here).
pub trait CheckpointStore: Debug + Send + Sync {
    /// Where `path` is, as messages name it (a file path, a URL).
    fn location(&self, path: &str) -> PathBuf;

    /// Claims `path` for this save, if nothing is there and no other save
    /// claimed it, in a step no other process can come between: until
    /// [`release`](Self::release), no other save's claim of `path` succeeds.
    /// `Ok(false)` when something is there or claimed.
    fn claim(&self, path: &str) -> Result<bool>;

    /// Gives up the claim of `path`, once the file there is in place (then
    /// the file itself keeps other saves away) or removed. A store whose
    /// claim is a placeholder at `path` itself has nothing to do.
    fn release(&self, path: &str);

    /// Starts the file `path` (claimed). Nothing appears at `path` until
    /// [`NewFile::commit`] puts the file there (a store may keep a
    /// placeholder there meanwhile); dropped uncommitted, it leaves nothing
    /// behind (a process killed meanwhile may leave a temporary file or an
    /// unfinished upload).
    fn create(&self, path: &str, durability: Durability) -> Result<Box<dyn NewFile>>;

    /// Puts the index `bytes` at `index`, whole, in place of whatever is
    /// there, and returns what was there, read in the same step: no other
    /// save's index can be put in place between the read and the swap, so
    /// the file returned is exactly the one this swap replaced (`None`
    /// when there was none, or none that could be opened).
    fn replace_index(
        &self,
        index: &str,
        bytes: &[u8],
        durability: Durability,
    ) -> std::result::Result<Option<File>, CommitFailed>;

    /// Opens the Hurray file at `path` (its header verified); `Ok(None)`
    /// when there is nothing there.
    fn open(&self, path: &str) -> Result<Option<File>>;

    /// Removes `path` as well as it can: one left behind is a file no index
    /// lists, never an error.
    fn remove(&self, path: &str);
}

/// A file being written to a [`CheckpointStore`].
pub trait NewFile: Write + Send + Debug {
    /// Puts the file in place, whole.
    fn commit(self: Box<Self>) -> std::result::Result<(), CommitFailed>;
}

/// A checkpoint in a local directory: each file written to a temporary
/// file beside it and renamed into place ([`AtomicFile`]).
#[derive(Debug)]
pub(crate) struct LocalStore {
    pub(crate) dir: PathBuf,
}

impl CheckpointStore for LocalStore {
    fn location(&self, path: &str) -> PathBuf {
        self.dir.join(path)
    }

    fn create(&self, path: &str, durability: Durability) -> Result<Box<dyn NewFile>> {
        Ok(Box::new(AtomicFile::create_with(
            self.dir.join(path),
            durability,
        )?))
    }

    fn open(&self, path: &str) -> Result<Option<File>> {
        match File::open(self.dir.join(path)) {
            Ok(file) => Ok(Some(file)),
            Err(Error::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// A claim is a marker beside the name (`.NAME.claim`), created with
    /// `O_EXCL`, not a placeholder at the name itself: renaming a member
    /// over a file there would make ext4 start writing the member out at
    /// once (`auto_da_alloc`), which costs a save that does not sync as
    /// much as syncing (docs/performance.md). The name must be free too,
    /// checked while the marker is held: every save writes a name only
    /// while it holds the name's marker.
    fn claim(&self, path: &str) -> Result<bool> {
        let at = self.dir.join(path);
        let marker = hidden_beside(&at, "claim");
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(Error::io("claiming", marker, e)),
        }
        // Not `exists()`: a dangling symlink is something at `path` too.
        if at.symlink_metadata().is_ok() {
            let _ = std::fs::remove_file(&marker);
            return Ok(false);
        }
        Ok(true)
    }

    fn release(&self, path: &str) {
        let _ = std::fs::remove_file(hidden_beside(&self.dir.join(path), "claim"));
    }

    fn replace_index(
        &self,
        index: &str,
        bytes: &[u8],
        durability: Durability,
    ) -> std::result::Result<Option<File>, CommitFailed> {
        let dest = self.dir.join(index);
        let before = |error| CommitFailed {
            error,
            in_place: false,
        };
        let mut file = AtomicFile::create_with(&dest, durability).map_err(before)?;
        file.write_all(bytes)
            .map_err(|e| before(Error::io("writing", &dest, e)))?;
        // Between reading what is at `dest` and renaming over it, no other
        // save may rename its index there: it would be replaced unseen,
        // and its members never removed.
        let _lock = IndexLock::acquire(&dest).map_err(before)?;
        // Mapped before the rename, it stays readable after it. One that
        // is not a Hurray file lists no members.
        let replaced = File::open(&dest).ok();
        file.try_commit()?;
        Ok(replaced)
    }

    fn remove(&self, path: &str) {
        let _ = std::fs::remove_file(self.dir.join(path));
    }
}

impl NewFile for AtomicFile {
    fn commit(self: Box<Self>) -> std::result::Result<(), CommitFailed> {
        (*self).try_commit()
    }
}

/// What the writer of a member reports of it, for
/// [`ShardedWriter::adopt_written_member`](super::ShardedWriter::adopt_written_member):
/// what the index records of every member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenMember {
    /// Its length in bytes.
    pub size: u64,
    /// The CRC-32C of all of its bytes.
    pub crc32c: u64,
    /// The identity its writer gave it (format 1.5), when it gave one: a
    /// member at its path with another is not this writer's (another save
    /// wrote there since), and is refused.
    pub file_id: Option<FileId>,
}

/// A `Write` that passes every byte on to `W` and computes their CRC-32C
/// as they go: how a member's writer learns, without reading it back, what
/// the index records of it.
#[derive(Debug)]
pub struct Crc32cWriter<W> {
    inner: W,
    crc: Running,
    len: u64,
}

impl<W: Write> Crc32cWriter<W> {
    /// Writes to `inner`.
    pub fn new(inner: W) -> Self {
        Crc32cWriter {
            inner,
            crc: Running::new(ChecksumAlgorithm::Crc32c),
            len: 0,
        }
    }

    /// `W`, and the length and CRC-32C of what was written to it (its
    /// identity is the caller's to add: this writer does not see it).
    pub fn finish(self) -> (W, WrittenMember) {
        let written = WrittenMember {
            size: self.len,
            crc32c: self.crc.finish(),
            file_id: None,
        };
        (self.inner, written)
    }

    fn took(&mut self, bufs: &[IoSlice<'_>], mut n: usize) {
        self.len += n as u64;
        for b in bufs {
            if n == 0 {
                break;
            }
            let part = &b[..b.len().min(n)];
            self.crc.update(part);
            n -= part.len();
        }
    }
}

impl<W: Write> Write for Crc32cWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.took(&[IoSlice::new(buf)], n);
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let n = self.inner.write_vectored(bufs)?;
        self.took(bufs, n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running CRC covers exactly the bytes the inner writer took,
    /// however it took them (short, vectored writes).
    #[test]
    fn the_crc_covers_what_the_inner_writer_took() {
        #[derive(Debug, Default)]
        struct Short(Vec<u8>);
        impl Write for Short {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let n = buf.len().min(3);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = Crc32cWriter::new(Short::default());
        w.write_all(b"hello, ").unwrap();
        let (a, b) = (b"sharded ".as_slice(), b"world".as_slice());
        let mut bufs = [IoSlice::new(a), IoSlice::new(b)];
        let mut slices = &mut bufs[..];
        while !slices.is_empty() {
            let n = w.write_vectored(slices).unwrap();
            IoSlice::advance_slices(&mut slices, n);
        }
        let (inner, written) = w.finish();
        assert_eq!(inner.0, b"hello, sharded world");
        assert_eq!(written.size, 20);
        assert_eq!(
            written.crc32c,
            ChecksumAlgorithm::Crc32c.of(b"hello, sharded world")
        );
    }
}
