//! `hurray inspect`, `validate` and `convert` on `s3://` URLs, against a
//! real S3-compatible server (s3s-fs on 127.0.0.1), credentials and endpoint
//! from the environment as the AWS tools read them. Built with the CLI's
//! `remote` feature (`cargo xtask test` turns it on).
#![cfg(feature = "remote")]

use hurray_s3_test_server::Server;
use std::process::{Command, Output};

fn hurray(server: &Server, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hurray"));
    c.args(args);
    for (k, v) in server.env() {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn local(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn setup() -> (tempfile::TempDir, Server, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path().join("s3")).unwrap();
    let bucket = server.bucket("models").unwrap();
    let example = bucket.join("example.hurray");
    local(&["example", example.to_str().unwrap()]);
    (dir, server, example)
}

#[test]
fn inspect_reads_two_ranges_and_prints_what_the_local_file_prints() {
    let (_dir, server, example) = setup();
    let path = example.to_str().unwrap();
    let url = "s3://models/example.hurray";
    server.take_requests();
    let remote = ok(&hurray(&server, &["inspect", url]));
    let requests = server.take_requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests.iter().all(|r| r.method == "GET"));
    assert_eq!(
        remote.replace(url, "FILE"),
        local(&["inspect", path]).replace(path, "FILE")
    );
    assert_eq!(
        ok(&hurray(&server, &["inspect", "--json", url])),
        local(&["inspect", "--json", path])
    );
}

#[test]
fn cat_reads_the_header_and_one_tensor() {
    let (_dir, server, example) = setup();
    let file = hurray::File::open(&example).unwrap();
    let name = file
        .tensors()
        .find(|t| t.layout() == hurray::Layout::Dense && t.dims().len() == 2 && t.byte_length() > 0)
        .unwrap()
        .name()
        .to_owned();
    let spec = format!("{name}[1:, ::2]");
    server.take_requests();
    let remote = ok(&hurray(
        &server,
        &["cat", "s3://models/example.hurray", &spec],
    ));
    assert_eq!(server.take_requests().len(), 3);
    assert_eq!(remote, local(&["cat", example.to_str().unwrap(), &spec]));
}

#[test]
fn validate_and_convert_read_the_object() {
    let (dir, server, example) = setup();
    let url = "s3://models/example.hurray";
    let text = ok(&hurray(&server, &["validate", "--checksums", url]));
    assert!(text.starts_with(&format!("{url}: ok (")), "{text}");

    let copied = dir.path().join("copy.hurray");
    ok(&hurray(
        &server,
        &["convert", url, copied.to_str().unwrap()],
    ));
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&example).unwrap()
    );

    // A corrupt byte in a buffer: the checksums say which.
    let mut bytes = std::fs::read(&example).unwrap();
    let file = hurray::File::open(&example).unwrap();
    let t = file.tensors().find(|t| t.byte_length() > 0).unwrap();
    let (offset, _) = t
        .buffers()
        .first()
        .map(|(r, _)| t.buffer_range(*r).unwrap())
        .unwrap();
    bytes[offset as usize] ^= 0xff;
    std::fs::write(example.with_file_name("corrupt.hurray"), &bytes).unwrap();
    let out = hurray(
        &server,
        &["validate", "--checksums", "s3://models/corrupt.hurray"],
    );
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(t.name()) && text.contains("checksum"),
        "{text}"
    );
}

#[test]
fn a_missing_object_or_wrong_credentials_fail_naming_the_url() {
    let (_dir, server, _) = setup();
    let out = hurray(&server, &["inspect", "s3://models/missing.hurray"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s3://models/missing.hurray"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(["inspect", "s3://models/example.hurray"])
        .envs(server.env())
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s3://models/example.hurray"), "{err}");
}

#[test]
fn a_sharded_checkpoint_in_the_bucket_validates_and_converts() {
    let (dir, server, example) = setup();
    let ckpt = example.with_file_name("ckpt");
    // A one-member checkpoint next to the example.
    std::fs::create_dir_all(&ckpt).unwrap();
    let values: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let mut sharded = hurray::ShardedWriter::create(ckpt.join("checkpoint.hurray")).unwrap();
    sharded.start_member("rank-00000.hurray").unwrap();
    sharded
        .add_tensor(
            &hurray::TensorDescriptor::new(
                "w",
                hurray::ElementType::Float32,
                hurray::shape(&[3, 4]),
            ),
            &[hurray::as_bytes(&values)],
        )
        .unwrap();
    sharded.finish().unwrap();
    let url = "s3://models/ckpt/checkpoint.hurray";
    let text = ok(&hurray(&server, &["validate", "--checksums", url]));
    assert!(text.starts_with(&format!("{url}: ok")), "{text}");
    let inspected = ok(&hurray(&server, &["inspect", url]));
    assert!(inspected.contains("rank-00000.hurray"), "{inspected}");
    // To transformers' sharded layout, and back to a Hurray checkpoint, locally.
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    let out = dir.path().join("out/model.safetensors.index.json");
    ok(&hurray(&server, &["convert", url, out.to_str().unwrap()]));
    let back = dir.path().join("back.hurray");
    local(&["convert", out.to_str().unwrap(), back.to_str().unwrap()]);
    let back = hurray::ShardedFile::open(&back).unwrap();
    assert_eq!(back.assemble("w").unwrap().bytes, hurray::as_bytes(&values));
}
