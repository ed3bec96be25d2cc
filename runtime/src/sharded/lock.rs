//! [`IndexLock`]: one swap of a directory's index at a time, between
//! processes.

use crate::atomic::{hidden_beside, same_file};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// An exclusive lock on swapping the index at one path of a directory:
/// `flock` on `.NAME.lock` beside it. The kernel releases it when its
/// holder exits, killed or not, so a crash never leaves the checkpoint
/// locked; the holder removes the lock file when it is done, so a
/// directory keeps no file but the checkpoint's (one killed while it held
/// the lock leaves the file, which the next save takes and removes).
#[derive(Debug)]
pub(super) struct IndexLock {
    path: PathBuf,
    /// Locked; unlocked when dropped, after the file is removed.
    _file: File,
}

impl IndexLock {
    /// Waits for the lock on swapping `index`.
    pub(super) fn acquire(index: &Path) -> Result<IndexLock> {
        let path = hidden_beside(index, "lock");
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::io("creating the lock", &path, e))?;
            file.lock().map_err(|e| Error::io("locking", &path, e))?;
            // Its last holder may have removed the file between this open
            // and this lock: a lock on a removed file excludes nobody, so
            // start again on the file at the path now.
            if same_file(&file, &path)? {
                return Ok(IndexLock { path, _file: file });
            }
        }
    }
}

impl Drop for IndexLock {
    /// Removed while still locked: whoever opens the path next gets a new
    /// file, and whoever waits on this one sees it gone (`same_file`).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Threads hold the lock one at a time (flock locks exclude each
    /// other's open files within a process too), and no lock file is left.
    #[test]
    #[cfg_attr(miri, ignore = "Miri does not support a blocking flock")]
    fn holders_exclude_each_other_and_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("model.hurray");
        let inside = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let _lock = IndexLock::acquire(&index).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
