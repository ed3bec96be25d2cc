//! The index's model, its one validation (run by the reader on open and by
//! the writer before it writes an index) and its wire form.

use crate::ElementType;
use crate::digest::{DIGEST_LEN, Digest, DigestAlgorithm};
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::format::DYNAMIC_DIM;
use crate::generated::fb;
use crate::limits::MAX_PIECES_PER_TENSOR;

/// One member file of a sharded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMember {
    /// Relative to the index's directory, `/`-separated.
    pub path: String,
    /// Length in bytes.
    pub size: u64,
    /// CRC-32C of all of the member's bytes.
    pub crc32c: u64,
    /// The member's header digest (format 1.4), with the index's
    /// [`digest_algorithm`](crate::ShardedFile::digest_algorithm): present
    /// for every member exactly when the index has one.
    pub header_digest: Option<Digest>,
    /// The member's [`FileId`] (format 1.5), when it has one: a member
    /// whose header holds another is not the file this index was written
    /// with, and is refused when opened.
    pub file_id: Option<FileId>,
}

/// One piece of a logical tensor: a tensor of a member file placed at
/// `offset` in the logical tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPiece {
    /// Position of the member in [`ShardedFile::members`](crate::ShardedFile::members).
    pub member: usize,
    /// The tensor's name inside the member.
    pub tensor: String,
    /// Where the piece starts, one coordinate per dimension.
    pub offset: Vec<u64>,
    /// The piece's shape (the member tensor's).
    pub shape: Vec<u64>,
}

impl ShardPiece {
    /// The number of elements of the piece.
    fn volume(&self) -> u128 {
        self.shape.iter().map(|&d| u128::from(d)).product()
    }

    /// Whether the piece is the whole of a tensor of shape `shape`.
    pub fn is_whole(&self, shape: &[u64]) -> bool {
        self.shape == shape && self.offset.iter().all(|&o| o == 0)
    }
}

/// A logical tensor of a sharded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedTensor {
    pub name: String,
    pub element_type: ElementType,
    pub shape: Vec<u64>,
    /// Tiling the shape exactly: no gap, no overlap.
    pub pieces: Vec<ShardPiece>,
}

impl ShardedTensor {
    /// The one piece that holds all of the tensor, or `None` for a tensor
    /// stored in pieces.
    pub fn whole_piece(&self) -> Option<&ShardPiece> {
        match self.pieces.as_slice() {
            [p] if p.is_whole(&self.shape) => Some(p),
            _ => None,
        }
    }
}

/// The whole index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ShardIndex {
    pub(crate) members: Vec<ShardMember>,
    /// Sorted by name.
    pub(crate) tensors: Vec<ShardedTensor>,
    /// The algorithm of the members' header digests (format 1.4).
    pub(crate) digest: Option<DigestAlgorithm>,
}

fn invalid(field: String, value: impl std::fmt::Display, reason: &str) -> Error {
    Error::InvalidField {
        tensor: String::new(),
        field,
        value: value.to_string(),
        reason: reason.to_owned(),
    }
}

/// A member path must stay inside the index's directory on every system:
/// relative, `/`-separated, no empty, `.` or `..` component, no `\` or NUL.
pub(crate) fn check_member_path(field: &str, path: &str) -> Result<()> {
    let ok = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(['\\', '\0', ':'])
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field.to_owned(),
            format!("{path:?}"),
            "a member path is relative and '/'-separated, without empty, '.' or '..' components",
        ))
    }
}

impl ShardIndex {
    /// Every rule of an index (ADR-0010), checked from the index alone.
    pub(crate) fn validate(&self) -> Result<()> {
        let mut paths = std::collections::BTreeSet::new();
        for (i, m) in self.members.iter().enumerate() {
            let field = format!("shard_index.members[{i}].path");
            check_member_path(&field, &m.path)?;
            if m.header_digest.is_some() != self.digest.is_some() {
                return Err(invalid(
                    format!("shard_index.members[{i}].header_digest"),
                    if m.header_digest.is_some() {
                        "present"
                    } else {
                        "absent"
                    },
                    "every member has a header digest exactly when the index names a digest algorithm",
                ));
            }
            if !paths.insert(m.path.as_str()) {
                return Err(invalid(field, format!("{:?}", m.path), "listed twice"));
            }
        }
        let mut previous: Option<&str> = None;
        for t in &self.tensors {
            if t.name.is_empty() {
                return Err(invalid("shard_index.tensors.name".into(), "\"\"", "empty"));
            }
            if let Some(p) = previous
                && p >= t.name.as_str()
            {
                return Err(Error::NamesNotSorted {
                    previous: p.to_owned(),
                    name: t.name.clone(),
                });
            }
            previous = Some(&t.name);
            check_tensor(t, self.members.len())?;
        }
        Ok(())
    }
}

