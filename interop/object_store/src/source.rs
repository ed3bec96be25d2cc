//! [`ObjectSource`]: range GETs as positioned reads.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use hurray::source::{Ends, ReadRequest, Source, coalesce};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, GetResult, ObjectMeta, ObjectStore, ObjectStoreExt};
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// The runtime every [`ObjectSource`] blocks on: two workers are plenty for
/// I/O that mostly waits.
pub(crate) fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    // Blocking inside an async runtime would panic (tokio refuses it):
    // refused as an error instead.
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(io::Error::other(
            "hurray-object-store's calls block: call them outside of an async runtime \
             (from a blocking thread, e.g. tokio's spawn_blocking)",
        ));
    }
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("hurray-object-store")
        .enable_all()
        .build()?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// The version of an object a reader opened: its ETag (when the store gives
/// one: every later GET sends `If-Match`) and its size (every later response
/// must report the same).
#[derive(Debug, Clone)]
struct Version {
    etag: Option<String>,
    size: u64,
}

/// One object of an object store, read by range GETs.
#[derive(Debug)]
pub struct ObjectSource {
    store: Arc<dyn ObjectStore>,
    path: Path,
    location: String,
    /// What the reads that opened the object saw: later reads ask for it.
    opened: Mutex<Option<Version>>,
    in_flight: usize,
}

impl ObjectSource {
    /// The object at `path` of `store`, called `location` (its URL) in messages.
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, location: impl Into<String>) -> Self {
        ObjectSource {
            store,
            path,
            location: location.into(),
            opened: Mutex::new(None),
            in_flight: hurray::limits::REQUESTS_IN_FLIGHT,
        }
    }

    /// At most `n` (at least 1) requests in flight at once.
    pub fn with_requests_in_flight(mut self, n: usize) -> Self {
        self.in_flight = n.max(1);
        self
    }

    fn opened(&self) -> Option<Version> {
        self.opened.lock().ok().and_then(|v| v.clone())
    }

    /// One range GET: the object's metadata and the bytes. After opening,
    /// it asks for the opened version and checks the size it reports.
    async fn get(&self, range: GetRange) -> io::Result<(ObjectMeta, Bytes)> {
        let result = self.get_result(range).await?;
        let meta = result.meta.clone();
        Ok((meta, result.bytes().await.map_err(to_io)?))
    }

    /// A GET of `range` of the object as it was when opened (its ETag, its
    /// size), its body still to be read.
    async fn get_result(&self, range: GetRange) -> io::Result<GetResult> {
        let opened = self.opened();
        let options = GetOptions {
            range: Some(range),
            if_match: opened.as_ref().and_then(|v| v.etag.clone()),
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&self.path, options)
            .await
            .map_err(to_io)?;
        let meta = &result.meta;
        if let Some(v) = opened
            && v.size != meta.size
        {
            return Err(changed(format!(
                "{} bytes when opened, {} now",
                v.size, meta.size
            )));
        }
        Ok(result)
    }
}

fn changed(detail: String) -> io::Error {
    io::Error::other(format!("the object changed since it was opened ({detail})"))
}

fn to_io(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        object_store::Error::Precondition { .. } => changed(e.to_string()),
        e => io::Error::other(e),
    }
}

impl Source for ObjectSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> io::Result<Ends> {
        runtime()?.block_on(async {
            // Both GETs at once: one round trip. A range of no bytes does
            // not exist, so at least one byte of each end is asked for and
            // the extra byte dropped below.
            let (ask_prefix, ask_suffix) = (prefix.max(1), suffix.max(1));
            let ends = futures::try_join!(
                self.get(GetRange::Bounded(0..ask_prefix)),
                self.get(GetRange::Suffix(ask_suffix))
            );
            let ((head_meta, head), (tail_meta, tail)) = match ends {
                Ok(ends) => ends,
                Err(e) => {
                    // No range of an empty object exists: say it is empty,
                    // so that opening reports it as a file too short.
                    return match self.store.head(&self.path).await {
                        Ok(meta) if meta.size == 0 => Ok(Ends {
                            len: 0,
                            prefix: Vec::new(),
                            suffix: Vec::new(),
                        }),
                        _ => Err(e),
                    };
                }
            };
            if head_meta.e_tag != tail_meta.e_tag || head_meta.size != tail_meta.size {
                return Err(io::Error::other(
                    "the object changed between the two reads that open it",
                ));
            }
            let size = tail_meta.size;
            // The store checks the ranges it got; the bodies are checked here.
            if head.len() as u64 != ask_prefix.min(size) || tail.len() as u64 != ask_suffix.min(size)
            {
                return Err(io::Error::other(format!(
                    "the store sent {} and {} bytes for the first {ask_prefix} and last {ask_suffix} of {size}",
                    head.len(),
                    tail.len()
                )));
            }
            let head = head.slice(..prefix.min(size) as usize);
            let tail = tail.slice(tail.len() - suffix.min(size) as usize..);
            if let Ok(mut opened) = self.opened.lock() {
                *opened = Some(Version {
                    etag: tail_meta.e_tag.clone(),
                    size,
                });
            }
            Ok(Ends {
                len: size,
                prefix: head.to_vec(),
                suffix: tail.to_vec(),
            })
        })
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> io::Result<()> {
        let plan = coalesce(
            requests,
            hurray::source::COALESCE_GAP,
            hurray::source::PIECE,
        );
        if plan.is_empty() {
            return Ok(());
        }
        runtime()?.block_on(async {
            futures::stream::iter(plan)
                .map(|mut request| async move {
                    let range: Range<u64> = request.range.clone();
                    let result = self.get_result(GetRange::Bounded(range)).await?;
                    // Each chunk of the body straight to where it goes: no
                    // buffer of the whole range (fresh memory every
                    // request) and no second copy.
                    let mut body = result.into_stream();
                    let mut at = 0u64;
                    while let Some(chunk) = body.try_next().await.map_err(to_io)? {
                        request.fill_piece(at, &chunk)?;
                        at += chunk.len() as u64;
                    }
                    request.filled(at)
                })
                .buffer_unordered(self.in_flight)
                .try_collect::<()>()
                .await
        })
    }
}
