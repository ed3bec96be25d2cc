//! A real S3-compatible server for Hurray's tests: `s3s-fs` (buckets are
//! directories under a root, objects are files) served over HTTP on
//! 127.0.0.1, with signed requests checked against one key pair, and a log
//! of every request it serves, so a test can count range GETs.
//!
//! [`Server::start`] runs it on a thread of its own until the `Server` is
//! dropped; a [`FaultProxy`] in front of it breaks GETs as a flaky network
//! and a throttling S3 endpoint do; the `hurray-s3-test-server` binary runs it for tests in other
//! languages, printing the endpoint and serving until its stdin closes.

mod proxy;

pub use proxy::{FaultCounts, FaultProxy, Faults};

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "hurray-test";
/// Its secret.
pub const SECRET_KEY: &str = "hurray-test-secret";
/// The region requests are signed for.
pub const REGION: &str = "us-east-1";

/// One request the server served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// `/bucket/key`.
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
}

/// A running server; dropping it stops it.
#[derive(Debug)]
pub struct Server {
    endpoint: String,
    root: PathBuf,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves the buckets under `root` (each a directory) on a free port.
    pub fn start(root: impl Into<PathBuf>) -> std::io::Result<Server> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        let fs = FileSystem {
            fs: s3s_fs::FileSystem::new(&root)
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?,
            root: root.clone(),
            writes: tokio::sync::Mutex::new(()),
        };
        let service = {
            let mut b = s3s::service::S3ServiceBuilder::new(fs);
            b.set_auth(s3s::auth::SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
            b.build()
        };
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", std_listener.local_addr()?);
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let thread_log = Arc::clone(&log);
        let thread = std::thread::Builder::new()
            .name("s3-test-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                        return;
                    };
                    let http = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    );
                    loop {
                        let socket = tokio::select! {
                            accepted = listener.accept() => match accepted {
                                Ok((socket, _)) => socket,
                                Err(_) => continue,
                            },
                            _ = &mut stopped => break,
                        };
                        let service = service.clone();
                        let log = Arc::clone(&thread_log);
                        let logged = hyper::service::service_fn(
                            move |req: hyper::Request<hyper::body::Incoming>| {
                                let entry = Request {
                                    method: req.method().to_string(),
                                    path: req.uri().path().to_owned(),
                                    range: req
                                        .headers()
                                        .get("range")
                                        .and_then(|v| v.to_str().ok())
                                        .map(str::to_owned),
                                };
                                if let Ok(mut log) = log.lock() {
                                    log.push(entry);
                                }
                                let service = service.clone();
                                async move {
                                    Ok::<_, Infallible>(
                                        match hyper::service::Service::call(&service, req).await {
                                            Ok(response) => response,
                                            Err(_) => {
                                                let mut r = hyper::Response::new(s3s::Body::from(
                                                    "internal error".to_owned(),
                                                ));
                                                *r.status_mut() =
                                                    hyper::StatusCode::INTERNAL_SERVER_ERROR;
                                                r
                                            }
                                        },
                                    )
                                }
                            },
                        );
                        let conn = http
                            .serve_connection(hyper_util::rt::TokioIo::new(socket), logged)
                            .into_owned();
                        tokio::spawn(async move {
                            let _ = conn.await;
                        });
                    }
                });
            })?;
        Ok(Server {
            endpoint,
            root,
            log,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The directory of bucket `bucket` (created if missing): put objects
    /// there as files.
    pub fn bucket(&self, bucket: &str) -> std::io::Result<PathBuf> {
        let dir = self.root.join(bucket);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// The root the buckets are under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The environment the AWS tools (and `object_store`'s builder) read
    /// to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_REGION", REGION.into()),
        ]
    }

    /// The same as `object_store` configuration options.
    pub fn options(&self) -> Vec<(&'static str, String)> {
        options_for(&self.endpoint)
    }

    /// The configuration options that reach this server through `endpoint`
    /// (a [`FaultProxy`]'s).
    pub fn options_via(&self, endpoint: &str) -> Vec<(&'static str, String)> {
        options_for(endpoint)
    }

    /// Every request served so far, and forgets them.
    pub fn take_requests(&self) -> Vec<Request> {
        self.log
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }
}

