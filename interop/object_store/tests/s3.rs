//! Hurray files in a real S3-compatible server (s3s-fs on 127.0.0.1, signed
//! requests): opening costs two range GETs, tensors read by range GETs
//! equal the local file's, and what goes wrong is an error naming the URL.

use hurray::{ElementType, File, TensorDescriptor, Writer, shape, slice::SliceRange};
use hurray_s3_test_server::{Request, Server};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options(server: &Server) -> Vec<(&'static str, String)> {
    server.options()
}

fn open(server: &Server, url: &str) -> hurray::Result<hurray::File> {
    let options = options(server);
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
    hurray_object_store::open_with_options(url, &options)
}

fn gets(requests: &[Request]) -> Vec<&Request> {
    requests.iter().filter(|r| r.method == "GET").collect()
}

/// `tensors` tensors of `len` f32 each.
fn write_sample(path: &Path, tensors: usize, len: usize) {
    let mut w = Writer::create(path).unwrap();
    for i in 0..tensors {
        let data: Vec<f32> = (0..len).map(|j| (i * 1000 + j) as f32).collect();
        w.add_tensor(
            &TensorDescriptor::new(
                format!("blocks.{i:05}.attention.query_key_value.weight"),
                ElementType::Float32,
                shape(&[len as u64 / 4, 4]),
            ),
            &[hurray::as_bytes(&data)],
        )
        .unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn every_golden_file_reads_from_s3_as_from_disk_and_opening_is_two_gets() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let bucket = server.bucket("golden").unwrap();
    let mut files = Vec::new();
    for version in ["v1.0", "v1.1", "v1.2", "v1.3"] {
        for entry in std::fs::read_dir(root().join("tests/golden").join(version)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "hurray") {
                let key = format!("{version}-{}", path.file_name().unwrap().to_str().unwrap());
                std::fs::copy(&path, bucket.join(&key)).unwrap();
                files.push((path, key));
            }
        }
    }
    assert!(files.len() >= 10, "{}", files.len());
    for (path, key) in files {
        let local = File::open(&path).unwrap();
        let url = format!("s3://golden/{key}");
        server.take_requests();
        let remote = open(&server, &url).unwrap();
        let requests = server.take_requests();
        // The prefix and the suffix, together; nothing else (no HEAD).
        assert_eq!(requests.len(), 2, "{url}: {requests:?}");
        assert_eq!(gets(&requests).len(), 2, "{url}: {requests:?}");
        let ranges: Vec<_> = requests.iter().filter_map(|r| r.range.clone()).collect();
        assert!(ranges.contains(&"bytes=0-63".to_owned()), "{ranges:?}");
        assert!(
            ranges.contains(&format!("bytes=-{}", hurray::source::OPEN_SUFFIX)),
            "{ranges:?}"
        );
        assert_eq!(remote.location(), url);
        assert_eq!(remote.version(), local.reader().version());
        assert_eq!(remote.file_len(), local.file_len());
        let descriptors: Vec<_> = local.tensors().map(|t| t.descriptor()).collect();
        assert_eq!(
            remote.tensors().map(|t| t.descriptor()).collect::<Vec<_>>(),
            descriptors
        );
        if remote.is_shard_index() {
            continue;
        }
        let fetched = remote.fetch_all().unwrap();
        let requests = server.take_requests();
        // Small files: every tensor in one coalesced GET (none when no
        // tensor has data).
        let with_data = local
            .tensors()
            .any(|t| t.buffers().iter().any(|(_, b)| !b.is_empty()));
        assert_eq!(
            gets(&requests).len(),
            usize::from(with_data),
            "{url}: {requests:?}"
        );
        for (f, t) in fetched.iter().zip(local.tensors()) {
            assert_eq!(f.tensor().buffers(), t.buffers(), "{url}: {}", t.name());
            assert_eq!(
                f.tensor().verify_checksum().map_err(|e| e.to_string()),
                t.verify_checksum().map_err(|e| e.to_string())
            );
        }
    }
}

