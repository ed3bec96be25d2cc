//! Atomic file creation: the one way anything in the workspace writes a
//! file to a user's path.
//!
//! Bytes go to a temporary file in the destination's directory (so the final
//! rename never crosses a file system); [`AtomicFile::commit`] fsyncs it,
//! renames it over the destination and fsyncs the directory, so after a
//! crash the destination is either the old file or the whole new one.
//! [`Durability::RenameOnly`] skips the two fsyncs: readers still never see
//! a partial file, but a power loss may leave one.
//! A durable file's bytes go around the page cache where the file system
//! allows it ([`OutputFile`], `atomic/output.rs` says why).
//! Dropping an uncommitted `AtomicFile` removes the temporary file. The
//! finished file has the mode any newly created file gets (0666 less the
//! umask, as `touch` gives), not the 0600 of a private temporary file.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

mod output;

pub use output::OutputFile;

/// What [`AtomicFile::commit`] guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync the file before the rename and the directory after it: after
    /// any crash, power loss included, the destination is the old file or
    /// the whole new one. The bytes go around the page cache where the file
    /// system allows it ([`OutputFile`]): the file is not in memory after.
    #[default]
    Synced,
    /// Rename only: every reader sees the old file or the whole new one,
    /// and a crash of the writing process leaves no partial file, but after
    /// a power loss the new file may be incomplete (the guarantee of
    /// safetensors' writer). Saves the time of flushing the file to the disk
    /// (docs/performance.md).
    RenameOnly,
}

/// Why a commit failed ([`AtomicFile`]'s, a sharded checkpoint's
/// `NewFile::commit`), and whether the file is in place nonetheless (only
/// making it durable failed): a writer of many files must then not undo
/// what refers to it.
#[derive(Debug)]
pub struct CommitFailed {
    /// What failed.
    pub error: Error,
    /// The file is at its path all the same.
    pub in_place: bool,
}

/// A file being written to a temporary path, renamed into place on commit.
#[derive(Debug)]
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
    durability: Durability,
    /// Where this file's own `Write` puts the bytes.
    out: OutputFile,
}

impl AtomicFile {
    /// Starts writing `dest`. Nothing appears at `dest` until
    /// [`commit`](Self::commit), which makes it durable ([`Durability::Synced`]).
    pub fn create(dest: impl AsRef<Path>) -> Result<Self> {
        AtomicFile::create_with(dest, Durability::Synced)
    }

    /// Starts writing `dest`, committed as `durability` says.
    pub fn create_with(dest: impl AsRef<Path>, durability: Durability) -> Result<Self> {
        let dest = dest.as_ref().to_owned();
        let dir = parent_dir(&dest);
        let mut builder = tempfile::Builder::new();
        builder.prefix(".hurray-").suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Passed to open(2), which applies the umask: the mode of any new file.
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder
            .tempfile_in(&dir)
            .map_err(|e| Error::io("creating a temporary file in", &dir, e))?;
        let out = output_to(&temp, durability)?;
        Ok(AtomicFile {
            temp,
            dest,
            durability,
            out,
        })
    }

    /// The destination path.
    pub fn destination(&self) -> &Path {
        &self.dest
    }

    /// The temporary path the bytes go to until commit.
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The temporary file.
    pub fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// A second handle to the temporary file (for a writer that owns its `File`).
    pub fn reopen(&self) -> Result<File> {
        self.temp
            .reopen()
            .map_err(|e| Error::io("reopening", self.temp.path(), e))
    }

    /// Another output to the temporary file, written as this file's own
    /// `Write` writes (around the page cache when durable), for a writer
    /// that owns its output. Its bytes are in the file once it is flushed,
    /// which [`commit`](Self::commit) does not do for it: hence not public.
    pub(crate) fn output(&self) -> Result<OutputFile> {
        output_to(&self.temp, self.durability)
    }

    /// Whether this file's bytes go around the page cache (for tests).
    #[doc(hidden)]
    pub fn is_direct(&self) -> bool {
        self.out.is_direct()
    }

    /// Makes the file durable (unless [`Durability::RenameOnly`]) and puts
    /// it in place of the destination.
    pub fn commit(self) -> Result<()> {
        self.try_commit().map_err(|failed| failed.error)
    }

    /// [`commit`](Self::commit), telling on failure whether the new file
    /// had already been renamed into place (only the directory's sync
    /// failed): a writer of many files must then not undo what refers to it.
    pub(crate) fn try_commit(self) -> std::result::Result<(), CommitFailed> {
        let AtomicFile {
            temp,
            dest,
            durability,
            mut out,
        } = self;
        let before = |error| CommitFailed {
            error,
            in_place: false,
        };
        out.flush()
            .map_err(|e| before(Error::io("writing", &dest, e)))?;
        let synced = durability == Durability::Synced;
        if synced {
            temp.as_file()
                .sync_all()
                .map_err(|e| before(Error::io("syncing", temp.path(), e)))?;
        }
        let temp_path = temp.path().to_owned();
        temp.persist(&dest)
            .map_err(|e| before(Error::io("renaming", temp_path, e.error)))?;
        // Make the rename itself durable: sync the directory entry.
        #[cfg(unix)]
        if synced {
            let dir = parent_dir(&dest);
            File::open(&dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| CommitFailed {
                    error: Error::io("syncing directory", &dir, e),
                    in_place: true,
                })?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.out.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// An output to `temp`'s file, as `durability` writes it.
fn output_to(temp: &tempfile::NamedTempFile, durability: Durability) -> Result<OutputFile> {
    let file = temp
        .reopen()
        .map_err(|e| Error::io("reopening", temp.path(), e))?;
    Ok(match durability {
        Durability::Synced => OutputFile::direct(temp.path(), file),
        Durability::RenameOnly => OutputFile::buffered(file),
    })
}

/// The directory `path` is in: `.` for a bare file name.
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Whether `path` still names the file `handle` is open on (the same
/// device and inode: a file replaced by rename is another). Without inodes,
/// `true`.
pub(crate) fn same_file(handle: &std::fs::File, path: &Path) -> Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let held = handle
            .metadata()
            .map_err(|e| Error::io("reading metadata of", path, e))?;
        match std::fs::metadata(path) {
            Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("reading metadata of", path, e)),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (handle, path);
        Ok(true)
    }
}

/// The hidden file beside `path` that stands for it: `.NAME.SUFFIX` in its
/// directory (a sharded checkpoint's claim markers and index lock).
pub(crate) fn hidden_beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    parent_dir(path).join(format!(".{name}.{suffix}"))
}