fn check_tensor(t: &ShardedTensor, members: usize) -> Result<()> {
    let bad = |field: &str, value: String, reason: &str| Error::InvalidField {
        tensor: t.name.clone(),
        field: field.to_owned(),
        value,
        reason: reason.to_owned(),
    };
    if let Some(d) = t.shape.iter().position(|&d| d == DYNAMIC_DIM) {
        return Err(bad(
            &format!("shape[{d}]"),
            "dynamic".into(),
            "a sharded tensor's shape is resolved",
        ));
    }
    let n = t.pieces.len();
    if n == 0 || n > MAX_PIECES_PER_TENSOR {
        return Err(bad(
            "pieces",
            format!("{n} piece(s)"),
            &format!("between 1 and {MAX_PIECES_PER_TENSOR} (limits::MAX_PIECES_PER_TENSOR)"),
        ));
    }
    let rank = t.shape.len();
    let mut volume: u128 = 0;
    for (i, p) in t.pieces.iter().enumerate() {
        if p.member >= members {
            return Err(bad(
                &format!("pieces[{i}].member"),
                p.member.to_string(),
                &format!("the index lists {members} member(s)"),
            ));
        }
        if p.tensor.is_empty() {
            return Err(bad(&format!("pieces[{i}].tensor"), "\"\"".into(), "empty"));
        }
        if p.offset.len() != rank || p.shape.len() != rank {
            return Err(bad(
                &format!("pieces[{i}]"),
                format!("offset {:?}, shape {:?}", p.offset, p.shape),
                &format!("one coordinate per dimension of the rank-{rank} tensor"),
            ));
        }
        for d in 0..rank {
            if p.offset[d]
                .checked_add(p.shape[d])
                .is_none_or(|end| end > t.shape[d])
            {
                return Err(bad(
                    &format!("pieces[{i}]"),
                    format!("offset {:?}, shape {:?}", p.offset, p.shape),
                    &format!(
                        "extends past the tensor's shape {:?} in dimension {d}",
                        t.shape
                    ),
                ));
            }
        }
        volume += p.volume();
    }
    // Disjoint pieces whose volumes add up to the tensor's tile it exactly.
    let whole: u128 = t.shape.iter().map(|&d| u128::from(d)).product();
    if volume != whole {
        return Err(bad(
            "pieces",
            format!("{volume} element(s) in {n} piece(s)"),
            &format!(
                "the pieces must cover the {whole} element(s) of shape {:?} exactly",
                t.shape
            ),
        ));
    }
    for (i, a) in t.pieces.iter().enumerate() {
        for (j, b) in t.pieces.iter().enumerate().skip(i + 1) {
            let meet = (0..rank).all(|d| {
                a.offset[d] < b.offset[d] + b.shape[d] && b.offset[d] < a.offset[d] + a.shape[d]
            });
            if meet && a.volume() > 0 && b.volume() > 0 {
                return Err(bad(
                    &format!("pieces[{j}]"),
                    format!("offset {:?}", b.offset),
                    &format!("overlaps pieces[{i}] at offset {:?}", a.offset),
                ));
            }
        }
    }
    Ok(())
}

