//! Writing to object stores: a file as one multipart upload
//! ([`create`]), and a sharded checkpoint whose index and members are
//! objects under one prefix ([`sharded_writer`]).
//!
//! An upload appears whole when it completes and not at all before, so a
//! member is never seen half written, and the index, put last, is the
//! checkpoint's commit point as a rename is on a disk: a save that fails or
//! is killed leaves no index at its location (or the previous one), never
//! an index over missing members. Two saves at once never mix: a member's
//! name is claimed by a put that fails when an object is there
//! (`If-None-Match: *`), and the index is put only if the object there is
//! still the one this save read (`If-Match` its ETag), so the save knows
//! exactly which index it replaced (ADR-0010, "Two saves at once"). A store
//! that is not S3's may not support multipart uploads (plain HTTP):
//! creating a file there is an error; one without conditional puts cannot
//! take a sharded checkpoint, and says so.

use crate::location::{local_path, member_url, object_path, store_for};
use crate::source::{ObjectSource, runtime};
use hurray::limits::{
    MAX_INDEX_SWAP_ATTEMPTS, UPLOAD_MAX_PARTS, UPLOAD_PART_BYTES, UPLOADS_IN_FLIGHT,
};
use hurray::sharded::{CheckpointStore, CommitFailed, NewFile};
use hurray::{
    Error, File, Result, ShardedWriter,
    atomic::{AtomicFile, Durability},
};
use object_store::path::Path;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion, WriteMultipart,
};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// Starts the file at `location` (a URL, or a local path): an upload to
/// the object store, or an [`AtomicFile`] on a disk (with `durability`);
/// nothing appears at `location` until [`NewFile::commit`].
pub fn create(
    location: &str,
    options: &[(&str, &str)],
    durability: Durability,
) -> Result<Box<dyn NewFile>> {
    match store_for(location, options)? {
        Some((store, path)) => Ok(Box::new(Upload::start(store, path, location)?)),
        None => Ok(Box::new(AtomicFile::create_with(
            local_path(location)?,
            durability,
        )?)),
    }
}

/// Starts a sharded checkpoint whose index is at `location` (a URL, or a
/// local path), its members beside it: as [`ShardedWriter::create`] writes
/// one in a directory, with every file an upload.
pub fn sharded_writer(location: &str, options: &[(&str, &str)]) -> Result<ShardedWriter> {
    let Some((store, _)) = store_for(location, options)? else {
        return ShardedWriter::create(local_path(location)?);
    };
    // Named as readers name them (`member_sources`): the index's URL less
    // its last part is the folder, and every file's key is what that
    // folder's URL and the file's name parse to.
    let (base, index) = location.rsplit_once('/').unwrap_or((location, ""));
    let objects = ObjectCheckpointStore {
        store,
        base: base.to_owned(),
    };
    ShardedWriter::in_store(Box::new(objects), index)
}

/// A sharded checkpoint's objects: the index and its members in the
/// folder `base` (a URL) of `store`.
#[derive(Debug)]
struct ObjectCheckpointStore {
    store: Arc<dyn ObjectStore>,
    base: String,
}

impl ObjectCheckpointStore {
    /// The URL of `path` and its key in the store, as readers find it.
    fn object(&self, op: &'static str, path: &str) -> Result<(String, Path)> {
        let url = member_url(op, &self.base, path)?;
        let key = object_path(&url)?;
        Ok((url, key))
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }
}

impl CheckpointStore for ObjectCheckpointStore {
    fn location(&self, path: &str) -> PathBuf {
        PathBuf::from(self.url(path))
    }

    fn create(&self, path: &str, _: Durability) -> Result<Box<dyn NewFile>> {
        // An upload is as durable as the store makes it once it completes.
        let (url, key) = self.object("creating", path)?;
        Ok(Box::new(Upload::start(Arc::clone(&self.store), key, &url)?))
    }

