//! [`ObjectSource`]: range GETs as positioned reads.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use hurray::source::{Ends, ReadRequest, Source, coalesce};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore};
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// The runtime every [`ObjectSource`] blocks on: two workers are plenty for
/// I/O that mostly waits.
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
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

/// One object of an object store, read by range GETs.
#[derive(Debug)]
pub struct ObjectSource {
    store: Arc<dyn ObjectStore>,
    path: Path,
    location: String,
    /// The version the first read saw: later reads ask for it.
    etag: Mutex<Option<String>>,
    in_flight: usize,
}

impl ObjectSource {
    /// The object at `path` of `store`, called `location` (its URL) in messages.
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, location: impl Into<String>) -> Self {
        ObjectSource {
            store,
            path,
            location: location.into(),
            etag: Mutex::new(None),
            in_flight: hurray::limits::REQUESTS_IN_FLIGHT,
        }
    }

    /// At most `n` (at least 1) requests in flight at once.
    pub fn with_requests_in_flight(mut self, n: usize) -> Self {
        self.in_flight = n.max(1);
        self
    }

    fn options(&self, range: GetRange) -> GetOptions {
        GetOptions {
            range: Some(range),
            if_match: self.etag.lock().ok().and_then(|e| e.clone()),
            ..GetOptions::default()
        }
    }

    /// One range GET: the object's metadata and the bytes.
    async fn get(&self, range: GetRange) -> io::Result<(ObjectMeta, Bytes)> {
        let result = self
            .store
            .get_opts(&self.path, self.options(range))
            .await
            .map_err(to_io)?;
        let meta = result.meta.clone();
        Ok((meta, result.bytes().await.map_err(to_io)?))
    }
}

fn to_io(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        object_store::Error::Precondition { .. } => {
            io::Error::other(format!("the object changed since it was opened ({e})"))
        }
        e => io::Error::other(e),
    }
}

impl Source for ObjectSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> io::Result<Ends> {
        runtime()?.block_on(async {
            // Both GETs at once: one round trip.
            let (head, tail) = futures::try_join!(
                self.get(GetRange::Bounded(0..prefix.max(1))),
                self.get(GetRange::Suffix(suffix.max(1)))
            )?;
            let ((head_meta, head), (tail_meta, tail)) = (head, tail);
            if head_meta.e_tag != tail_meta.e_tag || head_meta.size != tail_meta.size {
                return Err(io::Error::other(
                    "the object changed between the two reads that open it",
                ));
            }
            if let Ok(mut etag) = self.etag.lock() {
                etag.clone_from(&tail_meta.e_tag);
            }
            let prefix = head.len().min(prefix as usize);
            Ok(Ends {
                len: tail_meta.size,
                prefix: head[..prefix].to_vec(),
                suffix: tail.to_vec(),
            })
        })
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> io::Result<()> {
        let plan = coalesce(requests, hurray::source::COALESCE_GAP, hurray::load::PIECE);
        if plan.is_empty() {
            return Ok(());
        }
        runtime()?.block_on(async {
            futures::stream::iter(plan)
                .map(|mut request| async move {
                    let range: Range<u64> = request.range.clone();
                    let (_, bytes) = self.get(GetRange::Bounded(range)).await?;
                    request.fill(&bytes)
                })
                .buffer_unordered(self.in_flight)
                .try_collect::<()>()
                .await
        })
    }
}
