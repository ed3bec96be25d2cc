//! The bytes of a file being written: through the page cache, or around it.
//!
//! A durable file ([`Durability::Synced`](super::Durability::Synced)) must
//! reach the device before its commit returns. Written through the page
//! cache, every byte is first copied into new page-cache folios, then
//! written back by the commit's fsync: two passes, and the first allocates
//! as much memory as the file is large. Written around it (`O_DIRECT`, on
//! Linux), the bytes go from one reused, aligned window straight to the
//! device. On this project's machines a durable save of 1 GiB took 0.9 s
//! this way and 3.6-4.5 s through the page cache (docs/head-to-head.md).
//!
//! What it defers: the file is not in the page cache afterwards, so the
//! next load of it reads from the device (a cold load). A file written
//! without the fsyncs ([`Durability::RenameOnly`](super::Durability::RenameOnly))
//! still goes through the page cache, and a load right after it is warm.
//!
//! A file system that refuses direct writes (tmpfs, some network file
//! systems) gets the same bytes through the page cache: the open falls back,
//! and so does a write the file system refuses for its alignment.

use std::fs::File;
use std::io::{self, IoSlice, Seek, SeekFrom, Write};
use std::path::Path;

/// The alignment direct writes need (of the memory, the offset and the
/// length): the largest logical block size of common devices.
const ALIGN: usize = 4096;

/// The bytes one direct write hands the device (and the window's size).
const WINDOW: usize = 2 << 20;

/// A file being written, by [`Writer::create`](crate::Writer::create) and
/// [`AtomicFile`](super::AtomicFile): around the page cache when the file is
/// to be durable and the file system allows it, else through it. Every
/// byte is in the file once [`flush`](Write::flush) returns.
#[derive(Debug)]
pub struct OutputFile {
    out: Out,
}

#[derive(Debug)]
enum Out {
    /// Through the page cache, at the handle's position.
    Buffered(File),
    Direct(Direct),
}

/// Direct writes of whole windows, from memory aligned for them.
#[derive(Debug)]
struct Direct {
    /// The file opened with `O_DIRECT`.
    file: File,
    /// The same file opened without: where the bytes go if the file
    /// system refuses a direct write.
    buffered: File,
    /// `WINDOW + ALIGN` bytes (allocated at the first write), of which the
    /// window is the `WINDOW` starting at `start`, the first aligned byte.
    memory: Vec<u8>,
    start: usize,
    /// The bytes of the window that hold data.
    filled: usize,
    /// Where the window's first byte goes in the file (a multiple of
    /// `WINDOW`).
    offset: u64,
}

impl OutputFile {
    /// Writes `file` (opened for writing, at its start) through the page
    /// cache.
    pub(crate) fn buffered(file: File) -> OutputFile {
        OutputFile {
            out: Out::Buffered(file),
        }
    }

    /// Writes the empty file at `path` (also open as `file`) around the page
    /// cache where the file system allows it, else through `file`.
    pub(crate) fn direct(path: &Path, file: File) -> OutputFile {
        match open_direct(path) {
            Ok(direct) => OutputFile {
                out: Out::Direct(Direct {
                    file: direct,
                    buffered: file,
                    memory: Vec::new(),
                    start: 0,
                    filled: 0,
                    offset: 0,
                }),
            },
            Err(_) => OutputFile::buffered(file),
        }
    }

    /// Whether the bytes go around the page cache.
    pub(crate) fn is_direct(&self) -> bool {
        matches!(self.out, Out::Direct(_))
    }

    /// Continues through the page cache after a refused direct write: the
    /// window's bytes first, at their offset.
    fn fall_back(&mut self) -> io::Result<()> {
        let Out::Direct(d) = &mut self.out else {
            return Ok(());
        };
        d.buffered.seek(SeekFrom::Start(d.offset))?;
        let window = &d.memory[d.start..d.start + d.filled];
        d.buffered.write_all(window)?;
        let file = d.buffered.try_clone()?;
        self.out = Out::Buffered(file);
        Ok(())
    }
}

// Not under Miri, whose `open` knows no O_DIRECT: the page cache there.
#[cfg(all(target_os = "linux", not(miri)))]
fn open_direct(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

#[cfg(any(not(target_os = "linux"), miri))]
fn open_direct(_path: &Path) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Whether `e` is a file system refusing a direct write (rather than a
/// failing device or a full disk, which are errors either way).
fn refused(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        e.raw_os_error() == Some(libc::EINVAL)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = e;
        false
    }
}

impl Direct {
    fn window(&mut self) -> &mut [u8] {
        if self.memory.is_empty() {
            self.memory = vec![0; WINDOW + ALIGN];
            self.start = self.memory.as_ptr().align_offset(ALIGN);
        }
        &mut self.memory[self.start..self.start + WINDOW]
    }

    /// Copies what fits of `bytes` into the window; how many bytes that is.
    fn copy_in(&mut self, bytes: &[u8]) -> usize {
        let filled = self.filled;
        let n = bytes.len().min(WINDOW - filled);
        self.window()[filled..filled + n].copy_from_slice(&bytes[..n]);
        self.filled += n;
        n
    }

    /// Writes the window's first `len` bytes (a multiple of `ALIGN`) at
    /// its offset.
    fn write_window(&mut self, len: usize) -> io::Result<()> {
        let offset = self.offset;
        let window = &self.memory[self.start..self.start + len];
        write_all_at(&self.file, window, offset)
    }

    /// Writes the partly filled window, padded to `ALIGN` with zeros, and
    /// cuts the file back to its last byte. The window keeps its bytes:
    /// later writes complete it and write it again.
    fn write_tail(&mut self) -> io::Result<()> {
        if self.filled == 0 {
            return Ok(());
        }
        let (filled, padded) = (self.filled, self.filled.next_multiple_of(ALIGN));
        self.window()[filled..padded].fill(0);
        self.write_window(padded)?;
        self.buffered.set_len(self.offset + filled as u64)
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_all_at(_file: &File, _bytes: &[u8], _offset: u64) -> io::Result<()> {
    // Never reached: a direct file is opened on Linux only.
    Err(io::ErrorKind::Unsupported.into())
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let d = match &mut self.out {
            Out::Buffered(f) => return f.write(buf),
            Out::Direct(d) => d,
        };
        let n = d.copy_in(buf);
        if d.filled < WINDOW {
            return Ok(n);
        }
        match d.write_window(WINDOW) {
            Ok(()) => {
                d.offset += WINDOW as u64;
                d.filled = 0;
            }
            // The window, with the bytes just taken, goes through the page
            // cache instead.
            Err(e) if refused(&e) => self.fall_back()?,
            Err(e) => {
                // Not taken: the caller sees the error and may retry them.
                d.filled -= n;
                return Err(e);
            }
        }
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if let Out::Buffered(f) = &mut self.out {
            return f.write_vectored(bufs);
        }
        let mut total = 0;
        for b in bufs.iter().filter(|b| !b.is_empty()) {
            let n = match self.write(b) {
                Ok(n) => n,
                Err(e) if total == 0 => return Err(e),
                // What was taken is reported; the error comes again.
                Err(_) => return Ok(total),
            };
            total += n;
            if n < b.len() {
                break;
            }
        }
        Ok(total)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Out::Buffered(f) => f.flush(),
            Out::Direct(d) => match d.write_tail() {
                Err(e) if refused(&e) => {
                    self.fall_back()?;
                    self.flush()
                }
                other => other,
            },
        }
    }
}
