//! `hurray sign` and `hurray verify` with keys OpenSSL writes: an untouched
//! file, checkpoint and object verify; a changed one exits 1 naming what
//! changed.

use hurray::{ElementType, ShardedWriter, TensorDescriptor, integrity::DigestAlgorithm, shape};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hurray(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(args: &[&str]) -> String {
    let out = hurray(args);
    assert!(out.status.success(), "hurray {args:?}: {}", text(&out));
    text(&out)
}

fn fails(args: &[&str]) -> String {
    let out = hurray(args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "hurray {args:?}: {}",
        text(&out)
    );
    text(&out)
}

/// An ed25519 key pair written by OpenSSL: (private, public).
fn keys(dir: &Path, name: &str) -> (String, String) {
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    for args in [
        vec![
            "genpkey",
            "-algorithm",
            "ed25519",
            "-out",
            private.to_str().unwrap(),
        ],
        vec![
            "pkey",
            "-in",
            private.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ],
    ] {
        assert!(
            Command::new("openssl")
                .args(&args)
                .status()
                .unwrap()
                .success()
        );
    }
    (s(&private), s(&public))
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn checkpoint(index: &Path, seed: u32) {
    let mut w = ShardedWriter::create(index).unwrap();
    w.set_digests(Some(DigestAlgorithm::Blake3)).unwrap();
    w.set_max_shard_size(5000);
    for i in 0..4u32 {
        let v: Vec<u32> = (0..1000).map(|j| seed * 7919 + i * 1000 + j).collect();
        let desc = TensorDescriptor::new(format!("t{i}"), ElementType::UInt32, shape(&[1000]));
        w.add_tensor(&desc, &[hurray::as_bytes(&v)]).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn a_converted_file_signs_and_verifies_and_a_changed_byte_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = keys(dir.path(), "k");
    let plain = dir.path().join("plain.hurray");
    let file = dir.path().join("m.hurray");
    ok(&["example", &s(&plain)]);
    // A file without digests is refused, naming it and what to do.
    let out = fails(&["sign", &s(&plain), "--key", &private]);
    assert!(
        out.contains("plain.hurray") && out.contains("records no digests"),
        "{out}"
    );
    ok(&["convert", &s(&plain), &s(&file), "--digests"]);
    let out = ok(&["sign", &s(&file), "--key", &private]);
    assert!(out.contains("m.hurray.sig: signed"), "{out}");
    let out = ok(&["verify", &s(&file), "--key", &public]);
    assert!(
        out.contains("verified") && out.contains("1 file(s)"),
        "{out}"
    );
    // `validate --checksums` checks the digests as well.
    ok(&["validate", "--checksums", &s(&file)]);

    // One byte of one tensor's data.
    let f = hurray::File::open(&file).unwrap();
    let t = f.tensors().find(|t| t.byte_length() > 16).unwrap();
    let (name, at) = (
        t.name().to_owned(),
        t.buffer_range(hurray::descriptor::BufferRole::Values)
            .unwrap()
            .0,
    );
    drop(f);
    flip(&file, at + 3);
    let out = fails(&["verify", &s(&file), "--key", &public]);
    assert!(
        out.contains(&format!("tensor {name:?}")) && out.contains("digest"),
        "{out}"
    );
    flip(&file, at + 3);
    ok(&["verify", &s(&file), "--key", &public]);

    // Another key.
    let (_, other) = keys(dir.path(), "other");
    let out = fails(&["verify", &s(&file), "--key", &other]);
    assert!(out.contains("not with the key given"), "{out}");
    // A URL is refused where the signature would be written beside it.
    let out = fails(&["sign", "s3://bucket/m.hurray", "--key", &private]);
    assert!(out.contains("local file"), "{out}");
    // Digests go into Hurray files only.
    let out = fails(&[
        "convert",
        &s(&file),
        &s(&dir.path().join("m.safetensors")),
        "--digests",
    ]);
    assert!(out.contains("--digests"), "{out}");
}

#[test]
fn a_signed_checkpoint_verifies_and_a_swapped_member_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = keys(dir.path(), "k");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let index: PathBuf = a.join("ckpt.hurray");
    checkpoint(&index, 1);
    checkpoint(&b.join("ckpt.hurray"), 2);
    let sig = s(&a.join("ckpt.sig"));
    ok(&["sign", &s(&index), "--key", &private, "-o", &sig]);
    let verify = ["verify", &s(&index), "--key", &public, "--signature", &sig];
    let out = ok(&verify);
    assert!(out.contains("4 file(s), 4 tensor(s)"), "{out}");
    std::fs::copy(b.join("ckpt-00002.hurray"), a.join("ckpt-00002.hurray")).unwrap();
    let out = fails(&verify);
    assert!(
        out.contains("ckpt-00002.hurray") && out.contains("header digest"),
        "{out}"
    );
    // Signing refuses a checkpoint whose members no longer match its index.
    let out = fails(&["sign", &s(&index), "--key", &private]);
    assert!(out.contains("ckpt-00002.hurray"), "{out}");
}

#[cfg(feature = "remote")]
#[test]
fn an_object_verifies_from_s3_and_a_changed_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = keys(dir.path(), "k");
    let server = hurray_s3_test_server::Server::start(dir.path().join("s3")).unwrap();
    let bucket = server.bucket("models").unwrap();
    let ckpt = bucket.join("run");
    std::fs::create_dir_all(&ckpt).unwrap();
    checkpoint(&ckpt.join("ckpt.hurray"), 3);
    ok(&["sign", &s(&ckpt.join("ckpt.hurray")), "--key", &private]);
    let verify = |url: &str| {
        Command::new(env!("CARGO_BIN_EXE_hurray"))
            .args(["verify", url, "--key", &public])
            .envs(server.env())
            .output()
            .unwrap()
    };
    let out = verify("s3://models/run/ckpt.hurray");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("4 file(s), 4 tensor(s)"),
        "{}",
        text(&out)
    );
    let member = ckpt.join("ckpt-00003.hurray");
    let len = std::fs::metadata(&member).unwrap().len();
    flip(&member, len / 3);
    let out = verify("s3://models/run/ckpt.hurray");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("digest"), "{}", text(&out));
}
