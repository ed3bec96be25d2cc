//! From a URL to a store, a path in it and a [`RangedFile`].

use crate::source::ObjectSource;
use hurray::source::{PreadSource, Source};
use hurray::{Error, RangedFile, Result, ShardedFile};
use object_store::ObjectStore;
use object_store::ObjectStoreScheme;
use std::sync::Arc;

/// Whether `location` is a URL this crate reads (`s3://`, `gs://`, `az://`,
/// `abfs://`, `http(s)://`, `file://`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    let Some((scheme, _)) = location.split_once("://") else {
        return false;
    };
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" | "http" | "https" | "file"
    )
}

/// A builder with `options` applied over what it read from the environment:
/// a key the store does not know is an error, not silently dropped.
fn configure<B, K: std::str::FromStr>(
    builder: B,
    options: &[(&str, &str)],
    with: impl Fn(B, K, &str) -> B,
    bad: impl Fn(String) -> Error,
) -> Result<B> {
    options
        .iter()
        .try_fold(builder, |b, (key, value)| match key.parse::<K>() {
            Ok(k) => Ok(with(b, k, value)),
            Err(_) => Err(bad(format!("unknown option {key:?} for this store"))),
        })
}

/// Opens the Hurray file at `location` (a URL, or a local path) with
/// credentials and endpoints from the environment.
pub fn open(location: &str) -> Result<RangedFile> {
    open_with_options(location, &[])
}

/// [`open`], with `object_store` configuration `options` (such as
/// `("aws_endpoint", "http://127.0.0.1:9000")`) over the environment's.
pub fn open_with_options(location: &str, options: &[(&str, &str)]) -> Result<RangedFile> {
    RangedFile::open(source_for(location, options)?)
}

/// The source that reads `location`: an [`ObjectSource`] for a URL of an
/// object store, a [`PreadSource`] for a `file://` URL or a local path.
pub fn source_for(location: &str, options: &[(&str, &str)]) -> Result<Arc<dyn Source>> {
    if !is_url(location) {
        return Ok(Arc::new(PreadSource::open(location)?));
    }
    let bad = |reason: String| Error::io("opening", location, std::io::Error::other(reason));
    let url = ::url::Url::parse(location).map_err(|e| bad(e.to_string()))?;
    let (scheme, path) = ObjectStoreScheme::parse(&url).map_err(|e| bad(e.to_string()))?;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::Local => {
            let path = url
                .to_file_path()
                .map_err(|()| bad("not a local path".into()))?;
            return Ok(Arc::new(PreadSource::open(path)?));
        }
        ObjectStoreScheme::AmazonS3 => {
            let b = configure(
                object_store::aws::AmazonS3Builder::from_env().with_url(location),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let b = configure(
                object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(location),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let b = configure(
                object_store::azure::MicrosoftAzureBuilder::from_env().with_url(location),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        ObjectStoreScheme::Http => {
            if url.query().is_some() {
                // The store joins paths to a base URL: a query (a presigned
                // URL's signature) would be dropped, not sent.
                return Err(bad(
                    "URLs with a query (presigned URLs) are not supported".into()
                ));
            }
            let base = &url[..::url::Position::BeforePath];
            let b = configure(
                object_store::http::HttpBuilder::new().with_url(base),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        other => return Err(bad(format!("{other:?} URLs are not object stores"))),
    };
    Ok(Arc::new(ObjectSource::new(store, path, location)))
}

/// Opens the sharded checkpoint whose index is at `location` (a URL, or a
/// local path); its members are the objects next to the index, opened with
/// the same `options`, each opened when one of its tensors is first needed
/// and read tensor by tensor ([`ShardedFile::from_index_with_sources`]).
pub fn open_sharded(location: &str, options: &[(&str, &str)]) -> Result<ShardedFile> {
    if !is_url(location) {
        return ShardedFile::open(location);
    }
    let index = RangedFile::open(source_for(location, options)?)?.fetch_file()?;
    ShardedFile::from_index_with_sources(&index, member_sources(location, options))
}

/// How the members of the index at `location` (a URL) are opened: the
/// objects at their paths relative to the index, with `options`.
pub fn member_sources(
    location: &str,
    options: &[(&str, &str)],
) -> impl Fn(&str) -> Result<Arc<dyn Source>> + Send + Sync + 'static {
    let base = location
        .rsplit_once('/')
        .map_or(location, |(dir, _)| dir)
        .to_owned();
    let options: Vec<(String, String)> = options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |member| {
        // Checked when the index was opened: relative, no `..`. What a URL
        // would decode or cut (`%2e%2e`, a query, a fragment) is refused
        // here, so a member is always an object under the index's folder.
        if member.contains(['%', '?', '#', '\\']) {
            return Err(Error::io(
                "opening member",
                member,
                std::io::Error::other(
                    "a member path of an index in an object store may not hold %, ?, # or \\",
                ),
            ));
        }
        let options: Vec<(&str, &str)> = options
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        source_for(&format!("{base}/{member}"), &options)
    }
}
