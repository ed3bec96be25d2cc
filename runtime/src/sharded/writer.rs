//! [`ShardedWriter`]: writes member files as tensors arrive, rolling to a new
//! member past a size, and the index last.

use super::replace::{claim_member_path, remove_replaced};
use super::store::{CheckpointStore, Crc32cWriter, LocalStore, NewFile, WrittenMember};
use crate::ElementType;
use crate::atomic::{CommitFailed, Durability, parent_dir};
use crate::descriptor::{Layout, TensorDescriptor};
use crate::digest::DigestAlgorithm;
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::shard_index::{ShardIndex, ShardMember, ShardPiece, ShardedTensor, check_member_path};
use crate::writer::Writer;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// transformers' default `max_shard_size` ("5GB", decimal).
pub const DEFAULT_MAX_SHARD_SIZE: u64 = 5_000_000_000;

/// A member file's sink: the new file, and the CRC-32C of every byte
/// written to it (the index records it).
type Member = Crc32cWriter<Box<dyn NewFile>>;

#[derive(Debug)]
struct OpenMember {
    path: String,
    writer: Writer<Member>,
    names: BTreeSet<String>,
    /// Written in its header; the index records it.
    file_id: FileId,
}

/// Writes a sharded checkpoint: member files (each a Hurray file, written
/// atomically) and, on [`finish`](Self::finish), the index file.
///
/// The index is the commit point. Members go under names this save claims
/// exclusively: the preferred name where nothing is there, else its first
/// free alternate (`model-00001.1.hurray`), so the old checkpoint, and any
/// other save running at the same time, stay whole while the new one is
/// written. Each member gets a random [`FileId`] in its header, which the
/// index records. The index is swapped into place last, by a step that
/// tells which index it replaced; only then are that index's members that
/// the new one does not list removed. A save that fails, or is dropped
/// before `finish`, removes the members it claimed; one that is killed
/// leaves them as files no index lists. At every moment the index path
/// holds the old checkpoint or a new one, whole: of two saves at once, the
/// one whose index goes in place last wins, and removes the other's
/// members (ADR-0010, "Two saves at once").
#[derive(Debug)]
pub struct ShardedWriter {
    /// Where the index and the members go.
    store: Box<dyn CheckpointStore>,
    /// The index's path in `store`.
    index: String,
    stem: String,
    max_shard_size: u64,
    durability: Durability,
    metadata: BTreeMap<String, String>,
    members: Vec<ShardMember>,
    current: Option<OpenMember>,
    next_path: Option<String>,
    tensors: BTreeMap<String, ShardedTensor>,
    /// Member names asked for ([`start_member`](Self::start_member),
    /// [`member_path`](Self::member_path)): each at most once.
    requested: BTreeSet<String>,
    /// Where this save's members go (or went), so no two share a path.
    placed: BTreeSet<String>,
    /// Names this save claimed (members written here, or handed out by
    /// [`member_path`](Self::member_path)): no index lists them until
    /// `finish`, so a save that fails removes them.
    placed_files: Vec<String>,
    /// The index is in place: nothing is undone any more.
    committed: bool,
    /// The digests of members this writer writes, and of the index's
    /// record of every member's header (format 1.4).
    digest: Option<DigestAlgorithm>,
}

impl ShardedWriter {
    /// Starts a checkpoint whose index is `index_path` (`model.hurray`);
    /// members are named after it (`model-00001.hurray`, ...) unless
    /// [`start_member`](Self::start_member) names them.
    pub fn create(index_path: impl AsRef<Path>) -> Result<Self> {
        let index_path = index_path.as_ref();
        let file_name = index_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let store = LocalStore {
            dir: parent_dir(index_path),
        };
        ShardedWriter::in_store(Box::new(store), file_name)
    }

