//! Where the tools read a Hurray file from: a local path (memory-mapped),
//! or, built with the `remote` feature, the URL of an object in S3, GCS,
//! Azure or behind HTTP (`hurray-object-store`; credentials and endpoints
//! from the environment, as the stores' own tools read them). Either way a
//! [`File`]: for a URL its header is read (two range GETs) and a tensor's
//! bytes when a tool first needs them.

use anyhow::Result;
use hurray::File;
use std::path::Path;

/// Whether `path` names an object store URL rather than a local file.
pub fn is_url(path: &Path) -> bool {
    #[cfg(feature = "remote")]
    return path.to_str().is_some_and(hurray_object_store::is_url);
    // Without the feature every URL-like name is refused by `remote`.
    #[cfg(not(feature = "remote"))]
    return path.to_str().is_some_and(|p| p.contains("://"));
}

/// The file at `path`: mapped when local; for a URL, its header read.
pub fn open(path: &Path) -> Result<File> {
    match path.to_str().filter(|_| is_url(path)) {
        Some(url) => remote(url),
        None => Ok(File::open(path)?),
    }
}

#[cfg(feature = "remote")]
fn remote(url: &str) -> Result<File> {
    Ok(hurray_object_store::open(url)?)
}

#[cfg(not(feature = "remote"))]
fn remote(url: &str) -> Result<File> {
    anyhow::bail!(
        "{url}: this hurray was built without the `remote` feature, so it reads local files only"
    )
}
