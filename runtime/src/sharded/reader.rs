//! [`ShardedFile`]: an index file and its members as one logical mapping.

use crate::atomic::{parent_dir, same_file};
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::reader::{File, MapMode, TensorRef};
use crate::shard_index::{self as index, ShardIndex, ShardMember, ShardPiece, ShardedTensor};
use crate::slice::{Gathered, SliceData, SliceRange, check_ranges};
use crate::source::Source;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

fn size_mismatch(m: &ShardMember, len: u64) -> Error {
    Error::MemberMismatch {
        member: m.path.clone(),
        field: "size",
        expected: m.size.to_string(),
        found: len.to_string(),
    }
}

/// A sharded checkpoint opened through its index file: every logical tensor
/// by name, whole or in pieces across member files.
///
/// Opening reads the index alone and checks it whole (member paths, every
/// piece inside its tensor, the pieces tiling each tensor). A member is
/// mapped and verified the first time one of its tensors is read, and its
/// length and (format 1.5) identity compared with the index's, so a member
/// of another save at its path is refused before any of its values is
/// read; its CRC-32C only on
/// [`verify_members`](Self::verify_members) and
/// [`checksum_report`](Self::checksum_report).
///
/// A checkpoint opened from its index's path reads the checkpoint that
/// index describes, or fails: a member is only taken while that index is
/// still at its path (a save that replaces the checkpoint puts its index in
/// place before it removes or reuses the old members' names), and a member
/// once mapped stays readable after its file is removed. Opened after a
/// replacement, a member is [`Error::MemberMismatch`] on field `"index"`.
#[derive(Debug)]
pub struct ShardedFile {
    members_at: MembersAt,
    index: ShardIndex,
    metadata: BTreeMap<String, String>,
    /// Shared, so that a whole tensor can outlive this borrow (a DLPack
    /// export, a Python tensor) without a copy.
    opened: Vec<OnceLock<Arc<File>>>,
    /// How members are mapped.
    mode: MapMode,
}

/// Where a checkpoint's members are.
enum MembersAt {
    /// Files relative to the index's directory, memory-mapped.
    Dir {
        dir: PathBuf,
        /// The index's path and a handle to the file opened there, held so
        /// that a member is only taken while that path still names it.
        index: Option<(PathBuf, std::fs::File)>,
    },
    /// Objects (or any source) by their member path, read tensor by tensor.
    Sources(Box<OpenMember>),
}

/// Opens the source of a member by its path in the index.
type OpenMember = dyn Fn(&str) -> Result<Arc<dyn Source>> + Send + Sync;

impl std::fmt::Debug for MembersAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MembersAt::Dir { dir, .. } => f.debug_struct("Dir").field("dir", dir).finish(),
            MembersAt::Sources(_) => f.write_str("Sources"),
        }
    }
}