    /// Starts a checkpoint whose index is the file `index` (a file name) of
    /// `store`, its members beside it: the same checkpoint as
    /// [`create`](Self::create) writes, in a store other than a local
    /// directory (an object store's, in `hurray-object-store`).
    pub fn in_store(store: Box<dyn CheckpointStore>, index: &str) -> Result<Self> {
        check_member_path("index path", index)?;
        if index.contains('/') {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "index path".into(),
                value: format!("{index:?}"),
                reason: "the index of a store is a file name; its members go beside it".into(),
            });
        }
        let stem = index.strip_suffix(".hurray").unwrap_or(index).to_owned();
        Ok(ShardedWriter {
            store,
            index: index.to_owned(),
            stem,
            max_shard_size: DEFAULT_MAX_SHARD_SIZE,
            durability: Durability::Synced,
            metadata: BTreeMap::new(),
            members: Vec::new(),
            current: None,
            next_path: None,
            tensors: BTreeMap::new(),
            requested: BTreeSet::new(),
            placed: BTreeSet::new(),
            placed_files: Vec::new(),
            committed: false,
            digest: None,
        })
    }

    /// Records digests (none by default): every member written gets
    /// per-buffer digests, and the index records each member's header
    /// digest, so that a signature over the index covers the whole
    /// checkpoint (ADR-0012). Before the first tensor.
    pub fn set_digests(&mut self, algorithm: Option<DigestAlgorithm>) -> Result<()> {
        if self.current.is_some() || !self.members.is_empty() {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "digest_algorithm".into(),
                value: algorithm.map_or("none", DigestAlgorithm::name).into(),
                reason: "set the digests before writing the first tensor".into(),
            });
        }
        self.digest = algorithm;
        Ok(())
    }

    /// A member holds tensors up to this many bytes; a tensor that would
    /// take it past starts the next one (a larger tensor gets a member to
    /// itself), as `save_pretrained(max_shard_size=...)` splits.
    pub fn set_max_shard_size(&mut self, bytes: u64) {
        self.max_shard_size = bytes;
    }

    /// How members and the index are committed.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// The checkpoint's metadata, kept in the index file.
    pub fn set_metadata(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.metadata.insert(key.into(), value.into());
    }

    /// Closes the current member; the next tensor starts the member `path`
    /// (relative to the index's directory), or its first free alternate
    /// where a file is at `path` (see [`ShardedWriter`]).
    pub fn start_member(&mut self, path: &str) -> Result<()> {
        self.request(path)?;
        self.close_member()?;
        self.next_path = Some(path.to_owned());
        Ok(())
    }

    /// Where a member that another writer (a rank of a distributed save, a
    /// conversion) is to write for [`adopt_member`](Self::adopt_member)
    /// should go: `preferred`, or its first alternate where no file is,
    /// claimed for this save until it finishes or is dropped. Written
    /// there, the member cannot damage
    /// the checkpoint this save replaces, nor another save's. Its writer
    /// should give it a [`FileId`] ([`Writer::set_file_id`]), so that the
    /// index can tell it from another file put at its path.
    pub fn member_path(&mut self, preferred: &str) -> Result<String> {
        self.request(preferred)?;
        self.place(preferred)
    }

    /// Records a member name asked for, once; never the index's own.
    fn request(&mut self, path: &str) -> Result<()> {
        check_member_path("member path", path)?;
        if path == self.index {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "member path".into(),
                value: format!("{path:?}"),
                reason: "the index's own name: the index would be put over the member".into(),
            });
        }
        if !self.requested.insert(path.to_owned()) {
            return Err(written_twice(path));
        }
        Ok(())
    }

    /// Claims `preferred`, or its first free alternate, for this save.
    fn place(&mut self, preferred: &str) -> Result<String> {
        let path = claim_member_path(self.store.as_ref(), preferred, |p| self.placed.contains(p))?;
        self.placed.insert(path.clone());
        self.placed_files.push(path.clone());
        Ok(path)
    }

    /// Writes a whole tensor.
    pub fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()> {
        let shape = resolved_shape(desc)?;
        if self.tensors.contains_key(&desc.name) {
            return Err(Error::DuplicateName {
                name: desc.name.clone(),
            });
        }
        let piece = self.write_piece(desc, buffers, vec![0; shape.len()], shape.clone())?;
        self.tensors.insert(
            desc.name.clone(),
            ShardedTensor {
                name: desc.name.clone(),
                element_type: desc.element_type,
                shape,
                pieces: vec![piece],
            },
        );
        Ok(())
    }

    /// Writes one chunk of the logical tensor `desc.name` of shape
    /// `logical_shape`: `desc` describes the chunk (its shape is the chunk's)
    /// and `offset` places it. Chunks are dense or strided, unquantized; the
    /// chunks of a tensor must tile it, which [`finish`](Self::finish) checks.
    pub fn add_chunk(
        &mut self,
        logical_shape: &[u64],
        offset: &[u64],
        desc: &TensorDescriptor,
        buffers: &[&[u8]],
    ) -> Result<()> {
        check_chunk(&desc.name, desc)?;
        let shape = resolved_shape(desc)?;
        // Checked before anything is written.
        check_logical(&self.tensors, &desc.name, logical_shape, desc.element_type)?;
        let piece = self.write_piece(desc, buffers, offset.to_vec(), shape)?;
        record_chunk(
            &mut self.tensors,
            &desc.name,
            logical_shape,
            desc.element_type,
            piece,
        )
    }

    fn write_piece(
        &mut self,
        desc: &TensorDescriptor,
        buffers: &[&[u8]],
        offset: Vec<u64>,
        shape: Vec<u64>,
    ) -> Result<ShardPiece> {
        let bytes: u64 = buffers.iter().map(|b| b.len() as u64).sum();
        let roll = self.current.as_ref().is_some_and(|m| {
            // A member already holding this name (another chunk of the
            // tensor), or one this tensor would take past the size.
            m.names.contains(&desc.name)
                || (!m.names.is_empty()
                    && m.writer.position().saturating_add(bytes) > self.max_shard_size)
        });
        if roll {
            self.close_member()?;
        }
        if self.current.is_none() {
            self.open_member()?;
        }
        let member = self.members.len();
        let Some(current) = self.current.as_mut() else {
            unreachable!("a member was just opened")
        };
        current.writer.add_tensor(desc, buffers)?;
        current.names.insert(desc.name.clone());
        Ok(ShardPiece {
            member,
            tensor: desc.name.clone(),
            offset,
            shape,
        })
    }

    fn open_member(&mut self) -> Result<()> {
        let preferred = match self.next_path.take() {
            Some(p) => p,
            None => format!("{}-{:05}.hurray", self.stem, self.members.len() + 1),
        };
        let path = self.place(&preferred)?;
        let dest = self.store.location(&path);
        let file = self.store.create(&path, self.durability)?;
        let member = Crc32cWriter::new(file);
        let mut writer = Writer::to_file_at(member, &dest)?;
        writer.set_digests(self.digest)?;
        let file_id = FileId::random()?;
        writer.set_file_id(Some(file_id));
        self.current = Some(OpenMember {
            path,
            writer,
            names: BTreeSet::new(),
            file_id,
        });
        Ok(())
    }

    fn close_member(&mut self) -> Result<()> {
        let Some(m) = self.current.take() else {
            return Ok(());
        };
        let finished = m.writer.finish_parts()?;
        let (header_digest, mut sink) = (finished.header_digest, finished.out);
        sink.flush()
            .map_err(|e| Error::io("writing", self.store.location(&m.path), e))?;
        let (file, written) = sink.finish();
        // Claimed, so in `placed_files`: a commit that fails after its
        // rename still leaves the file for `Drop` to remove.
        file.commit().map_err(|failed| failed.error)?;
        self.members.push(ShardMember {
            path: m.path,
            size: written.size,
            crc32c: written.crc32c,
            header_digest,
            file_id: Some(m.file_id),
        });
        Ok(())
    }

    /// Closes the last member, checks the index (every chunked tensor tiled
    /// exactly) and swaps it into place, last; then removes the members of
    /// the index it replaced (the earlier checkpoint's, or a save's that
    /// finished meanwhile) that the new index does not list. Returns the
    /// index's path.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.close_member()?;
        let members = std::mem::take(&mut self.members);
        let index = ShardIndex {
            members: members.clone(),
            tensors: std::mem::take(&mut self.tensors).into_values().collect(),
            digest: self.digest,
        };
        index.validate()?;
        let location = self.store.location(&self.index);
        // An index is a header and no data: built in memory, so that a
        // store can swap it in with one conditional put.
        let mut w = Writer::to_file_at(Vec::new(), &location)?;
        for (k, v) in std::mem::take(&mut self.metadata) {
            w.set_metadata(k, v);
        }
        w.set_digests(self.digest)?;
        w.set_shard_index(index);
        let (_, bytes) = w.finish_into_inner()?;
        let replaced = match self
            .store
            .replace_index(&self.index, &bytes, self.durability)
        {
            Ok(replaced) => replaced,
            Err(CommitFailed { error, in_place }) => {
                // In place, the new index refers to this save's members.
                self.committed = in_place;
                return Err(error);
            }
        };
        self.committed = true;
        remove_replaced(self.store.as_ref(), replaced.as_ref(), &members);
        Ok(location)
    }
}

