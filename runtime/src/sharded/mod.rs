//! Sharded checkpoints (format 1.3, ADR-0010): an index file, itself a
//! Hurray file whose header holds a `ShardIndex`, maps every logical tensor
//! to its pieces in member files: whole tensors, or chunks of one tensor
//! placed by their offsets in its shape (a tensor saved by eight
//! tensor-parallel ranks is one logical tensor). Members are ordinary
//! Hurray files; the index records each one's size, CRC-32C and (format
//! 1.5) [`FileId`].

mod lock;
mod reader;
mod replace;
mod store;
mod verify;
mod writer;

pub use crate::atomic::CommitFailed;
pub use crate::file_id::{FILE_ID_LEN, FileId};
pub use crate::shard_index::{ShardMember, ShardPiece, ShardedTensor};
pub use reader::ShardedFile;
pub use store::{CheckpointStore, Crc32cWriter, NewFile, WrittenMember};
pub use verify::ChecksumReport;
pub use writer::{AdoptedChunk, DEFAULT_MAX_SHARD_SIZE, ShardedWriter};