#[test]
fn a_tensor_larger_than_a_piece_is_fetched_by_several_gets() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let path = server.bucket("models").unwrap().join("large.hurray");
    // One tensor of 20 MiB: pieces of 8, 8 and 4 MiB.
    write_sample(&path, 1, 5 << 20);
    let remote = open(&server, "s3://models/large.hurray").unwrap();
    server.take_requests();
    let all = remote.fetch_all().unwrap();
    let requests = server.take_requests();
    let mut ranges: Vec<_> = gets(&requests)
        .iter()
        .filter_map(|r| r.range.clone())
        .collect();
    ranges.sort();
    assert_eq!(ranges.len(), 3, "{ranges:?}");
    let local = File::open(&path).unwrap();
    assert_eq!(
        all[0].tensor().buffers(),
        local.tensors().next().unwrap().buffers()
    );
}

#[test]
fn a_tensor_is_one_get_a_slice_reads_its_tensor_and_neighbours_coalesce_up_to_a_piece() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path().join("s3")).unwrap();
    let bucket = server.bucket("models").unwrap();
    // 40 tensors of 400 KiB: 16 MiB, more than two pieces.
    let path = bucket.join("model.hurray");
    write_sample(&path, 40, 100 * 1024);
    let local = File::open(&path).unwrap();
    let remote = open(&server, "s3://models/model.hurray").unwrap();
    server.take_requests();

    let name = "blocks.00007.attention.query_key_value.weight";
    let one = remote.fetch(name).unwrap();
    assert_eq!(gets(&server.take_requests()).len(), 1);
    let t = one.tensor();
    assert_eq!(
        t.as_slice::<f32>().unwrap(),
        local.tensor(name).unwrap().as_slice::<f32>().unwrap()
    );
    let ranges = [SliceRange::new(3, 9, 2), SliceRange::full(4)];
    let remote_slice = t.read_slice(&ranges).unwrap();
    let local_slice = local.tensor(name).unwrap().read_slice(&ranges).unwrap();
    assert_eq!(remote_slice.bytes, local_slice.bytes);
    assert_eq!(remote_slice.shape, [3, 4]);

    let all = remote.fetch_all().unwrap();
    let requests = server.take_requests();
    // 16 MiB in pieces of at most 8 MiB each.
    let n = gets(&requests).len();
    assert!((2..=4).contains(&n), "{n}: {requests:?}");
    for (f, t) in all.iter().zip(local.tensors()) {
        assert_eq!(f.tensor().buffers(), t.buffers());
    }
}

#[test]
fn a_slice_of_a_file_at_a_url_is_one_get_of_the_bytes_it_covers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let path = server.bucket("models").unwrap().join("wide.hurray");
    // One 20 MiB tensor: 5120 rows of 1024 f32 (4 KiB a row).
    let data: Vec<f32> = (0..5120 * 1024).map(|i| i as f32).collect();
    let mut w = Writer::create(&path).unwrap();
    let desc = TensorDescriptor::new("w", ElementType::Float32, shape(&[5120, 1024]));
    w.add_tensor(&desc, &[hurray::as_bytes(&data)]).unwrap();
    w.finish().unwrap();
    let local = File::open(&path).unwrap();
    let remote = open(&server, "s3://models/wide.hurray").unwrap();
    server.take_requests();
    let cases = [
        // One row: its 4 KiB.
        (vec![SliceRange::index(1000), SliceRange::full(1024)], 4096),
        // Part of a row, every other element: the span it covers.
        (
            vec![SliceRange::index(7), SliceRange::new(10, 20, 2)],
            9 * 4,
        ),
        // Rows 3 to 5: 3 rows.
        (
            vec![SliceRange::new(3, 6, 1), SliceRange::full(1024)],
            3 * 4096,
        ),
    ];
    for (ranges, bytes) in cases {
        let got = remote.read_slice("w", &ranges).unwrap();
        let want = local.tensor("w").unwrap().read_slice(&ranges).unwrap();
        assert_eq!(got.bytes, want.bytes);
        assert_eq!(got.shape, want.shape);
        let requests = server.take_requests();
        let gets = gets(&requests);
        assert_eq!(gets.len(), 1, "{requests:?}");
        let range = gets[0].range.as_deref().unwrap();
        let (from, to) = range
            .strip_prefix("bytes=")
            .and_then(|r| r.split_once('-'))
            .unwrap();
        let len = to.parse::<u64>().unwrap() - from.parse::<u64>().unwrap() + 1;
        assert_eq!(len, bytes, "{range}");
    }
    // An empty slice reads nothing; a tensor once read is sliced in memory.
    let empty = [SliceRange::new(5, 5, 1), SliceRange::full(1024)];
    assert_eq!(remote.read_slice("w", &empty).unwrap().shape, [0, 1024]);
    assert!(server.take_requests().is_empty());
    remote.tensor("w").unwrap();
    server.take_requests();
    let row = [SliceRange::index(1), SliceRange::full(1024)];
    assert_eq!(
        remote.read_slice("w", &row).unwrap().bytes,
        hurray::as_bytes(&data[1024..2048])
    );
    assert!(server.take_requests().is_empty());
}

