//! Two saves at once to one folder of a real S3-compatible server (s3s-fs
//! on 127.0.0.1, conditional puts as S3 makes them): each round ends as
//! one save's checkpoint, whole, and no object is left that its index does
//! not list. A reader of a checkpoint that another save replaces reads its
//! own values or gets a clear error, never the other save's.
//!
//! The savers are this test binary run again as child processes (selected
//! by an environment variable), so that the two saves are two processes,
//! each with its own connections, as two jobs' would be.

use hurray::{ElementType, Error, ShardedFile, TensorDescriptor, shape};
use hurray_s3_test_server::Server;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// In a child: the index URL, the generation to save, and the options
/// (`key=value` lines).
const CHILD_URL: &str = "HURRAY_S3_SAVER_URL";
const CHILD_GENERATION: &str = "HURRAY_S3_SAVER_GENERATION";
const CHILD_OPTIONS: &str = "HURRAY_S3_SAVER_OPTIONS";
const CHILD_GO: &str = "HURRAY_S3_SAVER_GO";

const INDEX_URL: &str = "s3://ckpt/run/model.hurray";
const TENSORS: usize = 8;
const TENSOR_BYTES: usize = 256 << 10;

/// Saves generation `generation` at `url`: `TENSORS` tensors, a member
/// each, every byte the generation's.
fn save(url: &str, options: &[(&str, &str)], generation: u8) -> hurray::Result<()> {
    let mut w = hurray_object_store::sharded_writer(url, options)?;
    w.set_max_shard_size(TENSOR_BYTES as u64);
    w.set_metadata("generation", generation.to_string());
    let data = vec![generation; TENSOR_BYTES];
    for t in 0..TENSORS {
        let desc = TensorDescriptor::new(
            format!("t{t}"),
            ElementType::UInt8,
            shape(&[TENSOR_BYTES as u64]),
        );
        w.add_tensor(&desc, &[&data])?;
    }
    w.finish().map(drop)
}

/// The generation the checkpoint at `url` holds, read through the store:
/// every member's CRC-32C checked, every byte of every tensor that
/// generation's.
fn generation_at(url: &str, options: &[(&str, &str)]) -> hurray::Result<u8> {
    let c = hurray_object_store::open_sharded(url, options)?;
    c.verify_members()?;
    let generation: u8 = c.metadata()["generation"].parse().unwrap();
    for t in c.tensors() {
        let data = c.assemble(&t.name)?;
        assert!(
            data.bytes.iter().all(|&b| b == generation),
            "{}: a byte of another save in generation {generation}",
            t.name
        );
    }
    Ok(generation)
}

