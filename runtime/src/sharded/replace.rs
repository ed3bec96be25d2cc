//! Replacing a checkpoint without ever losing it.
//!
//! A sharded checkpoint is many files, and no file system renames many
//! files at once. So the index is the one commit point: a save writes its
//! members under names the index it replaces does not list (the preferred
//! name where it is free, else the first free alternate `model-00001.1.hurray`,
//! `.2`, ...), renames its index over the old one, and only then removes the
//! members the old index listed and the new one does not. A save that fails
//! or is killed at any moment therefore leaves the old index over its
//! untouched members, or the new index over its complete ones
//! (ADR-0010, "Replacing a checkpoint").

use super::store::CheckpointStore;
use crate::shard_index::{self as index, ShardMember};
use std::collections::BTreeSet;

/// What a save at an index path replaces.
#[derive(Debug)]
pub(super) enum Replaced {
    /// Nothing, or a Hurray file of tensors (replaced whole by the rename).
    Nothing,
    /// A checkpoint: the member paths its index lists.
    Checkpoint(BTreeSet<String>),
    /// A file that could not be read: what it lists is unknown, so every
    /// file already on disk counts as listed and nothing is removed.
    Unreadable,
}

impl Replaced {
    /// What the file `index` of `store` is.
    pub(super) fn at(store: &dyn CheckpointStore, index: &str) -> Replaced {
        let file = match store.open(index) {
            Ok(Some(file)) => file,
            Ok(None) => return Replaced::Nothing,
            Err(_) => return Replaced::Unreadable,
        };
        let Some(wire) = file.reader().header().shard_index() else {
            return Replaced::Nothing;
        };
        match index::from_wire(wire, file.reader().header().digest_algorithm()) {
            Ok(index) => Replaced::Checkpoint(index.members.into_iter().map(|m| m.path).collect()),
            Err(_) => Replaced::Unreadable,
        }
    }

    /// Whether writing `path` of `store` could damage the checkpoint
    /// being replaced.
    fn lists(&self, store: &dyn CheckpointStore, path: &str) -> bool {
        match self {
            Replaced::Nothing => false,
            Replaced::Checkpoint(paths) => paths.contains(path),
            Replaced::Unreadable => store.exists(path),
        }
    }

    /// Where a member the save wants at `preferred` goes: `preferred` when
    /// the replaced checkpoint does not list it and `used` (this save's own
    /// members) does not hold it, else its first such alternate.
    pub(super) fn member_path(
        &self,
        store: &dyn CheckpointStore,
        preferred: &str,
        used: impl Fn(&str) -> bool,
    ) -> String {
        let free = |p: &str| !self.lists(store, p) && !used(p);
        if free(preferred) {
            return preferred.to_owned();
        }
        // Each alternate is distinct and the taken names are finitely many,
        // so this ends.
        (1u64..)
            .map(|n| alternate(preferred, n))
            .find(|p| free(p))
            .unwrap_or_default()
    }

    /// After the new index is in place: removes the members the replaced
    /// index listed that `kept` (the new index's) does not. A member that
    /// cannot be removed stays as an unlisted file: the checkpoint is
    /// already whole, so that is not an error.
    pub(super) fn remove_unlisted(&self, store: &dyn CheckpointStore, kept: &[ShardMember]) {
        let Replaced::Checkpoint(paths) = self else {
            return;
        };
        let kept: BTreeSet<&str> = kept.iter().map(|m| m.path.as_str()).collect();
        for path in paths.iter().filter(|p| !kept.contains(p.as_str())) {
            store.remove(path);
        }
    }
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
    use std::path::PathBuf;

    #[test]
    fn alternates_keep_the_directory_and_extension() {
        assert_eq!(alternate("model-00001.hurray", 1), "model-00001.1.hurray");
        assert_eq!(alternate("r/rank-0.hurray", 2), "r/rank-0.2.hurray");
        assert_eq!(alternate("a.b/part", 1), "a.b/part.1");
        assert_eq!(alternate(".hidden", 1), ".hidden.1");
    }

    #[test]
    fn a_listed_or_used_name_gets_the_first_free_alternate() {
        let dir = &LocalStore {
            dir: PathBuf::from("/nonexistent"),
        };
        let listed = Replaced::Checkpoint(
            ["m.hurray", "m.1.hurray"]
                .into_iter()
                .map(String::from)
                .collect(),
        );
        assert_eq!(listed.member_path(dir, "n.hurray", |_| false), "n.hurray");
        assert_eq!(listed.member_path(dir, "m.hurray", |_| false), "m.2.hurray");
        assert_eq!(
            listed.member_path(dir, "m.hurray", |p| p == "m.2.hurray"),
            "m.3.hurray"
        );
        assert_eq!(
            Replaced::Nothing.member_path(dir, "m.hurray", |_| false),
            "m.hurray"
        );
    }

    #[test]
    fn an_unreadable_index_keeps_every_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.hurray"), b"x").unwrap();
        let store = LocalStore {
            dir: dir.path().to_owned(),
        };
        let path = Replaced::Unreadable.member_path(&store, "m.hurray", |_| false);
        assert_eq!(path, "m.1.hurray");
    }
}
