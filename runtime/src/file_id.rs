//! A file's identity (format 1.5): 16 random bytes drawn when the file is
//! written. A sharded checkpoint's index records each member's, so that a
//! member another save put at the same path is refused when it is opened,
//! before any of its values is read, even where no digest or checksum is
//! checked (ADR-0010, "Two saves at once").

use crate::error::{Error, Result};
use std::fmt;

/// The length of a [`FileId`] in bytes.
pub const FILE_ID_LEN: usize = 16;

/// The identity of one written file: drawn from the operating system's
/// random source, so two files (two saves, two ranks) never share one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub [u8; FILE_ID_LEN]);

impl FileId {
    /// A new identity, from the operating system's random source.
    pub fn random() -> Result<FileId> {
        let mut bytes = [0u8; FILE_ID_LEN];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::io(
                "drawing a file identifier from",
                "the system's random source",
                std::io::Error::other(e.to_string()),
            )
        })?;
        Ok(FileId(bytes))
    }

    /// The identity held in `bytes`, or `None` when they are not
    /// [`FILE_ID_LEN`] long.
    pub fn from_slice(bytes: &[u8]) -> Option<FileId> {
        bytes.try_into().ok().map(FileId)
    }

    /// The identity in the header field `field` (`file_id`, an index's
    /// `shard_index.members[i].file_id`): [`Error::InvalidField`] naming it
    /// when `bytes` are not [`FILE_ID_LEN`] long.
    pub(crate) fn from_field(field: impl Into<String>, bytes: &[u8]) -> Result<FileId> {
        FileId::from_slice(bytes).ok_or_else(|| FileId::wrong_length(field, bytes.len()))
    }

    /// [`Error::InvalidField`] on the header field `field`, an identity of
    /// `len` bytes.
    pub(crate) fn wrong_length(field: impl Into<String>, len: usize) -> Error {
        Error::InvalidField {
            tensor: String::new(),
            field: field.into(),
            value: format!("{len} byte(s)"),
            reason: format!("a file identifier is {FILE_ID_LEN} bytes"),
        }
    }

    /// `MemberMismatch` on `file_id`: the member at `member` holds `found`
    /// where `expected` was recorded, so it is `what` (another file).
    pub(crate) fn mismatch(
        member: &str,
        expected: FileId,
        found: Option<FileId>,
        what: &str,
    ) -> Error {
        Error::MemberMismatch {
            member: member.to_owned(),
            field: "file_id",
            expected: expected.to_string(),
            found: match found {
                Some(id) => format!("{id}: {what}"),
                None => format!("absent: {what}"),
            },
        }
    }
}

impl std::str::FromStr for FileId {
    type Err = Error;

    /// The identity [`Display`](fmt::Display) prints: 32 hex digits.
    fn from_str(hex: &str) -> Result<FileId> {
        let bytes: Option<Vec<u8>> = (hex.len() == 2 * FILE_ID_LEN)
            .then(|| {
                (0..hex.len())
                    .step_by(2)
                    .map(|i| {
                        hex.get(i..i + 2)
                            .and_then(|b| u8::from_str_radix(b, 16).ok())
                    })
                    .collect()
            })
            .flatten();
        bytes
            .as_deref()
            .and_then(FileId::from_slice)
            .ok_or_else(|| Error::InvalidField {
                tensor: String::new(),
                field: "file_id".into(),
                value: format!("{hex:?}"),
                reason: format!("a file identifier is {} hex digits", 2 * FILE_ID_LEN),
            })
    }
}

impl fmt::Display for FileId {
    /// Lowercase hex, as messages and `inspect --json` show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_draws_differ_and_print_as_hex() {
        let (a, b) = (FileId::random().unwrap(), FileId::random().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.to_string().len(), 2 * FILE_ID_LEN);
        assert_eq!(FileId([0xab; 16]).to_string(), "ab".repeat(16));
        assert_eq!(FileId::from_slice(&[1; 15]), None);
        assert_eq!(FileId::from_slice(&[1; 16]), Some(FileId([1; 16])));
        assert_eq!(a.to_string().parse::<FileId>().unwrap(), a);
        for bad in ["ab".repeat(15), "zz".repeat(16), "é".repeat(16)] {
            assert!(bad.parse::<FileId>().is_err(), "{bad}");
        }
    }

    /// A file whose header holds an identity of another length is refused
    /// on open, naming the field; one of 16 bytes reads back.
    #[test]
    fn an_identity_of_another_length_is_refused_on_open() {
        use crate::generated::fb;
        let file = |id: &[u8]| {
            let mut fbb = flatbuffers::FlatBufferBuilder::new();
            let tensors = fbb.create_vector::<flatbuffers::WIPOffset<fb::Tensor>>(&[]);
            let file_id = Some(fbb.create_vector(id));
            let root = fb::Header::create(
                &mut fbb,
                &fb::HeaderArgs {
                    tensors: Some(tensors),
                    alignment: 64,
                    file_id,
                    ..Default::default()
                },
            );
            fb::finish_header_buffer(&mut fbb, root);
            crate::format::frame(&[], fbb.finished_data(), 0)
        };
        match crate::File::from_bytes(&file(&[7; 15])) {
            Err(Error::InvalidField { field, value, .. }) => {
                assert_eq!((field.as_str(), value.as_str()), ("file_id", "15 byte(s)"));
            }
            other => panic!("a 15-byte identity: {other:?}"),
        }
        let read = crate::File::from_bytes(&file(&[7; 16])).unwrap();
        assert_eq!(read.file_id(), Some(FileId([7; 16])));
    }
}