/// The objects under the checkpoint's folder, as the server stores them.
fn objects(folder: &Path) -> BTreeSet<String> {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// The tests' S3 server, with bucket `ckpt` holding generation 1 at
/// `INDEX_URL`, and its options.
fn server_with_a_checkpoint(dir: &Path) -> (Server, Vec<(&'static str, String)>) {
    let server = Server::start(dir.join("s3")).unwrap();
    server.bucket("ckpt").unwrap();
    let options = server.options();
    save(INDEX_URL, &borrowed(&options), 1).unwrap();
    (server, options)
}

fn borrowed<'a>(options: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    options.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn two_processes_saving_one_folder_leave_one_whole_save() {
    let test = "two_processes_saving_one_folder_leave_one_whole_save";
    if let Ok(url) = std::env::var(CHILD_URL) {
        let lines = std::env::var(CHILD_OPTIONS).unwrap();
        let options: Vec<(&str, &str)> =
            lines.lines().map(|l| l.split_once('=').unwrap()).collect();
        let generation: u8 = std::env::var(CHILD_GENERATION).unwrap().parse().unwrap();
        let go = std::env::var(CHILD_GO).unwrap();
        while !Path::new(&go).exists() {
            std::thread::sleep(Duration::from_micros(200));
        }
        return save(&url, &options, generation).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let (server, owned) = server_with_a_checkpoint(dir.path());
    let options = borrowed(&owned);
    let lines: String = owned.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let folder = server.root().join("ckpt/run");
    let mut won = [0; 2];
    for round in 1..=10u8 {
        let go = dir.path().join(format!("go-{round}"));
        // Who starts first alternates from round to round.
        let generations = if round % 2 == 0 {
            [2 * round, 2 * round + 1]
        } else {
            [2 * round + 1, 2 * round]
        };
        let mut savers: Vec<_> = generations
            .iter()
            .map(|g| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", test, "--nocapture", "--test-threads=1"])
                    .env(CHILD_URL, INDEX_URL)
                    .env(CHILD_GENERATION, g.to_string())
                    .env(CHILD_OPTIONS, &lines)
                    .env(CHILD_GO, &go)
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::fs::write(&go, b"").unwrap();
        for s in &mut savers {
            assert!(s.wait().unwrap().success(), "round {round}: a save failed");
        }
        let g = generation_at(INDEX_URL, &options)
            .unwrap_or_else(|e| panic!("round {round}: the checkpoint does not read: {e}"));
        let winner = generations
            .iter()
            .position(|&w| w == g)
            .unwrap_or_else(|| panic!("round {round}: generation {g}, neither save's"));
        won[winner] += 1;
        // The server's files are the objects: the index and its members,
        // nothing else (no placeholder, no other save's member).
        let c = ShardedFile::open(folder.join("model.hurray")).unwrap();
        assert_eq!(c.members().len(), TENSORS);
        let mut listed: BTreeSet<String> = c.members().iter().map(|m| m.path.clone()).collect();
        listed.insert("model.hurray".into());
        assert_eq!(
            objects(&folder),
            listed,
            "round {round}: objects no index lists"
        );
    }
    eprintln!("10 rounds of two saves at once: the first started won {won:?} times");
}

/// A reader opened a checkpoint and read one member; two saves replace it
/// (the second one's members take the first checkpoint's names again).
/// The member it had opened reads its old values or fails (each read asks
/// for the version it opened); the member it had not opened fails, first
/// because it is gone, then because the object now at its name is another
/// save's member; never a value of another save.
#[test]
fn a_reader_of_a_replaced_checkpoint_never_reads_another_saves_member() {
    let dir = tempfile::tempdir().unwrap();
    let (server, owned) = server_with_a_checkpoint(dir.path());
    let options = borrowed(&owned);
    let reader = hurray_object_store::open_sharded(INDEX_URL, &options).unwrap();
    let first = &reader.members()[0].path;
    let second = reader.members()[1].path.clone();
    let t0 = reader.tensor("t0").unwrap();
    assert!(reader.assemble("t0").unwrap().bytes.iter().all(|&b| b == 1));
    save(INDEX_URL, &options, 2).unwrap();
    let folder = server.root().join("ckpt/run");
    assert!(!folder.join(first).exists() && !folder.join(&second).exists());
    match reader.assemble("t1") {
        Err(Error::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {}
        other => panic!("a member removed by the save that replaced it: {other:?}"),
    }
    save(INDEX_URL, &options, 3).unwrap();
    // The third save took the first one's names back, the same sizes.
    assert!(folder.join(first).exists() && folder.join(&second).exists());
    match reader.assemble("t1") {
        Err(Error::MemberMismatch {
            field: "file_id",
            member,
            ..
        }) => assert_eq!(member, second),
        other => panic!("another save's member at a listed name: {other:?}"),
    }
    match reader.assemble(&t0.name) {
        Ok(data) => assert!(data.bytes.iter().all(|&b| b == 1)),
        Err(e) => assert!(
            e.to_string().contains(first.as_str()) || matches!(e, Error::Io { .. }),
            "{e}"
        ),
    }
    assert_eq!(generation_at(INDEX_URL, &options).unwrap(), 3);
}
