//! Writing to a real S3-compatible server (s3s-fs on 127.0.0.1): a file as
//! one multipart upload, a sharded checkpoint whose members and index are
//! objects, the index last; a save that fails or is dropped leaves no
//! object behind, and the checkpoint it would have replaced whole.

use hurray::sharded::{AdoptedChunk, Crc32cWriter, WrittenMember};
use hurray::{ElementType, Error, TensorDescriptor, Writer, atomic::Durability, shape};
use hurray_s3_test_server::{Request, Server};
use std::io::Write;
use std::path::Path;

struct S3 {
    server: Server,
    options: Vec<(&'static str, String)>,
}

impl S3 {
    fn start(dir: &Path) -> S3 {
        let server = Server::start(dir).unwrap();
        server.bucket("ckpt").unwrap();
        let options = server.options();
        S3 { server, options }
    }

    fn options(&self) -> Vec<(&str, &str)> {
        self.options.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    /// The object `key` of bucket `ckpt` as the server stores it (a file).
    fn object(&self, key: &str) -> std::path::PathBuf {
        self.server.root().join("ckpt").join(key)
    }
}

/// `n` f32 values that differ from tensor to tensor.
fn values(seed: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| (seed * 1_000_003 + i) as f32).collect()
}

fn f32_tensor(name: &str, dims: &[u64]) -> TensorDescriptor {
    TensorDescriptor::new(name, ElementType::Float32, shape(dims))
}

fn uploads(requests: &[Request]) -> usize {
    requests.iter().filter(|r| r.method == "PUT").count()
}

#[test]
fn a_file_is_uploaded_in_parts_and_appears_only_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3::start(dir.path());
    let url = "s3://ckpt/one/model.hurray";
    // 40 MiB of data: three parts of `limits::UPLOAD_PART_BYTES`.
    let big = values(1, 10 << 20);
    let small = values(2, 7);
    let file = hurray_object_store::create(url, &s3.options(), Durability::Synced).unwrap();
    let mut w = Writer::to_file_at(Crc32cWriter::new(file), Path::new(url)).unwrap();
    w.add_tensor(
        &f32_tensor("big", &[10, 1 << 20]),
        &[hurray::as_bytes(&big)],
    )
    .unwrap();
    w.add_tensor(&f32_tensor("small", &[7]), &[hurray::as_bytes(&small)])
        .unwrap();
    let (len, sink) = w.finish_into_inner().unwrap();
    let (file, written) = sink.finish();
    assert!(
        !s3.object("one/model.hurray").exists(),
        "nothing is visible before the commit"
    );
    file.commit().unwrap();
    // One POST to start the upload, a PUT per part, one POST to complete it.
    let requests = s3.server.take_requests();
    assert_eq!(uploads(&requests), 3, "{requests:?}");
    assert_eq!(
        requests.iter().filter(|r| r.method == "POST").count(),
        2,
        "{requests:?}"
    );

    let bytes = std::fs::read(s3.object("one/model.hurray")).unwrap();
    assert_eq!(written.size, len);
    assert_eq!(bytes.len() as u64, len);
    assert_eq!(
        written.crc32c,
        hurray::integrity::ChecksumAlgorithm::Crc32c.of(&bytes)
    );
    let f = hurray_object_store::open_with_options(url, &s3.options()).unwrap();
    assert_eq!(
        f.tensor("big").unwrap().as_slice::<f32>().unwrap(),
        &big[..]
    );
    assert_eq!(
        f.tensor("small").unwrap().as_slice::<f32>().unwrap(),
        &small[..]
    );
    hurray::File::open(s3.object("one/model.hurray"))
        .unwrap()
        .verify_checksums()
        .unwrap();
}

#[test]
fn an_upload_dropped_or_failed_leaves_no_object() {
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3::start(dir.path());
    let url = "s3://ckpt/dropped.hurray";
    let mut file = hurray_object_store::create(url, &s3.options(), Durability::Synced).unwrap();
    file.write_all(&vec![7u8; 20 << 20]).unwrap();
    drop(file);
    assert!(!s3.object("dropped.hurray").exists());
    let e = hurray_object_store::open_with_options(url, &s3.options()).unwrap_err();
    assert!(
        matches!(&e, Error::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound),
        "{e}"
    );

    // A store that cannot be reached: refused when the upload starts,
    // naming the URL (no retries asked for).
    let closed = [
        ("aws_endpoint", "http://127.0.0.1:9"),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "k"),
        ("aws_secret_access_key", "s"),
        ("aws_region", "us-east-1"),
        ("max_retries", "0"),
    ];
    let e = hurray_object_store::create("s3://ckpt/x.hurray", &closed, Durability::Synced)
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("s3://ckpt/x.hurray"), "{e}");
    // A URL scheme that takes no uploads is refused, not taken for a path.
    let e = hurray_object_store::create("http://127.0.0.1:9/x.hurray", &[], Durability::Synced)
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("http://127.0.0.1:9/x.hurray"), "{e}");
    assert!(!Path::new("http:").exists());
}

