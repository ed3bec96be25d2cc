//! `pread` on a local file, on several threads: the source under a memory
//! map's owned reads and under [`PreadSource`].

use super::{Ends, ReadRequest, Source};
use crate::error::{Error, Result};
use std::path::Path;

/// The most bytes one positioned read asks for: a large buffer is cut into
/// pieces of this size, so that several threads share it.
pub const PIECE: usize = 8 << 20;

/// `pread` on a local file: owned, aligned memory instead of a map, so a
/// file truncated under the reader is an error rather than a fault, and a
/// network file system is read at its bandwidth rather than page by page.
#[derive(Debug)]
pub struct PreadSource {
    file: std::fs::File,
    location: String,
    /// `None`: [`default_threads`], asked when a batch is read (not when
    /// a mapped file is opened).
    threads: Option<usize>,
}

impl PreadSource {
    /// Opens `path` for positioned reads; a batch is read on up to
    /// [`default_threads`] threads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
            return Err(Error::io("opening", path, e));
        }
        Ok(PreadSource::from_open(file, path))
    }

    /// Positioned reads from `file`, already open (at `path`, for messages).
    pub(crate) fn from_open(file: std::fs::File, path: &Path) -> Self {
        PreadSource {
            file,
            location: path.display().to_string(),
            threads: None,
        }
    }

    /// This source reading a batch on `threads` threads (at least 1).
    pub fn with_threads(self, threads: usize) -> Self {
        PreadSource {
            threads: Some(threads.max(1)),
            ..self
        }
    }

    /// The threads a batch is read on.
    pub(crate) fn threads(&self) -> usize {
        self.threads.unwrap_or_else(default_threads)
    }

    /// The open file.
    pub(crate) fn file(&self) -> &std::fs::File {
        &self.file
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
        pread(&self.file, &mut head, 0)?;
        let tail_at = len - tail.len() as u64;
        pread(&self.file, &mut tail, tail_at)?;
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
                r.buf.chunks_mut(PIECE).scan(offset, |at, buf| {
                    let piece = ReadRequest { offset: *at, buf };
                    *at += piece.buf.len() as u64;
                    Some(piece)
                })
            })
            .collect();
        on_threads(pieces, self.threads(), |p| {
            pread(&self.file, p.buf, p.offset)
        })
    }

    fn current_len(&self) -> std::io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// Runs `read` on every piece, sorted by offset and split into `threads`
/// contiguous runs of about equal bytes, one thread each: each thread reads
/// sequentially (the kernel's readahead works for it), and one large buffer
/// is shared among all threads. The first error wins.
fn on_threads<E: Send>(
    mut pieces: Vec<ReadRequest<'_>>,
    threads: usize,
    read: impl Fn(ReadRequest<'_>) -> std::result::Result<(), E> + Sync,
) -> std::result::Result<(), E> {
    pieces.sort_by_key(|p| p.offset);
    in_runs(pieces, |p| p.buf.len(), threads, read)
}

/// Runs `work` on every item of `items` (in order), split into `threads`
/// contiguous runs of about equal `size`, one thread each (none spawned for
/// one run). The first error wins.
pub(crate) fn in_runs<T: Send, E: Send>(
    items: Vec<T>,
    size: impl Fn(&T) -> usize,
    threads: usize,
    work: impl Fn(T) -> std::result::Result<(), E> + Sync,
) -> std::result::Result<(), E> {
    // No more threads than items (and a bound on a caller's wild count).
    let threads = threads.clamp(1, items.len().max(1));
    let total: usize = items.iter().map(&size).sum();
    let share = total.div_ceil(threads).max(1);
    let mut runs: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut current = Vec::new();
    let mut filled = 0;
    for item in items {
        filled += size(&item);
        current.push(item);
        if filled >= share * (runs.len() + 1) && runs.len() + 1 < threads {
            runs.push(std::mem::take(&mut current));
        }
    }
    runs.push(current);
    let work = &work;
    let run_one = move |run: Vec<T>| run.into_iter().try_for_each(work);
    if runs.len() == 1 {
        return run_one(runs.pop().unwrap_or_default());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|run| scope.spawn(move || run_one(run)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// The threads a batch of positioned reads uses unless told otherwise: one
/// per core, at most 8 (more only queue at the device).
pub fn default_threads() -> usize {
    // Asked once: the answer reads the cgroup's CPU quota from /sys, which
    // costs more than opening a mapped file does.
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}

/// Fills `buf` with the bytes of `f` at `offset` (`pread`, retried until
/// done); a file that ends first is [`std::io::ErrorKind::UnexpectedEof`].
#[cfg(unix)]
fn pread(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(windows)]
fn pread(f: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}