impl Drop for ShardedWriter {
    /// A save that did not put its index in place removes the members it
    /// claimed: no index lists them. Either way its claims are given up
    /// (each name now holds its member, or nothing).
    fn drop(&mut self) {
        for path in &self.placed_files {
            if !self.committed {
                self.store.remove(path);
            }
            self.store.release(path);
        }
    }
}

fn written_twice(path: &str) -> Error {
    Error::InvalidField {
        tensor: String::new(),
        field: "member path".into(),
        value: format!("{path:?}"),
        reason: "written twice".into(),
    }
}

/// The logical tensor `name`, as earlier chunks in `tensors` described it,
/// must be `element_type` of `logical_shape`.
fn check_logical(
    tensors: &BTreeMap<String, ShardedTensor>,
    name: &str,
    logical_shape: &[u64],
    element_type: ElementType,
) -> Result<()> {
    match tensors.get(name) {
        Some(t) if t.shape != logical_shape || t.element_type != element_type => {
            Err(Error::InvalidField {
                tensor: name.to_owned(),
                field: "shape".into(),
                value: format!("{} {logical_shape:?}", element_type.name()),
                reason: format!(
                    "earlier chunks said {} {:?}",
                    t.element_type.name(),
                    t.shape
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Adds `piece` to the logical tensor `name` of `tensors`, checked as
/// [`check_logical`] does.
fn record_chunk(
    tensors: &mut BTreeMap<String, ShardedTensor>,
    name: &str,
    logical_shape: &[u64],
    element_type: ElementType,
    piece: ShardPiece,
) -> Result<()> {
    check_logical(tensors, name, logical_shape, element_type)?;
    tensors
        .entry(name.to_owned())
        .or_insert_with(|| ShardedTensor {
            name: name.to_owned(),
            element_type,
            shape: logical_shape.to_vec(),
            pieces: Vec::new(),
        })
        .pieces
        .push(piece);
    Ok(())
}

/// A chunk is dense or strided, and unquantized.
fn check_chunk(name: &str, desc: &TensorDescriptor) -> Result<()> {
    if !matches!(desc.layout, Layout::Dense | Layout::Strided(_)) || desc.quantization.is_some() {
        return Err(Error::InvalidField {
            tensor: name.to_owned(),
            field: "layout".into(),
            value: desc.layout.name().to_owned(),
            reason: "a chunk is dense or strided and unquantized".into(),
        });
    }
    Ok(())
}

fn resolved_shape(desc: &TensorDescriptor) -> Result<Vec<u64>> {
    let shape = desc.wire_shape();
    match shape.iter().position(|&d| d == crate::format::DYNAMIC_DIM) {
        Some(d) => Err(Error::InvalidField {
            tensor: desc.name.clone(),
            field: format!("shape[{d}]"),
            value: "dynamic".into(),
            reason: "a sharded checkpoint's tensors have resolved shapes".into(),
        }),
        None => Ok(shape),
    }
}

// Adopting members other processes wrote (DCP ranks, Orbax processes).

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
