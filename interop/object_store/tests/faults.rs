//! Reading a checkpoint from S3 through a network that fails: a proxy in
//! front of the tests' S3 server resets connections mid-body, answers
//! `503 SlowDown`, cuts bodies short and stalls for 2 s. Every tensor reads
//! exactly, each fault costs exactly one more GET, and a store that never
//! recovers fails after the configured retries with an error naming the URL.

use hurray::{ElementType, ShardedFile, ShardedWriter, TensorDescriptor, shape};
use hurray_s3_test_server::{FaultProxy, Faults, Server};
use std::time::{Duration, Instant};

/// A checkpoint of 40 tensors (64 KiB of f32 each, every one different) in
/// four members, in bucket `models` under `ckpt/`.
fn checkpoint(server: &Server) -> std::path::PathBuf {
    let ckpt = server.bucket("models").unwrap().join("ckpt");
    std::fs::create_dir_all(&ckpt).unwrap();
    let index = ckpt.join("model.hurray");
    let mut w = ShardedWriter::create(&index).unwrap();
    w.set_max_shard_size(10 << 16);
    for i in 0..40u32 {
        let data: Vec<f32> = (0..1u32 << 14).map(|j| (i * 100_000 + j) as f32).collect();
        let desc = TensorDescriptor::new(
            format!("layers.{i:02}.weight"),
            ElementType::Float32,
            shape(&[128, 128]),
        );
        w.add_tensor(&desc, &[hurray::as_bytes(&data)]).unwrap();
    }
    w.finish().unwrap();
    index
}

fn open(url: &str, options: &[(&'static str, String)]) -> hurray::Result<ShardedFile> {
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
    hurray_object_store::open_sharded(url, &options)
}

/// Every tensor of `remote`, each compared with `local`'s bytes.
fn read_all_and_compare(remote: &ShardedFile, local: &ShardedFile) {
    for t in local.tensors() {
        let got = remote.assemble(&t.name).unwrap();
        let want = local.assemble(&t.name).unwrap();
        assert!(
            got.bytes == want.bytes,
            "{}: other bytes than the file's",
            t.name
        );
    }
}

const URL: &str = "s3://models/ckpt/model.hurray";

#[test]
fn every_tensor_reads_exactly_through_resets_slow_downs_short_bodies_and_stalls() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    let local = ShardedFile::open(checkpoint(&server)).unwrap();

    // The GETs a clean network takes.
    server.take_requests();
    let clean = open(URL, &server.options()).unwrap();
    read_all_and_compare(&clean, &local);
    clean.verify_members().unwrap();
    let useful = server
        .take_requests()
        .iter()
        .filter(|r| r.method == "GET")
        .count() as u64;

    let proxy = FaultProxy::start(
        server.endpoint(),
        Faults {
            reset_every: 3,
            slow_down_every: 4,
            truncate_every: 5,
            stall_every: 11,
            stall: Duration::from_secs(2),
            always_slow_down: false,
            // Under the 10 retries a read is allowed.
            max_in_a_row: 4,
        },
    )
    .unwrap();
    let remote = open(URL, &server.options_via(proxy.endpoint())).unwrap();
    read_all_and_compare(&remote, &local);
    remote.verify_members().unwrap();
    let seen = proxy.take_counts();
    eprintln!("{seen}; {useful} GETs on a clean network");
    assert!(seen.resets > 0 && seen.slow_downs > 0 && seen.truncations > 0 && seen.stalls > 0);
    // A reset or short body resumes the rest of the range; a 503 asks
    // again; a stall only waits: one more GET per failed one, no more.
    let failed = seen.resets + seen.slow_downs + seen.truncations;
    assert_eq!(seen.gets, useful + failed, "{seen}");
}

#[test]
fn a_store_that_never_recovers_fails_naming_the_url_after_the_retries_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    checkpoint(&server);
    let proxy = FaultProxy::start(
        server.endpoint(),
        Faults {
            reset_every: 0,
            slow_down_every: 0,
            truncate_every: 0,
            stall_every: 0,
            stall: Duration::ZERO,
            always_slow_down: true,
            max_in_a_row: 0,
        },
    )
    .unwrap();
    let mut options = server.options_via(proxy.endpoint());
    options.push(("max_retries", "2".into()));
    let started = Instant::now();
    let e = open(URL, &options).unwrap_err();
    let seen = proxy.take_counts();
    assert!(e.to_string().contains(URL), "{e}");
    assert!(e.to_string().contains("503"), "{e}");
    // Opening issues two GETs (the prefix and the suffix): each is tried
    // three times at most.
    assert!((3..=6).contains(&seen.gets), "{seen}");
    assert!(started.elapsed() < Duration::from_secs(30));

    // The options are checked, never ignored.
    options.pop();
    options.push(("max_retries", "many".into()));
    let e = open(URL, &options).unwrap_err();
    assert!(
        e.to_string()
            .contains("\"max_retries\": \"many\" is not a whole number"),
        "{e}"
    );
}