#[test]
fn a_header_beyond_the_suffix_costs_one_more_get() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let bucket = server.bucket("models").unwrap();
    write_sample(&bucket.join("wide.hurray"), 5000, 4);
    server.take_requests();
    let remote = open(&server, "s3://models/wide.hurray").unwrap();
    assert_eq!(remote.len(), 5000);
    assert_eq!(gets(&server.take_requests()).len(), 3);
}

#[test]
fn what_goes_wrong_is_an_error_naming_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let bucket = server.bucket("models").unwrap();
    let e = open(&server, "s3://models/missing.hurray").unwrap_err();
    assert_eq!(e.kind(), "Io");
    assert!(e.to_string().contains("s3://models/missing.hurray"), "{e}");

    std::fs::write(bucket.join("short.hurray"), b"not a hurray file").unwrap();
    let e = open(&server, "s3://models/short.hurray").unwrap_err();
    assert_eq!(e.kind(), "TooShort", "{e}");
    // An empty object has no range to GET: still a file too short.
    std::fs::write(bucket.join("empty.hurray"), b"").unwrap();
    let e = open(&server, "s3://models/empty.hurray").unwrap_err();
    assert_eq!(e.kind(), "TooShort", "{e}");
    // An option the store does not know is refused, not dropped.
    let e = hurray_object_store::open_with_options(
        "s3://models/short.hurray",
        &[("aws_endpiont", "x")],
    )
    .unwrap_err();
    assert!(e.to_string().contains("aws_endpiont"), "{e}");

    let path = bucket.join("model.hurray");
    write_sample(&path, 3, 1024);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(bucket.join("bad-magic.hurray"), &bytes).unwrap();
    let e = open(&server, "s3://models/bad-magic.hurray").unwrap_err();
    assert_eq!(e.kind(), "BadMagic", "{e}");

    // Wrong credentials: the server refuses the signature.
    let e = hurray_object_store::open_with_options(
        "s3://models/model.hurray",
        &[
            ("aws_endpoint", server.endpoint()),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "someone"),
            ("aws_secret_access_key", "else"),
            ("aws_region", "us-east-1"),
        ],
    )
    .unwrap_err();
    assert_eq!(e.kind(), "Io", "{e}");
    assert!(e.to_string().contains("s3://models/model.hurray"), "{e}");

    // Replaced after opening: later reads are refused, never mixed.
    let remote = open(&server, "s3://models/model.hurray").unwrap();
    write_sample(&path, 3, 2048);
    let e = remote.fetch_all().unwrap_err();
    assert_eq!(e.kind(), "Io", "{e}");
    assert!(e.to_string().contains("s3://models/model.hurray"), "{e}");
    assert!(e.to_string().contains("changed since it was opened"), "{e}");
}

