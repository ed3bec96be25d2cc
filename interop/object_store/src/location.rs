//! From a URL to a store, a path in it and a [`File`] read through it.

use crate::source::ObjectSource;
use hurray::source::{PreadSource, Source};
use hurray::{Error, File, Result, ShardedFile};
use object_store::{BackoffConfig, ObjectStore, ObjectStoreScheme, RetryConfig};
use std::path::PathBuf;
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

/// The options this crate reads itself, besides the stores' own keys.
const MAX_RETRIES: &str = "max_retries";
const RETRY_TIMEOUT: &str = "retry_timeout";

/// How requests are retried (`hurray::limits::REMOTE_MAX_RETRIES`), with the
/// options `max_retries` and `retry_timeout` (seconds) taken out of
/// `options`; the rest are the store's.
fn retry_config<'o>(
    options: &[(&'o str, &'o str)],
    bad: impl Fn(String) -> Error,
) -> Result<(RetryConfig, Vec<(&'o str, &'o str)>)> {
    let mut retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: std::time::Duration::from_millis(100),
            max_backoff: std::time::Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: hurray::limits::REMOTE_MAX_RETRIES,
        retry_timeout: std::time::Duration::from_secs(hurray::limits::REMOTE_RETRY_TIMEOUT_SECS),
    };
    let mut rest = Vec::with_capacity(options.len());
    for &(key, value) in options {
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| bad(format!("option {key:?}: {value:?} is not a whole number")))
        };
        match key {
            MAX_RETRIES => {
                retry.max_retries = usize::try_from(number()?).unwrap_or(usize::MAX);
            }
            RETRY_TIMEOUT => retry.retry_timeout = std::time::Duration::from_secs(number()?),
            _ => rest.push((key, value)),
        }
    }
    Ok((retry, rest))
}

/// Opens the Hurray file at `location` (a URL, or a local path) with
/// credentials and endpoints from the environment: its header is read
/// (two range GETs for an object) and verified; tensors are read when
/// first used ([`File::open_source`]).
pub fn open(location: &str) -> Result<File> {
    open_with_options(location, &[])
}

/// [`open`], with `object_store` configuration `options` (such as
/// `("aws_endpoint", "http://127.0.0.1:9000")`) over the environment's.
pub fn open_with_options(location: &str, options: &[(&str, &str)]) -> Result<File> {
    File::open_source(source_for(location, options)?)
}

/// The source that reads `location`: an [`ObjectSource`] for a URL of an
/// object store, a [`PreadSource`] for a `file://` URL or a local path.
pub fn source_for(location: &str, options: &[(&str, &str)]) -> Result<Arc<dyn Source>> {
    match store_for(location, options)? {
        Some((store, path)) => Ok(Arc::new(ObjectSource::new(store, path, location))),
        None => Ok(Arc::new(PreadSource::open(local_path(location)?)?)),
    }
}

/// The path of a `file://` URL, or `location` itself.
pub(crate) fn local_path(location: &str) -> Result<PathBuf> {
    if !is_url(location) {
        return Ok(PathBuf::from(location));
    }
    let bad = |reason: &str| {
        Error::io(
            "opening",
            location,
            std::io::Error::other(reason.to_owned()),
        )
    };
    ::url::Url::parse(location)
        .map_err(|e| bad(&e.to_string()))?
        .to_file_path()
        .map_err(|()| bad("not a local path"))
}

/// The key of the object at `url` (of a store [`store_for`] reaches), as
/// `store_for` parses it.
pub(crate) fn object_path(url: &str) -> Result<object_store::path::Path> {
    let bad = |reason: String| Error::io("opening", url, std::io::Error::other(reason));
    let parsed = ::url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let (_, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
    Ok(path)
}

/// The object store holding `location` and its path there, configured
/// from the environment and `options`; `None` for a local path or a
/// `file://` URL.
pub(crate) fn store_for(
    location: &str,
    options: &[(&str, &str)],
) -> Result<Option<(Arc<dyn ObjectStore>, object_store::path::Path)>> {
    if !is_url(location) {
        return Ok(None);
    }
    let bad = |reason: String| Error::io("opening", location, std::io::Error::other(reason));
    let url = ::url::Url::parse(location).map_err(|e| bad(e.to_string()))?;
    let (scheme, path) = ObjectStoreScheme::parse(&url).map_err(|e| bad(e.to_string()))?;
    let (retry, options) = retry_config(options, bad)?;
    let options = options.as_slice();
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::Local => return Ok(None),
        ObjectStoreScheme::AmazonS3 => {
            let b = configure(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(location)
                    .with_retry(retry),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let b = configure(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(location)
                    .with_retry(retry),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let b = configure(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(location)
                    .with_retry(retry),
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
                object_store::http::HttpBuilder::new()
                    .with_url(base)
                    .with_retry(retry),
                options,
                |b, k, v| b.with_config(k, v),
                bad,
            )?;
            Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
        }
        other => return Err(bad(format!("{other:?} URLs are not object stores"))),
    };
    Ok(Some((store, path)))
}

/// Opens the sharded checkpoint whose index is at `location` (a URL, or a
/// local path); its members are the objects next to the index, opened with
/// the same `options`, each opened when one of its tensors is first needed
/// and read tensor by tensor ([`ShardedFile::from_index_with_sources`]).
pub fn open_sharded(location: &str, options: &[(&str, &str)]) -> Result<ShardedFile> {
    if !is_url(location) {
        return ShardedFile::open(location);
    }
    // The index's header is all of it that matters: two range GETs.
    let index = File::open_source(source_for(location, options)?)?;
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
        let options: Vec<(&str, &str)> = options
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        source_for(&member_url("opening member", &base, member)?, &options)
    }
}

/// The URL of the member `member` of an index in the folder `base`: the
/// one way readers and writers of a checkpoint in an object store name its
/// members. The member path was checked (relative, no `..`); what a URL
/// would decode or cut (`%2e%2e`, a query, a fragment) is refused here, so
/// a member is always an object under the index's folder.
pub(crate) fn member_url(op: &'static str, base: &str, member: &str) -> Result<String> {
    if member.contains(['%', '?', '#', '\\']) {
        return Err(Error::io(
            op,
            member,
            std::io::Error::other(
                "a member path of an index in an object store may not hold %, ?, # or \\",
            ),
        ));
    }
    Ok(format!("{base}/{member}"))
}