/// The index as the header holds it, read into the model (the header is
/// verified; every list is as long as real header bytes make it).
pub(crate) fn from_wire(
    index: fb::ShardIndex<'_>,
    digest: fb::DigestAlgorithm,
) -> Result<ShardIndex> {
    let digest = DigestAlgorithm::from_wire(digest).map_err(|value| {
        invalid(
            "digest_algorithm".into(),
            value,
            "a digest algorithm this reader does not know: it could not check the members",
        )
    })?;
    let mut members = Vec::with_capacity(index.members().len());
    for (i, m) in index.members().iter().enumerate() {
        let header_digest = match (m.header_digest(), digest) {
            (None, _) => None,
            (Some(d), Some(_)) if d.len() == DIGEST_LEN => Digest::from_slice(d.bytes()),
            (Some(d), _) => {
                return Err(invalid(
                    format!("shard_index.members[{i}].header_digest"),
                    format!("{} byte(s)", d.len()),
                    "one digest of the index's digest algorithm",
                ));
            }
        };
        let file_id = m
            .file_id()
            .map(|id| FileId::from_field(format!("shard_index.members[{i}].file_id"), id.bytes()))
            .transpose()?;
        members.push(ShardMember {
            path: m.path().to_owned(),
            size: m.size(),
            crc32c: m.crc32c(),
            header_digest,
            file_id,
        });
    }
    let mut tensors = Vec::with_capacity(index.tensors().len());
    for t in index.tensors() {
        let element_type = ElementType::from_wire(t.element_type().0).ok_or_else(|| {
            Error::InvalidElementType {
                tensor: t.name().to_owned(),
                field: "element_type",
                value: t.element_type().0,
                allowed: &[],
            }
        })?;
        let shape: Vec<u64> = t.shape().iter().collect();
        let pieces = t
            .pieces()
            .iter()
            .map(|p| ShardPiece {
                member: p.member() as usize,
                tensor: p.tensor().to_owned(),
                offset: p
                    .offset()
                    .filter(|o| !o.is_empty())
                    .map_or_else(|| vec![0; shape.len()], |o| o.iter().collect()),
                shape: p.shape().iter().collect(),
            })
            .collect();
        tensors.push(ShardedTensor {
            name: t.name().to_owned(),
            element_type,
            shape,
            pieces,
        });
    }
    Ok(ShardIndex {
        members,
        tensors,
        digest,
    })
}

/// Builds the index table into `fbb` (the writer's header).
pub(crate) fn to_wire<'b>(
    fbb: &mut flatbuffers::FlatBufferBuilder<'b>,
    index: &ShardIndex,
) -> flatbuffers::WIPOffset<fb::ShardIndex<'b>> {
    let members: Vec<_> = index
        .members
        .iter()
        .map(|m| {
            let path = fbb.create_string(&m.path);
            let header_digest = m.header_digest.map(|d| fbb.create_vector(&d.0));
            let file_id = m.file_id.map(|id| fbb.create_vector(&id.0));
            fb::ShardMember::create(
                fbb,
                &fb::ShardMemberArgs {
                    path: Some(path),
                    size: m.size,
                    crc32c: m.crc32c,
                    header_digest,
                    file_id,
                },
            )
        })
        .collect();
    let members = fbb.create_vector(&members);
    let tensors: Vec<_> = index
        .tensors
        .iter()
        .map(|t| {
            let pieces: Vec<_> = t
                .pieces
                .iter()
                .map(|p| {
                    let tensor = fbb.create_string(&p.tensor);
                    // A whole tensor's all-zero offset is left out.
                    let offset = p
                        .offset
                        .iter()
                        .any(|&o| o != 0)
                        .then(|| fbb.create_vector(&p.offset));
                    let shape = fbb.create_vector(&p.shape);
                    fb::ShardPiece::create(
                        fbb,
                        &fb::ShardPieceArgs {
                            member: p.member as u32,
                            tensor: Some(tensor),
                            offset,
                            shape: Some(shape),
                        },
                    )
                })
                .collect();
            let pieces = fbb.create_vector(&pieces);
            let name = fbb.create_string(&t.name);
            let shape = fbb.create_vector(&t.shape);
            fb::ShardedTensor::create(
                fbb,
                &fb::ShardedTensorArgs {
                    name: Some(name),
                    element_type: fb::ElementType(t.element_type.to_wire()),
                    shape: Some(shape),
                    pieces: Some(pieces),
                },
            )
        })
        .collect();
    let tensors = fbb.create_vector(&tensors);
    fb::ShardIndex::create(
        fbb,
        &fb::ShardIndexArgs {
            members: Some(members),
            tensors: Some(tensors),
        },
    )
}
