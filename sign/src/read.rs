//! Reading a small file (a key, a signature) bounded by what it may hold,
//! never by the length it claims.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The bytes of the file at `path`, up to `limit + 1` of them: a result
/// longer than `limit` says the file is too long, whatever its length
/// claims (a FIFO or a device says 0).
pub(crate) fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let io = |source| Error::Io {
        action: "reading",
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}