/// A [6, 4] tensor in two row chunks written by two "ranks" as whole
/// files, adopted by the coordinator with what each rank reported.
fn save_by_ranks(s3: &S3, index_url: &str, seed: usize) -> Vec<f32> {
    let full = values(seed, 24);
    let mut w = hurray_object_store::sharded_writer(index_url, &s3.options()).unwrap();
    let mut written = Vec::new();
    for rank in 0..2u64 {
        let member = w.member_path(&format!("rank-{rank:05}.hurray")).unwrap();
        let folder = index_url.rsplit_once('/').unwrap().0;
        let url = format!("{folder}/{member}");
        let file = hurray_object_store::create(&url, &s3.options(), Durability::Synced).unwrap();
        let mut rw = Writer::to_file_at(Crc32cWriter::new(file), Path::new(&url)).unwrap();
        let rows = &full[rank as usize * 12..rank as usize * 12 + 12];
        rw.add_tensor(&f32_tensor("w@rows", &[3, 4]), &[hurray::as_bytes(rows)])
            .unwrap();
        let (_, sink) = rw.finish_into_inner().unwrap();
        let (file, report) = sink.finish();
        file.commit().unwrap();
        written.push((member, rank, report));
    }
    for (member, rank, report) in written {
        let chunk = AdoptedChunk {
            tensor: "w@rows".into(),
            name: "w".into(),
            shape: vec![6, 4],
            offset: vec![rank * 3, 0],
        };
        w.adopt_written_member(&member, &[chunk], report).unwrap();
    }
    w.set_metadata("step", seed.to_string());
    w.finish().unwrap();
    full
}

#[test]
fn a_checkpoint_of_objects_is_written_index_last_and_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3::start(dir.path());
    // A folder name with a character a URL keeps and a key encoding would
    // not: writers and readers must agree on the key.
    let index_url = "s3://ckpt/run~1/step/checkpoint.hurray";
    let first = save_by_ranks(&s3, index_url, 1);
    let read = |url: &str| {
        let f = hurray_object_store::open_sharded(url, &s3.options()).unwrap();
        let bytes = f.assemble("w").unwrap().bytes;
        (f.metadata().get("step").cloned(), bytes)
    };
    assert_eq!(
        read(index_url),
        (Some("1".into()), hurray::as_bytes(&first).to_vec())
    );
    // The server's files are the objects: every checksum holds.
    let local = hurray::ShardedFile::open(s3.object("run~1/step/checkpoint.hurray")).unwrap();
    assert_eq!(local.checksum_report().into_result().unwrap(), 2);

    // A second save to the same place: members beside the first ones, the
    // first ones removed once the new index is in place.
    let second = save_by_ranks(&s3, index_url, 2);
    assert_eq!(
        read(index_url),
        (Some("2".into()), hurray::as_bytes(&second).to_vec())
    );
    let local = hurray::ShardedFile::open(s3.object("run~1/step/checkpoint.hurray")).unwrap();
    let members: Vec<&str> = local.members().iter().map(|m| m.path.as_str()).collect();
    assert_eq!(members, ["rank-00000.1.hurray", "rank-00001.1.hurray"]);
    assert!(!s3.object("run~1/step/rank-00000.hurray").exists());
    local.checksum_report().into_result().unwrap();

    // A save that fails half way (a rank's report does not match what it
    // wrote): the index stays the second save's, every member it lists is
    // there, and the failed save's members are gone.
    let mut w = hurray_object_store::sharded_writer(index_url, &s3.options()).unwrap();
    let member = w.member_path("rank-00000.hurray").unwrap();
    assert_eq!(member, "rank-00000.hurray");
    let url = format!("s3://ckpt/run~1/step/{member}");
    let file = hurray_object_store::create(&url, &s3.options(), Durability::Synced).unwrap();
    let mut rw = Writer::to_file_at(Crc32cWriter::new(file), Path::new(&url)).unwrap();
    rw.add_tensor(&f32_tensor("b", &[2]), &[hurray::as_bytes(&[1f32, 2.0])])
        .unwrap();
    let (_, sink) = rw.finish_into_inner().unwrap();
    let (file, report) = sink.finish();
    file.commit().unwrap();
    let lie = WrittenMember {
        size: report.size + 1,
        ..report
    };
    let e = w.adopt_written_member(&member, &[], lie).unwrap_err();
    assert!(
        matches!(&e, Error::MemberMismatch { field: "size", .. }),
        "{e}"
    );
    drop(w);
    assert!(!s3.object("run~1/step/rank-00000.hurray").exists());
    assert_eq!(
        read(index_url),
        (Some("2".into()), hurray::as_bytes(&second).to_vec())
    );
}

#[test]
fn a_call_from_inside_an_async_runtime_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3::start(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt
        .block_on(async {
            hurray_object_store::create("s3://ckpt/x.hurray", &s3.options(), Durability::Synced)
                .map(|_| ())
        })
        .unwrap_err();
    assert!(e.to_string().contains("outside of an async runtime"), "{e}");
    let e = rt
        .block_on(async {
            hurray_object_store::open_with_options("s3://ckpt/x.hurray", &s3.options())
        })
        .unwrap_err();
    assert!(e.to_string().contains("outside of an async runtime"), "{e}");
}
