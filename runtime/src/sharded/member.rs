//! A member of a sharded checkpoint once opened: memory-mapped, or read by
//! ranges (an object in a bucket) one tensor at a time.

use crate::error::{Error, Result};
use crate::ranged::RangedFile;
use crate::reader::File;
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
pub(super) enum Member {
    Mapped(Arc<File>),
    Ranged(RangedMember),
}

/// A member read by ranges: each tensor is fetched the first time a piece
/// of it is read, and kept (as a file of its own) for the next.
#[derive(Debug)]
pub(super) struct RangedMember {
    file: RangedFile,
    /// Tensor names in file order (sorted), for look-ups.
    names: Vec<String>,
    /// Each tensor once fetched, by its place in `names`.
    tensors: Vec<OnceLock<Arc<File>>>,
    /// The whole member once read (for a whole export or its CRC-32C).
    whole: OnceLock<Arc<File>>,
}

impl Member {
    pub(super) fn ranged(file: RangedFile) -> Member {
        let names: Vec<String> = file.names().into_iter().map(str::to_owned).collect();
        let tensors = names.iter().map(|_| OnceLock::new()).collect();
        Member::Ranged(RangedMember {
            file,
            names,
            tensors,
            whole: OnceLock::new(),
        })
    }

    pub(super) fn is_shard_index(&self) -> bool {
        match self {
            Member::Mapped(f) => f.reader().is_shard_index(),
            Member::Ranged(r) => r.file.is_shard_index(),
        }
    }

    /// The whole member as a file: the map, or (by ranges) read whole once.
    pub(super) fn whole(&self) -> Result<&Arc<File>> {
        match self {
            Member::Mapped(f) => Ok(f),
            Member::Ranged(r) => {
                if let Some(f) = r.whole.get() {
                    return Ok(f);
                }
                let f = Arc::new(r.file.fetch_file()?);
                Ok(r.whole.get_or_init(|| f))
            }
        }
    }

    /// The file that holds tensor `name` with its data: the map, the whole
    /// member once read, or the tensor fetched (once, checked against the
    /// member's checksums) as a file of its own.
    pub(super) fn file_of(&self, name: &str) -> Result<&Arc<File>> {
        let r = match self {
            Member::Mapped(f) => return Ok(f),
            Member::Ranged(r) => r,
        };
        if let Some(f) = r.whole.get() {
            return Ok(f);
        }
        let i = r
            .names
            .binary_search_by(|n| n.as_str().cmp(name))
            .map_err(|_| Error::NotFound {
                name: name.to_owned(),
            })?;
        let cell = &r.tensors[i];
        if let Some(f) = cell.get() {
            return Ok(f);
        }
        let f = Arc::new(r.file.fetch(name)?.into_file()?);
        Ok(cell.get_or_init(|| f))
    }
}
