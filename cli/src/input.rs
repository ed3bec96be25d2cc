//! Where the tools read a Hurray file from: a local path (memory-mapped),
//! or, built with the `remote` feature, the URL of an object in S3, GCS,
//! Azure or behind HTTP (`hurray-object-store`; credentials and endpoints
//! from the environment, as the stores' own tools read them).

use anyhow::Result;
use hurray::{File, RangedFile};
use std::path::Path;

/// Whether `path` names an object store URL rather than a local file.
pub fn is_url(path: &Path) -> bool {
    #[cfg(feature = "remote")]
    return path.to_str().is_some_and(hurray_object_store::is_url);
    // Without the feature every URL-like name is refused by `remote`.
    #[cfg(not(feature = "remote"))]
    return path.to_str().is_some_and(|p| p.contains("://"));
}

/// The file at `path` opened for its header: two range GETs for a URL.
pub fn open_header(path: &Path) -> Result<RangedFile> {
    let Some(url) = path.to_str().filter(|_| is_url(path)) else {
        return Ok(RangedFile::open_path(path)?);
    };
    remote(url)
}

/// The whole file at `path`: mapped when local; for a URL, read into memory
/// by concurrent range GETs (the tools that call this read every byte).
pub fn open_whole(path: &Path) -> Result<File> {
    match path.to_str().filter(|_| is_url(path)) {
        Some(url) => Ok(remote(url)?.fetch_file()?),
        None => Ok(File::open(path)?),
    }
}

#[cfg(feature = "remote")]
fn remote(url: &str) -> Result<RangedFile> {
    Ok(hurray_object_store::open(url)?)
}

#[cfg(not(feature = "remote"))]
fn remote(url: &str) -> Result<RangedFile> {
    anyhow::bail!(
        "{url}: this hurray was built without the `remote` feature, so it reads local files only"
    )
}