impl ShardedFile {
    /// Opens the index file at `path` (members are found relative to its
    /// directory). A Hurray file that is not an index is
    /// [`Error::InvalidField`] on `shard_index`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        // SAFETY: members are mapped read-only: no export lets a consumer write.
        unsafe { ShardedFile::open_with(path, MapMode::ReadOnly) }
    }

    /// [`open`](Self::open), mapping each member as `mode` says.
    ///
    /// # Safety
    /// [`File::open_with`]'s contract, for every member: with
    /// [`MapMode::CopyOnWrite`], nothing may use a reference to a member's
    /// bytes obtained from this `ShardedFile` (slices, `get`'s views) while
    /// a consumer of an export writes to those bytes.
    pub unsafe fn open_with(path: impl AsRef<Path>, mode: MapMode) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path)?;
        // SAFETY: this function's contract is that one.
        unsafe { ShardedFile::from_index_at_with(&file, path, mode) }
    }

    /// [`from_index_at`](Self::from_index_at), mapping each member as `mode`
    /// says: the checkpoint of an index a caller has already opened (and,
    /// say, checked the signature of), without opening it again.
    ///
    /// # Safety
    /// As [`open_with`](Self::open_with).
    pub unsafe fn from_index_at_with(index: &File, path: &Path, mode: MapMode) -> Result<Self> {
        let mut checkpoint = ShardedFile::from_index_at(index, path).map_err(|e| match e {
            // Name the file that is not an index.
            Error::InvalidField {
                tensor,
                field,
                value,
                reason,
            } if field == "shard_index" => Error::InvalidField {
                tensor,
                field,
                value,
                reason: format!("{}: {reason}", path.display()),
            },
            e => e,
        })?;
        checkpoint.mode = mode;
        Ok(checkpoint)
    }

    /// The checkpoint of the index file `index`, already opened from `path`
    /// (its members are next to it): every check of [`open`](Self::open),
    /// without mapping the index again, and members are taken only while
    /// `path` still names that file, as `open` takes them.
    pub fn from_index_at(index: &File, path: &Path) -> Result<Self> {
        let mut checkpoint = ShardedFile::from_index(index, parent_dir(path))?;
        if let MembersAt::Dir { index: held, .. } = &mut checkpoint.members_at {
            *held = index.handle().map(|h| (path.to_owned(), h));
        }
        Ok(checkpoint)
    }

    /// The checkpoint of an index file already open (read from anywhere),
    /// whose members are found relative to `dir`: every check of
    /// [`open`](Self::open) but the one that a replaced checkpoint's members
    /// are not taken ([`from_index_at`](Self::from_index_at) makes it). The
    /// index is copied out, so `index` may go.
    pub fn from_index(index: &File, dir: impl Into<PathBuf>) -> Result<Self> {
        let reader = index.reader();
        let Some(wire) = reader.header().shard_index() else {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "shard_index".into(),
                value: "absent".into(),
                reason: "a Hurray file of tensors, not the index of a sharded checkpoint".into(),
            });
        };
        let index = index::from_wire(wire, reader.header().digest_algorithm())?;
        index.validate()?;
        let metadata = reader.metadata().to_map();
        let opened = index.members.iter().map(|_| OnceLock::new()).collect();
        Ok(ShardedFile {
            members_at: MembersAt::Dir {
                dir: dir.into(),
                index: None,
            },
            index,
            metadata,
            opened,
            mode: MapMode::ReadOnly,
        })
    }

    /// The checkpoint of an index file already open whose members are read
    /// through the sources `open_member` gives for their paths (objects next
    /// to the index in an object store). A member is opened (its header
    /// read, its length checked against the index) the first time one of
    /// its tensors is needed, and each of its tensors is read when a piece
    /// of it is first read, then kept ([`File::tensor`]);
    /// [`verify_members`](Self::verify_members) streams each member whole.
    pub fn from_index_with_sources(
        index: &File,
        open_member: impl Fn(&str) -> Result<Arc<dyn Source>> + Send + Sync + 'static,
    ) -> Result<Self> {
        let mut checkpoint = ShardedFile::from_index(index, PathBuf::new())?;
        checkpoint.members_at = MembersAt::Sources(Box::new(open_member));
        Ok(checkpoint)
    }

    /// The checkpoint's metadata (the index file's).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The algorithm of the members' header digests that the index records
    /// (format 1.4), `None` when it records none. Every member is checked
    /// against its digest when it is opened.
    pub fn digest_algorithm(&self) -> Option<crate::digest::DigestAlgorithm> {
        self.index.digest
    }

    /// The member files, in index order.
    pub fn members(&self) -> &[ShardMember] {
        &self.index.members
    }

    /// Every logical tensor, sorted by name.
    pub fn tensors(&self) -> &[ShardedTensor] {
        &self.index.tensors
    }

    /// The logical tensor `name`: its type, shape and pieces.
    pub fn tensor(&self, name: &str) -> Result<&ShardedTensor> {
        self.index
            .tensors
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .map(|i| &self.index.tensors[i])
            .map_err(|_| Error::NotFound {
                name: name.to_owned(),
            })
    }

    /// Member `i`, opened (mapped, or its header read through its source)
    /// and verified on first use; its length must be the index's
    /// ([`Error::MemberMismatch`] otherwise: replaced or truncated).
    pub fn member(&self, i: usize) -> Result<&File> {
        self.opened_member(i).map(|f| &**f)
    }

    /// [`member`](Self::member), shared: the member outlives this
    /// `ShardedFile` (a front door's tensor handle holds it).
    pub fn member_shared(&self, i: usize) -> Result<Arc<File>> {
        self.opened_member(i).map(Arc::clone)
    }

    /// Member `i`, opened and checked on first use.
    fn opened_member(&self, i: usize) -> Result<&Arc<File>> {
        let (Some(cell), Some(m)) = (self.opened.get(i), self.index.members.get(i)) else {
            return Err(Error::NotFound {
                name: format!("member #{i}"),
            });
        };
        if let Some(f) = cell.get() {
            return Ok(f);
        }
        let member = match &self.members_at {
            MembersAt::Dir { dir, index } => {
                let path = dir.join(&m.path);
                // Checked after the member is open (or failed to): if the
                // index is still at its path now, it was when the member was
                // opened, and a save never writes over a member the index in
                // place lists. If it is not, the member's path may hold
                // anything (nothing, another save's member),
                // and that the checkpoint was replaced is the error to give.
                let replaced = || -> Result<()> {
                    match index {
                        Some((index_path, index)) if !same_file(index, index_path)? => {
                            Err(Error::MemberMismatch {
                                member: m.path.clone(),
                                field: "index",
                                expected: format!("the index opened at {}", index_path.display()),
                                found: "another file there: the checkpoint was replaced since it was opened; open it again".into(),
                            })
                        }
                        _ => Ok(()),
                    }
                };
                let opened = std::fs::metadata(&path)
                    .map_err(|e| Error::io("opening member", &path, e))
                    .and_then(|meta| match meta.len() {
                        len if len != m.size => Err(size_mismatch(m, len)),
                        // SAFETY: `open_with`'s caller took on
                        // `File::open_with`'s contract for every member
                        // (`open` and `from_index` map read-only).
                        _ => unsafe { File::open_with(&path, self.mode) },
                    })
                    .and_then(|file| match file.file_len() {
                        len if len != m.size => Err(size_mismatch(m, len)),
                        _ => Ok(file),
                    });
                replaced()?;
                opened?
            }
            MembersAt::Sources(open_member) => {
                let file = File::open_source(open_member(&m.path)?)?;
                if file.file_len() != m.size {
                    return Err(size_mismatch(m, file.file_len()));
                }
                file
            }
        };
        if let (Some(algorithm), Some(expected)) = (self.index.digest, m.header_digest) {
            // The index commits to the member's header, which commits to
            // its data: a member replaced by another file, even one of the
            // same length, is refused here, before any of its tensors is
            // read (ADR-0012).
            let found = member.header_digest(algorithm);
            if found != expected {
                return Err(Error::MemberMismatch {
                    member: m.path.clone(),
                    field: "header digest",
                    expected: format!("{} {expected}", algorithm.name()),
                    found: format!("{found}: not the member this index was written with"),
                });
            }
        }
        if let Some(expected) = m.file_id
            && member.file_id() != Some(expected)
        {
            // Another save's member at this path (two saves at once, or a
            // file copied in): its values must never be read as this
            // checkpoint's, checksums or no (ADR-0010).
            return Err(FileId::mismatch(
                &m.path,
                expected,
                member.file_id(),
                "not the member this index was written with",
            ));
        }
        if member.is_shard_index() {
            // Indexes do not nest: that keeps every walk over members finite.
            return Err(Error::MemberMismatch {
                member: m.path.clone(),
                field: "kind",
                expected: "a Hurray file of tensors".into(),
                found: "a sharded checkpoint's index".into(),
            });
        }
        Ok(cell.get_or_init(|| Arc::new(member)))
    }

    /// The member tensor holding `piece` of `t`, checked against the index:
    /// same element type, the piece's shape.
    pub fn piece(&self, t: &ShardedTensor, piece: &ShardPiece) -> Result<TensorRef<'_>> {
        let file = self.piece_holder(t, piece)?;
        file.tensor(&piece.tensor)
    }

    /// The file holding `piece` of `t` (checked against the index as
    /// [`piece`](Self::piece) checks), shared, for an export that outlives
    /// this borrow: the member, mapped, or with the piece's tensor read
    /// (never the whole member).
    pub fn piece_file(&self, t: &ShardedTensor, piece: &ShardPiece) -> Result<Arc<File>> {
        let file = self.piece_holder(t, piece)?;
        file.tensor(&piece.tensor)?;
        Ok(Arc::clone(file))
    }

    /// The member tensor holding `piece` of `t`, checked against the index
    /// as [`piece`](Self::piece) checks, from its member's header alone:
    /// of a member read through a source, no data is read (what describing
    /// a checkpoint needs).
    pub fn piece_header(&self, t: &ShardedTensor, piece: &ShardPiece) -> Result<TensorRef<'_>> {
        let file = self.piece_holder(t, piece)?;
        file.get(&piece.tensor).ok_or_else(|| Error::NotFound {
            name: piece.tensor.clone(),
        })
    }

    /// The member holding `piece` of `t`, opened, its tensor checked
    /// against the index from the header (no data read).
    fn piece_holder(&self, t: &ShardedTensor, piece: &ShardPiece) -> Result<&Arc<File>> {
        let m = &self.index.members[piece.member];
        let file = self.opened_member(piece.member)?;
        let tensor = file.get(&piece.tensor).ok_or_else(|| Error::NotFound {
            name: piece.tensor.clone(),
        })?;
        let shape = tensor.shape().to_wire();
        if tensor.element_type() != t.element_type || shape != piece.shape {
            return Err(Error::MemberMismatch {
                member: m.path.clone(),
                field: "tensor type and shape",
                expected: format!(
                    "{:?}: {} {:?}",
                    piece.tensor,
                    t.element_type.name(),
                    piece.shape
                ),
                found: format!("{} {:?}", tensor.element_type().name(), shape),
            });
        }
        Ok(file)
    }

    /// The tensor `name` without copying, when one piece holds all of it;
    /// [`Error::Chunked`] when it is stored in pieces (use
    /// [`assemble`](Self::assemble) or [`slice`](Self::slice)).
    pub fn get(&self, name: &str) -> Result<TensorRef<'_>> {
        let t = self.tensor(name)?;
        match t.whole_piece() {
            Some(p) => self.piece(t, p),
            None => Err(Error::Chunked {
                tensor: name.to_owned(),
                pieces: t.pieces.len(),
            }),
        }
    }

    /// The whole of tensor `name`, copied out of its pieces.
    pub fn assemble(&self, name: &str) -> Result<SliceData> {
        let t = self.tensor(name)?;
        let full: Vec<SliceRange> = t.shape.iter().map(|&d| SliceRange::full(d)).collect();
        self.slice(name, &full)
    }

    /// `name[ranges]`, reading only the pieces the slice touches and, in
    /// each, only the bytes it covers (of a member read through a source,
    /// the piece's whole tensor, read once).
    pub fn slice(&self, name: &str, ranges: &[SliceRange]) -> Result<SliceData> {
        let t = self.tensor(name)?;
        let shape = check_ranges(name, ranges, &t.shape)?;
        // Open and check every piece the slice meets before allocating: the
        // output is then bounded by the data those verified pieces hold.
        let mut hits = Vec::new();
        for p in &t.pieces {
            let clipped: Option<Vec<(SliceRange, u64)>> = ranges
                .iter()
                .zip(p.offset.iter().zip(&p.shape))
                .map(|(r, (&lo, &extent))| r.clip(lo, extent))
                .collect();
            if let Some(clipped) = clipped {
                let (local, at): (Vec<SliceRange>, Vec<u64>) = clipped.into_iter().unzip();
                hits.push((self.piece(t, p)?, local, at));
            }
        }
        let mut out = Gathered::new(name, t.element_type, shape)?;
        for (tensor, local, at) in &hits {
            tensor.gather_into(local, &mut out, at)?;
        }
        Ok(out.finish())
    }
}