    fn open(&self, path: &str) -> Result<Option<File>> {
        let (url, key) = self.object("opening", path)?;
        let source = ObjectSource::new(Arc::clone(&self.store), key, url);
        match File::open_source(Arc::new(source)) {
            Ok(file) => Ok(Some(file)),
            Err(Error::Io { cause, .. }) if cause.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn claim(&self, path: &str) -> Result<bool> {
        let (url, key) = self.object("claiming", path)?;
        // A placeholder of its own: if the put took but its answer was lost
        // and a retry found the object there, this save can tell it is its
        // own, and neither leaves it behind nor gives the name up.
        let token = hurray::sharded::FileId::random()?.0;
        let rt = runtime().map_err(|e| Error::io("claiming", &url, e))?;
        let put = rt.block_on(self.store.put_opts(
            &key,
            PutPayload::from(token.to_vec()),
            PutMode::Create.into(),
        ));
        match put {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Ok(holds(rt, self.store.as_ref(), &key, &token))
            }
            Err(e) => Err(Error::io("claiming", url, io::Error::other(e))),
        }
    }

    /// The claim is the placeholder at the name, which the member's upload
    /// replaces: nothing to give up.
    fn release(&self, _: &str) {}

    fn replace_index(
        &self,
        index: &str,
        bytes: &[u8],
        _: Durability,
    ) -> std::result::Result<Option<File>, CommitFailed> {
        let before = |error| CommitFailed {
            error,
            in_place: false,
        };
        let (url, key) = self.object("replacing", index).map_err(before)?;
        let rt = runtime().map_err(|e| before(Error::io("replacing", &url, e)))?;
        let payload = PutPayload::from(bytes.to_vec());
        for _ in 0..MAX_INDEX_SWAP_ATTEMPTS {
            // What is there now, and its version: the put below replaces
            // exactly that, or fails.
            let (mode, replaced) = match rt.block_on(self.store.head(&key)) {
                Ok(meta) => {
                    let version = UpdateVersion {
                        e_tag: meta.e_tag,
                        version: meta.version,
                    };
                    // Read after the head: if it is another version by
                    // now, the put fails and this starts again.
                    (PutMode::Update(version), self.open(index).ok().flatten())
                }
                Err(object_store::Error::NotFound { .. }) => (PutMode::Create, None),
                Err(e) => return Err(before(Error::io("replacing", &url, io::Error::other(e)))),
            };
            let put = PutOptions::from(mode);
            match rt.block_on(self.store.put_opts(&key, payload.clone(), put)) {
                Ok(_) => return Ok(replaced),
                // This put took, and a retry of it found its own index.
                Err(e) if is_precondition(&e) && holds(rt, self.store.as_ref(), &key, bytes) => {
                    return Ok(replaced);
                }
                // Another save's index went in place since the head.
                Err(e) if is_precondition(&e) => {}
                Err(e) => {
                    // An answer lost may hide a put that took: the index is
                    // in place if the object holds exactly these bytes.
                    let in_place = holds(rt, self.store.as_ref(), &key, bytes);
                    return Err(CommitFailed {
                        error: Error::io("putting the index", &url, io::Error::other(e)),
                        in_place,
                    });
                }
            }
        }
        Err(before(Error::io(
            "putting the index",
            &url,
            io::Error::other(format!(
                "another save put its index there first at each of {MAX_INDEX_SWAP_ATTEMPTS} attempts"
            )),
        )))
    }

    fn remove(&self, path: &str) {
        if let (Ok((_, key)), Ok(rt)) = (self.object("removing", path), runtime()) {
            let _ = rt.block_on(self.store.delete(&key));
        }
    }
}

/// One object being written: a multipart upload, completed by `commit`,
/// aborted when dropped uncommitted.
struct Upload {
    upload: Option<WriteMultipart>,
    /// Bytes handed to `upload` so far.
    written: u64,
    store: Arc<dyn ObjectStore>,
    key: Path,
    location: String,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Upload {
    fn start(store: Arc<dyn ObjectStore>, path: Path, location: &str) -> Result<Upload> {
        let upload = runtime()
            .and_then(|rt| {
                rt.block_on(store.put_multipart(&path))
                    .map_err(io::Error::other)
            })
            .map_err(|e| Error::io("starting an upload to", location, e))?;
        Ok(Upload {
            upload: Some(WriteMultipart::new_with_chunk_size(
                upload,
                UPLOAD_PART_BYTES,
            )),
            written: 0,
            store,
            key: path,
            location: location.to_owned(),
        })
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let rt = runtime()?;
        let Some(upload) = self.upload.as_mut() else {
            return Err(io::Error::other("the upload has failed"));
        };
        // Room for one more part first: what the upload holds stays
        // bounded, whatever the producer hands over.
        if let Err(e) = rt.block_on(upload.wait_for_capacity(UPLOADS_IN_FLIGHT)) {
            if let Some(upload) = self.upload.take() {
                let _ = rt.block_on(upload.abort());
            }
            return Err(io::Error::other(e));
        }
        let n = buf.len().min(UPLOAD_PART_BYTES);
        let most = UPLOAD_MAX_PARTS * UPLOAD_PART_BYTES as u64;
        if self.written + n as u64 > most {
            return Err(io::Error::other(format!(
                "an upload holds at most {UPLOAD_MAX_PARTS} parts of {UPLOAD_PART_BYTES} bytes \
                 ({most} bytes): split the file into members"
            )));
        }
        self.written += n as u64;
        // A full part starts its upload as a task of the runtime.
        let _in_runtime = rt.enter();
        upload.write(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl NewFile for Upload {
    fn commit(mut self: Box<Self>) -> std::result::Result<(), CommitFailed> {
        let failed = |e: io::Error| CommitFailed {
            error: Error::io("completing the upload of", &self.location, e),
            in_place: false,
        };
        let upload = self
            .upload
            .take()
            .ok_or_else(|| failed(io::Error::other("the upload has failed")))?;
        let rt = runtime().map_err(failed)?;
        // `finish` aborts the upload itself when a part or the completion fails.
        rt.block_on(upload.finish()).map(|_| ()).map_err(|e| {
            // A completion whose answer was lost may have completed: unless
            // the store says there is no object at the key, take the file
            // as in place, so that nothing it may refer to is undone.
            let mut failed = failed(io::Error::other(e));
            failed.in_place = !matches!(head(&self.store, &self.key), Ok(false));
            failed
        })
    }
}

impl Drop for Upload {
    /// Uncommitted: the parts sent so far are discarded (an upload never
    /// completed is never an object; this frees the store's parts too).
    fn drop(&mut self) {
        if let (Some(upload), Ok(rt)) = (self.upload.take(), runtime()) {
            let _ = rt.block_on(upload.abort());
        }
    }
}

/// Whether the object at `key` holds exactly `bytes` (`false` when it
/// cannot be read).
fn holds(rt: &tokio::runtime::Runtime, store: &dyn ObjectStore, key: &Path, bytes: &[u8]) -> bool {
    rt.block_on(async { store.get(key).await?.bytes().await })
        .is_ok_and(|got| got.as_ref() == bytes)
}

/// Whether a conditional put failed because the object is not the version
/// it named (or, for a put that creates, because one is there now).
fn is_precondition(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }
    )
}

/// Whether there is an object at `key`: `Ok(false)` only when the store
/// says there is none.
fn head(store: &Arc<dyn ObjectStore>, key: &Path) -> io::Result<bool> {
    match runtime()?.block_on(store.head(key)) {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(io::Error::other(e)),
    }
}
