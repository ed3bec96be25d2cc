//! The file-wide semantic checks: the file's alignment, metadata order,
//! the name index's shape and the shard index flag (format 1.3).

use crate::error::{Error, Result};
use crate::file_id::{FILE_ID_LEN, FileId};
use crate::generated::fb;
use crate::generated::verifier::HeaderFields;
use crate::{format, validate};

/// The file-wide checks: the file's alignment, its metadata, the shard
/// index flag.
pub(super) fn check_file(header: &HeaderFields<'_>, flags: u64) -> Result<()> {
    validate::file_alignment(header.alignment)?;
    check_metadata("file", header.metadata)?;
    check_file_id(header)?;
    check_shard_index_flag(header, flags)
}

/// Format 1.5: a file's identity is [`FILE_ID_LEN`] bytes.
fn check_file_id(header: &HeaderFields<'_>) -> Result<()> {
    match header.file_id {
        Some(id) if id.len() != FILE_ID_LEN => Err(FileId::wrong_length("file_id", id.len())),
        _ => Ok(()),
    }
}

/// The name index is only a hint (a miss falls back to binary search), but
/// its shape must be sound: a power-of-two length and entries that name tensors.
pub(super) fn check_name_index(header: &HeaderFields<'_>, tensors: usize) -> Result<()> {
    let Some(index) = header.name_index else {
        return Ok(());
    };
    let bad = |value: String, reason: &str| Error::InvalidField {
        tensor: String::new(),
        field: "name_index".into(),
        value,
        reason: reason.into(),
    };
    if index.len() == 0 && tensors == 0 {
        return Ok(());
    }
    if !index.len().is_power_of_two() || index.len() < tensors {
        return Err(bad(
            format!("{} slots", index.len()),
            "the length must be a power of two of at least the tensor count",
        ));
    }
    // The largest entry first (one pass, no branch per slot); which
    // slot is bad only when one is.
    if index.iter().fold(0, u32::max) as usize <= tensors {
        return Ok(());
    }
    if let Some((slot, e)) = index
        .iter()
        .enumerate()
        .find(|&(_, e)| e as usize > tensors)
    {
        return Err(bad(
            format!("slot {slot} = {e}"),
            "an entry names a tensor that does not exist",
        ));
    }
    Ok(())
}

pub(super) fn check_metadata(
    owner: &str,
    kv: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::KeyValue<'_>>>>,
) -> Result<()> {
    let Some(kv) = kv else { return Ok(()) };
    let mut previous: Option<&str> = None;
    for entry in kv.iter() {
        if let Some(p) = previous
            && p >= entry.key()
        {
            return Err(Error::MetadataNotSorted {
                owner: owner.to_owned(),
                previous: p.to_owned(),
                key: entry.key().to_owned(),
            });
        }
        previous = Some(entry.key());
    }
    Ok(())
}

/// Format 1.3: footer flag bit 1 is set exactly when the header holds a shard
/// index, and an index file holds no tensors of its own (ADR-0010). What the
/// index says is checked by `ShardedFile::open`, which is what reads it.
fn check_shard_index_flag(header: &HeaderFields<'_>, flags: u64) -> Result<()> {
    let flagged = flags & format::FLAG_SHARD_INDEX != 0;
    let bad = |value: &str, reason: &str| {
        Err(Error::InvalidField {
            tensor: String::new(),
            field: "shard_index".into(),
            value: value.into(),
            reason: reason.into(),
        })
    };
    match (header.shard_index.is_some(), flagged) {
        (true, false) => bad(
            "present",
            "an index file sets footer flag bit 1, so that a 1.2 reader refuses it",
        ),
        (false, true) => bad(
            "absent",
            "footer flag bit 1 marks an index file, which has one",
        ),
        (true, true) if header.tensors.is_some_and(|t| !t.is_empty()) => bad(
            "present",
            "an index file holds no tensors of its own; they live in its members",
        ),
        _ => Ok(()),
    }
}