#[test]
fn a_sharded_checkpoint_whose_members_are_objects() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let ckpt = server.bucket("models").unwrap().join("ckpt");
    std::fs::create_dir_all(&ckpt).unwrap();
    let index = ckpt.join("checkpoint.hurray");
    // A [6, 4] tensor in two row chunks, one member each, and a whole one.
    let full: Vec<f32> = (0..24).map(|i| i as f32 * 0.25).collect();
    let mut w = hurray::ShardedWriter::create(&index).unwrap();
    for (rank, rows) in [(0u64, 0..3usize), (1, 3..6)] {
        w.start_member(&format!("rank-{rank:05}.hurray")).unwrap();
        let chunk = &full[rows.start * 4..rows.end * 4];
        w.add_chunk(
            &[6, 4],
            &[rows.start as u64, 0],
            &TensorDescriptor::new("w", ElementType::Float32, shape(&[3, 4])),
            &[hurray::as_bytes(chunk)],
        )
        .unwrap();
        if rank == 1 {
            let bias = [1.0f32, 2.0, 3.0, 4.0];
            w.add_tensor(
                &TensorDescriptor::new("b", ElementType::Float32, shape(&[4])),
                &[hurray::as_bytes(&bias)],
            )
            .unwrap();
        }
    }
    w.finish().unwrap();

    let options = options(&server);
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let remote =
        hurray_object_store::open_sharded("s3://models/ckpt/checkpoint.hurray", &options).unwrap();
    let local = hurray::ShardedFile::open(&index).unwrap();
    assert_eq!(remote.members(), local.members());
    server.take_requests();
    // One tensor of a member: its header (2 GETs) and the tensor (1), never
    // the whole member.
    assert_eq!(
        remote.assemble("b").unwrap().bytes,
        hurray::as_bytes(&[1.0f32, 2.0, 3.0, 4.0])
    );
    let member = remote.members()[1].clone();
    let requests = server.take_requests();
    assert!(
        requests.iter().all(|r| r.path.ends_with(&member.path)),
        "{requests:?}"
    );
    assert_eq!(gets(&requests).len(), 3, "{requests:?}");
    let whole = format!("bytes=0-{}", member.size - 1);
    assert!(
        requests
            .iter()
            .all(|r| r.range.as_deref() != Some(whole.as_str())),
        "{requests:?}"
    );
    // An export of it holds its member, the tensor read and kept, and
    // costs no further GET.
    let b = remote.tensor("b").unwrap();
    let holder = remote.piece_file(b, &b.pieces[0]).unwrap();
    assert_eq!(holder.len(), 2);
    assert_eq!(
        holder.tensor("b").unwrap().as_slice::<f32>().unwrap(),
        [1.0, 2.0, 3.0, 4.0]
    );
    assert!(server.take_requests().is_empty());
    let w = remote.assemble("w").unwrap();
    assert_eq!(w.bytes, hurray::as_bytes(&full));
    let touched: Vec<String> = server.take_requests().into_iter().map(|r| r.path).collect();
    assert!(
        touched.iter().any(|p| p.ends_with("rank-00000.hurray")),
        "{touched:?}"
    );
    let ranges = [SliceRange::new(2, 5, 1), SliceRange::new(1, 4, 2)];
    assert_eq!(
        remote.slice("w", &ranges).unwrap().bytes,
        local.slice("w", &ranges).unwrap().bytes
    );
    assert_eq!(
        remote.get("b").unwrap().as_slice::<f32>().unwrap(),
        [1.0, 2.0, 3.0, 4.0]
    );
    remote.verify_members().unwrap();

    // A member path a URL would decode is refused, never fetched elsewhere.
    let odd = ckpt.join("odd");
    std::fs::create_dir_all(&odd).unwrap();
    let mut w = hurray::ShardedWriter::create(odd.join("checkpoint.hurray")).unwrap();
    w.start_member("%2e%2e.hurray").unwrap();
    w.add_tensor(
        &TensorDescriptor::new("x", ElementType::Float32, shape(&[1])),
        &[hurray::as_bytes(&[1.0f32])],
    )
    .unwrap();
    w.finish().unwrap();
    let odd = hurray_object_store::open_sharded("s3://models/ckpt/odd/checkpoint.hurray", &options)
        .unwrap();
    let e = odd.assemble("x").unwrap_err();
    assert!(e.to_string().contains("may not hold %"), "{e}");

    // A member replaced by another Hurray file: the index's size catches it.
    std::fs::copy(
        ckpt.join("rank-00000.hurray"),
        ckpt.join("rank-00001.hurray"),
    )
    .unwrap();
    let stale =
        hurray_object_store::open_sharded("s3://models/ckpt/checkpoint.hurray", &options).unwrap();
    let e = stale.assemble("b").unwrap_err();
    assert_eq!(e.kind(), "MemberMismatch", "{e}");
}
