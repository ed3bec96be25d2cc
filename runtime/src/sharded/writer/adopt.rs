//! Taking in members written elsewhere: by another process (a rank of a
//! distributed save, which reports what it wrote), or before (a
//! conversion).

use super::{ShardedWriter, check_chunk, record_chunk, resolved_shape, written_twice};
use crate::digest::DigestAlgorithm;
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::shard_index::{ShardMember, ShardPiece, ShardedTensor, check_member_path};
use crate::sharded::store::WrittenMember;
use std::collections::BTreeSet;

/// A tensor of a member written elsewhere that is a chunk of a larger
/// logical tensor ([`ShardedWriter::adopt_member_chunks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptedChunk {
    /// Its name in the member.
    pub tensor: String,
    /// The logical tensor it is part of.
    pub name: String,
    /// The logical tensor's shape.
    pub shape: Vec<u64>,
    /// Where the chunk starts in it, one coordinate per dimension.
    pub offset: Vec<u64>,
}

impl ShardedWriter {
    /// Takes in a Hurray file already written at `path` (relative to the
    /// index's directory; a conversion writes members this way): opens and
    /// verifies it, reads it whole for its CRC-32C, and records each of its
    /// tensors as a whole logical tensor.
    pub fn adopt_member(&mut self, path: &str) -> Result<()> {
        self.adopt_member_chunks(path, &[])
    }

    /// As [`adopt_member`](Self::adopt_member), where the tensors `chunks`
    /// names are chunks of larger logical tensors (written by another process:
    /// a rank of a distributed save); the member's other tensors are whole
    /// tensors. Chunks are checked as [`add_chunk`](Self::add_chunk) checks
    /// them, and [`finish`](Self::finish) checks that they tile.
    pub fn adopt_member_chunks(&mut self, path: &str, chunks: &[AdoptedChunk]) -> Result<()> {
        self.adopt(path, chunks, None)
    }

    /// As [`adopt_member_chunks`](Self::adopt_member_chunks), for a member
    /// whose writer reported its length and CRC-32C as it wrote it (a rank
    /// that wrote it with [`Crc32cWriter`]): the member's header is read and
    /// verified and its length checked, but its data is not read again (for
    /// a member in an object store, the difference between two range GETs
    /// and downloading it). A reported identity must be the member's: one
    /// that another save wrote over since is refused (`MemberMismatch` on
    /// `file_id`).
    pub fn adopt_written_member(
        &mut self,
        path: &str,
        chunks: &[AdoptedChunk],
        written: WrittenMember,
    ) -> Result<()> {
        self.adopt(path, chunks, Some(written))
    }

    fn adopt(
        &mut self,
        path: &str,
        chunks: &[AdoptedChunk],
        written: Option<WrittenMember>,
    ) -> Result<()> {
        check_member_path("member path", path)?;
        self.close_member()?;
        if self.members.iter().any(|m| m.path == path) {
            return Err(written_twice(path));
        }
        let file = self.store.open(path)?.ok_or_else(|| {
            Error::io(
                "opening member",
                self.store.location(path),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let member = self.members.len();
        // Every check runs against a copy: a refused member leaves the
        // writer as it was (no piece pointing at a member it never took).
        let mut tensors = self.tensors.clone();
        let mut chunked = BTreeSet::new();
        for c in chunks {
            let t = file.tensor(&c.tensor)?;
            if !chunked.insert(c.tensor.as_str()) {
                return Err(Error::DuplicateName {
                    name: c.tensor.clone(),
                });
            }
            let desc = t.descriptor();
            check_chunk(&c.name, &desc)?;
            let shape = resolved_shape(&desc)?;
            record_chunk(
                &mut tensors,
                &c.name,
                &c.shape,
                desc.element_type,
                ShardPiece {
                    member,
                    tensor: c.tensor.clone(),
                    offset: c.offset.clone(),
                    shape,
                },
            )?;
        }
        for t in file.tensors().filter(|t| !chunked.contains(t.name())) {
            let name = t.name().to_owned();
            if tensors.contains_key(&name) {
                return Err(Error::DuplicateName { name });
            }
            let shape = resolved_shape(&t.descriptor())?;
            let piece = ShardPiece {
                member,
                tensor: name.clone(),
                offset: vec![0; shape.len()],
                shape: shape.clone(),
            };
            tensors.insert(
                name.clone(),
                ShardedTensor {
                    name,
                    element_type: t.element_type(),
                    shape,
                    pieces: vec![piece],
                },
            );
        }
        if self.digest.is_some() && file.digest_algorithm()? != self.digest {
            // The index would commit to a header that does not commit to
            // its data.
            return Err(Error::MemberMismatch {
                member: path.to_owned(),
                field: "digest_algorithm",
                expected: self.digest.map_or("none", DigestAlgorithm::name).to_owned(),
                found: file
                    .digest_algorithm()?
                    .map_or("none", DigestAlgorithm::name)
                    .to_owned(),
            });
        }
        if let Some(reported) = written.and_then(|w| w.file_id)
            && file.file_id() != Some(reported)
        {
            // Another save wrote this path after the member's writer did:
            // its size and CRC-32C would be recorded over another file.
            return Err(FileId::mismatch(
                path,
                reported,
                file.file_id(),
                "another file than its writer wrote",
            ));
        }
        let (size, crc32c) = match written {
            Some(w) if w.size != file.file_len() => {
                return Err(Error::MemberMismatch {
                    member: path.to_owned(),
                    field: "size",
                    expected: w.size.to_string(),
                    found: file.file_len().to_string(),
                });
            }
            Some(w) => (w.size, w.crc32c),
            None => (
                file.file_len(),
                crate::sharded::verify::whole_crc32c(&file)?,
            ),
        };
        self.tensors = tensors;
        self.placed.insert(path.to_owned());
        self.members.push(ShardMember {
            path: path.to_owned(),
            size,
            crc32c,
            header_digest: self.digest.map(|a| file.header_digest(a)),
            file_id: file.file_id(),
        });
        Ok(())
    }
}
