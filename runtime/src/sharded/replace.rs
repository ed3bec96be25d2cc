//! Replacing a checkpoint without ever losing it, and without two saves
//! ever mixing.
//!
//! A sharded checkpoint is many files, and no file system renames many
//! files at once. So the index is the one commit point, and three rules
//! keep every reader's view whole (ADR-0010, "Replacing a checkpoint" and
//! "Two saves at once"):
//!
//! - **A save writes only names it claimed.** A member's name is claimed
//!   exclusively before anything is written there (a marker beside it
//!   created with `O_EXCL`, a conditional put of a placeholder): the
//!   preferred name where nothing is at it, else the first free alternate
//!   (`model-00001.1.hurray`, `.2`, ...).
//!   So no save writes over a member that an index lists, or over another
//!   save's member, whatever runs at the same time.
//! - **The index is swapped knowing what it replaces.** The store puts the
//!   new index in place and hands back the one it replaced, read in the
//!   same step (under a lock in a directory, by a conditional put in an
//!   object store): of two saves at once, the later swap replaces the
//!   earlier one's index and knows it.
//! - **Only what the replaced index listed is removed**, once the new index
//!   is in place, and only by the save that replaced it; a save that fails
//!   removes what it claimed.
//!
//! Two saves at once therefore end as the later one's checkpoint, whole,
//! with the earlier one's members removed by the later one; each member's
//! identity in the index ([`FileId`](crate::sharded::FileId)) refuses a
//! member of another save at a listed path even so.

use super::store::CheckpointStore;
use crate::error::{Error, Result};
use crate::limits::MAX_MEMBER_NAME_ALTERNATES;
use crate::reader::File;
use crate::shard_index::{self as index, ShardMember};
use std::collections::BTreeSet;

/// Claims a name for a member the save wants at `preferred`: `preferred`,
/// or its first alternate, that `used` (this save's own names) does not
/// hold and that the store lets this save claim (nothing is there).
pub(super) fn claim_member_path(
    store: &dyn CheckpointStore,
    preferred: &str,
    used: impl Fn(&str) -> bool,
) -> Result<String> {
    let candidates = std::iter::once(preferred.to_owned())
        .chain((1..=MAX_MEMBER_NAME_ALTERNATES).map(|n| alternate(preferred, n)));
    for path in candidates {
        if !used(&path) && store.claim(&path)? {
            return Ok(path);
        }
    }
    Err(Error::InvalidField {
        tensor: String::new(),
        field: "member path".into(),
        value: format!("{preferred:?}"),
        reason: format!(
            "it and its {MAX_MEMBER_NAME_ALTERNATES} alternates are all taken: \
             remove the files no index lists"
        ),
    })
}

/// After the new index is in place: removes the members that `replaced`
/// (the index the swap took out of place) listed and `kept` (the new
/// index's) does not. A replaced file that is not an index, or that cannot
/// be read, lists nothing to remove; a member that cannot be removed stays
/// as a file no index lists: the checkpoint is already whole, so that is
/// not an error.
pub(super) fn remove_replaced(
    store: &dyn CheckpointStore,
    replaced: Option<&File>,
    kept: &[ShardMember],
) {
    let Some(listed) = replaced.and_then(members_of) else {
        return;
    };
    let kept: BTreeSet<&str> = kept.iter().map(|m| m.path.as_str()).collect();
    for path in listed.iter().filter(|p| !kept.contains(p.as_str())) {
        store.remove(path);
    }
}

/// The member paths the index `file` lists; `None` for a file that is not
/// a readable index.
fn members_of(file: &File) -> Option<Vec<String>> {
    let header = file.reader().header();
    let wire = header.shard_index()?;
    let index = index::from_wire(wire, header.digest_algorithm()).ok()?;
    Some(index.members.into_iter().map(|m| m.path).collect())
}

/// `preferred` with `.n` before its file name's extension
/// (`rank-0.hurray` -> `rank-0.1.hurray`), or after a name without one.
fn alternate(preferred: &str, n: u64) -> String {
    let name_start = preferred.rfind('/').map_or(0, |i| i + 1);
    match preferred[name_start..].rfind('.') {
        Some(dot) if dot > 0 => {
            let (stem, ext) = preferred.split_at(name_start + dot);
            format!("{stem}.{n}{ext}")
        }
        _ => format!("{preferred}.{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::LocalStore;
    use super::*;

    #[test]
    fn alternates_keep_the_directory_and_extension() {
        assert_eq!(alternate("model-00001.hurray", 1), "model-00001.1.hurray");
        assert_eq!(alternate("r/rank-0.hurray", 2), "r/rank-0.2.hurray");
        assert_eq!(alternate("a.b/part", 1), "a.b/part.1");
        assert_eq!(alternate(".hidden", 1), ".hidden.1");
    }

    #[test]
    fn a_taken_or_used_name_gets_the_first_free_alternate() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore {
            dir: dir.path().to_owned(),
        };
        std::fs::write(dir.path().join("m.hurray"), b"x").unwrap();
        std::fs::write(dir.path().join("m.1.hurray"), b"x").unwrap();
        let claim = |p: &str, used: &dyn Fn(&str) -> bool| {
            claim_member_path(&store, p, |q| used(q)).unwrap()
        };
        assert_eq!(claim("n.hurray", &|_| false), "n.hurray");
        assert_eq!(claim("m.hurray", &|_| false), "m.2.hurray");
        // Claimed: the next claim of the same name takes the next alternate.
        assert_eq!(claim("m.hurray", &|_| false), "m.3.hurray");
        assert_eq!(claim("m.hurray", &|p| p == "m.4.hurray"), "m.5.hurray");
        // Nothing that was there was written over, and nothing is at a
        // claimed name until its member is written.
        assert_eq!(std::fs::read(dir.path().join("m.hurray")).unwrap(), b"x");
        assert!(!dir.path().join("m.2.hurray").exists());
        // Given up with nothing written, the name is free again; given up
        // with its member in place, the member keeps it taken.
        store.release("m.2.hurray");
        std::fs::write(dir.path().join("m.3.hurray"), b"member").unwrap();
        store.release("m.3.hurray");
        assert_eq!(claim("m.hurray", &|_| false), "m.2.hurray");
        assert_eq!(claim("m.hurray", &|_| false), "m.4.hurray");
    }
}