fn options_for(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("aws_endpoint", endpoint.to_owned()),
        ("aws_allow_http", "true".into()),
        ("aws_access_key_id", ACCESS_KEY.into()),
        ("aws_secret_access_key", SECRET_KEY.into()),
        ("aws_region", REGION.into()),
    ]
}

/// s3s-fs, with the answers S3 gives where s3s-fs 0.14 differs: a suffix
/// range longer than the object is the whole object (s3s-fs seeks before
/// the start and fails with a 500); a GET whose `If-Match` names another
/// version is refused with 412 (s3s-fs ignores it); a HEAD of a key that is
/// only a prefix of others is 404 (s3s-fs fails with a 500); an empty
/// delimiter is none; deleting a prefix deletes nothing, and a prefix with
/// no objects left is listed no more; a conditional put (`If-Match`,
/// `If-None-Match`) is atomic, as S3's is (s3s-fs checks the condition and
/// writes in two steps another write can come between: every write to an
/// object here takes one lock). The release
/// that fixes the first needs a newer toolchain than this workspace's.
/// Every other operation is s3s-fs's own.
struct FileSystem {
    fs: s3s_fs::FileSystem,
    root: PathBuf,
    /// Held by every write of an object: what a conditional put checked
    /// is what it replaces.
    writes: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl s3s::S3 for FileSystem {
    async fn get_object(
        &self,
        mut req: s3s::S3Request<s3s::dto::GetObjectInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::GetObjectOutput>> {
        let object = self.root.join(&req.input.bucket).join(&req.input.key);
        if let Some(s3s::dto::Range::Suffix { length }) = req.input.range
            && let Ok(size) = std::fs::metadata(&object).map(|m| m.len())
            && length > size
            && size > 0
        {
            req.input.range = Some(s3s::dto::Range::Suffix { length: size });
        }
        let if_match = req.input.if_match.clone();
        let range = req.input.range;
        let mut response = self.fs.get_object(req).await?;
        if let Some(s3s::dto::ETagCondition::ETag(wanted)) = if_match
            && response
                .output
                .e_tag
                .as_ref()
                .is_none_or(|found| !found.strong_cmp(&wanted))
        {
            return Err(s3s::s3_error!(PreconditionFailed));
        }
        // s3s-fs has checked the range and the object; its body reads the
        // file 4 KiB at a time, each read a hop to tokio's blocking pool,
        // which made this server take more of a 2-core machine's CPU than
        // the clients it serves. The same bytes, read 1 MiB at a time.
        let length = response.output.content_length.unwrap_or(0).max(0) as u64;
        let start = match range {
            Some(s3s::dto::Range::Int { first, .. }) => first,
            // A suffix ends the object: its start needs the object's size.
            Some(s3s::dto::Range::Suffix { .. }) => std::fs::metadata(&object)
                .map_err(|e| s3s::s3_error!(e, NoSuchKey))?
                .len()
                .saturating_sub(length),
            None => 0,
        };
        response.output.body = Some(s3s::dto::StreamingBlob::wrap(read_range(
            object, start, length,
        )));
        Ok(response)
    }

    async fn head_object(
        &self,
        req: s3s::S3Request<s3s::dto::HeadObjectInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::HeadObjectOutput>> {
        // A key that is only a prefix of others (a directory here) is no
        // object: S3 says 404, where s3s-fs fails to open it with a 500.
        if self
            .root
            .join(&req.input.bucket)
            .join(&req.input.key)
            .is_dir()
        {
            return Err(s3s::s3_error!(NoSuchKey));
        }
        self.fs.head_object(req).await
    }

    async fn put_object(
        &self,
        req: s3s::S3Request<s3s::dto::PutObjectInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::PutObjectOutput>> {
        let _write = self.writes.lock().await;
        self.fs.put_object(req).await
    }

    async fn list_objects_v2(
        &self,
        mut req: s3s::S3Request<s3s::dto::ListObjectsV2Input>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::ListObjectsV2Output>> {
        // An empty delimiter is none, as S3 takes it (s3fs sends one).
        if req.input.delimiter.as_deref() == Some("") {
            req.input.delimiter = None;
        }
        self.fs.list_objects_v2(req).await
    }

    async fn head_bucket(
        &self,
        req: s3s::S3Request<s3s::dto::HeadBucketInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::HeadBucketOutput>> {
        self.fs.head_bucket(req).await
    }

    async fn create_bucket(
        &self,
        req: s3s::S3Request<s3s::dto::CreateBucketInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::CreateBucketOutput>> {
        self.fs.create_bucket(req).await
    }

    async fn get_bucket_location(
        &self,
        req: s3s::S3Request<s3s::dto::GetBucketLocationInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::GetBucketLocationOutput>> {
        self.fs.get_bucket_location(req).await
    }

    async fn list_buckets(
        &self,
        req: s3s::S3Request<s3s::dto::ListBucketsInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::ListBucketsOutput>> {
        self.fs.list_buckets(req).await
    }

    async fn list_objects(
        &self,
        mut req: s3s::S3Request<s3s::dto::ListObjectsInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::ListObjectsOutput>> {
        if req.input.delimiter.as_deref() == Some("") {
            req.input.delimiter = None;
        }
        self.fs.list_objects(req).await
    }

    async fn copy_object(
        &self,
        req: s3s::S3Request<s3s::dto::CopyObjectInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::CopyObjectOutput>> {
        let _write = self.writes.lock().await;
        self.fs.copy_object(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: s3s::S3Request<s3s::dto::CreateMultipartUploadInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(req).await
    }

    async fn upload_part(
        &self,
        req: s3s::S3Request<s3s::dto::UploadPartInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::UploadPartOutput>> {
        self.fs.upload_part(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: s3s::S3Request<s3s::dto::CompleteMultipartUploadInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::CompleteMultipartUploadOutput>> {
        let _write = self.writes.lock().await;
        self.fs.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: s3s::S3Request<s3s::dto::AbortMultipartUploadInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::AbortMultipartUploadOutput>> {
        self.fs.abort_multipart_upload(req).await
    }

    async fn delete_object(
        &self,
        req: s3s::S3Request<s3s::dto::DeleteObjectInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::DeleteObjectOutput>> {
        let _write = self.writes.lock().await;
        self.fs.delete_object(req).await
    }

    async fn delete_objects(
        &self,
        mut req: s3s::S3Request<s3s::dto::DeleteObjectsInput>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::dto::DeleteObjectsOutput>> {
        // A key that is only a prefix of others names no object, so
        // deleting it deletes nothing (s3s-fs fails on the directory); and
        // a folder with no objects left is no prefix any more (s3s-fs would
        // keep listing the empty directory).
        let _write = self.writes.lock().await;
        let bucket = self.root.join(&req.input.bucket);
        let keys: Vec<String> = req
            .input
            .delete
            .objects
            .iter()
            .map(|o| o.key.clone())
            .collect();
        req.input
            .delete
            .objects
            .retain(|o| !bucket.join(&o.key).is_dir());
        let response = self.fs.delete_objects(req).await?;
        for key in keys {
            let mut dir = Some(bucket.join(key));
            while let Some(d) = dir.filter(|d| d.starts_with(&bucket) && *d != bucket) {
                if d.is_dir() && std::fs::remove_dir(&d).is_err() {
                    break;
                }
                dir = d.parent().map(Path::to_path_buf);
            }
        }
        Ok(response)
    }
}

/// The `length` bytes of `path` from `start`, read 1 MiB at a time on a
/// blocking thread, two reads ahead of the response.
fn read_range(
    path: PathBuf,
    start: u64,
    length: u64,
) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> + Send + Sync + 'static {
    const CHUNK: u64 = 1 << 20;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(2);
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Seek, SeekFrom};
        let opened = std::fs::File::open(&path).and_then(|mut f| {
            f.seek(SeekFrom::Start(start))?;
            Ok(f)
        });
        let mut file = match opened {
            Ok(file) => file,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        let mut left = length;
        while left > 0 {
            let mut chunk = vec![0; left.min(CHUNK) as usize];
            if let Err(e) = file.read_exact(&mut chunk) {
                let _ = tx.blocking_send(Err(e));
                return;
            }
            if tx.blocking_send(Ok(chunk.into())).is_err() {
                return; // the response was dropped
            }
            left -= left.min(CHUNK);
        }
    });
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
