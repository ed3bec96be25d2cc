//! The limits only the command line's readers of other formats need
//! (`docs/spec/resource-limits.md`); the format's own, and those every
//! front door shares, are `hurray::limits`.

/// The safetensors crate's cap on a file's JSON header (its
/// `MAX_HEADER_SIZE`): a longer header is refused when written, because no
/// safetensors reader would read it back.
pub const SAFETENSORS_MAX_HEADER: u64 = 100_000_000;

/// The largest sharded-checkpoint index in JSON (transformers'
/// `model.safetensors.index.json`) read: it is read whole. A model of a
/// million tensors has an index of about 100 MB.
pub const MAX_INDEX_JSON: u64 = 100_000_000;

/// The longest `.npy` header read (NumPy writes a few hundred bytes; its own
/// reader's default cap is 10 000): a header is read whole before parsing.
pub const NPY_MAX_HEADER: u64 = 1 << 20;

/// The longest name and the longest metadata of one IRPA entry read (IREE
/// writes a name and a short JSON): entries may share one range of an
/// archive's metadata, so each entry's copy is bounded, not just the file.
pub const IRPA_MAX_NAME: u64 = 1 << 16;
pub const IRPA_MAX_METADATA: u64 = 1 << 20;

/// The most dimensions an IRPA entry's metadata may give its tensor.
pub const IRPA_MAX_RANK: usize = 64;

/// The longest key of one `.ptd` named-data entry read (ExecuTorch writes
/// fully qualified parameter names).
pub const PTD_MAX_KEY: usize = 1 << 16;

/// The most dimensions a `.ptd` tensor layout may have (its dim order is a
/// vector of bytes).
pub const PTD_MAX_RANK: usize = 255;
